"""scipy.stats on cyad's arrays (cyad/_primitives/scipy_stats.py): the distributions' methods,
frozen and not, multivariate densities, zscore and entropy.

References: jax.scipy.stats where JAX has the distribution and method (first and second
derivatives in x, the shape parameters, loc and scale together), else fourth-order central
differences of SciPy's own method (nested for the second order). Values against SciPy's on a
grid that reaches the tails, both ends of the support, infinite and NaN points and invalid
parameters, through cyad's formulas on plain arrays.
"""
import functools
import subprocess
import sys
import textwrap
import time
import warnings
from typing import NamedTuple

import numpy as np
import pytest
import scipy.stats as st
from derivative_references import assert_matches, central_differences, jax, jnp

import cyad
from cyad._primitives import scipy_stats

ENGINES = ["dual", "tape"]
WEIGHTS = np.array([1.0, -0.7, 0.4, 0.9])

if jax is not None:
    import jax.scipy.stats as jstats


class Case(NamedTuple):
    name: str
    method: str
    points: tuple        # z (continuous: x = loc + scale z), q (ppf, isf) or k (discrete)
    shapes: tuple
    loc: float = 0.0
    scale: float = 1.0
    located: bool = True  # whether JAX's function takes loc and scale

    @property
    def spec(self):
        return scipy_stats.DISTRIBUTIONS[self.name]

    @property
    def discrete(self):
        return self.spec.kind == "discrete"

    @property
    def free(self):
        """The differentiated arguments: x, the shapes the method is differentiable in, loc
        and scale (a discrete distribution: its continuous shapes only)."""
        fixed = self.spec.fixed.get(self.method, {})
        names = [] if self.discrete else ["x"]
        names += [s for s, value in zip(self.spec.shapes, self.shapes)
                  if s not in fixed and np.isfinite(value)]
        return names + ([] if self.discrete else ["loc", "scale"])

    def __str__(self):
        return f"{self.name}.{self.method}{self.shapes}"


