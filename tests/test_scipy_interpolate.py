"""scipy.interpolate inside differentiated functions (cyad/_primitives/scipy_interpolate.py).

References, independent of cyad:
- in the points: the interpolant's own derivative, SciPy's (``spline(x, nu + 1)``, which
  is ``ppoly.derivative()``'s value, and BSpline's, NdBSpline's ``nu``), evaluated in the
  interval SciPy evaluates (at knots too); jnp.interp and
  jax.scipy.interpolate.RegularGridInterpolator where JAX has the function;
- in the data of a construction linear in them (CubicSpline, make_interp_spline,
  make_lsq_spline, interp1d, RegularGridInterpolator, PPoly, BSpline): SciPy's construction
  applied to unit vectors (directions of the data), whose values are the Jacobian's
  columns; the Hessian of a square of it is then 2 J^T W J;
- PchipInterpolator and Akima1DInterpolator (nonlinear in y): fourth-order central
  differences of SciPy's own construction, the second order by central differences of the
  first (cyad's exact gradient, tested on its own).
"""
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.interpolate as si
from derivative_references import central_differences, jax, jnp

import cyad

ENGINES = ["dual", "tape"]
RNG = np.random.default_rng(11)

X = np.linspace(0.0, 3.0, 7)                      # knots 0, 0.5, ..., 3
Y = np.sin(X) + 0.1 * X ** 2
Y2 = np.stack([Y, np.cos(2 * X)], axis=1)         # a trailing axis
# points: at knots (0, 1, 1.5, 3), inside, and outside the range
P = np.array([-0.4, 0.0, 0.3, 1.0, 1.5, 2.2, 2.9, 3.0, 3.7])
INSIDE = P[(P >= 0) & (P <= 3)]
TOLERANCE = dict(rtol=1e-9, atol=1e-11)


def _point_jacobian(d, p_shape, axis, trailing_ndim):
    """The Jacobian of an interpolant's values in its points: d (its derivative's values,
    of the result's shape, the points' axes at `axis`) on the diagonal of the points."""
    count = int(np.prod(p_shape))
    index = np.arange(count).reshape((1,) * axis + tuple(p_shape)
                                     + (1,) * (trailing_ndim - axis))
    index = np.broadcast_to(index, d.shape)
    return np.where(index[..., None] == np.arange(count), np.nan_to_num(d)[..., None], 0.0)


def _check_points(interpolant, p, engine, derivative, axis=0, trailing_ndim=0, **tolerance):
    """cyad's Jacobian and (a weighted sum's) Hessian of interpolant in its points against
    derivative(p, 1) and derivative(p, 2): the interpolant's own derivatives."""
    tolerance = tolerance or TOLERANCE
    shape = p.shape

    def f(q):
        return interpolant(np.reshape(q, shape))

    value = f(p.ravel())
    np.testing.assert_allclose(cyad.jacobian(f, p.ravel(), engine=engine),
                               _point_jacobian(derivative(p, 1), shape, axis, trailing_ndim),
                               **tolerance)
    w = np.linspace(0.5, 1.5, value.size).reshape(value.shape)
    h = cyad.hessian(lambda q: np.sum(np.where(np.isnan(value), 0.0, w * f(q))), p.ravel(),
                     engine=engine)
    second = _point_jacobian(np.nan_to_num(derivative(p, 2)) * w, shape, axis, trailing_ndim)
    expected = np.diag(np.sum(second.reshape(-1, p.size), axis=0))
    np.testing.assert_allclose(h, expected, **tolerance)


# -- in the points: piecewise polynomials -----------------------------------------------------

def _periodic(y):
    y = np.array(y, dtype=float)
    y[-1] = y[0]
    return y


