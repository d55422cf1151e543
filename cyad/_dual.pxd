cimport numpy as cnp

cdef class Tag:
    cdef readonly Py_ssize_t width     # lanes of the duals it marks
    cdef readonly long long level      # when its differentiation started (outer < inner)
    cdef readonly bint running         # whether that differentiation is running
    cdef readonly Tag outer            # a nested tag's two differentiations
    cdef readonly Tag inner            # (None for a tag of one differentiation)
    cdef Tag nested                    # the last nested tag made with this as inner

cdef Tag nested_tag(Tag outer, Tag inner)
cdef int enter(Tag tag) except -1
cdef void leave(Tag tag) noexcept
cdef bint differentiating() noexcept


cdef class Dual:
    # values: the primal numbers, shape S; partials: shape S + (width,), same dtype.
    # tag identifies the differentiation the dual belongs to.
    cdef readonly cnp.ndarray values
    cdef readonly cnp.ndarray partials
    cdef readonly Py_ssize_t width
    cdef readonly Tag tag

cdef Dual new_dual(cnp.ndarray values, cnp.ndarray partials, Py_ssize_t width, Tag tag)
