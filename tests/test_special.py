"""scipy.special's ufuncs of the rule table, at the user's level, on every engine.

The table-driven tests (test_rules, test_rule_table, test_dual_elements, test_tape_replay,
test_random_programs, test_aliasing) enumerate these rules with the others; here: values
equal to SciPy's own, first and second derivatives and nested derivatives on both engines
against JAX (jax.scipy.special, or the stand-ins of derivative_references where JAX lacks
a function or its forward mode: the Bessel functions by their integrals, ...), the tails
and boundaries where a textbook derivative cancels or is undefined against analytic
formulas, the operands that are not differentiable, the errors that name the function,
scipy.special's functions of other arities (betainc, hyp2f1, airy, multigammaln), and
models as users write them.
"""
import functools
import math
import subprocess
import sys

import numpy as np
import pytest
from derivative_references import central_differences, function_of, jax, jnp
from numpy.testing import assert_allclose, assert_array_equal
from rule_domains import binary_points, points

import cyad
from cyad._rules import table

pytestmark = pytest.mark.xdist_group("test_special")

sc = pytest.importorskip("scipy.special")
needs_jax = pytest.mark.skipif(jax is None, reason="JAX is the reference")

ENGINES = ["dual", "tape"]
DTYPES = [np.float64, np.float32]
SPECIAL_UNARY = [rule for rule in table.UNARY_RULES if rule.ufuncs[0].startswith("scipy.")]
SPECIAL_BINARY = [rule for rule in table.BINARY_RULES
                  if rule.ufuncs and rule.ufuncs[0].startswith("scipy.")]
N = 9
# against JAX's implementations (other algorithms, differentiated)
TOLERANCE = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=2e-5, atol=1e-6)}


def ufunc(rule):
    return table.resolve(rule.ufuncs[0])


def unary_points(rule, dtype):
    x = points(rule.domain, np.random.default_rng(len(rule.name)), N)
    return x.astype(dtype)


def binary_operands(rule, dtype):
    a, b = binary_points(*rule.domain, np.random.default_rng(len(rule.name)), N)
    return a.astype(dtype), b.astype(dtype)


def ulps(actual, expected):
    expected = np.asarray(expected)
    return np.max(np.abs(np.asarray(actual, np.float64) - expected)
                  / np.spacing(np.abs(expected).astype(actual.dtype)))


# -- values: SciPy's own ------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rule", SPECIAL_UNARY, ids=lambda r: r.name)
def test_unary_values_are_scipys(rule, dtype, engine):
    f = ufunc(rule)
    x = unary_points(rule, dtype)
    value, _ = cyad.value_and_jacobian(f, x, engine=engine)
    assert value.dtype == dtype
    if dtype == np.float64:
        assert_array_equal(value, f(x))
    else:   # computed in double, rounded: within an ulp or two of SciPy's float32 loop
        assert ulps(value, f(x.astype(np.float64))) <= 0.5
        assert ulps(value, f(x)) <= 4


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rule", SPECIAL_BINARY, ids=lambda r: r.name)
def test_binary_values_are_scipys(rule, dtype, engine):
    f = ufunc(rule)
    a, b = binary_operands(rule, dtype)
    value, _ = cyad.value_and_jacobian(lambda t: f(a, t), b, engine=engine)
    assert value.dtype == dtype
    plain = function_of(np, f)   # (the order as SciPy takes it)
    if dtype == np.float64:
        assert_array_equal(value, plain(a, b))
    else:
        assert ulps(value, plain(a.astype(np.float64), b.astype(np.float64))) <= 0.5


# -- derivatives against JAX ----------------------------------------------------------------------

def jax_diagonals(g, x):
    """The first and second derivatives of an elementwise JAX function at x (float64)."""
    x = np.asarray(x, np.float64)
    # one compiled computation (JAX compiles each primitive of an eager call on its own)
    first, second = jax.jit(lambda t: (jax.vmap(jax.grad(g))(t),
                                       jax.vmap(jax.grad(jax.grad(g)))(t)))(x)
    return np.asarray(first), np.asarray(second)


# JAX's references, computed once for every engine that is checked against them
@functools.cache
def unary_references(name, dtype):
    """jax_diagonals of the rule `name` at its points in dtype."""
    rule = next(r for r in SPECIAL_UNARY if r.name == name)
    return jax_diagonals(function_of(jnp, ufunc(rule)), unary_points(rule, dtype))


@functools.cache
def binary_references(name, dtype):
    """The partials of the rule `name` at its operands in dtype: d/db, d2/db2, d/da, d2/da2,
    d2/da db."""
    rule = next(r for r in SPECIAL_BINARY if r.name == name)
    g = function_of(jnp, ufunc(rule))
    a, b = (t.astype(np.float64) for t in binary_operands(rule, dtype))
    partials = (jax.grad(g, 1), jax.grad(jax.grad(g, 1), 1))
    if rule.differentiable != "b":
        partials += (jax.grad(g, 0), jax.grad(jax.grad(g, 0), 0), jax.grad(jax.grad(g, 0), 1))
    return tuple(np.asarray(r) for r in jax.jit(
        lambda a, b: [jax.vmap(h)(a, b) for h in partials])(a, b))


def assert_diagonal(matrix, diagonal, dtype):
    assert matrix.dtype == dtype
    assert_allclose(np.diagonal(matrix), diagonal, **TOLERANCE[dtype])
    assert np.all(matrix[~np.eye(len(diagonal), dtype=bool)] == 0)


@needs_jax
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rule", SPECIAL_UNARY, ids=lambda r: r.name)
def test_unary_derivatives(rule, dtype, engine):
    f = ufunc(rule)
    x = unary_points(rule, dtype)
    d, d2 = unary_references(rule.name, dtype)
    assert_diagonal(cyad.jacobian(f, x, engine=engine), d, dtype)
    assert_diagonal(cyad.hessian(lambda t: np.sum(f(t)), x, engine=engine), d2, dtype)
    # second_derivative of a scalar, and an HVP
    assert_allclose(cyad.second_derivative(f, x[0], engine=engine), d2[0], **TOLERANCE[dtype])
    v = np.linspace(-1.0, 1.0, N).astype(dtype)
    assert_allclose(cyad.hvp(lambda t: np.sum(f(t)), x, v, engine=engine), d2 * v,
                    **TOLERANCE[dtype])


