# The lane layouts of dual buffers, stated once: every module that indexes lanes cimports
# these functions, and Python code gets the same from cyad._dual.layout (NestedLanes,
# padded_width and the seeding and reading functions on arrays).
#
# A dual buffer of n elements is a values array of n and a row-major n x width array of
# partials: element i's row of lanes starts at i * width.
#
# First order: an element over `directions` directions has lane_count(directions) lanes,
#   lane k                                 the partial along direction k
#   the remaining lanes                    zero padding
#
# Second order: a nested dual Dual{inner}(Dual{outer}) over `outer` and `inner`
# directions has second_order_width(outer, inner) lanes,
#   lanes [0, outer)                       a[k] = outer_lane(k): the partial along outer
#                                          direction k
#   lanes [outer, outer + inner)           b[j] = inner_lane(outer, j): the partial along
#                                          inner direction j
#   lane  outer + inner + j * outer + k    c[j][k] = cross_lane(outer, inner, j, k): the
#                                          second derivative along inner direction j and
#                                          outer direction k
#   the remaining lanes                    zero padding
# so c[j], the outer lanes of inner direction j, is a contiguous row like a (the
# nested dual's inner partial j is the dual (b[j], c[j]) of the outer differentiation).
from cyad._fused cimport real
from libc.string cimport memset


cdef inline Py_ssize_t lane_count(Py_ssize_t directions) noexcept nogil:
    """The padded width that runs `directions` directions: 1, 2, 4, 8, 16 or a multiple of 8."""
    cdef Py_ssize_t width = 1
    if directions > 16:
        return (directions + 7) // 8 * 8
    while width < directions:
        width *= 2
    return width


cdef inline Py_ssize_t second_order_width(Py_ssize_t outer, Py_ssize_t inner) noexcept nogil:
    """The lanes of a nested dual over `outer` and `inner` directions."""
    return lane_count(outer + inner + outer * inner)


cdef inline Py_ssize_t outer_lane(Py_ssize_t k) noexcept nogil:
    """The lane of a[k], the partial along outer direction k."""
    return k


cdef inline Py_ssize_t inner_lane(Py_ssize_t outer, Py_ssize_t j) noexcept nogil:
    """The lane of b[j], the partial along inner direction j."""
    return outer + j


cdef inline Py_ssize_t cross_lane(Py_ssize_t outer, Py_ssize_t inner, Py_ssize_t j,
                                  Py_ssize_t k) noexcept nogil:
    """The lane of c[j][k], the second derivative along inner direction j and outer k."""
    return outer + inner + j * outer + k


# -- seeding and reading lanes: the loops every engine seeds and extracts with ---------------

cdef inline void clear_lanes(real* partials, Py_ssize_t n, Py_ssize_t width) noexcept nogil:
    # partials = 0
    memset(partials, 0, n * width * sizeof(real))


cdef inline void put_lane(const real* src, Py_ssize_t n, real* partials, Py_ssize_t width,
                          Py_ssize_t lane) noexcept nogil:
    # partials[i, lane] = src[i]
    cdef Py_ssize_t i
    for i in range(n):
        partials[i * width + lane] = src[i]


cdef inline void get_lane(const real* partials, Py_ssize_t n, Py_ssize_t width, Py_ssize_t lane,
                          real* dst) noexcept nogil:
    # dst[i] = partials[i, lane]
    cdef Py_ssize_t i
    for i in range(n):
        dst[i] = partials[i * width + lane]


cdef inline void put_basis(real* partials, Py_ssize_t width, Py_ssize_t lane, Py_ssize_t start,
                           Py_ssize_t count) noexcept nogil:
    # partials[start + k, lane + k] = 1 for k < count: basis directions start .. start + count
    # in the lanes from `lane` (the other lanes are left as they are)
    cdef Py_ssize_t k
    for k in range(count):
        partials[(start + k) * width + lane + k] = 1


cdef inline void put_columns(const real* src, Py_ssize_t n, Py_ssize_t count, real* partials,
                             Py_ssize_t width, Py_ssize_t lane) noexcept nogil:
    # partials[i, lane + k] = src[i, k] for an n x count row-major src
    cdef Py_ssize_t i, k
    for i in range(n):
        for k in range(count):
            partials[i * width + lane + k] = src[i * count + k]


cdef inline void get_columns(const real* partials, Py_ssize_t n, Py_ssize_t width,
                             Py_ssize_t lane, Py_ssize_t count, real* dst, Py_ssize_t columns,
                             Py_ssize_t start) noexcept nogil:
    # dst[i, start + k] = partials[i, lane + k] for k < count and an n x columns row-major dst
    cdef Py_ssize_t i, k
    for i in range(n):
        for k in range(count):
            dst[i * columns + start + k] = partials[i * width + lane + k]
