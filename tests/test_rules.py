"""Every rule of the rule table against NumPy: values, and derivatives by finite differences.

Every ufunc of the rule table (cyad._rules.table) is tested on its rule's test domain. Each
rule runs through `cyad.jacobian` on N points with chunks 1, 2, 3, 4, 8, 16
and 17 (widths 1, 2, 4, 4, 8, 16 and 24 = 3 blocks of 8), all leaving a remainder,
so every width specialisation of the chunk loops runs in float64 and float32.
The reference derivative is a fourth-order central difference of the NumPy
function in float64, taken at the points as represented in the tested dtype; the
reference second derivative (`cyad.hessian`, with both operands dual or one constant)
one of cyad's first derivative.
"""
import operator

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from rule_domains import BINARY_DOMAINS, ONLY_IN_B, UNARY_DOMAINS, binary_points, points

import cyad
from cyad._rules.table import (ANY, INTEGER, NEGATIVE, POSITIVE, UNARY_RULES, numpy_operands,
                               resolve)

N = 19
CHUNKS = [1, 2, 3, 4, 8, 16, 17]
DTYPES = [np.float64, np.float32]

# Values: NumPy's own results, to a few units in the last place of the (order 1)
# operands; the absolute part allows for NumPy's float32 logaddexp, which loses
# relative precision where its result cancels to near 0.
VALUE_TOL = {np.dtype(np.float64): dict(rtol=1e-14, atol=1e-15),
             np.dtype(np.float32): dict(rtol=1e-6, atol=1e-6)}
# Derivatives: float64 is limited by the finite difference (about 1e-9 relative),
# float32 by rounding the double-precision derivative to float32 (6e-8 relative).
DERIVATIVE_TOL = {np.dtype(np.float64): dict(rtol=1e-7, atol=1e-10),
                  np.dtype(np.float32): dict(rtol=1e-6, atol=1e-10)}


def central_difference(f, x):
    """The derivative of an elementwise f at x (float64), fourth-order central stencil."""
    h = 1e-3 * np.maximum(1.0, np.abs(x))
    h = (x + h) - x   # a step that is exact in floating point
    with np.errstate(invalid="ignore", divide="ignore"):
        return (f(x - 2 * h) - 8 * f(x - h) + 8 * f(x + h) - f(x + 2 * h)) / (12 * h)


def assert_diagonal(jac, diagonal, dtype):
    """jac is the diagonal matrix of `diagonal`: close on the diagonal, exactly 0 elsewhere."""
    assert jac.dtype == dtype
    n = len(diagonal)
    assert jac.shape == (n, n)
    assert_allclose(np.diagonal(jac), diagonal, **DERIVATIVE_TOL[np.dtype(dtype)])
    assert np.all(jac[~np.eye(n, dtype=bool)] == 0)


# -- unary rules ----------------------------------------------------------------------

# the derivative-free rules have their own test (at their jumps too)
ZERO_DERIVATIVE = [resolve(name) for rule in UNARY_RULES if rule.d == "0.0"
                   for name in rule.ufuncs]

# every unary ufunc of the rule table on its domain, and the operator forms
UNARY = [pytest.param(func, domain, id=func.__name__) for func, domain in UNARY_DOMAINS.items()
         if func not in ZERO_DERIVATIVE] + [
    pytest.param(operator.neg, ANY, id="-x"),
    pytest.param(operator.pos, ANY, id="+x"),
    pytest.param(abs, UNARY_DOMAINS[np.absolute], id="abs(x)"),
    pytest.param(lambda x: x ** 2, ANY, id="x**2"),
    pytest.param(lambda x: x ** 3, NEGATIVE, id="x**3-negative-base"),
    pytest.param(lambda x: x ** -2, NEGATIVE, id="x**-2-negative-base"),
    pytest.param(lambda x: x ** 0.5, POSITIVE, id="x**0.5"),
    pytest.param(lambda x: 1 / x, UNARY_DOMAINS[np.reciprocal], id="1/x"),
]


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("func, domain", UNARY)
def test_unary_rule(func, domain, dtype, chunk):
    x = points(domain, np.random.default_rng(0), N).astype(dtype)
    value, jac = cyad.value_and_jacobian(func, x, chunk=chunk)
    expected = func(x)
    assert value.dtype == expected.dtype == dtype
    assert_allclose(value, expected, **VALUE_TOL[np.dtype(dtype)])
    assert_diagonal(jac, central_difference(func, x.astype(np.float64)), dtype)