PPOLYS = {
    "not-a-knot": lambda y: si.CubicSpline(X, y),
    "clamped": lambda y: si.CubicSpline(X, y, bc_type="clamped"),
    "natural": lambda y: si.CubicSpline(X, y, bc_type="natural"),
    "first and second": lambda y: si.CubicSpline(X, y, bc_type=((1, 0.3), (2, -0.2))),
    "periodic": lambda y: si.CubicSpline(X, _periodic(y), bc_type="periodic"),
    "pchip": lambda y: si.PchipInterpolator(X, y),
    "akima": lambda y: si.Akima1DInterpolator(X, y, extrapolate=True),
    "makima": lambda y: si.Akima1DInterpolator(X, y, method="makima", extrapolate=True),
    "hermite": lambda y: si.CubicHermiteSpline(X, y, np.cos(X)),
    "descending": lambda y: si.PPoly(si.CubicSpline(X, y).c[:, ::-1] * [[-1], [1], [-1], [1]],
                                     X[::-1]),
    "bpoly": lambda y: si.BPoly.from_derivatives(X, np.stack([y, np.cos(X)], axis=1)),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("nu", [0, 1, 2])
@pytest.mark.parametrize("name", sorted(PPOLYS))
def test_ppoly_in_the_points(name, nu, engine):
    spline = PPOLYS[name](Y)
    _check_points(lambda q: spline(q, nu), P, engine, lambda q, d: spline(q, nu + d))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("extrapolate", [False, "periodic"])
def test_ppoly_extrapolate(extrapolate, engine):
    spline = si.CubicSpline(X, Y)
    if extrapolate is False:
        assert np.isnan(spline(P, extrapolate=False)[[0, -1]]).all()
    _check_points(lambda q: spline(q, extrapolate=extrapolate), P, engine,
                  lambda q, d: spline(q, d, extrapolate=extrapolate))
    fixed = si.CubicSpline(X, Y, extrapolate=extrapolate)    # the object's own setting
    _check_points(fixed, P, engine, lambda q, d: fixed(q, d))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("axis", [0, 1])
def test_ppoly_batched_points_and_trailing_axes(axis, engine):
    y = np.stack([Y2, 2 * Y2], axis=2)                       # (7, 2, 2)
    y = np.moveaxis(y, 0, axis)
    spline = si.CubicSpline(X, y, axis=axis)
    p = P[1:7].reshape(2, 3)
    _check_points(spline, p, engine, lambda q, d: spline(q, d), axis=axis, trailing_ndim=2)


@pytest.mark.parametrize("engine", ENGINES)
def test_ppoly_derivative_objects(engine):
    # PPoly.derivative() of a spline built inside f: its coefficients carry derivatives
    def f(y):
        return si.CubicSpline(X, y).derivative()(INSIDE)

    expected = np.stack([si.CubicSpline(X, e).derivative()(INSIDE) for e in np.eye(X.size)],
                        axis=-1)
    np.testing.assert_allclose(cyad.jacobian(f, Y, engine=engine), expected, **TOLERANCE)


@pytest.mark.parametrize("engine", ENGINES)
def test_data_and_points_together(engine):
    # sum_i S_y(p_i): in p the spline's second derivative, across y and p the first
    # derivatives of the splines of unit data, in y zero (linear)
    def g(z):
        return np.sum(si.CubicSpline(X, z[:7])(z[7:]))

    z = np.r_[Y, 0.3, 1.0, 2.5]
    expected = np.zeros((10, 10))
    for i, p in enumerate(z[7:]):
        expected[7 + i, 7 + i] = si.CubicSpline(X, Y)(p, 2)
        for j, e in enumerate(np.eye(7)):
            expected[j, 7 + i] = expected[7 + i, j] = si.CubicSpline(X, e)(p, 1)
    np.testing.assert_allclose(cyad.hessian(g, z, engine=engine), expected, **TOLERANCE)


# -- in the points: B-splines -----------------------------------------------------------------

BSPLINES = {
    "k=1": lambda y: si.make_interp_spline(X, y, k=1),
    "k=2": lambda y: si.make_interp_spline(X, y, k=2),
    "k=3": lambda y: si.make_interp_spline(X, y),
    "k=5": lambda y: si.make_interp_spline(X, y, k=5),
    "natural": lambda y: si.make_interp_spline(X, y, bc_type="natural"),
    "clamped": lambda y: si.make_interp_spline(X, y, bc_type="clamped"),
    "derivatives": lambda y: si.make_interp_spline(X, y, bc_type=([(1, 0.5)], [(2, 0.1)])),
    "periodic": lambda y: si.make_interp_spline(X, _periodic(y), bc_type="periodic"),
    "periodic k=4": lambda y: si.make_interp_spline(X, _periodic(y), k=4, bc_type="periodic"),
    "lsq": lambda y: si.make_lsq_spline(X, y, np.r_[[0.0] * 4, 1.2, 2.0, [3.0] * 4]),
    "lsq weighted": lambda y: si.make_lsq_spline(X, y, np.r_[[0.0] * 3, 1.0, 2.0, [3.0] * 3],
                                                 k=2, w=np.linspace(1, 2, X.size)),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("nu", [0, 1])
@pytest.mark.parametrize("name", sorted(BSPLINES))
def test_bspline_in_the_points(name, nu, engine):
    spline = BSPLINES[name](Y)
    _check_points(lambda q: spline(q, nu), P, engine, lambda q, d: spline(q, nu + d))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("extrapolate", [False, "periodic"])
def test_bspline_extrapolate(extrapolate, engine):
    spline = si.make_interp_spline(X, Y)
    _check_points(lambda q: spline(q, extrapolate=extrapolate), P, engine,
                  lambda q, d: spline(q, d, extrapolate=extrapolate))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("nu", [1, 2])
def test_bspline_derivative_objects(nu, engine):
    def f(y):
        return si.make_interp_spline(X, y.reshape(7, 2)).derivative(nu)(P)

    expected = np.stack([f(e) for e in np.eye(14)], axis=-1)
    np.testing.assert_allclose(cyad.jacobian(f, Y2.ravel(), engine=engine), expected,
                               **TOLERANCE)


@pytest.mark.parametrize("engine", ENGINES)
def test_bspline_trailing_axes(engine):
    spline = si.make_interp_spline(X, Y2.T, axis=1)
    p = P[1:7].reshape(3, 2)
    _check_points(spline, p, engine, lambda q, d: spline(q, d), axis=1, trailing_ndim=1)


# -- in the points: interp1d ------------------------------------------------------------------

def _interp1d_slope(x, y, points, side):
    # the slope of the interval SciPy's _call_linear (side 'left') or np.interp ('right') uses
    i = np.clip(np.searchsorted(x, points, side=side), 1, x.size - 1)
    return (y[..., i] - y[..., i - 1]) / (x[i] - x[i - 1])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", ["linear", "nearest", "nearest-up", "previous", "next",
                                  "zero", "slinear", "quadratic", "cubic"])