@needs_jax
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rule", SPECIAL_BINARY, ids=lambda r: r.name)
def test_binary_derivatives(rule, dtype, engine):
    f = ufunc(rule)
    a, b = binary_operands(rule, dtype)
    x = np.concatenate([a, b])
    db, dbb, *partials = binary_references(rule.name, dtype)
    # in b, a constant
    assert_diagonal(cyad.jacobian(lambda t: f(a, t), b, engine=engine), db, dtype)
    assert_diagonal(cyad.hessian(lambda t: np.sum(f(a, t)), b, engine=engine), dbb, dtype)
    if rule.differentiable == "b":
        return
    # in both
    jac = cyad.jacobian(lambda t: f(t[:N], t[N:]), x, engine=engine)
    assert_diagonal(jac[:, :N], partials[0], dtype)
    assert_diagonal(jac[:, N:], db, dtype)
    hessian = cyad.hessian(lambda t: np.sum(f(t[:N], t[N:])), x, engine=engine)
    assert_diagonal(hessian[:N, :N], partials[1], dtype)
    assert_diagonal(hessian[:N, N:], partials[2], dtype)
    assert_diagonal(hessian[N:, :N], partials[2], dtype)
    assert_diagonal(hessian[N:, N:], dbb, dtype)


@needs_jax
@pytest.mark.parametrize("rule", SPECIAL_UNARY, ids=lambda r: r.name)
def test_nested_derivative(rule):
    # the derivative of a function that takes a derivative, on the dual engine
    f = ufunc(rule)
    x = unary_points(rule, np.float64)[:3]
    _, d2 = unary_references(rule.name, np.float64)
    for t, expected in zip(x, d2[:3], strict=True):
        nested = cyad.derivative(lambda s: cyad.derivative(f, s), t)
        assert_allclose(nested, expected, **TOLERANCE[np.float64])


# -- tails and boundaries -------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_log_ndtr_keeps_its_precision_far_in_the_lower_tail(engine):
    # phi/Phi by the asymptotic series of Mills' ratio: Phi(x)/phi(x) = 1/|x| (1 - 1/x^2
    # + 3/x^4 - 15/x^6 + 105/x^8 - ...), good to rounding at these x
    x = np.array([-40.0, -100.0, -1e3, -1e5])
    series = (1 - 1 / x**2 + 3 / x**4 - 15 / x**6 + 105 / x**8 - 945 / x**10) / np.abs(x)
    d = np.diagonal(cyad.jacobian(sc.log_ndtr, x, engine=engine))
    assert_allclose(d, 1 / series, rtol=4e-16)
    # the second derivative tends to -1
    d2 = np.diagonal(cyad.hessian(lambda t: np.sum(sc.log_ndtr(t)), x, engine=engine))
    assert np.all(np.isfinite(d2)) and np.all(np.abs(d2 + 1) < 1e-3)
    # and in the upper tail the derivative underflows to 0 without NaN
    assert cyad.derivative(sc.log_ndtr, 40.0, engine=engine) == 0.0


@pytest.mark.parametrize("engine", ENGINES)
def test_expit_and_log_expit_in_the_tails(engine):
    x = np.array([-700.0, -40.0, 40.0, 700.0])
    e = np.exp(-np.abs(x))
    expected = e / (1 + e) ** 2       # exact in every digit that matters
    assert_allclose(np.diagonal(cyad.jacobian(sc.expit, x, engine=engine)), expected, rtol=1e-15)
    assert_allclose(np.diagonal(cyad.jacobian(sc.log_expit, x, engine=engine)),
                    1 / (1 + np.exp(x)), rtol=1e-15)
    assert_allclose(np.diagonal(cyad.hessian(lambda t: np.sum(sc.expit(t)), x, engine=engine)),
                    -np.sign(x) * expected * np.tanh(np.abs(x) / 2), rtol=1e-15)


