"""NumPy's elementwise functions that are not ufuncs, as compositions of ufuncs.

np.sinc is sin(pi x) / (pi x) away from 0 and its Maclaurin series near 0 (|pi x| < 1/2,
to the 20th power: below a rounding error there): so its value and derivatives at and
near 0 are exact to every order the engines take, with no 0/0 (JAX's convention: the
limits, sinc'(0) = 0, sinc''(0) = -pi^2/3).

np.nan_to_num replaces NaN and infinities by constants: where x is NaN or infinite (read
off its values, at every call) the result is that constant, with derivative 0 (NaN and
infinities have no derivative); elsewhere it is x. The replacements are differentiated
where they are cyad's arrays.

The ufuncs of two outputs or of integer operands are made of the rule table's ufuncs:
np.modf (x - trunc(x) and trunc(x)), np.divmod (floor_divide and remainder), np.ldexp
(x times powers of two, the integer exponents constants) and np.frexp (x / 2**e, the
exponents e read off the values: an engine that records f checks them on every replay).
Their values are NumPy's, bit for bit, signed zeros and infinities included.

np.i0 is its power series in x**2 for |x| <= 8 (even and smooth through 0: I0''(0) = 1/2
at every order) and NumPy's Chebyshev series beyond; its values are within a few units in
the last place of NumPy's.
"""
import math

import numpy as np

from cyad._primitives._table import composition, float_dtype_of, is_engine_array
from cyad._primitives.custom import value_only

# sin(u) / u = sum over k of (-1)^k u^(2k) / (2k + 1)!, from the highest power down
_SINC_SERIES = tuple((-1) ** k / math.factorial(2 * k + 1) for k in reversed(range(11)))
_SERIES_RADIUS = 0.5


@composition(np.sinc)
def _sinc(x):
    if not is_engine_array(x):
        return np.sinc(x)
    u = np.pi * x
    near = (u < _SERIES_RADIUS) & (u > -_SERIES_RADIUS)
    small = np.where(near, u, 0.0)   # (no overflow of the series far out)
    w = small * small
    series = _SINC_SERIES[0]
    for coefficient in _SINC_SERIES[1:]:
        series = series * w + coefficient
    safe = np.where(near, 1.0, u)   # no 0/0 where the series stands
    return np.where(near, series, np.sin(safe) / safe)


