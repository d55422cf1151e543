"""NumPy's ufuncs of complex values, each written in real operations on the parts.

A rule takes its operands' parts, (a, b) for a + ib (None: a zero part), and returns the
result's parts, or a real array (np.absolute) or booleans (np.isfinite, np.equal). The
real operations reach the engines, which differentiate them by their own rules: so each rule
here is differentiable to any order, as a map of the real and imaginary parts, which is
JAX's real-linear convention for the derivative of a complex function.

Branch cuts and signed zeros follow NumPy (C99): log's and sqrt's cut on the negative real
axis, the inverse functions' by their logarithmic forms (arcsin z = -i arcsinh(iz), ...).
"""
import math

import numpy as np

from cyad._complex.array import ComplexArray, broadcast_shape, parts, real_dtype
from cyad._primitives._table import shape_of

UFUNCS: dict = {}


def _rule(*ufuncs):
    def register(rule):
        for ufunc in ufuncs:
            UFUNCS[ufunc] = rule
        return rule
    return register


# -- the arithmetic of parts, None a zero part ----------------------------------------------

def _add(x, y):
    return y if x is None else x if y is None else x + y


def _sub(x, y):
    return _neg(y) if x is None else x if y is None else x - y


def _neg(x):
    return None if x is None else -x


def _mul(x, y):
    return None if x is None or y is None else x * y


def _or_zero(x, like):
    return np.zeros(like.shape, like.real_dtype) if x is None else x


def _full_parts(z):
    """z's parts, zeros for a zero part (for the rules that need both)."""
    a, b = parts(z)
    return _or_zero(a, z), _or_zero(b, z)


def _complex(re, im, like):
    return ComplexArray(re, im, like.shape, like.real_dtype)


class _Result:
    """The shape and part dtype of a rule's result."""

    __slots__ = ("shape", "real_dtype")

    def __init__(self, operands):
        self.shape = broadcast_shape(*operands)
        self.real_dtype = real_dtype(*operands)


# -- arithmetic -------------------------------------------------------------------------------

@_rule(np.add)
def _add_rule(z, w):
    (a, b), (c, d) = parts(z), parts(w)
    return _complex(_add(a, c), _add(b, d), _Result((z, w)))


@_rule(np.subtract)
def _subtract(z, w):
    (a, b), (c, d) = parts(z), parts(w)
    return _complex(_sub(a, c), _sub(b, d), _Result((z, w)))


@_rule(np.multiply)
def _multiply(z, w):
    (a, b), (c, d) = parts(z), parts(w)
    return _complex(_sub(_mul(a, c), _mul(b, d)), _add(_mul(a, d), _mul(b, c)), _Result((z, w)))


@_rule(np.divide)
def _divide(z, w):
    (a, b), (c, d) = parts(z), parts(w)
    result = _Result((z, w))
    if d is None:   # a real divisor
        return _complex(None if a is None else a / c, None if b is None else b / c, result)
    if c is None:   # (a + ib) / (id) = b/d - i a/d
        return _complex(None if b is None else b / d, None if a is None else -a / d, result)
    den = c * c + d * d
    re, im = _add(_mul(a, c), _mul(b, d)) / den, _sub(_mul(b, c), _mul(a, d)) / den
    by_zero = np.equal(den, 0)
    if np.any(by_zero):   # NumPy's z / 0: a / 0 + i b / 0, infinite, not 0 / 0
        re = np.where(by_zero, _or_zero(a, result) / den, re)
        im = np.where(by_zero, _or_zero(b, result) / den, im)
    return _complex(re, im, result)


@_rule(np.negative)
def _negative(z):
    a, b = parts(z)
    return _complex(_neg(a), _neg(b), z)


@_rule(np.positive)
def _positive(z):
    a, b = parts(z)
    return _complex(a, b, z)


@_rule(np.conjugate)
def _conjugate(z):
    a, b = parts(z)
    return _complex(a, _neg(b), z)