QUANTILES = (0.1, 0.45, 0.85)
CONTINUOUS = {
    # name: (points z, shapes, loc, scale, JAX's methods, JAX takes loc and scale)
    "norm": ((-1.3, 0.2, 2.1), (), "all", True),
    "t": ((-1.3, 0.2, 2.1), (4.5,), ("logpdf", "pdf"), True),
    "gamma": ((0.4, 1.7, 3.9), (2.5,), ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"), True),
    "beta": ((0.15, 0.4, 0.8), (2.2, 3.1), ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"),
             True),
    "lognorm": ((0.5, 1.2, 3.0), (0.7,), (), True),
    "expon": ((0.3, 1.1, 2.5), (), ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"),
              True),
    "chi2": ((0.5, 2.0, 5.0), (3.5,), ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"), True),
    "cauchy": ((-2.0, 0.3, 1.5), (), "all", True),
    "laplace": ((-1.2, 0.4, 2.0), (), ("logpdf", "pdf", "cdf"), True),
    "logistic": ((-1.2, 0.4, 2.0), (), ("logpdf", "pdf", "cdf", "sf", "ppf", "isf"), True),
    "weibull_min": ((0.3, 1.0, 2.2), (1.7,), (), True),
    # (JAX 0.10's gradients of the Gumbel logpdf, pdf and ppf fail on a float0)
    "gumbel_r": ((-1.0, 0.3, 2.0), (), ("cdf", "logcdf", "sf", "logsf"), True),
    "gumbel_l": ((-1.0, 0.3, 2.0), (), ("cdf", "logcdf", "sf", "logsf"), True),
    "pareto": ((1.2, 2.0, 4.5), (2.5,), ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"),
               True),
    "uniform": ((0.2, 0.5, 0.9), (), ("logpdf", "pdf", "cdf", "ppf"), True),
    "invgamma": ((0.3, 0.8, 2.0), (3.0,), (), True),
    "genextreme": ((-0.5, 0.4, 1.5), (0.3,), (), True),
    "truncnorm": ((-0.5, 0.3, 1.2), (-1.0, 1.5), ("logpdf", "pdf", "cdf", "logcdf", "sf",
                                                  "logsf"), True),
    "vonmises": ((-1.0, 0.3, 2.0), (2.0,), ("logpdf", "pdf"), False),
    "gennorm": ((-1.2, 0.4, 2.0), (1.5,), ("logpdf", "pdf", "cdf"), False),
}
DISCRETE = {
    "poisson": ((0.0, 1.0, 3.0, 6.0), (2.5,), ("logpmf", "pmf", "cdf")),
    "binom": ((0.0, 2.0, 5.0, 7.0), (8, 0.35), ("logpmf", "pmf")),
    "nbinom": ((0.0, 2.0, 7.0), (3.5, 0.4), ("logpmf", "pmf")),
    "geom": ((1.0, 2.0, 5.0), (0.3,), ("logpmf", "pmf")),
    "bernoulli": ((0.0, 1.0), (0.3,), ("logpmf", "pmf", "cdf")),
    # (JAX's betabinom differs from SciPy's in the 7th digit: by differences)
    "betabinom": ((0.0, 2.0, 5.0), (6, 1.5, 2.5), ()),
}
# more parameters where a formula has branches: c of either sign and 0, a one-sided truncation
EXTRA = [("genextreme", (-0.2,)), ("genextreme", (0.0,)), ("truncnorm", (0.5, np.inf)),
         ("truncnorm", (-np.inf, -0.5))]
# where the reference would be a numerical root (SciPy's own ppf by a solver): first order only
NO_SECOND_ORDER = {("vonmises", "ppf"), ("vonmises", "isf")}


def _cases():
    cases, by_jax = [], set()
    for name, (points, shapes, jax_methods, located) in CONTINUOUS.items():
        for method in scipy_stats.CONTINUOUS_METHODS:
            pts = QUANTILES if method in ("ppf", "isf") else points
            loc, scale = (0.0, 1.0) if not located else (0.3, 1.6)
            case = Case(name, method, pts, shapes, loc, scale, located)
            cases.append(case)
            if jax_methods == "all" or method in jax_methods:
                by_jax.add(case)
    for name, shapes in EXTRA:
        points = CONTINUOUS[name][0]
        for method in scipy_stats.CONTINUOUS_METHODS:
            pts = QUANTILES if method in ("ppf", "isf") else points
            if name == "truncnorm":
                pts = tuple(np.clip(pts, shapes[0] + 0.1, shapes[1] - 0.1)) \
                    if method not in ("ppf", "isf") else pts
            cases.append(Case(name, method, pts, shapes, 0.3, 1.6))
    for name, (points, shapes, jax_methods) in DISCRETE.items():
        for method in scipy_stats.DISCRETE_METHODS:
            if method in ("ppf", "isf"):
                continue
            if name == "bernoulli" and method in ("sf", "logsf"):
                points = (0.0,)     # (the sf is 0 at 1, its log -inf)
            case = Case(name, method, points, shapes)
            cases.append(case)
            if method in jax_methods:
                by_jax.add(case)
    return cases, by_jax


CASES, BY_JAX = _cases()


def _split(case, v):
    """The arguments of case's method, the free ones taken from v."""
    free = case.free
    n = len(case.points)
    values = dict(zip(case.spec.shapes, case.shapes))
    values.update(loc=case.loc, scale=case.scale)
    points = np.asarray(case.points, np.float64)
    if not case.discrete and case.method not in ("ppf", "isf"):
        points = case.loc + case.scale * points
    x = v[:n] if "x" in free else points
    i = n if "x" in free else 0
    for name in free[1:] if "x" in free else free:
        values[name] = v[i]
        i += 1
    return x, tuple(values[s] for s in case.spec.shapes), values["loc"], values["scale"]


def _start(case):
    points = np.asarray(case.points, np.float64)
    if not case.discrete and case.method not in ("ppf", "isf"):
        points = case.loc + case.scale * points
    named = dict(zip(case.spec.shapes, case.shapes), loc=case.loc, scale=case.scale)
    parts = [points] if "x" in case.free else []
    parts += [np.atleast_1d(float(named[n])) for n in case.free if n != "x"]
    return np.concatenate(parts)


def _scipy_function(case, frozen=False):
    distribution = getattr(st, case.name)

    def f(v):
        x, shapes, loc, scale = _split(case, v)
        if case.discrete:
            if frozen:
                return np.sum(WEIGHTS[:len(case.points)]
                              * getattr(distribution(*shapes), case.method)(x))
            return np.sum(WEIGHTS[:len(case.points)]
                          * getattr(distribution, case.method)(x, *shapes))
        if frozen:
            values = getattr(distribution(*shapes, loc=loc, scale=scale), case.method)(x)
        else:
            values = getattr(distribution, case.method)(x, *shapes, loc=loc, scale=scale)
        return np.sum(WEIGHTS[:len(case.points)] * values)
    return f


def _jax_function(case):
    def f(v):
        x, shapes, loc, scale = _split(case, v)
        method = getattr(getattr(jstats, case.name), case.method)
        if case.discrete:
            values = method(x, *shapes)
        elif case.located:
            values = method(x, *shapes, loc, scale)
        elif case.method in ("ppf", "isf"):
            values = loc + scale * method(x, *shapes)
        else:   # JAX's function of the standardised x
            values = method((x - loc) / scale, *shapes)
            if case.method == "logpdf":
                values = values - jnp.log(scale)
            elif case.method == "pdf":
                values = values / scale
        return jnp.sum(jnp.asarray(WEIGHTS[:len(case.points)]) * values)
    return f


@functools.lru_cache(maxsize=None)
def _reference(case):
    """(value, gradient, Hessian, tolerance) of the case's weighted sum."""
    v = _start(case)
    value = _scipy_function(case)(v)
    if jax is not None and case in BY_JAX:
        f = _jax_function(case)
        gradient = np.asarray(jax.grad(f)(jnp.asarray(v)))
        hessian = np.asarray(jax.jacrev(jax.jacrev(f))(jnp.asarray(v)))
        return value, gradient, hessian, dict(rtol=1e-9, atol=1e-10)
    f = _scipy_function(case)
    gradient = central_differences(f, v)
    hessian = None
    if (case.name, case.method) not in NO_SECOND_ORDER:
        hessian = central_differences(lambda s: central_differences(f, s), v)
    return value, gradient, hessian, dict(rtol=2e-6, atol=2e-7)


def _ids(case):
    return str(case).replace(" ", "")


# -- derivatives ----------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_first_and_second_derivatives(case, engine):
    value, gradient, hessian, tolerance = _reference(case)
    f = _scipy_function(case)
    v = _start(case)
    actual_value, actual = cyad.value_and_gradient(f, v, engine=engine)
    np.testing.assert_allclose(actual_value, value, rtol=1e-12, atol=1e-300)
    assert_matches(actual, gradient, **tolerance, what="gradient")
    if hessian is not None:
        h = cyad.hessian(f, v, engine=engine)
        assert_matches(h, hessian, **{k: 100 * t for k, t in tolerance.items()}
                       if case not in BY_JAX else tolerance, what="hessian")
        np.testing.assert_allclose(h, h.T, rtol=1e-12, atol=1e-12 * np.max(np.abs(h)))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", [c for c in CASES if c.name not in {e[0] for e in EXTRA}
                                  or c.shapes == CONTINUOUS.get(c.name, (0, ()))[1]], ids=_ids)