@pytest.mark.parametrize("engine", ENGINES)
def test_xlogy_at_x_zero(engine):
    # xlogy(0, y) = 0 for every y >= 0 (SciPy's definition): d/dy = 0, d/dx = log y
    y = np.array([0.0, 0.5, 2.0])
    jac = cyad.jacobian(lambda t: sc.xlogy(t[:3], t[3:]), np.concatenate([np.zeros(3), y]),
                        engine=engine)
    with np.errstate(divide="ignore"):
        assert_array_equal(np.diagonal(jac[:, :3]), np.log(y))
    assert_array_equal(jac[:, 3:], np.zeros((3, 3)))
    assert_array_equal(cyad.jacobian(lambda t: sc.xlog1py(0.0, t), y, engine=engine),
                       np.zeros((3, 3)))
    assert cyad.derivative(lambda t: sc.xlogy(t, 3.0), 0.0, engine=engine) == np.log(3.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_entropies_at_zero(engine):
    # entr'(0) = +inf (the one-sided limit); kl_div(0, y) = y, so d/dy = 1 there
    assert cyad.derivative(sc.entr, 0.0, engine=engine) == np.inf
    assert cyad.derivative(lambda t: sc.kl_div(0.0, t), 2.0, engine=engine) == 1.0
    assert cyad.derivative(lambda t: sc.rel_entr(0.0, t), 2.0, engine=engine) == 0.0


@pytest.mark.parametrize("engine", ENGINES)
def test_bessel_at_zero(engine):
    # i0e and i1e have a kink at 0 (the scaling e**-|x|): its midpoint; i1'(0) = 1/2
    x = np.zeros(1)
    assert cyad.derivative(sc.i0e, 0.0, engine=engine) == 0.0
    assert cyad.derivative(sc.i1e, 0.0, engine=engine) == 0.5
    assert cyad.derivative(sc.i1, 0.0, engine=engine) == 0.5
    assert cyad.derivative(sc.j1, 0.0, engine=engine) == 0.5
    assert cyad.second_derivative(sc.i0, 0.0, engine=engine) == 0.5
    assert cyad.second_derivative(sc.j0, 0.0, engine=engine) == -0.5
    assert_array_equal(cyad.hessian(lambda t: np.sum(sc.i1(t)), x, engine=engine), [[0.0]])


@pytest.mark.parametrize("engine", ENGINES)
def test_gammainc_at_x_zero(engine):
    # d/dx P(a, x) at 0: 1 for a = 1, 0 for a > 1, +inf for a < 1
    for a, expected in [(1.0, 1.0), (2.5, 0.0), (0.5, np.inf)]:
        assert cyad.derivative(lambda t, a=a: sc.gammainc(a, t), 0.0, engine=engine) == expected
        assert cyad.derivative(lambda t, a=a: sc.gammaincc(a, t), 0.0,
                               engine=engine) == -expected


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("func,log", [(sc.boxcox, np.log), (sc.boxcox1p, np.log1p)],
                         ids=["boxcox", "boxcox1p"])
def test_boxcox_in_lmbda_at_and_near_zero(func, log, engine):
    # boxcox(x, lmbda) = (x**lmbda - 1) / lmbda is the sum over k >= 1 of lmbda**(k-1)
    # log(x)**k / k!: at lmbda = 0 its partials in lmbda are log(x)**2 / 2 and log(x)**3 / 3,
    # and near 0 the first terms of the series (the closed form cancels there)
    x = np.array([0.3, 0.9, 2.5, 4.0])
    lg = log(x)
    for lmbda in (0.0, 1e-7, -3e-5):
        d = lg ** 2 / 2 + lmbda * lg ** 3 / 3 + lmbda ** 2 * lg ** 4 / 8
        d2 = lg ** 3 / 3 + lmbda * lg ** 4 / 4 + lmbda ** 2 * lg ** 5 / 10
        jacobian = cyad.jacobian(lambda v, x=x: func(x, v), np.full(4, lmbda), engine=engine)
        assert_allclose(np.diagonal(jacobian), d, rtol=1e-14)
        hessian = cyad.hessian(lambda v, x=x: np.sum(func(x, v)), np.full(4, lmbda),
                               engine=engine)
        assert_allclose(np.diagonal(hessian), d2, rtol=1e-14)
        # in x: (1 + x)**(lmbda - 1) for boxcox1p, x**(lmbda - 1) for boxcox
        base = x + (1.0 if func is sc.boxcox1p else 0.0)
        mixed = cyad.hessian(lambda v: np.sum(func(v[:4], v[4:])),
                             np.concatenate([x, np.full(4, lmbda)]), engine=engine)
        assert_allclose(np.diagonal(mixed[:4, 4:]), base ** (lmbda - 1.0) * lg, rtol=1e-14)


@pytest.mark.parametrize("engine", ENGINES)
def test_zeta_in_q_and_the_polygamma_it_gives(engine):
    # d/dq zeta(s, q) = -s zeta(s + 1, q); psi^(n)(x) = (-1)**(n+1) n! zeta(n + 1, x)
    q = np.array([0.3, 1.0, 2.5, 40.0])
    assert_allclose(np.diagonal(cyad.jacobian(lambda t: sc.zeta(3.0, t), q, engine=engine)),
                    -3.0 * sc.zeta(4.0, q), rtol=1e-15)
    assert_allclose(np.diagonal(cyad.jacobian(sc.digamma, q, engine=engine)),
                    sc.polygamma(1, q), rtol=1e-15)
    assert_allclose(np.diagonal(cyad.hessian(lambda t: np.sum(sc.digamma(t)), q,
                                             engine=engine)), sc.polygamma(2, q), rtol=1e-15)


# -- betainc and betaincc: three operands, differentiable in x -----------------------------------

BETA_A = np.array([0.5, 1.0, 2.0, 3.5, 0.8, 1.5])
BETA_B = np.array([2.0, 0.7, 1.0, 4.0, 0.6, 2.5])
BETA_X = np.array([0.15, 0.3, 0.45, 0.6, 0.75, 0.9])


@needs_jax
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["betainc", "betaincc"])
def test_betainc_in_x(name, dtype, engine):
    f = getattr(sc, name)
    x = BETA_X.astype(dtype)
    value, jacobian = cyad.value_and_jacobian(lambda t: f(BETA_A, BETA_B, t), x, engine=engine)
    assert_array_equal(value, f(BETA_A, BETA_B, x).astype(dtype))   # SciPy's, in x's dtype
    sign = 1.0 if name == "betainc" else -1.0
    # JAX's elementwise derivatives, one operand triple at a time
    d = np.array([jax.grad(lambda t, a=a, b=b: sign * jax.scipy.special.betainc(a, b, t))(
        float(t)) for a, b, t in zip(BETA_A, BETA_B, x)])
    d2 = np.array([jax.grad(jax.grad(lambda t, a=a, b=b: sign * jax.scipy.special.betainc(
        a, b, t)))(float(t)) for a, b, t in zip(BETA_A, BETA_B, x)])
    assert_diagonal(jacobian, d, dtype)
    hessian = cyad.hessian(lambda t: np.sum(f(BETA_A, BETA_B, t)), x, engine=engine)
    assert_diagonal(hessian, d2, dtype)
    if engine == "dual":   # nested: d/ds d/dt f(x + s + t) = f''(x)
        nested = cyad.derivative(lambda s: cyad.derivative(
            lambda t: np.sum(f(BETA_A, BETA_B, x + s + t)), dtype(0.0)), dtype(0.0))
        assert_allclose(nested, np.sum(d2), **TOLERANCE[dtype])


@pytest.mark.parametrize("engine", ENGINES)
def test_betainc_broadcasts_its_constant_parameters(engine):
    # a of shape (3, 1) against x of shape (4,): the derivative x**(a-1) (1-x)**(b-1) / B(a, b)
    a, b, x = np.array([[0.5], [1.0], [2.5]]), 1.5, np.array([0.2, 0.4, 0.6, 0.8])
    jacobian = cyad.jacobian(lambda t: sc.betainc(a, b, t), x, engine=engine)
    expected = x ** (a - 1.0) * (1.0 - x) ** (b - 1.0) / sc.beta(a, b)
    assert_allclose(jacobian, expected[:, :, None] * np.eye(4), rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize("engine", ENGINES)
def test_betainc_at_x_zero_and_one(engine):
    # x**(a-1) (1-x)**(b-1) / B(a, b) at 0: +inf (a < 1), b (a = 1), 0 (a > 1); at 1 by b
    for a, expected in [(0.5, np.inf), (1.0, 2.5), (3.0, 0.0)]:
        assert cyad.derivative(lambda t, a=a: sc.betainc(a, 2.5, t), 0.0,
                               engine=engine) == pytest.approx(expected, rel=1e-14)
        assert cyad.derivative(lambda t, a=a: sc.betainc(2.5, a, t), 1.0,
                               engine=engine) == pytest.approx(expected, rel=1e-14)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["betainc", "betaincc"])
def test_betainc_in_a_or_b_is_refused(name, engine):
    f = getattr(sc, name)
    with pytest.raises(TypeError, match=rf"scipy\.special\.{name} is differentiable in x"):
        cyad.derivative(lambda a: f(a, 2.0, 0.5), 1.5, engine=engine)
    with pytest.raises(TypeError, match=rf"scipy\.special\.{name} is differentiable in x"):
        cyad.gradient(lambda v: np.sum(f(2.0, v, v * 0.1)), np.array([1.5, 2.5]),
                      engine=engine)


