"""The core every engine and operator family shares: the engine-neutral `Prep`, the
`Engine` base, the handle's table of nogil entry points and calls in parts (the
protection of inputs that outputs overlap is cyad/_overlap.pyx).

A prep is made once per call signature (family, x's shape and dtype, one- or
two-argument form, chunk, engine) and checks every later call against it. The base
`Prep` holds what every family shares: the signature and its cheap checks, out=
checks and result buffers, the busy claim (one call at a time), raise_for_status,
and the engine. One small subclass per family (cyad/_families.pyx) answers what
differs: whether the call takes tangents shaped like x, or cotangents shaped like f's
output (a pullback; checked once f's output is known), or neither (the engine seeds
basis directions of x), its results' shapes and names, the nogil entry points it
serves, and whether f must be scalar-valued. `Prep.call` runs every operator of every
family on those answers.

The engine (chosen by name at prepare time from cyad/_engines.py) is an `Engine`
object: the buffers and the function binding behind the prep's `prep_header`, a
struct usable without the GIL whose `run` pointer is the engine's whole call for the
prep's family. A prepared call checks its arguments here, then makes that one call:
without the GIL when the engine runs no Python callable (a C function on the dual
engine, cyad.record's among them), so that Python threads with a prep each overlap.
The header starts with the public table of nogil entry points (cyad/_c_api.pxd): the
prep fills it (install_entry_points) with its engine's function for each entry point
it answers, in its dtype, and a refusal (WRONG_CALL) elsewhere, so that a call from
Cython is one indirect call into the engine, which claims, protects and runs in one.

Calls in parts (workers=k): a prep whose engine splits its calls (`Engine.splits`: a C
function on the dual engine, a tape's chunked families) holds k - 1 more preps of its
signature. A call protects its inputs once, then runs k parts at once
(cyad/_parallel/parts.pyx), part j on prep j (0: this one), each writing its own results;
part 0 alone writes f's value, y and a first-order result, the others read y's incoming
values from copies.
"""
import numpy as np

cimport numpy as cnp
from cpython.float cimport PyFloat_Check
from cpython.long cimport PyLong_Check
from libc.stdlib cimport malloc, free

from cyad._fused cimport real

from cyad._c_api cimport PYTHON_ERROR, WRONG_CALL, OVERLAPPING_OUTPUTS, NO_MEMORY
from cyad._overlap cimport span, Y_OUTPUT, VALUE_OUTPUT, FIRST_OUTPUT, protect_inputs
from cyad._parallel.parts cimport part_call, run_parts
from cyad._dual.array import Dual as _DualType
from cyad._wrapper import FunctionError, is_python_function
from cyad._engines import engine_type
from cyad import _engines

cnp.import_array()

_FAMILY_NAMES = {PUSHFORWARD: "pushforward", DERIVATIVE: "derivative",
                 GRADIENT: "gradient", JACOBIAN: "jacobian",
                 SECOND_DERIVATIVE: "second_derivative", HVP: "hvp", HESSIAN: "hessian",
                 PULLBACK: "pullback"}

_BUSY = ("cyad: this prep is in use by another call (from another thread, or from inside the "
         "function being differentiated); a prep serves one call at a time: make one prep per "
         "thread")


cdef int refuse_busy(object prep) except -1:
    if isinstance(prep, Prep) and claimed(&(<Prep>prep).handle.busy):
        raise RuntimeError(_BUSY)
    return 0


# -- the handle's table of nogil entry points (cyad/_c_api.pxd) -----------------------------
#
# A slot the prep does not answer (another dtype, or an operator its family or its shape
# does not serve) holds a refusal of that slot's signature.

cdef int refuse_pushforward(cyad_prep* p, const real* x, const real* dx, real* y,
                            real* out) noexcept nogil:
    # and pullback's (x, dy, y, out)
    return WRONG_CALL


cdef int refuse_value_and_pushforward(cyad_prep* p, const real* x, const real* dx, real* y,
                                      real* value, real* out) noexcept nogil:
    # and hvp's (x, v, y, gradient, out), value_and_pullback's (x, dy, y, value, out)
    return WRONG_CALL


cdef int refuse_jacobian(cyad_prep* p, const real* x, real* y, real* value,
                         real* jacobian) noexcept nogil:
    # and gradient's
    return WRONG_CALL


cdef int refuse_hessian(cyad_prep* p, const real* x, real* y, real* value, real* gradient,
                        real* hessian) noexcept nogil:
    return WRONG_CALL


