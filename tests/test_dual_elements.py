"""The C-level dual element API, cyad/dual.pxd.

Every rule of the rule table (cyad._rules.table) is run on dual elements (through the
hooks of c_hooks.pyx, compiled against the installed cyad) against NumPy and a central
finite difference, on its test domain.
Whole functions written on elements are tested with the example project
(test_cython_embedding.py).
"""
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from rule_domains import points as domain_points

from cyad._rules.table import APART, BINARY_RULES, UNARY_RULES, numpy_operands, resolve


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

N = 7


def points(domain, rng):
    return domain_points(domain, rng, N)


def reference(rule):
    """The NumPy function of a binary rule (of the rule it stands for, for a variant)."""
    if rule.variant_of is not None:
        rule = next(other for other in BINARY_RULES if other.name == rule.variant_of)
    ufunc = resolve(rule.ufuncs[0])
    return lambda a, b: ufunc(*numpy_operands(ufunc, a, b))   # (an order as SciPy takes it)


# Every rule of the table: name: (NumPy function, domain)
UNARY = {rule.name: (resolve(rule.ufuncs[0]), rule.domain) for rule in UNARY_RULES}
# name: (NumPy function, domain of a, domain of b, the operand kinds the rule serves:
# "dd" both dual, "dc" b constant, "cd" a constant; a rule differentiable in b only
# serves "cd")
OPERAND_KINDS = {None: ("dd", "dc", "cd"), "b": ("dc",), "a": ("cd",)}
BINARY = {rule.name: (reference(rule), *rule.domain,
                      OPERAND_KINDS[rule.constant] if rule.differentiable == "ab" else ("cd",))
          for rule in BINARY_RULES}

# partials of the dual4 operands; the last lane has tangent 0 in both
TA = np.array([1.0, -0.5, 2.0, 0.0])
TB = np.array([0.0, 1.0, -2.0, 0.0])

VALUE_TOL = dict(rtol=1e-14, atol=1e-15)
DERIVATIVE_TOL = dict(rtol=1e-7, atol=1e-10)   # the finite difference is good to about 1e-9


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
    for a, b in zip(a_points, b_points, strict=True):
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

    second = np.array([c_hooks.binary_derivatives(op, s, t)[1] for s, t in zip(a, b, strict=True)])
    daa = central_difference(lambda t: partial(0, True)(t, b), a)
    dab = central_difference(lambda t: partial(0, False)(t, a), b)
    dba = central_difference(lambda t: partial(1, True)(t, b), a)
    dbb = central_difference(lambda t: partial(1, False)(t, a), b)
    if name == "power_const_exponent":   # only the base varies: d/da is all it has
        dab, dba, dbb = 0 * dab, 0 * dba, 0 * dbb
    if name == "power_const_base":       # only the exponent varies
        daa, dab, dba = 0 * daa, 0 * dab, 0 * dba
    if BINARY[name][3] == ("cd",) and name != "power_const_base":   # differentiable in b only
        daa = dab = dba = np.full(N, np.nan)
    assert_allclose(second[:, 0], daa, **SECOND_TOL)
    assert_allclose(second[:, 1], dab, **SECOND_TOL)
    assert_allclose(second[:, 1], dba, **SECOND_TOL)    # the mixed partials agree
    assert_allclose(second[:, 2], dbb, **SECOND_TOL)


# -- second-order elements (hdual): every rule against differences of first-order elements ------
#
# An hdual4 x = (v, a, b, c) is the point x(s, t) = v + s a + t_j b[j] + s t_j c[j] seen
# through its derivatives at 0 in s (the outer direction) and t_j (inner direction j):
# y.a = dy/ds, y.b[j] = dy/dt_j, y.c[j] = d2y/ds dt_j. At a fixed s, the first-order
# dual4 element with value v + s a and partials b + s c gives the dy/dt_j; their central
# difference in s is the reference for y.c.

OUTER_A, OUTER_B = 0.7, -1.3                       # a of the two operands
CA = np.array([0.3, 0.0, -1.0, 0.0])               # c of the two operands; lane 3 all zero
CB = np.array([0.0, 0.5, 0.25, 0.0])


