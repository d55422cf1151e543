"""The tape engine: f recorded once on tracer arrays, its derivative tapes replayed compiled.

`TapeEngine` is the engine behind a prep named "tape". On its first call it traces f at
x (cyad/_tape/trace.py), builds the derivative tape of the prep's family
(cyad/_tape/transform.py) and lowers it to a `Replay` (cyad/_tape/lowering.pyx): one
arena allocated once, in which x, y, the seeds and the results have fixed places. Every
call then runs on raw pointers without the GIL: x (and y's incoming values) copied in,
the primal part of the tape replayed once, then its derivative part once per chunk of
directions (seeds written into the tangent input's lanes), the results copied out.

    pushforward, derivative   jvp of f, lanes = the chunk of tangents
    jacobian                  jvp of f, lanes = a chunk of basis directions; with few
                              outputs (`_by_rows`), vjp of f, lanes = a chunk of rows
                              (basis cotangents)
    gradient                  vjp of f (the reverse sweep), its cotangent input 1
    pullback                  vjp of f, lanes = the chunk of cotangents
    second_derivative         jvp of (jvp of f) along the tangent 1
    hvp                       jvp of (vjp of f): forward over reverse, lanes = tangents
    hessian                   jvp of (vjp of f), lanes = a chunk of basis directions
                              (by default all of them up to HESSIAN_ALL_LANES, else 8)

What a tape freezes: f's control flow where it reads values (guarded, below), the arrays
its operations take as constants (arrays f closes over or builds), and any Python state it
reads (a global number, an attribute): f runs once, not on every call. The captured
arrays are compared with a copy on every call, and a change (an array updated in place
between calls) records f anew. Python state is seen only by a tape cyad chose by default
(`chosen`: no engine= named): it compares what f can reach (cyad/_tape/state.pyx: the
arrays among it join the captured ones) before every call and records f anew when it
changed, or hands f to the dual engine where that state is too large to watch. The arrays
of f's other arguments (f a `Bound`, cyad/_arguments/bound.pyx) are not frozen: they are
inputs of the tape after x and y, copied in on every call as x is (`leaf_at`). A run of
calls that is one operation (a block of cyad.at_points' rows) compares it once, at its
start (`TapeEngine.hold_state`): the comparison takes the GIL, which would otherwise
serialise threads that each run a block.

Guards: when a guard of the tape fails (a branch of f, a mask, an order it read off the
values changed: cyad/_tape/trace.py lists them), the call records f anew at this x,
with the GIL, and runs on the new tape. After RECORD_LIMIT records a prep refuses
(RuntimeError naming what f read), as the tape cannot follow f's control flow; a tape
chosen by default instead hands f to a prep of the dual engine (`delegate`), which
answers from then on, as it does for an f the tape cannot trace.

For basis seeds (jacobian by columns or by rows, hessian) the instructions that read the
seeds alone are replayed once per chunk when f is recorded, and their results copied back
per call (`_cache_seeded`). Given tangents (cotangents) that fit in one chunk are held:
a call whose tangents are, bit for bit, those of the last call (a sparse Jacobian's or
Hessian's seeds, cyad/_sparse/operators.py) neither seeds nor replays the instructions
that read the seeds alone (`seeds_held`, `same_seeds`); their results keep their slots.

NumPy's floating-point warnings: a call clears the floating-point flags before the
tape's value part and tests them after it (the primal part; with the derivatives' when one
run computes the whole tape, as a gradient's always does, and with the reverse sweep's in
forward over reverse: a flag of theirs costs a check, never a warning). A call from Python whose
flags are set (or whose tape holds a number that overflowed its cast, which NumPy warns
of on every evaluation) has NumPy compute f's values again from its tape when it ends
(`finish`, cyad._tape.program.warn_as_numpy), warning or raising as f does. The nogil entry
points do not warn.

Partials that are not finite: where a partial is infinite or NaN (sqrt, cbrt and x**p
with p < 1 at 0, arcsin at +-1, arctan2 at the origin, ...), forward mode's convention
gives the derivative: a zero tangent times it contributes 0 (`np.sqrt(x - x)`, `np.std`
of equal numbers have derivative 0), any other makes it infinite or NaN. The reverse
sweep multiplies the partial by a cotangent instead, and cannot tell what forward mode
would: it forms infinities that forward mode never does (inf - inf where the tangent
sums to 0), and a zero cotangent hides infinite tangents (d/dx sqrt(x)**2 at 0 is NaN in
forward mode, 0 in reverse). So a reverse call (gradient, pullback, hvp, Hessian, a
Jacobian by rows) whose value part raised a floating-point flag of an infinity or NaN
made of finite numbers (divide by zero, overflow, invalid: how such a partial is made),
or whose results hold a number that is not finite (a partial of an infinite input), is
answered by a prep of the dual engine (`forward`, made at the first such call): every
engine gives forward mode's numbers. That costs a forward evaluation per chunk of
directions, at such points only; NumPy warns of them in f as well.

The tape engine traces Python callables. A function recorded by cyad.record
(cyad/_tape/function.pyx) is one too: its first record is the tape it holds, and f is
traced anew only when a guard fails. A C function runs on engine="dual".
"""
import types

import numpy as np

cimport numpy as cnp
from cpython.exc cimport PyErr_Fetch, PyErr_NormalizeException
from cpython.ref cimport PyObject, Py_XDECREF

cdef extern from "Python.h":
    int PyException_SetTraceback(PyObject* ex, PyObject* tb)
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

