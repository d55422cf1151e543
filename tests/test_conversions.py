"""cyad.through_asarray: library code that converts its arguments with np.asarray/np.array,
differentiated on every engine against analytic derivatives (statsmodels' own scores and
Hessians), and what stays refused inside the scope.
"""
import threading

import numpy as np
import pytest
from derivative_references import jax, jnp
from numpy.testing import assert_allclose
from scenarios import ENGINES

import cyad

TOLERANCE = dict(rtol=1e-12, atol=1e-13)
X = np.array([0.3, -1.2, 0.7])


def _logistic(x):
    x = np.asarray(x)                    # as statsmodels' Logit.cdf begins
    return 1.0 / (1.0 + np.exp(-x))


def _library_style(x):
    # every conversion the scope replaces, on engine arrays, scalars of them and lists
    a = np.asanyarray(x, dtype=np.float64)
    b = np.ascontiguousarray(np.asfortranarray(a))
    c = np.array([x[0], x[1] ** 2, 1.5])            # a list of engine scalars and a float
    d = np.array([[x[0], x[2]], [x[1], x[0] * x[1]]])
    e = np.array(x, ndmin=2)
    joined = np.r_[x, 1.0, x[:2] ** 2] * np.r_["0,2", x, x[::-1]].sum(axis=0)[0]
    columns = np.c_[x, 2.0 * x, np.ones(3)]
    return (np.sum(_logistic(b) * c) + np.sum(d ** 3) + np.sum(np.sin(e))
            + np.sum(joined ** 2) + np.sum(np.cos(columns)))


def _library_style_jax(x):
    c = jnp.stack([x[0], x[1] ** 2, 1.5])
    d = jnp.stack([jnp.stack([x[0], x[2]]), jnp.stack([x[1], x[0] * x[1]])])
    joined = jnp.r_[x, 1.0, x[:2] ** 2] * (x[0] + x[2])
    columns = jnp.c_[x, 2.0 * x, jnp.ones(3)]
    return (jnp.sum(jax.nn.sigmoid(x) * c) + jnp.sum(d ** 3) + jnp.sum(jnp.sin(x))
            + jnp.sum(joined ** 2) + jnp.sum(jnp.cos(columns)))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_function_that_converts_its_argument_is_differentiated(engine):
    with cyad.through_asarray():
        g = cyad.gradient(lambda x: np.sum(_logistic(x) ** 2), X, engine=engine)
        h = cyad.hessian(lambda x: np.sum(_logistic(x) ** 2), X, engine=engine)
    s = 1.0 / (1.0 + np.exp(-X))
    ds = s * (1.0 - s)
    assert_allclose(g, 2.0 * s * ds, **TOLERANCE)
    assert_allclose(h, np.diag(2.0 * ds ** 2 + 2.0 * s * ds * (1.0 - 2.0 * s)), **TOLERANCE)


@pytest.mark.skipif(jax is None, reason="JAX is the reference")
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_conversion_and_lists_of_arrays_against_jax(engine, dtype):
    x = X.astype(dtype)
    tolerance = TOLERANCE if dtype == np.float64 else dict(rtol=2e-5, atol=1e-5)
    with cyad.through_asarray():
        g = cyad.gradient(_library_style, x, engine=engine)
        h = cyad.hessian(_library_style, x, engine=engine)
        nested = cyad.jacobian(lambda y: cyad.gradient(_library_style, y, engine=engine), x,
                               engine=engine)
    xj = jnp.asarray(X)
    assert g.dtype == dtype
    assert_allclose(g, jax.grad(_library_style_jax)(xj), **tolerance)
    assert_allclose(h, jax.hessian(_library_style_jax)(xj), **tolerance)
    assert_allclose(nested, jax.hessian(_library_style_jax)(xj), **tolerance)


@pytest.mark.parametrize("engine", ENGINES)
def test_np_array_copies_as_numpy_does(engine):
    # f writes into np.array(x): x itself (and its derivative) must be untouched
    def f(x):
        y = np.array(x)
        y[0] = 0.0
        z = np.asarray(x)
        return np.sum(y * z * x)

    with cyad.through_asarray():
        g = cyad.gradient(f, X, engine=engine)
    expected = 3.0 * X ** 2
    expected[0] = 0.0
    assert_allclose(g, expected, **TOLERANCE)