cdef void install_entry_points(prep_header* h, const cyad_entry_points* engine,
                               unsigned entries) noexcept:
    """The handle's table: the engine's function in every slot of an entry point the prep
    answers (ENTRY_* bits) in its dtype, a refusal (WRONG_CALL) in every other slot."""
    cdef cyad_entry_points* t = &h.head.entry_points
    cdef unsigned f64 = 0 if h.float32 else entries
    cdef unsigned f32 = entries if h.float32 else 0
    t.pushforward_f64 = (engine.pushforward_f64 if f64 & ENTRY_PUSHFORWARD
                         else refuse_pushforward[double])
    t.pushforward_f32 = (engine.pushforward_f32 if f32 & ENTRY_PUSHFORWARD
                         else refuse_pushforward[float])
    t.value_and_pushforward_f64 = (engine.value_and_pushforward_f64 if f64 & ENTRY_PUSHFORWARD
                                   else refuse_value_and_pushforward[double])
    t.value_and_pushforward_f32 = (engine.value_and_pushforward_f32 if f32 & ENTRY_PUSHFORWARD
                                   else refuse_value_and_pushforward[float])
    t.gradient_f64 = engine.gradient_f64 if f64 & ENTRY_GRADIENT else refuse_jacobian[double]
    t.gradient_f32 = engine.gradient_f32 if f32 & ENTRY_GRADIENT else refuse_jacobian[float]
    t.jacobian_f64 = engine.jacobian_f64 if f64 & ENTRY_JACOBIAN else refuse_jacobian[double]
    t.jacobian_f32 = engine.jacobian_f32 if f32 & ENTRY_JACOBIAN else refuse_jacobian[float]
    t.hvp_f64 = engine.hvp_f64 if f64 & ENTRY_HVP else refuse_value_and_pushforward[double]
    t.hvp_f32 = engine.hvp_f32 if f32 & ENTRY_HVP else refuse_value_and_pushforward[float]
    t.hessian_f64 = engine.hessian_f64 if f64 & ENTRY_HESSIAN else refuse_hessian[double]
    t.hessian_f32 = engine.hessian_f32 if f32 & ENTRY_HESSIAN else refuse_hessian[float]
    t.pullback_f64 = (engine.pullback_f64 if f64 & ENTRY_PULLBACK
                      else refuse_pushforward[double])
    t.pullback_f32 = (engine.pullback_f32 if f32 & ENTRY_PULLBACK
                      else refuse_pushforward[float])
    t.value_and_pullback_f64 = (engine.value_and_pullback_f64 if f64 & ENTRY_PULLBACK
                                else refuse_value_and_pushforward[double])
    t.value_and_pullback_f32 = (engine.value_and_pullback_f32 if f32 & ENTRY_PULLBACK
                                else refuse_value_and_pushforward[float])


# -- the engine's side ----------------------------------------------------------------------

cdef class Engine:
    """The machinery behind a prep's handle; each engine module subclasses it.

    `setup` sizes and allocates the engine's state for the prep (its handle, whose
    engine-neutral fields the prep has set, with `run` set to the engine's call for the
    prep's family) and binds f; `bind` takes another f of the kind bound;
    `declared_out_shape` is a C function's declared output shape; `discover` learns a
    Python f's output shape (calling prep.set_output); `set_output` allocates the
    output's buffers; `finish` ends a call (the tape engine's NumPy warnings come from it,
    or its FloatingPointError); `python_error`
    hands over the exception a Python f raised. Python properties report the engine's
    figures: directions, chunk, width, evaluations, is_python, input_dual.

    Every engine sets `entry_points` when it is made: its nogil entry points, one in
    every slot of the public table (cyad/_c_api.pxd), each a whole call (claim, checks,
    protect_inputs, the run, release) for a prep that answers that entry point; the
    prep installs in its handle those it answers (install_entry_points).
    """

    def __dealloc__(self):
        if self.handle != NULL:
            free(self.handle.spans)
            free(self.handle.scratch)

    cdef setup(self, Prep prep, Py_ssize_t directions, object chunk, object f):
        raise NotImplementedError

    cdef bind(self, object f):
        raise NotImplementedError

    cdef discover(self, Prep prep, object x):
        raise NotImplementedError

    cdef set_output(self, Prep prep, tuple shape):
        raise NotImplementedError

    cdef finish(self):
        pass

    cdef object python_error(self):
        return None

    cdef object declared_out_shape(self):
        return None

    cdef bint splits(self, Prep prep):
        """Whether the prep's calls can run in parts at once (workers=): its chunks of
        directions on preps of their own, without the GIL."""
        return False

    cdef str work(self):
        """What a call does, for the prep's repr."""
        return (f"{self.directions} directions in chunks of {self.chunk} ({self.width} lanes), "
                f"{self.evaluations} evaluation(s) of f per call")

    cdef Engine answering(self):
        """The engine that answers the calls: this one, or the one it handed f to."""
        return self

    cdef object handed_over_because(self):
        """Why a prep of this engine chosen by default has handed f to the dual engine,
        or None."""
        return None

    cdef quiet(self):
        """Forget what the call that ran would warn of when it finishes (a part of a call
        run in parts, beside part 0, which warns)."""
        pass

    cdef bint hold_state(self) except -1:
        """Compare the Python state f reads now, for the calls that follow until
        `release_state` (a run of calls, one operation): whether it held, so that they
        skip the comparison (and so the GIL). An engine that compares none holds nothing."""
        return False

    cdef void release_state(self, bint held) noexcept:
        pass

    # What an engine can do, asked instead of its name (cyad/_engines.py):
    # it records f on a tape and replays the tape
    replays_tape = False

    @property
    def holds_gil(self):
        """Whether its calls evaluate a Python f, holding the GIL for each evaluation."""
        return self.is_python and not self.replays_tape


