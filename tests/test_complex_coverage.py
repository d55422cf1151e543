"""Complex intermediates meeting the rest of cyad: sparse Jacobians and Hessians (patterns,
colorings, values), cyad.scipy's callables inside SciPy's solvers, cyad.at_points (serially,
on threads, through a map-like, per-point arguments), a recorded tape as a C function, and
float32 inputs, whose intermediates are complex64, on both engines. References are
independent of cyad: JAX in float64 where it is installed, else central differences
(derivative_references), the analytic Jacobian of a linear map by NumPy, and the known
minimiser of a fitted problem."""
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from derivative_references import assert_matches, exact_in_float32, loosest, references, seeded
from scenarios import ENGINES

import cyad

pytestmark = pytest.mark.xdist_group("test_complex_coverage")

scipy = pytest.importorskip("scipy")
from scipy.fft import dct  # noqa: E402
from scipy.optimize import least_squares, minimize  # noqa: E402

import cyad.scipy as cs  # noqa: E402

TOLERANCE = dict(rtol=1e-11, atol=1e-12)
FLOAT32 = dict(rtol=2e-4, atol=2e-5)


# -- the programs: program(xp, x) -> [array], for NumPy and jax.numpy alike ----------------------

def phases(xp, x):
    return xp.exp(1j * x) * (x + 2j)


def phase_residual(xp, x):
    """Neighbouring phasors multiplied: a banded Jacobian (two per row) through complex
    products, conjugates and moduli."""
    z = phases(xp, x)
    w = z[1:] * xp.conj(z[:-1])
    return [xp.concatenate([w.real, w.imag, xp.abs(z) ** 2])]


def smoothed(xp, x):
    k = np.fft.rfftfreq(x.size, 1.0 / x.size)
    return xp.fft.irfft(np.exp(-0.05 * k ** 2) * xp.fft.rfft(x), n=x.size)


def spectral_residual(xp, x):
    """A Fourier multiplier (rfft, irfft): every output depends on every input."""
    return [smoothed(xp, x) * x + xp.sin(x)]


def phase_energy(xp, x):
    """A tridiagonal Hessian through complex products: |z_i|^3 and Re(z_i+1 conj(z_i))."""
    z = phases(xp, x)
    return [xp.sum((z[1:] * xp.conj(z[:-1])).real) + xp.sum(xp.abs(z) ** 3)]


def spectral_energy(xp, x):
    """A dense Hessian through a spectral derivative and the power spectrum of x^2."""
    k = np.fft.rfftfreq(x.size, 1.0 / x.size)
    derivative = xp.fft.irfft(1j * k * xp.fft.rfft(x), n=x.size)
    return [xp.sum(derivative ** 2 * x) + xp.sum(xp.abs(xp.fft.rfft(x * x)) ** 2) / x.size]


def with_argument(a):
    def program(xp, x):
        return [xp.sum(xp.abs(xp.exp(1j * a * x) + x) ** 2)]
    return program


N = 10
POINTS = exact_in_float32(seeded("complex-coverage").uniform(0.2, 1.2, (3, N)))
ARGUMENTS = exact_in_float32([0.5, 1.5, 2.5])
RESIDUALS = {"phase_residual": phase_residual, "spectral_residual": spectral_residual}
ENERGIES = {"phase_energy": phase_energy, "spectral_energy": spectral_energy}
_REFERENCES = {}


def reference(program, i):
    """The Derivatives of program at POINTS[i]; with_argument's program at POINTS[i] with
    ARGUMENTS[i] for program None (all computed in one go, at the first use)."""
    if not _REFERENCES:
        cases = [(p, i, p, POINTS[i]) for p in (*RESIDUALS.values(), *ENERGIES.values())
                 for i in range(len(POINTS))]
        cases += [(None, i, with_argument(a), POINTS[i]) for i, a in enumerate(ARGUMENTS)]
        found = references([(p, x) for _, _, p, x in cases])
        _REFERENCES.update(((key, i), d) for (key, i, _, _), (d,) in zip(cases, found))
    return _REFERENCES[program, i]


def function(program):
    return lambda x: program(np, x)[0]


def tolerance(exact):
    return loosest(exact.tolerance, TOLERANCE)


def band(n, offsets):
    return sum(np.eye(n, k=k, dtype=int) for k in offsets)


