"""The C-level dual element API, cyad/dual.pxd.

Every rule of the table is run on dual elements (through the hooks of c_hooks.pyx,
compiled against the installed cyad) against NumPy and a central finite difference.
Whole functions written on elements are tested with the example project
(test_cython_embedding.py).
"""
import pathlib
import re

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import cyad


def central_difference(f, x):
    """The derivative of an elementwise f at x (float64), fourth-order central stencil."""
    h = 1e-3 * np.maximum(1.0, np.abs(x))
    h = (x + h) - x   # a step that is exact in floating point
    with np.errstate(invalid="ignore", divide="ignore"):
        return (f(x - 2 * h) - 8 * f(x - h) + 8 * f(x + h) - f(x + 2 * h)) / (12 * h)


def assert_within(actual, expected, scale, rtol):
    """|actual - expected| <= rtol * scale elementwise: scale bounds the terms summed."""
    assert np.all(np.abs(np.asarray(actual, np.float64) - expected) <= rtol * scale)


def test_lane_counts(c_hooks):
    assert c_hooks.lane_counts() == [1, 2, 4, 8, 16] * 2


# -- every rule on elements ------------------------------------------------------------------

ANY = (-3.0, 3.0)
POSITIVE = (0.1, 5.0)
OPEN_UNIT = (-0.9, 0.9)
NONZERO = "nonzero"              # +-(0.2, 3)
STEPS = "steps"                  # away from the jumps of sign, floor, ceil, rint, trunc
APART = "apart"                  # b at least 0.1 away from a (no ties)
BASE = (0.2, 3.0)
EXPONENT = (-2.5, 2.5)
N = 7


def points(domain, rng):
    if domain == NONZERO:
        return rng.choice([-1.0, 1.0], N) * rng.uniform(0.2, 3.0, N)
    if domain == STEPS:
        return rng.integers(-3, 3, N) + rng.choice([0.2, 0.7], N)
    return rng.uniform(*domain, N)


UNARY = {
    "negative": (np.negative, ANY), "positive": (np.positive, ANY),
    "absolute": (np.absolute, NONZERO), "sqrt": (np.sqrt, POSITIVE), "cbrt": (np.cbrt, NONZERO),
    "square": (np.square, ANY), "reciprocal": (np.reciprocal, NONZERO),
    "exp": (np.exp, ANY), "exp2": (np.exp2, ANY), "expm1": (np.expm1, ANY),
    "log": (np.log, POSITIVE), "log2": (np.log2, POSITIVE), "log10": (np.log10, POSITIVE),
    "log1p": (np.log1p, (-0.9, 4.0)),
    "sin": (np.sin, ANY), "cos": (np.cos, ANY), "tan": (np.tan, (-1.4, 1.4)),
    "arcsin": (np.arcsin, OPEN_UNIT), "arccos": (np.arccos, OPEN_UNIT), "arctan": (np.arctan, ANY),
    "sinh": (np.sinh, ANY), "cosh": (np.cosh, ANY), "tanh": (np.tanh, ANY),
    "arcsinh": (np.arcsinh, ANY), "arccosh": (np.arccosh, (1.05, 5.0)),
    "arctanh": (np.arctanh, OPEN_UNIT),
    "deg2rad": (np.deg2rad, (-200.0, 200.0)), "rad2deg": (np.rad2deg, ANY),
    "sign": (np.sign, STEPS), "floor": (np.floor, STEPS), "ceil": (np.ceil, STEPS),
    "rint": (np.rint, STEPS), "trunc": (np.trunc, STEPS),
}

# name: (NumPy function, domain of a, domain of b, the operand kinds the rule serves:
# "dd" both dual, "dc" b constant, "cd" a constant)
ALL = ("dd", "dc", "cd")
BINARY = {
    "add": (np.add, ANY, ANY, ALL), "subtract": (np.subtract, ANY, ANY, ALL),
    "multiply": (np.multiply, ANY, ANY, ALL), "divide": (np.divide, ANY, NONZERO, ALL),
    "power": (np.power, BASE, EXPONENT, ALL),
    "power_const_exponent": (np.power, BASE, EXPONENT, ("dc",)),
    "power_const_base": (np.power, BASE, EXPONENT, ("cd",)),
    "arctan2": (np.arctan2, NONZERO, ANY, ALL), "hypot": (np.hypot, ANY, ANY, ALL),
    "maximum": (np.maximum, ANY, APART, ALL), "minimum": (np.minimum, ANY, APART, ALL),
    "fmax": (np.fmax, ANY, APART, ALL), "fmin": (np.fmin, ANY, APART, ALL),
    "logaddexp": (np.logaddexp, ANY, ANY, ALL), "logaddexp2": (np.logaddexp2, ANY, ANY, ALL),
}

