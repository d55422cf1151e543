"""Prepared state and the one pushforward engine behind every operator.

A `Prep` is made once per call signature (operator family, shapes, dtype, one- or
two-argument form, chunk width). It owns the dual buffers and a `cyad_prep` struct:
everything the engine needs, usable without the GIL. The engine (`run_pushforward`,
`run_jacobian`) runs a whole operator call on raw pointers: for every chunk of
directions it seeds the input partials (tangents for a pushforward, basis vectors
for a Jacobian), calls the function once through its `cyad_function` pointer, and
copies the output partials to the caller's buffers. Where no copy is needed it
passes the caller's buffers straight to the function (x always; one tangent, its
output and a two-argument y when a single evaluation does the whole call).

The Python operators check their arguments against the prep with C-level
comparisons and call the engine; Cython users call it through the `*_nogil`
entry points. derivative is the pushforward of a scalar with tangent 1; gradient
is the Jacobian of a scalar-valued function. Either way a call first claims the
prep (one call at a time), and the engine first makes sure that no output
overwrites an input it still reads (outputs that overlap inputs, below).

Second order (`run_second`) is forward over forward on nested duals (the
second-order layout of cyad._wrapper): every evaluation seeds a chunk of outer
directions (the hvp's tangents, basis directions of the Hessian, the second
derivative's tangent 1) and a chunk of inner basis directions, and reads the
second derivatives across them from the cross lanes. A Hessian is symmetric, so
for each chunk of outer directions starting at row r only inner directions from r
on are evaluated: about half the n^2 second-order terms, mirrored.
"""
import numpy as np

cimport numpy as cnp
from cpython.float cimport PyFloat_Check
from cpython.long cimport PyLong_Check
from libc.math cimport sqrt
from libc.stdint cimport uintptr_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

from cyad._kernels cimport lane_count, second_order_width
from cyad._dual cimport Dual, Tag, new_dual, nested_tag, enter, leave
from cyad._dual import Dual as _DualType
from cyad._wrapper cimport (python_f64, python_f32, python2_f64, python2_f32,
                            is_python_function)
from cyad._wrapper import FunctionError, constant_result

cnp.import_array()

_FAMILY_NAMES = {PUSHFORWARD: "pushforward", DERIVATIVE: "derivative",
                 GRADIENT: "gradient", JACOBIAN: "jacobian",
                 SECOND_DERIVATIVE: "second_derivative", HVP: "hvp", HESSIAN: "hessian"}

# The default chunk. A Python callable pays a large fixed cost per call (interpreter
# dispatch for every NumPy operation it makes), so it is called as few times as
# possible, up to partial buffers of DEFAULT_PARTIALS_BUDGET numbers per intermediate
# array (512 KiB in float64: the per-operation work stays in cache). A C function
# costs little per call but recomputes its values for every block of lanes, and wide
# rows of partials leave the cache: DEFAULT_C_CHUNK directions per evaluation.
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
        # (Rosenbrock, n = 30 and 100: chunk 16 took 0.13 / 3.5 ms, 24 0.25 / 4.7 ms, 8 0.22 / 5.0 ms)
        chunk = min(<Py_ssize_t>(sqrt(lanes + 1.0) - 1.0), 16)
    else:
        chunk = <Py_ssize_t>((lanes - outer) / (outer + 1))
    chunk = max(1, min(chunk, n_x))
    return chunk // 8 * 8 if chunk > 16 else chunk


# -- seeding and extraction: raw pointer loops -------------------------------------

cdef void put_lane(const real* src, Py_ssize_t n, real* partials, Py_ssize_t width,
                   Py_ssize_t lane) noexcept nogil:
    # partials[i, lane] = src[i]
    cdef Py_ssize_t i
    for i in range(n):
        partials[i * width + lane] = src[i]


cdef void get_lane(const real* partials, Py_ssize_t n, Py_ssize_t width, Py_ssize_t lane,
                   real* dst) noexcept nogil:
    # dst[i] = partials[i, lane]
    cdef Py_ssize_t i
    for i in range(n):
        dst[i] = partials[i * width + lane]


cdef void put_basis(real* partials, Py_ssize_t n, Py_ssize_t width, Py_ssize_t start,
                    Py_ssize_t count) noexcept nogil:
    # partials = 0, then lane k of row start + k is 1
    cdef Py_ssize_t k
    memset(partials, 0, n * width * sizeof(real))
    for k in range(count):
        partials[(start + k) * width + k] = 1


cdef void put_tangents(cyad_prep* p, const real* const* tangents, Py_ssize_t count) noexcept nogil:
    # the input partials: lane k = tangents[k] for k < count, the other lanes 0
    cdef Py_ssize_t k
    if count < p.width:
        memset(p.dx, 0, p.n_x * p.width * sizeof(real))
    for k in range(count):
        put_lane(tangents[k], p.n_x, <real*>p.dx, p.width, k)


cdef void seed_first_chunk(cyad_prep* p, const real* const* tangents) noexcept nogil:
    # the first chunk's seeds in the input partials: tangents, or basis directions if NULL
    cdef Py_ssize_t count = min(p.chunk, p.directions)
    if tangents == NULL:
        put_basis(<real*>p.dx, p.n_x, p.width, 0, count)
    else:
        put_tangents(p, tangents, count)


cdef void get_columns(const real* partials, Py_ssize_t n, Py_ssize_t width, Py_ssize_t count,
                      real* dst, Py_ssize_t columns, Py_ssize_t start) noexcept nogil:
    # dst[i, start + k] = partials[i, k] for an n x columns row-major dst
    cdef Py_ssize_t i, k
    for i in range(n):
        for k in range(count):
            dst[i * columns + start + k] = partials[i * width + k]


# -- one call at a time -------------------------------------------------------------------

