"""scipy.special's ufuncs beyond the rule table's one and two operands: betainc(a, b, x),
betaincc(a, b, x), hyp2f1(a, b, c, z) and log_wright_bessel(a, b, x), and the four results
of airy(x) and airye(x).

betainc and betaincc are differentiable in x alone (their derivatives in a and b have no
closed form): d/dx I_x(a, b) = x**(a-1) (1-x)**(b-1) / B(a, b), written with
scipy.special's xlogy, xlog1py and betaln (rules of the rule table), so that the rule
composes to any order. At x = 0 the derivative is that formula's limit: +inf for a < 1,
b for a = 1, 0 for a > 1 (likewise at x = 1 with b). hyp2f1 is differentiable in z alone:
d/dz 2F1(a, b; c; z) = (a b / c) 2F1(a + 1, b + 1; c + 1; z), hyp2f1 itself. A dual or
traced parameter is refused with an error naming the function. log_wright_bessel(a, b, x)
(statsmodels' Tweedie likelihood) likewise in x: d/dx Phi(a, b; x) = Phi(a, a + b; x), so
its derivative is exp(log_wright_bessel(a, a + b, x) - log_wright_bessel(a, b, x)).

airy(x) gives (Ai, Ai', Bi, Bi'), whose derivatives are (Ai', x Ai, Bi', x Bi) (Airy's
equation y'' = x y); airye(x) scales them for x >= 0, Ai and Ai' by e**z, Bi and Bi' by
e**-z with z = (2/3) x**(3/2), which adds sqrt(x) times the scaled function (Ai's: NaN for
x < 0, as its values; Bi's unscaled there).

The entries are in ``NAMED`` (cyad does not import SciPy); the SciPy module is imported
here only when a rule runs, that is after the caller called one of its ufuncs.

`elliptic_partial(phi, m, order, kind)` is the partial of order >= 1 in m of the incomplete
elliptic integral F(phi|m) (kind 1, scipy.special.ellipkinc) or E(phi|m) (kind -1,
ellipeinc), as a custom function whose JVP is the next order's partial (in m) and the
derivative of the integrand (in phi): the rule table's partials of ellipkinc and ellipeinc
in m composed (cyad/_rules/derivatives.py), to any order. Its values are those of the rule
table's columns (cyad/_rules/special_kernels.pyx) at orders 1 and 2 (Carlson's R_D; the
closed form or a Gauss-Legendre quadrature); beyond, a 64-point Gauss-Legendre quadrature
of the integrand's partial, (-q)_k sin**2k (1 - m sin**2)**(q - k) with q = -1/2 (F) or
1/2 (E), good while 1 - m sin(phi)**2 stays away from 0; each period pi of phi adds twice
the complete integral's partial, a hypergeometric function (K = (pi/2) 2F1(1/2, 1/2; 1; m),
E = (pi/2) 2F1(-1/2, 1/2; 1; m), and 2F1' = (a b / c) 2F1(a + 1, b + 1; c + 1)).
"""
import numpy as np

from cyad._primitives.custom import custom_derivative
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


def _hyp2f1_dz(a, b, c, z):
    return (a * b / c) * _special().hyp2f1(a + 1.0, b + 1.0, c + 1.0, z)


@named_primitive("scipy.special.hyp2f1")
class hyp2f1:
    note = "differentiable in z only (a, b and c constants)"

    def bind(a, b, c, z):
        if is_engine_array(a) or is_engine_array(b) or is_engine_array(c):
            raise TypeError("cyad: scipy.special.hyp2f1 is differentiable in z (its fourth "
                            "argument) only; a, b and c must be constants, not dual or traced "
                            "arrays")
        return (z,), {"a": a, "b": b, "c": c}

    def impl(z, *, a, b, c):
        return _special().hyp2f1(a, b, c, z)

    def jvp(primals, tangents, *, a, b, c):
        (z,), (t,) = primals, tangents
        d = _hyp2f1_dz(a, b, c, z)
        return _special().hyp2f1(a, b, c, z), lanes_padded(t, ndim_of(d)) * d

    def vjp(primals, ct, *, a, b, c):
        (z,) = primals
        return (unbroadcast(ct * _hyp2f1_dz(a, b, c, z), shape_of(z)),)


def _log_wright_bessel_dx(a, b, x):
    # d/dx Phi(a, b; x) = Phi(a, a + b; x), so d/dx log Phi(a, b; x) is the ratio of the two
    sc = _special()
    return np.exp(sc.log_wright_bessel(a, a + b, x) - sc.log_wright_bessel(a, b, x))


@named_primitive("scipy.special.log_wright_bessel")
class log_wright_bessel:
    note = "differentiable in x only (a and b constants)"

    def bind(a, b, x):
        if is_engine_array(a) or is_engine_array(b):
            raise TypeError("cyad: scipy.special.log_wright_bessel is differentiable in x (its "
                            "third argument) only; a and b must be constants, not dual or "
                            "traced arrays")
        return (x,), {"a": a, "b": b}

    def impl(x, *, a, b):
        return _special().log_wright_bessel(a, b, x)

    def jvp(primals, tangents, *, a, b):
        (x,), (t,) = primals, tangents
        d = _log_wright_bessel_dx(a, b, x)
        return _special().log_wright_bessel(a, b, x), lanes_padded(t, ndim_of(d)) * d

    def vjp(primals, ct, *, a, b):
        (x,) = primals
        return (unbroadcast(ct * _log_wright_bessel_dx(a, b, x), shape_of(x)),)