def test_plain_arguments_get_numpys_results_and_the_scope_ends():
    plain = np.arange(3.0)
    originals = {name: getattr(np, name) for name in ("asarray", "array", "asanyarray")}
    with cyad.through_asarray():
        assert np.asarray is not originals["asarray"]
        assert np.asarray(plain) is plain
        copied = np.array(plain)
        assert copied is not plain and type(copied) is np.ndarray
        assert np.asarray([1, 2], dtype=np.float32).dtype == np.float32
        assert np.array([[1.0]], ndmin=3).shape == (1, 1, 1)
        assert_allclose(np.r_[plain, 1:3, [7]], [0.0, 1.0, 2.0, 1.0, 2.0, 7.0], rtol=0)
        assert np.c_[plain, plain].shape == (3, 2)
        with cyad.through_asarray():      # nested
            pass
        assert np.asarray is not originals["asarray"]
    for name, function in originals.items():
        assert getattr(np, name) is function
    assert type(np.r_).__getitem__.__globals__["array"] is originals["array"]


def test_overlapping_scopes_in_threads_restore_numpy_once_the_last_ends():
    entered, release = threading.Barrier(2), threading.Event()
    errors = []

    def worker():
        try:
            with cyad.through_asarray():
                entered.wait()
                release.wait()
                assert_allclose(cyad.gradient(lambda x: np.sum(_logistic(x)), X),
                                _logistic(X) * (1 - _logistic(X)), **TOLERANCE)
        except Exception as error:     # noqa: BLE001 (reported in the main thread)
            errors.append(error)

    original = np.asarray
    thread = threading.Thread(target=worker)
    thread.start()
    with cyad.through_asarray():
        entered.wait()
    assert np.asarray is not original      # the worker's scope is still open
    release.set()
    thread.join()
    assert not errors
    assert np.asarray is original


@pytest.mark.parametrize("engine", ENGINES)
def test_writes_into_plain_arrays_stay_refused_inside_the_scope(engine):
    def f(x):
        out = np.zeros(3)
        out[:] = np.asarray(x)
        return np.sum(out)

    with cyad.through_asarray(), pytest.raises(TypeError, match="cannot become a plain ndarray"):
        cyad.gradient(f, X, engine=engine)

    def g(x):
        return np.sum(np.ones((2, 3)).dot(np.asarray(x)))

    with cyad.through_asarray(), pytest.raises(TypeError, match="cannot become a plain ndarray"):
        cyad.gradient(g, X, engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_outside_the_scope_the_refusal_names_the_scope(engine):
    with pytest.raises(TypeError, match=r"np\.asarray.*cyad\.through_asarray"):
        cyad.gradient(lambda x: np.sum(_logistic(x)), X, engine=engine)
    with pytest.raises(TypeError, match=r"np\.r_ and np\.c_.*np\.concatenate.*through_asarray"):
        cyad.gradient(lambda x: np.sum(np.r_[x, 1.0]), X, engine=engine)


def test_the_scope_decorates_a_function():
    @cyad.through_asarray()
    def gradient_of_logistic(x):
        return cyad.gradient(lambda y: np.sum(_logistic(y)), x)

    s = _logistic(X)
    assert_allclose(gradient_of_logistic(X), s * (1 - s), **TOLERANCE)


# -- statsmodels' likelihoods, as users call them ---------------------------------------------

def _statsmodels_models():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(0)
    n = 120
    exog = sm.add_constant(rng.standard_normal((n, 2)))
    beta = np.array([0.3, -0.5, 0.8])
    eta = exog @ beta
    binary = (rng.random(n) < 1.0 / (1.0 + np.exp(-eta))).astype(float)
    counts = rng.poisson(np.exp(0.3 * eta)).astype(float)
    families = sm.families
    return {
        "Logit": (sm.Logit(binary, exog), beta),
        "Poisson": (sm.Poisson(counts, exog), 0.3 * beta),
        "MNLogit": (sm.MNLogit(rng.integers(0, 3, n).astype(float), exog),
                    np.r_[0.1 * beta, -0.2 * beta]),
        "GLM Binomial": (sm.GLM(binary, exog, family=families.Binomial()), beta),
        "GLM Poisson": (sm.GLM(counts, exog, family=families.Poisson()), 0.3 * beta),
    }


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["Logit", "Poisson", "MNLogit", "GLM Binomial", "GLM Poisson"])
def test_statsmodels_likelihoods_against_their_analytic_scores_and_hessians(name, engine):
    model, params = _statsmodels_models()[name]
    with cyad.through_asarray():
        g = cyad.gradient(model.loglike, params, engine=engine)
        h = cyad.hessian(model.loglike, params, engine=engine)
    assert_allclose(g, model.score(params), rtol=1e-11, atol=1e-11)
    assert_allclose(h, model.hessian(params), rtol=1e-11, atol=1e-11)
