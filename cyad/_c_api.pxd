# cyad's public C-level calls of a prep (cimported by cyad/__init__.pxd): the handle, its
# table of entry points, the statuses, the nogil entry points. Nothing here exposes a
# cdef class or the state of a prep or an engine, so that what a downstream module
# compiles against stays fixed while the preps and the engines behind them change.
#
# Like numpy.random's bitgen_t, a handle starts with a public struct of function
# pointers: cyad_entry_points, one per entry point and dtype. The *_nogil functions
# below are inline: compiled into the calling module, each makes one indirect call
# through that table into cyad, where the prep's engine has a function for every entry
# point the prep answers (claim, checks, overlap protection and the engine's work in
# one), and a refusal (WRONG_CALL) in every other slot. The table only grows, at its
# end: a module built against one release calls the slots it knows, which keep their
# place and meaning in every later release.

from cyad._fused cimport real
from cyad._signatures cimport cyad_f64, cyad_f32, cyad2_f64, cyad2_f32, cyad_function

cdef extern from *:
    """
    typedef struct cyad_prep cyad_prep;

    /* The nogil entry points of a prep, one per entry point and dtype: append-only. */
    typedef struct cyad_entry_points {
        int (*pushforward_f64)(cyad_prep *p, const double *x, const double *dx, double *y,
                               double *out);
        int (*pushforward_f32)(cyad_prep *p, const float *x, const float *dx, float *y,
                               float *out);
        int (*value_and_pushforward_f64)(cyad_prep *p, const double *x, const double *dx,
                                         double *y, double *value, double *out);
        int (*value_and_pushforward_f32)(cyad_prep *p, const float *x, const float *dx,
                                         float *y, float *value, float *out);
        int (*gradient_f64)(cyad_prep *p, const double *x, double *y, double *value,
                            double *gradient);
        int (*gradient_f32)(cyad_prep *p, const float *x, float *y, float *value,
                            float *gradient);
        int (*jacobian_f64)(cyad_prep *p, const double *x, double *y, double *value,
                            double *jacobian);
        int (*jacobian_f32)(cyad_prep *p, const float *x, float *y, float *value,
                            float *jacobian);
        int (*hvp_f64)(cyad_prep *p, const double *x, const double *v, double *y,
                       double *gradient, double *out);
        int (*hvp_f32)(cyad_prep *p, const float *x, const float *v, float *y,
                       float *gradient, float *out);
        int (*hessian_f64)(cyad_prep *p, const double *x, double *y, double *value,
                           double *gradient, double *hessian);
        int (*hessian_f32)(cyad_prep *p, const float *x, float *y, float *value,
                           float *gradient, float *hessian);
        int (*pullback_f64)(cyad_prep *p, const double *x, const double *dy, double *y,
                            double *out);
        int (*pullback_f32)(cyad_prep *p, const float *x, const float *dy, float *y,
                            float *out);
        int (*value_and_pullback_f64)(cyad_prep *p, const double *x, const double *dy,
                                      double *y, double *value, double *out);
        int (*value_and_pullback_f32)(cyad_prep *p, const float *x, const float *dy,
                                      float *y, float *value, float *out);
    } cyad_entry_points;

    /* A prep's handle: the table, then cyad's private state (made by cyad only). */
    struct cyad_prep {
        cyad_entry_points entry_points;
    };
    """
    ctypedef struct cyad_prep
    ctypedef struct cyad_entry_points:
        int (*pushforward_f64)(cyad_prep* p, const double* x, const double* dx, double* y,
                               double* out) noexcept nogil
        int (*pushforward_f32)(cyad_prep* p, const float* x, const float* dx, float* y,
                               float* out) noexcept nogil
        int (*value_and_pushforward_f64)(cyad_prep* p, const double* x, const double* dx,
                                         double* y, double* value, double* out) noexcept nogil
        int (*value_and_pushforward_f32)(cyad_prep* p, const float* x, const float* dx,
                                         float* y, float* value, float* out) noexcept nogil
        int (*gradient_f64)(cyad_prep* p, const double* x, double* y, double* value,
                            double* gradient) noexcept nogil
        int (*gradient_f32)(cyad_prep* p, const float* x, float* y, float* value,
                            float* gradient) noexcept nogil
        int (*jacobian_f64)(cyad_prep* p, const double* x, double* y, double* value,
                            double* jacobian) noexcept nogil
        int (*jacobian_f32)(cyad_prep* p, const float* x, float* y, float* value,
                            float* jacobian) noexcept nogil
        int (*hvp_f64)(cyad_prep* p, const double* x, const double* v, double* y,
                       double* gradient, double* out) noexcept nogil
        int (*hvp_f32)(cyad_prep* p, const float* x, const float* v, float* y,
                       float* gradient, float* out) noexcept nogil
        int (*hessian_f64)(cyad_prep* p, const double* x, double* y, double* value,
                           double* gradient, double* hessian) noexcept nogil
        int (*hessian_f32)(cyad_prep* p, const float* x, float* y, float* value,
                           float* gradient, float* hessian) noexcept nogil
        int (*pullback_f64)(cyad_prep* p, const double* x, const double* dy, double* y,
                            double* out) noexcept nogil
        int (*pullback_f32)(cyad_prep* p, const float* x, const float* dy, float* y,
                            float* out) noexcept nogil
        int (*value_and_pullback_f64)(cyad_prep* p, const double* x, const double* dy,
                                      double* y, double* value, double* out) noexcept nogil
        int (*value_and_pullback_f32)(cyad_prep* p, const float* x, const float* dy,
                                      float* y, float* value, float* out) noexcept nogil
    ctypedef struct cyad_prep:
        cyad_entry_points entry_points