def s_difference(g, h=1e-3):
    """d/ds at s = 0 of a function of s (arrays), fourth-order central stencil."""
    return (g(-2 * h) - 8 * g(-h) + 8 * g(h) - g(2 * h)) / (12 * h)


def assert_second_order(result, value, along_a, along_b, along_c, err_msg=""):
    v, a, b, c = result
    assert_allclose(v, value, **VALUE_TOL, err_msg=err_msg)
    assert_allclose(a, along_a, rtol=1e-14, atol=1e-15, err_msg=err_msg)
    assert_allclose(b, along_b, rtol=1e-14, atol=1e-15, err_msg=err_msg)
    assert_allclose(c, along_c, **SECOND_TOL, err_msg=err_msg)


def test_hdual_lane_counts(c_hooks):
    assert c_hooks.hdual_lane_counts() == [1, 2, 4, 8, 16] * 2


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_rule_on_second_order_elements(c_hooks, name):
    op, domain = c_hooks.UNARY_OPS[name], UNARY[name][1]
    for v in points(domain, np.random.default_rng(5)):
        def first(s, t, v=v):
            return np.array(c_hooks.unary_op(op, v + s * OUTER_A, t)[1])

        result = c_hooks.hdual_unary_op(op, (v, OUTER_A, TA, CA))
        assert_second_order(result, c_hooks.unary_op(op, v, TA)[0],
                            first(0.0, [OUTER_A, 0, 0, 0])[0], first(0.0, TA),
                            s_difference(lambda s, first=first: first(s, TA + s * CA)), name)
        assert result[3][3] == 0.0   # no seed in lane 3


@pytest.mark.parametrize("name, operands", [(name, operands) for name in sorted(BINARY)
                                            for operands in BINARY[name][3]])
def test_binary_rule_on_second_order_elements(c_hooks, name, operands):
    op, a_domain, b_domain = c_hooks.BINARY_OPS[name], BINARY[name][1], BINARY[name][2]
    rng = np.random.default_rng(6)
    a_points = points(a_domain, rng)
    if b_domain == APART:
        b_points = a_points + rng.choice([-1.0, 1.0], N) * rng.uniform(0.1, 1.0, N)
    else:
        b_points = points(b_domain, rng)
    # a constant operand does not move: no outer partial
    sa = OUTER_A if operands[0] == "d" else 0.0
    sb = OUTER_B if operands[1] == "d" else 0.0
    for u, w in zip(a_points, b_points, strict=True):
        def first(s, ta, tb, u=u, w=w):
            return np.array(c_hooks.binary_op(op, operands, u + s * sa, w + s * sb, ta, tb)[1])

        x = (u, OUTER_A, TA, CA) if operands[0] == "d" else u
        y = (w, OUTER_B, TB, CB) if operands[1] == "d" else w
        result = c_hooks.hdual_binary_op(op, operands, x, y)
        assert_second_order(
            result, c_hooks.binary_op(op, operands, u, w, TA, TB)[0],
            first(0.0, [OUTER_A, 0, 0, 0], [OUTER_B, 0, 0, 0])[0], first(0.0, TA, TB),
            s_difference(lambda s, first=first: first(s, TA + s * CA, TB + s * CB)),
            f"{name} at {u}, {w}")


def test_shorthands_on_second_order_elements(c_hooks):
    for u, w in [(1.3, 0.7), (0.4, -2.1), (2.5, 1.5)]:
        x, y = (u, OUTER_A, TA, CA), (w, OUTER_B, TB, CB)
        results = c_hooks.hdual_shorthands(x, y, False)
        assert sorted(results) == sorted(SHORTHANDS)
        for name, (func, operands) in SHORTHANDS.items():
            sa = OUTER_A if operands[0] == "d" else 0.0
            sb = OUTER_B if operands[1] == "d" else 0.0

            def first(s, ta, tb, func=func, operands=operands, sa=sa, sb=sb, u=u, w=w):
                # the first-order partials of func at (u + s sa, w + s sb), by differences
                def at(p, q):
                    return np.float64(func(p, q))

                d_a = central_difference(lambda p: at(p, w + s * sb), np.float64(u + s * sa))
                d_b = central_difference(lambda q: at(u + s * sa, q), np.float64(w + s * sb))
                return (d_a * np.asarray(ta) if operands[0] == "d" else 0.0) + \
                       (d_b * np.asarray(tb) if operands[1] == "d" else 0.0)

            v, a, b, c = results[name]
            assert_allclose(v, func(u, w), **VALUE_TOL, err_msg=name)
            assert_allclose(a, first(0.0, [OUTER_A], [OUTER_B])[0], **DERIVATIVE_TOL, err_msg=name)
            assert_allclose(b, first(0.0, TA, TB), **DERIVATIVE_TOL, err_msg=name)
            assert_allclose(c, s_difference(lambda s: first(s, TA + s * CA, TB + s * CB), h=1e-2),
                            rtol=1e-5, atol=1e-7, err_msg=name)