from cyad._c_api cimport cyad_prep, cyad_entry_points, PYTHON_ERROR
from cyad._fused cimport real
from cyad._core cimport (Prep, Engine, prep_header, release, part_chunks, cancelled,
                         CANCELLED, PUSHFORWARD, GRADIENT, JACOBIAN, HVP,
                         HESSIAN, PULLBACK)
from cyad._overlap cimport enter_nogil
from cyad._fp_flags cimport clear_fp_flags, raised_fp_flags, non_finite_fp_flags
from cyad._tape.replay cimport replay_run
from cyad._tape.lowering cimport Replay
from cyad._tape.lowering import slice_aliases
from cyad._arguments.bound cimport Bound
from cyad._parallel.threads cimport copy_bytes, same_bytes, replay_threads
from cyad._wrapper cimport is_python_function, FunctionWrapper
from cyad._dual.engine import default_chunk
from cyad._tape.program import warn_as_numpy
from cyad._tape import state as _tape_state
from cyad._tape.state import PythonState
from cyad._reporting.warnings import warn_once
from cyad import _engines, _families
from cyad._tape.trace import trace
from cyad._tape import recipes as _tape_recipes
from cyad._core import _FAMILY_NAMES

cnp.import_array()


class TapeLimit(RuntimeError):
    """A prep's guards failed RECORD_LIMIT times: f's control flow is not for a tape."""


class StateUnwatched(RuntimeError):
    """f reaches more Python state than a default tape compares before its calls."""


# records of f per prep, the first included, before a failing guard becomes an error
RECORD_LIMIT = 8

# calls in a row that each found f's Python state changed (each recording f) before a
# default tape warns
STATE_STREAK = 8
# A Jacobian is computed by rows (reverse lanes of basis cotangents) when
# BY_ROWS * n_y <= n_x, or BY_ROWS_PYTHON * n_y <= n_x for a tape with python instructions
# (their reverse rules run once per lane). Measured, columns' time over rows' (default
# lanes), for tanh(A @ sin(x)) / sums of blocks of sin(x) * x / cumsum(sin(x))[-n_y:] * x[:n_y]:
# n_x = 1000, n_y = 10: 29 / 46 / 76; n_y = 100: 6.6 / 8.8 / 2.5; n_y = 250: 3.7 / 5.0 / 0.89;
# n_y = 500: 2.0 / 3.8 / 0.64; n_x = 100, n_y = 10: 3.0 / 4.7 / 1.45; n_y = 25: 2.9 / 3.2 /
# 0.59; n_y = 50: 1.8 / 1.3 / 0.27; n_y = 100: 0.97 / 1.7 / 0.11.
BY_ROWS = 2
BY_ROWS_PYTHON = 10
# A Hessian's lanes when no chunk is given: all of x's directions in one sweep up to
# HESSIAN_ALL_LANES inputs, else HESSIAN_LANES. Measured (us; Rosenbrock / sum(tanh(A @ x))),
# chunk 8, 16, n: n = 30: 6.4 6.0 5.6 / 9.8 10.8 9.2; n = 50: 16.5 17.2 14.4 / 32.9 36.9
# 29.8; n = 64: 21.6 21.9 22.4 / 53.6 53.1 53.0; n = 100: 51.7 57.8 55.9 / 204 218 231;
# n = 300: 480 490 553 / 4571 4516 4526.
HESSIAN_ALL_LANES = 64
HESSIAN_LANES = 8
# A reverse sweep's lanes when no chunk is given (pullback, Jacobian by rows): as many as
# keep an adjoint within REVERSE_LANE_NUMBERS numbers; more cost time once they leave the
# cache. Measured, a batch of 16 cotangents of sin(x) * x + tanh(x) ** 2 (us), lanes 1, 4,
# 8, 16: n = 10: 2.2 1.5 1.4 1.4; n = 100: 6.4 5.7 5.6 5.7 (tanh(A @ sin(x)): 39.9 39.6
# 40.0 44.3); n = 1000: 48.8 50.5 51.4 52.7; n = 10000: 542 579 588 591.
REVERSE_LANE_NUMBERS = 1024
# the most numbers the per-chunk results of a Jacobian's or Hessian's seeds may take
CACHE_LIMIT = 1 << 25


# -- a call, without the GIL ---------------------------------------------------------------

cdef inline char* at(tape_prep* p, Py_ssize_t offset) noexcept nogil:
    return <char*>p.program.arena + offset * p.item


