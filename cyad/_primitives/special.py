"""scipy.special's ufuncs of three operands: betainc(a, b, x) and betaincc(a, b, x).

They are differentiable in x alone (their derivatives in a and b have no closed form):
d/dx I_x(a, b) = x**(a-1) (1-x)**(b-1) / B(a, b), written with scipy.special's xlogy,
xlog1py and betaln (rules of the rule table), so that the rule composes to any order.
A dual or traced a or b is refused with an error naming the function. At x = 0 the
derivative is that formula's limit: +inf for a < 1, b for a = 1, 0 for a > 1 (likewise
at x = 1 with b).

The entries are in ``NAMED`` (cyad does not import SciPy); the SciPy module is imported
here only when a rule runs, that is after the caller called one of its ufuncs.
"""
import numpy as np

from cyad._primitives._table import (
    is_engine_array,
    lanes_padded,
    named_primitive,
    ndim_of,
    shape_of,
    unbroadcast,
)


def _special():
    import scipy.special

    return scipy.special


def _betainc_dx(a, b, x):
    sc = _special()
    return np.exp(sc.xlogy(a - 1.0, x) + sc.xlog1py(b - 1.0, -x) - sc.betaln(a, b))


def _incomplete_beta(name, sign):
    class incomplete_beta:
        note = "differentiable in x only (a and b constants)"

        def bind(a, b, x):
            if is_engine_array(a) or is_engine_array(b):
                raise TypeError(f"cyad: scipy.special.{name} is differentiable in x (its third "
                                "argument) only; a and b must be constants, not dual or traced "
                                "arrays")
            return (x,), {"a": a, "b": b}

        def impl(x, *, a, b):
            return getattr(_special(), name)(a, b, x)

        def jvp(primals, tangents, *, a, b):
            (x,), (t,) = primals, tangents
            d = sign * _betainc_dx(a, b, x)
            return getattr(_special(), name)(a, b, x), lanes_padded(t, ndim_of(d)) * d

        def vjp(primals, ct, *, a, b):
            (x,) = primals
            return (unbroadcast(ct * (sign * _betainc_dx(a, b, x)), shape_of(x)),)

    incomplete_beta.__name__ = name
    return incomplete_beta


named_primitive("scipy.special.betainc")(_incomplete_beta("betainc", 1.0))
named_primitive("scipy.special.betaincc")(_incomplete_beta("betaincc", -1.0))
