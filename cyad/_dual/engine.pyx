"""The dual engine: forward mode on dual numbers, a chunk of directions per evaluation.

`DualEngine` is the engine behind a prep (cyad/_core.pyx) named "dual". It owns the
dual buffers and a `dual_prep` struct, whose first member is the prep's handle: a
whole operator call runs on raw pointers without the GIL (`run_pushforward`,
`run_jacobian`, `run_pullback`, and at second order `run_second_derivative`,
`run_hvp`, `run_hessian`), one per family group, chosen at prepare time from the
table RUNS.
Its nogil entry points (ENTRY_POINTS, the slots of the handle's public table) are one
function per entry point and dtype with the claim, the inputs' protection and the
family's run inlined, so that a call from Cython reaches the engine in one indirect
call.
For every chunk of directions a call seeds the input partials (tangents for a
pushforward, basis vectors for a Jacobian), calls the function once through its
`cyad_function` pointer, and copies the output partials to the caller's buffers.
Where no copy is needed it passes the caller's buffers straight to the function (x
always; one tangent, its output and a two-argument y when a single evaluation does
the whole call). The buffers it is given overlap nothing they must not: its callers
(Prep.call and the entry points) make sure of that first (protect_inputs,
cyad/_overlap.pxd).

derivative is the pushforward of a scalar with tangent 1; gradient is the Jacobian
of a scalar-valued function. A pullback (cotangent @ J) is forward mode too: a chunk
of basis directions per evaluation, as for the Jacobian, each chunk of columns
contracted with every cotangent (`run_pullback`); it costs what the Jacobian does,
where engine="tape" runs one reverse sweep per chunk of cotangents. A Python callable runs on
dual arrays through its `PythonFunction` binding (cyad/_wrapper.pyx), a C function
through its FunctionWrapper's pointers.

Second order is forward over forward on nested duals (the second-order layout of
cyad/_dual/layout.pxd): every evaluation seeds a chunk of outer directions (the hvp's
tangents, basis directions of the Hessian, the second derivative's tangent 1) and a
chunk of inner basis directions, and reads the second derivatives across them from
the cross lanes. A Hessian is symmetric, so for each chunk of outer directions
starting at row r only inner directions from r on are evaluated: about half the n^2
second-order terms, mirrored.
"""
import time
import warnings

cimport numpy as cnp
from libc.math cimport sqrt
from libc.string cimport memcpy, memset

from cyad._fused cimport real
from cyad._dual.layout cimport (lane_count, second_order_width, outer_lane, inner_lane,
                                cross_lane, clear_lanes, put_lane, get_lane, put_basis,
                                get_columns)
from cyad._dual.array cimport new_dual, nested_tag, enter, leave
from cyad._c_api cimport cyad_prep, cyad_entry_points
from cyad._core cimport (Prep, run_call, release, part_chunks, cancelled, CANCELLED,
                         PUSHFORWARD, DERIVATIVE, GRADIENT, JACOBIAN,
                         SECOND_DERIVATIVE, HVP, HESSIAN, PULLBACK)
from cyad._overlap cimport enter_nogil
from cyad._wrapper cimport python_f64, python_f32, python2_f64, python2_f32, is_python_function
from cyad._reporting import warnings as _warnings
from cyad._core import _FAMILY_NAMES
from cyad._stacked import stacked
from cyad._wrapper import constant_result

cnp.import_array()

# The default chunk. A Python callable pays a large fixed cost per call (interpreter
# dispatch for every NumPy operation it makes), so it is called as few times as
# possible, up to partial buffers of DEFAULT_PARTIALS_BUDGET numbers per intermediate
# array (512 KiB in float64: the per-operation work stays in cache). A C function
# costs little per call but recomputes its values for every block of lanes, and wide
# rows of partials leave the cache: DEFAULT_C_CHUNK directions per evaluation. A
# function recorded by cyad.record replays its whole tape (values, matrix products) per
# call: it is sized as a Python callable (measured: a dense 100 x 100 Jacobian, 2.6x
# faster in one call of 104 lanes than in 13 of 8).
DEFAULT_PARTIALS_BUDGET = 65536
DEFAULT_C_CHUNK = 8
# Second order does ~outer x inner work per number: half the budget keeps each
# operation's arrays in cache (measured on Rosenbrock, n = 100: chunk 16 beside 24).
DEFAULT_SECOND_ORDER_BUDGET = 32768