# partials of the dual4 operands; the last lane has tangent 0 in both
TA = np.array([1.0, -0.5, 2.0, 0.0])
TB = np.array([0.0, 1.0, -2.0, 0.0])

VALUE_TOL = dict(rtol=1e-14, atol=1e-15)
DERIVATIVE_TOL = dict(rtol=1e-7, atol=1e-10)   # the finite difference is good to about 1e-9


def test_every_rule_is_tested(c_hooks):
    rules = (pathlib.Path(cyad.get_include()) / "cyad" / "_rules.pxd").read_text()
    for enum, ops, reference in [("UnaryOp", c_hooks.UNARY_OPS, UNARY),
                                 ("BinaryOp", c_hooks.BINARY_OPS, BINARY)]:
        body = re.search(rf"cdef enum {enum}:\n(.*?)\n\n", rules, re.S).group(1)
        names = sorted(name.lower() for name in re.findall(r"\w+", body))
        assert sorted(ops) == sorted(reference) == names


def expected_partials(func, a, b, operands):
    """The partials of func(a, b) for the tangents TA of a and TB of b, where dual."""
    partials = np.zeros(4)
    if operands[0] == "d":
        partials += central_difference(lambda t: func(t, b), np.float64(a)) * TA
    if operands[1] == "d":
        partials += central_difference(lambda t: func(a, t), np.float64(b)) * TB
    return partials


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_rule_on_elements(c_hooks, name):
    func, domain = UNARY[name]
    for a in points(domain, np.random.default_rng(0)):
        value, partials = c_hooks.unary_op(c_hooks.UNARY_OPS[name], a, TA)
        assert_allclose(value, func(a), **VALUE_TOL)
        assert_allclose(partials, expected_partials(lambda t, _: func(t), a, 0.0, "dc"),
                        **DERIVATIVE_TOL)


@pytest.mark.parametrize("name, operands", [(name, operands) for name in sorted(BINARY)
                                            for operands in BINARY[name][3]])
def test_binary_rule_on_elements(c_hooks, name, operands):
    func, a_domain, b_domain = BINARY[name][:3]
    rng = np.random.default_rng(1)
    a_points = points(a_domain, rng)
    if b_domain == APART:
        b_points = a_points + rng.choice([-1.0, 1.0], N) * rng.uniform(0.1, 1.0, N)
    else:
        b_points = points(b_domain, rng)
    for a, b in zip(a_points, b_points):
        value, partials = c_hooks.binary_op(c_hooks.BINARY_OPS[name], operands, a, b, TA, TB)
        assert_allclose(value, func(a, b), **VALUE_TOL)
        assert_allclose(partials, expected_partials(func, a, b, operands), **DERIVATIVE_TOL)


# name: (the function of (a, b), operand kinds); the unary ones ignore b
SHORTHANDS = {
    "neg": (lambda a, b: -a, "dc"), "square": (lambda a, b: a * a, "dc"),
    "sqrt": (lambda a, b: np.sqrt(a), "dc"), "exp": (lambda a, b: np.exp(a), "dc"),
    "log": (lambda a, b: np.log(a), "dc"), "sin": (lambda a, b: np.sin(a), "dc"),
    "cos": (lambda a, b: np.cos(a), "dc"), "tanh": (lambda a, b: np.tanh(a), "dc"),
    "add": (np.add, "dd"), "sub": (np.subtract, "dd"),
    "mul": (np.multiply, "dd"), "div": (np.divide, "dd"),
    "add_c": (np.add, "dc"), "sub_c": (np.subtract, "dc"), "mul_c": (np.multiply, "dc"),
    "div_c": (np.divide, "dc"), "pow_c": (np.power, "dc"),
    "c_sub": (np.subtract, "cd"), "c_div": (np.divide, "cd"),
}