def test_frozen_distributions(case, engine):
    # norm(loc, scale).logpdf(x): SciPy's frozen object calls its generator's method
    _, gradient, _, tolerance = _reference(case)
    actual = cyad.gradient(_scipy_function(case, frozen=True), _start(case), engine=engine)
    assert_matches(actual, gradient, **tolerance)


def test_every_distribution_and_method_has_cases():
    covered = {(c.name, c.method) for c in CASES}
    for name, spec in scipy_stats.DISTRIBUTIONS.items():
        methods = (scipy_stats.DISCRETE_METHODS if spec.kind == "discrete"
                   else scipy_stats.CONTINUOUS_METHODS)
        for method in methods:
            if spec.kind == "discrete" and method in ("ppf", "isf"):
                continue
            assert (name, method) in covered, (name, method)


@pytest.mark.parametrize("engine", ENGINES)
def test_prepared_gradient_of_a_likelihood(engine):
    # -norm.logpdf(data, mu, sigma).sum() as users write it, prepared, with out=
    data = np.random.default_rng(1).normal(1.0, 2.0, 200)

    def f(p):
        return -st.norm.logpdf(data, p[0], p[1]).sum()

    prep = cyad.prepare_gradient(f, np.array([0.5, 1.5]), engine=engine)
    out = np.empty(2)
    for mu, sigma in [(0.5, 1.5), (1.2, 2.5), (-0.3, 0.7)]:
        z = (data - mu) / sigma
        expected = np.array([-np.sum(z) / sigma, len(data) / sigma - np.sum(z * z) / sigma])
        result = cyad.gradient(f, np.array([mu, sigma]), prep=prep, out=out)
        assert result is out
        np.testing.assert_allclose(out, expected, rtol=1e-12)
    h = cyad.hessian(f, np.array([0.5, 1.5]), engine=engine)
    z = (data - 0.5) / 1.5
    n = len(data)
    expected = np.array([[n, 2 * np.sum(z)], [2 * np.sum(z), -n + 3 * np.sum(z * z)]]) / 1.5 ** 2
    np.testing.assert_allclose(h, expected, rtol=1e-12)