# -- the base of every prep ---------------------------------------------------------------

cdef class Prep:
    """Prepared state of one operator family for one call signature.

    Made by the `prepare_*` functions (one subclass per operator family) and passed
    back with `prep=`. It may be reused with other values of the same shapes, dtype
    and function form, and with another function of the same kind (Python callable or
    C function). It serves one call at a time: a call that finds it in use by another
    (from another thread, or from inside the function being differentiated) raises
    RuntimeError, so each thread needs its own prep.

    Parameters
    ----------
    f : callable or FunctionWrapper
        The function to differentiate.
    x : array_like or float
        An input of the shape and dtype of later calls.
    directions : int
        Tangents of a pushforward or hvp, cotangents of a pullback, else the basis
        directions of x.
    y : ndarray, optional
        The output buffer of a two-argument f.
    chunk : int, optional
        Directions per evaluation of f.
    engine : str, optional
        The engine's name (default ``"dual"``).

    Attributes
    ----------
    family : Family
        The operator family the prep serves.
    engine : str
        The name of the engine that runs its calls.
    two_argument : bool
        Whether f is of the form ``f(y, x)``.
    dtype : numpy.dtype
        float64 or float32: the dtype of x, the tangents and the results.
    x_shape : tuple of int
        The shape of x.
    out_shape : tuple of int or None
        The shape of f's output, once known (a Python ``f(x)`` tells it on its first call).
    order : int
        1 or 2: the order of the family's derivatives.

    Raises
    ------
    ValueError
        If x is empty or has more than 32 dimensions, ``chunk`` is not a positive
        integer, or ``engine`` is not one of cyad's engines.
    TypeError
        If x is not real, or f has no C function for x's dtype and the family's order.

    Examples
    --------
    >>> prep = cyad.prepare_jacobian(np.sin, np.zeros(3))
    >>> prep.n_x, prep.directions, prep.chunk, prep.evaluations, prep.is_python
    (3, 3, 3, 1, True)
    >>> prep.x_shape, prep.dtype == np.float64, prep.two_argument, prep.engine
    ((3,), True, False, 'tape')
    >>> np.allclose(cyad.jacobian(np.sin, np.zeros(3), prep=prep), np.eye(3))
    True
    >>> cyad.prepare_gradient(np.sum, np.zeros(100), chunk=16).evaluations
    7
    """

    def __cinit__(self):
        self.tangents = NULL
        self.outs = NULL
        self.part_calls = NULL
        self.workers = 1

    def __dealloc__(self):
        free(self.tangents)
        free(self.outs)
        free(self.part_calls)

    def __init__(self, f, x, Py_ssize_t directions, y=None, chunk=None, engine=None):
        # directions: the tangents of a pushforward or hvp, the cotangents of a pullback,
        # else the basis directions
        cdef int i
        cdef type kind = engine_type(engine)
        cdef Py_ssize_t results
        if isinstance(x, _DualType) or hasattr(type(x), "__cyad_value__"):
            raise _nested_error("x")
        self.engine_made = _engines.FALLBACK if engine is None else engine
        self.engine_reason = "named with engine="
        self.two_argument = y is not None
        self.dtype = input_dtype(x)
        self.typenum = self.dtype.num
        self.x_shape = np.shape(x)
        if len(self.x_shape) > 32:
            raise ValueError("cyad: x has more than 32 dimensions")
        self.x_ndim = len(self.x_shape)
        for i in range(self.x_ndim):
            self.x_dims[i] = self.x_shape[i]
        n_x = int(np.prod(self.x_shape))
        if n_x == 0 or directions == 0:
            raise ValueError("cyad: x is empty: there is nothing to differentiate")
        if chunk is not None and (not isinstance(chunk, (int, np.integer)) or chunk < 1):
            raise ValueError(f"cyad: chunk must be a positive integer, not {chunk!r}")
        self.with_tangents = self.takes_tangents()
        self.with_cotangents = self.takes_cotangents()
        results = directions if self.with_tangents or self.with_cotangents else 1
        self.engine_state = <Engine>kind()
        self.handle = self.engine_state.handle
        self.handle.float32 = self.dtype == np.float32
        self.handle.n_x = n_x
        self.handle.x_bytes = n_x * self.dtype.itemsize
        self.handle.tangent_bytes = self.handle.x_bytes   # a cotangent's: set_output
        self.handle.results = results
        install_entry_points(self.handle, self.engine_state.entry_points, 0)
        self.engine_state.setup(self, directions, chunk, f)
        # the dual engine runs a C function (a recorded one among them) without the GIL, so
        # that Python threads with a prep each run in parallel; a Python f runs with it
        self.without_gil = not self.engine_state.is_python
        self.tangents = <void**>malloc(directions * sizeof(void*))
        self.outs = <void**>malloc(results * sizeof(void*))
        # the outputs of a call: its results, y, f's value and a first-order result
        self.handle.spans = malloc((results + 3) * sizeof(span))
        if self.tangents == NULL or self.outs == NULL or self.handle.spans == NULL:
            raise MemoryError()
        self.scalar_x = np.zeros((), self.dtype)
        self.scalar_t = np.zeros((), self.dtype)
        if self.two_argument:
            _check_y_dtype(y, self.dtype)
            self.set_output(y.shape)
        elif not is_python_function(f):
            out_shape = self.engine_state.declared_out_shape()
            if out_shape is None:
                raise TypeError("cyad: a C function's output shape is needed to call it without "
                                "y=: give FunctionWrapper(..., out_shape=...)")
            self.set_output(out_shape)

    # -- what each family answers ----------------------------------------------------------

    cdef bint takes_tangents(self):
        """Whether a call takes tangents, shaped like x (else the seeds are basis
        directions of x)."""
        return False

    cdef bint takes_cotangents(self):
        """Whether a call takes cotangents, shaped like f's output (a pullback)."""
        return False

    cdef bint symmetric(self):
        """Whether the result is symmetric, so that half of it is computed (a Hessian)."""
        return False

    cdef tuple shape_of_result(self, tuple out_shape):
        """The shape of one result, f's output being of out_shape."""
        return out_shape

    cdef tuple shape_of_first(self, tuple out_shape):
        """The shape of a second-order family's first-order result (None: none)."""
        return None

    cdef unsigned nogil_entries(self):
        """The nogil entry points the prep answers (ENTRY_* bits), f's output known."""
        return 0

    cdef str result_name(self):
        """The result as an error message names it."""
        raise NotImplementedError

    cdef str first_name(self):
        """The first-order result as an error message names it."""
        return "the first-order output"

    cdef str out_name(self):
        """out= as an error message names it."""
        return "out"

    cdef str batch_name(self):
        """A batch's out= as an error message names it."""
        return "out="

    cdef str batch_item_name(self):
        """One of a batch's outputs as an error message names it."""
        return "out"

    cdef check_output_shape(self, tuple shape):
        """Raise ValueError if f's output cannot be of this shape."""
        pass

    # -- the call ------------------------------------------------------------------------------

    cdef object call(self, object f, object x, object v, object y, object out, int wanted):
        """An operator's call: v the tangent or cotangent, or a tuple of them (if the
        family takes them), `wanted` the results besides the main one (WITH_VALUE,
        WITH_FIRST); out= is then a tuple (value, first, main) of those given."""
        cdef bint batch = isinstance(v, tuple)
        cdef Py_ssize_t given = len(<tuple>v) if batch else 1
        cdef object _alive  # seeds converted to the prep's dtype, kept through the call
        cdef object value_out = None, first_out = None, main_out = out
        cdef object value = None, first = None, main
        cdef int status
        cdef const void* xp
        cdef const void* const* tp
        cdef void* yp
        cdef void* vp
        cdef void* fp
        if self.workers_map is not None:
            from cyad._parallel import parts_map as _parts_map
            return _parts_map.call(self, f, x, v, y, out, wanted)
        self.begin()
        try:
            self.bind(f)
            x = self.input(x)
            if self.with_tangents:
                _alive = self.point_to_seeds(v, batch)
            if self.two_argument:
                self.check_y(y)
            if out is not None and wanted:
                if wanted == WITH_VALUE:
                    value_out, main_out = self.split(out, 2)
                elif wanted == WITH_FIRST:
                    first_out, main_out = self.split(out, 2)
                else:
                    value_out, first_out, main_out = self.split(out, 3)
            if self.out_shape is None:
                self.engine_state.discover(self, x)
            if self.with_cotangents:     # shaped like f's output: checked once it is known
                _alive = self.point_to_seeds(v, batch)
            value = self.value_buffer(value_out, y, wanted & WITH_VALUE)
            if wanted & WITH_FIRST:
                first = first_out
                if first is None:
                    first = np.empty(self.first_shape, self.dtype)
                else:
                    self.check_out(first, self.first_shape, self.first_ndim, self.first_dims,
                                   self.first_name())
            main = self.results(main_out, batch, given)
            xp = _data(x)
            tp = <const void* const*>(self.tangents if self.with_tangents or self.with_cotangents
                                      else NULL)
            yp = NULL if y is None else _data(y)
            vp = NULL if value is None else _data(value)
            fp = NULL if first is None else _data(first)
            status = protect_inputs(self.handle, &xp, &tp, yp, vp, fp, self.outs)
            if status == 0 and self.part_preps is not None:
                status = run_parts(self, x, xp, tp, yp, vp, fp)
            elif status == 0 and self.without_gil:
                with nogil:
                    status = self.handle.run(self.handle, xp, tp, yp, vp, fp, self.outs)
            elif status == 0:
                status = self.handle.run(self.handle, xp, tp, yp, vp, fp, self.outs)
            self.raise_for(status)
            if out is not None:
                return out
            if not wanted:
                return main
            if wanted == WITH_VALUE:
                return (value, main)
            if wanted == WITH_FIRST:
                return (first, main)
            return (value, first, main)
        finally:
            self.end()

    def _set_workers(self, int workers, list parts):
        """Run calls in `workers` parts at once, parts 1 ... workers - 1 on `parts` (preps
        of this one's signature, made for this), where the engine splits its calls; else
        serially (a Python f on the dual engine holds the GIL for every evaluation)."""
        cdef Prep part
        self.workers = workers
        if workers < 2 or not self.engine_state.splits(self):
            return
        for part in parts:
            part.engine_state.chosen = self.engine_state.chosen
        self.part_preps = parts
        self.part_calls = malloc(workers * sizeof(part_call))
        if self.part_calls == NULL:
            raise MemoryError()

    def _set_map(self, workers_map, chunk, engine):
        """Run calls as parts, each a task of the map-like `workers_map`
        (cyad/_parallel/parts_map.py), on preps made with `chunk` and `engine` as given
        (None: cyad's choice), where the engine splits its calls; else serially."""
        if self.engine_state.splits(self):
            self.workers_map = workers_map
            self.map_options = (chunk, engine)

    def _call_part(self, f, x, v, y, out, int wanted, int part, int parts):
        """Part `part` of `parts` of a call (a map-like's task): the operator's call, of
        which only that part's chunks of directions are computed (part 0 writes f's value,
        y and a first-order result; the others leave every result they do not compute as
        they found it)."""
        self.handle.part = part
        self.handle.parts = parts
        try:
            return self.call(f, x, v, y, out, wanted)
        finally:
            self.handle.part = 0
            self.handle.parts = 1

    cdef object results(self, object out, bint batch, Py_ssize_t count):
        """The main result's buffer (the caller's, checked, or a new one), or a batch's
        tuple of one per tangent, into self.outs."""
        if batch:
            return self.batch_results(out, count)
        if out is None:
            out = np.empty(self.result_shape, self.dtype)
        elif not _is_writeable_exact(out, self.typenum, self.result_ndim, self.result_dims):
            self.check_out(out, self.result_shape, self.result_ndim, self.result_dims,
                           self.out_name())
        self.outs[0] = _data(out)
        return out

    cdef tuple batch_results(self, object out, Py_ssize_t count):
        cdef Py_ssize_t k
        if out is None:
            out = tuple([np.empty(self.result_shape, self.dtype) for _ in range(count)])
        elif not isinstance(out, tuple) or len(<tuple>out) != count:
            raise TypeError(f"cyad: {self.batch_name()} must be a tuple of {count} arrays, one "
                            "per tangent")
        for k in range(count):
            self.check_out((<tuple>out)[k], self.result_shape, self.result_ndim,
                           self.result_dims, self.batch_item_name())
            self.outs[k] = _data((<tuple>out)[k])
        return <tuple>out

    cdef tuple split(self, object out, int count):
        # out= of an operator with several results: a tuple of as many buffers
        if not isinstance(out, tuple) or len(<tuple>out) != count:
            what = "a pair of buffers" if count == 2 else f"a tuple of {count} buffers"
            raise TypeError(f"cyad: out= of this operator is {what}, one per result")
        return <tuple>out

    cdef object value_buffer(self, object value_out, object y, bint with_value):
        """Where f's value goes: the caller's buffer (checked), y, a new array, or nowhere."""
        if not with_value:
            return None
        if value_out is not None:
            self.check_out(value_out, self.out_shape, self.out_ndim, self.out_dims,
                           "the value output")
            return value_out
        if self.two_argument:
            return y
        return np.empty(self.out_shape, self.dtype)

    cdef begin(self):
        """Claim the prep for a call (RuntimeError if another call holds it)."""
        if not claim(&self.handle.busy):
            raise RuntimeError(_BUSY)

    cdef end(self):
        """The call's end, whatever it was: a failed one leaves no evaluated chunk behind.
        (finish may raise: NumPy's FloatingPointError from the tape engine's values.)"""
        try:
            self.engine_state.finish()
        finally:
            release(&self.handle.busy)

    # -- the signature -------------------------------------------------------------------------

    def __repr__(self):
        form = "f(y, x)" if self.two_argument else "f(x)"
        kind = "a Python callable" if self.is_python else "a C function"
        parts = ("" if self.part_preps is None
                 else f", in {len(self.part_preps) + 1} parts at once")
        return (f"<cyad prep for {_FAMILY_NAMES[self.family]} of {form}, {kind}: x {self.x_shape} "
                f"{self.dtype}; engine {self.engine!r} ({self.why_engine}); "
                f"{self.work}{parts}>")

    @property
    def work(self):
        """What one call does: the evaluations of f, or the replays of a tape."""
        return self.engine_state.answering().work()

    @property
    def replays(self):
        """Whether the engine that answers replays a recorded tape (rather than evaluate f)."""
        return self.engine_state.answering().replays_tape

    @property
    def holds_gil(self):
        """Whether a call evaluates a Python f, holding the GIL for each evaluation (its parts
        at once would only take turns)."""
        return self.engine_state.answering().holds_gil

    @property
    def engine(self):
        """The engine that answers the prep's calls, "dual" or "tape": the one named, or
        the one cyad chose (`why_engine` says why). A tape chosen by default that handed f to
        the dual engine (an f it cannot trace, guards that keep failing, Python state too
        large to watch) says "dual" from then on."""
        return (_engines.FALLBACK if self.engine_state.handed_over_because() is not None
                else self.engine_made)

    @property
    def why_engine(self):
        """Why `engine` answers: named with engine=, chosen by default (and the rule that
        chose it), or the tape's hand-over to the dual engine (and what the tape could not
        do)."""
        because = self.engine_state.handed_over_because()
        if because is not None:
            return f"the tape chosen by default handed f over: {because.removeprefix('cyad: ')}"
        return self.engine_reason

    @property
    def n_x(self):
        """The number of elements of x."""
        return self.handle.n_x

    @property
    def directions(self):
        """Tangents of a pushforward, else basis directions of x (the inner ones at second
        order)."""
        return self.engine_state.directions

    @property
    def chunk(self):
        """Directions carried by one evaluation of f."""
        return self.engine_state.chunk

    @property
    def width(self):
        """Lanes of the dual buffers: the chunk padded to 1, 2, 4, 8, 16 or a multiple of 8."""
        return self.engine_state.width

    @property
    def evaluations(self):
        """Evaluations of f per operator call."""
        return self.engine_state.evaluations

    @property
    def is_python(self):
        """Whether f runs as a Python callable (else as a C function)."""
        return self.engine_state.is_python

    @property
    def input_dual(self):
        """The dual array a Python callable receives."""
        return self.engine_state.input_dual

    def raise_for_status(self, int status):
        """Raise what a nonzero status of a nogil entry point reports.

        Parameters
        ----------
        status : int
            What a nogil entry point (``cyad.jacobian_nogil`` etc., see cyad's
            ``__init__.pxd``) returned: 0 on success.

        Returns
        -------
        None

        Raises
        ------
        FunctionError
            For a nonzero status of the C function.
        Exception
            The exception a Python callable raised (status ``PYTHON_ERROR``).
        ValueError
            If an entry point of another dtype or family than the prep's was called
            (``WRONG_CALL``), or two outputs share memory (``OVERLAPPING_OUTPUTS``; the
            message names them).
        RuntimeError
            If the prep was in use by another call (``PREP_BUSY``).
        MemoryError
            If there was no memory to copy the inputs that overlap an output
            (``NO_MEMORY``).

        Examples
        --------
        >>> prep = cyad.prepare_gradient(np.sum, np.zeros(2))
        >>> prep.raise_for_status(0)
        >>> prep.raise_for_status(3)
        Traceback (most recent call last):
            ...
        cyad._wrapper.FunctionError: cyad: the differentiated C function returned status 3
        """
        self.raise_for(status)

    cdef raise_for(self, int status):
        cdef const span* first
        cdef const span* second
        if status == 0:
            return
        if status == PYTHON_ERROR:
            error = self.engine_state.python_error()
            if error is not None:
                raise error
        if status == WRONG_CALL:
            raise ValueError("cyad: an entry point of another dtype or operator than the prep's")
        if status == PREP_BUSY:
            raise RuntimeError(_BUSY)
        if status == OVERLAPPING_OUTPUTS:
            # the two outputs that met, named in the order y, value, first, results
            first = <span*>self.handle.spans + self.handle.overlapping[0]
            second = <span*>self.handle.spans + self.handle.overlapping[1]
            if second.output < first.output:
                first, second = second, first
            raise ValueError(f"cyad: {_output_name(self, first)} and "
                             f"{_output_name(self, second)} share memory; give "
                             "outputs that do not overlap one another")
        if status == NO_MEMORY:
            raise MemoryError("cyad: no memory for the copies of inputs that overlap an output")
        raise FunctionError(status)

    cdef set_output(self, tuple shape):
        """Fix the output's shape (and the results') and allocate the engine's output
        buffers."""
        cdef int i
        cdef object first
        self.check_output_shape(shape)
        self.result_shape = self.shape_of_result(shape)
        if len(self.result_shape) > 64:
            raise ValueError("cyad: the Jacobian would have more than 64 dimensions")
        self.out_shape = shape
        self.out_ndim = len(shape)
        self.result_ndim = len(self.result_shape)
        for i in range(self.result_ndim):
            self.result_dims[i] = self.result_shape[i]
        for i in range(self.out_ndim):
            self.out_dims[i] = shape[i]
        first = self.shape_of_first(shape)
        if first is not None:
            self.first_shape = first
            self.first_ndim = len(first)
            for i in range(self.first_ndim):
                self.first_dims[i] = first[i]
        self.handle.n_y = int(np.prod(shape))
        self.handle.y_bytes = self.handle.n_y * self.dtype.itemsize
        if self.with_cotangents:
            self.handle.tangent_bytes = self.handle.y_bytes
        self.handle.result_bytes = int(np.prod(self.result_shape)) * self.dtype.itemsize
        self.handle.first_bytes = 0 if first is None else int(np.prod(first)) * self.dtype.itemsize
        self.engine_state.set_output(self, shape)
        install_entry_points(self.handle, self.engine_state.entry_points, self.nogil_entries())

    # -- checks and binding --------------------------------------------------------

    cdef check_form(self, Family family, object y):
        """Raise ValueError unless this prep serves `family` in the form the call uses."""
        if family != self.family:
            raise ValueError(f"cyad: this prep was made for {_FAMILY_NAMES[self.family]}, "
                             f"not {_FAMILY_NAMES[family]}")
        if (y is not None) != self.two_argument:
            made = "f(y, x) with y=" if self.two_argument else "f(x) without y="
            raise ValueError(f"cyad: this prep was made for {made}; the call differs")

    cdef bind(self, object f):
        """Use f for this call: another object of the prep's kind of function is fine."""
        if f is not self.engine_state.bound:
            self.engine_state.bind(f)

    cdef object input(self, object x):
        """x as a C-contiguous array of the prep's shape and dtype (x itself when it is one)."""
        if _is_exact(x, self.typenum, self.x_ndim, self.x_dims):
            return x
        if self.x_ndim == 0 and (PyFloat_Check(x) or PyLong_Check(x)):
            return _fill(self.scalar_x, x)
        self.check_array("x", x)
        return np.asarray(x, dtype=self.dtype, order="C")

    cdef object point_to_seeds(self, object v, bint batch):
        """self.tangents[k] = the data of the tangents or cotangents v (a tuple for a
        batch), each checked; returns what must stay alive through the call."""
        cdef Py_ssize_t given = len(<tuple>v) if batch else 1
        cdef object seed
        if given != self.handle.results:
            what = "cotangent" if self.with_cotangents else "tangent"
            raise ValueError(f"cyad: {given} {what}(s) given, but this prep was made for "
                             f"{self.handle.results}")
        if batch:
            return self.point_to_tangents(<tuple>v)
        seed = self.cotangent(v, True) if self.with_cotangents else self.tangent(v)
        self.tangents[0] = _data(seed)
        return seed

    cdef object tangent(self, object t):
        """A single tangent as a C-contiguous array of x's shape and dtype."""
        if self.x_ndim == 0 and (PyFloat_Check(t) or PyLong_Check(t)):
            return _fill(self.scalar_t, t)
        return self.batch_tangent(t)

    cdef list point_to_tangents(self, tuple batch):
        """self.tangents[k] = the data of batch[k] (tangents or cotangents), each checked;
        those that had to be converted are returned, to be kept alive through the call
        (None when none had)."""
        cdef Py_ssize_t k
        cdef list converted = None
        for k in range(len(batch)):
            t = (self.cotangent(batch[k], False) if self.with_cotangents
                 else self.batch_tangent(batch[k]))
            if t is not batch[k]:
                if converted is None:
                    converted = []
                converted.append(t)
            self.tangents[k] = _data(t)
        return converted

    cdef object batch_tangent(self, object t):
        """A tangent of a batch (each its own array) as a C-contiguous array."""
        if _is_exact(t, self.typenum, self.x_ndim, self.x_dims):
            return t
        self.check_array("a tangent", t)
        return np.asarray(t, dtype=self.dtype, order="C")

    cdef object cotangent(self, object t, bint single):
        """A cotangent as a C-contiguous array of f's output shape and x's dtype (`single`:
        the call's only one, which a Python number may be)."""
        if _is_exact(t, self.typenum, self.out_ndim, self.out_dims):
            return t
        if single and self.out_ndim == 0 and (PyFloat_Check(t) or PyLong_Check(t)):
            return _fill(self.scalar_t, t)
        if isinstance(t, _DualType):
            raise _nested_error("a cotangent")
        if np.shape(t) != self.out_shape:
            raise ValueError(f"cyad: a cotangent has shape {np.shape(t)}, but f's output has "
                             f"shape {self.out_shape}")
        if input_dtype(t) != self.dtype:
            raise ValueError(f"cyad: a cotangent has dtype {np.asarray(t).dtype}, but this prep "
                             f"was made for {self.dtype}")
        return np.asarray(t, dtype=self.dtype, order="C")

    cdef check_array(self, str name, object a):
        # the slow path of an argument check: convertible, of the right shape and dtype
        if isinstance(a, _DualType):
            raise _nested_error(name)
        if np.shape(a) != self.x_shape:
            raise ValueError(f"cyad: {name} has shape {np.shape(a)}, but this prep was made for "
                             f"shape {self.x_shape}")
        if input_dtype(a) != self.dtype:
            raise ValueError(f"cyad: {name} has dtype {np.asarray(a).dtype}, but this prep was "
                             f"made for {self.dtype}")

    cdef check_y(self, object y):
        """y of the two-argument form: written in place, so exactly of the prep's signature."""
        if (_is_exact(y, self.typenum, self.out_ndim, self.out_dims)
                and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>y)):
            return
        _check_y_dtype(y, self.dtype)
        if y.shape != self.out_shape:
            raise ValueError(f"cyad: y has shape {y.shape}, but this prep was made for shape "
                             f"{self.out_shape}")
        raise ValueError("cyad: y must be a writeable C-contiguous array")

    cdef check_out(self, object out, tuple shape, int ndim, cnp.npy_intp* dims, str what):
        """An output buffer: exactly `shape` (ndim, dims), the prep's dtype, C-contiguous and
        writeable."""
        if _is_writeable_exact(out, self.typenum, ndim, dims):
            return
        if not isinstance(out, np.ndarray):
            raise TypeError(f"cyad: {what} must be a NumPy array, not {type(out).__name__}")
        if out.shape != shape or out.dtype != self.dtype:
            raise ValueError(f"cyad: {what} has shape {out.shape} and dtype {out.dtype}; it must "
                             f"have shape {shape} and dtype {self.dtype}")
        raise ValueError(f"cyad: {what} must be a writeable C-contiguous array")