# -- sparse Jacobians and Hessians ----------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(RESIDUALS))
def test_sparse_jacobian(name, engine):
    f = function(RESIDUALS[name])
    prep = cyad.prepare_sparse_jacobian(f, POINTS[0], engine=engine)
    if name == "phase_residual":
        # the pattern is the band of the products and the diagonal of the moduli, exactly
        pair = band(N, [0, 1])[:-1]
        assert np.array_equal(prep.sparsity.toarray(), np.vstack([pair, pair, np.eye(N)]))
        assert prep.n_colors == 2
    else:
        assert prep.sparsity.nnz == N * N
    for i in range(2):      # the prep reused at another point
        exact = reference(RESIDUALS[name], i)
        value, jacobian = cyad.value_and_sparse_jacobian(f, POINTS[i], prep=prep)
        assert_matches(value, exact.value, **tolerance(exact), what="value")
        assert_matches(jacobian.toarray(), exact.first, **tolerance(exact), what="jacobian")
        # (the pattern holds every entry of the reference above its accuracy)
        nonzero = np.abs(exact.first) > 1e-6 * np.max(np.abs(exact.first))
        assert not np.any(nonzero & (prep.sparsity.toarray() == 0))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(ENERGIES))
def test_sparse_hessian(name, engine):
    f = function(ENERGIES[name])
    prep = cyad.prepare_sparse_hessian(f, POINTS[0], engine=engine)
    if name == "phase_energy":
        assert np.array_equal(prep.sparsity.toarray(), band(N, [-1, 0, 1]))
        assert prep.n_colors == 3
    else:
        assert prep.sparsity.nnz == N * N
    for i in range(2):
        exact = reference(ENERGIES[name], i)
        value, gradient, hessian = cyad.value_gradient_and_sparse_hessian(f, POINTS[i],
                                                                          prep=prep)
        assert_matches(value, exact.value, **tolerance(exact), what="value")
        assert_matches(gradient, exact.first, **tolerance(exact), what="gradient")
        assert_matches(hessian.toarray(), exact.second, **tolerance(exact), what="hessian")


def test_sparsity_through_complex_constants():
    """C @ z with a complex constant C: an entry of the pattern where either part of C is
    nonzero (the real part's diagonal, the imaginary part's superdiagonal, one entry both)."""
    c = np.eye(N) + 2j * np.eye(N, k=1)
    c[3, 0] = 1 + 1j

    def f(x):
        z = c @ (x + 0.5j * x ** 2)
        return np.concatenate([z.real, z.imag])

    pattern = cyad.jacobian_sparsity(f, POINTS[0]).toarray()
    expected = (c != 0).astype(int)
    assert np.array_equal(pattern, np.vstack([expected, expected]))
    # J = [Re; Im] of C diag(1 + 1j x), by hand
    derivative = c * (1 + 1j * POINTS[0])
    for engine in ENGINES:
        got = cyad.sparse_jacobian(f, POINTS[0], engine=engine).toarray()
        np.testing.assert_allclose(got, np.vstack([derivative.real, derivative.imag]),
                                   rtol=1e-15, atol=1e-15)


# An FFT along one axis of a batch couples only the elements of one transform: a block per
# transform
def test_batched_transforms_give_block_diagonal_patterns():
    def f(x):
        u = x.reshape(4, 8)
        k = np.fft.rfftfreq(8, 1.0 / 8)
        return (np.fft.irfft(1j * k * np.fft.rfft(u, axis=-1), n=8, axis=-1) * u).ravel()

    x = seeded("batched").uniform(0.2, 1.2, 32)
    blocks = np.kron(np.eye(4, dtype=int), np.ones((8, 8), int))
    assert np.array_equal(cyad.jacobian_sparsity(f, x).toarray(), blocks)


# -- float32: complex64 inside, float32 results close to the float64 references ------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_float32_computes_in_complex64(engine):
    seen = []

    def residual(x):
        z = phases(np, x)
        seen.append(z.dtype)
        return phase_residual(np, x)[0]

    x = POINTS[0].astype(np.float32)
    exact = reference(phase_residual, 0)
    jacobian = cyad.sparse_jacobian(residual, x, engine=engine)
    assert jacobian.dtype == np.float32 and set(seen) == {np.dtype(np.complex64)}
    assert_matches(jacobian.toarray(), exact.first, **FLOAT32)
    dense = cyad.jacobian(residual, x, engine=engine)
    assert dense.dtype == np.float32
    assert_matches(dense, exact.first, **FLOAT32)
    for program in ENERGIES.values():
        f, exact = function(program), reference(program, 0)
        gradient = cyad.gradient(f, x, engine=engine)
        hessian = cyad.sparse_hessian(f, x, engine=engine)
        assert gradient.dtype == hessian.dtype == np.float32
        assert_matches(gradient, exact.first, **FLOAT32)
        assert_matches(hessian.toarray(), exact.second, **FLOAT32)
        assert_matches(cyad.hessian(f, x, engine=engine), exact.second, **FLOAT32)