@pytest.mark.skipif(jax is None, reason="JAX is not installed")
@pytest.mark.parametrize("engine", ENGINES)
def test_gamma_likelihood_against_jax(engine):
    data = np.random.default_rng(2).gamma(2.0, 1.5, 100)

    def f(p):
        return -st.gamma.logpdf(data, p[0], scale=p[1]).sum()

    def g(p):
        return -jstats.gamma.logpdf(jnp.asarray(data), p[0], scale=p[1]).sum()

    p = np.array([1.7, 1.2])
    assert_matches(cyad.gradient(f, p, engine=engine), np.asarray(jax.grad(g)(jnp.asarray(p))),
                   rtol=1e-11, atol=1e-12)
    assert_matches(cyad.hessian(f, p, engine=engine),
                   np.asarray(jax.hessian(g)(jnp.asarray(p))), rtol=1e-11, atol=1e-12)


# -- tails ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_normal_tails_do_not_underflow(engine):
    # log_ndtr in logcdf and logsf: finite values and derivatives far in the tails, where the
    # cdf (sf) underflows; the derivative is pdf / cdf (-pdf / sf), of logs that are accurate
    x = np.array([-60.0, -38.5, 0.0, 38.5, 60.0])
    for method, sign in (("logcdf", 1.0), ("logsf", -1.0)):
        function = getattr(st.norm, method)
        g = cyad.gradient(lambda v, function=function: np.sum(function(v, 0.0, 1.0)), x,
                          engine=engine)
        expected = sign * np.exp(st.norm.logpdf(x) - function(x))
        np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-300)
        h = cyad.hessian(lambda v, function=function: np.sum(function(v)), x, engine=engine)
        assert np.all(np.isfinite(h))
        # d2/dx2 log cdf = -g (x + g)
        np.testing.assert_allclose(np.diag(h), -g * (x + g), rtol=1e-6, atol=1e-300)


# -- values: SciPy's, through cyad's formulas ------------------------------------------------------

GRID = np.array([-np.inf, -50.0, -5.0, -1.0, -0.3, 0.0, 0.2, 0.5, 1.0, 1.5, 3.0, 30.0, np.inf,
                 np.nan])
Q_GRID = np.array([0.0, 1e-300, 1e-10, 0.1, 0.5, 0.9, 1 - 1e-12, 1.0, -0.1, 1.1, np.nan])
K_GRID = np.array([-np.inf, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 5.0, 7.0, 50.0, np.inf, np.nan])
VALUE_SHAPES = {
    "norm": [()], "t": [(3.0,), (np.inf,), (-1.0,)], "gamma": [(0.5,), (2.5,)],
    "beta": [(2.0, 0.5), (0.7, 3.0)], "lognorm": [(0.8,)], "expon": [()], "chi2": [(3.0,)],
    "cauchy": [()], "laplace": [()], "logistic": [()], "weibull_min": [(0.7,), (2.0,)],
    "gumbel_r": [()], "gumbel_l": [()], "pareto": [(2.5,)], "uniform": [()],
    "invgamma": [(2.0,)], "genextreme": [(0.5,), (-0.3,), (0.0,), (1e-9,)],
    "truncnorm": [(-1.0, 2.0), (-np.inf, -2.0), (3.0, np.inf), (2.0, 1.0)],
    "vonmises": [(2.0,)], "gennorm": [(1.5,)],
    "poisson": [(2.5,), (0.0,), (-1.0,)], "binom": [(5, 0.3), (5, 0.0), (5.5, 0.3), (5, 1.2)],
    "nbinom": [(2.5, 0.4), (3, 1.0)], "geom": [(0.3,), (1.0,)], "bernoulli": [(0.3,), (0.0,)],
    "betabinom": [(6, 1.5, 2.5), (6, -1.0, 2.0)],
}