def _airy_partials(name, x):
    """The values of airy(x) (airye(x)) and their derivatives in x."""
    ai, aip, bi, bip = getattr(_special(), name)(x)
    if name == "airy":
        return (ai, aip, bi, bip), (aip, x * ai, bip, x * bi)
    # (below 0 the scale is 1: Bi's derivatives are airy's, Ai's NaN as its values)
    r = np.sqrt(np.maximum(x, 0.0))
    return (ai, aip, bi, bip), (aip + r * ai, x * ai + r * aip, bip - r * bi, x * bi - r * bip)


def _airy(name):
    class airy:
        note = ""

        def bind(x):
            return (x,), {}

        def impl(x):
            return tuple(getattr(_special(), name)(x))

        def jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            values, partials = _airy_partials(name, x)
            t = lanes_padded(t, ndim_of(x))
            return values, tuple(t * d for d in partials)

        def vjp(primals, ct):
            (x,) = primals
            _, partials = _airy_partials(name, x)
            terms = [c * d for c, d in zip(ct, partials) if c is not None]
            total = terms[0] if terms else np.zeros_like(x)
            for term in terms[1:]:
                total = total + term
            return (unbroadcast(total, shape_of(x)),)

    airy.__name__ = name
    return airy


named_primitive("scipy.special.airy")(_airy("airy"))
named_primitive("scipy.special.airye")(_airy("airye"))


# -- the partials in m of the incomplete elliptic integrals -------------------------------------

def _pochhammer(a, k):
    return float(np.prod([a + i for i in range(k)]))


def _gauss_legendre(integrand, r, n):
    # the integral over (0, r) of integrand(t), elementwise in r
    nodes, weights = np.polynomial.legendre.leggauss(n)
    t = 0.5 * r[..., None] * (nodes + 1.0)
    return 0.5 * r * np.sum(weights * integrand(t), axis=-1)


def _elliptic_partial_value(phi, m, order, kind):
    sc = _special()
    phi, m = np.broadcast_arrays(np.asarray(phi, np.float64), np.asarray(m, np.float64))
    q = -0.5 * kind
    with np.errstate(all="ignore"):
        periods = np.rint(phi / np.pi)
        r = phi - periods * np.pi
        s, c = np.sin(r), np.cos(r)
        delta = 1.0 - m * s * s
        if order == 1:
            first, last = (1.0, delta) if kind == 1 else (delta, 1.0)
            partial = kind * s ** 3 * sc.elliprd(c * c, first, last) / 6.0
        else:
            m_ = m[..., None]
            coefficient = _pochhammer(-q, order)
            small = np.abs(m) * s * s < 0.5
            partial = _gauss_legendre(lambda t: coefficient * np.sin(t) ** (2 * order)
                                      * (1.0 - m_ * np.sin(t) ** 2) ** (q - order), r,
                                      32 if order == 2 else 64)
            if order == 2:   # where it does not cancel, the closed form
                dm = _elliptic_partial_value(r, m, 1, kind)
                if kind == 1:
                    closed = (sc.ellipkinc(r, m) + 4.0 * (2.0 * m - 1.0) * dm
                              - s * c / (delta * np.sqrt(delta))) / (4.0 * m * (1.0 - m))
                else:
                    closed = -(_elliptic_partial_value(r, m, 1, 1) + dm) / (2.0 * m)
                partial = np.where(small, partial, closed)
        # the complete integral's partial, (pi/2) (a)_k (1/2)_k / k! 2F1(a + k, 1/2 + k; 1 + k; m)
        # with a = 1/2 (K) or -1/2 (E), twice per period
        if np.any(periods != 0.0):
            a = 0.5 if kind == 1 else -0.5
            complete = (np.pi / 2.0) * _pochhammer(a, order) * _pochhammer(0.5, order) \
                / _pochhammer(1.0, order) * sc.hyp2f1(a + order, 0.5 + order, 1.0 + order,
                                                       np.where(periods != 0.0, m, 0.0))
            partial = partial + np.where(periods != 0.0, 2.0 * periods * complete, 0.0)
    return partial[()] if partial.ndim == 0 else partial


def _elliptic_partial_of_phi(phi, m, order, kind):
    # d/dphi of the partial: the integrand's partial of that order at phi
    q = -0.5 * kind
    s2 = np.sin(phi) ** 2
    return _pochhammer(-q, order) * s2 ** order * (1.0 - m * s2) ** (q - order)


elliptic_partial = custom_derivative(_elliptic_partial_value, nondiff_argnames=("order", "kind"),
                                     lanes=True)


@elliptic_partial.defjvp
def _elliptic_partial_jvp(primals, tangents, *, order, kind):
    (phi, m), (t_phi, t_m) = primals, tangents
    value = elliptic_partial(phi, m, order, kind)
    ndim = ndim_of(value)
    tangent = None
    if t_phi is not None:
        tangent = lanes_padded(t_phi, ndim) * _elliptic_partial_of_phi(phi, m, order, kind)
    if t_m is not None:
        term = lanes_padded(t_m, ndim) * elliptic_partial(phi, m, order + 1, kind)
        tangent = term if tangent is None else tangent + term
    return value, tangent


@elliptic_partial.defvjp
def _elliptic_partial_vjp(primals, ct, *, order, kind):
    phi, m = primals
    return (unbroadcast(ct * _elliptic_partial_of_phi(phi, m, order, kind), shape_of(phi)),
            unbroadcast(ct * elliptic_partial(phi, m, order + 1, kind), shape_of(m)))