# -- cyad.scipy ----------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", [None, *ENGINES])
def test_scipy_callables_against_references(engine):
    x = POINTS[1]
    for name, program in RESIDUALS.items():
        exact = reference(program, 1)
        dense = cs.jacobian(function(program), engine=engine)(x)
        sparse = cs.jacobian(function(program), sparse=True, engine=engine)(x)
        assert_matches(dense, exact.first, **tolerance(exact), what=name)
        assert_matches(sparse.toarray(), exact.first, **tolerance(exact), what=name)
    v = seeded("hessp").standard_normal(N)
    for name, program in ENERGIES.items():
        f, exact = function(program), reference(program, 1)
        value, gradient = cs.value_and_gradient(f, engine=engine)(x)
        assert_matches(value, exact.value, **tolerance(exact), what=name)
        assert_matches(gradient, exact.first, **tolerance(exact), what=name)
        assert_matches(cs.gradient(f, engine=engine)(x), exact.first, **tolerance(exact))
        assert_matches(cs.hessian(f, engine=engine)(x), exact.second, **tolerance(exact))
        assert_matches(cs.hessian(f, sparse=True, engine=engine)(x).toarray(), exact.second,
                       **tolerance(exact))
        assert_matches(cs.hessp(f, engine=engine)(x, v), exact.second @ v, **tolerance(exact))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("engine", [None, *ENGINES])
def test_least_squares_recovers_the_point(engine, sparse):
    """Noise-free data from the phase residual at a known x: least_squares, with cyad's
    Jacobian (dense, or sparse with lsmr), comes back to that x from a perturbed start."""
    truth = POINTS[2]
    data = phase_residual(np, truth)[0]

    def residual(x, data):
        return phase_residual(np, x)[0] - data

    start = truth + 0.1 * seeded("least-squares").standard_normal(N)
    jac = cs.jacobian(residual, sparse=sparse, engine=engine)
    fit = least_squares(residual, start, jac=jac, args=(data,), xtol=1e-15, ftol=1e-15,
                        gtol=1e-15, **({"tr_solver": "lsmr"} if sparse else {}))
    np.testing.assert_allclose(fit.x, truth, rtol=1e-10)


@pytest.mark.parametrize("engine", [None, *ENGINES])
def test_minimize_finds_the_phases(engine):
    """sum |e^{i x} (1 + 0.5i) - c|^2 with c = e^{i theta} (1 + 0.5i) is least at x = theta:
    Newton-CG with cyad's gradient and Hessian products, trust-constr with its sparse
    Hessian."""
    theta = POINTS[0]
    c = np.exp(1j * theta) * (1 + 0.5j)

    def f(x):
        return np.sum(np.abs(np.exp(1j * x) * (1 + 0.5j) - c) ** 2)

    start = theta + 0.3 * np.cos(np.arange(N))
    newton = minimize(f, start, method="Newton-CG", jac=cs.gradient(f, engine=engine),
                      hessp=cs.hessp(f, engine=engine), options={"xtol": 1e-14})
    with warnings.catch_warnings():
        # (trust-constr warns that an unconstrained problem is better served elsewhere)
        warnings.simplefilter("ignore", UserWarning)
        trust = minimize(f, start, method="trust-constr", jac=cs.gradient(f, engine=engine),
                         hess=cs.hessian(f, sparse=True, engine=engine),
                         options={"gtol": 1e-13, "xtol": 1e-15})
    np.testing.assert_allclose(newton.x, theta, rtol=1e-9)
    np.testing.assert_allclose(trust.x, theta, rtol=1e-9)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("engine", [None, *ENGINES])
def test_ode_jacobian_of_a_spectral_right_hand_side(engine, sparse):
    """rhs(t, y) = (1 + sin t / 2) L y + y^2 with L the spectral second derivative: the
    Jacobian is (1 + sin t / 2) L + diag(2 y), L's columns being L applied to the unit
    vectors by NumPy."""
    n = 16
    k = np.fft.rfftfreq(n, 1.0 / n)

    def second_derivative(y):
        return np.fft.irfft(-k ** 2 * np.fft.rfft(y), n=n)

    def rhs(t, y):
        return (1 + 0.5 * np.sin(t)) * second_derivative(y) + y ** 2

    columns = np.stack([second_derivative(e) for e in np.eye(n)], axis=1)
    y = seeded("ode").uniform(-1.0, 1.0, n)
    jacobian = cs.ode_jacobian(rhs, sparse=sparse, engine=engine)
    for t in (0.0, 0.7, 2.0):
        got = jacobian(t, y)
        got = got.toarray() if sparse else got
        expected = (1 + 0.5 * np.sin(t)) * columns + np.diag(2 * y)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * np.abs(columns).max())