def default_chunk(Py_ssize_t directions, Py_ssize_t n_x, bint python=True):
    """Directions per evaluation when the caller gives no `chunk`.

    For a Python callable: all directions at once (vector mode) while the input
    partials stay within DEFAULT_PARTIALS_BUDGET numbers, beyond that the widest
    multiple of 8 that does. For a C function: DEFAULT_C_CHUNK.

    Parameters
    ----------
    directions : int
        The tangents of a pushforward, or the basis directions of x (its size).
    n_x : int
        The number of elements of x.
    python : bool, optional
        Whether f is a Python callable (True) or a C function.

    Returns
    -------
    int
        The chunk of a first-order operator.

    Examples
    --------
    >>> cyad.default_chunk(10, 10)
    10
    >>> cyad.default_chunk(1000, 1000)    # 64 x 1000 partials fit in 65 536
    64
    >>> cyad.default_chunk(1000, 1000, python=False)
    8
    """
    if not python:
        return max(1, min(directions, DEFAULT_C_CHUNK))
    if directions * max(n_x, 1) <= DEFAULT_PARTIALS_BUDGET:
        return max(directions, 1)
    return max(8, DEFAULT_PARTIALS_BUDGET // max(n_x, 1) // 8 * 8)


def default_second_order_chunk(Py_ssize_t outer_directions, Py_ssize_t n_x, bint hessian,
                               bint python=True):
    """Inner directions per second-order evaluation when the caller gives no `chunk`.

    For a Python callable: as many as keep the nested input partials, about
    n_x x (outer + inner + outer x inner) numbers, within DEFAULT_SECOND_ORDER_BUDGET
    (a Hessian's outer chunk equals its inner one, at most 16; an hvp carries all its
    tangents).
    For a C function: DEFAULT_C_CHUNK.
    """
    cdef double lanes = DEFAULT_SECOND_ORDER_BUDGET / <double>max(n_x, 1)
    cdef Py_ssize_t chunk, outer = lane_count(outer_directions)
    if not python:
        return max(1, min(n_x, DEFAULT_C_CHUNK))
    if hessian:
        # at most 16: the outer lanes as one compile-time block of the cross-term loops
        # (Rosenbrock, n = 30 and 100: chunk 16 took 0.13 / 3.5 ms, 24 0.25 / 4.7 ms,
        # 8 0.22 / 5.0 ms)
        chunk = min(<Py_ssize_t>(sqrt(lanes + 1.0) - 1.0), 16)
    else:
        chunk = <Py_ssize_t>((lanes - outer) / (outer + 1))
    chunk = max(1, min(chunk, n_x))
    return chunk // 8 * 8 if chunk > 16 else chunk


# -- seeding and extraction (the loops are cyad/_dual/layout.pxd's) ------------------------------

cdef void put_tangents(dual_prep* p, const real* const* tangents, Py_ssize_t count) noexcept nogil:
    # the input partials: lane k = tangents[k] for k < count, the other lanes 0
    cdef Py_ssize_t k
    if count < p.width:
        clear_lanes(<real*>p.dx, p.base.n_x, p.width)
    for k in range(count):
        put_lane(tangents[k], p.base.n_x, <real*>p.dx, p.width, k)


cdef void seed_first_chunk(dual_prep* p, const real* const* tangents) noexcept nogil:
    # the first chunk's seeds in the input partials: tangents, or basis directions if NULL
    cdef Py_ssize_t count = min(p.chunk, p.directions)
    if tangents == NULL:
        clear_lanes(<real*>p.dx, p.base.n_x, p.width)
        put_basis(<real*>p.dx, p.width, 0, 0, count)
    else:
        put_tangents(p, tangents, count)


# -- the directions a run computes: all, or a part's (workers=, cyad/_core.pxd) ----------

cdef inline void chunk_range(dual_prep* p, Py_ssize_t* start, Py_ssize_t* stop) noexcept nogil:
    # the first-order directions [start, stop) of this run, in whole chunks
    cdef Py_ssize_t first, last
    part_chunks(&p.base, (p.directions + p.chunk - 1) // p.chunk, False, &first, &last)
    start[0] = first * p.chunk
    stop[0] = min(last * p.chunk, p.directions)


cdef inline void outer_range(dual_prep* p, bint triangular, Py_ssize_t* start,
                             Py_ssize_t* stop) noexcept nogil:
    # second order: the outer directions [start, stop) of this run, in whole outer chunks
    cdef Py_ssize_t first, last
    part_chunks(&p.base, (p.outer_directions + p.outer_chunk - 1) // p.outer_chunk,
                triangular, &first, &last)
    start[0] = first * p.outer_chunk
    stop[0] = min(last * p.outer_chunk, p.outer_directions)


# -- the first-order engine -----------------------------------------------------------

cdef inline int call(dual_prep* p, const real* x, const real* dx, real* y, real* dy) noexcept nogil:
    if real is double:
        return p.function.f64(x, dx, y, dy, p.base.n_x, p.base.n_y, p.width, p.function.context)
    else:
        return p.function.f32(x, dx, y, dy, p.base.n_x, p.base.n_y, p.width, p.function.context)


cdef inline real* start_output(dual_prep* p, real* y, bint in_place) noexcept nogil:
    """The output values buffer of one evaluation, set to y's values (zero without y)."""
    if in_place:
        return y
    if y != NULL:
        memcpy(p.y, y, p.base.n_y * sizeof(real))
    else:
        memset(p.y, 0, p.base.n_y * sizeof(real))
    return <real*>p.y


cdef inline void finish_output(dual_prep* p, const real* yv, real* y, real* value) noexcept nogil:
    # the primal output to the caller: f's value into `value`, the final values into y
    if value != NULL and value != yv:
        memcpy(value, yv, p.base.n_y * sizeof(real))
    if y != NULL and y != yv:
        memcpy(y, yv, p.base.n_y * sizeof(real))


cdef inline int run_pushforward(dual_prep* p, const real* x, const real* const* tangents,
                                real* y, real* value, real** outs) noexcept nogil:
    """outs[k] = J(x) @ tangents[k] for every direction k, a chunk per evaluation."""
    cdef bint in_place = y != NULL and p.directions <= p.chunk
    cdef Py_ssize_t start, stop, count, k
    cdef real* yv = <real*>p.y
    cdef real* dy
    cdef const real* dx
    cdef int status
    chunk_range(p, &start, &stop)
    if start >= stop:
        return 0
    if in_place and p.width == 1:
        # the classic call: one tangent, one evaluation, on the caller's own buffers. The
        # loop below does the same work; this straight path takes a nogil pushforward at
        # n = 10 from ~21 ns to ~13 ns (python -m cyad, beside 6.5 ns by hand).
        memset(outs[0], 0, p.base.n_y * sizeof(real))
        status = call(p, x, tangents[0], y, outs[0])
        if status == 0 and value != NULL and value != y:
            memcpy(value, y, p.base.n_y * sizeof(real))
        return status
    while start < stop:
        if cancelled(&p.base):
            return CANCELLED
        count = min(p.chunk, p.directions - start)
        if p.pending and start == 0:
            dy = <real*>p.dy
        else:
            # one lane: the caller's tangent and output themselves
            if p.width == 1:
                dx = tangents[start]
            else:
                put_tangents(p, tangents + start, count)
                dx = <real*>p.dx
            dy = outs[start] if p.width == 1 else <real*>p.dy
            yv = start_output(p, y, in_place)
            memset(dy, 0, p.base.n_y * p.width * sizeof(real))
            status = call(p, x, dx, yv, dy)
            if status != 0:
                return status
        if dy != outs[start]:
            for k in range(count):
                get_lane(dy, p.base.n_y, p.width, k, outs[start + k])
        start += count
    finish_output(p, yv, y, value)
    return 0


cdef inline int evaluate_basis(dual_prep* p, const real* x, real* y, bint in_place,
                               Py_ssize_t start, Py_ssize_t count, real** yv) noexcept nogil:
    # f on basis directions [start, start + count) into p.dy (and yv[0]), unless the first
    # chunk was evaluated already (discover); a Jacobian's and a pullback's chunk
    if p.pending and start == 0:
        return 0
    clear_lanes(<real*>p.dx, p.base.n_x, p.width)
    put_basis(<real*>p.dx, p.width, 0, start, count)
    yv[0] = start_output(p, y, in_place)
    memset(p.dy, 0, p.base.n_y * p.width * sizeof(real))
    return call(p, x, <real*>p.dx, yv[0], <real*>p.dy)


cdef int run_jacobian(dual_prep* p, const real* x, real* y, real* value,
                      real* jacobian) noexcept nogil:
    """jacobian (n_y x n_x, row-major) of f at x, a chunk of columns per evaluation."""
    cdef bint in_place = y != NULL and p.directions <= p.chunk
    cdef Py_ssize_t start, stop, count
    cdef real* yv = <real*>p.y
    cdef int status
    chunk_range(p, &start, &stop)
    while start < stop:
        if cancelled(&p.base):
            return CANCELLED
        count = min(p.chunk, p.directions - start)
        status = evaluate_basis(p, x, y, in_place, start, count, &yv)
        if status != 0:
            return status
        get_columns(<real*>p.dy, p.base.n_y, p.width, 0, count, jacobian, p.base.n_x, start)
        start += count
    finish_output(p, yv, y, value)
    return 0


cdef inline void pull_columns(const real* partials, Py_ssize_t n, Py_ssize_t width,
                              Py_ssize_t count, const real* cotangent,
                              real* dst) noexcept nogil:
    # dst[k] = sum over i of cotangent[i] * partials[i, k], for k < count: a chunk of columns
    # of the Jacobian contracted with a cotangent. A zero cotangent element adds nothing,
    # not 0 * inf (a partial that is infinite where the direction does not move f: sqrt's
    # slope at 0), as the tape's `scale` does.
    cdef Py_ssize_t i, k
    cdef real c
    memset(dst, 0, count * sizeof(real))
    for i in range(n):
        c = cotangent[i]
        if c != 0:
            for k in range(count):
                dst[k] += c * partials[i * width + k]


cdef int run_pullback(dual_prep* p, const real* x, const real* const* cotangents, real* y,
                      real* value, real** outs) noexcept nogil:
    """outs[c] = cotangents[c] @ J(x) (n_x each) for every cotangent c: forward mode, a
    chunk of basis directions (columns of J) per evaluation, each chunk contracted with
    every cotangent as it comes, so that J is never held whole."""
    cdef bint in_place = y != NULL and p.directions <= p.chunk
    cdef Py_ssize_t start, stop, count, c
    cdef real* yv = <real*>p.y
    cdef int status
    chunk_range(p, &start, &stop)
    while start < stop:
        if cancelled(&p.base):
            return CANCELLED
        count = min(p.chunk, p.directions - start)
        status = evaluate_basis(p, x, y, in_place, start, count, &yv)
        if status != 0:
            return status
        for c in range(p.base.results):
            pull_columns(<real*>p.dy, p.base.n_y, p.width, count, cotangents[c],
                         outs[c] + start)
        start += count
    finish_output(p, yv, y, value)
    return 0


cdef paged_zeros(tuple shape, cnp.dtype dtype, Py_ssize_t slot):
    """A zeroed engine buffer starting `slot` KiB into a page of its own.

    Measured: where the interpreter's heap put the dual buffers, the same loops ran at
    two speeds from one process to the next (a Jacobian at n = 100: 5.7 or 7.1-10.6 us);
    buffers on their own pages run at the faster one every time. Staggering the four
    buffers by a KiB keeps a copy from one to another off 4 KiB-aliased addresses.
    """
    cdef Py_ssize_t n, start, count = 1, page = 4096, offset = 1024 * slot
    cdef cnp.npy_intp size
    for n in shape:
        count *= n
    count *= dtype.itemsize
    size = count + page + offset
    block = cnp.PyArray_ZEROS(1, &size, cnp.NPY_UINT8, 0)
    start = page - <size_t>cnp.PyArray_DATA(block) % page + offset
    return block[start:start + count].view(dtype).reshape(shape)


# -- the second-order engine ------------------------------------------------------------

cdef inline int call_second(dual_prep* p, const real* x, const real* dx, real* y,
                            real* dy) noexcept nogil:
    if real is double:
        return p.function.second_f64(x, dx, y, dy, p.base.n_x, p.base.n_y, p.outer, p.inner,
                                     p.function.context)
    else:
        return p.function.second_f32(x, dx, y, dy, p.base.n_x, p.base.n_y, p.outer, p.inner,
                                     p.function.context)


cdef void seed_second(dual_prep* p, const real* const* tangents, Py_ssize_t outer_start,
                      Py_ssize_t outer_count, Py_ssize_t inner_start,
                      Py_ssize_t inner_count) noexcept nogil:
    # outer lane k: tangents[outer_start + k], or basis direction outer_start + k if NULL;
    # inner lane j: basis direction inner_start + j; cross lanes 0
    cdef real* dx = <real*>p.dx
    cdef Py_ssize_t k
    clear_lanes(dx, p.base.n_x, p.width)
    if tangents == NULL:
        put_basis(dx, p.width, outer_lane(0), outer_start, outer_count)
    else:
        for k in range(outer_count):
            put_lane(tangents[outer_start + k], p.base.n_x, dx, p.width, outer_lane(k))
    put_basis(dx, p.width, inner_lane(p.outer, 0), inner_start, inner_count)


cdef inline int evaluate_second(dual_prep* p, const real* x, const real* const* tangents,
                                Py_ssize_t outer_start, Py_ssize_t outer_count,
                                Py_ssize_t inner_start, Py_ssize_t inner_count,
                                real* y) noexcept nogil:
    # one evaluation of f on nested duals from y's values (zero without y): the values into
    # p.y, the partials into p.dy
    seed_second(p, tangents, outer_start, outer_count, inner_start, inner_count)
    start_output(p, y, False)
    memset(p.dy, 0, p.base.n_y * p.width * sizeof(real))
    return call_second(p, x, <real*>p.dx, <real*>p.y, <real*>p.dy)


cdef int run_second_derivative(dual_prep* p, const real* x, real* y, real* value, real* first,
                               real* second) noexcept nogil:
    """first = f'(x), second = f''(x) (n_y each) at a scalar x, in one evaluation; first
    and value may be NULL."""
    cdef Py_ssize_t i, w = p.width
    cdef real* dy = <real*>p.dy
    cdef int status = evaluate_second(p, x, <const real* const*>NULL, 0, 1, 0, 1, y)
    if status != 0:
        return status
    for i in range(p.base.n_y):
        if first != NULL:
            first[i] = dy[i * w + inner_lane(p.outer, 0)]
        second[i] = dy[i * w + cross_lane(p.outer, p.inner, 0, 0)]
    finish_output(p, <real*>p.y, y, value)
    return 0


cdef int run_hvp(dual_prep* p, const real* x, const real* const* tangents, real* y,
                 real* first, real** products) noexcept nogil:
    """first = the gradient, products[k] = H @ tangents[k] (n_x each); first may be NULL."""
    cdef Py_ssize_t outer_start, outer_stop, outer_count, inner_start, inner_count, j, k
    cdef real* dy = <real*>p.dy
    cdef int status
    outer_range(p, False, &outer_start, &outer_stop)
    while outer_start < outer_stop:
        if cancelled(&p.base):
            return CANCELLED
        outer_count = min(p.outer_chunk, p.outer_directions - outer_start)
        inner_start = 0
        while inner_start < p.directions:
            inner_count = min(p.chunk, p.directions - inner_start)
            status = evaluate_second(p, x, tangents, outer_start, outer_count, inner_start,
                                     inner_count, y)
            if status != 0:
                return status
            if first != NULL and outer_start == 0:
                for j in range(inner_count):
                    first[inner_start + j] = dy[inner_lane(p.outer, j)]
            for k in range(outer_count):
                for j in range(inner_count):
                    products[outer_start + k][inner_start + j] = dy[
                        cross_lane(p.outer, p.inner, j, k)]
            inner_start += inner_count
        outer_start += outer_count
    finish_output(p, <real*>p.y, y, <real*>NULL)
    return 0


cdef int run_hessian(dual_prep* p, const real* x, real* y, real* value, real* first,
                     real* hessian) noexcept nogil:
    """first = the gradient, hessian = H (n_x x n_x, row-major), for each chunk of outer
    basis directions from row r the inner ones from r on (the rest mirrored); first and
    value may be NULL."""
    cdef Py_ssize_t outer_start, outer_stop, outer_count, inner_start, inner_count, j, k, row
    cdef Py_ssize_t col
    cdef real* dy = <real*>p.dy
    cdef real c
    cdef const real* const* no_tangents = NULL
    cdef int status
    outer_range(p, True, &outer_start, &outer_stop)
    while outer_start < outer_stop:
        if cancelled(&p.base):
            return CANCELLED
        outer_count = min(p.outer_chunk, p.outer_directions - outer_start)
        inner_start = outer_start
        while inner_start < p.directions:
            inner_count = min(p.chunk, p.directions - inner_start)
            status = evaluate_second(p, x, no_tangents, outer_start, outer_count, inner_start,
                                     inner_count, y)
            if status != 0:
                return status
            if first != NULL and outer_start == 0:
                for j in range(inner_count):
                    first[inner_start + j] = dy[inner_lane(p.outer, j)]
            for k in range(outer_count):
                for j in range(inner_count):
                    c = dy[cross_lane(p.outer, p.inner, j, k)]
                    row = outer_start + k
                    col = inner_start + j
                    if col >= row:
                        hessian[row * p.base.n_x + col] = c
                        hessian[col * p.base.n_x + row] = c
            inner_start += inner_count
        outer_start += outer_count
    finish_output(p, <real*>p.y, y, value)
    return 0


# -- the engine's calls, by family and dtype (run_call's signature) -----------------------

cdef int pushforward_f64(prep_header* h, const void* x, const void* const* tangents, void* y,
                         void* value, void* first, void** results) noexcept nogil:
    return run_pushforward(<dual_prep*>h, <const double*>x, <const double* const*>tangents,
                           <double*>y, <double*>value, <double**>results)


cdef int pushforward_f32(prep_header* h, const void* x, const void* const* tangents, void* y,
                         void* value, void* first, void** results) noexcept nogil:
    return run_pushforward(<dual_prep*>h, <const float*>x, <const float* const*>tangents,
                           <float*>y, <float*>value, <float**>results)


cdef int jacobian_f64(prep_header* h, const void* x, const void* const* tangents, void* y,
                      void* value, void* first, void** results) noexcept nogil:
    return run_jacobian(<dual_prep*>h, <const double*>x, <double*>y, <double*>value,
                        <double*>results[0])


cdef int jacobian_f32(prep_header* h, const void* x, const void* const* tangents, void* y,
                      void* value, void* first, void** results) noexcept nogil:
    return run_jacobian(<dual_prep*>h, <const float*>x, <float*>y, <float*>value,
                        <float*>results[0])


cdef int pullback_f64(prep_header* h, const void* x, const void* const* tangents, void* y,
                      void* value, void* first, void** results) noexcept nogil:
    return run_pullback(<dual_prep*>h, <const double*>x, <const double* const*>tangents,
                        <double*>y, <double*>value, <double**>results)


cdef int pullback_f32(prep_header* h, const void* x, const void* const* tangents, void* y,
                      void* value, void* first, void** results) noexcept nogil:
    return run_pullback(<dual_prep*>h, <const float*>x, <const float* const*>tangents,
                        <float*>y, <float*>value, <float**>results)


cdef int second_derivative_f64(prep_header* h, const void* x, const void* const* tangents, void* y,
                               void* value, void* first, void** results) noexcept nogil:
    return run_second_derivative(<dual_prep*>h, <const double*>x, <double*>y, <double*>value,
                                 <double*>first, <double*>results[0])


cdef int second_derivative_f32(prep_header* h, const void* x, const void* const* tangents, void* y,
                               void* value, void* first, void** results) noexcept nogil:
    return run_second_derivative(<dual_prep*>h, <const float*>x, <float*>y, <float*>value,
                                 <float*>first, <float*>results[0])


cdef int hvp_f64(prep_header* h, const void* x, const void* const* tangents, void* y,
                 void* value, void* first, void** results) noexcept nogil:
    return run_hvp(<dual_prep*>h, <const double*>x, <const double* const*>tangents, <double*>y,
                   <double*>first, <double**>results)


cdef int hvp_f32(prep_header* h, const void* x, const void* const* tangents, void* y,
                 void* value, void* first, void** results) noexcept nogil:
    return run_hvp(<dual_prep*>h, <const float*>x, <const float* const*>tangents, <float*>y,
                   <float*>first, <float**>results)


cdef int hessian_f64(prep_header* h, const void* x, const void* const* tangents, void* y,
                     void* value, void* first, void** results) noexcept nogil:
    return run_hessian(<dual_prep*>h, <const double*>x, <double*>y, <double*>value, <double*>first,
                       <double*>results[0])


cdef int hessian_f32(prep_header* h, const void* x, const void* const* tangents, void* y,
                     void* value, void* first, void** results) noexcept nogil:
    return run_hessian(<dual_prep*>h, <const float*>x, <float*>y, <float*>value, <float*>first,
                       <float*>results[0])


# The engine's call of each family in float64 and in float32
cdef run_call RUNS_F64[8]
cdef run_call RUNS_F32[8]
RUNS_F64[<int>PUSHFORWARD], RUNS_F32[<int>PUSHFORWARD] = pushforward_f64, pushforward_f32
RUNS_F64[<int>DERIVATIVE], RUNS_F32[<int>DERIVATIVE] = pushforward_f64, pushforward_f32
RUNS_F64[<int>GRADIENT], RUNS_F32[<int>GRADIENT] = jacobian_f64, jacobian_f32
RUNS_F64[<int>JACOBIAN], RUNS_F32[<int>JACOBIAN] = jacobian_f64, jacobian_f32
RUNS_F64[<int>SECOND_DERIVATIVE] = second_derivative_f64
RUNS_F32[<int>SECOND_DERIVATIVE] = second_derivative_f32
RUNS_F64[<int>HVP], RUNS_F32[<int>HVP] = hvp_f64, hvp_f32
RUNS_F64[<int>HESSIAN], RUNS_F32[<int>HESSIAN] = hessian_f64, hessian_f32
RUNS_F64[<int>PULLBACK], RUNS_F32[<int>PULLBACK] = pullback_f64, pullback_f32


# -- the engine's nogil entry points (the handle's table, cyad/_c_api.pxd) ----------------
#
# One function per entry point and dtype, each the whole call inlined: the claim, the
# inputs' protection (enter_nogil) and the family's run, so that a downstream call
# reaches the engine through the one indirect call of the public inline entry point.
# The prep installs each only where it answers it (one tangent; gradient: a scalar f).

cdef enum Run:
    RUN_PUSHFORWARD
    RUN_JACOBIAN
    RUN_HVP
    RUN_HESSIAN
    RUN_PULLBACK


cdef inline int run_nogil(dual_prep* p, Run run, const real* x, const real* tangent, real* y,
                          real* value, real* first, real* result) noexcept nogil:
    # `run` is a constant where it is inlined, so that only one family's call remains
    cdef const void* xv = x
    cdef const void* const* tangents = NULL
    cdef void* results = result
    cdef int status
    if run == RUN_PUSHFORWARD or run == RUN_HVP or run == RUN_PULLBACK:
        tangents = <const void* const*>&tangent
    status = enter_nogil(&p.base, &xv, &tangents, y, value, first, &results)
    if status != 0:
        return status
    if run == RUN_PUSHFORWARD:
        status = run_pushforward(p, <const real*>xv, <const real* const*>tangents, y, value,
                                 <real**>&results)
    elif run == RUN_JACOBIAN:
        status = run_jacobian(p, <const real*>xv, y, value, <real*>results)
    elif run == RUN_PULLBACK:
        status = run_pullback(p, <const real*>xv, <const real* const*>tangents, y, value,
                              <real**>&results)
    elif run == RUN_HVP:
        status = run_hvp(p, <const real*>xv, <const real* const*>tangents, y, first,
                         <real**>&results)
    else:
        status = run_hessian(p, <const real*>xv, y, value, first, <real*>results)
    release(&p.base.busy)
    return status


cdef int pushforward_nogil(cyad_prep* p, const real* x, const real* dx, real* y,
                           real* out) noexcept nogil:
    return run_nogil(<dual_prep*>p, RUN_PUSHFORWARD, x, dx, y, <real*>NULL, <real*>NULL, out)


cdef int value_and_pushforward_nogil(cyad_prep* p, const real* x, const real* dx, real* y,
                                     real* value, real* out) noexcept nogil:
    return run_nogil(<dual_prep*>p, RUN_PUSHFORWARD, x, dx, y, value, <real*>NULL, out)


cdef int jacobian_nogil(cyad_prep* p, const real* x, real* y, real* value,
                        real* jacobian) noexcept nogil:
    # and gradient_nogil's
    return run_nogil(<dual_prep*>p, RUN_JACOBIAN, x, <const real*>NULL, y, value, <real*>NULL,
                     jacobian)


cdef int hvp_nogil(cyad_prep* p, const real* x, const real* v, real* y, real* gradient,
                   real* out) noexcept nogil:
    return run_nogil(<dual_prep*>p, RUN_HVP, x, v, y, <real*>NULL, gradient, out)


cdef int hessian_nogil(cyad_prep* p, const real* x, real* y, real* value, real* gradient,
                       real* hessian) noexcept nogil:
    return run_nogil(<dual_prep*>p, RUN_HESSIAN, x, <const real*>NULL, y, value, gradient,
                     hessian)


cdef int pullback_nogil(cyad_prep* p, const real* x, const real* dy, real* y,
                        real* out) noexcept nogil:
    return run_nogil(<dual_prep*>p, RUN_PULLBACK, x, dy, y, <real*>NULL, <real*>NULL, out)


cdef int value_and_pullback_nogil(cyad_prep* p, const real* x, const real* dy, real* y,
                                  real* value, real* out) noexcept nogil:
    return run_nogil(<dual_prep*>p, RUN_PULLBACK, x, dy, y, value, <real*>NULL, out)


cdef cyad_entry_points ENTRY_POINTS
ENTRY_POINTS.pushforward_f64 = pushforward_nogil[double]
ENTRY_POINTS.pushforward_f32 = pushforward_nogil[float]
ENTRY_POINTS.value_and_pushforward_f64 = value_and_pushforward_nogil[double]
ENTRY_POINTS.value_and_pushforward_f32 = value_and_pushforward_nogil[float]
ENTRY_POINTS.gradient_f64 = jacobian_nogil[double]
ENTRY_POINTS.gradient_f32 = jacobian_nogil[float]
ENTRY_POINTS.jacobian_f64 = jacobian_nogil[double]
ENTRY_POINTS.jacobian_f32 = jacobian_nogil[float]
ENTRY_POINTS.hvp_f64 = hvp_nogil[double]
ENTRY_POINTS.hvp_f32 = hvp_nogil[float]
ENTRY_POINTS.hessian_f64 = hessian_nogil[double]
ENTRY_POINTS.hessian_f32 = hessian_nogil[float]
ENTRY_POINTS.pullback_f64 = pullback_nogil[double]
ENTRY_POINTS.pullback_f32 = pullback_nogil[float]
ENTRY_POINTS.value_and_pullback_f64 = value_and_pullback_nogil[double]
ENTRY_POINTS.value_and_pullback_f32 = value_and_pullback_nogil[float]


cdef object _python_callable(object f):
    # the callable itself, out of its FunctionWrapper if it has one
    return (<FunctionWrapper>f).callable if isinstance(f, FunctionWrapper) else f


cdef FunctionWrapper _as_wrapper(object f):
    return <FunctionWrapper>f if isinstance(f, FunctionWrapper) else FunctionWrapper(f)


cdef class DualEngine(Engine):
    """The dual engine's state of one prep: the sizes, dual buffers and function binding."""

    def __cinit__(self):
        self.handle = &self.state.base
        self.entry_points = &ENTRY_POINTS

    cdef setup(self, Prep prep, Py_ssize_t directions, object chunk, object f):
        cdef bint python = is_python_function(f)
        self.dtype = prep.dtype
        self.second_order = prep.order == 2
        self.symmetric = prep.symmetric()
        if self.second_order:
            self._size_second_order(directions, chunk, python, not prep.takes_tangents())
        elif prep.family == PULLBACK:
            # forward mode: the cotangents are contracted with columns of J, which come
            # a chunk of basis directions of x at a time
            self._size_first_order(prep.handle.n_x, chunk,
                                   python or _as_wrapper(f).tape is not None)
        else:
            self._size_first_order(directions, chunk,
                                   python or _as_wrapper(f).tape is not None)
        if self.state.base.float32:
            self.state.base.run = RUNS_F32[<int>prep.family]
        else:
            self.state.base.run = RUNS_F64[<int>prep.family]
        self.input_dual = new_dual(paged_zeros(prep.x_shape, self.dtype, 0),
                                   paged_zeros(prep.x_shape + (self.state.width,), self.dtype, 1),
                                   self.state.width, self.tag)
        self.state.dx = cnp.PyArray_DATA(self.input_dual.partials)
        # the first binding: a Python callable gets its PythonFunction, a C function its struct
        if python:
            self.python = PythonFunction(_python_callable(f), prep.two_argument, self.input_dual)
            self.state.function.f64 = python_f64
            self.state.function.f32 = python_f32
            self.state.function.second_f64 = python2_f64
            self.state.function.second_f32 = python2_f32
            self.state.function.context = <void*>self.python
        else:
            self._use_wrapper(_as_wrapper(f))
        self.bound = f

    cdef _size_first_order(self, Py_ssize_t directions, object chunk, bint python):
        if chunk is None:
            chunk = default_chunk(directions, self.state.base.n_x, python)
        self.state.directions = directions
        self.state.chunk = max(1, min(int(chunk), directions))
        self.state.width = lane_count(self.state.chunk)
        self.tag = Tag(self.state.width)

    cdef _size_second_order(self, Py_ssize_t directions, object chunk, bint python,
                            bint outer_basis):
        # inner directions: the basis of x; outer: `directions` (tangents, or the basis too)
        cdef Py_ssize_t inner = self.state.base.n_x
        if chunk is None:
            chunk = default_second_order_chunk(directions, inner, outer_basis, python)
        self.state.directions = inner
        self.state.chunk = max(1, min(int(chunk), inner))
        self.state.outer_directions = directions
        # C functions take one outer direction; basis outer directions go a chunk at a time
        self.state.outer_chunk = (1 if not python else
                                  self.state.chunk if outer_basis else directions)
        self.state.outer_chunk = max(1, min(self.state.outer_chunk, directions))
        self.state.outer = lane_count(self.state.outer_chunk)
        # the cross-term loops need a compile-time outer width only; a C function is
        # promised an inner width of the first-order kind too
        self.state.inner = self.state.chunk if python else lane_count(self.state.chunk)
        self.state.width = second_order_width(self.state.outer, self.state.inner)
        self.tag = nested_tag(Tag(self.state.outer), Tag(self.state.inner))

    cdef _use_wrapper(self, FunctionWrapper w):
        cdef bint missing
        cdef bint float32 = self.state.base.float32
        if self.second_order:
            missing = (w.function.second_f32 == NULL if float32
                       else w.function.second_f64 == NULL)
            if missing:
                raise TypeError(f"cyad: {w!r} has no second-order {self.dtype} function (of the "
                                "signature with outer and inner widths)")
        elif (w.function.f32 if float32 else w.function.f64) == NULL:
            raise TypeError(f"cyad: {w!r} has no {self.dtype} function")
        self.wrapper = w
        self.state.function = w.function

    cdef bind(self, object f):
        if is_python_function(f) != (self.python is not None):
            made = "a Python callable" if self.python is not None else "a C function"
            raise ValueError(f"cyad: this prep was made for {made}; f is not one")
        if self.python is not None:
            self.python.f = _python_callable(f)
        else:
            self._use_wrapper(_as_wrapper(f))
        self.bound = f

    cdef object declared_out_shape(self):
        return None if self.wrapper is None else self.wrapper.out_shape

    cdef bint splits(self, Prep prep):
        # a Python f holds the GIL for every evaluation: its parts would take turns
        return (self.python is None and prep.family != DERIVATIVE
                and prep.family != SECOND_DERIVATIVE)

    cdef discover(self, Prep prep, object x):
        """Evaluate the first chunk in Python to learn f's output; the engine then skips it.

        The seeds are the prep's tangents (prep.tangents) or basis directions.
        """
        self.input_dual.values[...] = x
        if self.second_order:
            # the output's shape only: f on x with zero partials (the engine then runs as usual)
            self.input_dual.partials[...] = 0
            started = time.perf_counter()
            r = self._call_f()
            self._warn_if_long(prep, time.perf_counter() - started)
            prep.set_output(r.shape if isinstance(r, Dual) else constant_result(r).shape)
            return
        tangents = prep.tangents if prep.with_tangents else NULL
        if self.state.base.float32:
            seed_first_chunk[float](&self.state, <const float* const*>tangents)
        else:
            seed_first_chunk[double](&self.state, <const double* const*>tangents)
        started = time.perf_counter()
        r = self._call_f()
        self._warn_if_long(prep, time.perf_counter() - started)
        prep.set_output(r.shape if isinstance(r, Dual) else constant_result(r).shape)
        self.python.store(r)
        self.state.pending = True

    cdef _warn_if_long(self, Prep prep, double seconds):
        # the first evaluation of a prep's first call, timed: a call of many evaluations
        # expected to take long says so (once per prep), with the faster way
        if prep.evaluations > 1 and prep.evaluations * seconds >= _warnings.LONG_CALL_SECONDS:
            warnings.warn(_warnings.long_call(_FAMILY_NAMES[prep.family], prep.evaluations,
                                              seconds, self.python is not None),
                          _warnings.CyadWarning, stacklevel=1)

    cdef set_output(self, Prep prep, tuple shape):
        self.y_dual = new_dual(paged_zeros(shape, self.dtype, 2),
                               paged_zeros(shape + (self.state.width,), self.dtype, 3),
                               self.state.width, self.tag)
        self.state.y = cnp.PyArray_DATA(self.y_dual.values)
        self.state.dy = cnp.PyArray_DATA(self.y_dual.partials)
        if self.python is not None:
            self.python.y_dual = self.y_dual

    cdef object _call_f(self):
        # f on the input dual (a cyad operator f calls nests), its result stacked
        enter()
        try:
            return stacked(self.python.f(self.input_dual))
        finally:
            leave()

    cdef finish(self):
        self.state.pending = False

    cdef object python_error(self):
        cdef object error = None
        if self.python is not None:
            error, self.python.error = self.python.error, None
        elif self.wrapper is not None and self.wrapper.tape is not None:
            error = self.wrapper.tape.take_error()    # a recorded function's, this thread's
        return error

    @property
    def directions(self):
        return self.state.directions

    @property
    def chunk(self):
        return self.state.chunk

    @property
    def width(self):
        return self.state.width

    @property
    def is_python(self):
        return self.python is not None

    @property
    def evaluations(self):
        cdef Py_ssize_t start, inner_start, total = 0
        cdef Py_ssize_t chunk = self.state.chunk, outer_chunk = self.state.outer_chunk
        inner = (self.state.directions + chunk - 1) // chunk
        if not self.second_order:
            return inner
        for start in range(0, self.state.outer_directions, outer_chunk):
            inner_start = start if self.symmetric else 0
            total += (self.state.directions - inner_start + chunk - 1) // chunk
        return total