def test_interp1d_in_the_points(kind, engine):
    fill = (-1.0, 2.0)
    f = si.interp1d(X, Y2.T, kind=kind, bounds_error=False, fill_value=fill)
    inside = (P >= X[0]) & (P <= X[-1])
    if kind == "linear":       # 2-D y: SciPy's _call_linear, the interval on the left
        slope = _interp1d_slope(X, Y2.T, P, "left")
    elif kind in ("zero", "slinear", "quadratic", "cubic"):
        slope = f._spline(P, 1).T
    else:
        slope = np.zeros((2, P.size))
    p = P
    expected = _point_jacobian(np.where(inside, slope, 0.0), p.shape, 1, 1)
    for e in ENGINES if engine == "dual" else [engine]:
        np.testing.assert_allclose(cyad.jacobian(f, p, engine=e), expected, **TOLERANCE)
    np.testing.assert_array_equal(f(p)[:, ~inside], [[-1.0, 2.0]] * 2)


@pytest.mark.skipif(jax is None, reason="JAX is the reference")
@pytest.mark.parametrize("engine", ENGINES)
def test_interp1d_linear_is_np_interp(engine):
    # 1-D float data: SciPy calls np.interp, whose derivatives are jnp.interp's (the interval
    # on the right at a knot)
    f = si.interp1d(X, Y, fill_value="extrapolate")
    g = si.interp1d(X, Y)
    assert f._call.__name__ == "_call_linear" and g._call.__name__ == "_call_linear_np"
    expected = jax.jacfwd(lambda q: jnp.interp(q, X, Y))(INSIDE)
    np.testing.assert_allclose(cyad.jacobian(g, INSIDE, engine=engine), expected, **TOLERANCE)
    np.testing.assert_allclose(
        cyad.jacobian(lambda q: np.interp(q, X, Y), INSIDE, engine=engine), expected,
        **TOLERANCE)
    # extrapolation: SciPy's _call_linear, the interval on the left
    expected = np.diag(_interp1d_slope(X, Y, P, "left"))
    np.testing.assert_allclose(cyad.jacobian(f, P, engine=engine), expected, **TOLERANCE)


@pytest.mark.parametrize("engine", ENGINES)
def test_interp1d_bounds_error(engine):
    f = si.interp1d(X, Y, kind="cubic")
    with pytest.raises(ValueError, match="below the interpolation range"):
        cyad.gradient(lambda q: np.sum(f(q)), np.array([-1.0, 1.0]), engine=engine)
    with pytest.raises(ValueError, match="above the interpolation range"):
        cyad.gradient(lambda q: np.sum(f(q)), np.array([1.0, 4.0]), engine=engine)


# -- in the points: regular grids -------------------------------------------------------------

G0, G1 = np.linspace(0.0, 2.0, 6), np.array([0.0, 0.3, 1.0, 1.8, 2.5, 3.0])
VALUES = np.sin(G0)[:, None] * np.cos(G1)[None, :] + 0.3 * G0[:, None]
VALUES3 = np.stack([VALUES, VALUES ** 2], axis=-1)      # a trailing axis
XI = np.column_stack([RNG.uniform(0.05, 1.95, 6), RNG.uniform(0.05, 2.95, 6)])


@pytest.mark.skipif(jax is None, reason="JAX is the reference")
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("method", ["linear", "nearest"])
@pytest.mark.parametrize("values", ["scalar", "trailing"])
def test_grid_against_jax(method, values, engine):
    from jax.scipy.interpolate import RegularGridInterpolator as JaxRGI
    v = VALUES if values == "scalar" else VALUES3
    interpolator = si.RegularGridInterpolator((G0, G1), v, method=method)

    def jax_in_points(q):
        return JaxRGI((G0, G1), v, method=method)(q.reshape(XI.shape))

    def jax_in_values(w):
        return JaxRGI((G0, G1), w.reshape(v.shape), method=method)(XI)

    np.testing.assert_allclose(
        cyad.jacobian(lambda q: interpolator(q.reshape(XI.shape)), XI.ravel(), engine=engine),
        jax.jacfwd(jax_in_points)(XI.ravel()), **TOLERANCE)
    np.testing.assert_allclose(
        cyad.jacobian(lambda w: si.RegularGridInterpolator((G0, G1), w.reshape(v.shape),
                                                           method=method)(XI), v.ravel(),
                      engine=engine),
        jax.jacfwd(jax_in_values)(v.ravel()), **TOLERANCE)
    np.testing.assert_allclose(
        cyad.jacobian(lambda w: si.interpn((G0, G1), w.reshape(v.shape), XI, method=method),
                      v.ravel(), engine=engine),
        jax.jacfwd(jax_in_values)(v.ravel()), **TOLERANCE)