# A prep's buffers serve one call at a time. A call claims the prep by an atomic exchange
# of its busy flag and frees it by an atomic store, so that a second call - from another
# thread, or from inside the f that a call is evaluating - finds it claimed and is refused
# instead of overwriting the buffers the first one is using.
cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static CYTHON_INLINE int cyad_claim(int *busy) {
        return _InterlockedExchange((volatile long *)busy, 1) == 0;
    }
    static CYTHON_INLINE void cyad_release(int *busy) {
        _InterlockedExchange((volatile long *)busy, 0);
    }
    static CYTHON_INLINE int cyad_claimed(int *busy) { return *(volatile int *)busy != 0; }
    #else
    static CYTHON_INLINE int cyad_claim(int *busy) {
        return __atomic_exchange_n(busy, 1, __ATOMIC_ACQUIRE) == 0;
    }
    static CYTHON_INLINE void cyad_release(int *busy) {
        __atomic_store_n(busy, 0, __ATOMIC_RELEASE);
    }
    static CYTHON_INLINE int cyad_claimed(int *busy) {
        return __atomic_load_n(busy, __ATOMIC_RELAXED) != 0;
    }
    #endif
    """
    bint claim "cyad_claim" (int* busy) nogil        # 1 if it was free and is now the caller's
    void release "cyad_release" (int* busy) nogil
    bint claimed "cyad_claimed" (int* busy) nogil

_BUSY = ("cyad: this prep is in use by another call (from another thread, or from inside the "
         "function being differentiated); a prep serves one call at a time: make one prep per "
         "thread")


cdef int refuse_busy(object prep) except -1:
    if isinstance(prep, Prep) and claimed(&(<Prep>prep).state.busy):
        raise RuntimeError(_BUSY)
    return 0


# -- outputs that overlap inputs ----------------------------------------------------------
#
# Like a NumPy ufunc given an overlapping out=, a call reads its inputs as they were when it
# started. The engine reads x and the tangents in every evaluation (one per chunk) and
# writes outputs after each, so an input that shares memory with an output is copied once,
# into the prep's scratch, and the call runs on the copy. y needs no copy: it is an output
# itself, which no other output may share memory with, and the engine writes it after the
# last evaluation (or hands it to the only one). Outputs that share memory would leave a
# result that depends on the order of the writes: OVERLAPPING_OUTPUTS, but for f's value
# written to y itself (the two-argument value forms). So a C function is never handed an
# input that overlaps an output, nor two outputs that overlap.
#
# Every buffer is C-contiguous: the bytes [start, start + count * sizeof(real)). A call
# with one result has at most four outputs and two inputs (x and a tangent), compared pair
# by pair on the stack (`protect_inputs`: a handful of comparisons where nothing meets,
# the usual case). Otherwise, and for a batch, `protect_slowly` records the outputs in the
# prep (to name two that overlap); a batch's outputs (one per tangent) are sorted by
# address, so that neighbours tell whether they are disjoint, and an input outside the
# span of all of them is told by two comparisons, one inside placed among them by
# bisection.

cdef enum:
    # which output a span is, besides result k (k >= 0); in the order outputs are named
    Y_OUTPUT = -3
    VALUE_OUTPUT = -2
    FIRST_OUTPUT = -1

ctypedef struct span:      # an output's bytes
    uintptr_t start
    uintptr_t end
    Py_ssize_t output      # Y_OUTPUT, VALUE_OUTPUT, FIRST_OUTPUT or the result's index

_RESULT_NAMES = {PUSHFORWARD: "the tangent output", DERIVATIVE: "the derivative output",
                 GRADIENT: "the gradient output", JACOBIAN: "the Jacobian output",
                 SECOND_DERIVATIVE: "the second-derivative output", HVP: "the hvp output",
                 HESSIAN: "the Hessian output"}


cdef inline Py_ssize_t batch_size(const cyad_prep* p) noexcept nogil:
    # the results of one call: one per tangent of a pushforward or hvp, else one
    if p.family == PUSHFORWARD or p.family == DERIVATIVE:
        return p.directions
    if p.family == HVP:
        return p.outer_directions
    return 1


cdef inline Py_ssize_t result_size(const cyad_prep* p) noexcept nogil:
    # the elements of one result
    if p.family == GRADIENT or p.family == JACOBIAN:
        return p.n_y * p.n_x
    if p.family == HESSIAN:
        return p.n_x * p.n_x
    if p.family == HVP:
        return p.n_x
    return p.n_y


cdef inline void add_span(span* s, Py_ssize_t* n, const void* start, Py_ssize_t size,
                          Py_ssize_t output) noexcept nogil:
    # an output of `size` bytes, if given (an empty one meets nothing)
    if start != NULL and size > 0:
        s[n[0]].start = <uintptr_t>start
        s[n[0]].end = <uintptr_t>start + <uintptr_t>size
        s[n[0]].output = output
        n[0] += 1


cdef void sort_spans(span* s, Py_ssize_t n) noexcept nogil:
    # by start address: Shell's sort (gaps 1, 4, 13, ...)
    cdef Py_ssize_t gap = 1, i, j
    cdef span t
    while gap < n // 3:
        gap = 3 * gap + 1
    while gap > 0:
        for i in range(gap, n):
            t = s[i]
            j = i
            while j >= gap and s[j - gap].start > t.start:
                s[j] = s[j - gap]
                j -= gap
            s[j] = t
        gap //= 3


cdef inline span input_span(const void* start, Py_ssize_t size) noexcept nogil:
    cdef span a
    a.start = <uintptr_t>start
    a.end = a.start + <uintptr_t>size
    return a


cdef inline bint disjoint(const span* a, const span* b) noexcept nogil:
    return a.end <= b.start or b.end <= a.start


cdef inline bint meets(const span* s, Py_ssize_t n, bint by_address, uintptr_t low,
                       uintptr_t high, const void* input, Py_ssize_t size) noexcept nogil:
    """Whether the input's `size` bytes meet one of the n outputs s (disjoint, sorted by
    address if by_address), all within [low, high)."""
    cdef span a = input_span(input, size)
    cdef Py_ssize_t i, lo = 0, hi = n - 1, mid
    if a.end <= low or a.start >= high:
        return False
    if not by_address:
        for i in range(n):
            if not disjoint(&a, &s[i]):
                return True
        return False
    while lo < hi:
        # the first output that ends after the input starts
        mid = (lo + hi) // 2
        if s[mid].end > a.start:
            hi = mid
        else:
            lo = mid + 1
    return s[lo].start < a.end


cdef inline Py_ssize_t first_size(const cyad_prep* p) noexcept nogil:
    # the elements of a second-order call's first-order result (its derivative or gradient)
    return p.n_y if p.family == SECOND_DERIVATIVE else p.n_x


cdef inline int protect_inputs(cyad_prep* p, const real** x, const real* const** tangents,
                               real* y, real* value, real* first,
                               real** results) noexcept nogil:
    """Check the call's outputs, and point x and the tangents (NULL: none) at copies where
    they overlap an output. Returns 0, OVERLAPPING_OUTPUTS or NO_MEMORY."""
    cdef span outputs[4]
    cdef span x_span, tangent
    cdef Py_ssize_t n = 0, i, j, x_bytes = p.n_x * sizeof(real)
    if batch_size(p) > 1:
        return protect_slowly(p, x, tangents, y, value, first, results)
    add_span(outputs, &n, y, p.n_y * sizeof(real), Y_OUTPUT)
    if value != y:
        add_span(outputs, &n, value, p.n_y * sizeof(real), VALUE_OUTPUT)
    add_span(outputs, &n, first, first_size(p) * sizeof(real), FIRST_OUTPUT)
    add_span(outputs, &n, results[0], result_size(p) * sizeof(real), 0)
    x_span = input_span(x[0], x_bytes)
    tangent = input_span(tangents[0][0] if tangents[0] != NULL else x[0], x_bytes)
    for i in range(n):
        if not (disjoint(&outputs[i], &x_span) and disjoint(&outputs[i], &tangent)):
            return protect_slowly(p, x, tangents, y, value, first, results)
        for j in range(i):
            if not disjoint(&outputs[i], &outputs[j]):
                return protect_slowly(p, x, tangents, y, value, first, results)
    return 0


cdef int protect_slowly(cyad_prep* p, const real** x, const real* const** tangents, real* y,
                        real* value, real* first, real** results) noexcept nogil:
    """protect_inputs for a batch, or where something may overlap: the outputs recorded in
    the prep's spans."""
    cdef span* s = <span*>p.spans
    cdef Py_ssize_t n = 0, i, j, count = batch_size(p), copies
    cdef Py_ssize_t x_bytes = p.n_x * sizeof(real), pointers = count * sizeof(void*)
    cdef Py_ssize_t result_bytes = result_size(p) * sizeof(real)
    cdef bint by_address = count > 1
    cdef uintptr_t low, high
    cdef const real** copied
    cdef char* data
    add_span(s, &n, y, p.n_y * sizeof(real), Y_OUTPUT)
    if value != y:
        add_span(s, &n, value, p.n_y * sizeof(real), VALUE_OUTPUT)
    add_span(s, &n, first, first_size(p) * sizeof(real), FIRST_OUTPUT)
    for i in range(count):
        add_span(s, &n, results[i], result_bytes, i)
    if n == 0:
        return 0
    # the outputs against one another
    if by_address:
        sort_spans(s, n)
        for i in range(n - 1):
            if s[i].end > s[i + 1].start:
                p.overlapping[0], p.overlapping[1] = i, i + 1
                return OVERLAPPING_OUTPUTS
        low, high = s[0].start, s[n - 1].end
    else:
        low, high = s[0].start, s[0].end
        for i in range(1, n):
            for j in range(i):
                if not disjoint(&s[i], &s[j]):
                    p.overlapping[0], p.overlapping[1] = j, i
                    return OVERLAPPING_OUTPUTS
            low, high = min(low, s[i].start), max(high, s[i].end)
    # the inputs against them
    copies = meets(s, n, by_address, low, high, x[0], x_bytes)
    if tangents[0] != NULL:
        for i in range(count):
            copies += meets(s, n, by_address, low, high, tangents[0][i], x_bytes)
    if copies == 0:
        return 0
    # the scratch: the tangents' pointers, then the copies; kept for later calls
    if pointers + copies * x_bytes > p.scratch_bytes:
        free(p.scratch)
        p.scratch_bytes = 0
        p.scratch = malloc(pointers + copies * x_bytes)
        if p.scratch == NULL:
            return NO_MEMORY
        p.scratch_bytes = pointers + copies * x_bytes
    data = <char*>p.scratch + pointers
    if meets(s, n, by_address, low, high, x[0], x_bytes):
        memcpy(data, x[0], x_bytes)
        x[0] = <const real*>data
        data += x_bytes
    if tangents[0] != NULL:
        copied = <const real**>p.scratch
        for i in range(count):
            copied[i] = tangents[0][i]
            if meets(s, n, by_address, low, high, copied[i], x_bytes):
                memcpy(data, copied[i], x_bytes)
                copied[i] = <const real*>data
                data += x_bytes
        tangents[0] = copied
    return 0