@pytest.mark.parametrize("chunk", [1, 3, 17])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("func", ZERO_DERIVATIVE, ids=lambda f: f.__name__)
def test_zero_derivative_rule(func, dtype, chunk):
    # also at the jumps (integers, half-integers, 0) and at -0.0
    x = np.array([-2.5, -1.5, -1.0, -0.7, -0.5, -0.0, 0.0, 0.3, 0.5, 1.0, 1.5, 2.5, 2.7,
                  3.0, 3.5, -3.2, 7.49, 7.5, 8.5], dtype)
    value, jac = cyad.value_and_jacobian(func, x, chunk=chunk)
    assert value.dtype == dtype
    assert_array_equal(value, func(x))
    assert jac.dtype == dtype
    assert np.all(jac == 0)


# -- binary rules -------------------------------------------------------------------------

# every binary ufunc of the rule table (and power, float_power) on its domains, the
# operator forms on the domains of their ufuncs
BINARY = [pytest.param(func, *domains, id=func.__name__)
          for func, domains in BINARY_DOMAINS.items()] + [
    pytest.param(operator.add, *BINARY_DOMAINS[np.add], id="a+b"),
    pytest.param(operator.sub, *BINARY_DOMAINS[np.subtract], id="a-b"),
    pytest.param(operator.mul, *BINARY_DOMAINS[np.multiply], id="a*b"),
    pytest.param(operator.truediv, *BINARY_DOMAINS[np.true_divide], id="a/b"),
    pytest.param(operator.pow, *BINARY_DOMAINS[np.power], id="a**b"),
    # a negative base with integer exponents: d/db is nan (as the finite difference)
    pytest.param(operator.pow, NEGATIVE, INTEGER, id="a**b-negative-base"),
    pytest.param(np.power, NEGATIVE, INTEGER, id="power-negative-base"),
]

COMBOS = ["dual-dual", "dual-array", "array-dual", "dual-scalar", "scalar-dual"]


def with_combos(params, combos):
    """Each binary case with each combo, but a dual a where the rule refuses one (its
    refusal: test_special.py)."""
    return [pytest.param(*param.values, combo, id=f"{param.id}-{combo}")
            for param in params for combo in combos
            if not (param.values[0] in ONLY_IN_B and not combo.startswith(("array", "scalar")))]