# -- Bessel functions and their kin: orders, edges, tails -----------------------------------------

def test_jn_is_jv():
    # scipy.special.jn is jv's ufunc under another name: its rule
    assert sc.jn is sc.jv
    x = np.array([0.3, 1.7, 4.2])
    assert_array_equal(np.diagonal(cyad.jacobian(lambda t: sc.jn(2, t), x)),
                       0.5 * (sc.jv(1, x) - sc.jv(3, x)))


@pytest.mark.filterwarnings("ignore:floating point number truncated:RuntimeWarning")
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("func", [sc.yn, sc.kn, sc.expn], ids=lambda f: f.__name__)
def test_an_integer_order_is_truncated_as_scipy_does(func, engine):
    # a float order is truncated toward zero: values and derivatives are the integer's
    x = np.array([0.4, 1.1, 2.7])
    for n, whole in [(2.7, 2), (0.5, 0), (-0.5, 0), (1.0, 1)]:
        value, jacobian = cyad.value_and_jacobian(lambda t, n=n: func(n, t), x, engine=engine)
        assert_array_equal(value, func(n, x))
        assert_array_equal(jacobian, cyad.jacobian(lambda t, k=whole: func(k, t), x,
                                                   engine=engine))
        assert_array_equal(cyad.hessian(lambda t, n=n: np.sum(func(n, t)), x, engine=engine),
                           cyad.hessian(lambda t, k=whole: np.sum(func(k, t)), x, engine=engine))


@pytest.mark.parametrize("engine", ENGINES)
def test_expn_of_low_orders(engine):
    # E_n' = -E_n-1, E_n'' = E_n-2, with E_0 = e**-x / x, E_-1 = e**-x (1 + x) / x**2 and
    # E_-2 = e**-x (x**2 + 2x + 2) / x**3 where SciPy's expn has no negative order
    x = np.array([0.2, 1.0, 3.5])
    e = np.exp(-x)
    lower = {0: e / x, -1: e * (1 + x) / x ** 2, -2: e * (x * x + 2 * x + 2) / x ** 3}
    for n in range(4):
        below = [lower[k] if k <= 0 else sc.expn(k, x) for k in (n - 1, n - 2)]
        jacobian = cyad.jacobian(lambda t, n=n: sc.expn(n, t), x, engine=engine)
        assert_allclose(np.diagonal(jacobian), -below[0], rtol=1e-14)
        hessian = cyad.hessian(lambda t, n=n: np.sum(sc.expn(n, t)), x, engine=engine)
        assert_allclose(np.diagonal(hessian), below[1], rtol=1e-14)
    assert np.isnan(cyad.derivative(lambda t: sc.expn(-1, t), 1.0, engine=engine))


@pytest.mark.parametrize("engine", ENGINES)
def test_rgamma_at_the_poles_of_gamma(engine):
    # 1/Gamma is entire: at x = -n its derivative is (-1)**n n!, its second derivative
    # -2 (-1)**n n! psi(n + 1) (1/Gamma(-n + e) = (-1)**n n! e (1 - e psi(n + 1) + ...))
    n = np.arange(4.0)
    sign, factorial = (-1.0) ** n, sc.factorial(n)
    assert_allclose(np.diagonal(cyad.jacobian(sc.rgamma, -n, engine=engine)), sign * factorial,
                    rtol=1e-14)
    hessian = cyad.hessian(lambda t: np.sum(sc.rgamma(t)), -n, engine=engine)
    assert_allclose(np.diagonal(hessian), -2 * sign * factorial * sc.psi(n + 1), rtol=1e-14)
    # beside them, and above 1/2 (-psi / Gamma)
    x = np.array([-2.0 + 1e-9, -1e-12, 0.7, 6.5])
    assert_allclose(np.diagonal(cyad.jacobian(sc.rgamma, x, engine=engine)),
                    np.where(x < 0.5, [2.0, 1.0, 0.0, 0.0], -sc.rgamma(x) * sc.psi(x)),
                    rtol=1e-8)


@pytest.mark.parametrize("engine", ENGINES)
def test_spence_at_and_near_one(engine):
    # spence' = log(x) / (1 - x): -1 at x = 1; its derivative there 1/2, and near 1 the
    # series 1/2 - 2t/3 + 3t**2/4 - ... of t = x - 1 (the closed form cancels)
    assert cyad.derivative(sc.spence, 1.0, engine=engine) == -1.0
    assert cyad.second_derivative(sc.spence, 1.0, engine=engine) == 0.5
    x = np.array([1.0 - 1e-6, 1.0 + 1e-8, 1.003])
    t = x - 1.0
    series = sum((-1) ** (k + 1) * k * t ** (k - 1) / (k + 1) for k in range(1, 9))
    hessian = cyad.hessian(lambda s: np.sum(sc.spence(s)), x, engine=engine)
    assert_allclose(np.diagonal(hessian), series, rtol=1e-14)


@pytest.mark.parametrize("engine", ENGINES)
def test_erfcx_and_dawsn_in_their_tails(engine):
    # erfcx' = (2/sqrt(pi)) sum over n >= 1 of (-1)**n (2n-1)!! u**n and dawsn' = -sum of
    # (2n-1)!! u**n, u = 1/(2 x**2) (asymptotic: six terms are exact at these x); the
    # textbook forms 2 x erfcx - 2/sqrt(pi) and 1 - 2 x dawsn cancel there
    x = np.array([50.0, 1e3, 1e5])
    u = 0.5 / x ** 2
    double = [1.0, 1.0, 3.0, 15.0, 105.0, 945.0, 10395.0]    # (2n-1)!!
    erfcx_d = 2 / np.sqrt(np.pi) * sum((-u) ** n * double[n] for n in range(1, 7))
    dawsn_d = -sum(u ** n * double[n] for n in range(1, 7))
    erfcx_d2 = sum((-u) ** n * double[n] * (2 * n + 1) * (2 * n + 2) for n in range(6)) \
        / (np.sqrt(np.pi) * x ** 3)
    dawsn_d2 = sum(u ** n * double[n] * (2 * n + 1) * (2 * n + 2) for n in range(6)) \
        / (2 * x ** 3)
    for f, d, d2 in [(sc.erfcx, erfcx_d, erfcx_d2), (sc.dawsn, dawsn_d, dawsn_d2)]:
        assert_allclose(np.diagonal(cyad.jacobian(f, x, engine=engine)), d, rtol=2e-15)
        hessian = cyad.hessian(lambda t, f=f: np.sum(f(t)), x, engine=engine)
        assert_allclose(np.diagonal(hessian), d2, rtol=2e-15)
    # dawsn is odd; where the series takes over, the derivatives meet
    assert_allclose(np.diagonal(cyad.jacobian(sc.dawsn, -x, engine=engine)), dawsn_d,
                    rtol=2e-15)
    for f in (sc.erfcx, sc.dawsn):
        assert_allclose(cyad.derivative(f, 7.0, engine=engine),
                        cyad.derivative(f, np.nextafter(7.0, 0.0), engine=engine), rtol=2e-14)


