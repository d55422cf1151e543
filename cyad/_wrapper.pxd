# The dual-level function signature every differentiated function is called through.
#
# A function of cyad's signature evaluates y = f(x) on dual numbers held in buffers:
#   x   n_x input values                      dx  n_x x width input partials, row-major
#   y   n_y output values                     dy  n_y x width output partials, row-major
# On entry y holds the current values of the output (a two-argument f may read them)
# and dy is zero; the function writes y and dy. It returns 0 on success and any other
# int to report an error (cyad raises cyad.FunctionError naming that status).
# `context` is the pointer the FunctionWrapper was given (user data), or NULL.
# `width` is the number of derivative lanes (1, 2, 4, 8, 16 or a multiple of 8);
# lanes beyond the directions of a chunk hold zeros.

ctypedef int (*cyad_f64)(const double* x, const double* dx, double* y, double* dy,
                         Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                         void* context) noexcept nogil

ctypedef int (*cyad_f32)(const float* x, const float* dx, float* y, float* dy,
                         Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                         void* context) noexcept nogil

# A type-erased function: one pointer per dtype it supports (NULL where it does not).
ctypedef struct cyad_function:
    cyad_f64 f64
    cyad_f32 f32
    void* context