# -- cyad.at_points ------------------------------------------------------------------------------

def stacked(program, operator, v=None):
    """The references of `operator` at every row of POINTS, stacked."""
    rows = [reference(program, i) for i in range(len(POINTS))]
    parts = {"value": [r.value for r in rows], "gradient": [r.first for r in rows],
             "jacobian": [r.first for r in rows], "hessian": [r.second for r in rows]}
    if v is not None:
        parts["hvp"] = [r.second @ t for r, t in zip(rows, v)]
    names = {"value_and_gradient": ("value", "gradient"),
             "value_gradient_and_hessian": ("value", "gradient", "hessian"),
             "gradient_and_hvp": ("gradient", "hvp"),
             "value_and_jacobian": ("value", "jacobian")}.get(operator, (operator,))
    found = tuple(np.stack(parts[name]) for name in names)
    return found if len(found) > 1 else found[0]


def assert_all_match(got, want, **options):
    for g, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
        assert_matches(g, w, **options)


OPERATORS = [("gradient", phase_energy), ("value_gradient_and_hessian", spectral_energy),
             ("gradient_and_hvp", phase_energy), ("hvp", spectral_energy),
             ("jacobian", spectral_residual), ("value_and_jacobian", phase_residual)]


@pytest.fixture(scope="module")
def pool():
    with ThreadPoolExecutor(2) as executor:
        yield executor


@pytest.mark.parametrize("workers", ["serial", "threads", "map"])
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("operator, program", OPERATORS, ids=[o for o, _ in OPERATORS])
def test_at_points(operator, program, engine, workers, pool):
    v = seeded("at-points").standard_normal(POINTS.shape) if "hvp" in operator else None
    want = stacked(program, operator, v)
    options = {"engine": engine}
    if workers == "threads" and engine == "tape":   # (the dual engine runs them serially)
        options["workers"] = 2
    if workers == "map":
        options["workers"] = pool.map
    tangents = () if v is None else (v,)
    got = cyad.at_points(operator, function(program), POINTS, *tangents, **options)
    assert_all_match(got, want, **tolerance(reference(program, 0)))
    # float32 points: float32 results, close to the float64 references
    tangents = () if v is None else (v.astype(np.float32),)
    got = cyad.at_points(operator, function(program), POINTS.astype(np.float32), *tangents,
                         **options)
    for g in got if isinstance(got, tuple) else (got,):
        assert g.dtype == np.float32
    assert_all_match(got, want, **FLOAT32)


@pytest.mark.parametrize("engine", ENGINES)
def test_at_points_with_arguments(engine, pool):
    """f(x, a) = sum |e^{i a x} + x|^2 with a per point."""
    def f(x, a):
        return np.sum(np.abs(np.exp(1j * a * x) + x) ** 2)

    rows = [reference(None, i) for i in range(len(ARGUMENTS))]
    gradient, hessian = cyad.at_points("value_gradient_and_hessian", f, POINTS,
                                       args=(ARGUMENTS,), engine=engine)[1:]
    options = tolerance(rows[0])
    assert_matches(gradient, np.stack([r.first for r in rows]), **options)
    assert_matches(hessian, np.stack([r.second for r in rows]), **options)
    gradient = cyad.at_points("gradient", f, POINTS.astype(np.float32),
                              args=(ARGUMENTS.astype(np.float32),), engine=engine,
                              workers=pool.map)
    assert gradient.dtype == np.float32
    assert_matches(gradient, np.stack([r.first for r in rows]), **FLOAT32)


def test_a_recorded_tape_is_a_real_c_function():
    """cyad.record of f with complex intermediates: a FunctionWrapper (real at its ends)
    that the dual engine's operators, the sparse operators and at_points on threads call."""
    f = function(spectral_residual)
    wrapper = cyad.record(f, POINTS[0])
    for i in range(len(POINTS)):
        exact = reference(spectral_residual, i)
        assert_matches(cyad.jacobian(wrapper, POINTS[i], engine="dual"), exact.first,
                       **tolerance(exact))
        assert_matches(cyad.sparse_jacobian(wrapper, POINTS[i]).toarray(), exact.first,
                       **tolerance(exact))
    got = cyad.at_points("jacobian", wrapper, POINTS, workers=2)
    assert_matches(got, stacked(spectral_residual, "jacobian"),
                   **tolerance(reference(spectral_residual, 0)))
    wrapper32 = cyad.record(f, POINTS[0].astype(np.float32))
    got = cyad.at_points("jacobian", wrapper32, POINTS.astype(np.float32), workers=2)
    assert got.dtype == np.float32
    assert_matches(got, stacked(spectral_residual, "jacobian"), **FLOAT32)


