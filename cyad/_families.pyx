"""The preps of the operator families: one small subclass of the engine-neutral `Prep`
(cyad/_core.pyx) per family, answering what differs between families: whether a call takes
tangents shaped like x, or cotangents shaped like f's output (a pullback), or neither (the
engine seeds basis directions of x), its results' shapes and names, the nogil entry points
it serves, and whether f must be scalar-valued.
"""
import numpy as np

from cyad._core cimport (Prep, PUSHFORWARD, DERIVATIVE, GRADIENT, JACOBIAN, SECOND_DERIVATIVE,
                         HVP, HESSIAN, PULLBACK, ENTRY_PUSHFORWARD, ENTRY_GRADIENT,
                         ENTRY_JACOBIAN, ENTRY_HVP, ENTRY_HESSIAN, ENTRY_PULLBACK)
from cyad._core import _FAMILY_NAMES
from cyad._hints import not_scalar


# -- the families --------------------------------------------------------------------------
#
# Each is made from the operator's own arguments: f, x, the tangent(s) v of a pushforward or
# hvp (None for the others), y, chunk and engine.

cdef Py_ssize_t _count(object v):
    # the tangents of a call: a tuple is a batch
    return len(<tuple>v) if isinstance(v, tuple) else 1


cdef _check_scalar(str operator, object x):
    if np.ndim(x) != 0:
        raise ValueError(f"cyad: {operator} takes a scalar x, not an array of shape "
                         f"{np.shape(x)}; use pushforward or jacobian (hvp or hessian) for "
                         "arrays")


cdef class PushforwardPrep(Prep):
    """The prep of `pushforward` and `value_and_pushforward`: J(x) @ each tangent."""

    def __init__(self, f, x, v=None, y=None, chunk=None, engine=None):
        self.family = PUSHFORWARD
        self.order = 1
        Prep.__init__(self, f, x, _count(v), y, chunk, engine)

    cdef bint takes_tangents(self):
        return True

    cdef unsigned nogil_entries(self):
        return ENTRY_PUSHFORWARD if self.handle.results == 1 else 0

    cdef str result_name(self):
        return "the tangent output"


cdef class PullbackPrep(Prep):
    """The prep of `pullback` and `value_and_pullback`: each cotangent @ J(x), shaped like
    x."""

    def __init__(self, f, x, v=None, y=None, chunk=None, engine=None):
        self.family = PULLBACK   # before the base's __init__, which sets up the engine
        self.order = 1
        Prep.__init__(self, f, x, _count(v), y, chunk, engine)

    cdef bint takes_cotangents(self):
        return True

    cdef tuple shape_of_result(self, tuple out_shape):
        return self.x_shape

    cdef unsigned nogil_entries(self):
        return ENTRY_PULLBACK if self.handle.results == 1 else 0

    cdef str result_name(self):
        return "the pullback output"


cdef class DerivativePrep(PushforwardPrep):
    """The prep of `derivative` and `value_and_derivative`: the pushforward of a scalar x
    along the tangent 1."""

    def __init__(self, f, x, v=None, y=None, chunk=None, engine=None):
        _check_scalar("derivative", x)
        self.family = DERIVATIVE   # before the base's __init__, which sets up the engine
        self.order = 1
        Prep.__init__(self, f, x, 1, y, chunk, engine)

    cdef str result_name(self):
        return "the derivative output"


cdef class JacobianPrep(Prep):
    """The prep of `jacobian` and `value_and_jacobian`: J(x), a chunk of basis directions
    per evaluation."""

    def __init__(self, f, x, v=None, y=None, chunk=None, engine=None):
        self.family = JACOBIAN
        self.order = 1
        Prep.__init__(self, f, x, np.size(x), y, chunk, engine)

    cdef tuple shape_of_result(self, tuple out_shape):
        return out_shape + self.x_shape

    cdef unsigned nogil_entries(self):
        return ENTRY_JACOBIAN | (ENTRY_GRADIENT if self.handle.n_y == 1 else 0)

    cdef str result_name(self):
        return "the Jacobian output"


cdef class GradientPrep(JacobianPrep):
    """The prep of `gradient` and `value_and_gradient`: the Jacobian of a scalar-valued f."""

    def __init__(self, f, x, v=None, y=None, chunk=None, engine=None):
        self.family = GRADIENT   # before the base's __init__, which sets up the engine
        self.order = 1
        Prep.__init__(self, f, x, np.size(x), y, chunk, engine)

    cdef check_output_shape(self, tuple shape):
        if shape != ():
            raise not_scalar("gradient", shape, self.two_argument, "; use jacobian")

    cdef str result_name(self):
        return "the gradient output"


cdef class SecondDerivativePrep(Prep):
    """The prep of `second_derivative` and `value_derivative_and_second_derivative` at a
    scalar x."""

    def __init__(self, f, x, v=None, y=None, chunk=None, engine=None):
        _check_scalar("second_derivative", x)
        self.family = SECOND_DERIVATIVE
        self.order = 2
        Prep.__init__(self, f, x, 1, y, chunk, engine)

    cdef tuple shape_of_first(self, tuple out_shape):
        return out_shape

    cdef str result_name(self):
        return "the second-derivative output"

    cdef str first_name(self):
        return "the derivative output"


cdef class _ScalarSecondOrderPrep(Prep):
    # hvp and hessian: second order of a scalar-valued f, whose first-order result is the
    # gradient

    cdef tuple shape_of_first(self, tuple out_shape):
        return self.x_shape

    cdef str first_name(self):
        return "the gradient output"

    cdef check_output_shape(self, tuple shape):
        if shape != ():
            raise not_scalar(_FAMILY_NAMES[self.family], shape, self.two_argument)


cdef class HvpPrep(_ScalarSecondOrderPrep):
    """The prep of `hvp` and `gradient_and_hvp`: H(x) @ each tangent."""

    def __init__(self, f, x, v=None, y=None, chunk=None, engine=None):
        self.family = HVP
        self.order = 2
        Prep.__init__(self, f, x, _count(v), y, chunk, engine)

    cdef bint takes_tangents(self):
        return True

    cdef tuple shape_of_result(self, tuple out_shape):
        return self.x_shape

    cdef unsigned nogil_entries(self):
        return ENTRY_HVP if self.handle.results == 1 else 0

    cdef str result_name(self):
        return "the hvp output"

    cdef str batch_name(self):
        return "the hvp output"

    cdef str batch_item_name(self):
        return "the hvp output"


cdef class HessianPrep(_ScalarSecondOrderPrep):
    """The prep of `hessian` and `value_gradient_and_hessian`: a chunk of basis directions
    at each of two levels per evaluation, half of the symmetric Hessian computed."""

    def __init__(self, f, x, v=None, y=None, chunk=None, engine=None):
        self.family = HESSIAN
        self.order = 2
        Prep.__init__(self, f, x, np.size(x), y, chunk, engine)

    cdef bint symmetric(self):
        return True

    cdef tuple shape_of_result(self, tuple out_shape):
        return self.x_shape + self.x_shape

    cdef unsigned nogil_entries(self):
        return ENTRY_HESSIAN

    cdef str result_name(self):
        return "the Hessian output"

    cdef str out_name(self):
        return "the Hessian output"


# The prep class of each family
PREP_TYPES = {PUSHFORWARD: PushforwardPrep, DERIVATIVE: DerivativePrep,
              GRADIENT: GradientPrep, JACOBIAN: JacobianPrep,
              SECOND_DERIVATIVE: SecondDerivativePrep, HVP: HvpPrep, HESSIAN: HessianPrep,
              PULLBACK: PullbackPrep}