cdef str _output_name(const cyad_prep* p, const span* s):
    # an output as the caller knows it
    if s.output == Y_OUTPUT:
        return "y"
    if s.output == VALUE_OUTPUT:
        return "the value output"
    if s.output == FIRST_OUTPUT:
        return "the derivative output" if p.family == SECOND_DERIVATIVE else "the gradient output"
    if batch_size(p) > 1:
        return f"{_RESULT_NAMES[p.family]} for tangent {s.output}"
    return _RESULT_NAMES[p.family]


# -- the engine -----------------------------------------------------------------------

cdef inline int call(cyad_prep* p, const real* x, const real* dx, real* y, real* dy) noexcept nogil:
    if real is double:
        return p.function.f64(x, dx, y, dy, p.n_x, p.n_y, p.width, p.function.context)
    else:
        return p.function.f32(x, dx, y, dy, p.n_x, p.n_y, p.width, p.function.context)


cdef inline real* start_output(cyad_prep* p, real* y, bint in_place) noexcept nogil:
    """The output values buffer of one evaluation, set to y's values (zero without y)."""
    if in_place:
        return y
    if y != NULL:
        memcpy(p.y, y, p.n_y * sizeof(real))
    else:
        memset(p.y, 0, p.n_y * sizeof(real))
    return <real*>p.y


cdef inline void finish_output(cyad_prep* p, const real* yv, real* y, real* value) noexcept nogil:
    # the primal output to the caller: f's value into `value`, the final values into y
    if value != NULL and value != yv:
        memcpy(value, yv, p.n_y * sizeof(real))
    if y != NULL and y != yv:
        memcpy(y, yv, p.n_y * sizeof(real))


cdef inline int run_pushforward(cyad_prep* p, const real* x, const real* const* tangents, real* y,
                         real* value, real** outs) noexcept nogil:
    """outs[k] = J(x) @ tangents[k] for every direction k, a chunk per evaluation."""
    cdef bint in_place = y != NULL and p.directions <= p.chunk
    cdef Py_ssize_t start = 0, count, k
    cdef real* yv = <real*>p.y
    cdef real* dy
    cdef const real* dx
    cdef int status = protect_inputs(p, &x, &tangents, y, value, <real*>NULL, outs)
    if status != 0:
        return status
    if in_place and p.width == 1:
        # the classic call: one tangent, one evaluation, on the caller's own buffers. The
        # loop below does the same work; this straight path takes a nogil pushforward at
        # n = 10 from ~21 ns to ~13 ns (python -m cyad, beside 6.5 ns by hand).
        memset(outs[0], 0, p.n_y * sizeof(real))
        status = call(p, x, tangents[0], y, outs[0])
        if status == 0 and value != NULL and value != y:
            memcpy(value, y, p.n_y * sizeof(real))
        return status
    while start < p.directions:
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
            memset(dy, 0, p.n_y * p.width * sizeof(real))
            status = call(p, x, dx, yv, dy)
            if status != 0:
                return status
        if dy != outs[start]:
            for k in range(count):
                get_lane(dy, p.n_y, p.width, k, outs[start + k])
        start += count
    finish_output(p, yv, y, value)
    return 0