# -- writes into a part of a complex buffer --------------------------------------------------------

# `z.real` and `z.imag` are views of z, as NumPy's: writes into them reach z and no other array
@pytest.mark.parametrize("engine", ENGINES)
def test_writes_through_a_part(engine):
    def f(x):
        z = np.zeros_like(x, dtype=complex)
        z.real = x
        z.imag[1:] = 2.0
        z.imag[:-1] += x[1:] ** 2
        return np.abs(z) ** 2

    x = POINTS[0]
    value, jacobian = cyad.value_and_jacobian(f, x, engine=engine)
    np.testing.assert_allclose(value, f(x), rtol=1e-14)
    # |z_i|^2 = x_i^2 + (2 [i > 0] + x_i+1^2 [i < n - 1])^2
    imag = np.where(np.arange(N) > 0, 2.0, 0.0) + np.append(x[1:] ** 2, 0.0)
    expected = np.diag(2 * x) + np.diag(4 * imag[:-1] * x[1:], k=1)
    np.testing.assert_allclose(jacobian, expected, rtol=1e-14)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_write_through_a_part_never_reaches_an_operand(engine):
    def f(x):
        z = x + 1j * x[::-1]
        z.real[0] = 3.0          # z's real part, not x
        return np.abs(z) ** 2 + x

    x = POINTS[0]
    value, jacobian = cyad.value_and_jacobian(f, x, engine=engine)
    real = np.concatenate([[3.0], x[1:]])
    np.testing.assert_allclose(value, real ** 2 + x[::-1] ** 2 + x, rtol=1e-14)
    expected = np.diag(np.where(np.arange(N) > 0, 2 * x, 0.0) + 1.0)
    expected[np.arange(N), np.arange(N)[::-1]] += 2 * x[::-1]
    np.testing.assert_allclose(jacobian, expected, rtol=1e-14)


def _blocks_along(shape, axis):
    # True where two elements of an array of `shape` share their place off `axis`
    index = np.indices(shape).reshape(len(shape), -1)
    place = np.delete(index, axis % len(shape), axis=0)
    return (place[:, :, None] == place[:, None, :]).all(axis=0)


BATCHED = {
    "fft-axis0": ((4, 3), 0, lambda u: np.abs(np.fft.fft(u, axis=0)) ** 2),
    "ifft-axis1-3d": ((2, 3, 4), 1, lambda u: np.real(np.fft.ifft(u * (1 + 0.5j), axis=1)) * u),
    "rfft-irfft": ((3, 6), -1, lambda u: np.fft.irfft(np.fft.rfft(u) ** 2, n=6) * u),
    "dct-axis0": ((5, 2), 0, lambda u: dct(u, type=2, axis=0) ** 2),
}


@pytest.mark.parametrize("name", BATCHED)
@pytest.mark.parametrize("engine", ENGINES)
def test_batched_transforms_sparsity_and_values(name, engine):
    shape, axis, g = BATCHED[name]
    f = lambda x: g(x.reshape(shape)).ravel()  # noqa: E731
    x = seeded("batched-" + name).uniform(0.2, 1.2, int(np.prod(shape)))
    blocks = _blocks_along(shape, axis)
    pattern = cyad.jacobian_sparsity(f, x).toarray()
    dense = cyad.jacobian(f, x, engine=engine)
    assert np.array_equal(pattern, blocks)
    assert not np.any(dense[~blocks])                  # the pattern holds every nonzero
    prep = cyad.prepare_sparse_jacobian(f, x, engine=engine)
    assert prep.n_colors == shape[axis % len(shape)]
    assert_matches(cyad.sparse_jacobian(f, x, prep=prep).toarray(), dense, rtol=1e-13,
                   atol=1e-13)
    s = lambda x: np.sum(f(x) ** 2)  # noqa: E731
    hessian = cyad.hessian(s, x, engine=engine)
    assert np.array_equal(cyad.hessian_sparsity(s, x).toarray(), blocks)
    assert not np.any(hessian[~blocks])