def _scalar(v):
    # a Python number of the operand's value (an int for integer exponents)
    return int(v) if float(v).is_integer() else v.item()


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("func, a_domain, b_domain, combo", with_combos(BINARY, COMBOS))
def test_binary_rule(func, a_domain, b_domain, combo, dtype, chunk):
    a, b = binary_points(a_domain, b_domain, np.random.default_rng(1), N)
    a, b = a.astype(dtype), b.astype(dtype)
    if combo == "dual-dual":
        x, f = np.stack([a, b]), lambda x: func(x[0], x[1])
    elif combo == "dual-array":
        x, f = a, lambda x: func(x, b)
    elif combo == "array-dual":
        x, f = b, lambda x: func(a, x)
    elif combo == "dual-scalar":
        b = b[:1]
        s = _scalar(b[0])
        x, f = a, lambda x: func(x, s)
    else:
        a = a[:1]
        s = _scalar(a[0])
        x, f = b, lambda x: func(s, x)

    with np.errstate(invalid="ignore"):
        value, jac = cyad.value_and_jacobian(f, x, chunk=chunk)
        expected = func(*numpy_operands(func, a, b))
    assert value.dtype == dtype   # results come in the problem's dtype (even for float_power)
    assert value.shape == (N,)
    assert_allclose(value, expected, **VALUE_TOL[np.dtype(dtype)])

    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if combo == "dual-dual":
        assert jac.shape == (N, 2, N)
        assert_diagonal(jac[:, 0, :], central_difference(lambda t: func(t, b64), a64), value.dtype)
        assert_diagonal(jac[:, 1, :], central_difference(lambda t: func(a64, t), b64), value.dtype)
    elif combo.startswith("dual"):
        assert_diagonal(jac, central_difference(lambda t: func(t, b64), a64), value.dtype)
    else:
        assert_diagonal(jac, central_difference(lambda t: func(*numpy_operands(func, a64, t)),
                                                b64), value.dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("func", [np.maximum, np.minimum, np.fmax, np.fmin, operator.add,
                                  operator.sub, operator.mul, operator.truediv, operator.pow,
                                  np.hypot, np.arctan2, np.logaddexp, np.logaddexp2],
                         ids=lambda f: f.__name__)
def test_binary_rule_same_operand(func, dtype):
    # f(x, x): both partials of the rule go into the same lanes
    x = np.random.default_rng(2).uniform(0.5, 2.0, 7).astype(dtype)
    jac = cyad.jacobian(lambda x: func(x, x), x, chunk=3)
    assert_diagonal(jac, central_difference(lambda t: func(t, t), x.astype(np.float64)), dtype)


# -- edge conventions (the header of _rules/rules.pxd) ----------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("func", [np.absolute, abs, np.fabs], ids=["absolute", "abs", "fabs"])
def test_abs_at_zero_has_derivative_zero(func, dtype):
    jac = cyad.jacobian(func, np.array([0.0, -0.0, 2.0, -3.0], dtype))
    assert_array_equal(jac, np.diag([0.0, 0.0, 1.0, -1.0]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_hypot_at_origin_has_zero_partials(dtype):
    value, jac = cyad.value_and_jacobian(lambda x: np.hypot(x[0], x[1]), np.zeros(2, dtype))
    assert value == 0.0
    assert_array_equal(jac, [0.0, 0.0])
    zero = np.zeros(3, dtype)
    assert_array_equal(cyad.jacobian(lambda x: np.hypot(x, 0.0), zero), np.zeros((3, 3)))
    assert_array_equal(cyad.jacobian(lambda x: np.hypot(0.0, x), zero), np.zeros((3, 3)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("func", [np.maximum, np.minimum, np.fmax, np.fmin],
                         ids=lambda f: f.__name__)
def test_ties_share_one_half(func, dtype):
    x = np.array([1.5, 1.5], dtype)
    value, jac = cyad.value_and_jacobian(lambda x: func(x[0], x[1]), x)
    assert value == 1.5
    assert_array_equal(jac, [0.5, 0.5])
    # against a constant equal to the value, and against itself (derivative 1)
    assert_array_equal(cyad.jacobian(lambda x: func(x, 1.5), x), np.eye(2) / 2)
    assert_array_equal(cyad.jacobian(lambda x: func(1.5, x), x), np.eye(2) / 2)
    assert_array_equal(cyad.jacobian(lambda x: func(x, x), x), np.eye(2))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("func", [np.fmax, np.fmin], ids=lambda f: f.__name__)
def test_fmax_fmin_pick_the_operand_that_is_not_nan(func, dtype):
    x = np.array([np.nan, 2.0], dtype)
    value, jac = cyad.value_and_jacobian(lambda x: func(x[0], x[1]), x)
    assert value == 2.0
    assert_array_equal(jac, [0.0, 1.0])
    value, jac = cyad.value_and_jacobian(lambda x: func(x[1], x[0]), x)
    assert value == 2.0
    assert_array_equal(jac, [0.0, 1.0])
    # against a NaN constant: the dual operand passes through
    value, jac = cyad.value_and_jacobian(lambda x: func(x, np.nan), x[1:])
    assert_array_equal(value, [2.0])
    assert_array_equal(jac, [[1.0]])
    value, jac = cyad.value_and_jacobian(lambda x: func(x[1], np.nan), x)
    assert value == 2.0
    assert_array_equal(jac, [0.0, 1.0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("func", [np.maximum, np.minimum], ids=lambda f: f.__name__)
def test_maximum_minimum_follow_the_nan_operand(func, dtype):
    x = np.array([np.nan, 2.0], dtype)
    for first, second in [(0, 1), (1, 0)]:
        value, jac = cyad.value_and_jacobian(
            lambda x, first=first, second=second: func(x[first], x[second]), x)
        assert np.isnan(value)
        assert_array_equal(jac, [1.0, 0.0])


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("func", [np.sqrt, np.cbrt, lambda x: x ** 0.5,
                                  lambda x: np.power(x, 1 / 3)],
                         ids=["sqrt", "cbrt", "x**0.5", "power(x,1/3)"])
def test_infinite_derivative_at_zero_only_where_touched(func, dtype, chunk):
    x = np.linspace(0.0, 4.0, N).astype(dtype)          # x[0] == 0
    jac = cyad.jacobian(func, x, chunk=chunk)
    assert jac[0, 0] == np.inf
    assert np.all(np.isfinite(np.diagonal(jac)[1:]))
    assert np.all(jac[~np.eye(N, dtype=bool)] == 0)     # 0, not 0 * inf = nan
    # a tangent that does not touch x[0]
    dx = np.ones(N, dtype)
    dx[0] = 0
    jvp = cyad.pushforward(func, x, dx)
    assert jvp[0] == 0
    assert_allclose(jvp[1:], np.diagonal(jac)[1:])
    dx[0] = 1
    assert cyad.pushforward(func, x, dx)[0] == np.inf


@pytest.mark.parametrize("dtype", DTYPES)
def test_infinite_derivative_through_binary_rules(dtype):
    # sqrt(x0) * x1 + x2 at x0 = 0: inf in x0, finite in x1 and x2, no nan
    x = np.array([0.0, 3.0, 2.0], dtype)
    jac = cyad.jacobian(lambda x: np.sqrt(x[0]) * x[1] + x[2], x)
    assert_array_equal(jac, [np.inf, 0.0, 1.0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", ["x**0", "x**0.0", "power(x,0)", "x**y"])
def test_zeroth_power_has_derivative_zero_at_zero(form, dtype):
    x = np.array([0.0, 2.0, -1.5], dtype)
    if form == "x**y":
        xy = np.concatenate([x, np.zeros(3, dtype)])
        value, jac = cyad.value_and_jacobian(lambda v: v[:3] ** v[3:], xy)
        jac = jac[:, :3]
    else:
        f = {"x**0": lambda x: x ** 0, "x**0.0": lambda x: x ** 0.0,
             "power(x,0)": lambda x: np.power(x, 0)}[form]
        value, jac = cyad.value_and_jacobian(f, x)
    assert_array_equal(value, [1.0, 1.0, 1.0])
    assert_array_equal(jac, np.zeros((3, 3)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_power_exponent_derivative_at_zero_base(dtype):
    # d(x**y)/dy at x = 0 and y > 0 is 0 (x**y is 0 for every y > 0)
    y = np.array([0.5, 1.0, 2.0, 3.7], dtype)
    assert_array_equal(cyad.jacobian(lambda y: 0.0 ** y, y), np.zeros((4, 4)))
    zero = np.zeros(4, dtype)
    assert_array_equal(cyad.jacobian(lambda y: np.power(zero, y), y), np.zeros((4, 4)))
    jac = cyad.jacobian(lambda v: v[0] ** v[1:], np.concatenate([[0.0], y]).astype(dtype))
    assert_array_equal(jac[:, 1:], np.zeros((4, 4)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("exponent, expected", [(1, 1.0), (1.0, 1.0), (2, 0.0), (2.0, 0.0),
                                                (3, 0.0), (0.5, np.inf)])
def test_power_base_derivative_at_zero_base(exponent, expected, dtype):
    x = np.zeros(1, dtype)
    assert_array_equal(cyad.jacobian(lambda x: x ** exponent, x), [[expected]])
    # the same when the exponent is a dual too
    jac = cyad.jacobian(lambda v: v[:1] ** v[1:], np.array([0.0, exponent], dtype))
    assert jac[0, 0] == expected
    assert jac[0, 1] == 0.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_power_with_negative_base(dtype):
    # integer exponents: d/dx as usual, d/dy nan (x**y is not real for other y)
    x = np.array([-2.0, 3.0], dtype)
    value, jac = cyad.value_and_jacobian(lambda v: v[0] ** v[1], x)
    assert value == -8.0
    assert jac[0] == 12.0
    assert np.isnan(jac[1])
    assert_array_equal(cyad.jacobian(lambda v: v ** 3, x[:1]), [[12.0]])
    assert_array_equal(cyad.jacobian(lambda v: v ** -1, x[:1]), [[-0.25]])


@pytest.mark.parametrize("dtype", DTYPES)
def test_arctan2_at_origin_is_nan_only_where_touched(dtype):
    jac = cyad.jacobian(lambda x: np.arctan2(x[:1], x[1:2]) + x[2], np.zeros(3, dtype))
    assert np.all(np.isnan(jac[0, :2]))
    assert jac[0, 2] == 1.0


# -- accuracy where the obvious formula cancels --------------------------------------------

# Reference formulas written so that they do not cancel: 1 - x is exact near x = 1.
def _arcsin_derivative(x):
    return 1 / np.sqrt((1 - x) * (1 + x))


def _arccos_derivative(x):
    return -1 / np.sqrt((1 - x) * (1 + x))


def _arctanh_derivative(x):
    return 1 / ((1 - x) * (1 + x))


def _arccosh_derivative(x):
    return 1 / np.sqrt((x - 1) * (x + 1))


@pytest.mark.parametrize("func, x, derivative", [
    pytest.param(np.expm1, -40.0, np.exp, id="expm1(-40)"),
    pytest.param(np.expm1, -20.0, np.exp, id="expm1(-20)"),
    pytest.param(np.tanh, 10.0, lambda x: 1 / np.cosh(x) ** 2, id="tanh(10)"),
    pytest.param(np.tanh, 20.0, lambda x: 1 / np.cosh(x) ** 2, id="tanh(20)"),
    pytest.param(np.tanh, -30.0, lambda x: 1 / np.cosh(x) ** 2, id="tanh(-30)"),
    pytest.param(np.arcsin, 1 - 1e-12, _arcsin_derivative, id="arcsin(1-1e-12)"),
    pytest.param(np.arcsin, -1 + 3e-10, _arcsin_derivative, id="arcsin(-1+3e-10)"),
    pytest.param(np.arccos, 1 - 1e-12, _arccos_derivative, id="arccos(1-1e-12)"),
    pytest.param(np.arctanh, 1 - 1e-12, _arctanh_derivative, id="arctanh(1-1e-12)"),
    pytest.param(np.arctanh, -1 + 3e-10, _arctanh_derivative, id="arctanh(-1+3e-10)"),
    pytest.param(np.arccosh, 1 + 1e-12, _arccosh_derivative, id="arccosh(1+1e-12)"),
])
def test_derivative_is_accurate_in_the_tails(func, x, derivative):
    assert_allclose(cyad.derivative(func, x), derivative(x), rtol=1e-13)


# -- second derivatives ---------------------------------------------------------------------
# The Hessian of sum(f(x)) for an elementwise f is diagonal, with f''(x). The reference is a
# fourth-order central difference of cyad's own first derivative (exact, and tested above)
# in float64, at the points as represented in the tested dtype.

SECOND_TOL = {np.dtype(np.float64): dict(rtol=1e-7, atol=1e-9),
              np.dtype(np.float32): dict(rtol=1e-5, atol=1e-5)}
SECOND_CHUNKS = [1, 3, 17]


def first_derivative(func, x):
    """f'(x) of an elementwise f, elementwise, by cyad (float64)."""
    return np.diagonal(cyad.jacobian(func, x))


def assert_second_diagonal(block, expected, dtype):
    """A block of a Hessian is diag(expected): close on the diagonal, exactly 0 elsewhere."""
    assert block.dtype == dtype
    n = len(expected)
    assert block.shape == (n, n)
    tolerance = SECOND_TOL[np.dtype(dtype)]
    assert_allclose(np.diagonal(block), expected, rtol=tolerance["rtol"],
                    atol=tolerance["atol"] * max(1.0, np.max(np.abs(expected))))
    assert np.all(block[~np.eye(n, dtype=bool)] == 0)


@pytest.mark.parametrize("chunk", SECOND_CHUNKS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("func, domain", [pytest.param(func, domain, id=func.__name__)
                                          for func, domain in UNARY_DOMAINS.items()])
def test_unary_rule_second_derivative(func, domain, dtype, chunk):
    x = points(domain, np.random.default_rng(3), N).astype(dtype)
    hessian = cyad.hessian(lambda x: np.sum(func(x)), x, chunk=chunk)
    expected = central_difference(lambda t: first_derivative(func, t), x.astype(np.float64))
    assert_second_diagonal(hessian, expected, dtype)


@pytest.mark.parametrize("chunk", SECOND_CHUNKS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("func, a_domain, b_domain, combo", with_combos(
    [pytest.param(func, *domains, id=func.__name__) for func, domains in BINARY_DOMAINS.items()],
    ["dual-dual", "dual-scalar", "scalar-dual"]))
def test_binary_rule_second_derivatives(func, a_domain, b_domain, combo, dtype, chunk):
    # dual-scalar and scalar-dual run the variants of power for a constant operand
    a, b = binary_points(a_domain, b_domain, np.random.default_rng(4), N)
    a, b = a.astype(dtype), b.astype(dtype)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)

    def da(s, t):
        return first_derivative(lambda u: func(u, t), s)

    def db(s, t):
        return first_derivative(lambda u: func(s, u), t)

    with np.errstate(invalid="ignore"):
        if combo == "dual-dual":
            hessian = cyad.hessian(lambda x: np.sum(func(x[0], x[1])), np.stack([a, b]),
                                   chunk=chunk)
            assert hessian.shape == (2, N, 2, N)
            assert_second_diagonal(hessian[0, :, 0, :],
                                   central_difference(lambda s: da(s, b64), a64), dtype)
            assert_second_diagonal(hessian[0, :, 1, :],
                                   central_difference(lambda t: da(a64, t), b64), dtype)
            assert_second_diagonal(hessian[1, :, 0, :],
                                   central_difference(lambda s: db(s, b64), a64), dtype)
            assert_second_diagonal(hessian[1, :, 1, :],
                                   central_difference(lambda t: db(a64, t), b64), dtype)
        elif combo == "dual-scalar":
            s = _scalar(b[0])
            hessian = cyad.hessian(lambda x: np.sum(func(x, s)), a, chunk=chunk)
            b64 = np.full(N, b64[0])
            assert_second_diagonal(hessian, central_difference(lambda u: da(u, b64), a64), dtype)
        else:
            s = _scalar(a[0])
            hessian = cyad.hessian(lambda x: np.sum(func(s, x)), b, chunk=chunk)
            a64 = np.full(N, a64[0])
            assert_second_diagonal(hessian, central_difference(lambda t: db(a64, t), b64), dtype)