def _multilinear_gradient(q):
    # the gradient of the linear interpolant of VALUES at q, in the cell SciPy takes (the
    # upper one at a grid line: x[i] <= q < x[i + 1], the last closed)
    i = np.clip(np.searchsorted(G0, q[0], side="right") - 1, 0, G0.size - 2)
    j = np.clip(np.searchsorted(G1, q[1], side="right") - 1, 0, G1.size - 2)
    a = (q[0] - G0[i]) / (G0[i + 1] - G0[i])
    b = (q[1] - G1[j]) / (G1[j + 1] - G1[j])
    v00, v01, v10, v11 = VALUES[i, j], VALUES[i, j + 1], VALUES[i + 1, j], VALUES[i + 1, j + 1]
    da = ((v10 - v00) * (1 - b) + (v11 - v01) * b) / (G0[i + 1] - G0[i])
    db = ((v01 - v00) * (1 - a) + (v11 - v10) * a) / (G1[j + 1] - G1[j])
    return np.array([da, db])


@pytest.mark.parametrize("engine", ENGINES)
def test_grid_linear_at_grid_lines_and_outside(engine):
    interpolator = si.RegularGridInterpolator((G0, G1), VALUES, bounds_error=False,
                                              fill_value=None)    # extrapolates
    points = np.array([[0.5, 1.0], [1.0, 0.3], [2.0, 3.0], [0.0, 0.0], [-0.5, 1.2],
                       [1.1, 3.6]])
    g = cyad.jacobian(lambda q: interpolator(q.reshape(-1, 2)), points.ravel(), engine=engine)
    for k, q in enumerate(points):
        np.testing.assert_allclose(g[k, 2 * k:2 * k + 2], _multilinear_gradient(q),
                                   **TOLERANCE)
    # a fill value (carrying derivatives, here) outside; NaN points stay NaN
    points = np.array([[0.5, 1.0], [-0.5, 1.2], [np.nan, 1.0]])

    def f(t):
        return si.RegularGridInterpolator((G0, G1), VALUES, bounds_error=False,
                                          fill_value=t[0] ** 2)(points)

    value = f(np.array([1.5]))
    assert value[1] == 2.25 and np.isnan(value[2])
    assert np.isnan(si.RegularGridInterpolator((G0, G1), VALUES, bounds_error=False)(
        points)[2])
    np.testing.assert_allclose(cyad.jacobian(f, np.array([1.5]), engine=engine)[:2, 0],
                               [0.0, 3.0])
    with pytest.raises(ValueError, match="out of bounds in dimension 0"):
        cyad.gradient(lambda q: np.sum(si.RegularGridInterpolator((G0, G1), VALUES)(
            q.reshape(-1, 2))), np.array([-0.5, 1.2]), engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("method", ["slinear", "cubic", "quintic"])
def test_grid_splines_in_the_points(method, engine):
    interpolator = si.RegularGridInterpolator((G0, G1), VALUES3, method=method)
    n = XI.shape[0]

    def f(q):
        return interpolator(q.reshape(XI.shape))

    expected = np.zeros((n, 2, n, 2))
    for d, nu in enumerate([(1, 0), (0, 1)]):
        expected[np.arange(n), :, np.arange(n), d] = interpolator(XI, nu=nu)
    np.testing.assert_allclose(cyad.jacobian(f, XI.ravel(), engine=engine),
                               expected.reshape(n, 2, 2 * n), **TOLERANCE)
    # second order: sum of the values, Hessian blocks by nu = (2, 0), (1, 1), (0, 2)
    h = cyad.hessian(lambda q: np.sum(f(q)[:, 0]), XI.ravel(), engine=engine)
    for k in range(n):
        block = [[interpolator(XI[k:k + 1], nu=(2, 0))[0, 0],
                  interpolator(XI[k:k + 1], nu=(1, 1))[0, 0]],
                 [interpolator(XI[k:k + 1], nu=(1, 1))[0, 0],
                  interpolator(XI[k:k + 1], nu=(0, 2))[0, 0]]]
        np.testing.assert_allclose(h[2 * k:2 * k + 2, 2 * k:2 * k + 2], block, rtol=1e-8,
                                   atol=1e-9)
    # nu= on cyad's arrays
    np.testing.assert_allclose(
        cyad.jacobian(lambda q: interpolator(q.reshape(XI.shape), nu=(1, 0))[:, 0],
                      XI.ravel(), engine=engine)[np.arange(n), 2 * np.arange(n) + 1],
        interpolator(XI, nu=(1, 1))[:, 0], **TOLERANCE)


# -- in the data: constructions linear in them ------------------------------------------------

def _directions(n, periodic):
    """Unit directions of data of n values (periodic: the ends moved together)."""
    if not periodic:
        return np.eye(n)
    d = np.eye(n)[:-1]
    d[0, -1] = 1.0
    return d


LINEAR = {
    # name: (build from y, data, periodic)
    "cubic not-a-knot": (lambda y: si.CubicSpline(X, y), Y, False),
    "cubic clamped": (lambda y: si.CubicSpline(X, y, bc_type="clamped"), Y, False),
    "cubic natural": (lambda y: si.CubicSpline(X, y, bc_type="natural"), Y, False),
    "cubic mixed": (lambda y: si.CubicSpline(X, y, bc_type=("not-a-knot", (2, 0.0))), Y,
                    False),
    "cubic periodic": (lambda y: si.CubicSpline(X, y, bc_type="periodic"), _periodic(Y),
                       True),
    "cubic n=2": (lambda y: si.CubicSpline(X[:2], y[:2]), Y, False),
    "cubic n=3": (lambda y: si.CubicSpline(X[:3], y[:3]), Y, False),
    "cubic n=3 periodic": (lambda y: si.CubicSpline(X[:3], y, bc_type="periodic"),
                           _periodic(Y[:3]), True),
    "cubic n=4 periodic": (lambda y: si.CubicSpline(X[:4], y, bc_type="periodic"),
                           _periodic(Y[:4]), True),
    "cubic trailing axis": (lambda y: si.CubicSpline(X, y.reshape(2, 7), axis=1),
                            Y2.T.ravel(), False),
    "hermite": (lambda y: si.CubicHermiteSpline(X, y, np.cos(X)), Y, False),
    "ppoly": (lambda c: si.PPoly(c.reshape(2, 6), X[::-1]), np.arange(12.0), False),
    "bspline": (lambda c: si.BSpline(np.r_[[0.0] * 3, 1.0, 2.0, [3.0] * 3], c, 2), Y[:5],
                False),
    "interp k=1": (lambda y: si.make_interp_spline(X, y, k=1), Y, False),
    "interp k=2": (lambda y: si.make_interp_spline(X, y, k=2), Y, False),
    "interp k=3": (lambda y: si.make_interp_spline(X, y), Y, False),
    "interp k=5": (lambda y: si.make_interp_spline(X, y, k=5), Y, False),
    "interp natural": (lambda y: si.make_interp_spline(X, y, bc_type="natural"), Y, False),
    "interp derivatives": (lambda y: si.make_interp_spline(
        X, y, k=5, bc_type=([(1, 0.0), (2, 0.0)], [(1, 0.0), (2, 0.0)])), Y, False),
    "interp periodic": (lambda y: si.make_interp_spline(X, y, bc_type="periodic"),
                        _periodic(Y), True),
    "interp periodic k=2": (lambda y: si.make_interp_spline(X, y, k=2, bc_type="periodic"),
                            _periodic(Y), True),
    "interp trailing axis": (lambda y: si.make_interp_spline(X, y.reshape(2, 7), axis=1),
                             Y2.T.ravel(), False),
    "lsq": (lambda y: si.make_lsq_spline(X, y, np.r_[[0.0] * 4, 1.2, 2.0, [3.0] * 4]), Y,
            False),
    "lsq weighted": (lambda y: si.make_lsq_spline(X, y, np.r_[[0.0] * 4, 1.2, [3.0] * 4],
                                                  w=np.linspace(1.0, 3.0, 7)), Y, False),
}


def _values_of(build, points, derivative=0):
    def f(y):
        spline = build(y)
        return spline(points, derivative) if derivative else spline(points)
    return f


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(LINEAR))
def test_linear_constructions_in_the_data(name, engine):
    build, data, periodic = LINEAR[name]
    points = np.r_[P, X[1:3]]
    for derivative in (0, 1):
        f = _values_of(build, points, derivative)
        directions = _directions(data.size, periodic)
        # (an affine construction, of constant slopes or boundary values: less its constant)
        expected = np.stack([f(d) - f(0 * d) for d in directions], axis=-1)
        jacobian = cyad.jacobian(f, data, engine=engine)
        np.testing.assert_allclose(jacobian @ directions.T, expected, **TOLERANCE)
        assert np.allclose(f(data), build(data)(points, derivative) if derivative else
                           build(data)(points), rtol=1e-12, atol=1e-12)
    # second order: a weighted sum of squares, whose Hessian is 2 J^T W J
    f = _values_of(build, points)
    w = np.linspace(0.5, 1.5, f(data).size).reshape(f(data).shape)
    j = cyad.jacobian(f, data, engine="dual").reshape(-1, data.size)
    h = cyad.hessian(lambda y: np.sum(w * f(y) ** 2), data, engine=engine)
    np.testing.assert_allclose(directions @ h @ directions.T,
                               directions @ (2 * j.T @ (w.reshape(-1, 1) * j)) @ directions.T,
                               **TOLERANCE)