@composition(np.nan_to_num)
def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    if not is_engine_array(x):
        return np.nan_to_num(x, copy=copy, nan=nan, posinf=posinf, neginf=neginf)
    info = np.finfo(x.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    result = np.where(np.isnan(x), nan, x)
    result = np.where(x == np.inf, posinf, result)
    result = np.where(x == -np.inf, neginf, result)
    if copy:
        return result
    x[...] = result
    return x


# -- ufuncs of two outputs or of integer operands, made of the rule table's ------------------

@composition(np.modf)
def _modf(x, /):
    """(x - trunc(x), trunc(x)), the fractional part with x's sign (-0.0 for a negative
    whole number, as NumPy's) and 0 at the infinities: its derivative is 1 (0 at the
    infinities), the whole part's 0."""
    if not is_engine_array(x):
        return np.modf(x)
    sign = np.copysign(1.0, x)   # (a constant: copysign's derivative in its second operand is 0)
    magnitude = np.where(np.isinf(x), 0.0, sign * x)
    return sign * (magnitude - np.trunc(magnitude)), np.trunc(x)


def _exponents(x):
    return np.frexp(x)[1]


# the binary exponents of x's values, read off them (an engine that records f checks them
# on every replay)
_frexp_exponents = value_only(_exponents)


@composition(np.frexp)
def _frexp(x, /):
    """(x / 2**e, e), the exponents e read off the values (integers, without derivative):
    the mantissa's derivative is 2**-e."""
    if not is_engine_array(x):
        return np.frexp(x)
    exponents = _frexp_exponents(x)
    return np.ldexp(x, -exponents), exponents


def _powers_of_two(exponents, dtype):
    """The factors whose product is 2**exponents in dtype, each a power of two in dtype's
    range (2**1100 is not a float64, though ldexp(2**-100, 1100) is one), in the order that
    multiplies x by them exactly as ldexp would: the main factor, in range, last (so that
    only the last product rounds, where the result is subnormal). Plain arrays."""
    info = np.finfo(dtype)
    exponents = np.asarray(exponents)
    if exponents.dtype.kind not in "biu":
        raise TypeError("cyad: numpy.ldexp's exponents are integers (a plain integer array or "
                        f"number), not {exponents.dtype}")
    lowest, highest = info.minexp - info.nmant, info.maxexp - 1
    # beyond these every finite x goes to 0 or to infinity
    rest = np.clip(exponents.astype(np.int64), lowest - highest - 1, highest - lowest + 1)
    factors = []
    while not factors or np.any(rest != 0):
        part = np.clip(rest, lowest, highest)
        factors.insert(0, np.ldexp(np.ones((), dtype), part))
        rest = rest - part
    return factors


@composition(np.ldexp)
class _ldexp:
    """x1 * 2**x2 for integer exponents x2 (constants): exact, as NumPy's."""

    note = "differentiable in x1 (the exponents x2 are integers)"

    def impl(x1, x2, /):
        if is_engine_array(x2):
            raise TypeError("cyad: numpy.ldexp's exponents x2 are integers, which carry no "
                            "derivative: pass them as a plain integer array")
        if not is_engine_array(x1):
            return np.ldexp(x1, x2)
        for factor in _powers_of_two(x2, float_dtype_of(x1)):
            x1 = x1 * factor
        return x1


@composition(np.divmod)
def _divmod(x1, x2, /):
    """(np.floor_divide(x1, x2), np.remainder(x1, x2)), NumPy's values: the quotient's
    derivative is 0, the remainder's 1 in x1 and -quotient in x2."""
    return np.floor_divide(x1, x2), np.remainder(x1, x2)


# -- Bessel's I0 --------------------------------------------------------------------------------

# I0(x) = sum over k of (x**2 / 4)**k / (k!)**2, from the highest power down: to k = 24 the
# terms left out are below 1e-22 of the sum for |x| <= 8
_I0_SERIES = tuple(1.0 / math.factorial(k) ** 2 for k in reversed(range(25)))
_I0_SERIES_RADIUS = 8.0
# NumPy's (Cephes') Chebyshev coefficients of exp(-x) sqrt(x) I0(x) in 32 / x - 2, for x > 8
_I0_CHEBYSHEV = (
    -7.233180487874754e-18, -4.830504485944182e-18, 4.46562142029676e-17,
    3.461222867697461e-17, -2.8276239805165836e-16, -3.425485619677219e-16,
    1.7725601330565263e-15, 3.8116806693526224e-15, -9.554846698828307e-15,
    -4.150569347287222e-14, 1.54008621752141e-14, 3.8527783827421426e-13,
    7.180124451383666e-13, -1.7941785315068062e-12, -1.3215811840447713e-11,
    -3.1499165279632416e-11, 1.1889147107846439e-11, 4.94060238822497e-10,
    3.3962320257083865e-09, 2.266668990498178e-08, 2.0489185894690638e-07,
    2.8913705208347567e-06, 6.889758346916825e-05, 0.0033691164782556943,
    0.8044904110141088)


def _chebyshev(t, coefficients):
    """Clenshaw's sum of a Chebyshev series in t / 2 (NumPy's _chbevl)."""
    b0, b1, b2 = coefficients[0], 0.0, 0.0
    for coefficient in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = t * b1 - b2 + coefficient
    return 0.5 * (b0 - b2)


@composition(np.i0)
def _i0(x):
    """The modified Bessel function I0: its power series in x**2 for |x| <= 8 (even and
    smooth through 0, so that I0''(0) = 1/2 at every order), NumPy's Chebyshev series in
    |x| beyond."""
    if not is_engine_array(x):
        return np.i0(x)
    near = np.abs(x) <= _I0_SERIES_RADIUS
    small = np.where(near, x, 0.0)   # (no overflow of the series far out)
    w = small * small * 0.25
    series = _I0_SERIES[0]
    for coefficient in _I0_SERIES[1:]:
        series = series * w + coefficient
    far = np.abs(np.where(near, _I0_SERIES_RADIUS, x))
    beyond = np.exp(far) * _chebyshev(32.0 / far - 2.0, _I0_CHEBYSHEV) / np.sqrt(far)
    return np.where(near, series, beyond)
