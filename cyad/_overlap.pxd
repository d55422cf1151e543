# The protection of inputs that outputs overlap (cyad/_overlap.pyx says how): the fast
# check inline, for every caller of an engine's run (Prep.call, the engines' nogil entry
# points), and the slow path's records, which Prep.raise_for reads to name two outputs.
from libc.stdint cimport uintptr_t

from cyad._c_api cimport PREP_BUSY
from cyad._core cimport prep_header, claim, release

cdef enum:
    # which output a span is, besides result k (k >= 0); in the order outputs are named
    Y_OUTPUT = -3
    VALUE_OUTPUT = -2
    FIRST_OUTPUT = -1

ctypedef struct span:      # an output's bytes
    uintptr_t start
    uintptr_t end
    Py_ssize_t output      # Y_OUTPUT, VALUE_OUTPUT, FIRST_OUTPUT or the result's index


cdef int protect_slowly(prep_header* h, const void** x, const void* const** tangents,
                        void* y, void* value, void* first, void** results) noexcept nogil


cdef inline bint overlap(uintptr_t a, uintptr_t a_end, uintptr_t b,
                         uintptr_t b_end) noexcept nogil:
    # whether the bytes [a, a_end) and [b, b_end) meet
    return a < b_end and b < a_end


cdef inline bint may_meet(const prep_header* h, const void* x, const void* t, const void* y,
                          const void* value, const void* first,
                          const void* result) noexcept nogil:
    """Whether an output of a call of one result may share memory with an input (x, the
    tangent or cotangent t) or with another output (f's value may be y itself). False
    proves that none does. Exact for nonempty buffers; an empty output inside another
    buffer, or a NULL y whose size reaches a buffer at the very start of the address
    space, answers True, and protect_slowly tells. A comparison pair per two buffers,
    on registers."""
    cdef uintptr_t x0 = <uintptr_t>x, x1 = x0 + <uintptr_t>h.x_bytes
    cdef uintptr_t t0 = <uintptr_t>t, t1 = t0 + <uintptr_t>h.tangent_bytes
    cdef uintptr_t y0 = <uintptr_t>y, y1 = y0 + <uintptr_t>h.y_bytes
    cdef uintptr_t v0 = <uintptr_t>value, v1 = v0 + <uintptr_t>h.y_bytes
    cdef uintptr_t f0 = <uintptr_t>first, f1 = f0 + <uintptr_t>h.first_bytes
    cdef uintptr_t r0 = <uintptr_t>result, r1 = r0 + <uintptr_t>h.result_bytes
    cdef bint with_value = value != NULL and value != y
    if overlap(r0, r1, x0, x1) or overlap(y0, y1, x0, x1) or overlap(r0, r1, y0, y1):
        return True
    if t != NULL and (overlap(r0, r1, t0, t1) or overlap(y0, y1, t0, t1)):
        return True
    if with_value and (overlap(v0, v1, x0, x1) or overlap(v0, v1, r0, r1)
                       or overlap(v0, v1, y0, y1) or (t != NULL and overlap(v0, v1, t0, t1))):
        return True
    return first != NULL and (
        overlap(f0, f1, x0, x1) or overlap(f0, f1, r0, r1) or overlap(f0, f1, y0, y1)
        or (with_value and overlap(f0, f1, v0, v1)) or (t != NULL and overlap(f0, f1, t0, t1)))


cdef inline int protect_one(prep_header* h, const void** x, const void* const** tangents,
                            void* y, void* value, void* first, void** results) noexcept nogil:
    """protect_inputs for a call of one result (h.results == 1). Inline, so that an entry
    point's constant NULLs fold away."""
    cdef const void* t = tangents[0][0] if tangents[0] != NULL else NULL
    if may_meet(h, x[0], t, y, value, first, results[0]):
        return protect_slowly(h, x, tangents, y, value, first, results)
    return 0


cdef inline int protect_inputs(prep_header* h, const void** x, const void* const** tangents,
                               void* y, void* value, void* first,
                               void** results) noexcept nogil:
    """Check a call's outputs, and point x and the tangents (NULL: none) at copies where
    they overlap an output. Returns 0, OVERLAPPING_OUTPUTS or NO_MEMORY. Every caller
    of an engine's run calls it first (Prep.call, the engines' nogil entry points), so
    that no engine (nor a function it calls) is handed an input that an output
    overlaps, nor two outputs that overlap."""
    if h.results > 1:
        return protect_slowly(h, x, tangents, y, value, first, results)
    return protect_one(h, x, tangents, y, value, first, results)


cdef inline int enter_nogil(prep_header* h, const void** x, const void* const** tangents,
                            void* y, void* value, void* first, void** results) noexcept nogil:
    """The start of a nogil entry point's call on a prep of one result: the prep claimed
    (else PREP_BUSY) and its inputs protected (protect_one). The prep stays claimed only
    when it returns 0: the engine's run follows, then release(&h.busy)."""
    cdef int status
    if not claim(&h.busy):
        return PREP_BUSY
    status = protect_one(h, x, tangents, y, value, first, results)
    if status != 0:
        release(&h.busy)
    return status