@pytest.mark.parametrize("engine", ENGINES)
def test_complete_elliptic_integrals_at_zero(engine):
    # K = (pi/2) (1 + m/4 + 9 m**2/64 + ...), E = (pi/2) (1 - m/4 - 3 m**2/64 - ...): exact
    # at m = 0, where the forms in K and E (E - (1 - m) K) / (2 m (1 - m)) are 0/0
    assert cyad.derivative(sc.ellipk, 0.0, engine=engine) == np.pi / 8
    assert cyad.second_derivative(sc.ellipk, 0.0, engine=engine) == 9 * np.pi / 64
    assert cyad.derivative(sc.ellipe, 0.0, engine=engine) == -np.pi / 8
    assert cyad.second_derivative(sc.ellipe, 0.0, engine=engine) == -3 * np.pi / 64
    # beyond m = 1, as K and E, NaN
    assert np.isnan(cyad.derivative(sc.ellipk, 1.5, engine=engine))


@pytest.mark.parametrize("engine", ENGINES)
def test_incomplete_elliptic_integrals_at_m_zero(engine):
    # the partials in m at m = 0 are integrals of powers of sin: dF/dm = (1/2) int sin**2,
    # d2F/dm2 = (3/4) int sin**4, dE/dm and d2E/dm2 = -(1/2) and -(1/4) of them, over (0, phi)
    phi = np.array([0.3, 1.2, 2.5, -4.0])
    sin2 = (phi - np.sin(phi) * np.cos(phi)) / 2
    sin4 = 3 * phi / 8 - np.sin(2 * phi) / 4 + np.sin(4 * phi) / 32
    for f, d, d2 in [(sc.ellipkinc, sin2 / 2, 0.75 * sin4), (sc.ellipeinc, -sin2 / 2, -sin4 / 4)]:
        jacobian = cyad.jacobian(lambda m, f=f: f(phi, m), np.zeros(4), engine=engine)
        assert_allclose(np.diagonal(jacobian), d, rtol=1e-14)
        hessian = cyad.hessian(lambda m, f=f: np.sum(f(phi, m)), np.zeros(4), engine=engine)
        assert_allclose(np.diagonal(hessian), d2, rtol=1e-13)


@needs_jax
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["ellipkinc", "ellipeinc"])
def test_incomplete_elliptic_integrals_in_m(name, engine):
    # against JAX's (Carlson's duplication) near m = 0, on both sides of m sin(phi)**2 = 1/2
    # (where the second partial in m changes method), beyond a period of phi, and m > 1
    f, g = getattr(sc, name), function_of(jnp, getattr(sc, name))
    phi = np.array([0.9, 1.4, 1.4, 2.0, -3.5, 0.4, 1.1])
    m = np.array([1e-9, 0.5 / np.sin(1.4) ** 2 - 1e-9, 0.5 / np.sin(1.4) ** 2 + 1e-9, -1e-7,
                  0.7, 1.8, -6.0])
    dm, dmm = (np.asarray(r) for r in jax.jit(lambda p, q: (
        jax.vmap(jax.grad(g, 1))(p, q), jax.vmap(jax.grad(jax.grad(g, 1), 1))(p, q)))(phi, m))
    assert_allclose(np.diagonal(cyad.jacobian(lambda q: f(phi, q), m, engine=engine)), dm,
                    rtol=1e-12)
    hessian = cyad.hessian(lambda q: np.sum(f(phi, q)), m, engine=engine)
    assert_allclose(np.diagonal(hessian), dmm, rtol=1e-11)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("f", [sc.ellipkinc, sc.ellipeinc], ids=lambda f: f.__name__)
def test_nested_derivatives_of_the_incomplete_elliptic_integrals(f, engine):
    # the partial in m composes (a custom function whose JVP is the next order's partial):
    # nested derivatives are the second partials, at any order
    for phi, m in [(0.7, 0.3), (2.3, -1.5), (1.2, 1e-9), (-4.0, 0.8)]:
        in_m = cyad.derivative(lambda s, p=phi: cyad.derivative(lambda t: f(p, t), s), m,
                               engine=engine)
        assert_allclose(in_m, cyad.second_derivative(lambda t, p=phi: f(p, t), m), rtol=1e-14)
        mixed = cyad.derivative(lambda s, q=m: cyad.derivative(lambda t: f(s, t), q), phi,
                                engine=engine)
        hessian = cyad.hessian(lambda v: f(v[0], v[1]), np.array([phi, m]))
        assert_allclose(mixed, hessian[0, 1], rtol=1e-14)
    # the third partial in m at m = 0: (1/2)_3 (F) or (-1/2)_3 (E) times the integral of
    # sin**6 over (0, phi)
    phi = 0.9
    sin6 = 5 * phi / 16 - 15 * np.sin(2 * phi) / 64 + 3 * np.sin(4 * phi) / 64 \
        - np.sin(6 * phi) / 192
    third = cyad.derivative(lambda u: cyad.derivative(lambda s: cyad.derivative(
        lambda t: f(phi, t), s), u), 0.0, engine=engine)
    assert_allclose(third, (15 / 8 if f is sc.ellipkinc else -3 / 8) * sin6, rtol=1e-13)


# -- hyp2f1: four operands, differentiable in z ----------------------------------------------------

HYP_A = np.array([0.5, -1.5, 2.0, 0.3, 1.0])
HYP_B = np.array([1.5, 0.7, 2.5, -0.4, 1.0])
HYP_C = np.array([2.5, 1.2, 3.5, 1.7, 2.0])
HYP_Z = np.array([-0.8, -0.3, 0.1, 0.5, 0.85])