cdef str _output_name(Prep prep, const span* s):
    # an output as the caller knows it
    if s.output == Y_OUTPUT:
        return "y"
    if s.output == VALUE_OUTPUT:
        return "the value output"
    if s.output == FIRST_OUTPUT:
        return prep.first_name()
    if prep.handle.results > 1:
        return f"{prep.result_name()} for tangent {s.output}"
    return prep.result_name()


# -- argument checks --------------------------------------------------------------

cdef inline bint _same_dims(cnp.ndarray a, int ndim, cnp.npy_intp* dims):
    cdef int i
    if cnp.PyArray_NDIM(a) != ndim:
        return False
    for i in range(ndim):
        if cnp.PyArray_DIMS(a)[i] != dims[i]:
            return False
    return True


cdef inline bint _is_exact(object a, int typenum, int ndim, cnp.npy_intp* dims):
    # an ndarray we may read or write in place with raw pointers
    return (cnp.PyArray_Check(a) and cnp.PyArray_TYPE(<cnp.ndarray>a) == typenum
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a)
            and _same_dims(<cnp.ndarray>a, ndim, dims))


cdef inline bint _is_writeable_exact(object a, int typenum, int ndim, cnp.npy_intp* dims):
    # an output we may write in place with raw pointers
    return (_is_exact(a, typenum, ndim, dims)
            and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>a))