def test_every_distribution_has_values():
    assert set(VALUE_SHAPES) == set(scipy_stats.DISTRIBUTIONS)


@pytest.mark.parametrize("name", sorted(VALUE_SHAPES))
def test_values_are_scipys(name):
    spec = scipy_stats.DISTRIBUTIONS[name]
    distribution = getattr(st, name)
    discrete = spec.kind == "discrete"
    methods = scipy_stats.DISCRETE_METHODS if discrete else scipy_stats.CONTINUOUS_METHODS
    for shapes in VALUE_SHAPES[name]:
        for method in methods:
            if method in ("ppf", "isf"):
                points = Q_GRID
            else:
                points = K_GRID if discrete else GRID
            for located in ([dict(loc=0), dict(loc=2)] if discrete else
                            [dict(loc=0.0, scale=1.0), dict(loc=0.5, scale=2.0),
                             dict(loc=0.0, scale=-1.0)]):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    expected = getattr(distribution, method)(points, *shapes, **located)
                    actual = scipy_stats.call(distribution, method, (points,) + shapes, located)
                np.testing.assert_allclose(actual, expected, rtol=1e-9, atol=1e-300,
                                           err_msg=f"{name}.{method}{shapes} {located}")


def test_scalar_results_are_scalars():
    result = scipy_stats.call(st.norm, "logpdf", (0.3,), {})
    assert np.ndim(result) == 0 and result == st.norm.logpdf(0.3)


# -- what reaches cyad, and what is refused ---------------------------------------------------

def test_plain_calls_are_scipys():
    classes = [type(st.norm).__mro__[1], type(st.poisson).__mro__[1]]
    for cls, methods in zip(classes, (scipy_stats.CONTINUOUS_METHODS,
                                      scipy_stats.DISCRETE_METHODS)):
        for method in methods:
            wrapper = vars(cls)[method]
            assert wrapper.__cyad_dispatching__ and wrapper.__name__ == method
            assert wrapper.__doc__ == wrapper.__wrapped__.__doc__
    x = np.linspace(-2.0, 2.0, 7)
    assert np.array_equal(st.norm.logpdf(x, 0.3, 2.0),
                          type(st.norm).logpdf.__wrapped__(st.norm, x, 0.3, 2.0))
    frozen = st.gamma(2.0, scale=1.5)
    assert isinstance(frozen, type(st.norm(0.0, 1.0)))
    assert np.array_equal(frozen.cdf(np.abs(x)), st.gamma.cdf(np.abs(x), 2.0, scale=1.5))


@pytest.mark.parametrize("order", ["cyad first", "scipy first"])
def test_import_orders_that_reach_cyad(order, tmp_path):
    # the wrappers sit on the classes: a distribution bound before cyad is imported is covered
    imports = ("import cyad\nfrom scipy.stats import norm" if order == "cyad first"
               else "from scipy.stats import norm\nimport cyad")
    code = imports + textwrap.dedent("""
        import numpy as np
        print(cyad.derivative(lambda s: norm.logpdf(1.0, 0.0, s), 2.0))
        """)
    # a fresh Python, outside the source folder (whose uncompiled cyad would shadow the
    # installed one)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert float(result.stdout) == pytest.approx(-1.0 / 2.0 + 1.0 / 8.0, rel=1e-14)