@needs_jax
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_hyp2f1_in_z(dtype, engine):
    z = HYP_Z.astype(dtype)
    f = functools.partial(sc.hyp2f1, HYP_A, HYP_B, HYP_C)
    value, jacobian = cyad.value_and_jacobian(f, z, engine=engine)
    assert_array_equal(value, f(z).astype(dtype))
    g = jax.scipy.special.hyp2f1
    d, d2 = (np.asarray(r) for r in jax.jit(lambda a, b, c, t: (
        jax.vmap(jax.grad(g, 3))(a, b, c, t), jax.vmap(jax.grad(jax.grad(g, 3), 3))(a, b, c, t)
    ))(HYP_A, HYP_B, HYP_C, z.astype(np.float64)))
    assert_diagonal(jacobian, d, dtype)
    assert_diagonal(cyad.hessian(lambda t: np.sum(f(t)), z, engine=engine), d2, dtype)
    if engine == "dual":   # nested
        nested = cyad.derivative(lambda s: cyad.derivative(
            lambda t: np.sum(f(z + s + t)), dtype(0.0)), dtype(0.0))
        assert_allclose(nested, np.sum(d2), **TOLERANCE[dtype])


@pytest.mark.parametrize("engine", ENGINES)
def test_hyp2f1_broadcasts_its_constant_parameters_and_refuses_dual_ones(engine):
    a, z = np.array([[0.5], [-1.5], [3.0]]), np.array([-0.4, 0.2, 0.7])
    jacobian = cyad.jacobian(lambda t: sc.hyp2f1(a, 1.5, 2.5, t), z, engine=engine)
    expected = a * 1.5 / 2.5 * sc.hyp2f1(a + 1, 2.5, 3.5, z)
    assert_allclose(jacobian, expected[:, :, None] * np.eye(3), rtol=1e-14)
    with pytest.raises(TypeError, match=r"scipy\.special\.hyp2f1 is differentiable in z"):
        cyad.derivative(lambda c: sc.hyp2f1(0.5, 1.5, c, 0.3), 2.5, engine=engine)


# -- log_wright_bessel: three operands, differentiable in x ---------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_log_wright_bessel_in_x_against_its_series_and_differences(engine):
    # Phi(a, b; x) = sum_k x**k / (k! Gamma(a k + b)), whose derivative is Phi(a, a + b; x)
    a, b, x = 0.6, 1.3, np.array([0.05, 0.4, 1.7, 6.0, 30.0])

    def phi(a, b, x, terms=400):
        k = np.arange(terms)[:, None]
        return np.sum(np.exp(sc.xlogy(k, x) - sc.gammaln(k + 1) - sc.gammaln(a * k + b)), 0)

    f = functools.partial(sc.log_wright_bessel, a, b)
    jacobian = cyad.jacobian(f, x, engine=engine)
    assert_allclose(np.diag(jacobian), phi(a, a + b, x) / phi(a, b, x), rtol=1e-12)
    hessian = cyad.hessian(lambda t: np.sum(f(t)), x, engine=engine)
    second = phi(a, 2 * a + b, x) / phi(a, b, x) - (phi(a, a + b, x) / phi(a, b, x)) ** 2
    assert_allclose(np.diag(hessian), second, rtol=1e-10)
    with pytest.raises(TypeError, match=r"log_wright_bessel is differentiable in x"):
        cyad.derivative(lambda s: sc.log_wright_bessel(s, b, 0.5), a, engine=engine)


# -- airy and airye: four results ------------------------------------------------------------------

AIRY_X = np.array([-2.5, -0.7, 0.0, 0.4, 1.9])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_airy_by_airys_equation(dtype, engine):
    # (Ai, Ai', Bi, Bi')' = (Ai', x Ai, Bi', x Bi), and their second derivatives
    # (x Ai, Ai + x Ai', x Bi, Bi + x Bi') (y'' = x y)
    x = AIRY_X.astype(dtype)
    x64 = x.astype(np.float64)
    ai, aip, bi, bip = sc.airy(x64)
    first = [aip, x64 * ai, bip, x64 * bi]
    second = [x64 * ai, ai + x64 * aip, x64 * bi, bi + x64 * bip]
    value, jacobian = cyad.value_and_jacobian(lambda t: np.stack(sc.airy(t)), x, engine=engine)
    assert_array_equal(value, np.stack(sc.airy(x)))
    for k in range(4):
        assert_diagonal(jacobian[k], first[k], dtype)
        hessian = cyad.hessian(lambda t, k=k: np.sum(sc.airy(t)[k]), x, engine=engine)
        assert_diagonal(hessian, second[k], dtype)


@pytest.mark.parametrize("engine", ENGINES)
def test_airye_against_differences_of_scipys(engine):
    # scaled by e**(-+(2/3) x**(3/2)) for x > 0 (Bi's unscaled below 0, Ai's NaN there)
    x = np.array([-2.1, -0.6, 0.6, 1.2, 3.5])
    jacobian = cyad.jacobian(lambda t: np.stack(sc.airye(t)), x, engine=engine)
    for k in range(4):
        inside = x > 0 if k < 2 else np.ones(5, bool)
        expected = np.diagonal(central_differences(lambda t, k=k: sc.airye(t)[k], x))
        assert_allclose(np.diagonal(jacobian[k])[inside], expected[inside], rtol=1e-9)
        assert np.all(np.isnan(np.diagonal(jacobian[k])[~inside]))
        hessian = cyad.hessian(lambda t, k=k: np.sum(sc.airye(t)[k]), x[inside], engine=engine)
        expected = np.diagonal(central_differences(
            lambda t, k=k: np.diagonal(cyad.jacobian(lambda s: sc.airye(s)[k], t)), x[inside]))
        assert_allclose(np.diagonal(hessian), expected, rtol=1e-8)


# -- multigammaln: SciPy's Python function, through gammaln --------------------------------------

@needs_jax
@pytest.mark.parametrize("engine", ENGINES)
def test_multigammaln(engine):
    a = np.array([1.6, 2.3, 4.1, 7.5])
    value, jacobian = cyad.value_and_jacobian(lambda t: sc.multigammaln(t, 3), a, engine=engine)
    assert_array_equal(value, sc.multigammaln(a, 3))
    g = functools.partial(jax.scipy.special.multigammaln, d=3)
    d, d2 = (np.asarray(r) for r in jax.jit(lambda t: (
        jax.vmap(jax.grad(g))(t), jax.vmap(jax.grad(jax.grad(g)))(t)))(a))
    assert_diagonal(jacobian, d, np.float64)
    assert_diagonal(cyad.hessian(lambda t: np.sum(sc.multigammaln(t, 3)), a, engine=engine), d2,
                    np.float64)
    with pytest.raises(ValueError, match="condition a"):
        cyad.derivative(lambda t: sc.multigammaln(t, 3), 0.8, engine=engine)