@_rule(np.square)
def _square(z):
    a, b = parts(z)
    ab = _mul(a, b)
    return _complex(_sub(_mul(a, a), _mul(b, b)), None if ab is None else 2.0 * ab, z)


@_rule(np.reciprocal)
def _reciprocal(z):
    return _divide(1.0, z)


# -- absolute value, sign, angle --------------------------------------------------------------

def modulus(a, b):
    """|a + ib|, real."""
    if b is None:
        return np.abs(a)
    if a is None:
        return np.abs(b)
    return np.hypot(a, b)


def angle(a, b, like):
    """arg(a + ib) in (-pi, pi], real: NumPy's arctan2(b, a), signed zeros included."""
    if b is None:
        b = np.zeros(like.shape, like.real_dtype)
    if a is None:
        a = np.zeros(like.shape, like.real_dtype)
    return np.arctan2(b, a)


@_rule(np.absolute)
def _absolute(z):
    a, b = parts(z)
    if a is None and b is None:
        return np.zeros(z.shape, z.real_dtype)
    return modulus(a, b)


@_rule(np.sign)
def _sign(z):
    """z / |z|, 0 at 0 (NumPy 2's sign of a complex number)."""
    a, b = parts(z)
    r = modulus(_or_zero(a, z), b)
    r = np.where(r > 0, r, 1.0)
    return _complex(None if a is None else a / r, None if b is None else b / r, z)


# -- exponentials and logarithms ----------------------------------------------------------------

@_rule(np.exp)
def _exp(z):
    a, b = parts(z)
    if b is None:
        return _complex(_or_zero(a, z) if a is None else np.exp(a), None, z)
    e = None if a is None else np.exp(a)
    cos, sin = np.cos(b), np.sin(b)
    return _complex(cos if e is None else e * cos, sin if e is None else e * sin, z)


@_rule(np.expm1)
def _expm1(z):
    """exp(a) cos b - 1 as expm1(a) cos b - 2 sin(b/2)^2, accurate near 0."""
    a, b = parts(z)
    a = _or_zero(a, z)
    if b is None:
        return _complex(np.expm1(a), None, z)
    half = np.sin(0.5 * b)
    return _complex(np.expm1(a) * np.cos(b) - 2.0 * half * half, np.exp(a) * np.sin(b), z)


@_rule(np.exp2)
def _exp2(z):
    return _exp(z * math.log(2.0))


@_rule(np.log)
def _log(z):
    a, b = parts(z)
    return _complex(np.log(modulus(_or_zero(a, z), b)), angle(a, b, z), z)


@_rule(np.log2)
def _log2(z):
    return _log(z) * (1.0 / math.log(2.0))


@_rule(np.log10)
def _log10(z):
    return _log(z) * (1.0 / math.log(10.0))


@_rule(np.log1p)
def _log1p(z):
    """log|1 + z| as log1p(a (2 + a) + b^2) / 2 near 0 (where it is accurate), else as
    log(hypot(1 + a, b))."""
    a, b = parts(z)
    a = _or_zero(a, z)
    if b is None:
        return _log(1.0 + z)
    near = np.logical_and(np.abs(a) < 0.5, np.abs(b) < 0.5)
    small = np.where(near, a, 0.0), np.where(near, b, 0.0)
    modulus = np.where(near, 0.5 * np.log1p(small[0] * (2.0 + small[0]) + small[1] * small[1]),
                       np.log(np.hypot(1.0 + a, b)))
    return _complex(modulus, np.arctan2(b, 1.0 + a), z)


@_rule(np.sqrt)
def _sqrt(z):
    """The principal root: t = sqrt((|z| + |a|) / 2) is the part of larger magnitude, the
    other b / (2t); the imaginary part takes b's sign (so the cut is on the negative axis)."""
    a, b = parts(z)
    a = _or_zero(a, z)
    b = _or_zero(b, z)
    t = np.sqrt(0.5 * (np.hypot(a, b) + np.abs(a)))
    s = b / np.where(t > 0, 2.0 * t, 1.0)
    right = a >= 0
    return _complex(np.where(right, t, np.abs(s)), np.where(right, s, np.copysign(t, b)), z)


