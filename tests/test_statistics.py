"""Statistics and stencils where the scenarios of tests/test_primitives.py do not reach:
conventions at ties and kinks, zeros, NaNs, every axis and keepdims, NumPy's values, and
clear errors. The derivatives at ties are those of JAX (the expected values below are the
conventions worked out by hand: np.sort's stable order, half shares at ties of extremes).
"""
import itertools

import numpy as np
import pytest
from derivative_references import assert_matches, references
from scenarios import ENGINES

import cyad

RNG = np.random.default_rng(20)


# -- cumulative products: exact at zeros -----------------------------------------------------------

def _cumprod_jacobian(x):
    # d cumprod(x)_i / d x_j: the product of x_0..x_i but x_j, for j <= i
    n = len(x)
    return np.array([[np.prod([x[k] for k in range(i + 1) if k != j]) if j <= i else 0.0
                      for j in range(n)] for i in range(n)])


def _cumprod_hessian(x, w):
    # d2 sum(w * cumprod(x)) / dx_j dx_k: the products without x_j and x_k
    n = len(x)
    h = np.zeros((n, n))
    for i, j, k in itertools.product(range(n), repeat=3):
        if j != k and max(j, k) <= i:
            h[j, k] += w[i] * np.prod([x[m] for m in range(i + 1) if m not in (j, k)])
    return h


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("x", [[2.0, 0.0, 3.0, 0.0, 5.0], [0.0, 1.5, -2.0, 3.0],
                               [1.5, -2.0, 0.5, 0.0]], ids=["two-zeros", "zero-first",
                                                           "zero-last"])
def test_cumprod_is_exact_at_zeros(x, engine):
    x = np.array(x)
    w = np.arange(1.0, len(x) + 1)
    np.testing.assert_array_equal(cyad.jacobian(np.cumprod, x, engine=engine),
                                  _cumprod_jacobian(x))
    np.testing.assert_array_equal(
        cyad.hessian(lambda x: np.sum(w * np.multiply.accumulate(x)), x, engine=engine),
        _cumprod_hessian(x, w))


# -- NaNs: ignored, with a zero derivative ----------------------------------------------------

NAN_FUNCTIONS = [np.nansum, np.nanprod, np.nanmean, np.nanvar, np.nanstd, np.nanmax, np.nanmin,
                 np.nanmedian, np.nancumsum, np.nancumprod,
                 lambda a, axis=None: np.nanpercentile(a, 30.0, axis=axis),
                 lambda a, axis=None: np.nanquantile(a, [0.2, 0.7], axis=axis)]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("function", NAN_FUNCTIONS, ids=lambda f: getattr(f, "__name__", "q"))
def test_nan_functions_ignore_nans_with_a_zero_derivative(function, engine):
    x = np.array([1.5, np.nan, 3.0, 2.0, np.nan, 0.5])
    value, jac = cyad.value_and_jacobian(lambda x: function(x * 1.0), x, engine=engine)
    np.testing.assert_allclose(value, function(x), rtol=1e-14)
    jac = jac.reshape(-1, x.size)
    np.testing.assert_array_equal(jac[:, np.isnan(x)], 0.0)
    # the others as the function of the numbers alone (NaNs dropped)
    kept = ~np.isnan(x)
    alone = cyad.jacobian(lambda y: function(y), x[kept], engine=engine).reshape(-1, kept.sum())
    if function in (np.nancumsum, np.nancumprod):   # (the NaN's places stay in the result)
        jac = jac[np.flatnonzero(kept)]
    np.testing.assert_allclose(jac[:, kept], alone, rtol=1e-14)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("function", [np.nanmax, np.nanmin, np.nanmean, np.nanmedian])
def test_a_slice_of_nans_alone_gives_nan(function, engine):
    x = np.array([np.nan, 1.0, np.nan, 2.0, np.nan, 4.0])   # columns: NaNs alone, then numbers
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        expected = function(x.reshape(3, 2), axis=0)
    value, jac = cyad.value_and_jacobian(lambda x: function(x.reshape(3, 2), axis=0), x,
                                         engine=engine)
    np.testing.assert_array_equal(value, expected)
    np.testing.assert_allclose(jac[1], cyad.jacobian(lambda x: function(x.reshape(3, 2),
                                                                        axis=0)[1], x))
    assert np.all(jac[1, ::2] == 0.0)


