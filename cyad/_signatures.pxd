# The dual-level function signature every differentiated function is called through.
#
# A function of cyad's signature evaluates y = f(x) on dual numbers held in buffers:
#   x   n_x input values                      dx  n_x x width input partials, row-major
#   y   n_y output values                     dy  n_y x width output partials, row-major
# On entry y holds the current values of the output (a two-argument f may read them)
# and dy is zero; the function writes y and dy. y and dy never share memory with each
# other, nor with x or dx (cyad copies an input that overlaps an output beforehand), so
# the function may write y and dy before it has read all of x and dx. It returns 0 on
# success and any other int to report an error (cyad raises cyad.FunctionError naming
# that status).
# `context` is the pointer the FunctionWrapper was given (user data), or NULL.
# `width` is the number of derivative lanes (1, 2, 4, 8, 16 or a multiple of 8);
# lanes beyond the directions of a chunk hold zeros.

ctypedef int (*cyad_f64)(const double* x, const double* dx, double* y, double* dy,
                         Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                         void* context) noexcept nogil

ctypedef int (*cyad_f32)(const float* x, const float* dx, float* y, float* dy,
                         Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                         void* context) noexcept nogil

# Second order (hessian, hvp, second_derivative) calls a function of the second-order
# signature: the same buffers, whose elements are nested duals over two sets of
# directions, `outer` and `inner` of them. Element i's row of dx (and of dy) has
# second_order_width(outer, inner) lanes (cyad/_dual/layout.pxd states it once), laid out as
#   lanes [0, outer)                           a[k]: partials along outer direction k
#   lanes [outer, outer + inner)               b[j]: partials along inner direction j
#   lane  outer + inner + j * outer + k        c[j][k]: the second derivative along
#                                              inner direction j and outer direction k
#   the remaining lanes                        zero padding
# (the nested dual Dual{inner}(Dual{outer}): value (v, a), inner partial j (b[j], c[j])).
# Propagation through an elementwise rule y = g(x): y.a = g' x.a, y.b = g' x.b,
# y.c[j][k] = g' x.c[j][k] + g'' x.b[j] x.a[k]. cyad calls C functions with outer == 1.

ctypedef int (*cyad2_f64)(const double* x, const double* dx, double* y, double* dy,
                          Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t outer, Py_ssize_t inner,
                          void* context) noexcept nogil

ctypedef int (*cyad2_f32)(const float* x, const float* dx, float* y, float* dy,
                          Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t outer, Py_ssize_t inner,
                          void* context) noexcept nogil

# A type-erased function (a FunctionWrapper's): one pointer per dtype and order it
# supports (NULL where it does not), and the context to pass each of them.
ctypedef struct cyad_function:
    cyad_f64 f64
    cyad_f32 f32
    cyad2_f64 second_f64
    cyad2_f32 second_f32
    void* context
