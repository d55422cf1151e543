"""A recorded tape as a C function: `record(f, x)` is a FunctionWrapper of kind "tape".

`record` traces a Python f once at x (cyad/_tape/trace.py) and returns a FunctionWrapper
whose `cyad_function` (cyad/_wrapper.pxd) is served by the four trampolines at the end of
this module: any routine compiled against that seam - the dual engine's chunk loops, a
user's Cython code holding the struct - then calls f without the GIL, and from several
threads at once. Its context is a `tape_function` (cyad/_tape/function.pxd), owned by a
`TapeFunction` that the wrapper keeps (its `tape` attribute).

A call of the first-order signature with `width` lanes replays the jvp of f's tape for
that many lanes (cyad/_tape/transform.py), derived on the first call of each width with
the GIL and kept; the second-order signature (outer, inner) replays the jvp of that jvp,
its two tangent inputs x's outer lanes `a` and inner lanes `b`, a's inner lanes `c` those
of the nested dual (cyad/_signatures.pxd), for any outer. A call copies x (and y's
incoming values) and the lanes of dx into an arena, replays the whole program and copies
the value and the lanes out: the buffers are row-major n x width, the tape's tangents
lanes-major, so the lanes are transposed on the way in and out.

Threads. Every program keeps a pool of arenas, each a `Replay` of its own
(cyad/_tape/lowering.pyx: its own slots, constants and python callbacks), claimed by an
atomic exchange of its flag; a call that finds all of them claimed makes one more with the GIL
(up to MAX_ARENAS; beyond, it waits for one). Programs and arenas are appended under a
lock and published by an atomic store of their count, so that calls read them without
one. In the steady state a call allocates nothing and takes neither the GIL nor a lock.

Guards and captured arrays, as the tape engine (cyad/_tape/engine.pyx) has them: a
failed guard records f anew at the call's x with the GIL (counted: after RECORD_LIMIT
records the call fails with TapeLimit naming what f read); a captured array changed
since the record (compared with a copy on every call) records f anew, uncounted. A new
record replaces the current one for the calls that follow; calls still running on the
old one finish on it, and it is freed once no call is in flight. What a recorded
function freezes: f's Python state (a global it reads, an attribute) as it was when
recorded, and its control flow where a guard does not watch it.

Errors: a call returns 0, or PYTHON_ERROR (-1) with an exception kept for the calling
thread: f raised while recorded again, a guard failed too often, a python instruction
of the tape raised, the sizes are not the recorded ones. `TapeFunction.take_error`
hands it over (the dual engine raises it, and `cyad.raise_function_status` in Cython).

The dtype follows x: a float32 x records a float32 tape and gives the float32 functions,
a float64 x the float64 ones (the others are NULL).

Arguments (`record(f, x, args=...)`): f's other arguments are held by the arguments layer's
`Bound` (cyad/_arguments/bound.pyx); their float arrays and numbers are inputs of the tape
after x and y, placed in every program (`leaf_at`) and copied in from the Bound's table at
every call, as x is; `set_arguments` refills the table between calls.
"""
import threading

import numpy as np

cimport numpy as cnp
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy

from cyad._c_api cimport PYTHON_ERROR
from cyad._fused cimport real
from cyad._dual.layout cimport second_order_width
from cyad._core cimport claim, release
from cyad._tape.engine cimport (CAPTURED_CHANGED, capture, captured_strided_changed,
                                take_raised)
from cyad._tape.replay cimport replay_run, tape_replay
from cyad._tape.lowering cimport Replay
from cyad._wrapper cimport FunctionWrapper, is_python_function
from cyad._arguments.bound cimport Bound
from cyad._tape.engine import RECORD_LIMIT as _RECORD_LIMIT, TapeLimit
from cyad._tape.trace import trace
from cyad._tape.transform import jvp
from cyad._arguments.operators import Arguments

cnp.import_array()

cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static CYTHON_INLINE Py_ssize_t cyad_load(Py_ssize_t *p) { return *(volatile Py_ssize_t *)p; }
    static CYTHON_INLINE void cyad_publish(Py_ssize_t *p, Py_ssize_t v) {
        _InterlockedExchange64((volatile __int64 *)p, v);
    }
    static CYTHON_INLINE Py_ssize_t cyad_add(Py_ssize_t *p, Py_ssize_t d) {
        return _InterlockedExchangeAdd64((volatile __int64 *)p, d) + d;
    }
    static CYTHON_INLINE void *cyad_load_pointer(void **p) { return *(void * volatile *)p; }
    static CYTHON_INLINE void cyad_publish_pointer(void **p, void *v) {
        _InterlockedExchangePointer((void * volatile *)p, v);
    }
    #else
    static CYTHON_INLINE Py_ssize_t cyad_load(Py_ssize_t *p) {
        return __atomic_load_n(p, __ATOMIC_SEQ_CST);
    }
    static CYTHON_INLINE void cyad_publish(Py_ssize_t *p, Py_ssize_t v) {
        __atomic_store_n(p, v, __ATOMIC_SEQ_CST);
    }
    static CYTHON_INLINE Py_ssize_t cyad_add(Py_ssize_t *p, Py_ssize_t d) {
        return __atomic_add_fetch(p, d, __ATOMIC_SEQ_CST);
    }
    static CYTHON_INLINE void *cyad_load_pointer(void **p) {
        return __atomic_load_n(p, __ATOMIC_SEQ_CST);
    }
    static CYTHON_INLINE void cyad_publish_pointer(void **p, void *v) {
        __atomic_store_n(p, v, __ATOMIC_SEQ_CST);
    }
    #endif
    """
    # (sequentially consistent: a call counts itself in `calls` before it reads `current`,
    # a new record publishes `current` before it reads `calls`)
    Py_ssize_t load "cyad_load" (Py_ssize_t* p) nogil
    void publish "cyad_publish" (Py_ssize_t* p, Py_ssize_t v) nogil
    Py_ssize_t add "cyad_add" (Py_ssize_t* p, Py_ssize_t d) nogil
    void* load_pointer "cyad_load_pointer" (void** p) nogil
    void publish_pointer "cyad_publish_pointer" (void** p, void* v) nogil


def record(f, x, y=None, *, args=()):
    """Record f at x into a FunctionWrapper: a C function that replays f's tape.

    The wrapper's C functions (first and second order, in x's dtype) evaluate f and
    its derivatives by replaying the tape, compiled and without the GIL: the dual
    engine's operators call it so, and Cython code can call it from ``nogil`` loops
    and from several threads at once (``cyad.function_of`` in ``cimport cyad``).
    The tape engine's operators (gradient, pullback, hvp, hessian by default) start
    from the recorded tape itself and run it in reverse mode.

    Parameters
    ----------
    f : callable
        The Python function: ``f(x)``, or ``f(y, x)`` writing its result into y
        when `y` is given, of NumPy operations on x.
    x : array_like or float
        The input to record at: the wrapper takes inputs of its shape and dtype
        (float64, or float32 for a float32 x).
    y : ndarray, optional
        The output of the two-argument form, of x's dtype.
    args : tuple, optional
        f's other arguments: ``f(x, *args)`` (``f(y, x, *args)``), as the operators take
        them. Their float arrays and numbers are inputs of the tape, copied in at every
        call: ``wrapper.tape.set_arguments(*new)`` gives the C function new values of them
        without recording f anew; its other leaves (ints, strings, objects) are fixed.

    Returns
    -------
    FunctionWrapper
        Of kind ``"tape"``, its output shape declared; ``wrapper.tape`` is the
        `TapeFunction` behind it (``records``: how many times f was recorded).

    Raises
    ------
    TypeError
        If f is not a Python callable, x is not of a floating dtype, f returns
        another dtype, or f does something a tape cannot trace.

    Notes
    -----
    A recorded function freezes what a tape freezes: Python state f reads (a
    global, an attribute) as it was when recorded, and its control flow. A branch
    on x's values is guarded: when it flips, the call records f anew at its x,
    with the GIL (after RECORD_LIMIT records the call fails, naming what f read).
    An array f captures is compared with a copy on every call and recorded anew
    when changed in place.

    Examples
    --------
    >>> w = cyad.record(lambda x: np.sin(x) * x[0], np.array([1.0, 2.0]))
    >>> w.kind, w.out_shape
    ('tape', (2,))
    >>> cyad.jacobian(w, np.array([0.0, 1.0]))
    array([[0.        , 0.        ],
           [0.84147098, 0.        ]])
    >>> float(cyad.derivative(cyad.record(np.exp, 0.0), 0.0))
    1.0
    """
    cdef TapeFunction function = TapeFunction(f, x, y, args)
    return _wrapper(function)


cdef object _wrapper(TapeFunction function):
    cdef FunctionWrapper w = FunctionWrapper.__new__(FunctionWrapper)
    if function.state.single:
        w.function.f32 = first_f32
        w.function.second_f32 = second_f32
    else:
        w.function.f64 = first_f64
        w.function.second_f64 = second_f64
    w.function.context = &function.state
    w.kind = "tape"
    w.owner = [function]
    w.callable = None
    w.out_shape = function.out_shape
    w.tape = function
    return w


cdef class TapeProgram:
    """One derived program of a record and the Replays of its arenas."""

    def __cinit__(self):
        self.state.owner = <void*>self
        self.state.n_arenas = 0
        self.state.leaf_at = NULL
        self.replays = []

    def __dealloc__(self):
        free(self.state.leaf_at)


cdef class TapeRecord:
    """One record of f: its tape, captured arrays and derived programs."""

    def __cinit__(self):
        self.state.n_programs = 0
        self.state.captured = NULL
        self.state.n_captured = 0
        self.programs = []

    def __dealloc__(self):
        free(self.state.captured)

    cdef bint strided_changed(self):
        return captured_strided_changed(self.captured)


cdef class TapeFunction:
    """A Python function recorded on a tape, behind the C functions of a "tape" wrapper.

    Made by `record` (which documents the parameters) and kept as the wrapper's
    ``tape``; its C-level state (``tape_function``) is the wrapper's context.

    Attributes
    ----------
    f : callable
        The Python function recorded.
    dtype : numpy.dtype
        The dtype of its tape (x's).
    x_shape, out_shape : tuple of int
        The shapes of its input and output.
    two_argument : bool
        Whether f is called as f(y, x).
    bound : Bound or None
        With ``args``: f of x alone, its other arguments' arrays those of the calls
        (`set_arguments`).
    records : int
        How many times f was recorded: the first time, and again after each failed
        guard (a changed captured array records anew uncounted).
    programs : list of tuple
        The derived programs of the current record: (order, width or (outer, inner),
        arenas).

    Examples
    --------
    >>> def f(x):
    ...     return x ** 2 if x[0] > 0 else -x
    >>> w = cyad.record(f, np.array([1.0, -1.0]))
    >>> cyad.jacobian(w, np.array([3.0, -2.0]))
    array([[ 6.,  0.],
           [ 0., -4.]])
    >>> w.tape.records, w.tape.programs
    (1, [(1, 2, 1)])
    >>> cyad.jacobian(w, np.array([-3.0, 2.0]))    # the branch flipped: recorded again
    array([[-1., -0.],
           [-0., -1.]])
    >>> w.tape.records
    2
    """

    def __init__(self, f, x, y=None, args=()):
        if isinstance(f, FunctionWrapper) and f.callable is not None:
            f = f.callable
        if not is_python_function(f) or isinstance(f, FunctionWrapper):
            raise TypeError(f"cyad: record traces a Python callable, not {type(f).__name__}")
        x = np.asarray(x)
        if x.dtype not in (np.float64, np.float32):
            raise TypeError(f"cyad: record takes a float64 or float32 x, not {x.dtype}")
        self.f = f
        self.dtype = x.dtype
        self.x_shape = x.shape
        self.two_argument = y is not None
        self.bound = None
        self.state.n_leaves = 0
        if args:
            # the arguments layer's f of x alone, its input leaves in x's dtype
            self.arguments = Arguments(f, x, args, y is not None)
            self.bound = self.arguments.bound
            self.state.n_leaves = self.bound.count
            self.state.leaf_from = (<Bound>self.bound).data
            self.state.leaf_bytes = (<Bound>self.bound).nbytes
        if y is not None:
            if not isinstance(y, np.ndarray) or y.dtype != x.dtype:
                raise TypeError("cyad: y must be an ndarray of x's dtype")
            y = np.array(y)
        self.state.owner = <void*>self
        self.state.current = NULL
        self.state.calls = 0
        self.state.n_x = x.size
        self.state.two_argument = self.two_argument
        self.state.single = x.dtype == np.float32
        self.retired = []
        self.lock = threading.RLock()
        self.errors = {}
        self.out_shape = None
        self._record(np.array(x), y)
        self.records = 1

    cdef _record(self, object x, object y):
        """Trace f at x (and y's values) and make that record the current one."""
        cdef TapeRecord rec = TapeRecord()
        leaves = [] if self.bound is None else [np.array(leaf) for leaf in self.bound.leaves]
        recording, result = trace(self.f if self.bound is None else self.bound.function, x,
                                  self.dtype, y, leaves=leaves)
        out = recording.var_of(result)
        if out.dtype != self.dtype:
            raise TypeError(f"cyad: f returned {out.dtype} values, not {self.dtype}")
        if self.out_shape is not None and out.shape != self.out_shape:
            raise ValueError(f"cyad: f returned shape {out.shape}, but it was recorded "
                             f"with shape {self.out_shape}")
        recording.tape.outputs = [out]
        rec.tape = recording.tape
        rec.values = ([x] if y is None else [x, y]) + leaves
        rec.captured = capture(recording.captured, &rec.state.captured, &rec.state.n_captured,
                               &rec.state.strided_captured)
        self.out_shape = out.shape
        self.state.n_y = int(np.prod(out.shape))
        if self.record is not None:
            self.retired.append(self.record)
        self.record = rec
        publish_pointer(<void**>&self.state.current, &rec.state)
        # the calls that may run on a replaced record: only the one recording (or none)
        if load(&self.state.calls) <= 1:
            self.retired.clear()

    cdef int record_again(self, tape_record* seen, tape_program* ran, const void* x,
                          const void* y, int failed) except -1:
        """Record f at the call's x (the guard at instruction `failed` - 1 of the program
        `ran` failed, or a captured array changed: CAPTURED_CHANGED), unless another call
        has replaced the record `seen` already."""
        cdef Py_ssize_t n_x = self.state.n_x, item = self.dtype.itemsize
        with self.lock:
            if seen != self.state.current:
                return 0
            if failed != CAPTURED_CHANGED and self.records >= _RECORD_LIMIT:
                where = (<TapeProgram>ran.owner).derived.tape.instrs[failed - 1].params["where"]
                raise TapeLimit(
                    f"cyad: f was recorded {self.records} times and a guard failed again "
                    f"({where}): f's control flow depends on x in a way a tape cannot "
                    "follow; use a Python callable on engine='dual'")
            xv = np.empty(self.x_shape, self.dtype)
            memcpy(cnp.PyArray_DATA(xv), x, n_x * item)
            yv = None
            if self.two_argument:
                yv = np.empty(self.out_shape, self.dtype)
                memcpy(cnp.PyArray_DATA(yv), y, yv.nbytes)
            self._record(xv, yv)
            if failed != CAPTURED_CHANGED:
                self.records += 1
        return 0

    cdef tape_program* program(self, int order, Py_ssize_t width, Py_ssize_t outer,
                               Py_ssize_t inner) except NULL:
        """The current record's program of this layout, derived now if no call has."""
        cdef TapeRecord rec
        cdef TapeProgram program
        cdef tape_program* found
        with self.lock:
            # (on the current record: if `seen` was replaced meanwhile, the program still
            # answers the call, and the record's checks come again on the next one)
            rec = self.record
            found = _find(&rec.state, order, width, outer, inner)
            if found != NULL:
                return found
            if rec.state.n_programs == MAX_PROGRAMS:
                raise ValueError(f"cyad: a recorded function serves at most {MAX_PROGRAMS} "
                                 "layouts of lanes (widths, or outer and inner directions)")
            program = _derive(rec, self.two_argument, order, width, outer, inner)
            rec.programs.append(program)
            rec.state.programs[rec.state.n_programs] = &program.state
            publish(&rec.state.n_programs, rec.state.n_programs + 1)
            return &program.state

    cdef const tape_replay* new_arena(self, tape_program* program) except NULL:
        """A new arena of the program, claimed by the caller (NULL status: none left)."""
        cdef TapeProgram owner = <TapeProgram>program.owner
        cdef Py_ssize_t n
        cdef Replay replay
        with self.lock:
            n = program.n_arenas
            if n == MAX_ARENAS:
                return <const tape_replay*><size_t>1     # the caller waits for one
            replay = Replay(owner.derived.tape, keep=[])
            n_leaves = self.state.n_leaves
            if _places(replay, owner.derived, self.two_argument, program.order, n_leaves) != \
                    _places(owner.replays[0], owner.derived, self.two_argument, program.order,
                            n_leaves):
                raise AssertionError("cyad: two lowerings of one tape placed it differently")
            owner.replays.append(replay)
            program.arenas[n].replay = &replay.state
            program.arenas[n].busy = 1
            publish(&program.n_arenas, n + 1)
            return &replay.state

    def set_arguments(self, *args):
        """New values of f's other arguments for the calls that follow (between calls: a
        call running on another thread meanwhile reads either values, or a mix).

        Raises
        ------
        ValueError
            Without arguments at the record, or where these differ from the recorded ones
            in structure, a shape, or a leaf that is not a float array or number.
        """
        if self.bound is None:
            raise ValueError("cyad: this function was recorded without arguments")
        try:
            # (x: the record's own, of the shape the holder checks)
            self.arguments.bound_to(self.record.values[0], args)
        except ValueError:
            raise ValueError("cyad: the arguments differ from the recorded ones in structure, "
                             "a shape, or a leaf that is not a float array or number (an "
                             "int, a string, an object): record the function anew") from None

    @property
    def of_x(self):
        """The Python function of x the tape records: f, or with arguments its Bound."""
        return self.f if self.bound is None else self.bound

    def take_error(self):
        """The exception the calling thread's last failed call kept (None if none), cleared.

        Returns
        -------
        BaseException or None
        """
        return self.errors.pop(threading.get_ident(), None)

    def primal(self):
        """The current record: (f's tape, its inputs' values when recorded, the
        captured arrays)."""
        return self.record.tape, self.record.values, [a for a, _ in self.record.captured]

    @property
    def programs(self):
        """The (order, width or (outer, inner), arenas) of the current record's programs."""
        cdef TapeProgram p
        layouts = []
        for p in self.record.programs:
            lanes = <object>p.state.width if p.state.order == 1 else (p.state.outer,
                                                                      p.state.inner)
            layouts.append((p.state.order, lanes, p.state.n_arenas))
        return layouts

    def __repr__(self):
        return (f"<cyad.TapeFunction of {getattr(self.f, '__name__', 'f')} on "
                f"{self.dtype} {self.x_shape}, recorded {self.records} time(s)>")


cdef TapeProgram _derive(TapeRecord rec, bint two_argument, int order, Py_ssize_t width,
                         Py_ssize_t outer, Py_ssize_t inner):
    """The program of one layout: jvp of the record's tape for `width` lanes, or jvp of
    (jvp for `outer` lanes) for `inner` lanes along both x and x's outer tangents."""
    cdef TapeProgram program = TapeProgram()
    cdef tape_program* s = &program.state
    cdef Replay replay
    values = list(rec.values)
    primal = 2 if two_argument else 1
    names = ["x", "y"][:primal] + [f"a{k}" for k in range(len(values) - primal)]
    s.order = order
    s.width, s.outer, s.inner = width, outer, inner
    if order == 1:
        derived, _ = jvp(rec.tape, values, width, [0], names)
    else:
        forward, _ = jvp(rec.tape, values, outer, [0], names)
        tangent = np.zeros((outer,) + values[0].shape, values[0].dtype)
        derived, _ = jvp(forward.tape, values + [tangent], inner, [0, len(values)],
                         names + ["tx"])
    program.derived = derived
    replay = Replay(derived.tape, keep=[])
    places = _places(replay, derived, two_argument, order, len(values) - primal)
    (s.x_at, s.y_at, s.a_at, s.b_at, s.c_at, s.value_at, s.da_at, s.db_at,
     s.dc_at) = places[:9]
    leaf_places = places[9]
    if leaf_places:
        s.leaf_at = <Py_ssize_t*>malloc(len(leaf_places) * sizeof(Py_ssize_t))
        if s.leaf_at == NULL:
            raise MemoryError()
        for k in range(len(leaf_places)):
            s.leaf_at[k] = leaf_places[k]
    program.replays.append(replay)
    s.arenas[0].replay = &replay.state
    s.arenas[0].busy = 0
    s.n_arenas = 1
    return program


def _places(Replay replay, derived, bint two_argument, int order, Py_ssize_t n_leaves):
    """The places of a program's inputs and outputs in the arena of `replay` (-1: absent):
    inputs x, [y,] a, [b, c]; outputs value, da, [db, dc]; then the tuple of the places of
    f's other arguments' arrays (inputs after x and y)."""
    d = derived.tape
    leaves = tuple(replay.offset(d.inputs[(2 if two_argument else 1) + k])
                   for k in range(n_leaves))
    primal = (2 if two_argument else 1) + n_leaves
    places = [replay.offset(d.inputs[0]), replay.offset(d.inputs[1]) if two_argument else -1,
              replay.offset(d.inputs[primal])]
    if order == 2:
        places += [replay.offset(d.inputs[primal + 1]), replay.offset(d.inputs[primal + 2])]
    else:
        places += [-1, -1]
    places += [replay.offset(d.outputs[0]), replay.offset(d.outputs[1])]
    if order == 2:
        places += [replay.offset(d.outputs[2]), replay.offset(d.outputs[3])]
    else:
        places += [-1, -1]
    return tuple(places) + (leaves,)


cdef tape_program* _find(tape_record* rec, int order, Py_ssize_t width, Py_ssize_t outer,
                         Py_ssize_t inner) noexcept nogil:
    cdef Py_ssize_t k, n = load(&rec.n_programs)
    cdef tape_program* p
    for k in range(n):
        p = rec.programs[k]
        if p.order == order and (p.width == width if order == 1
                                 else p.outer == outer and p.inner == inner):
            return p
    return NULL


# -- a call, without the GIL ----------------------------------------------------------------

cdef int call(tape_function* fn, const void* x, const void* dx, void* y, void* dy,
              Py_ssize_t n_x, Py_ssize_t n_y, int order, Py_ssize_t width, Py_ssize_t outer,
              Py_ssize_t inner) noexcept nogil:
    """One call of the recorded function: see the module's docstring."""
    cdef tape_record* rec
    cdef tape_program* program
    cdef tape_arena* arena
    cdef int status
    cdef Py_ssize_t k
    if n_x != fn.n_x or n_y != fn.n_y:
        return wrong_sizes(fn, n_x, n_y)
    add(&fn.calls, 1)
    while True:
        rec = <tape_record*>load_pointer(<void**>&fn.current)
        status = captured_changed(fn, rec)
        if status != 0:
            status = record_again(fn, rec, NULL, x, y, status)
            if status == 0:
                continue
            break
        program = _find(rec, order, width, outer, inner)
        if program == NULL:
            program = derive(fn, order, width, outer, inner)
            if program == NULL:
                status = PYTHON_ERROR
                break
        arena = take_arena(fn, program)
        if arena == NULL:
            status = PYTHON_ERROR
            break
        for k in range(fn.n_leaves):     # f's other arguments' arrays, copied in as x is
            memcpy(<char*>arena.replay.arena + program.leaf_at[k] * (4 if fn.single else 8),
                   fn.leaf_from[k], fn.leaf_bytes[k])
        if fn.single:
            status = run[float](program, arena.replay, <const float*>x, <const float*>dx,
                                <float*>y, <float*>dy, n_x, n_y)
        else:
            status = run[double](program, arena.replay, <const double*>x, <const double*>dx,
                                 <double*>y, <double*>dy, n_x, n_y)
        release(&arena.busy)
        if status > 0:      # a guard failed: record f at this x, then run again
            status = record_again(fn, rec, program, x, y, status)
            if status == 0:
                continue
        elif status < 0:
            keep_raised(fn)
        break
    add(&fn.calls, -1)
    return status


cdef int run(const tape_program* p, const tape_replay* replay, const real* x,
             const real* dx, real* y, real* dy, Py_ssize_t n_x,
             Py_ssize_t n_y) noexcept nogil:
    """Seed the arena from the buffers, replay, and write y and dy."""
    cdef real* arena = <real*>replay.arena
    cdef Py_ssize_t i, k, j, w, outer = p.outer, inner = p.inner
    cdef int status
    memcpy(arena + p.x_at, x, n_x * sizeof(real))
    if p.y_at >= 0:
        memcpy(arena + p.y_at, y, n_y * sizeof(real))
    if p.order == 1:
        w = p.width
        transpose(arena + p.a_at, dx, n_x, w, w, 0)
        status = replay_run(replay, 0, replay.n_instr)
        if status != 0:
            return status
        memcpy(y, arena + p.value_at, n_y * sizeof(real))
        for i in range(n_y):
            for k in range(w):
                dy[i * w + k] = arena[p.da_at + k * n_y + i]
        return 0
    w = second_order_width(outer, inner)
    transpose(arena + p.a_at, dx, n_x, w, outer, 0)
    transpose(arena + p.b_at, dx, n_x, w, inner, outer)
    transpose(arena + p.c_at, dx, n_x, w, inner * outer, outer + inner)
    status = replay_run(replay, 0, replay.n_instr)
    if status != 0:
        return status
    memcpy(y, arena + p.value_at, n_y * sizeof(real))
    for i in range(n_y):
        for k in range(outer):
            dy[i * w + k] = arena[p.da_at + k * n_y + i]
        for j in range(inner):
            dy[i * w + outer + j] = arena[p.db_at + j * n_y + i]
        for k in range(inner * outer):
            dy[i * w + outer + inner + k] = arena[p.dc_at + k * n_y + i]
        for k in range(outer + inner + inner * outer, w):
            dy[i * w + k] = 0
    return 0


cdef inline void transpose(real* lanes, const real* rows, Py_ssize_t n, Py_ssize_t w,
                           Py_ssize_t count, Py_ssize_t first) noexcept nogil:
    # lanes[k * n + i] = rows[i * w + first + k]: `count` lanes of each row, lanes leading
    cdef Py_ssize_t i, k
    for k in range(count):
        for i in range(n):
            lanes[k * n + i] = rows[i * w + first + k]


cdef int captured_changed(tape_function* fn, tape_record* rec) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(rec.n_captured):
        if memcmp(rec.captured[k].data, rec.captured[k].copy, rec.captured[k].nbytes) != 0:
            return CAPTURED_CHANGED
    if rec.strided_captured and strided_changed(fn):
        return CAPTURED_CHANGED
    return 0


cdef tape_arena* take_arena(tape_function* fn, tape_program* p) noexcept nogil:
    """A free arena of the program, claimed; a new one when all are claimed (NULL: an
    exception is kept)."""
    cdef Py_ssize_t k, n
    cdef const tape_replay* made
    while True:
        n = load(&p.n_arenas)
        for k in range(n):
            if claim(&p.arenas[k].busy):
                return &p.arenas[k]
        made = new_arena(fn, p)
        if made == NULL:
            return NULL
        if made != <const tape_replay*><size_t>1:
            for k in range(load(&p.n_arenas)):
                if p.arenas[k].replay == made:
                    return &p.arenas[k]


# -- with the GIL ------------------------------------------------------------------------

cdef int record_again(tape_function* fn, tape_record* seen, tape_program* ran, const void* x,
                      const void* y, int failed) noexcept with gil:
    cdef TapeFunction owner = <TapeFunction>fn.owner
    try:
        owner.record_again(seen, ran, x, y, failed)
    except BaseException as e:
        owner.errors[threading.get_ident()] = e
        return PYTHON_ERROR
    return 0


cdef tape_program* derive(tape_function* fn, int order, Py_ssize_t width, Py_ssize_t outer,
                          Py_ssize_t inner) noexcept with gil:
    cdef TapeFunction owner = <TapeFunction>fn.owner
    try:
        return owner.program(order, width, outer, inner)
    except BaseException as e:
        owner.errors[threading.get_ident()] = e
        return NULL


cdef const tape_replay* new_arena(tape_function* fn, tape_program* p) noexcept with gil:
    cdef TapeFunction owner = <TapeFunction>fn.owner
    try:
        return owner.new_arena(p)
    except BaseException as e:
        owner.errors[threading.get_ident()] = e
        return NULL


cdef bint strided_changed(tape_function* fn) noexcept with gil:
    return (<TapeFunction>fn.owner).record.strided_changed()


cdef void keep_raised(tape_function* fn) noexcept with gil:
    # the exception a python instruction raised (the replay left it set)
    (<TapeFunction>fn.owner).errors[threading.get_ident()] = take_raised()


cdef int wrong_sizes(tape_function* fn, Py_ssize_t n_x, Py_ssize_t n_y) noexcept with gil:
    cdef TapeFunction owner = <TapeFunction>fn.owner
    owner.errors[threading.get_ident()] = ValueError(
        f"cyad: the recorded function takes {fn.n_x} inputs and gives {fn.n_y} outputs; it "
        f"was called with {n_x} and {n_y}")
    return PYTHON_ERROR


# -- the C functions of a "tape" wrapper (cyad/_signatures.pxd) ------------------------------

cdef int first_f64(const double* x, const double* dx, double* y, double* dy,
                   Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                   void* context) noexcept nogil:
    return call(<tape_function*>context, x, dx, y, dy, n_x, n_y, 1, width, 0, 0)


cdef int first_f32(const float* x, const float* dx, float* y, float* dy,
                   Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                   void* context) noexcept nogil:
    return call(<tape_function*>context, x, dx, y, dy, n_x, n_y, 1, width, 0, 0)


cdef int second_f64(const double* x, const double* dx, double* y, double* dy,
                    Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t outer, Py_ssize_t inner,
                    void* context) noexcept nogil:
    return call(<tape_function*>context, x, dx, y, dy, n_x, n_y, 2, 0, outer, inner)


cdef int second_f32(const float* x, const float* dx, float* y, float* dy,
                    Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t outer, Py_ssize_t inner,
                    void* context) noexcept nogil:
    return call(<tape_function*>context, x, dx, y, dy, n_x, n_y, 2, 0, outer, inner)
