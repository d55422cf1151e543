"""The protection of inputs that outputs overlap, for every engine.

Like a NumPy ufunc given an overlapping out=, a call reads its inputs as they were when
it started. An engine reads x and the tangents (or cotangents) in every evaluation and
writes outputs after each, so every call of an engine's `run` (Prep.call, the engines'
nogil entry points) first calls `protect_inputs` (cyad/_overlap.pxd): an input that
shares memory with an output is copied once, into the prep's scratch, and the engine
runs on the copy. y needs no copy: it is an output itself, which no other output may
share memory with. Outputs that share memory would leave a result that depends on the
order of the writes: OVERLAPPING_OUTPUTS, but for f's value written to y itself (the
two-argument value forms). Every buffer is C-contiguous: the bytes [start, start + count
* itemsize), whose sizes the header holds. A call with one result has at most four
outputs and two inputs (x and a tangent or cotangent), compared pair by pair in
registers (`may_meet`: a handful of comparisons where nothing meets, the usual case).
Otherwise, and for a batch, `protect_slowly` records the outputs in the prep (to name
two that overlap); a batch's outputs (one per tangent or cotangent) are sorted by
address, so that neighbours tell whether they are disjoint, and an input outside the
span of all of them is told by two comparisons, one inside placed among them by
bisection.
"""
from libc.stdint cimport uintptr_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from cyad._c_api cimport OVERLAPPING_OUTPUTS, NO_MEMORY
from cyad._core cimport prep_header


cdef inline void add_span(span* s, Py_ssize_t* n, const void* start, Py_ssize_t size,
                          Py_ssize_t output) noexcept nogil:
    # an output of `size` bytes, if given (an empty one meets nothing)
    if start != NULL and size > 0:
        s[n[0]].start = <uintptr_t>start
        s[n[0]].end = <uintptr_t>start + <uintptr_t>size
        s[n[0]].output = output
        n[0] += 1


cdef inline span input_span(const void* start, Py_ssize_t size) noexcept nogil:
    cdef span a
    a.start = <uintptr_t>start
    a.end = a.start + <uintptr_t>size
    return a


cdef inline bint disjoint(const span* a, const span* b) noexcept nogil:
    return a.end <= b.start or b.end <= a.start


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


cdef int protect_slowly(prep_header* h, const void** x, const void* const** tangents,
                        void* y, void* value, void* first, void** results) noexcept nogil:
    """protect_inputs for a batch, or where something may overlap: the outputs recorded in
    the prep's spans."""
    cdef span* s = <span*>h.spans
    cdef Py_ssize_t n = 0, i, j, count = h.results, copies, need
    cdef Py_ssize_t x_bytes = h.x_bytes, t_bytes = h.tangent_bytes
    cdef Py_ssize_t pointers = count * sizeof(void*)
    cdef bint by_address = count > 1
    cdef uintptr_t low, high
    cdef const void** copied
    cdef char* data
    add_span(s, &n, y, h.y_bytes, Y_OUTPUT)
    if value != y:
        add_span(s, &n, value, h.y_bytes, VALUE_OUTPUT)
    add_span(s, &n, first, h.first_bytes, FIRST_OUTPUT)
    for i in range(count):
        add_span(s, &n, results[i], h.result_bytes, i)
    if n == 0:
        return 0
    # the outputs against one another
    if by_address:
        sort_spans(s, n)
        for i in range(n - 1):
            if s[i].end > s[i + 1].start:
                h.overlapping[0], h.overlapping[1] = i, i + 1
                return OVERLAPPING_OUTPUTS
        low, high = s[0].start, s[n - 1].end
    else:
        low, high = s[0].start, s[0].end
        for i in range(1, n):
            for j in range(i):
                if not disjoint(&s[i], &s[j]):
                    h.overlapping[0], h.overlapping[1] = j, i
                    return OVERLAPPING_OUTPUTS
            low, high = min(low, s[i].start), max(high, s[i].end)
    # the inputs against them
    copies = 0
    if tangents[0] != NULL:
        for i in range(count):
            copies += meets(s, n, by_address, low, high, tangents[0][i], t_bytes)
    need = copies * t_bytes
    if meets(s, n, by_address, low, high, x[0], x_bytes):
        copies += 1
        need += x_bytes
    if copies == 0:
        return 0
    # the scratch: the tangents' pointers, then the copies; kept for later calls
    if pointers + need > h.scratch_bytes:
        free(h.scratch)
        h.scratch_bytes = 0
        h.scratch = malloc(pointers + need)
        if h.scratch == NULL:
            return NO_MEMORY
        h.scratch_bytes = pointers + need
    data = <char*>h.scratch + pointers
    if meets(s, n, by_address, low, high, x[0], x_bytes):
        memcpy(data, x[0], x_bytes)
        x[0] = data
        data += x_bytes
    if tangents[0] != NULL:
        copied = <const void**>h.scratch
        for i in range(count):
            copied[i] = tangents[0][i]
            if meets(s, n, by_address, low, high, copied[i], t_bytes):
                memcpy(data, copied[i], t_bytes)
                copied[i] = data
                data += t_bytes
        tangents[0] = copied
    return 0
