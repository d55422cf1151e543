"""cyad's public C-level calls of a prep: the handle behind `cimport cyad`.

A downstream module sees a `cyad_prep` handle whose only public part is its table of
nogil entry points (cyad/_c_api.pxd); here it is the prep's engine-neutral
`prep_header` (cyad/_core.pxd), which starts with that table. The prep fills the table
(Prep.set_output): its engine's function in every slot the prep answers, a refusal
elsewhere. The entry points themselves are inline in cyad/_c_api.pxd, so that a
downstream call makes one indirect call, straight into the engine.
"""
from cyad._c_api cimport PYTHON_ERROR
from cyad._core cimport Prep
from cyad._wrapper cimport FunctionWrapper, wrap as _wrap
from cyad._wrapper import FunctionError


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


cdef const cyad_function* function_of(object wrapper) except NULL:
    cdef FunctionWrapper w
    if not isinstance(wrapper, FunctionWrapper):
        raise TypeError(f"cyad: function_of takes a FunctionWrapper, not "
                        f"{type(wrapper).__name__}")
    w = <FunctionWrapper>wrapper
    if w.callable is not None:
        raise TypeError("cyad: a wrapped Python callable has no C function; record it with "
                        "cyad.record(f, x)")
    return &w.function


cdef int raise_function_status(object wrapper, int status) except -1:
    if status == 0:
        return 0
    if status == PYTHON_ERROR and isinstance(wrapper, FunctionWrapper):
        tape = (<FunctionWrapper>wrapper).tape
        error = None if tape is None else tape.take_error()
        if error is not None:
            raise error
    raise FunctionError(status)