@pytest.mark.parametrize("engine", ENGINES)
def test_refused_parameters_name_the_distribution_method_and_parameter(engine):
    x = np.array([0.5, 1.0])
    refused = [
        (lambda p: st.gamma.cdf(x, p[0]), "scipy.stats.gamma.cdf", "a"),
        (lambda p: st.gamma(p[0]).ppf(0.3), "scipy.stats.gamma.ppf", "a"),
        (lambda p: st.t.logcdf(x, p[0]), "scipy.stats.t.logcdf", "df"),
        (lambda p: st.beta.sf(0.3, 2.0, p[0]), "scipy.stats.beta.sf", "b"),
        (lambda p: st.binom.logpmf(2, p[0], 0.3), "scipy.stats.binom.logpmf", "n"),
        (lambda p: st.nbinom.cdf(2, p[0], 0.3), "scipy.stats.nbinom.cdf", "n"),
        (lambda p: st.poisson.logpmf(p[0], 2.0), "scipy.stats.poisson.logpmf", "k"),
        (lambda p: st.poisson.pmf(2, 2.0, loc=p[0]), "scipy.stats.poisson.pmf", "loc"),
        (lambda p: st.vonmises.cdf(0.3, p[0]), "scipy.stats.vonmises.cdf", "kappa"),
    ]
    for f, where, parameter in refused:
        with pytest.raises(TypeError, match=rf"{where} is not differentiable in {parameter}"):
            cyad.gradient(lambda p, f=f: np.sum(f(p)), np.array([2.0]), engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_distribution_without_a_formula_is_named(engine):
    for f, where in [(lambda p: st.levy.logpdf(p), "scipy.stats.levy.logpdf"),
                     (lambda p: st.levy_stable.pdf(p, 1.5, 0.0), "scipy.stats.levy_stable.pdf"),
                     (lambda p: st.zipf.logpmf(2, p), "scipy.stats.zipf.logpmf")]:
        with pytest.raises(TypeError, match=f"{where} has no formula"):
            cyad.gradient(lambda p, f=f: np.sum(f(p)), np.array([2.0]), engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_discrete_quantiles_are_piecewise_constant(engine):
    def f(p):
        return np.sum(st.poisson.ppf([0.2, 0.7], p[0]) + st.binom.isf(0.4, 10, p[1]))

    p = np.array([3.5, 0.4])
    value, gradient = cyad.value_and_gradient(f, p, engine=engine)
    assert value == f(p)
    np.testing.assert_array_equal(gradient, 0.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_float32(engine):
    x = np.array([-0.5, 0.25, 1.5], np.float32)
    for f in (lambda v: np.sum(st.norm.logpdf(v, 0.25, 1.5)),
              lambda v: np.sum(st.gamma.logcdf(v + 2.0, 2.5)),
              lambda v: np.sum(st.t.logpdf(v, 4.0, scale=2.0))):
        expected = cyad.gradient(f, x.astype(np.float64), engine=engine)
        np.testing.assert_allclose(cyad.gradient(f, x, engine=engine), expected, rtol=2e-5,
                                   atol=1e-6)


# -- multivariate ----------------------------------------------------------------------------------

RNG = np.random.default_rng(5)
POINTS = RNG.standard_normal((4, 3))
MEAN = RNG.standard_normal(3)
FACTOR = np.tril(RNG.standard_normal((3, 3))) + 2.0 * np.eye(3)


def _spd(xp, v):
    """A positive definite matrix of 6 numbers (its Cholesky factor's lower triangle): a
    function of the symmetric covariance's entries, whatever triangle a library reads."""
    rows, cols = np.tril_indices(3)
    lower = [[None] * 3 for _ in range(3)]
    for i, (r, c) in enumerate(zip(rows, cols)):
        lower[r][c] = v[i]
    zero = 0.0 * v[0]
    matrix = xp.stack([xp.stack([lower[r][c] if c <= r else zero for c in range(3)])
                       for r in range(3)])
    return matrix @ matrix.T


def _mvn(xp, stats, v, frozen=False):
    x = v[:12].reshape(4, 3)
    mean = v[12:15]
    cov = _spd(xp, v[15:21])
    if frozen:
        return xp.sum(stats.multivariate_normal(mean, cov).logpdf(x))
    return xp.sum(xp.asarray([1.0, -0.5, 0.3, 0.8]) * stats.multivariate_normal.logpdf(x, mean,
                                                                                       cov))


MVN_START = np.concatenate([POINTS.ravel(), MEAN, FACTOR[np.tril_indices(3)]])


@pytest.mark.skipif(jax is None, reason="JAX is not installed")
@pytest.mark.parametrize("frozen", [False, True])
@pytest.mark.parametrize("engine", ENGINES)
def test_multivariate_normal_against_jax(engine, frozen):
    def f(v):
        return _mvn(np, st, v, frozen)

    def g(v):
        if frozen:
            x, mean, cov = v[:12].reshape(4, 3), v[12:15], _spd(jnp, v[15:21])
            return jnp.sum(jstats.multivariate_normal.logpdf(x, mean, cov))
        return _mvn(jnp, jstats, v)

    v = MVN_START
    np.testing.assert_allclose(f(v), np.asarray(g(jnp.asarray(v))), rtol=1e-12)
    assert_matches(cyad.gradient(f, v, engine=engine),
                   np.asarray(jax.grad(g)(jnp.asarray(v))), rtol=1e-10, atol=1e-11)
    assert_matches(cyad.hessian(f, v, engine=engine),
                   np.asarray(jax.hessian(g)(jnp.asarray(v))), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("engine", ENGINES)
def test_multivariate_normal_diagonal_and_scalar_covariances(engine):
    x = POINTS
    for f in (lambda v: np.sum(st.multivariate_normal.logpdf(x, v[:3], v[3:] ** 2)),
              lambda v: np.sum(st.multivariate_normal.pdf(x, v[:3], v[3] ** 2)),
              lambda v: st.multivariate_normal(v[:3], np.diag(v[3:] ** 2)).logpdf(x[0])):
        v = np.array([0.1, -0.2, 0.3, 1.1, 0.9, 1.4])
        assert_matches(cyad.gradient(f, v, engine=engine), central_differences(f, v),
                       rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("engine", ENGINES)
def test_multivariate_t_dirichlet_wishart(engine):
    spd = FACTOR @ FACTOR.T
    alpha = np.array([1.5, 2.0, 0.7])
    simplex = RNG.dirichlet(alpha, 4).T
    samples = np.moveaxis(st.wishart.rvs(6, spd, size=3, random_state=3), 0, -1)
    programs = [
        (lambda v: np.sum(st.multivariate_t.logpdf(v[:12].reshape(4, 3), v[12:15], spd,
                                                   df=v[15])),
         np.concatenate([POINTS.ravel(), MEAN, [3.5]])),
        (lambda v: np.sum(st.multivariate_t(MEAN, spd, df=v[0]).logpdf(POINTS)),
         np.array([4.5])),
        # SciPy's frozen objects (of plain parameters) at cyad's points
        (lambda v: np.sum(st.multivariate_normal(MEAN, spd).logpdf(v.reshape(4, 3))),
         POINTS.ravel()),
        (lambda v: np.sum(st.multivariate_t(MEAN, spd, df=3.0).pdf(v.reshape(4, 3))),
         POINTS.ravel()),
        (lambda v: np.sum(st.dirichlet(alpha).logpdf(v.reshape(2, 4))), simplex[:2].ravel()),
        (lambda v: np.sum(st.wishart(6.0, spd).logpdf(samples + np.diag(v)[..., None])),
         np.array([0.1, 0.2, 0.3])),
        # (x of K - 1 components, the last one 1 - their sum: differences stay on the simplex)
        (lambda v: np.sum(st.dirichlet.logpdf(v[:8].reshape(2, 4), v[8:])),
         np.concatenate([simplex[:2].ravel(), alpha])),
        (lambda v: st.dirichlet(v).pdf(simplex[:, 0]), alpha),
        (lambda v: np.sum(st.wishart.logpdf(samples, v[0], spd + np.diag(v[1:]))),
         np.array([6.0, 0.1, 0.2, 0.3])),
        (lambda v: np.sum(st.invwishart(v[0], spd + np.diag(v[1:])).logpdf(samples)),
         np.array([6.0, 0.1, 0.2, 0.3])),
        (lambda v: st.wishart.logpdf(samples[..., 0] + np.diag(v), 6.0, spd),
         np.array([0.1, 0.2, 0.3])),
    ]
    for f, v in programs:
        value, gradient = cyad.value_and_gradient(f, v, engine=engine)
        np.testing.assert_allclose(value, f(v), rtol=1e-12)
        assert_matches(gradient, central_differences(f, v), rtol=1e-7, atol=1e-8)
    f, v = programs[0]
    assert_matches(cyad.hessian(f, v, engine=engine),
                   central_differences(lambda s: cyad.gradient(f, s), v), rtol=1e-6, atol=1e-7)


@pytest.mark.skipif(jax is None, reason="JAX is not installed")
@pytest.mark.parametrize("engine", ENGINES)
def test_dirichlet_against_jax(engine):
    alpha = np.array([1.5, 2.0, 0.7])
    simplex = RNG.dirichlet(alpha, 2).T

    def f(v):
        return np.sum(st.dirichlet.logpdf(np.reshape(v[:6], (3, 2)), v[6:]))

    def g(v):
        return jnp.sum(jstats.dirichlet.logpdf(jnp.reshape(v[:6], (3, 2)), v[6:]))

    v = np.concatenate([simplex.ravel(), alpha])
    assert_matches(cyad.gradient(f, v, engine=engine),
                   np.asarray(jax.grad(g)(jnp.asarray(v))), rtol=1e-10, atol=1e-11)
    assert_matches(cyad.hessian(f, v, engine=engine),
                   np.asarray(jax.hessian(g)(jnp.asarray(v))), rtol=1e-10, atol=1e-11)


# -- zscore and entropy ----------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_zscore_and_entropy(engine):
    a = np.array([0.3, 1.2, 0.7, 2.5, 0.9, 1.6])
    w = np.arange(1.0, 7.0)
    programs = [
        lambda v: np.sum(w * st.zscore(v)),
        lambda v: np.sum(w.reshape(2, 3) * st.zscore(v.reshape(2, 3), axis=1, ddof=1)),
        lambda v: np.sum(w * st.zscore(v, axis=None)),
        lambda v: st.entropy(v),
        lambda v: st.entropy(v, base=2.0),
        lambda v: st.entropy(v, v[::-1] + 0.1),
        lambda v: np.sum(st.entropy(v.reshape(2, 3), axis=1)),
        lambda v: np.sum(st.entropy(v.reshape(3, 2), qk=v.reshape(3, 2)[::-1], keepdims=True)),
    ]
    for f in programs:
        value, gradient = cyad.value_and_gradient(f, a, engine=engine)
        np.testing.assert_allclose(value, f(a), rtol=1e-13)
        assert_matches(gradient, central_differences(f, a), rtol=1e-8, atol=1e-9)
        assert_matches(cyad.hessian(f, a, engine=engine),
                       central_differences(lambda s, f=f: cyad.gradient(f, s), a), rtol=1e-6,
                       atol=1e-7)


@pytest.mark.filterwarnings("ignore:Precision loss occurred")   # (SciPy's, on the constant slice)
@pytest.mark.parametrize("engine", ENGINES)
def test_zscore_of_a_constant_slice_is_nan(engine):
    def f(v):
        return st.zscore(np.stack([v, np.ones(3)]), axis=1).ravel()

    v = np.array([0.5, 1.0, 2.0])
    value, jacobian = cyad.value_and_jacobian(f, v, engine=engine)
    np.testing.assert_array_equal(value, f(v))
    assert np.all(np.isnan(value[3:]))
    assert_matches(jacobian[:3], central_differences(lambda s: f(s)[:3], v), rtol=1e-8,
                   atol=1e-9)


# -- the wrapper's cost on plain calls (measured, not asserted) -------------------------------

def test_wrapper_overhead_on_plain_calls(capsys):
    x = np.linspace(-2.0, 2.0, 10)
    wrapped = st.norm.logpdf
    original = functools.partial(type(st.norm).logpdf.__wrapped__, st.norm)

    def best(f, n=2000):
        times = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(n):
                f(x)
            times.append((time.perf_counter() - start) / n)
        return min(times)

    with capsys.disabled():
        print(f"\nnorm.logpdf(x) of 10 points: wrapped {best(wrapped) * 1e6:.2f} us, "
              f"SciPy's {best(original) * 1e6:.2f} us")