# -- spherical_jn, yn, in and kn: SciPy's Python functions, through their private ufuncs ---------

SPHERICAL = {"jn": 1.0, "yn": 1.0, "in": -1.0, "kn": -1.0}   # the sign s of their equation
# 0, where j_n and i_n are analytic and y_n and k_n singular, and below it: SciPy's reflection
# (k_n's through complex numbers)
Z = np.array([0.0, 0.05, 0.4, 1.3, 3.7, 9.0, -0.6, -2.2])


def spherical(name):
    return getattr(sc, f"spherical_{name}")


def spherical_second(name, n, z):
    """f'' from SciPy's f and f' by the equation z^2 f'' + 2z f' + (s z^2 - n(n+1)) f = 0."""
    f = spherical(name)
    return (n * (n + 1) * f(n, z) / z - 2.0 * f(n, z, True)) / z - SPHERICAL[name] * f(n, z)


def diagonal_of_differences(f, z):
    return np.diagonal(central_differences(f, z))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", SPHERICAL)
def test_spherical_bessel_functions_against_scipy(name, engine):
    # values and first derivatives: SciPy's (derivative=True for the derivative), bit for bit;
    # second derivatives: central differences of derivative=True, third ones (derivative=True's
    # second) of f'' from SciPy's f and f'; no finite number where y_n and k_n are singular
    f = spherical(name)
    regular = name in ("jn", "in")
    away = np.ones(len(Z), bool) if regular else Z != 0.0
    inside = Z != 0.0
    for n in range(5):
        for derivative in (False, True):
            value, jacobian = cyad.value_and_jacobian(lambda t, n=n, d=derivative: f(n, t, d),
                                                      Z, engine=engine)
            assert_array_equal(value, f(n, Z, derivative))
            if not derivative:
                assert_array_equal(np.diagonal(jacobian), f(n, Z, True))
        second = np.diagonal(cyad.hessian(lambda t, n=n: np.sum(f(n, t)), Z, engine=engine))
        assert_allclose(second[away],
                        diagonal_of_differences(lambda t, n=n: f(n, t, True), Z)[away],
                        rtol=1e-7, atol=1e-9)
        third = np.diagonal(cyad.hessian(lambda t, n=n: np.sum(f(n, t, True)), Z,
                                          engine=engine))
        assert_allclose(third[inside],
                        diagonal_of_differences(lambda t, n=n: spherical_second(name, n, t),
                                                Z[inside]), rtol=1e-6, atol=1e-8)
        if not regular:
            assert not np.isfinite(second[0]) and not np.isfinite(third[0])


def maclaurin(n, s, z, order):
    """The derivative of that order at z of the Maclaurin series of j_n (s = 1) or i_n
    (s = -1): the sum over k of (-s/2)^k z^(n + 2k) / (k! (2n + 2k + 1)!!)."""
    total = 0.0
    for k in range(4):
        p = n + 2 * k
        if p >= order:
            total += ((-s / 2) ** k / (math.factorial(k) * math.prod(range(1, n + p + 2, 2)))
                      * math.perm(p, order) * z ** (p - order))
    return total


