# The function signatures and the type-erased function (cyad/_signatures.pxd, part of
# the public C API)
from cyad._signatures cimport cyad_f64, cyad_f32, cyad2_f64, cyad2_f32, cyad_function


cimport numpy as cnp
from cyad._dual.array cimport Dual

cdef class FunctionWrapper:
    cdef cyad_function function
    cdef readonly object callable      # the Python callable, when it is one
    cdef readonly object out_shape     # a C function's output shape, if declared
    cdef readonly str kind
    cdef readonly object tape          # the TapeFunction of a recorded function, else None
    cdef list owner                    # keeps the functions and their contexts alive

    cdef _copy(self, FunctionWrapper other)
    cdef _add(self, object f, object user_data)


cdef FunctionWrapper wrap(cyad_f64 f64, cyad_f32 f32, void* context, object out_shape=*,
                          object owner=*, cyad2_f64 second_f64=*, cyad2_f32 second_f32=*)


cdef class PythonFunction:
    cdef object f
    cdef bint two_argument
    cdef Dual x_dual
    cdef Dual y_dual
    cdef readonly object error

    cdef int run(self, const char* x, const char* dx, char* y, char* dy) noexcept
    cdef store(self, object r)


cdef int python_f64(const double* x, const double* dx, double* y, double* dy,
                    Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                    void* context) noexcept nogil

cdef int python_f32(const float* x, const float* dx, float* y, float* dy,
                    Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                    void* context) noexcept nogil

cdef int python2_f64(const double* x, const double* dx, double* y, double* dy,
                     Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t outer, Py_ssize_t inner,
                     void* context) noexcept nogil

cdef int python2_f32(const float* x, const float* dx, float* y, float* dy,
                     Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t outer, Py_ssize_t inner,
                     void* context) noexcept nogil

cpdef bint is_python_function(object f)
cpdef bint is_c_function(object f)
