"""cyad's public C-level calls of a prep: the nogil entry points behind `cimport cyad`.

A downstream module sees an opaque `cyad_prep` handle (cyad/_api.pxd); here it is
the prep's engine-neutral `prep_header` (cyad/_prep.pxd). Each entry point checks
that the prep answers it (its family's ENTRY_* bit and dtype, else WRONG_CALL),
claims the prep (PREP_BUSY if another call holds it), checks the outputs and copies
the inputs they overlap (protect_inputs), makes the engine's one call through the
handle's `run` pointer, and releases the prep.
"""
from cyad._prep cimport (prep_header, claim, release, protect_inputs, Prep, DTYPE_SHIFT,
                         ENTRY_PUSHFORWARD, ENTRY_GRADIENT, ENTRY_JACOBIAN, ENTRY_HVP,
                         ENTRY_HESSIAN)
from cyad._wrapper cimport wrap as _wrap


cdef cyad_prep* prep_handle(object prep) except NULL:
    """The handle the nogil entry points take; the prep must outlive its use."""
    if not isinstance(prep, Prep):
        raise TypeError(f"cyad: prep must come from a prepare_* function, not "
                        f"{type(prep).__name__}")
    if (<Prep>prep).out_shape is None:
        raise ValueError("cyad: this prep does not know f's output yet: call the operator once "
                         "from Python first")
    return <cyad_prep*>(<Prep>prep).handle


cdef int raise_status(object prep, int status) except -1:
    prep.raise_for_status(status)
    return 0


cdef object wrap(cyad_f64 f64, cyad_f32 f32, void* context, object out_shape=None,
                 object owner=None, cyad2_f64 second_f64=NULL, cyad2_f32 second_f32=NULL):
    return _wrap(f64, f32, context, out_shape, owner, second_f64, second_f32)


cdef inline int enter_call(prep_header* h, real* kind, unsigned entry) noexcept nogil:
    # 0 if the prep answers the entry point in this dtype and is now the caller's
    if not (h.entries & (entry << DTYPE_SHIFT if real is float else entry)):
        return WRONG_CALL
    if not claim(&h.busy):
        return PREP_BUSY
    return 0


cdef inline int run(prep_header* h, const void* x, const void* const* tangents, void* y,
                    void* value, void* first, void** results) noexcept nogil:
    # the engine's call on protected inputs, then the prep's release
    cdef int status = protect_inputs(h, &x, &tangents, y, value, first, results)
    if status == 0:
        status = h.run(h, x, tangents, y, value, first, results)
    release(&h.busy)
    return status


cdef int pushforward_nogil(cyad_prep* p, const real* x, const real* dx, real* y,
                           real* out) noexcept nogil:
    """out = J(x) @ dx, for a prep of one tangent."""
    cdef prep_header* h = <prep_header*>p
    cdef int status = enter_call(h, out, ENTRY_PUSHFORWARD)
    if status != 0:
        return status
    return run(h, x, <const void* const*>&dx, y, NULL, NULL, <void**>&out)


cdef int value_and_pushforward_nogil(cyad_prep* p, const real* x, const real* dx, real* y,
                                     real* value, real* out) noexcept nogil:
    """value = f(x) and out = J(x) @ dx, for a prep of one tangent."""
    cdef prep_header* h = <prep_header*>p
    cdef int status = enter_call(h, out, ENTRY_PUSHFORWARD)
    if status != 0:
        return status
    return run(h, x, <const void* const*>&dx, y, value, NULL, <void**>&out)


cdef int gradient_nogil(cyad_prep* p, const real* x, real* y, real* value,
                        real* gradient) noexcept nogil:
    """gradient = the gradient of a scalar-valued f at x; value = f(x) (may be NULL)."""
    cdef prep_header* h = <prep_header*>p
    cdef int status = enter_call(h, gradient, ENTRY_GRADIENT)
    if status != 0:
        return status
    return run(h, x, NULL, y, value, NULL, <void**>&gradient)


cdef int jacobian_nogil(cyad_prep* p, const real* x, real* y, real* value,
                        real* jacobian) noexcept nogil:
    """jacobian = J(x), n_y x n_x row-major; value = f(x) (may be NULL)."""
    cdef prep_header* h = <prep_header*>p
    cdef int status = enter_call(h, jacobian, ENTRY_JACOBIAN)
    if status != 0:
        return status
    return run(h, x, NULL, y, value, NULL, <void**>&jacobian)


cdef int hvp_nogil(cyad_prep* p, const real* x, const real* v, real* y, real* gradient,
                   real* out) noexcept nogil:
    """out = H(x) @ v for a scalar-valued f and a prep of one tangent; gradient may be NULL."""
    cdef prep_header* h = <prep_header*>p
    cdef int status = enter_call(h, out, ENTRY_HVP)
    if status != 0:
        return status
    return run(h, x, <const void* const*>&v, y, NULL, gradient, <void**>&out)


cdef int hessian_nogil(cyad_prep* p, const real* x, real* y, real* value, real* gradient,
                       real* hessian) noexcept nogil:
    """hessian = H(x), n_x x n_x row-major; value and gradient may be NULL."""
    cdef prep_header* h = <prep_header*>p
    cdef int status = enter_call(h, hessian, ENTRY_HESSIAN)
    if status != 0:
        return status
    return run(h, x, NULL, y, value, gradient, <void**>&hessian)