cdef int run_jacobian(cyad_prep* p, const real* x, real* y, real* value,
                      real* jacobian) noexcept nogil:
    """jacobian (n_y x n_x, row-major) of f at x, a chunk of columns per evaluation."""
    cdef bint in_place = y != NULL and p.directions <= p.chunk
    cdef Py_ssize_t start = 0, count
    cdef real* yv = <real*>p.y
    cdef const real* const* no_tangents = NULL
    cdef int status = protect_inputs(p, &x, &no_tangents, y, value, <real*>NULL, &jacobian)
    if status != 0:
        return status
    while start < p.directions:
        count = min(p.chunk, p.directions - start)
        if not (p.pending and start == 0):
            put_basis(<real*>p.dx, p.n_x, p.width, start, count)
            yv = start_output(p, y, in_place)
            memset(p.dy, 0, p.n_y * p.width * sizeof(real))
            status = call(p, x, <real*>p.dx, yv, <real*>p.dy)
            if status != 0:
                return status
        get_columns(<real*>p.dy, p.n_y, p.width, count, jacobian, p.n_x, start)
        start += count
    finish_output(p, yv, y, value)
    return 0


# -- the second-order engine ------------------------------------------------------------

cdef inline int call_second(cyad_prep* p, const real* x, const real* dx, real* y,
                            real* dy) noexcept nogil:
    if real is double:
        return p.function.second_f64(x, dx, y, dy, p.n_x, p.n_y, p.outer, p.inner,
                                     p.function.context)
    else:
        return p.function.second_f32(x, dx, y, dy, p.n_x, p.n_y, p.outer, p.inner,
                                     p.function.context)


cdef void seed_second(cyad_prep* p, const real* const* tangents, Py_ssize_t outer_start,
                      Py_ssize_t outer_count, Py_ssize_t inner_start,
                      Py_ssize_t inner_count) noexcept nogil:
    # outer lane k: tangents[outer_start + k], or basis direction outer_start + k if NULL;
    # inner lane j: basis direction inner_start + j; cross lanes 0
    cdef real* dx = <real*>p.dx
    cdef Py_ssize_t j, k
    memset(dx, 0, p.n_x * p.width * sizeof(real))
    for k in range(outer_count):
        if tangents == NULL:
            dx[(outer_start + k) * p.width + k] = 1
        else:
            put_lane(tangents[outer_start + k], p.n_x, dx, p.width, k)
    for j in range(inner_count):
        dx[(inner_start + j) * p.width + p.outer + j] = 1


cdef int run_second(cyad_prep* p, const real* x, const real* const* tangents, real* y,
                    real* value, real* first, real** second) noexcept nogil:
    """Second derivatives of f at x, a chunk of outer and inner directions per evaluation.

    second_derivative: first = f'(x), second[0] = f''(x) (n_y each, x a scalar).
    hvp: first = the gradient, second[k] = H @ tangents[k] (n_x each).
    hessian: first = the gradient, second[0] = H (n_x x n_x, row-major).
    first and value may be NULL.
    """
    cdef Py_ssize_t outer_start = 0, outer_count, inner_start, inner_count, i, j, k, row, col
    cdef Py_ssize_t w = p.width, cross = p.outer + p.inner
    cdef real* yv = <real*>p.y
    cdef real* dy = <real*>p.dy
    cdef real c
    cdef int status = protect_inputs(p, &x, &tangents, y, value, first, second)
    if status != 0:
        return status
    while outer_start < p.outer_directions:
        outer_count = min(p.outer_chunk, p.outer_directions - outer_start)
        # a Hessian's rows above outer_start are its columns, mirrored from earlier chunks
        inner_start = outer_start if p.family == HESSIAN else 0
        while inner_start < p.directions:
            inner_count = min(p.chunk, p.directions - inner_start)
            seed_second(p, tangents, outer_start, outer_count, inner_start, inner_count)
            yv = start_output(p, y, False)
            memset(dy, 0, p.n_y * w * sizeof(real))
            status = call_second(p, x, <real*>p.dx, yv, dy)
            if status != 0:
                return status
            if p.family == SECOND_DERIVATIVE:
                for i in range(p.n_y):
                    if first != NULL:
                        first[i] = dy[i * w + p.outer]
                    second[0][i] = dy[i * w + cross]
            else:
                if first != NULL and outer_start == 0:
                    for j in range(inner_count):
                        first[inner_start + j] = dy[p.outer + j]
                for k in range(outer_count):
                    for j in range(inner_count):
                        c = dy[cross + j * p.outer + k]
                        if p.family == HVP:
                            second[outer_start + k][inner_start + j] = c
                        else:
                            row = outer_start + k
                            col = inner_start + j
                            if col >= row:
                                second[0][row * p.n_x + col] = c
                                second[0][col * p.n_x + row] = c
            inner_start += inner_count
        outer_start += outer_count
    finish_output(p, yv, y, value)
    return 0


# -- nogil entry points -----------------------------------------------------------------

cdef inline bint wrong_call(cyad_prep* p, real* kind, bint jacobian_family) noexcept nogil:
    cdef bint is_float32 = real is float
    cdef bint jacobian_prep = p.family == GRADIENT or p.family == JACOBIAN
    return (is_float32 != p.float32 or jacobian_prep != jacobian_family
            or p.family >= SECOND_DERIVATIVE)


# Each claims the prep for the call (PREP_BUSY if another call holds it).

cdef int pushforward_nogil(cyad_prep* p, const real* x, const real* dx, real* y,
                           real* out) noexcept nogil:
    """out = J(x) @ dx, for a prep of one tangent."""
    cdef int status
    if wrong_call(p, out, False) or p.directions != 1:
        return WRONG_CALL
    if not claim(&p.busy):
        return PREP_BUSY
    status = run_pushforward(p, x, &dx, y, NULL, &out)
    release(&p.busy)
    return status


cdef int value_and_pushforward_nogil(cyad_prep* p, const real* x, const real* dx, real* y,
                                     real* value, real* out) noexcept nogil:
    """value = f(x) and out = J(x) @ dx, for a prep of one tangent."""
    cdef int status
    if wrong_call(p, out, False) or p.directions != 1:
        return WRONG_CALL
    if not claim(&p.busy):
        return PREP_BUSY
    status = run_pushforward(p, x, &dx, y, value, &out)
    release(&p.busy)
    return status


