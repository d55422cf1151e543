"""The tape engine: f recorded once on tracer arrays, its derivative tapes replayed compiled.

`TapeEngine` is the engine behind a prep named "tape". On its first call it traces f at
x (cyad/_tape_trace.py), builds the derivative tape of the prep's family
(cyad/_tape_transform.py) and lowers it to a `Replay` (cyad/_tape_replay.pyx): one
arena allocated once, in which x, y, the seeds and the results have fixed places. Every
call then runs on raw pointers without the GIL: x (and y's incoming values) copied in,
the primal part of the tape replayed once, then its derivative part once per chunk of
directions (seeds written into the tangent input's lanes), the results copied out.

    pushforward, derivative   jvp of f, lanes = the chunk of tangents
    jacobian                  jvp of f, lanes = a chunk of basis directions
    gradient                  vjp of f (the reverse sweep), its cotangent input 1
    pullback                  vjp of f, its cotangent input set from each cotangent:
                              the reverse part replayed once per cotangent
    second_derivative         jvp of (jvp of f) along the tangent 1
    hvp                       jvp of (vjp of f): forward over reverse, lanes = tangents
    hessian                   jvp of (vjp of f), lanes = a chunk of basis directions

Guards: when a guard of the tape fails (a branch of f, a mask, an order it read off the
values changed: cyad/_tape_trace.py lists them), the call records f anew at this x,
with the GIL, and runs on the new tape. After RECORD_LIMIT records a prep refuses
(RuntimeError naming what f read), as the tape cannot follow f's control flow.

The tape engine traces Python callables; a C function runs on engine="dual".
"""
import numpy as np

cimport numpy as cnp
from cpython.ref cimport PyObject
from libc.string cimport memcpy, memset

from cyad._api cimport cyad_prep, cyad_entry_points, PYTHON_ERROR
from cyad._prep cimport (Prep, Engine, prep_header, enter_nogil, release, GRADIENT,
                         JACOBIAN, SECOND_DERIVATIVE, HVP, HESSIAN, PULLBACK)
from cyad._tape_replay cimport Replay, replay_run
from cyad._wrapper cimport is_python_function, FunctionWrapper
from cyad._dual_engine import default_chunk, default_second_order_chunk
from cyad._tape_trace import trace
from cyad._tape_transform import jvp, vjp

cnp.import_array()

# records of f per prep, the first included, before a failing guard becomes an error
RECORD_LIMIT = 8


# -- a call, without the GIL ---------------------------------------------------------------

cdef inline char* at(tape_prep* p, Py_ssize_t offset) noexcept nogil:
    return <char*>p.program.arena + offset * p.item


cdef int run_tape(prep_header* h, const void* x, const void* const* tangents, void* y,
                  void* value, void* first, void** results) noexcept nogil:
    """The prep's whole call (every family): see the module's docstring."""
    cdef tape_prep* p = <tape_prep*>h
    cdef int status
    while True:
        if p.program == NULL:
            status = record(p, x, y, 0)
        else:
            status = run_recorded(p, x, tangents, y, value, first, results)
            if status > 0:          # a guard failed: record f at this x, then again
                status = record(p, x, y, status)
                if status == 0:
                    continue
            elif status < 0:
                status = keep_python_error(p)
            return status
        if status != 0:
            return status


cdef int run_recorded(tape_prep* p, const void* x, const void* const* tangents, void* y,
                      void* value, void* first, void** results) noexcept nogil:
    cdef prep_header* h = &p.base
    cdef Py_ssize_t start, count, k, i, lanes = p.lanes
    cdef Py_ssize_t n_x = h.n_x, n_y = h.n_y, item = p.item
    cdef int status
    cdef bint basis = tangents == NULL
    memcpy(at(p, p.x_at), x, h.x_bytes)
    if p.y_at >= 0:
        memcpy(at(p, p.y_at), y, h.y_bytes)
    status = replay_run(p.program, 0, p.split)
    if status != 0:
        return status
    if p.family == GRADIENT:   # no seeds: the reverse sweep too, once
        status = replay_run(p.program, p.split, p.program.n_instr)
        if status != 0:
            return status
        memcpy(results[0], at(p, p.result_at), h.x_bytes)
    elif p.family == PULLBACK:   # the reverse sweep once per cotangent
        for k in range(p.directions):
            memcpy(at(p, p.t_at), tangents[k], h.y_bytes)
            status = replay_run(p.program, p.split, p.program.n_instr)
            if status != 0:
                return status
            memcpy(results[k], at(p, p.result_at), h.x_bytes)
    else:
        start = 0
        while start < p.directions:
            count = min(lanes, p.directions - start)
            seed(p, tangents, basis, start, count)
            status = replay_run(p.program, p.split, p.program.n_instr)
            if status != 0:
                return status
            for k in range(count):
                if p.family == JACOBIAN:
                    for i in range(n_y):
                        memcpy(<char*>results[0] + (i * n_x + start + k) * item,
                               at(p, p.result_at + k * n_y + i), item)
                elif p.family == HESSIAN:
                    memcpy(<char*>results[0] + (start + k) * n_x * item,
                           at(p, p.result_at + k * n_x), h.x_bytes)
                else:   # one result per tangent
                    memcpy(results[start + k], at(p, p.result_at + k * p.result_size),
                           p.result_size * item)
            start += count
    if first != NULL:
        memcpy(first, at(p, p.first_at), p.first_size * item)
    if y != NULL:
        memcpy(y, at(p, p.value_at), h.y_bytes)
    if value != NULL and value != y:
        memcpy(value, at(p, p.value_at), h.y_bytes)
    return 0