cdef int run_tape(prep_header* h, const void* x, const void* const* tangents, void* y,
                  void* value, void* first, void** results) noexcept nogil:
    """The prep's whole call (every family): see the module's docstring."""
    cdef tape_prep* p = <tape_prep*>h
    cdef int status
    p.value_flags = 0
    while True:
        if p.delegate != NULL:
            return run_delegate(p, x, tangents, y, value, first, results)
        if p.program == NULL:
            status = record(p, x, y, 0)
        else:
            status = run_recorded(p, x, tangents, y, value, first, results)
            if status == 0 and p.not_finite:
                return run_forward(p, x, tangents, y, value, first, results)
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
    cdef Py_ssize_t start, stop, first_chunk, last_chunk, count, k, lanes = p.lanes
    cdef Py_ssize_t n_x = h.n_x, item = p.item
    cdef int status
    cdef int threads = replay_threads()
    cdef bint basis = tangents == NULL
    # the tangents of the last call (a sparse Jacobian's or Hessian's seeds): the tangent
    # input and the results of its own instructions stand
    cdef bint held = (not basis and p.seeds_held and not p.runs_whole
                      and same_seeds(p, tangents))
    # a gradient (no seeds), or one chunk of seeds and none cached: the seeds first, then
    # the whole tape in one run (the flags taken are those of both parts: a derivative
    # part's that the value part did not raise costs a call of the dual engine and a
    # check of NumPy's warnings)
    cdef bint at_once = p.runs_whole or (
        p.family != PULLBACK and p.cache == NULL and 0 < p.directions <= lanes and not held)
    # the chunks of directions this run computes: all, or a part's (workers=)
    p.not_finite = False
    part_chunks(h, (p.directions + lanes - 1) // lanes, False, &first_chunk, &last_chunk)
    if first_chunk >= last_chunk and p.family != GRADIENT:
        return 0
    for k in range(p.n_captured):
        if not same_bytes(p.captured[k].data, p.captured[k].copy, p.captured[k].nbytes,
                          threads):
            return CAPTURED_CHANGED
    if p.strided_captured and strided_changed(p):
        return CAPTURED_CHANGED
    if p.check_state and state_changed(p):
        return CAPTURED_CHANGED
    copy_bytes(at(p, p.x_at), x, h.x_bytes, threads)
    if p.y_at >= 0:
        copy_bytes(at(p, p.y_at), y, h.y_bytes, threads)
    for k in range(p.n_leaves):
        copy_bytes(at(p, p.leaf_at[k]), p.leaf_from[k], p.leaf_bytes[k], threads)
    clear_fp_flags()
    if not at_once:
        status = replay_run(p.program, 0, p.split)
        take_flags(p)
        if status != 0 or p.not_finite:   # (the dual engine answers: run_forward)
            return status
    if p.family == GRADIENT:   # no seeds: the value part and the reverse sweep, once
        status = replay_run(p.program, 0, p.program.n_instr)
        take_flags(p)
        if status != 0 or p.not_finite:
            return status
        copy_bytes(results[0], at(p, p.result_at), h.x_bytes, threads)
        p.not_finite = not all_finite(results[0], n_x, h.float32)
    else:
        start = first_chunk * lanes
        stop = min(last_chunk * lanes, p.directions)
        while start < stop:
            if cancelled(h):
                return CANCELLED
            count = min(lanes, p.directions - start)
            if held:   # the seeds' own part ran on these tangents in the last call
                status = replay_run(p.program, p.seeded_split, p.program.n_instr)
            elif p.cache != NULL:   # the seeds' own part, computed when f was recorded
                seed(p, tangents, basis, start, count)
                restore_cached(p, start // lanes)
                status = replay_run(p.program, p.seeded_split, p.program.n_instr)
            else:
                p.seeds_held = False
                seed(p, tangents, basis, start, count)
                status = replay_run(p.program, 0 if at_once else p.split, p.program.n_instr)
                if at_once:   # the value part ran with the derivatives' (flags of both)
                    take_flags(p)
                # (one chunk of tangents: the next call may find them held)
                p.seeds_held = (status == 0 and not basis and p.t2_at < 0
                                and p.directions <= lanes)
            if status != 0:
                return status
            if p.reverse:   # a Jacobian by rows: lane k is row start + k
                memcpy(<char*>results[0] + start * h.x_bytes, at(p, p.result_at),
                       count * h.x_bytes)
            elif p.family == JACOBIAN:   # lane k is column start + k
                if h.float32:
                    put_columns[float](p, <float*>results[0], start, count)
                else:
                    put_columns[double](p, <double*>results[0], start, count)
            elif p.family == HESSIAN:  # lane k is row start + k (a Hessian is symmetric)
                memcpy(<char*>results[0] + start * n_x * item, at(p, p.result_at),
                       count * h.x_bytes)
            else:   # one result per tangent (cotangent)
                for k in range(count):
                    copy_bytes(results[start + k], at(p, p.result_at + k * p.result_size),
                               p.result_size * item, threads)
            if swept(p) and not p.not_finite:   # reverse results: those of this chunk
                p.not_finite = not all_finite(
                    at(p, p.result_at),
                    count * p.result_size,
                    h.float32)
            start += count
    if first != NULL:
        copy_bytes(first, at(p, p.first_at), p.first_size * item, threads)
        if swept(p) and not p.not_finite:
            p.not_finite = not all_finite(first, p.first_size, h.float32)
    if y != NULL:
        copy_bytes(y, at(p, p.value_at), h.y_bytes, threads)
    if value != NULL and value != y:
        copy_bytes(value, at(p, p.value_at), h.y_bytes, threads)
    return 0


cdef inline void take_flags(tape_prep* p) noexcept nogil:
    # the floating-point flags the value part raised: NumPy's warnings, and for a reverse
    # sweep whether a partial may be infinite or NaN (see the module's docstring)
    cdef int flags = raised_fp_flags()
    p.value_flags = flags | p.casts_warn
    if flags & non_finite_fp_flags() and swept(p):
        p.not_finite = True


cdef inline bint swept(const tape_prep* p) noexcept nogil:
    # whether the prep's results come from a reverse sweep (see the module's docstring)
    return (p.family == GRADIENT or p.family == PULLBACK or p.family == HVP
            or p.family == HESSIAN or p.reverse)


cdef bint all_finite(const void* numbers, Py_ssize_t count, bint float32) noexcept nogil:
    """Whether none of `count` numbers is infinite or NaN: an exponent of all ones, told
    from the bits without a branch per number (a loop the compiler vectorises)."""
    cdef const uint64_t* wide = <const uint64_t*>numbers
    cdef const uint32_t* narrow = <const uint32_t*>numbers
    cdef uint64_t seen = 0
    cdef Py_ssize_t i
    if float32:
        for i in range(count):
            seen |= (narrow[i] & 0x7f800000u) == 0x7f800000u
    else:
        for i in range(count):
            seen |= (wide[i] & 0x7ff0000000000000u) == 0x7ff0000000000000u
    return seen == 0


cdef bint same_seeds(tape_prep* p, const void* const* tangents) noexcept nogil:
    # the tangents are, bit for bit, those the tangent input holds
    cdef Py_ssize_t k, nbytes = p.seed_size * p.item
    cdef const char* held = at(p, p.t_at)
    cdef int threads = replay_threads()
    for k in range(p.directions):
        if not same_bytes(held + k * nbytes, tangents[k], nbytes, threads):
            return False
    return True


cdef void put_columns(tape_prep* p, real* jacobian, Py_ssize_t start,
                      Py_ssize_t count) noexcept nogil:
    # jacobian[i, start + k] = lane k of the tangent output, element i
    cdef const real* lanes = <const real*>at(p, p.result_at)
    cdef Py_ssize_t i, k, n_x = p.base.n_x, n_y = p.base.n_y
    for i in range(n_y):
        for k in range(count):
            jacobian[i * n_x + start + k] = lanes[k * n_y + i]


cdef void restore_cached(tape_prep* p, Py_ssize_t chunk) noexcept nogil:
    # the cached results of the seeds' own instructions for this chunk, back in the arena
    cdef const char* row = <const char*>p.cache + chunk * p.cache_size * p.item
    cdef Py_ssize_t j
    for j in range(p.n_cache_spans):
        memcpy(at(p, p.cache_spans[2 * j]), row, p.cache_spans[2 * j + 1] * p.item)
        row += p.cache_spans[2 * j + 1] * p.item


cdef void seed(tape_prep* p, const void* const* tangents, bint basis, Py_ssize_t start,
               Py_ssize_t count) noexcept nogil:
    """The tangent inputs' lanes for directions [start, start + count): the tangents or
    basis directions, lanes beyond count 0 (second order: both tangent inputs alike)."""
    cdef Py_ssize_t k, n_x = p.seed_size, item = p.item
    cdef Py_ssize_t places[2]
    cdef int j, threads = replay_threads()
    cdef char* t
    places[0] = p.t_at
    places[1] = p.t2_at
    for j in range(2):
        if places[j] < 0:
            continue
        t = at(p, places[j])
        if not basis:
            for k in range(count):
                copy_bytes(t + k * n_x * item, tangents[start + k], n_x * item, threads)
            memset(t + count * n_x * item, 0, (p.lanes - count) * n_x * item)
            continue
        # basis directions: only the ones of the last chunk are cleared
        if p.basis_start < 0:
            memset(t, 0, p.lanes * n_x * item)
        else:
            for k in range(p.basis_count):
                set_number(p, t, k * n_x + p.basis_start + k, 0)
        for k in range(count):
            set_number(p, t, k * n_x + start + k, 1)
    if basis:
        p.basis_start = start
        p.basis_count = count


cdef inline void set_number(tape_prep* p, char* buffer, Py_ssize_t i, double value) noexcept nogil:
    if p.base.float32:
        (<float*>buffer)[i] = <float>value
    else:
        (<double*>buffer)[i] = value


cdef int record(tape_prep* p, const void* x, void* y, int failed) noexcept with gil:
    """Record f at x (a guard `failed` > 0, or the first call): 0 or PYTHON_ERROR (or
    the dual engine's prep set up to answer instead: see TapeEngine.record_at)."""
    cdef TapeEngine engine = <TapeEngine>p.engine
    try:
        engine.record_at(x, y, failed)
    except BaseException as e:
        engine.error = e
        return PYTHON_ERROR
    return 0


cdef bint strided_changed(tape_prep* p) noexcept with gil:
    return (<TapeEngine>p.engine).strided_changed()


cdef bint state_changed(tape_prep* p) noexcept with gil:
    # (a run of calls that each found it changed: `finish` warns; the comparison that
    # follows the record of a call that found it changed is that call's)
    cdef TapeEngine engine = <TapeEngine>p.engine
    cdef bint changed
    try:
        changed = engine.python_state.changed()
    except BaseException:   # (a comparison that raised: f is recorded anew, or handed over)
        changed = True
    if changed:
        engine.state_streak += 1
        engine.state_changed_at = engine.python_state.what_changed
        engine.state_recorded = True
        return True
    if not engine.state_recorded:
        engine.state_streak = 0
    engine.state_recorded = False
    return False


cdef int run_delegate(tape_prep* p, const void* x, const void* const* tangents, void* y,
                      void* value, void* first, void** results) noexcept nogil:
    # the call on the dual engine's prep that a default tape handed f to
    return run_dual(p, p.delegate, x, tangents, y, value, first, results)


cdef int run_forward(tape_prep* p, const void* x, const void* const* tangents, void* y,
                     void* value, void* first, void** results) noexcept nogil:
    # the call again on the dual engine's prep of the same signature: the reverse results
    # held a number that is not finite (see the module's docstring)
    p.value_flags = 0    # f evaluated on dual arrays warns as f does
    if p.forward == NULL and make_forward(p) != 0:
        return PYTHON_ERROR
    p.forward_calls += 1
    return run_dual(p, p.forward, x, tangents, y, value, first, results)


cdef int make_forward(tape_prep* p) noexcept with gil:
    cdef TapeEngine engine = <TapeEngine>p.engine
    try:
        engine.forward = engine._dual_prep()
    except BaseException as e:
        engine.error = e
        return PYTHON_ERROR
    p.forward = engine.forward.handle
    return 0


cdef int run_dual(tape_prep* p, prep_header* dual, const void* x,
                  const void* const* tangents, void* y, void* value, void* first,
                  void** results) noexcept nogil:
    # a call on a prep of the dual engine held by this one (`delegate` or `forward`)
    cdef int status
    # (a part of workers=: the same part of the dual prep's directions)
    dual.part, dual.parts = p.base.part, p.base.parts
    dual.cancel = p.base.cancel
    status = dual.run(dual, x, tangents, y, value, first, results)
    dual_leaves(p, dual, status)
    return status


cdef Prep held_dual(tape_prep* p, prep_header* dual):
    cdef TapeEngine engine = <TapeEngine>p.engine
    return engine.delegate if dual == p.delegate else engine.forward


cdef void dual_leaves(tape_prep* p, prep_header* dual, int status) noexcept with gil:
    cdef Prep prep = held_dual(p, dual)
    prep.engine_state.finish()
    if status == PYTHON_ERROR:
        (<TapeEngine>p.engine).error = prep.engine_state.python_error()


cdef int keep_python_error(tape_prep* p) noexcept with gil:
    p.value_flags = 0    # the error is what the call reports
    (<TapeEngine>p.engine).error = take_raised()
    return PYTHON_ERROR


cdef object take_raised():
    """The exception a python instruction raised (the replay left it set, not handled:
    sys.exc_info() does not see it), cleared."""
    cdef PyObject* kind = NULL
    cdef PyObject* value = NULL
    cdef PyObject* traceback = NULL
    PyErr_Fetch(&kind, &value, &traceback)
    if kind == NULL:
        return None
    PyErr_NormalizeException(&kind, &value, &traceback)
    error = <object>value
    if traceback != NULL:
        PyException_SetTraceback(value, traceback)
    Py_XDECREF(kind)
    Py_XDECREF(value)
    Py_XDECREF(traceback)
    return error


# The engine's call of each family, in either dtype
cdef int run_any(prep_header* h, const void* x, const void* const* tangents, void* y,
                 void* value, void* first, void** results) noexcept nogil:
    return run_tape(h, x, tangents, y, value, first, results)


# -- the nogil entry points (the handle's table, cyad/_c_api.pxd) ---------------------------

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

cdef list capture(list arrays, captured_array** table, Py_ssize_t* count,
                  bint* strided):
    """(array, copy) pairs of the arrays a tape took as constants; the C-contiguous ones
    also in a new `table` (freed by the caller) of `count` entries, which a call compares
    with memcmp without the GIL; `strided` when some are not (compared by
    captured_strided_changed, with the GIL)."""
    cdef list pairs = [(a, a.copy()) for a in arrays]
    cdef list contiguous = [(a, c) for a, c in pairs if a.flags.c_contiguous]
    cdef Py_ssize_t k = 0
    strided[0] = len(contiguous) < len(pairs)
    if contiguous:
        table[0] = <captured_array*>malloc(len(contiguous) * sizeof(captured_array))
        if table[0] == NULL:
            raise MemoryError()
        for a, c in contiguous:
            table[0][k].data = cnp.PyArray_DATA(a)
            table[0][k].copy = cnp.PyArray_DATA(c)
            table[0][k].nbytes = a.nbytes
            k += 1
        count[0] = k
    return pairs


cdef bint captured_strided_changed(list pairs):
    """Whether a captured array that is not C-contiguous differs from its copy."""
    return any(not a.flags.c_contiguous and np.ascontiguousarray(a).tobytes() != c.tobytes()
               for a, c in pairs)


cdef class TapeEngine(Engine):
    """The tape engine's state of one prep: f, its derivative tape's replay, the places."""

    replays_tape = True

    def __cinit__(self):
        self.handle = &self.state.base
        self.entry_points = &ENTRY_POINTS
        self.state.engine = <PyObject*>self
        self.state.program = NULL
        self.state.n_leaves = 0
        self.state.leaf_at = NULL
        self.warned = set()

    cdef setup(self, Prep prep, Py_ssize_t directions, object chunk, object f):
        self._check_python(f)
        self.dtype = prep.dtype
        self.x_shape = prep.x_shape
        self.two_argument = prep.two_argument
        self.state.item = prep.dtype.itemsize
        self.state.family = <int>prep.family
        self.state.directions = directions
        self.chunk_given = bool(chunk)
        if prep.order == 2 and not prep.takes_tangents():
            n_x = prep.handle.n_x
            chunk = chunk or (n_x if n_x <= HESSIAN_ALL_LANES else HESSIAN_LANES)
        chunk = chunk or default_chunk(directions, prep.handle.n_x, True)
        self.state.lanes = max(1, min(int(chunk), directions))
        self.state.seed_size = prep.handle.n_x
        self.state.base.run = run_any
        self.bound = f
        self.arguments = f if isinstance(f, Bound) else None

    cdef _check_python(self, object f):
        if not is_python_function(f) and _recorded(f) is None:
            raise TypeError("cyad: engine='tape' traces Python callables; a C function runs "
                            "on engine='dual'")

    cdef bind(self, object f):
        if not is_python_function(f) and _recorded(f) is None:   # (as the dual engine says)
            raise ValueError("cyad: this prep was made for a Python callable; f is not one")
        if not _same_callable(f, self.bound):
            # another callable: its own tape (and its own preps of the dual engine)
            self.state.program = NULL
            self.replay = None
            self.recorded = 0
            self.delegate = self.forward = None
            self.handed_over = None
            self.state.delegate = self.state.forward = NULL
        self.bound = f
        self.arguments = f if isinstance(f, Bound) else None

    cdef discover(self, Prep prep, object x):
        self.record_at(cnp.PyArray_DATA(np.ascontiguousarray(x, self.dtype)), NULL, 0)
        if self.out_shape is None:   # handed to the dual engine: it learns the shape
            try:
                self.delegate.engine_state.discover(self.delegate, x)
            finally:
                self.delegate.engine_state.finish()
            self.out_shape = self.delegate.out_shape
        prep.set_output(self.out_shape)

    cdef object handed_over_because(self):
        return None if self.delegate is None else self.handed_over

    cdef Engine answering(self):
        return self if self.delegate is None else self.delegate.engine_state

    cdef str work(self):
        if self.state.family == GRADIENT:
            return "one reverse sweep of its tape per call, f not evaluated"
        sweeps = "reverse sweep(s)" if self.state.family == PULLBACK or self.state.reverse else (
            "replay(s) of its derivative tape")
        what = "rows" if self.state.reverse else "cotangents" if self.state.family == PULLBACK \
            else "directions"
        return (f"{self.state.directions} {what} in chunks of {self.state.lanes}: "
                f"{self.evaluations} {sweeps} per call, f not evaluated")

    cdef _hand_to_dual(self, const void* x):
        """Make the dual engine's prep of this family and signature that answers from now on."""
        self.delegate = self._dual_prep()
        self.state.delegate = self.delegate.handle

    cdef Prep _dual_prep(self):
        """A prep of the dual engine of this family and signature, for f."""
        cdef Prep delegate
        xv = np.zeros(self.x_shape, self.dtype)
        yv = None if not self.two_argument else np.zeros(self.out_shape, self.dtype)
        if self.state.family in (HVP, PULLBACK):   # as many tangents (cotangents)
            shape = (self.x_shape if self.state.family == HVP
                     else self.out_shape if self.out_shape is not None else ())
            tangents = tuple(np.zeros(shape, self.dtype) for _ in range(self.state.directions))
            args = (tangents if len(tangents) > 1 else tangents[0],)
        else:
            args = ()
        # (a tape chosen by default that cannot serve f; any, for a call whose partials are
        # not finite)
        delegate = _families.PREP_TYPES[self.state.family](_callable(self.bound), xv,
                                                           args[0] if args else None, yv,
                                                           None, _engines.FALLBACK)
        if self.out_shape is not None and delegate.out_shape is None:
            delegate.set_output(self.out_shape)
        return delegate

    cdef object declared_out_shape(self):
        source = _recorded(self.bound)     # a recorded function knows its output
        return None if source is None else source.out_shape

    cdef set_output(self, Prep prep, tuple shape):
        if self.out_shape is None:
            self.out_shape = shape

    cdef bint splits(self, Prep prep):
        # a gradient is one reverse sweep; the others' lanes run in chunks
        return prep.family in (PUSHFORWARD, PULLBACK, JACOBIAN, HVP, HESSIAN)

    cdef quiet(self):
        self.state.value_flags = 0

    cdef bint hold_state(self) except -1:
        # when f's Python state is unchanged, the calls that follow skip the comparison;
        # otherwise (or on a prep that makes none) nothing changes
        if not self.state.check_state or self.python_state.changed():
            return False
        self.state.check_state = False
        return True

    cdef void release_state(self, bint held) noexcept:
        # a record during the run (a guard failed) has set the comparison again already
        if held:
            self.state.check_state = True

    cdef object python_error(self):
        cdef object error = self.error
        self.error = None
        return error

    cdef finish(self):
        if self.state_streak >= STATE_STREAK:
            warn_once(self.warned, "state", (
                f"cyad: f's Python state changed before each of the last {self.state_streak} "
                f"calls ({self.state_changed_at}), and the default tape recorded f anew "
                "each time. Where it does not change f's values (a counter of calls, a log), "
                "engine='tape' freezes it and replays; engine='dual' evaluates f on every "
                "call without recording it"))
        # a call from Python whose value part raised a floating-point flag: NumPy computes
        # f's values once more from its tape, warning (or raising) as it does in f
        if self.state.value_flags:
            self.state.value_flags = 0
            self.checks += 1
            inputs = [self._slot(self.state.x_at, self.x_shape)]
            if self.two_argument:
                inputs.append(self._slot(self.state.y_at, self.out_shape))
            for k in range(self.state.n_leaves):
                inputs.append(self._slot(self.state.leaf_at[k], self.arguments.shapes[k]))
            warn_as_numpy(self.primal, inputs)

    cdef object _slot(self, Py_ssize_t offset, tuple shape):
        # a copy of the numbers of `shape` at `offset` in the replay's arena
        return self.replay.arena[offset:offset + int(np.prod(shape))].reshape(shape).copy()

    cdef record_at(self, const void* x, void* y, int failed):
        """Trace f at x (and y's values), build the family's derivative tape and replay.

        A tape chosen by default hands f to the dual engine where it cannot serve: an f
        it cannot trace (TypeError, NotImplementedError: the dual engine then answers,
        or raises f's own error), or one whose guards keep failing.
        """
        try:
            self._record_at(x, y, failed)
        except (TypeError, NotImplementedError, TapeLimit, StateUnwatched) as e:
            if not self.chosen:
                raise
            self.handed_over = str(e)
            self._hand_to_dual(x)

    cdef _record_at(self, const void* x, void* y, int failed):
        if failed == CAPTURED_CHANGED:
            failed = 0      # f's data changed, not its control flow: not counted
        elif failed and self.recorded >= RECORD_LIMIT:
            where = self.replay.tape.instrs[failed - 1].params["where"]
            raise TapeLimit(
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
        source = _recorded(self.bound)
        leaves = []     # f's other arguments' leaves of this call (a Bound's): inputs too
        if (source is not None and self.recorded == 0 and source.dtype == self.dtype
                and source.bound is None and source.x_shape == self.x_shape
                and source.two_argument == self.two_argument):
            # a function cyad.record recorded: its tape as recorded (at its own x)
            tape, values, captured = source.primal()
            out = tape.outputs[0]
            xv, yv = values[0], values[1] if self.two_argument else None
        else:
            if self.arguments is not None:
                leaves = [np.array(leaf, self.dtype) for leaf in self.arguments.leaves]
            recording, result = trace(
                _callable(self.bound) if self.arguments is None else self.arguments.function,
                xv, self.dtype, yv, leaves=leaves)
            tape, captured = recording.tape, recording.captured
            out = recording.var_of(result)
        if self.chosen:
            try:
                self.python_state = state = PythonState(_callable(self.bound))
                unequal = state.changed()
            except Exception as error:   # an attribute or a comparison that raises
                raise StateUnwatched(f"f reaches Python state it cannot compare: {error!r}")
            if not state.complete:
                raise StateUnwatched(
                    f"f reaches more Python state than a tape watches "
                    f"({_tape_state.BUDGET} reads, objects {_tape_state.DEPTH} deep)")
            if unequal:
                raise StateUnwatched("f reaches Python state that differs from itself "
                                     "(a value unequal to itself)")
            captured = _distinct(captured + state.arrays)
            self.state.check_state = True
        self._capture(captured)
        if out.dtype != self.dtype:
            raise TypeError(f"cyad: f returned {out.dtype} values, not {self.dtype}")
        if self.out_shape is not None and out.shape != self.out_shape:
            raise ValueError(f"cyad: f returned shape {out.shape}, but this prep was made "
                             f"for {self.out_shape}")
        self.out_shape = out.shape
        tape.outputs = [out]
        values = [xv] if yv is None else [xv, yv]
        names = ["x"] if yv is None else ["x", "y"]
        values += leaves
        names += [f"args{k}" for k in range(len(leaves))]
        self._derive(tape, values, names)
        self.primal = tape
        self.state.casts_warn = 1 if tape.casts else 0
        self.traces += 1
        if failed or self.recorded == 0:
            self.recorded += 1

    cdef _capture(self, list arrays):
        """Keep a copy of every array the tape took as a constant, to compare every call."""
        free(self.state.captured)
        self.state.captured = NULL
        self.state.n_captured = 0
        self.captured = capture(arrays, &self.state.captured, &self.state.n_captured,
                                &self.state.strided_captured)

    cdef bint strided_changed(self):
        return captured_strided_changed(self.captured)

    cdef _place_leaves(self, list inputs):
        """The places of the arguments' leaves (`inputs`, Vars of the derived tape), and
        where a call finds them (the Bound's table, which it fills before every call)."""
        cdef Py_ssize_t k
        free(self.state.leaf_at)
        self.state.leaf_at = NULL
        self.state.n_leaves = 0
        if not inputs:
            return
        self.state.leaf_at = <Py_ssize_t*>malloc(len(inputs) * sizeof(Py_ssize_t))
        if self.state.leaf_at == NULL:
            raise MemoryError()
        for k in range(len(inputs)):
            self.state.leaf_at[k] = self.replay.offset(inputs[k])
        self.state.leaf_from = self.arguments.data
        self.state.leaf_bytes = self.arguments.nbytes
        self.state.n_leaves = len(inputs)

    def __dealloc__(self):
        free(self.state.captured)
        free(self.state.cache_spans)
        free(self.state.leaf_at)

    cdef bint _by_rows(self, tape):
        """Whether a Jacobian is computed by rows (reverse mode, lanes of basis
        cotangents): when f has few enough outputs that fewer, costlier reverse lanes
        beat a forward lane per input (BY_ROWS)."""
        cdef Py_ssize_t n_y = int(np.prod(self.out_shape)), n_x = self.state.base.n_x
        python = any(instr.kind == "python" for instr in tape.instrs)
        ratio = BY_ROWS_PYTHON if python else BY_ROWS
        self.state.reverse = self.state.family == JACOBIAN and ratio * n_y <= n_x
        if self.state.reverse:
            self.state.directions = n_y
        return self.state.reverse

    cdef _reverse_lanes(self):
        """A reverse sweep's lanes: the chunk given, else REVERSE_LANE_NUMBERS' worth."""
        cdef Py_ssize_t n_y = int(np.prod(self.out_shape)), n_x = self.state.base.n_x
        lanes = (self.state.lanes if self.chunk_given
                 else REVERSE_LANE_NUMBERS // max(n_x, n_y, 1))
        self.state.lanes = max(1, min(lanes, self.state.directions))

    cdef _derive(self, tape, list values, list names):
        """The family's program, by its recipe (cyad/_tape/recipes.py), lowered; the places
        of its inputs and results."""
        cdef int family = self.state.family
        self.state.y_at = -1
        self.state.t2_at = -1
        self.state.seeds_held = False
        rows = family == JACOBIAN and self._by_rows(tape)
        recipe = _tape_recipes.RECIPES["rows" if rows else _FAMILY_NAMES[family]]
        size = int(np.prod(self.out_shape))
        if recipe.reverse_lanes:   # seeds of f's value's shape, lanes of a reverse sweep
            self.state.seed_size = size
            self._reverse_lanes()
        derived = recipe.derive(tape, values, names, self.state.lanes)
        # every call runs the whole program at once (a gradient; one chunk of seeds, none
        # cached, and no instruction reading the seeds alone that holding them would skip,
        # but slices, which cost nothing): the replay's blocked runs may cross the split
        seeds_alone = range(derived.split, derived.seeded_split)
        self.state.runs_whole = family == GRADIENT or (
            family not in (PULLBACK, JACOBIAN, HESSIAN) and not recipe.reverse_lanes
            and 0 < self.state.directions <= self.state.lanes
            and (not seeds_alone or set(seeds_alone) <= slice_aliases(
                derived.tape, derived.tape.instrs, derived.cached)[1]))
        self.replay = Replay(derived.tape, keep=derived.cached,
                             starts=() if self.state.runs_whole else
                             (derived.split, derived.seeded_split))
        d = derived.tape
        self.state.split = derived.split
        self.state.x_at = self.replay.offset(d.inputs[0])
        if self.two_argument:
            self.state.y_at = self.replay.offset(d.inputs[1])
        self._place_leaves(d.inputs[2 if self.two_argument else 1:len(values)])
        seeds = [self.replay.offset(v) for v in d.inputs[len(values):]]
        if recipe.seeds > 0:   # (forward over forward: the inner tangent, then the outer)
            self.state.t_at = seeds[0]
        if recipe.seeds > 1:
            self.state.t2_at = seeds[1]
        self.state.value_at = self.replay.offset(d.outputs[0])
        places = dict(zip(recipe.outputs, d.outputs[1:]))
        self.state.result_at = self.replay.offset(places["result"])
        if "first" in places:
            self.state.first_at = self.replay.offset(places["first"])
        sizes = {"x": self.state.base.n_x, "f": size}
        self.state.result_size = sizes[recipe.result_size]
        self.state.first_size = sizes[recipe.first_size]
        self.state.program = &self.replay.state
        self.state.basis_start = -1
        self._cache_seeded(derived, values)

    cdef _cache_seeded(self, derived, list values):
        """For basis seeds (jacobian, hessian): the results of the instructions that read the
        seeds alone, per chunk, computed now, so that a call copies them instead. They may
        read what the instructions of constants alone compute (a transposed constant matrix
        of the reverse sweep): the primal part runs first, at the recorded inputs `values`."""
        cdef Py_ssize_t start, count, chunk = 0, lanes = self.state.lanes
        cdef Py_ssize_t directions = self.state.directions
        free(self.state.cache_spans)
        self.state.cache_spans = NULL
        self.state.cache = NULL
        self.cache = None
        self.state.seeded_split = derived.seeded_split
        chunks = (directions + lanes - 1) // lanes
        size = sum(v.size for v in derived.cached)
        if (self.state.family not in (JACOBIAN, HESSIAN) or size == 0
                or chunks * size > CACHE_LIMIT):
            return
        self.cache = np.empty((chunks, size), self.dtype)
        self.state.cache_spans = <Py_ssize_t*>malloc(2 * len(derived.cached) * sizeof(Py_ssize_t))
        if self.state.cache_spans == NULL:
            raise MemoryError()
        for j, v in enumerate(derived.cached):
            self.state.cache_spans[2 * j] = self.replay.offset(v)
            self.state.cache_spans[2 * j + 1] = v.size
        self.state.n_cache_spans = len(derived.cached)
        self.state.cache_size = size
        for i, value in enumerate(values):
            self.replay.set_input(i, value)
        if self.replay.run(0, self.state.split) != 0:   # a guard failed: no cache
            self.cache = None
            self.state.cache = NULL
            return
        for start in range(0, directions, lanes):
            count = min(lanes, directions - start)
            seed(&self.state, NULL, True, start, count)
            self.replay.run(self.state.split, self.state.seeded_split)
            self.cache[chunk] = np.concatenate([self.replay.value(v).reshape(-1)
                                                for v in derived.cached])
            chunk += 1
        self.state.cache = cnp.PyArray_DATA(self.cache)

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
        return (self.state.directions + self.state.lanes - 1) // self.state.lanes

    @property
    def captured_bytes(self):
        """The bytes of the arrays compared with their copies before each call."""
        return sum(a.nbytes for a, _ in self.captured or ())

    @property
    def records(self):
        """How many times f was recorded (the first time, and after each failed guard)."""
        return self.recorded

    @property
    def value_checks(self):
        """How many calls from Python had NumPy compute f's values again, for its
        floating-point warnings: those whose replay raised a floating-point flag."""
        return self.checks

    @property
    def tape(self):
        """The derivative tape the prep replays (None before the first call)."""
        return None if self.replay is None else self.replay.tape

    @property
    def primal(self):
        """f's tape as recorded (None before the first record)."""
        return self.primal

    @property
    def forward_calls(self):
        """How many calls the dual engine answered because the reverse sweep's results
        held a number that is not finite (an infinite partial: the module's docstring)."""
        return self.state.forward_calls

    @property
    def delegated(self):
        """Whether the dual engine answers for this prep (f could not be traced, its
        guards kept failing, or its Python state is too large to watch): the tape no
        longer follows f. `handed_over` says why."""
        return self.delegate is not None


cdef bint _same_callable(object f, object bound):
    # the same object, or the same method of the same object (`model.loss` makes a new
    # bound method object at each access)
    return f is bound or (type(f) is types.MethodType and type(bound) is types.MethodType
                          and f.__func__ is bound.__func__ and f.__self__ is bound.__self__)


cdef list _distinct(list arrays):
    # each array once
    return list({id(a): a for a in arrays}.values())


cdef object _callable(object f):
    # the Python f: the callable itself, a wrapper's, or the one a recorded function traced
    cdef object source = _recorded(f)
    if source is not None:
        return source.of_x
    return (<FunctionWrapper>f).callable if isinstance(f, FunctionWrapper) else f


cdef object _recorded(object f):
    # the TapeFunction of a function cyad.record recorded, else None
    return (<FunctionWrapper>f).tape if isinstance(f, FunctionWrapper) else None
