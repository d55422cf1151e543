# cyad's public C-level calls of a prep (cimported by cyad/__init__.pxd): an opaque
# handle, the statuses, the nogil entry points. Nothing here exposes a struct's fields
# or a cdef class, so that what a downstream module compiles against stays fixed while
# the preps and the engines behind them change.

from cyad._fused cimport real
from cyad._signatures cimport cyad_f64, cyad_f32, cyad2_f64, cyad2_f32

# A prepared call's handle: a pointer to cyad's private state of one prep, valid while
# the prep lives. Its fields are not part of the API.
cdef extern from *:
    """
    typedef struct cyad_prep_opaque cyad_prep;
    """
    ctypedef struct cyad_prep:
        pass

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

cdef int pushforward_nogil(cyad_prep* p, const real* x, const real* dx, real* y,
                           real* out) noexcept nogil
cdef int value_and_pushforward_nogil(cyad_prep* p, const real* x, const real* dx, real* y,
                                     real* value, real* out) noexcept nogil
cdef int gradient_nogil(cyad_prep* p, const real* x, real* y, real* value,
                        real* gradient) noexcept nogil
cdef int jacobian_nogil(cyad_prep* p, const real* x, real* y, real* value,
                        real* jacobian) noexcept nogil
cdef int hvp_nogil(cyad_prep* p, const real* x, const real* v, real* y, real* gradient,
                   real* out) noexcept nogil
cdef int hessian_nogil(cyad_prep* p, const real* x, real* y, real* value, real* gradient,
                       real* hessian) noexcept nogil