cdef void seed(tape_prep* p, const void* const* tangents, bint basis, Py_ssize_t start,
               Py_ssize_t count) noexcept nogil:
    """The tangent inputs' lanes for directions [start, start + count): the tangents or
    basis directions, lanes beyond count 0 (second order: both tangent inputs alike)."""
    cdef Py_ssize_t k, n_x = p.base.n_x, item = p.item
    cdef Py_ssize_t places[2]
    cdef int j
    cdef char* t
    places[0] = p.t_at
    places[1] = p.t2_at
    for j in range(2):
        if places[j] < 0:
            continue
        t = at(p, places[j])
        memset(t, 0, p.lanes * n_x * item)
        for k in range(count):
            if basis:
                if p.base.float32:
                    (<float*>t)[k * n_x + start + k] = 1
                else:
                    (<double*>t)[k * n_x + start + k] = 1
            else:
                memcpy(t + k * n_x * item, tangents[start + k], n_x * item)


cdef int record(tape_prep* p, const void* x, void* y, int failed) noexcept with gil:
    """Record f at x (a guard `failed` > 0, or the first call): 0 or PYTHON_ERROR."""
    cdef TapeEngine engine = <TapeEngine>p.engine
    try:
        engine.record_at(x, y, failed)
    except BaseException as e:
        engine.error = e
        return PYTHON_ERROR
    return 0


cdef int keep_python_error(tape_prep* p) noexcept with gil:
    # the exception a python instruction raised (the replay left it set)
    cdef TapeEngine engine = <TapeEngine>p.engine
    import sys
    engine.error = sys.exc_info()[1]
    return PYTHON_ERROR


# The engine's call of each family, in either dtype
cdef int run_any(prep_header* h, const void* x, const void* const* tangents, void* y,
                 void* value, void* first, void** results) noexcept nogil:
    return run_tape(h, x, tangents, y, value, first, results)


# -- the nogil entry points (the handle's table, cyad/_api.pxd) -----------------------------

cdef inline int run_entry(cyad_prep* handle, const void* x, const void* tangent, void* y,
                          void* value, void* first, void* result) noexcept nogil:
    cdef prep_header* h = <prep_header*>handle
    cdef const void* xv = x
    cdef const void* const* tangents = NULL
    cdef void* results = result
    cdef int status
    if tangent != NULL:
        tangents = <const void* const*>&tangent
    status = enter_nogil(h, &xv, &tangents, y, value, first, &results)
    if status != 0:
        return status
    status = run_tape(h, xv, tangents, y, value, first, &results)
    release(&h.busy)
    return status


cdef int pushforward_f64(cyad_prep* p, const double* x, const double* dx, double* y,
                         double* out) noexcept nogil:
    return run_entry(p, x, dx, y, NULL, NULL, out)


cdef int pushforward_f32(cyad_prep* p, const float* x, const float* dx, float* y,
                         float* out) noexcept nogil:
    return run_entry(p, x, dx, y, NULL, NULL, out)


cdef int value_and_pushforward_f64(cyad_prep* p, const double* x, const double* dx, double* y,
                                   double* value, double* out) noexcept nogil:
    return run_entry(p, x, dx, y, value, NULL, out)


cdef int value_and_pushforward_f32(cyad_prep* p, const float* x, const float* dx, float* y,
                                   float* value, float* out) noexcept nogil:
    return run_entry(p, x, dx, y, value, NULL, out)


cdef int jacobian_f64(cyad_prep* p, const double* x, double* y, double* value,
                      double* out) noexcept nogil:
    return run_entry(p, x, NULL, y, value, NULL, out)


cdef int jacobian_f32(cyad_prep* p, const float* x, float* y, float* value,
                      float* out) noexcept nogil:
    return run_entry(p, x, NULL, y, value, NULL, out)


cdef int hvp_f64(cyad_prep* p, const double* x, const double* v, double* y, double* gradient,
                 double* out) noexcept nogil:
    return run_entry(p, x, v, y, NULL, gradient, out)