cdef int gradient_nogil(cyad_prep* p, const real* x, real* y, real* value,
                        real* gradient) noexcept nogil:
    """gradient = the gradient of a scalar-valued f at x; value = f(x) (may be NULL)."""
    cdef int status
    if wrong_call(p, gradient, True) or p.n_y != 1:
        return WRONG_CALL
    if not claim(&p.busy):
        return PREP_BUSY
    status = run_jacobian(p, x, y, value, gradient)
    release(&p.busy)
    return status


cdef int jacobian_nogil(cyad_prep* p, const real* x, real* y, real* value,
                        real* jacobian) noexcept nogil:
    """jacobian = J(x), n_y x n_x row-major; value = f(x) (may be NULL)."""
    cdef int status
    if wrong_call(p, jacobian, True):
        return WRONG_CALL
    if not claim(&p.busy):
        return PREP_BUSY
    status = run_jacobian(p, x, y, value, jacobian)
    release(&p.busy)
    return status


cdef int hvp_nogil(cyad_prep* p, const real* x, const real* v, real* y, real* gradient,
                   real* out) noexcept nogil:
    """out = H(x) @ v for a scalar-valued f and a prep of one tangent; gradient may be NULL."""
    cdef bint is_float32 = real is float
    cdef int status
    if is_float32 != p.float32 or p.family != HVP or p.outer_directions != 1:
        return WRONG_CALL
    if not claim(&p.busy):
        return PREP_BUSY
    status = run_second(p, x, &v, y, NULL, gradient, &out)
    release(&p.busy)
    return status


cdef int hessian_nogil(cyad_prep* p, const real* x, real* y, real* value, real* gradient,
                       real* hessian) noexcept nogil:
    """hessian = H(x), n_x x n_x row-major; value and gradient may be NULL."""
    cdef bint is_float32 = real is float
    cdef int status
    if is_float32 != p.float32 or p.family != HESSIAN:
        return WRONG_CALL
    if not claim(&p.busy):
        return PREP_BUSY
    status = run_second(p, x, NULL, y, value, gradient, &hessian)
    release(&p.busy)
    return status


cdef cyad_prep* prep_state(Prep prep) except NULL:
    """The struct the nogil entry points take; the prep must outlive its use."""
    if prep.out_shape is None:
        raise ValueError("cyad: this prep does not know f's output yet: call the operator once "
                         "from Python first")
    return &prep.state


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


cdef inline void* _data(object a):
    return cnp.PyArray_DATA(<cnp.ndarray>a)


def input_dtype(x):
    """The dtype cyad differentiates x in: float64/float32 kept, ints and bools to float64."""
    dtype = x.dtype if isinstance(x, np.ndarray) else np.asarray(x).dtype
    if dtype == np.float64 or dtype == np.float32:
        return dtype
    if dtype.kind in "biu":
        return np.dtype(np.float64)
    if dtype.kind == "c":
        raise TypeError("cyad: complex inputs are not supported (differentiate the real and "
                        "imaginary parts as separate real inputs)")
    raise TypeError(f"cyad: cannot differentiate with respect to an input of dtype {dtype}; "
                    "use float64 or float32")


def _nested_error(name):
    return TypeError(f"cyad: {name} is a dual array: only a Python callable differentiated inside "
                     "another differentiation takes dual arrays (a C function or a prep does not, "
                     "nor does a call outside the differentiation that made them)")