def test_shorthands_on_float_second_order_elements(c_hooks):
    # the float elements are the double ones rounded: their inputs are floats already
    x = (np.float32(1.3), np.float32(0.5), TA, CA)
    y = (np.float32(0.7), np.float32(-1.25), TB, CB)
    singles = c_hooks.hdual_shorthands(x, y, True)
    doubles = c_hooks.hdual_shorthands(tuple(map(np.float64, x[:2])) + x[2:],
                                       tuple(map(np.float64, y[:2])) + y[2:], False)
    for name in SHORTHANDS:
        for got, expected in zip(singles[name], doubles[name], strict=True):
            assert_allclose(got, expected, rtol=2e-7, atol=1e-7, err_msg=name)
            assert_array_equal(np.float32(got), got)   # rounded to float


def test_zero_seed_gets_zero_where_the_second_derivative_is_infinite(c_hooks):
    sqrt = c_hooks.UNARY_OPS["sqrt"]
    b = [1.0, 0.0, -2.0, 0.0]
    # no outer partial: c = g' c + g'' b a has only zero seeds, whatever g' and g''
    assert c_hooks.hdual_unary_op(sqrt, (0.0, 0.0, b, [0.0] * 4)) == (
        0.0, 0.0, [np.inf, 0.0, -np.inf, 0.0], [0.0] * 4)
    # an outer partial: g'' = -inf reaches exactly the lanes with b != 0
    assert c_hooks.hdual_unary_op(sqrt, (0.0, 1.0, b, [0.0] * 4)) == (
        0.0, np.inf, [np.inf, 0.0, -np.inf, 0.0], [-np.inf, 0.0, np.inf, 0.0])
    # both operands dual: d/da of 0 ** 0.5 is inf, d2/da2 -inf; a lane no operand moves is 0
    power = c_hooks.BINARY_OPS["power"]
    v, a, b2, c = c_hooks.hdual_binary_op(power, "dd", (0.0, 0.0, b, [0.0] * 4),
                                          (0.5, 0.0, [0.0] * 4, [0.0] * 4))
    assert (v, a, b2, c) == (0.0, 0.0, [np.inf, 0.0, -np.inf, 0.0], [0.0] * 4)


def test_generic_code_reading_the_fields_of_one_order(c_hooks):
    # compiled at all: over dual (first order), or under `if any_dual in second_order_dual`
    assert c_hooks.order_specific_fields(1.5) == [3.0] * 4


def test_constant_second_order_element(c_hooks):
    for single in (False, True):
        assert c_hooks.hdual_constant(2.5, single) == (2.5, 0.0, [0.0] * 4, [0.0] * 4)


@pytest.mark.parametrize("inner, lane0", [(4, 0), (8, 4), (16, 12), (24, 16), (24, 20)])
def test_second_order_load_and_store_move_their_block(c_hooks, inner, lane0):
    # an hdual4 moves lane 0 (a), and b[j], c[j] for inner directions lane0 ... lane0 + 3
    n = 3
    row = c_hooks.second_order_rows(inner)[-1]
    x = np.arange(1.0, n + 1.0)
    dx = np.arange(1.0, n * row + 1.0).reshape(n, row)
    y, dy = c_hooks.hdual_block(x, dx, inner, lane0)
    moved = [0] + [1 + lane0 + j for j in range(4)] + [1 + inner + lane0 + j for j in range(4)]
    expected = np.zeros_like(dx)
    expected[:, moved] = dx[:, moved]
    assert_array_equal(y, x)
    assert_array_equal(dy, expected)