cdef int hvp_f32(cyad_prep* p, const float* x, const float* v, float* y, float* gradient,
                 float* out) noexcept nogil:
    return run_entry(p, x, v, y, NULL, gradient, out)


cdef int hessian_f64(cyad_prep* p, const double* x, double* y, double* value,
                     double* gradient, double* out) noexcept nogil:
    return run_entry(p, x, NULL, y, value, gradient, out)


cdef int hessian_f32(cyad_prep* p, const float* x, float* y, float* value, float* gradient,
                     float* out) noexcept nogil:
    return run_entry(p, x, NULL, y, value, gradient, out)


cdef int pullback_f64(cyad_prep* p, const double* x, const double* dy, double* y,
                      double* out) noexcept nogil:
    return run_entry(p, x, dy, y, NULL, NULL, out)


cdef int pullback_f32(cyad_prep* p, const float* x, const float* dy, float* y,
                      float* out) noexcept nogil:
    return run_entry(p, x, dy, y, NULL, NULL, out)


cdef int value_and_pullback_f64(cyad_prep* p, const double* x, const double* dy, double* y,
                                double* value, double* out) noexcept nogil:
    return run_entry(p, x, dy, y, value, NULL, out)


cdef int value_and_pullback_f32(cyad_prep* p, const float* x, const float* dy, float* y,
                                float* value, float* out) noexcept nogil:
    return run_entry(p, x, dy, y, value, NULL, out)


cdef cyad_entry_points ENTRY_POINTS
ENTRY_POINTS.pushforward_f64 = pushforward_f64
ENTRY_POINTS.pushforward_f32 = pushforward_f32
ENTRY_POINTS.value_and_pushforward_f64 = value_and_pushforward_f64
ENTRY_POINTS.value_and_pushforward_f32 = value_and_pushforward_f32
ENTRY_POINTS.gradient_f64 = jacobian_f64
ENTRY_POINTS.gradient_f32 = jacobian_f32
ENTRY_POINTS.jacobian_f64 = jacobian_f64
ENTRY_POINTS.jacobian_f32 = jacobian_f32
ENTRY_POINTS.hvp_f64 = hvp_f64
ENTRY_POINTS.hvp_f32 = hvp_f32
ENTRY_POINTS.hessian_f64 = hessian_f64
ENTRY_POINTS.hessian_f32 = hessian_f32
ENTRY_POINTS.pullback_f64 = pullback_f64
ENTRY_POINTS.pullback_f32 = pullback_f32
ENTRY_POINTS.value_and_pullback_f64 = value_and_pullback_f64
ENTRY_POINTS.value_and_pullback_f32 = value_and_pullback_f32


# -- the engine object --------------------------------------------------------------------

