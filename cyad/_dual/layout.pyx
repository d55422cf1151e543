"""The lane layouts of dual buffers, for Python code (the C-level statement is _layout.pxd).

`padded_width` is the first-order width, `NestedLanes` the second-order layout of one
(outer, inner) pair: its width, the lanes of a[k], b[j] and c[j][k], and views of a
partials array split into a, b and c. `seed_basis`, `seed_lanes`, `seed_columns` and
`read_columns` seed and read lanes of arrays of partials (any shape, lanes last,
C-contiguous, float64 or float32) with the very loops the prepared engine uses, so that
nested differentiation (cyad._nested) seeds and extracts as the engine does.
"""
import numpy as np

cimport numpy as cnp

cnp.import_array()


def padded_width(Py_ssize_t directions):
    """lane_count for Python code: the lanes of a first-order element."""
    return lane_count(directions)


cdef class NestedLanes:
    """The second-order layout of nested duals over `outer` and `inner` directions."""
    cdef readonly Py_ssize_t outer, inner, width
    cdef readonly slice a, b, c    # a: outer partials, b: inner partials, c: cross terms

    def __init__(self, Py_ssize_t outer, Py_ssize_t inner):
        self.outer, self.inner = outer, inner
        self.width = second_order_width(outer, inner)
        self.a = slice(outer_lane(0), outer_lane(outer))
        self.b = slice(inner_lane(outer, 0), inner_lane(outer, inner))
        self.c = slice(cross_lane(outer, inner, 0, 0), cross_lane(outer, inner, inner, 0))

    def b_lane(self, Py_ssize_t j):
        """The lane of b[j]."""
        return inner_lane(self.outer, j)

    def c_lane(self, Py_ssize_t j, Py_ssize_t k=0):
        """The lane of c[j][k] (with k = 0: where the row c[j] starts)."""
        return cross_lane(self.outer, self.inner, j, k)

    def split(self, partials):
        """Views (a, b, c) of partials (..., width): a (..., outer), b (..., inner) and
        c (..., inner, outer), c[..., j, k] being c[j][k]."""
        shape = partials.shape[:-1]
        return (partials[..., self.a], partials[..., self.b],
                partials[..., self.c].reshape(shape + (self.inner, self.outer)))

    def __repr__(self):
        return f"NestedLanes(outer={self.outer}, inner={self.inner})"


cdef Py_ssize_t _rows(cnp.ndarray partials, Py_ssize_t lanes) except -1:
    # the elements of a partials array whose lanes [0, lanes) are used, checked
    if not cnp.PyArray_IS_C_CONTIGUOUS(partials) or partials.ndim == 0:
        raise ValueError("cyad: partials must be a C-contiguous array with a lane axis last")
    if cnp.PyArray_TYPE(partials) not in (cnp.NPY_DOUBLE, cnp.NPY_FLOAT):
        raise TypeError("cyad: partials must be float64 or float32")
    if lanes > partials.shape[partials.ndim - 1]:
        raise ValueError(f"cyad: lanes up to {lanes} do not fit partials of "
                         f"{partials.shape[partials.ndim - 1]} lanes")
    return partials.size // partials.shape[partials.ndim - 1]


cdef void _check_like(cnp.ndarray a, cnp.ndarray partials, Py_ssize_t size) except *:
    if not cnp.PyArray_IS_C_CONTIGUOUS(a) or cnp.PyArray_TYPE(a) != cnp.PyArray_TYPE(partials):
        raise ValueError("cyad: seeds and results must be C-contiguous, of the partials' dtype")
    if a.size != size:
        raise ValueError(f"cyad: {a.size} numbers where {size} are needed")


def seed_basis(cnp.ndarray partials, Py_ssize_t lane):
    """Seed basis directions: element i gets 1 in lane `lane` + i (other lanes untouched)."""
    cdef Py_ssize_t n = _rows(partials, 0), width = partials.shape[partials.ndim - 1]
    _rows(partials, lane + n)
    if cnp.PyArray_TYPE(partials) == cnp.NPY_DOUBLE:
        put_basis(<double*>cnp.PyArray_DATA(partials), width, lane, 0, n)
    else:
        put_basis(<float*>cnp.PyArray_DATA(partials), width, lane, 0, n)


def seed_lanes(cnp.ndarray partials, Py_ssize_t lane, tuple tangents):
    """Seed tangents: lane `lane` + k of every element gets tangents[k]'s entry."""
    cdef Py_ssize_t n = _rows(partials, lane + len(tangents))
    cdef Py_ssize_t width = partials.shape[partials.ndim - 1], k
    cdef cnp.ndarray t
    for k in range(len(tangents)):
        t = tangents[k]
        _check_like(t, partials, n)
        if cnp.PyArray_TYPE(partials) == cnp.NPY_DOUBLE:
            put_lane(<double*>cnp.PyArray_DATA(t), n, <double*>cnp.PyArray_DATA(partials),
                     width, lane + k)
        else:
            put_lane(<float*>cnp.PyArray_DATA(t), n, <float*>cnp.PyArray_DATA(partials),
                     width, lane + k)


def seed_columns(cnp.ndarray partials, Py_ssize_t lane, cnp.ndarray src):
    """Lanes [lane, lane + count) of every element = src (elements x count, count its last axis)."""
    cdef Py_ssize_t count = src.shape[src.ndim - 1] if src.ndim else 1
    cdef Py_ssize_t n = _rows(partials, lane + count)
    cdef Py_ssize_t width = partials.shape[partials.ndim - 1]
    _check_like(src, partials, n * count)
    if cnp.PyArray_TYPE(partials) == cnp.NPY_DOUBLE:
        put_columns(<double*>cnp.PyArray_DATA(src), n, count, <double*>cnp.PyArray_DATA(partials),
                    width, lane)
    else:
        put_columns(<float*>cnp.PyArray_DATA(src), n, count, <float*>cnp.PyArray_DATA(partials),
                    width, lane)


def read_columns(cnp.ndarray partials, Py_ssize_t lane, Py_ssize_t count):
    """A new array (..., count): lanes [lane, lane + count) of every element."""
    cdef Py_ssize_t n = _rows(partials, lane + count)
    cdef Py_ssize_t width = partials.shape[partials.ndim - 1]
    cdef cnp.ndarray dst = np.empty((<object>partials).shape[:-1] + (count,), partials.dtype)
    if cnp.PyArray_TYPE(partials) == cnp.NPY_DOUBLE:
        get_columns(<double*>cnp.PyArray_DATA(partials), n, width, lane, count,
                    <double*>cnp.PyArray_DATA(dst), count, 0)
    else:
        get_columns(<float*>cnp.PyArray_DATA(partials), n, width, lane, count,
                    <float*>cnp.PyArray_DATA(dst), count, 0)
    return dst