cdef class Prep:
    """Prepared state of one operator family for one call signature.

    Made by the `prepare_*` functions and passed back with `prep=`. It may be
    reused with other values of the same shapes, dtype and function form, and
    with another function of the same kind (Python callable or C function). It
    serves one call at a time: a call that finds it in use by another (from
    another thread, or from inside the function being differentiated) raises
    RuntimeError, so each thread needs its own prep.

    Parameters
    ----------
    family : Family
        The operator family (a prep serves e.g. both `pushforward` and
        `value_and_pushforward`).
    f : callable or FunctionWrapper
        The function to differentiate.
    x : array_like or float
        An input of the shape and dtype of later calls.
    directions : int
        Tangents of a pushforward or hvp, else the basis directions of x.
    y : ndarray, optional
        The output buffer of a two-argument f.
    chunk : int, optional
        Directions per evaluation of f.

    Attributes
    ----------
    family : Family
        The operator family the prep serves.
    two_argument : bool
        Whether f is of the form ``f(y, x)``.
    dtype : numpy.dtype
        float64 or float32: the dtype of x, the tangents and the results.
    x_shape : tuple of int
        The shape of x.
    out_shape : tuple of int or None
        The shape of f's output, once known (a Python ``f(x)`` tells it on its first call).
    input_dual : Dual
        The dual array a Python callable receives.

    Raises
    ------
    ValueError
        If x is empty or has more than 32 dimensions, or ``chunk`` is not a positive
        integer.
    TypeError
        If x is not real, or f has no C function for x's dtype and the family's order.

    Examples
    --------
    >>> prep = cyad.prepare_jacobian(np.sin, np.zeros(3))
    >>> prep.n_x, prep.directions, prep.chunk, prep.evaluations, prep.is_python
    (3, 3, 3, 1, True)
    >>> prep.x_shape, prep.dtype == np.float64, prep.two_argument
    ((3,), True, False)
    >>> np.allclose(cyad.jacobian(np.sin, np.zeros(3), prep=prep), np.eye(3))
    True
    >>> cyad.prepare_gradient(np.sum, np.zeros(100), chunk=16).evaluations
    7
    """

    def __cinit__(self):
        self.tangents = NULL
        self.outs = NULL
        self.state.spans = NULL
        self.state.scratch = NULL

    def __dealloc__(self):
        free(self.tangents)
        free(self.outs)
        free(self.state.spans)
        free(self.state.scratch)

    def __init__(self, Family family, f, x, Py_ssize_t directions, y=None, chunk=None):
        # directions: the tangents of a pushforward or hvp, else the basis directions
        cdef int i
        if isinstance(x, _DualType):
            raise _nested_error("x")
        self.family = family
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
        self.state.family = family
        self.state.two_argument = self.two_argument
        self.state.float32 = self.dtype == np.float32
        self.state.n_x = n_x
        if family >= SECOND_DERIVATIVE:
            self._size_second_order(directions, chunk, is_python_function(f))
        else:
            self._size_first_order(directions, chunk, is_python_function(f))
        self.tangents = <void**>malloc(directions * sizeof(void*))
        self.outs = <void**>malloc(directions * sizeof(void*))
        # the outputs of a call: its results, y, f's value and a first-order result
        self.state.spans = malloc((batch_size(&self.state) + 3) * sizeof(span))
        if self.tangents == NULL or self.outs == NULL or self.state.spans == NULL:
            raise MemoryError()
        self.scalar_x = np.zeros((), self.dtype)
        self.scalar_t = np.zeros((), self.dtype)
        self.input_dual = new_dual(np.zeros(self.x_shape, self.dtype),
                                   np.zeros(self.x_shape + (self.state.width,), self.dtype),
                                   self.state.width, self.tag)
        self.state.dx = _data(self.input_dual.partials)
        self._bind_kind(f)
        if self.two_argument:
            _check_y_dtype(y, self.dtype)
            self.set_output(y.shape)
        elif self.wrapper is not None:
            if self.wrapper.out_shape is None:
                raise TypeError("cyad: a C function's output shape is needed to call it without "
                                "y=: give FunctionWrapper(..., out_shape=...)")
            self.set_output(self.wrapper.out_shape)

    cdef _size_first_order(self, Py_ssize_t directions, object chunk, bint python):
        if chunk is None:
            chunk = default_chunk(directions, self.state.n_x, python)
        self.state.directions = directions
        self.state.chunk = max(1, min(int(chunk), directions))
        self.state.width = lane_count(self.state.chunk)
        self.tag = Tag(self.state.width)

    cdef _size_second_order(self, Py_ssize_t directions, object chunk, bint python):
        # inner directions: the basis (the second derivative's one tangent); outer: `directions`
        cdef bint hessian = self.family == HESSIAN
        cdef Py_ssize_t inner = 1 if self.family == SECOND_DERIVATIVE else self.state.n_x
        if chunk is None:
            chunk = default_second_order_chunk(directions, self.state.n_x, hessian, python)
        self.state.directions = inner
        self.state.chunk = max(1, min(int(chunk), inner))
        self.state.outer_directions = directions
        # C functions take one outer direction; a Hessian's outer chunk is its inner one
        self.state.outer_chunk = (1 if not python else
                                  self.state.chunk if hessian else directions)
        self.state.outer_chunk = max(1, min(self.state.outer_chunk, directions))
        self.state.outer = lane_count(self.state.outer_chunk)
        # the cross-term loops need a compile-time outer width only; a C function is
        # promised an inner width of the first-order kind too
        self.state.inner = self.state.chunk if python else lane_count(self.state.chunk)
        self.state.width = second_order_width(self.state.outer, self.state.inner)
        self.tag = nested_tag(Tag(self.state.outer), Tag(self.state.inner))

    cdef _bind_kind(self, object f):
        # the first binding: a Python callable gets its PythonFunction, a C function its struct
        if is_python_function(f):
            self.python = PythonFunction(_python_callable(f), self.two_argument, self.input_dual)
            self.state.function.f64 = python_f64
            self.state.function.f32 = python_f32
            self.state.function.second_f64 = python2_f64
            self.state.function.second_f32 = python2_f32
            self.state.function.context = <void*>self.python
        else:
            self._use_wrapper(_as_wrapper(f))
        self.bound = f

    cdef _use_wrapper(self, FunctionWrapper w):
        cdef bint missing
        if self.family >= SECOND_DERIVATIVE:
            missing = (w.function.second_f32 == NULL if self.state.float32
                       else w.function.second_f64 == NULL)
            if missing:
                raise TypeError(f"cyad: {w!r} has no second-order {self.dtype} function (of the "
                                "signature with outer and inner widths)")
        elif (w.function.f32 if self.state.float32 else w.function.f64) == NULL:
            raise TypeError(f"cyad: {w!r} has no {self.dtype} function")
        self.wrapper = w
        self.state.function = w.function

    def __repr__(self):
        form = "f(y, x)" if self.two_argument else "f(x)"
        kind = "a Python callable" if self.python is not None else "a C function"
        return (f"<cyad prep for {_FAMILY_NAMES[self.family]} of {form}, {kind}: x {self.x_shape} "
                f"{self.dtype}, {self.directions} directions in chunks of {self.chunk} "
                f"({self.width} lanes), {self.evaluations} evaluation(s) per call>")

    @property
    def n_x(self):
        """The number of elements of x."""
        return self.state.n_x

    @property
    def directions(self):
        """Tangents of a pushforward, else basis directions of x (the inner ones at second
        order)."""
        return self.state.directions

    @property
    def chunk(self):
        """Directions carried by one evaluation of f."""
        return self.state.chunk

    @property
    def width(self):
        """Lanes of the dual buffers: the chunk padded to 1, 2, 4, 8, 16 or a multiple of 8."""
        return self.state.width

    @property
    def evaluations(self):
        """Evaluations of f per operator call."""
        cdef Py_ssize_t start, total = 0
        inner = (self.state.directions + self.state.chunk - 1) // self.state.chunk
        if self.family == HESSIAN:
            for start in range(0, self.state.outer_directions, self.state.outer_chunk):
                total += (self.state.directions - start + self.state.chunk - 1) // self.state.chunk
            return total
        if self.family == HVP:
            return inner * ((self.state.outer_directions + self.state.outer_chunk - 1)
                            // self.state.outer_chunk)
        return inner

    @property
    def is_python(self):
        """Whether f runs as a Python callable on dual arrays (else as a C function)."""
        return self.python is not None

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
        if status == PYTHON_ERROR and self.python is not None and self.python.error is not None:
            error, self.python.error = self.python.error, None
            raise error
        if status == WRONG_CALL:
            raise ValueError("cyad: an entry point of another dtype or operator than the prep's")
        if status == PREP_BUSY:
            raise RuntimeError(_BUSY)
        if status == OVERLAPPING_OUTPUTS:
            # the two outputs that met, named in the order y, value, first, results
            first = <span*>self.state.spans + self.state.overlapping[0]
            second = <span*>self.state.spans + self.state.overlapping[1]
            if second.output < first.output:
                first, second = second, first
            raise ValueError(f"cyad: {_output_name(&self.state, first)} and "
                             f"{_output_name(&self.state, second)} share memory; give "
                             "outputs that do not overlap one another")
        if status == NO_MEMORY:
            raise MemoryError("cyad: no memory for the copies of inputs that overlap an output")
        raise FunctionError(status)

    cdef set_output(self, tuple shape):
        """Fix the output's shape (and the Jacobian's) and allocate the output duals."""
        cdef int i
        if self.family in (GRADIENT, HVP, HESSIAN) and shape != ():
            raise ValueError(f"cyad: {_FAMILY_NAMES[self.family]} needs a scalar-valued f, but f "
                             f"returns shape {shape}" + ("; use jacobian" if self.family == GRADIENT
                                                         else ""))
        if len(shape) + self.x_ndim > 64:
            raise ValueError("cyad: the Jacobian would have more than 64 dimensions")
        self.out_shape = shape
        self.out_ndim = len(shape)
        # the Jacobian's shape, or the Hessian's
        self.jacobian_shape = (self.x_shape if self.family == HESSIAN else shape) + self.x_shape
        self.jacobian_ndim = len(self.jacobian_shape)
        for i in range(self.jacobian_ndim):
            self.jacobian_dims[i] = self.jacobian_shape[i]
            if i < self.out_ndim:
                self.out_dims[i] = shape[i]
        self.state.n_y = int(np.prod(shape))
        self.y_dual = new_dual(np.zeros(shape, self.dtype),
                               np.zeros(shape + (self.state.width,), self.dtype),
                               self.state.width, self.tag)
        self.state.y = _data(self.y_dual.values)
        self.state.dy = _data(self.y_dual.partials)
        if self.python is not None:
            self.python.y_dual = self.y_dual

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
        if f is self.bound:
            return
        if is_python_function(f) != (self.python is not None):
            made = "a Python callable" if self.python is not None else "a C function"
            raise ValueError(f"cyad: this prep was made for {made}; f is not one")
        if self.python is not None:
            self.python.f = _python_callable(f)
        else:
            self._use_wrapper(_as_wrapper(f))
        self.bound = f

    cdef object input(self, object x):
        """x as a C-contiguous array of the prep's shape and dtype (x itself when it is one)."""
        if _is_exact(x, self.typenum, self.x_ndim, self.x_dims):
            return x
        if self.x_ndim == 0 and (PyFloat_Check(x) or PyLong_Check(x)):
            return _fill(self.scalar_x, x)
        self.check_array("x", x)
        return np.asarray(x, dtype=self.dtype, order="C")

    cdef object tangent(self, object t):
        """A single tangent as a C-contiguous array of x's shape and dtype."""
        if self.x_ndim == 0 and (PyFloat_Check(t) or PyLong_Check(t)):
            return _fill(self.scalar_t, t)
        return self.batch_tangent(t)

    cdef list point_to_tangents(self, tuple batch):
        """self.tangents[k] = the data of batch[k], each checked; the tangents that had to be
        converted are returned, to be kept alive through the call (None when none had)."""
        cdef Py_ssize_t k
        cdef list converted = None
        for k in range(len(batch)):
            t = self.batch_tangent(batch[k])
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
        if (_is_exact(out, self.typenum, ndim, dims)
                and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>out)):
            return
        if not isinstance(out, np.ndarray):
            raise TypeError(f"cyad: {what} must be a NumPy array, not {type(out).__name__}")
        if out.shape != shape or out.dtype != self.dtype:
            raise ValueError(f"cyad: {what} has shape {out.shape} and dtype {out.dtype}; it must "
                             f"have shape {shape} and dtype {self.dtype}")
        raise ValueError(f"cyad: {what} must be a writeable C-contiguous array")

    # -- learning a Python callable's output -----------------------------------------

    cdef discover(self, object x):
        """Evaluate the first chunk in Python to learn f's output; the engine then skips it.

        The seeds are the pushforward's tangents (set in self.tangents) or basis directions.
        """
        cdef bint basis = self.family == GRADIENT or self.family == JACOBIAN
        self.input_dual.values[...] = x
        if self.family >= SECOND_DERIVATIVE:
            # the output's shape only: f on x with zero partials (the engine then runs as usual)
            self.input_dual.partials[...] = 0
            r = self.python.f(self.input_dual)
            self.set_output(r.shape if isinstance(r, Dual) else constant_result(r).shape)
            return
        if self.state.float32:
            seed_first_chunk[float](&self.state, NULL if basis else <const float* const*>self.tangents)
        else:
            seed_first_chunk[double](&self.state,
                                     NULL if basis else <const double* const*>self.tangents)
        r = self.python.f(self.input_dual)
        if isinstance(r, Dual):
            shape = r.shape
        else:
            shape = constant_result(r).shape
        self.set_output(shape)
        self.python.store(r)
        self.state.pending = True

    # -- operators -------------------------------------------------------------------------

    cdef begin(self, bint nest):
        """Claim the prep for a call (RuntimeError if another call holds it). With `nest`, a
        Python f's differentiation starts: the cyad operators f calls nest inside it."""
        if not claim(&self.state.busy):
            raise RuntimeError(_BUSY)
        if nest and self.python is not None:
            enter(self.tag)

    cdef end(self, bint nest):
        """The call's end, whatever it was: a failed one leaves no evaluated chunk behind."""
        if nest and self.python is not None:
            leave(self.tag)
        self.state.pending = False
        release(&self.state.busy)

    cdef object second(self, object f, object x, object v, object y, object out, int results):
        """The second-order operators: `results` 1 gives the second-order result alone;
        2 (hvp) the gradient and it; 3 the value, the first-order and the second-order one."""
        cdef bint batch = isinstance(v, tuple)
        cdef Py_ssize_t given = len(<tuple>v) if batch else 1
        cdef object tangent = None
        cdef list converted     # tangents converted to the prep's dtype, alive through the call
        cdef object value_out = None, first_out = None, second_out = out
        self.begin(False)
        try:
            self.bind(f)
            x = self.input(x)
            if self.family == HVP:
                if given != self.state.outer_directions:
                    raise ValueError(f"cyad: {given} tangent(s) given, but this prep was made "
                                     f"for {self.state.outer_directions}")
                if batch:
                    converted = self.point_to_tangents(<tuple>v)
                else:
                    tangent = self.tangent(v)
                    self.tangents[0] = _data(tangent)
            if self.two_argument:
                self.check_y(y)
            if out is not None and results > 1:
                self.split(out, results)
                if results == 2:
                    first_out, second_out = out
                else:
                    value_out, first_out, second_out = out
            if self.out_shape is None:
                self.discover(x)
            return self._second(x, y, out, value_out, first_out, second_out, results, batch,
                                given)
        finally:
            self.end(False)

    cdef object _second(self, object x, object y, object out, object value_out,
                        object first_out, object second_out, int results, bint batch,
                        Py_ssize_t count):
        # checks or makes the outputs, runs the engine, returns the operator's result
        cdef bint scalar_x = self.family == SECOND_DERIVATIVE   # results shaped like f(x)
        cdef tuple shape = self.out_shape if scalar_x else self.x_shape
        cdef int ndim = self.out_ndim if scalar_x else self.x_ndim
        cdef cnp.npy_intp* dims = &self.x_dims[0]
        cdef object value = None, first = None, second = second_out
        cdef Py_ssize_t k
        if scalar_x:
            dims = &self.out_dims[0]
        if results == 3:
            value = self.value_buffer(value_out, y, True)
        if results >= 2:
            first = first_out
            if first is None:
                first = np.empty(shape, self.dtype)
            else:
                self.check_out(first, shape, ndim, dims, "the first-order output")
        if self.family == HESSIAN:
            if second is None:
                second = np.empty(self.jacobian_shape, self.dtype)
            else:
                self.check_out(second, self.jacobian_shape, self.jacobian_ndim,
                               self.jacobian_dims, "the Hessian output")
            self.outs[0] = _data(second)
        elif batch:
            if second is None:
                second = tuple([np.empty(shape, self.dtype) for k in range(count)])
            elif not isinstance(second, tuple) or len(<tuple>second) != count:
                raise TypeError(f"cyad: the hvp output must be a tuple of {count} arrays, one "
                                "per tangent")
            for k in range(count):
                self.check_out((<tuple>second)[k], shape, ndim, dims, "the hvp output")
                self.outs[k] = _data((<tuple>second)[k])
        else:
            if second is None:
                second = np.empty(shape, self.dtype)
            else:
                self.check_out(second, shape, ndim, dims, "out")
            self.outs[0] = _data(second)
        self.raise_for(self._run_second(x, y, value, first))
        if out is not None:
            return out
        if results == 1:
            return second
        return (first, second) if results == 2 else (value, first, second)

    cdef int _run_second(self, object x, object y, object value, object first):
        # the engine on the outputs in self.outs
        cdef void* yp = NULL if y is None else _data(y)
        cdef void* vp = NULL if value is None else _data(value)
        cdef void* fp = NULL if first is None else _data(first)
        cdef void** tangents = self.tangents if self.family == HVP else NULL
        if self.state.float32:
            return run_second(&self.state, <float*>_data(x), <const float* const*>tangents,
                              <float*>yp, <float*>vp, <float*>fp, <float**>self.outs)
        return run_second(&self.state, <double*>_data(x), <const double* const*>tangents,
                          <double*>yp, <double*>vp, <double*>fp, <double**>self.outs)

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

    cdef object pushforward(self, object f, object x, object dx, object y, object out,
                            bint with_value):
        # dx: one tangent, or a tuple of them (a batch)
        cdef bint batch = isinstance(dx, tuple)
        cdef Py_ssize_t given = len(<tuple>dx) if batch else 1
        cdef object pair = None, value_out = None
        cdef list converted     # tangents converted to the prep's dtype, alive through the call
        self.begin(True)
        try:
            if given != self.state.directions:
                raise ValueError(f"cyad: {given} tangent(s) given, but this prep was made for "
                                 f"{self.state.directions}")
            self.bind(f)
            x = self.input(x)
            if batch:
                converted = self.point_to_tangents(<tuple>dx)
            else:
                dx = self.tangent(dx)
                self.tangents[0] = _data(dx)
            if self.two_argument:
                self.check_y(y)
            if with_value and out is not None:
                pair = out
                value_out, out = self.split(out, 2)
            return self._pushforward(x, y, out, with_value, batch, given, pair, value_out)
        finally:
            self.end(True)

    cdef object _pushforward(self, object x, object y, object out, bint with_value, bint batch,
                             Py_ssize_t given, object pair, object value_out):
        cdef Py_ssize_t k
        cdef object value
        cdef int status
        if self.out_shape is None:
            self.discover(x)
        if out is None:
            out = tuple([np.empty(self.out_shape, self.dtype) for k in range(given)]) if batch \
                else np.empty(self.out_shape, self.dtype)
        elif batch:
            if not isinstance(out, tuple) or len(<tuple>out) != given:
                raise TypeError(f"cyad: out= must be a tuple of {given} arrays, one per tangent")
            for k in range(given):
                self.check_out((<tuple>out)[k], self.out_shape, self.out_ndim, self.out_dims, "out")
        else:
            self.check_out(out, self.out_shape, self.out_ndim, self.out_dims, "out")
        value = self.value_buffer(value_out, y, with_value)
        if batch:
            for k in range(given):
                self.outs[k] = _data((<tuple>out)[k])
        else:
            self.outs[0] = _data(out)
        status = self._run_pushforward(x, y, value)
        self.raise_for(status)
        if with_value:
            return pair if pair is not None else (value, out)
        return out

    cdef int _run_pushforward(self, object x, object y, object value):
        cdef void* yp = NULL if y is None else _data(y)
        cdef void* vp = NULL if value is None else _data(value)
        if self.state.float32:
            return run_pushforward(&self.state, <float*>_data(x), <const float* const*>self.tangents,
                                   <float*>yp, <float*>vp, <float**>self.outs)
        return run_pushforward(&self.state, <double*>_data(x), <const double* const*>self.tangents,
                               <double*>yp, <double*>vp, <double**>self.outs)

    cdef object jacobian(self, object f, object x, object y, object out, bint with_value):
        cdef object pair = None, value_out = None
        self.begin(True)
        try:
            self.bind(f)
            x = self.input(x)
            if self.two_argument:
                self.check_y(y)
            if with_value and out is not None:
                pair = out
                value_out, out = self.split(out, 2)
            return self._jacobian(x, y, out, with_value, pair, value_out)
        finally:
            self.end(True)

    cdef object _jacobian(self, object x, object y, object out, bint with_value, object pair,
                          object value_out):
        cdef object value
        cdef int status
        if self.out_shape is None:
            self.discover(x)
        if out is None:
            out = np.empty(self.jacobian_shape, self.dtype)
        else:
            self.check_out(out, self.jacobian_shape, self.jacobian_ndim, self.jacobian_dims, "out")
        value = self.value_buffer(value_out, y, with_value)
        status = self._run_jacobian(x, y, value, out)
        self.raise_for(status)
        if with_value:
            return pair if pair is not None else (value, out)
        return out

    cdef int _run_jacobian(self, object x, object y, object value, object out):
        cdef void* yp = NULL if y is None else _data(y)
        cdef void* vp = NULL if value is None else _data(value)
        if self.state.float32:
            return run_jacobian(&self.state, <float*>_data(x), <float*>yp, <float*>vp,
                                <float*>_data(out))
        return run_jacobian(&self.state, <double*>_data(x), <double*>yp, <double*>vp,
                            <double*>_data(out))


cdef object _python_callable(object f):
    # the callable itself, out of its FunctionWrapper if it has one
    return (<FunctionWrapper>f).callable if isinstance(f, FunctionWrapper) else f


cdef FunctionWrapper _as_wrapper(object f):
    return <FunctionWrapper>f if isinstance(f, FunctionWrapper) else FunctionWrapper(f)


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