@pytest.mark.parametrize("engine", ENGINES)
def test_boundary_values_carry_derivatives(engine):
    def f(t):
        spline = si.CubicSpline(X, Y, bc_type=((1, t[0]), (2, t[1])))
        other = si.make_interp_spline(X, Y, bc_type=([(1, t[2])], [(2, t[3])]))
        return np.concatenate([spline(P), other(P)])

    t = np.array([0.3, -0.2, 0.5, 0.1])
    np.testing.assert_allclose(cyad.jacobian(f, t, engine=engine), central_differences(f, t),
                               rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", ["linear", "nearest", "previous", "next", "zero", "slinear",
                                  "quadratic", "cubic"])
@pytest.mark.parametrize("fill", ["nan", "pair", "extrapolate"])
def test_interp1d_in_the_data(kind, fill, engine):
    order = RNG.permutation(X.size)          # unsorted x: SciPy sorts x and y
    x = X[order]
    fill_value = {"nan": np.nan, "pair": (-1.0, 2.0), "extrapolate": "extrapolate"}[fill]
    if fill == "extrapolate" and kind in ("zero", "quadratic", "cubic"):
        points = P
    else:
        points = np.r_[P, X[2]]

    def f(y):
        return si.interp1d(x, y.reshape(2, -1), kind=kind, bounds_error=False,
                           fill_value=fill_value)(points)

    data = Y2.T[:, order].ravel()
    expected = np.stack([f(d) - f(0 * d) for d in np.eye(data.size)], axis=-1)
    jacobian = cyad.jacobian(f, data, engine=engine)
    np.testing.assert_allclose(jacobian, np.nan_to_num(expected), **TOLERANCE)
    np.testing.assert_array_equal(np.isnan(f(data)), np.isnan(expected[..., 0]))