def test_shorthands(c_hooks):
    for a, b in [(1.3, 0.7), (0.4, -2.1), (2.5, 1.5)]:
        results = c_hooks.shorthands(a, b, TA, TB)
        assert sorted(results) == sorted(SHORTHANDS)
        for name, (func, operands) in SHORTHANDS.items():
            value, partials = results[name]
            assert_allclose(value, func(a, b), **VALUE_TOL, err_msg=name)
            assert_allclose(partials, expected_partials(func, a, b, operands),
                            **DERIVATIVE_TOL, err_msg=name)


def test_zero_tangent_gets_zero_where_the_derivative_is_infinite(c_hooks):
    t = np.array([1.0, 0.0, -2.0, 0.0])
    for op in ["sqrt", "cbrt"]:
        assert c_hooks.unary_op(c_hooks.UNARY_OPS[op], 0.0, t) == (0.0, [np.inf, 0.0, -np.inf, 0.0])
    results = c_hooks.shorthands(0.0, 0.5, t, t)
    assert results["sqrt"] == (0.0, [np.inf, 0.0, -np.inf, 0.0])
    assert results["pow_c"] == (0.0, [np.inf, 0.0, -np.inf, 0.0])
    # both operands dual: d/da = inf, d/db = 0 (0 ** b for b > 0)
    power = c_hooks.BINARY_OPS["power"]
    assert c_hooks.binary_op(power, "dd", 0.0, 0.5, TA, TB) == (0.0, [np.inf, -np.inf, np.inf, 0.0])
    # arctan2 at the origin: nan where touched, 0 in the lane neither operand touches
    value, partials = c_hooks.binary_op(c_hooks.BINARY_OPS["arctan2"], "dd", 0.0, 0.0, TA, TB)
    assert value == 0.0
    assert np.all(np.isnan(partials[:3]))
    assert_array_equal(partials[3], 0.0)


# -- the second column of the table: second derivatives ------------------------------------------

SECOND_TOL = dict(rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_second_derivative(c_hooks, name):
    op, domain = c_hooks.UNARY_OPS[name], UNARY[name][1]
    x = points(domain, np.random.default_rng(3))
    first = np.vectorize(lambda t: c_hooks.unary_derivatives(op, t)[0])
    second = np.array([c_hooks.unary_derivatives(op, t)[1] for t in x])
    assert_allclose(second, central_difference(first, x), **SECOND_TOL)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_second_derivatives(c_hooks, name):
    op, a_domain, b_domain = c_hooks.BINARY_OPS[name], BINARY[name][1], BINARY[name][2]
    rng = np.random.default_rng(4)
    a = points(a_domain, rng)
    if b_domain == APART:   # no ties, where maximum and the like have a kink
        b = a + rng.choice([-1.0, 1.0], N) * rng.uniform(0.1, 2.0, N)
    else:
        b = points(b_domain, rng)

    def partial(i, of_a):
        # the first partial i of the rule, as a function of a (b fixed) or of b (a fixed)
        if of_a:
            return np.vectorize(lambda t, s: c_hooks.binary_derivatives(op, t, s)[0][i])
        return np.vectorize(lambda t, s: c_hooks.binary_derivatives(op, s, t)[0][i])

    second = np.array([c_hooks.binary_derivatives(op, s, t)[1] for s, t in zip(a, b)])
    daa = central_difference(lambda t: partial(0, True)(t, b), a)
    dab = central_difference(lambda t: partial(0, False)(t, a), b)
    dba = central_difference(lambda t: partial(1, True)(t, b), a)
    dbb = central_difference(lambda t: partial(1, False)(t, a), b)
    if name == "power_const_exponent":   # only the base varies: d/da is all it has
        dab, dba, dbb = 0 * dab, 0 * dba, 0 * dbb
    if name == "power_const_base":       # only the exponent varies
        daa, dab, dba = 0 * daa, 0 * dab, 0 * dba
    assert_allclose(second[:, 0], daa, **SECOND_TOL)
    assert_allclose(second[:, 1], dab, **SECOND_TOL)
    assert_allclose(second[:, 1], dba, **SECOND_TOL)    # the mixed partials agree
    assert_allclose(second[:, 2], dbb, **SECOND_TOL)