@_rule(np.power)
def _power(z, w):
    if not isinstance(w, ComplexArray) and np.ndim(w) == 0 and not isinstance(
            w, (complex, np.complexfloating)) and not hasattr(w, "__array_function__"):
        p = float(w)
        if p == int(p) and abs(p) <= 8:   # as NumPy: repeated products, exact at 0
            return _integer_power(z, int(p))
        if p == 0.5:
            return _sqrt(z)
    if not isinstance(z, ComplexArray):
        z = ComplexArray(*parts(z), shape_of(z), real_dtype(z, w))
    # exp(w log z), and at z = 0 NumPy's: 1 for w = 0, 0 where Re w > 0, else nan (log
    # taken of 1 there)
    zero = np.equal(z, 0)
    result = _exp(w * _log(np.where(zero, 1.0, z)))
    if not np.any(zero):
        return result
    one, vanishes = np.equal(w, 0), np.greater(_or_zero(parts(w)[0], result), 0)
    at_zero = ComplexArray(np.where(one, 1.0, np.where(vanishes, 0.0, np.nan)),
                           np.where(np.logical_or(one, vanishes), 0.0, np.nan),
                           result.shape, result.real_dtype)
    return np.where(zero, at_zero, result)


def _integer_power(z, p):
    if p < 0:
        return _reciprocal(_integer_power(z, -p))
    result, base = None, z
    while p:
        if p & 1:
            result = base if result is None else _multiply(result, base)
        p >>= 1
        if p:
            base = _square(base)
    if result is None:   # z ** 0
        shape = shape_of(z)
        return ComplexArray(np.ones(shape), None, shape, real_dtype(z))
    return result


# -- trigonometric and hyperbolic functions -----------------------------------------------------

@_rule(np.sin)
def _sin(z):
    a, b = _full_parts(z)
    return _complex(np.sin(a) * np.cosh(b), np.cos(a) * np.sinh(b), z)


@_rule(np.cos)
def _cos(z):
    a, b = _full_parts(z)
    return _complex(np.cos(a) * np.cosh(b), -(np.sin(a) * np.sinh(b)), z)


@_rule(np.tan)
def _tan(z):
    a, b = _full_parts(z)
    den = np.cos(2.0 * a) + np.cosh(2.0 * b)
    return _complex(np.sin(2.0 * a) / den, np.sinh(2.0 * b) / den, z)


@_rule(np.sinh)
def _sinh(z):
    a, b = _full_parts(z)
    return _complex(np.sinh(a) * np.cos(b), np.cosh(a) * np.sin(b), z)


@_rule(np.cosh)
def _cosh(z):
    a, b = _full_parts(z)
    return _complex(np.cosh(a) * np.cos(b), np.sinh(a) * np.sin(b), z)


@_rule(np.tanh)
def _tanh(z):
    a, b = _full_parts(z)
    den = np.cosh(2.0 * a) + np.cos(2.0 * b)
    return _complex(np.sinh(2.0 * a) / den, np.sin(2.0 * b) / den, z)


def _times_i(z):
    a, b = parts(z)
    return _complex(_neg(b), a, z)


def _times_minus_i(z):
    a, b = parts(z)
    return _complex(b, _neg(a), z)


@_rule(np.arcsinh)
def _arcsinh(z):
    return _log(z + _sqrt(_square(z) + 1.0))


@_rule(np.arccosh)
def _arccosh(z):
    return _log(z + _multiply(_sqrt(z + 1.0), _sqrt(z - 1.0)))


@_rule(np.arctanh)
def _arctanh(z):
    return 0.5 * (_log1p(z) - _log1p(-z))


@_rule(np.arcsin)
def _arcsin(z):
    return _times_minus_i(_arcsinh(_times_i(z)))