@pytest.mark.parametrize("engine", ENGINES)
def test_spherical_bessel_functions_at_zero_and_near_it(engine):
    # second and third derivatives of j_n and i_n, analytic at 0, at 0 and near it (where the
    # form of their equation is 0/0 or cancels): those of the series
    at = np.array([0.0, 1e-9])
    for name, s in (("jn", 1.0), ("in", -1.0)):
        f = spherical(name)
        for n in range(5):
            second = cyad.hessian(lambda t, f=f, n=n: np.sum(f(n, t)), at, engine=engine)
            third = cyad.hessian(lambda t, f=f, n=n: np.sum(f(n, t, True)), at,
                                 engine=engine)
            assert_allclose(np.diagonal(second), [maclaurin(n, s, z, 2) for z in at],
                            rtol=1e-12, atol=0.0)
            assert_allclose(np.diagonal(third), [maclaurin(n, s, z, 3) for z in at],
                            rtol=1e-8, atol=0.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_spherical_bessel_functions_in_float32(engine):
    z = np.array([0.05, 0.4, 1.3, 3.7, -0.6], np.float32)
    z64 = z.astype(np.float64)
    for name in SPHERICAL:
        f = spherical(name)
        for n in range(5):
            value, jacobian = cyad.value_and_jacobian(lambda t, f=f, n=n: f(n, t), z,
                                                      engine=engine)
            assert value.dtype == jacobian.dtype == np.float32
            assert ulps(value, f(n, z64)) <= 0.5
            assert ulps(np.diagonal(jacobian), f(n, z64, True)) <= 0.5
            second = cyad.hessian(lambda t, f=f, n=n: np.sum(f(n, t)), z, engine=engine)
            assert second.dtype == np.float32
            assert_allclose(np.diagonal(second), spherical_second(name, n, z64), rtol=2e-5)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("engine", ENGINES)
def test_spherical_bessel_orders_as_scipy_takes_them(engine):
    # an array of orders broadcast against z; a float order truncated (at z < 0 the
    # reflection's sign taken from the order as given, as SciPy does); a negative one NaN
    z = np.array([-1.5, 0.7, 2.0])
    for name in SPHERICAL:
        f = spherical(name)
        for n in (np.arange(4)[:, None], 2.7, 0.5, -1, np.int32(3)):
            for derivative in (False, True):
                value, _ = cyad.value_and_jacobian(
                    lambda t, f=f, n=n, d=derivative: f(n, t, d), z, engine=engine)
                assert_array_equal(value, f(n, z, derivative))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_function_of_spherical_bessel_functions(engine):
    # sum(j_2(x)^2 k_1(x)): its gradient from SciPy's derivatives, its Hessian by differences
    # of that gradient; nested, the third derivative of y_1 by differences of its second
    x = np.array([0.3, 0.9, 1.7, 2.6])

    def f(t):
        return np.sum(sc.spherical_jn(2, t) ** 2 * sc.spherical_kn(1, t))

    def gradient(t):
        j, k = sc.spherical_jn(2, t), sc.spherical_kn(1, t)
        return 2.0 * j * sc.spherical_jn(2, t, True) * k + j * j * sc.spherical_kn(1, t, True)

    assert_allclose(cyad.gradient(f, x, engine=engine), gradient(x), rtol=1e-13)
    assert_allclose(cyad.hessian(f, x, engine=engine), central_differences(gradient, x),
                    rtol=1e-7, atol=1e-10)
    for t in x[:2]:
        nested = cyad.derivative(lambda s: cyad.derivative(
            lambda u: sc.spherical_yn(1, u, derivative=True), s, engine=engine), t,
            engine=engine)
        assert_allclose(nested, diagonal_of_differences(
            lambda u: spherical_second("yn", 1, u), np.array([t]))[0], rtol=1e-7)


# -- operands that are not differentiable, functions without a rule ------------------------------

@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("func", [sc.gammainc, sc.gammaincc, sc.zeta, sc.jv, sc.iv, sc.kve, sc.yn,
                                  sc.expn, sc.struve],
                         ids=["gammainc", "gammaincc", "zeta", "jv", "iv", "kve", "yn", "expn",
                              "struve"])
def test_a_variable_first_operand_is_refused(func, engine):
    name = "zeta" if func is sc.zeta else func.__name__
    with pytest.raises(TypeError, match=rf"scipy\.special\.(_ufuncs\._)?{name} is differentiable "
                                        "in its second argument only"):
        cyad.derivative(lambda a: func(a, 2.0), 1.5, engine=engine)
    with pytest.raises(TypeError, match="second argument only"):
        cyad.gradient(lambda x: np.sum(func(x, x)), np.array([1.5, 2.5]), engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_function_without_a_rule_is_named_as_scipys(engine):
    # scipy.special.zeta(x) without q calls the Riemann zeta, a ufunc of its own
    for f, name in [(sc.ellipkm1, "ellipkm1"), (lambda x: sc.hyp1f1(0.5, 1.5, x), "hyp1f1"),
                    (sc.zeta, "_ufuncs._riemann_zeta")]:
        with pytest.raises(TypeError, match=rf"cyad: scipy\.special\.{name} is not supported"):
            cyad.derivative(f, 1.5, engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_variable_order_or_complex_z_of_a_spherical_bessel_function_is_refused(engine):
    with pytest.raises(TypeError, match=r"scipy\.special\.spherical_jn is differentiable in "
                                        "z only"):
        cyad.derivative(lambda n: sc.spherical_jn(n, 1.5), 1.0, engine=engine)
    with pytest.raises(TypeError, match=r"scipy\.special\.spherical_kn of a complex z"):
        cyad.derivative(lambda x: np.real(sc.spherical_kn(1, x * (1.0 + 1.0j))), 1.5,
                        engine=engine)


def test_cyad_works_without_scipy(tmp_path):
    # (run outside the source folder, whose uncompiled cyad would shadow the installed one)
    code = ("import sys; sys.modules['scipy'] = None\n"
            "import numpy as np, cyad\n"
            "assert 'scipy.special' not in sys.modules\n"
            "print(cyad.gradient(lambda x: np.sum(np.sin(x)), np.zeros(2)))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=tmp_path)
    assert result.stdout.split() == ["[1.", "1.]"]


# -- models ---------------------------------------------------------------------------------------

def _data(seed=0):
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((30, 4))
    labels = (rng.uniform(size=30) < 0.5).astype(float)
    counts = rng.poisson(2.0, 30).astype(float)
    return features, labels, counts


def logistic_loss(xp, special, w, features, labels):
    z = features @ w
    return -xp.sum(labels * special.log_expit(z) + (1 - labels) * special.log_expit(-z)) \
        + 0.5 * xp.sum(special.expit(w) ** 2)


def poisson_loglik(xp, special, w, features, counts):
    eta = features @ w
    return xp.sum(special.xlogy(counts, xp.exp(eta)) - xp.exp(eta) - special.gammaln(counts + 1))


def von_mises_loglik(xp, special, w, features, labels):
    # angles of a von Mises distribution of mean w[0] and concentration e**w[1], its
    # normalisation 2 pi I_0(kappa) through the scaled ive; a Matern-type term of kv
    angles, kappa = features[:, 0], xp.exp(w[1])
    loglik = xp.sum(kappa * (xp.cos(angles - w[0]) - 1.0)
                    - xp.log(2.0 * xp.pi * special.ive(0.0, kappa)))
    r = xp.abs(features[:, 1]) * xp.exp(w[2]) + 0.1
    return loglik + xp.sum(labels * r ** 1.5 * special.kv(1.5, r)) + 0.5 * w[3] ** 2


def probit_gaussian(xp, special, w, features, labels):
    z = features[:, :3] @ w[:3] + w[3]
    sigma = xp.exp(w[3])
    gaussian = -0.5 * xp.sum(((labels - z) / sigma) ** 2) - labels.size * xp.log(sigma)
    censored = xp.sum(special.log_ndtr(z) * labels + special.log_ndtr(-z) * (1 - labels))
    return gaussian + censored + xp.sum(special.gammaln(1.5 + xp.abs(w)))


class _JaxSpecial:
    # the jax.scipy.special names the models use (log_expit as JAX lacks it)
    def __getattr__(self, name):
        return function_of(jnp, getattr(sc, name))


def _model(model, xp, special):
    # the model of the data as a function of w alone
    features, labels, counts = _data()
    observed = counts if model is poisson_loglik else labels
    return lambda w: model(xp, special, w, features, observed)


_W = np.array([0.3, -0.2, 0.1, 0.05])


@functools.cache
def _model_references(model):
    """JAX's gradient and Hessian of a model at _W (once for both engines)."""
    g = _model(model, jnp, _JaxSpecial())
    gradient, hessian = jax.jit(lambda w: (jax.grad(g)(w), jax.hessian(g)(w)))(_W)
    return np.asarray(gradient), np.asarray(hessian)


@needs_jax
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("model", [logistic_loss, poisson_loglik, probit_gaussian,
                                   von_mises_loglik],
                         ids=lambda m: m.__name__)
def test_models_gradient_and_hessian(model, engine):
    f, g, w = _model(model, np, sc), _model(model, jnp, _JaxSpecial()), _W
    assert_allclose(f(w), g(w), rtol=1e-13)
    gradient, hessian = _model_references(model)
    assert_allclose(cyad.gradient(f, w, engine=engine), gradient, rtol=1e-11)
    assert_allclose(cyad.hessian(f, w, engine=engine), hessian, rtol=1e-10, atol=1e-12)