# -- order statistics: ties and NumPy's values --------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("function, x, expected", [
    # sorted stably: each tied element keeps its place, and takes its own weight
    (np.median, [1.0, 2.0, 2.0, 3.0], [0.0, 0.5, 0.5, 0.0]),
    (np.median, [2.0, 1.0, 2.0], [1.0, 0.0, 0.0]),
    (lambda x: np.quantile(x, 0.4), [2.0, 2.0, 1.0, 2.0, 3.0], [0.4, 0.6, 0.0, 0.0, 0.0]),
    (lambda x: np.percentile(x, 90.0), [3.0, 3.0, 1.0], [0.2, 0.8, 0.0]),
    # extremes: the tied elements share; initial= tied takes half (np.maximum's rule)
    (np.ptp, [2.0, 1.0, 2.0, 1.0], [0.5, -0.5, 0.5, -0.5]),
    (lambda x: np.max(x, initial=2.0), [1.0, 2.0], [0.0, 0.5]),
    (lambda x: np.min(x, initial=-1.0), [1.0, -1.0, -1.0], [0.0, 0.25, 0.25]),
    (lambda x: np.nanmedian(np.where(np.isnan(x), x, x)), [2.0, np.nan, 2.0, 1.0],
     [1.0, 0.0, 0.0, 0.0]),
], ids=["median-even", "median-odd", "quantile", "percentile", "ptp", "max-initial",
        "min-initial", "nanmedian"])
def test_derivatives_at_ties(function, x, expected, engine):
    # (the interpolation weights are 1 - g and g: exact to rounding)
    np.testing.assert_allclose(cyad.gradient(function, np.array(x), engine=engine), expected,
                               rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("q", [0.5, 1.0 / 6.0, 2.5 / 3.0])
def test_nearest_rounds_half_to_even_as_numpy(q):
    # at a position half way (1.5), NumPy takes the even one (2); JAX differs there
    x = np.array([3.0, 1.0, 4.0, 2.0])
    value, grad = cyad.value_and_gradient(lambda x: np.quantile(x, q, method="nearest"), x)
    assert value == np.quantile(x, q, method="nearest")
    np.testing.assert_array_equal(grad, x == value)


SHAPED = [np.median, np.nanmedian, np.ptp, np.nanmax, np.nanmean, np.nanvar, np.average,
          lambda a, axis=None, keepdims=False: np.quantile(a, [0.1, 0.6], axis=axis,
                                                           keepdims=keepdims),
          lambda a, axis=None, keepdims=False: np.percentile(a, [[10.0, 50.0], [25.0, 99.0]],
                                                             axis=axis, keepdims=keepdims,
                                                             method="midpoint")]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), (2, 1)])