cdef inline void* _data(object a):
    return cnp.PyArray_DATA(<cnp.ndarray>a)


cdef object _fill(cnp.ndarray a, object number):
    # a 0-d array of the prep's set to a Python number, without allocating
    if cnp.PyArray_TYPE(a) == cnp.NPY_FLOAT32:
        (<float*>cnp.PyArray_DATA(a))[0] = <float><double>number
    else:
        (<double*>cnp.PyArray_DATA(a))[0] = <double>number
    return a


cdef _check_y_dtype(object y, object dtype):
    if not isinstance(y, np.ndarray):
        raise TypeError(f"cyad: y must be a NumPy array, not {type(y).__name__}")
    if y.dtype != dtype:
        raise ValueError(f"cyad: y has dtype {y.dtype}, but x is differentiated in {dtype}; "
                         "give y the same dtype")


def input_dtype(x):
    """The dtype cyad differentiates x in: float64/float32 kept, ints and bools to float64."""
    dtype = x.dtype if isinstance(x, np.ndarray) else np.asarray(x).dtype
    if dtype == np.float64 or dtype == np.float32:
        return dtype
    if dtype.kind in "biu":
        return np.dtype(np.float64)
    if dtype.kind == "c":
        raise TypeError("cyad: complex inputs are taken by the operators (cyad.gradient & co.), "
                        "not here (differentiate the real and "
                        "imaginary parts as separate real inputs)")
    raise TypeError(f"cyad: cannot differentiate with respect to an input of dtype {dtype}; "
                    "use float64 or float32")


def _nested_error(name):
    return TypeError(f"cyad: {name} is an array of a differentiation (a dual or traced array): "
                     "only a Python callable differentiated inside another differentiation takes "
                     "one (a C function cannot, nor can a call outside the differentiation that "
                     "made it)")