# Statuses of the entry points besides 0 (success) and the function's own nonzero ones.
cpdef enum:
    PYTHON_ERROR = -1          # the Python callable raised; the prep keeps the exception
    WRONG_CALL = -2            # an entry point of another dtype or operator than the prep's
    PREP_BUSY = -3             # another call is running on the prep (another thread, or f)
    OVERLAPPING_OUTPUTS = -4   # two outputs share memory (f's value may only be y itself)
    NO_MEMORY = -5             # no memory for copies of the inputs that overlap an output

# The handle of a prep made by cyad.prepare_* (raises ValueError until it knows f's output).
cdef cyad_prep* prep_handle(object prep) except NULL
# Raise what a nonzero status reports, as prep.raise_for_status(status) does.
cdef int raise_status(object prep, int status) except -1
# A FunctionWrapper of C functions of cyad's signatures (at least one non-NULL).
cdef object wrap(cyad_f64 f64, cyad_f32 f32, void* context, object out_shape=*,
                 object owner=*, cyad2_f64 second_f64=*, cyad2_f32 second_f32=*)
# The C functions of a FunctionWrapper of C functions (cyad.record's among them): valid
# while the wrapper lives. Call one as f.f64(x, dx, y, dy, n_x, n_y, width, f.context).
cdef const cyad_function* function_of(object wrapper) except NULL
# Raise what a nonzero status of a wrapper's C function reports: a recorded function's
# PYTHON_ERROR raises the exception kept for the calling thread; any other status
# cyad.FunctionError.
cdef int raise_function_status(object wrapper, int status) except -1


# -- the nogil entry points: one call through the handle's table --------------------------

cdef inline int pushforward_nogil(cyad_prep* p, const real* x, const real* dx, real* y,
                                  real* out) noexcept nogil:
    """out = J(x) @ dx, for a prep of one tangent."""
    if real is double:
        return p.entry_points.pushforward_f64(p, x, dx, y, out)
    else:
        return p.entry_points.pushforward_f32(p, x, dx, y, out)


cdef inline int value_and_pushforward_nogil(cyad_prep* p, const real* x, const real* dx,
                                            real* y, real* value, real* out) noexcept nogil:
    """value = f(x) and out = J(x) @ dx, for a prep of one tangent."""
    if real is double:
        return p.entry_points.value_and_pushforward_f64(p, x, dx, y, value, out)
    else:
        return p.entry_points.value_and_pushforward_f32(p, x, dx, y, value, out)


cdef inline int gradient_nogil(cyad_prep* p, const real* x, real* y, real* value,
                               real* gradient) noexcept nogil:
    """gradient = the gradient of a scalar-valued f at x; value = f(x) (may be NULL)."""
    if real is double:
        return p.entry_points.gradient_f64(p, x, y, value, gradient)
    else:
        return p.entry_points.gradient_f32(p, x, y, value, gradient)


cdef inline int jacobian_nogil(cyad_prep* p, const real* x, real* y, real* value,
                               real* jacobian) noexcept nogil:
    """jacobian = J(x), n_y x n_x row-major; value = f(x) (may be NULL)."""
    if real is double:
        return p.entry_points.jacobian_f64(p, x, y, value, jacobian)
    else:
        return p.entry_points.jacobian_f32(p, x, y, value, jacobian)


cdef inline int hvp_nogil(cyad_prep* p, const real* x, const real* v, real* y, real* gradient,
                          real* out) noexcept nogil:
    """out = H(x) @ v for a scalar-valued f and a prep of one tangent; gradient may be NULL."""
    if real is double:
        return p.entry_points.hvp_f64(p, x, v, y, gradient, out)
    else:
        return p.entry_points.hvp_f32(p, x, v, y, gradient, out)


cdef inline int hessian_nogil(cyad_prep* p, const real* x, real* y, real* value, real* gradient,
                              real* hessian) noexcept nogil:
    """hessian = H(x), n_x x n_x row-major; value and gradient may be NULL."""
    if real is double:
        return p.entry_points.hessian_f64(p, x, y, value, gradient, hessian)
    else:
        return p.entry_points.hessian_f32(p, x, y, value, gradient, hessian)


cdef inline int pullback_nogil(cyad_prep* p, const real* x, const real* dy, real* y,
                               real* out) noexcept nogil:
    """out = dy @ J(x), shaped like x, for a prep of one cotangent (dy shaped like f(x))."""
    if real is double:
        return p.entry_points.pullback_f64(p, x, dy, y, out)
    else:
        return p.entry_points.pullback_f32(p, x, dy, y, out)


cdef inline int value_and_pullback_nogil(cyad_prep* p, const real* x, const real* dy,
                                         real* y, real* value, real* out) noexcept nogil:
    """value = f(x) and out = dy @ J(x), for a prep of one cotangent."""
    if real is double:
        return p.entry_points.value_and_pullback_f64(p, x, dy, y, value, out)
    else:
        return p.entry_points.value_and_pullback_f32(p, x, dy, y, value, out)