@pytest.mark.parametrize("function", SHAPED, ids=lambda f: getattr(f, "__name__", "q"))
def test_every_axis_and_keepdims_gives_numpys_values(function, axis, keepdims):
    x = RNG.standard_normal((3, 4, 5))
    x[1, 2, 3] = np.nan if function in (np.nanmedian, np.nanmax, np.nanmean, np.nanvar) \
        else x[1, 2, 3]
    kwargs = {} if function is np.average and not keepdims else {"keepdims": keepdims}
    expected = function(x, axis=axis, **kwargs)
    for engine in ENGINES:
        value = cyad.value_and_jacobian(lambda x: function(x, axis=axis, **kwargs), x,
                                        engine=engine)[0]
        assert np.shape(value) == np.shape(expected)
        np.testing.assert_allclose(value, expected, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("i", [0, 1], ids=["average", "sum-of-weights"])
@pytest.mark.parametrize("weights", [None, RNG.uniform(0.5, 1.5, 4)], ids=["equal", "weights"])
def test_average_returns_the_sum_of_the_weights(weights, i, engine):
    x = RNG.standard_normal((3, 4))
    expected = np.average(x, axis=1, weights=weights, returned=True)[i]
    value = cyad.value_and_jacobian(
        lambda x: np.average(x, axis=1, weights=weights, returned=True)[i], x, engine=engine)[0]
    np.testing.assert_allclose(value, expected, rtol=1e-14)


# -- convolutions: NumPy's modes and lengths ----------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("n, m", [(n, m) for n in range(1, 6) for m in range(1, 6)])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("function", [np.convolve, np.correlate])
def test_convolutions_match_numpy_for_every_pair_of_lengths(function, mode, n, m, engine):
    # bilinear: the Jacobian in a is the function of unit vectors and v (and so in v)
    a, v = RNG.standard_normal(n), RNG.standard_normal(m)
    value, jac = cyad.value_and_jacobian(lambda x: function(x[:n], x[n:], mode),
                                         np.concatenate([a, v]), engine=engine)
    np.testing.assert_allclose(value, function(a, v, mode), rtol=1e-13, atol=1e-15)
    by_a = np.stack([function(e, v, mode) for e in np.eye(n)], axis=-1)
    by_v = np.stack([function(a, e, mode) for e in np.eye(m)], axis=-1)
    np.testing.assert_allclose(jac, np.concatenate([by_a, by_v], axis=-1), rtol=1e-13,
                               atol=1e-15)


COORDINATES = np.array([0.0, 0.2, 1.0, 1.1, 2.5])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("spacing, axis, edge_order", [
    ((), None, 1), ((0.3,), 0, 2), ((COORDINATES,), 1, 1), ((COORDINATES,), 1, 2),
    ((0.5, COORDINATES), None, 2)], ids=["unit", "step", "coordinates", "coordinates-2",
                                         "both"])
def test_gradient_matches_numpy_with_its_spacings(spacing, axis, edge_order, engine):
    f = RNG.standard_normal((4, 5))

    def gradient(f):
        g = np.gradient(f, *spacing, axis=axis, edge_order=edge_order)
        return np.stack(g) if axis is None else g

    value = cyad.value_and_jacobian(gradient, f, engine=engine)[0]
    np.testing.assert_allclose(value, gradient(f), rtol=1e-12, atol=1e-13)


def test_results_keep_the_float32_dtype():
    x = RNG.standard_normal(12).astype(np.float32)
    for function in (lambda x: np.cov(x.reshape(3, 4)), lambda x: np.corrcoef(x.reshape(3, 4)),
                     lambda x: np.median(x.reshape(3, 4), axis=1), lambda x: np.gradient(x, 0.5),
                     lambda x: np.trapezoid(x.reshape(3, 4), dx=0.5)):
        value, jac = cyad.value_and_jacobian(function, x)
        assert value.dtype == np.float32 and jac.dtype == np.float32


# -- errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, error, match", [
    (lambda x: np.quantile(x, x[0] * 0.0 + 0.5), TypeError, "differentiable in a, not in q"),
    (lambda x: np.percentile(x, 50.0, method="weibull"), TypeError, "methods linear"),
    (lambda x: np.quantile(x, 1.5), ValueError, r"range \[0, 1\]"),
    (lambda x: np.cov(x.reshape(2, 3), fweights=x[:3]), TypeError, "fweights as constants"),
    (lambda x: np.convolve(x, x[:0]), ValueError, "v cannot be empty"),
    (lambda x: np.correlate(x, x, mode="middle"), ValueError, "mode must be one of"),
    (lambda x: np.gradient(x, edge_order=3), ValueError, "'edge_order' greater than 2"),
    (lambda x: np.gradient(x[:2], edge_order=2), ValueError, "too small"),
    (lambda x: np.max(x, where=x > 0), ValueError, "one has to specify 'initial'"),
    (lambda x: np.max(x, initial=x[0]), TypeError, "initial= as a constant"),
    (lambda x: np.cumulative_sum(x.reshape(2, 3)), ValueError, "axis"),
], ids=["quantile-q", "method", "q-range", "cov-weights", "empty", "mode", "edge-order",
        "short", "max-where", "max-initial", "cumulative-axis"])
@pytest.mark.parametrize("engine", ENGINES)
def test_bad_input_is_a_clear_error(call, error, match, engine):
    with pytest.raises(error, match=match):
        cyad.jacobian(call, RNG.standard_normal(6), engine=engine)


def _reordered(xp, x):
    y = xp.where(x > 1.5, xp.nan, x)
    return (xp.nanmedian(y) + xp.percentile(x, 30.0) + xp.nanmax(y)
            + xp.sum(xp.maximum.accumulate(x) * x))


POINTS = [np.array([0.3, 2.0, -1.0, 0.7, 1.1]), np.array([1.0, -0.5, 1.9, 0.2, 0.4]),
          np.array([1.1, 0.7, -1.0, 2.0, 0.3])]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_prepared_gradient_follows_the_order_of_new_values(engine):
    # the sort, the NaN count and the extremes read the values: a tape checks them on every
    # call (and records f anew where they changed)
    found = references([(lambda xp, x: [_reordered(xp, x)], x) for x in POINTS])
    prep = cyad.prepare_gradient(lambda x: _reordered(np, x), POINTS[0], engine=engine)
    for x, (reference,) in zip(POINTS, found, strict=True):
        assert_matches(cyad.gradient(lambda x: _reordered(np, x), x, prep=prep),
                       reference.first, what="gradient", rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("function", [np.median, lambda a, axis: np.quantile(a, 0.1, axis)],
                         ids=["median", "quantile"])
def test_order_statistics_of_a_slice_with_a_nan_are_nan(function, engine):
    x = np.array([0.5, np.nan, 2.0, 1.0, 3.0, -1.0])   # rows: with a NaN, without
    value, jac = cyad.value_and_jacobian(lambda x: function(x.reshape(2, 3), axis=1), x,
                                         engine=engine)
    np.testing.assert_array_equal(value, function(x.reshape(2, 3), axis=1))
    assert np.isnan(value[0]) and not np.isnan(value[1])
    np.testing.assert_allclose(jac[1], cyad.jacobian(lambda y: function(y, axis=0), x[3:])
                               @ np.eye(3, 6, 3))
