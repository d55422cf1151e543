"""cyad's public C-level calls of a prep: the handle behind `cimport cyad`.

A downstream module sees a `cyad_prep` handle whose only public part is its table of
nogil entry points (cyad/_api.pxd); here it is the prep's engine-neutral
`prep_header` (cyad/_prep.pxd), which starts with that table. The prep fills the table
(Prep.set_output): its engine's function in every slot the prep answers, a refusal
elsewhere. The entry points themselves are inline in cyad/_api.pxd, so that a
downstream call makes one indirect call, straight into the engine.
"""
from cyad._prep cimport Prep
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