cdef class TapeEngine(Engine):
    """The tape engine's state of one prep: f, its derivative tape's replay, the places."""

    def __cinit__(self):
        self.handle = &self.state.base
        self.entry_points = &ENTRY_POINTS
        self.state.engine = <PyObject*>self
        self.state.program = NULL

    cdef setup(self, Prep prep, Py_ssize_t directions, object chunk, object f):
        self._check_python(f)
        self.dtype = prep.dtype
        self.x_shape = prep.x_shape
        self.two_argument = prep.two_argument
        self.state.item = prep.dtype.itemsize
        self.state.family = <int>prep.family
        self.state.directions = directions
        if prep.order == 2 and not prep.takes_tangents():
            chunk = chunk or default_second_order_chunk(directions, prep.handle.n_x, True)
        chunk = chunk or default_chunk(directions, prep.handle.n_x, True)
        self.state.lanes = max(1, min(int(chunk), directions))
        self.state.base.run = run_any
        self.bound = f

    cdef _check_python(self, object f):
        if not is_python_function(f):
            raise TypeError("cyad: engine='tape' traces Python callables; a C function runs "
                            "on engine='dual'")

    cdef bind(self, object f):
        self._check_python(f)
        if f is not self.bound:
            # another callable: its own tape
            self.state.program = NULL
            self.replay = None
            self.recorded = 0
        self.bound = f

    cdef discover(self, Prep prep, object x):
        self.record_at(cnp.PyArray_DATA(np.ascontiguousarray(x, self.dtype)), NULL, 0)
        prep.set_output(self.out_shape)

    cdef set_output(self, Prep prep, tuple shape):
        if self.out_shape is None:
            self.out_shape = shape

    cdef object python_error(self):
        cdef object error = self.error
        self.error = None
        return error

    cdef record_at(self, const void* x, void* y, int failed):
        """Trace f at x (and y's values), build the family's derivative tape and replay."""
        if failed and self.recorded >= RECORD_LIMIT:
            where = self.replay.tape.instrs[failed - 1].params["where"]
            raise RuntimeError(
                f"cyad: f's tape was recorded {self.recorded} times and a guard failed again "
                f"({where}): f's control flow depends on x in a way a tape cannot follow; "
                "use engine='dual'")
        xv = np.empty(self.x_shape, self.dtype)
        memcpy(cnp.PyArray_DATA(xv), x, xv.nbytes)
        yv = None
        if self.two_argument:
            yv = np.empty(self.out_shape, self.dtype)
            if y != NULL:
                memcpy(cnp.PyArray_DATA(yv), y, yv.nbytes)
            else:
                yv[...] = 0
        recording, result = trace(_callable(self.bound), xv, self.dtype, yv)
        out = recording.var_of(result)
        if out.dtype != self.dtype:
            raise TypeError(f"cyad: f returned {out.dtype} values, not {self.dtype}")
        if self.out_shape is not None and out.shape != self.out_shape:
            raise ValueError(f"cyad: f returned shape {out.shape}, but this prep was made "
                             f"for {self.out_shape}")
        self.out_shape = out.shape
        recording.tape.outputs = [out]
        values = [xv] if yv is None else [xv, yv]
        names = ["x"] if yv is None else ["x", "y"]
        self._derive(recording.tape, values, names)
        self.recorded += 1

    cdef _derive(self, tape, list values, list names):
        cdef int family = self.state.family
        cdef Py_ssize_t lanes = self.state.lanes
        self.state.y_at = -1
        self.state.t2_at = -1
        if family == GRADIENT or family == PULLBACK:
            derived, _ = vjp(tape, values, [0], names)
        elif family in (HVP, HESSIAN):
            reverse, _ = vjp(tape, values, [0], names)
            derived, _ = jvp(reverse.tape, values + [np.ones(self.out_shape)], lanes, [0],
                             names + ["ct"])
        elif family == SECOND_DERIVATIVE:
            forward, _ = jvp(tape, values, 1, [0], names)
            derived, _ = jvp(forward.tape, values + [np.ones((1,) + self.x_shape)], 1, [0],
                             names + ["tx"], seeded=[len(values)])
        else:   # pushforward, derivative, jacobian
            derived, _ = jvp(tape, values, lanes, [0], names)
        self.replay = Replay(derived.tape)
        d = derived.tape
        self.state.split = derived.split
        self.state.x_at = self.replay.offset(d.inputs[0])
        if self.two_argument:
            self.state.y_at = self.replay.offset(d.inputs[1])
        primal_inputs = len(values)
        self.state.value_at = self.replay.offset(d.outputs[0])
        if family == GRADIENT:
            self.replay.set_input(primal_inputs, np.ones(self.out_shape))
            self.state.result_at = self.replay.offset(d.outputs[1])
        elif family == PULLBACK:   # the cotangent input, set per cotangent
            self.state.t_at = self.replay.offset(d.inputs[primal_inputs])
            self.state.result_at = self.replay.offset(d.outputs[1])
        elif family in (HVP, HESSIAN):
            self.replay.set_input(primal_inputs, np.ones(self.out_shape))
            self.state.t_at = self.replay.offset(d.inputs[primal_inputs + 1])
            self.state.first_at = self.replay.offset(d.outputs[1])
            self.state.result_at = self.replay.offset(d.outputs[3])
        elif family == SECOND_DERIVATIVE:
            # the first tangent input (of the inner jvp) and the second's are both 1
            self.state.t_at = self.replay.offset(d.inputs[primal_inputs])
            self.state.t2_at = self.replay.offset(d.inputs[primal_inputs + 1])
            self.state.first_at = self.replay.offset(d.outputs[1])
            self.state.result_at = self.replay.offset(d.outputs[3])
        else:
            self.state.t_at = self.replay.offset(d.inputs[primal_inputs])
            self.state.result_at = self.replay.offset(d.outputs[1])
        size = int(np.prod(self.out_shape))
        self.state.result_size = self.state.base.n_x if family == HVP else size
        self.state.first_size = (self.state.base.n_x if family in (HVP, HESSIAN)
                                 else size)
        self.state.program = &self.replay.state

    @property
    def directions(self):
        return self.state.directions

    @property
    def chunk(self):
        return self.state.lanes

    @property
    def width(self):
        return self.state.lanes

    @property
    def is_python(self):
        return True

    @property
    def input_dual(self):
        return None

    @property
    def evaluations(self):
        if self.state.family == PULLBACK:   # a reverse sweep per cotangent
            return self.state.directions
        return (self.state.directions + self.state.lanes - 1) // self.state.lanes

    @property
    def records(self):
        """How many times f was recorded (the first time, and after each failed guard)."""
        return self.recorded

    @property
    def tape(self):
        """The derivative tape the prep replays (None before the first call)."""
        return None if self.replay is None else self.replay.tape


cdef object _callable(object f):
    return (<FunctionWrapper>f).callable if isinstance(f, FunctionWrapper) else f