@pytest.mark.parametrize("engine", ENGINES)
def test_interp1d_fill_value_carries_derivatives(engine):
    def f(t):
        return si.interp1d(X, Y2.T, bounds_error=False, fill_value=(t[0], t[1:]))(P)

    t = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(cyad.jacobian(f, t, engine=engine), central_differences(f, t),
                               rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("engine", ENGINES)
def test_grid_shapes_and_orders(engine):
    # points as a tuple of coordinate arrays, a decreasing grid axis, an axis of one point,
    # a one-dimensional grid, a method given at the call
    def check(f, data, reference=None):
        reference = reference or f
        expected = np.stack([reference(e) for e in np.eye(data.size)], axis=-1)
        np.testing.assert_allclose(cyad.jacobian(f, data, engine=engine), expected,
                                   **TOLERANCE)

    q = XI.T.ravel()
    n = XI.shape[0]
    rgi = si.RegularGridInterpolator((G0, G1), VALUES)
    check(lambda w: si.RegularGridInterpolator((G0, G1), w.reshape(VALUES.shape))(
        (XI[:, 0], XI[:, 1])), VALUES.ravel())
    np.testing.assert_allclose(
        cyad.jacobian(lambda t: rgi((t[:n], t[n:])), q, engine=engine),
        cyad.jacobian(lambda t: rgi(t.reshape(2, n).T), q, engine=engine), **TOLERANCE)
    check(lambda w: si.RegularGridInterpolator((G0[::-1], G1), w.reshape(VALUES.shape))(XI),
          VALUES[::-1].ravel())
    check(lambda w: si.RegularGridInterpolator((G0, G1[:1]), w.reshape(-1, 1))(
        np.c_[XI[:, 0], np.zeros(n)]), VALUES[:, 0].copy())
    check(lambda w: si.RegularGridInterpolator((G0,), w)(XI[:, 0]), VALUES[:, 0].copy())
    for method in ("nearest", "cubic"):
        from scipy.sparse.linalg import spsolve    # SciPy's exact solve, as cyad's
        check(lambda w, method=method: si.RegularGridInterpolator(
            (G0, G1), w.reshape(VALUES.shape))(XI, method=method), VALUES.ravel(),
            lambda w, method=method: si.RegularGridInterpolator(
                (G0, G1), w.reshape(VALUES.shape), method=method,
                **({"solver": spsolve} if method == "cubic" else {}))(XI))


@pytest.mark.parametrize("engine", ENGINES)
def test_ndbspline(engine):
    from scipy.interpolate._ndbspline import NdBSpline, make_ndbspl
    spline = make_ndbspl((G0, G1), VALUES, k=3)
    n = XI.shape[0]
    expected = np.zeros((n, 2 * n))
    expected[np.arange(n), 2 * np.arange(n)] = spline(XI, nu=(1, 0))
    expected[np.arange(n), 2 * np.arange(n) + 1] = spline(XI, nu=(0, 1))
    np.testing.assert_allclose(cyad.jacobian(lambda q: spline(q.reshape(-1, 2)), XI.ravel(),
                                             engine=engine), expected, **TOLERANCE)

    def f(c):
        return NdBSpline(spline.t, c.reshape(spline.c.shape), 3)(XI)

    expected = np.stack([f(e) for e in np.eye(spline.c.size)], axis=-1)
    np.testing.assert_allclose(cyad.jacobian(f, spline.c.ravel(), engine=engine), expected,
                               **TOLERANCE)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("method", ["slinear", "cubic", "quintic"])
def test_grid_splines_in_the_values(method, engine):
    from scipy.sparse.linalg import spsolve    # SciPy's exact solve, as cyad's

    def f(w):
        return si.RegularGridInterpolator((G0, G1), w.reshape(VALUES.shape),
                                          method=method)(XI)

    def scipy_exact(w):
        return si.RegularGridInterpolator((G0, G1), w.reshape(VALUES.shape), method=method,
                                          solver=spsolve)(XI)

    expected = np.stack([scipy_exact(e) for e in np.eye(VALUES.size)], axis=-1)
    value, jacobian = cyad.value_and_jacobian(f, VALUES.ravel(), engine=engine)
    np.testing.assert_allclose(jacobian, expected, rtol=1e-9, atol=1e-10)
    # the values of an exact solve; SciPy's own (an iterative solve) are near
    np.testing.assert_allclose(value, scipy_exact(VALUES.ravel()), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(f(VALUES.ravel()), value, atol=1e-4)

    def g(w):
        return si.interpn((G0, G1), w.reshape(VALUES.shape), XI, method=method)

    np.testing.assert_allclose(cyad.jacobian(g, VALUES.ravel(), engine=engine), expected,
                               rtol=1e-9, atol=1e-10)


# -- in the data: nonlinear constructions -----------------------------------------------------

NONLINEAR = {
    "pchip": lambda y: si.PchipInterpolator(X, y),
    "pchip n=2": lambda y: si.PchipInterpolator(X[:2], y[:2]),
    "akima": lambda y: si.Akima1DInterpolator(X, y),
    "makima": lambda y: si.Akima1DInterpolator(X, y, method="makima", extrapolate=True),
    "akima n=2": lambda y: si.Akima1DInterpolator(X[:2], y[:2], extrapolate=True),
    "pchip trailing": lambda y: si.PchipInterpolator(X, y.reshape(7, 2)),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(NONLINEAR))
def test_nonlinear_constructions_in_the_data(name, engine):
    build = NONLINEAR[name]
    # data with slopes of both signs, a flat part (a pchip slope set to zero), no ties
    y = np.array([0.0, 1.0, 1.5, 1.2, 0.3, 0.5, 2.0])
    data = Y2.ravel() if name.endswith("trailing") else y
    points = np.r_[INSIDE, 0.7]

    def f(d):
        return build(d)(points)

    np.testing.assert_allclose(cyad.jacobian(f, data, engine=engine),
                               central_differences(f, data), rtol=1e-7, atol=1e-8)

    def g(d):
        return np.sum(np.sin(f(d)))

    second = central_differences(lambda d: cyad.gradient(g, d, engine="dual"), data)
    np.testing.assert_allclose(cyad.hessian(g, data, engine=engine), second, rtol=1e-6,
                               atol=1e-7)


@pytest.mark.parametrize("engine", ENGINES)
def test_pchip_branches_follow_the_values(engine):
    # a prepared derivative at data whose slopes change sign elsewhere: the tape re-records
    def f(d):
        return si.PchipInterpolator(X, d)(INSIDE)

    y1 = np.array([0.0, 1.0, 1.5, 1.2, 0.3, 0.5, 2.0])
    y2 = np.array([0.0, 1.0, 0.8, 1.2, 1.3, 0.5, 2.0])
    prep = cyad.prepare_jacobian(f, y1, engine=engine)
    np.testing.assert_allclose(cyad.jacobian(f, y2, prep=prep), central_differences(f, y2),
                               rtol=1e-7, atol=1e-8)


# -- engines, floats, preps -------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_a_prepared_call_follows_the_intervals(engine):
    spline = si.make_interp_spline(X, Y)
    cubic = si.CubicSpline(X, Y)

    def f(q):
        return spline(q) + cubic(q, 1)

    prep = cyad.prepare_jacobian(f, np.array([0.2, 1.2]), engine=engine)
    for q in (np.array([0.2, 1.2]), np.array([2.7, 0.6]), np.array([3.0, 0.0])):
        expected = np.diag(spline(q, 1) + cubic(q, 2))
        np.testing.assert_allclose(cyad.jacobian(f, q, prep=prep), expected, **TOLERANCE)


@pytest.mark.parametrize("engine", ENGINES)
def test_nested(engine):
    # a derivative inside a differentiated function: d/dt [t S'(s t)] at s = 1
    spline = si.CubicSpline(X, Y)
    r = cyad.derivative(lambda t: cyad.derivative(lambda s: spline(s * t), 1.0, engine=engine),
                        0.7, engine=engine)
    assert r == pytest.approx(spline(0.7, 1) + 0.7 * spline(0.7, 2), rel=1e-12)

    # in the data, around a gradient in the points
    def inner(a):
        return cyad.gradient(lambda p: np.sum(si.CubicSpline(X, a[0] * Y)(p)), INSIDE,
                             engine=engine)

    np.testing.assert_allclose(cyad.jacobian(inner, np.array([2.0]), engine=engine)[:, 0],
                               spline(INSIDE, 1), **TOLERANCE)


@pytest.mark.parametrize("engine", ENGINES)
def test_float32(engine):
    spline = si.CubicSpline(X, Y)
    q = INSIDE.astype(np.float32)
    g = cyad.gradient(lambda p: np.sum(spline(p)), q, engine=engine)
    np.testing.assert_allclose(g, spline(q.astype(np.float64), 1), rtol=1e-5)
    y = Y.astype(np.float32)
    j = cyad.jacobian(lambda d: si.CubicSpline(X, d)(INSIDE), y, engine=engine)
    expected = np.stack([si.CubicSpline(X, e)(INSIDE) for e in np.eye(X.size)], axis=-1)
    np.testing.assert_allclose(j, expected, rtol=1e-5, atol=1e-6)


# -- plain calls, wrappers, refusals ----------------------------------------------------------

def test_plain_calls_are_scipys():
    from scipy.interpolate._interpolate import _PPolyBase
    methods = [_PPolyBase.__call__, si.PPoly.__init__, si.CubicSpline.__init__,
               si.PchipInterpolator.__init__, si.Akima1DInterpolator.__init__,
               si.CubicHermiteSpline.__init__, si.BSpline.__init__, si.BSpline.__call__,
               si.interp1d.__init__, si.interp1d.__call__,
               si.RegularGridInterpolator.__init__, si.RegularGridInterpolator.__call__,
               si.make_interp_spline, si.make_lsq_spline, si.interpn]
    for method in methods:
        assert method.__cyad_dispatching__ and method.__doc__ == method.__wrapped__.__doc__
    spline = si.CubicSpline(X, Y)
    assert type(spline.c) is np.ndarray
    np.testing.assert_array_equal(spline(P), _PPolyBase.__call__.__wrapped__(spline, P))
    b = si.make_interp_spline(X, Y)
    np.testing.assert_array_equal(b(P), si.BSpline.__call__.__wrapped__(b, P))
    f = si.interp1d(X, Y, kind="cubic")
    np.testing.assert_array_equal(f(INSIDE), si.interp1d.__call__.__wrapped__(f, INSIDE))
    g = si.RegularGridInterpolator((G0, G1), VALUES)
    np.testing.assert_array_equal(g(XI), si.RegularGridInterpolator.__call__.__wrapped__(g, XI))


def test_objects_built_inside_f_are_scipys_classes():
    seen = {}

    def f(y):
        spline = si.CubicSpline(X, y)
        seen["spline"] = spline
        return spline(P)

    cyad.jacobian(f, Y, engine="tape")
    spline = seen["spline"]
    assert isinstance(spline, si.CubicSpline) and spline.x is not None
    assert spline.c.shape == (4, 6)


@pytest.mark.parametrize("engine", ENGINES)
def test_refusals(engine):
    with pytest.raises(TypeError, match="'pchip'"):
        cyad.jacobian(lambda w: si.RegularGridInterpolator(
            (G0, G1), w.reshape(VALUES.shape), method="pchip")(XI), VALUES.ravel(),
            engine=engine)
    with pytest.raises(TypeError, match="splinef2d"):
        cyad.jacobian(lambda q: si.interpn((G0, G1), VALUES, q.reshape(-1, 2),
                                           method="splinef2d"), XI.ravel(), engine=engine)
    with pytest.raises(TypeError, match="must be constant"):
        cyad.jacobian(lambda x: si.interp1d(x, Y)(INSIDE), X, engine=engine)
    with pytest.raises(TypeError, match="cannot become a plain ndarray"):
        cyad.jacobian(lambda y: si.CubicSpline(X, y).antiderivative()(INSIDE), Y,
                      engine=engine)
    with pytest.raises(TypeError, match="complex data"):
        cyad.jacobian(si.CubicSpline(X, Y + 1j * Y), INSIDE, engine=engine)
    with pytest.raises(TypeError, match="must be constants"):
        cyad.jacobian(lambda t: si.BSpline(t, Y, 3)(INSIDE),
                      np.r_[[0.0] * 4, X[2:-2], [3.0] * 4], engine=engine)
    for build in (si.CubicSpline, si.PchipInterpolator, si.make_interp_spline):
        with pytest.raises(TypeError, match="must be constants"):
            cyad.jacobian(lambda x, build=build: build(x, Y)(INSIDE), X, engine=engine)


def _run(code, tmp_path):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, cwd=tmp_path)


@pytest.mark.parametrize("order", ["scipy first", "cyad first"])
def test_import_orders(order, tmp_path):
    imports = ("import scipy.interpolate as si\nimport cyad" if order == "scipy first"
               else "import cyad\nimport scipy.interpolate as si")
    result = _run(imports + textwrap.dedent("""
        import numpy as np
        spline = si.CubicSpline(np.arange(5.0), np.arange(5.0) ** 2)
        assert si.CubicSpline.__init__.__cyad_dispatching__
        print(cyad.derivative(lambda t: spline(t), 1.5))
        """), tmp_path)
    assert result.returncode == 0, result.stderr
    assert float(result.stdout) == pytest.approx(3.0, rel=1e-12)