@_rule(np.arccos)
def _arccos(z):
    return (0.5 * math.pi) - _arcsin(z)


@_rule(np.arctan)
def _arctan(z):
    return _times_minus_i(_arctanh(_times_i(z)))


# -- values: comparisons and classification -----------------------------------------------------

def _both(test, z):
    a, b = _full_parts(z)
    return test(a), test(b)


@_rule(np.isfinite)
def _isfinite(z):
    a, b = _both(np.isfinite, z)
    return np.logical_and(a, b)


@_rule(np.isnan)
def _isnan(z):
    a, b = _both(np.isnan, z)
    return np.logical_or(a, b)


@_rule(np.isinf)
def _isinf(z):
    a, b = _both(np.isinf, z)
    return np.logical_or(a, b)


def _pair(z, w):
    like = _Result((z, w))
    (a, b), (c, d) = parts(z), parts(w)
    return [_or_zero(p, like) for p in (a, b, c, d)]


@_rule(np.equal)
def _equal(z, w):
    a, b, c, d = _pair(z, w)
    return np.logical_and(np.equal(a, c), np.equal(b, d))


@_rule(np.not_equal)
def _not_equal(z, w):
    a, b, c, d = _pair(z, w)
    return np.logical_or(np.not_equal(a, c), np.not_equal(b, d))


# -- the call -----------------------------------------------------------------------------------

def _name(ufunc):
    return f"numpy.{ufunc.__name__}"


def ufunc_call(ufunc, method, inputs, kwargs):
    """A NumPy ufunc with a complex operand, through its rule (`out=` written into a complex
    array's parts)."""
    if method != "__call__":
        if ufunc is np.add and method in ("reduce", "accumulate") and len(inputs) == 1:
            # (np.add.reduce is np.sum along axis 0 by default; accumulate, np.cumsum)
            kwargs = dict(kwargs)
            kwargs.setdefault("axis", 0)
            return (np.sum if method == "reduce" else np.cumsum)(inputs[0], **kwargs)
        raise TypeError(f"cyad: {_name(ufunc)}.{method} of complex arrays is not supported "
                        "(the ufunc itself is; np.add.reduce and np.add.accumulate too)")
    kwargs = {k: v for k, v in kwargs.items() if k not in ("casting", "order", "subok")}
    out = kwargs.pop("out", None)
    if isinstance(out, tuple):
        out = out[0] if len(out) == 1 else out
    rule = UFUNCS.get(ufunc)
    if rule is None:
        from cyad._complex.functions import SPECIAL, TABLE, function_call
        if ufunc in TABLE or ufunc in SPECIAL:   # a ufunc that is a product: matmul, vecdot
            result = function_call(ufunc, inputs, kwargs)
            return result if out is None else _into(out, result, ufunc)
        ordering = ufunc in (np.less, np.less_equal, np.greater, np.greater_equal, np.maximum,
                             np.minimum, np.fmax, np.fmin)
        raise TypeError(f"cyad: {_name(ufunc)} of complex values is not supported"
                        + (" (complex numbers are not ordered: compare np.real or np.abs of "
                           "them)" if ordering else ""))
    for name, value in kwargs.items():
        if not ((name == "where" and value is True) or (name == "dtype" and value is None)):
            raise TypeError(f"cyad: {_name(ufunc)} of complex arrays does not support "
                            f"the argument {name!r}")
    if len(inputs) != ufunc.nin:
        raise TypeError(f"{_name(ufunc)} takes {ufunc.nin} operands, not {len(inputs)}")
    result = rule(*inputs)
    return result if out is None else _into(out, result, ufunc)


def _into(out, result, ufunc):
    if not isinstance(out, ComplexArray):
        if isinstance(result, ComplexArray):
            raise TypeError(f"cyad: cannot write the complex result of {_name(ufunc)} into a "
                            f"real array (NumPy refuses to cast complex to "
                            f"{getattr(out, 'dtype', 'real')})")
        out[...] = result
        return out
    out[...] = result
    return out
