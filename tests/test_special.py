"""scipy.special's ufuncs of the rule table, at the user's level, on every engine.

The table-driven tests (test_rules, test_rule_table, test_dual_elements, test_tape_replay,
test_random_programs, test_aliasing) enumerate these rules with the others; here: values
equal to SciPy's own, first and second derivatives and nested derivatives on both engines
against JAX (jax.scipy.special, or the stand-ins of derivative_references where JAX lacks
a function or its forward mode), the tails and boundaries where a textbook derivative
cancels or is undefined against analytic formulas, the operands that are not
differentiable, the errors that name the function, and models as users write them.
"""
import functools
import subprocess
import sys

import numpy as np
import pytest
from derivative_references import function_of, jax, jnp
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
    if dtype == np.float64:
        assert_array_equal(value, f(a, b))
    else:
        assert ulps(value, f(a.astype(np.float64), b.astype(np.float64))) <= 0.5


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


# -- operands that are not differentiable, functions without a rule ------------------------------

@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("func", [sc.gammainc, sc.gammaincc, sc.zeta],
                         ids=["gammainc", "gammaincc", "zeta"])
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
    for f, name in [(lambda x: sc.struve(1.0, x), "struve"), (lambda x: sc.kv(1.0, x), "kv"),
                    (sc.zeta, "_ufuncs._riemann_zeta")]:
        with pytest.raises(TypeError, match=rf"cyad: scipy\.special\.{name} is not supported"):
            cyad.derivative(f, 1.5, engine=engine)


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
@pytest.mark.parametrize("model", [logistic_loss, poisson_loglik, probit_gaussian],
                         ids=lambda m: m.__name__)
def test_models_gradient_and_hessian(model, engine):
    f, g, w = _model(model, np, sc), _model(model, jnp, _JaxSpecial()), _W
    assert_allclose(f(w), g(w), rtol=1e-13)
    gradient, hessian = _model_references(model)
    assert_allclose(cyad.gradient(f, w, engine=engine), gradient, rtol=1e-11)
    assert_allclose(cyad.hessian(f, w, engine=engine), hessian, rtol=1e-10, atol=1e-12)
