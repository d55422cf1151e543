cimport numpy as cnp
from cyad._dual cimport Dual

# What a prep was made for; a prep serves every operator of its family
# (pushforward and value_and_pushforward share one, and so on).
cpdef enum Family:
    PUSHFORWARD
    DERIVATIVE
    GRADIENT
    JACOBIAN


cdef class Prep:
    cdef readonly Family family
    cdef readonly bint two_argument
    cdef readonly object dtype            # of x (and the dual input)
    cdef readonly tuple x_shape
    cdef readonly Py_ssize_t n_x
    cdef readonly Py_ssize_t directions   # tangents (pushforward) or basis directions
    cdef readonly Py_ssize_t chunk        # directions carried by one evaluation
    cdef readonly Py_ssize_t width        # lanes of the dual buffers: chunk padded
    cdef readonly Py_ssize_t evaluations  # calls of f per operator call
    cdef readonly object out_shape        # f's output shape, known after the first call
    cdef readonly object out_dtype
    cdef readonly Dual input_dual
    cdef Dual y_dual
    cdef int x_typenum
    cdef int x_ndim
    cdef cnp.npy_intp x_dims[32]
    cdef int out_typenum
    cdef int out_ndim
    cdef cnp.npy_intp out_dims[32]
    cdef Py_ssize_t n_out
    cdef Py_ssize_t x_bytes                # n_x * itemsize
    cdef Py_ssize_t out_bytes              # n_out * itemsize
    cdef object tag
    cdef cnp.ndarray _constant             # f's output when f returns a scalar constant

    cdef _set_output(self, tuple shape, object dtype)
    cdef check_form(self, Family family, object y)
    cdef object load_x(self, object x)
    cdef _check_array(self, str name, object a, tuple shape, object dtype)
    cdef object check_y(self, object y)
    cdef object check_out(self, object out, tuple shape, str what)
    cdef object evaluate(self, object f, object y)
    cdef object _output(self, object r)
    cdef object pushforward(self, object f, object x, object dx, object y, object out,
                            bint with_value)
    cdef object _tangent(self, object t)
    cdef _seed_lane(self, object t, Py_ssize_t lane)
    cdef object _tangent_outputs(self, object out, bint batch)
    cdef _extract_lane(self, object r, Py_ssize_t lane, object dst)
    cdef tuple _split_value_out(self, object out)
    cdef object _write_value(self, object r, object value_out, object y)
    cdef object jacobian(self, object f, object x, object y, object out, bint with_value)
    cdef _seed_basis(self, Py_ssize_t start, Py_ssize_t count)
    cdef object _jacobian_output(self, object out)
    cdef _extract_columns(self, object r, Py_ssize_t start, Py_ssize_t count, object out)
