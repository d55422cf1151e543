"""scipy.linalg's decompositions, least squares, norms, special matrices and banded solves on
cyad's arrays (cyad/_primitives/scipy_linalg.py).

Plain arrays reach SciPy's own functions. On cyad's arrays the values are SciPy's up to
rounding, and the Jacobians, Hessians and Jacobians of gradients on both engines are JAX's
(in float64; float32 against the float64 reference, looser): jax.numpy.linalg and
jax.scipy.linalg where JAX has the function, else the computation written in JAX (the
generalized eigh's Cholesky reduction, the banded solves' dense matrices by diagonals),
whose first derivatives are held to central differences of SciPy's own function here.
Eigenvectors and singular vectors enter through sign- and phase-invariant quantities.
"""
from typing import Callable, NamedTuple

import numpy as np
import pytest
import scipy.linalg as sl
from derivative_references import central_differences, exact_in_float32, jax, jnp, seeded

import cyad

pytestmark = pytest.mark.skipif(jax is None, reason="JAX references")

ENGINES = ["dual", "tape"]
DTYPES = [np.float64, np.float32]
TOLERANCE = {np.float64: 1e-12, np.float32: 2e-5}    # relative to the largest entry

TALL = np.vstack([np.diag([4.5, 3.0, 1.5]), np.zeros((1, 3))])    # distinct singular values
SPREAD = np.diag([0.0, 2.0, 4.0])                                  # distinct eigenvalues


class Case(NamedTuple):
    name: str
    size: int
    f: Callable          # NumPy and scipy.linalg: SciPy's functions on plain arrays
    reference: Callable  # the same in JAX


def _flat(xp, *parts):
    return xp.concatenate([xp.ravel(p) for p in parts])


def _c(xp, x, a):
    return xp.asarray(a, dtype=x.dtype)


def _lower_symmetric(xp, a):
    return xp.tril(a) + xp.swapaxes(xp.tril(a, -1), -1, -2)


def _upper_symmetric(xp, a):
    return xp.triu(a) + xp.swapaxes(xp.triu(a, 1), -1, -2)


def _outer_products(xp, u, vh):
    """u_j vh_j for each j: unchanged by the signs of singular vectors."""
    return u[:, None, :] * xp.swapaxes(vh, 0, 1)[None, :, :]


def _signless_svd(xp, u, s, vh):
    return _flat(xp, s, _outer_products(xp, u, vh))


def _signless_qr(xp, q, r):
    """Q D and D^-1 R, D = diag(R): unchanged by the signs of Q's columns."""
    k = min(r.shape)
    d = xp.diagonal(r)[:k]
    return _flat(xp, q[:, :k] * d, r[:k] / d[:, None])


# -- the cases: f in SciPy, reference in JAX -----------------------------------------------------
# (each JAX reference is compiled once: the variants that share its work are here, the others
# in `VARIANTS`, held to SciPy by central differences)

def _tall(xp, x):
    return x[:12].reshape(4, 3) + _c(xp, x, TALL)


def _lstsq(x):
    a, b = _tall(np, x), x[12:16]
    m = np.stack([b, b * b + x[:4]], axis=1)
    solution, residue, _, _ = sl.lstsq(a, b)
    solutions, residues, _, _ = sl.lstsq(a, m, cond=1e-10)
    return _flat(np, solution, residue, solutions, residues, sl.lstsq(a.T, b[:3])[0])


def _lstsq_reference(x):
    # the normal equations (a of full column rank), and the least-norm solution of a wide one
    a, b = _tall(jnp, x), x[12:16]
    m = jnp.stack([b, b * b + x[:4]], axis=1)
    rhs = jnp.stack([b, m[:, 0], m[:, 1]], axis=1)
    solutions = jnp.linalg.solve(a.T @ a, a.T @ rhs)
    residues = jnp.sum((rhs - a @ solutions) ** 2, axis=0)
    wide = a @ jnp.linalg.solve(a.T @ a, b[:3])
    return _flat(jnp, solutions[:, 0], residues[0], solutions[:, 1:], residues[1:], wide)


def _pinv(x):
    a = _tall(np, x)
    return _flat(np, sl.pinv(a), sl.pinv(a.T, atol=1e-3, rtol=1e-6) ** 2,
                 sl.pinv(a, return_rank=True)[0])


def _pinv_reference(x):
    a = _tall(jnp, x)
    p = jnp.linalg.solve(a.T @ a, a.T)     # a of full column rank
    return _flat(jnp, p, p.T ** 2, p)


def _eigh(x):
    a = x.reshape(3, 3) + _c(np, x, SPREAD)    # not symmetric: one triangle is read
    w, v = sl.eigh(a)
    wu, vu = sl.eigh(a, lower=False)
    _, vs = sl.eigh(a, subset_by_index=(0, 1))
    return _flat(np, w, v * v, wu, vu * vu, sl.eigh(a, eigvals_only=True) ** 2,
                 sl.eigvalsh(a, lower=False, subset_by_index=[1, 2]), vs * vs)


def _eigh_reference(x):
    a = x.reshape(3, 3) + SPREAD
    w, v = jnp.linalg.eigh(_lower_symmetric(jnp, a))
    wu, vu = jnp.linalg.eigh(_upper_symmetric(jnp, a))
    return _flat(jnp, w, v * v, wu, vu * vu, w ** 2, wu[1:], v[:, :2] ** 2)


def _generalized_pair(xp, x):
    a = x[:9].reshape(3, 3) + _c(xp, x, SPREAD)
    b = 0.3 * x[9:].reshape(3, 3) + _c(xp, x, np.diag([2.0, 3.0, 4.0]))   # positive definite
    return a, b


def _eigh_generalized(x):
    a, b = _generalized_pair(np, x)
    w1, v1 = sl.eigh(a, b)
    w2, v2 = sl.eigh(a, b, lower=False, type=2)
    _, v3 = sl.eigh(a, b, lower=False, type=3)
    return _flat(np, w1, v1 * v1, w2, v2 * v2, v3 * v3,
                 sl.eigvalsh(a, b, lower=False, type=3, subset_by_index=[0, 1]))


def _eigh_generalized_reference(x):
    # the Cholesky reduction, b = L L^T: type 1 eigh(L^-1 a L^-T), v = L^-T y; types 2 and 3
    # eigh(L^T a L), v = L^-T y and L y
    a, b = _generalized_pair(jnp, x)
    low = jnp.linalg.cholesky(_lower_symmetric(jnp, b))
    inverse = jnp.linalg.inv(low)
    w1, y1 = jnp.linalg.eigh(inverse @ _lower_symmetric(jnp, a) @ inverse.T)
    v1 = inverse.T @ y1
    upper = jnp.linalg.cholesky(_upper_symmetric(jnp, b))
    w2, y2 = jnp.linalg.eigh(upper.T @ _upper_symmetric(jnp, a) @ upper)
    v2, v3 = jnp.linalg.inv(upper).T @ y2, upper @ y2
    return _flat(jnp, w1, v1 * v1, w2, v2 * v2, v3 * v3, w2[:2])


ROTATION = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])   # eigenvalues +-i, 2


def _eig(x):
    a = 0.3 * x.reshape(3, 3) + _c(np, x, np.diag([1.0, 2.5, 4.0]))    # real eigenvalues
    w, v = sl.eig(a)
    wc, vc = sl.eig(0.3 * x.reshape(3, 3) + _c(np, x, ROTATION))
    return _flat(np, np.real(w), np.imag(w), v * v, np.real(sl.eigvals(a)) ** 2,
                 np.real(sl.eig(a, homogeneous_eigvals=True, right=False)),
                 np.real(wc), np.imag(wc), np.abs(vc) ** 2)


def _eig_reference(x):
    def eig(a):
        return jax.lax.linalg.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True)

    w, v = eig(0.3 * x.reshape(3, 3) + np.diag([1.0, 2.5, 4.0]))
    wc, vc = eig(0.3 * x.reshape(3, 3) + ROTATION)
    return _flat(jnp, jnp.real(w), jnp.imag(w), jnp.abs(v) ** 2, jnp.real(w) ** 2,
                 jnp.real(w), jnp.ones(3), jnp.real(wc), jnp.imag(wc), jnp.abs(vc) ** 2)


def _svd(x):
    a = x.reshape(3, 3) + _c(np, x, TALL[:3])
    return _flat(np, _signless_svd(np, *sl.svd(a)), sl.svd(a, compute_uv=False) ** 2,
                 sl.svdvals(a.T))


def _svd_reference(x):
    u, s, vh = jnp.linalg.svd(x.reshape(3, 3) + TALL[:3])
    return _flat(jnp, _signless_svd(jnp, u, s, vh), s ** 2, s)


def _qr(x):
    a = _tall(np, x)
    return _flat(np, _signless_qr(np, *sl.qr(a, mode="economic")),
                 _signless_qr(np, *sl.qr(a.T)), sl.qr(a, mode="r")[0] ** 2)


def _qr_reference(x):
    a = _tall(jnp, x)
    q, r = jax.scipy.linalg.qr(a, mode="economic")
    return _flat(jnp, _signless_qr(jnp, q, r), _signless_qr(jnp, *jax.scipy.linalg.qr(a.T)),
                 r ** 2, jnp.zeros(3))


def _norm_program(xp, norm, x):
    a = x.reshape(3, 4)
    return _flat(xp, norm(x), norm(a), norm(a, 1), norm(a, 2), norm(a, -np.inf),
                 norm(a, axis=1), norm(a, np.inf, axis=0, keepdims=True), norm(x, 3))


def _special(x):
    parts = [sl.block_diag(x[0], x[1:3], x[3:7].reshape(2, 2), np.zeros((0, 2)), [[1.5]]),
             sl.toeplitz(x[:3], x[3:7]), sl.toeplitz(x[:4]),
             sl.toeplitz(x[:6].reshape(2, 3), x[6:10]), sl.circulant(x[:4]),
             sl.circulant(x[:6].reshape(2, 3)), sl.hankel(x[:3], x[3:7]), sl.hankel(x[:4])]
    return _flat(np, *parts) ** 2


def _special_reference(x):
    jsl = jax.scipy.linalg
    parts = [jsl.block_diag(x[0], x[1:3], x[3:7].reshape(2, 2), jnp.zeros((0, 2)),
                            jnp.array([[1.5]])),
             jsl.toeplitz(x[:3], x[3:7]), jsl.toeplitz(x[:4]),
             jnp.stack([jsl.toeplitz(x[:3], x[6:10]), jsl.toeplitz(x[3:6], x[6:10])]),
             jsl.circulant(x[:4]), jnp.stack([jsl.circulant(x[:3]), jsl.circulant(x[3:6])]),
             jsl.hankel(x[:3], x[3:7]), jsl.hankel(x[:4])]
    return _flat(jnp, *parts) ** 2


def _band(xp, x, diagonal_row):
    """Band storage of a 5 x 5 matrix of three diagonals, the main one (in `diagonal_row`)
    dominant."""
    return 0.3 * x[:15].reshape(3, 5) + _c(xp, x, 3.0 * np.eye(3)[:, [diagonal_row]])


def _symmetric_band(xp, x, lower):
    """Band storage of a symmetric positive definite tridiagonal 5 x 5 matrix."""
    return 0.3 * x[5:15].reshape(2, 5) + _c(xp, x, [[3.0], [0.0]] if lower else [[0.0], [3.0]])


def _banded(x):
    b = x[15:]
    return _flat(np, sl.solve_banded((1, 1), _band(np, x, 1), b),
                 sl.solve_banded((0, 2), _band(np, x, 2), np.stack([b, b * b], axis=1)),
                 sl.solveh_banded(_symmetric_band(np, x, True), b, lower=True))


def _dense(ab, lower, upper):
    # LAPACK's band storage by diagonals: the k-th (above the main one for k > 0) in row
    # upper - k, where column j holds a[j - k, j]
    n = ab.shape[1]
    return sum(jnp.diag(ab[upper - k, k:] if k >= 0 else ab[upper - k, :n + k], k)
               for k in range(-lower, upper + 1))


def _banded_reference(x):
    b = x[15:]
    low = _dense(_symmetric_band(jnp, x, True), 1, 0)
    return _flat(jnp, jnp.linalg.solve(_dense(_band(jnp, x, 1), 1, 1), b),
                 jnp.linalg.solve(_dense(_band(jnp, x, 2), 0, 2), jnp.stack([b, b * b], axis=1)),
                 jnp.linalg.solve(low + jnp.tril(low, -1).T, b))


CASES = [
    Case("lstsq", 16, _lstsq, _lstsq_reference),
    Case("pinv", 12, _pinv, _pinv_reference),
    Case("eigh", 9, _eigh, _eigh_reference),
    Case("eigh-generalized", 18, _eigh_generalized, _eigh_generalized_reference),
    Case("eig", 9, _eig, _eig_reference),
    Case("svd", 9, _svd, _svd_reference),
    Case("qr", 12, _qr, _qr_reference),
    Case("norm", 12, lambda x: _norm_program(np, sl.norm, x),
         lambda x: _norm_program(jnp, jnp.linalg.norm, x)),
    Case("block_diag-toeplitz-circulant-hankel", 10, _special, _special_reference),
    Case("solve_banded-solveh_banded", 20, _banded, _banded_reference),
]
CASE_IDS = [case.name for case in CASES]

# the other variants: values and first derivatives against SciPy (central differences)
VARIANTS = {
    "lstsq-singular-values": (16, lambda x: sl.lstsq(_tall(np, x), x[12:])[3]),
    "eigh-generalized-lower-types": (18, lambda x: _flat(np, *[
        p ** 2 for kind in (2, 3) for p in sl.eigh(*_generalized_pair(np, x), type=kind)])),
    "eigh-generalized-upper-type-1": (18, lambda x: _flat(np, *[
        p ** 2 for p in sl.eigh(*_generalized_pair(np, x), lower=False)])),
    "svd-tall": (12, lambda x: _signless_svd(np, *sl.svd(_tall(np, x), full_matrices=False))),
    "qr-square": (12, lambda x: _signless_qr(np, *sl.qr(_tall(np, x)[:3]))),
    "norm-nuc": (12, lambda x: sl.norm(x.reshape(3, 4), "nuc")),
    "solve_banded-lower": (20, lambda x: sl.solve_banded((2, 0), _band(np, x, 0), x[15:])),
    "solveh_banded-upper": (20, lambda x: sl.solveh_banded(_symmetric_band(np, x, False),
                                                           x[15:])),
}


def _point(case, dtype):
    x = 0.5 * seeded(case.name).standard_normal(case.size)
    return exact_in_float32(x) if dtype == np.float32 else x


def _weights(n):
    return np.cos(1.0 + np.arange(n))


_COMPILED = {}


def _reference(case, x):
    """JAX's value, Jacobian and Hessian of the weighted sum (compiled once for each case)."""
    if case.name not in _COMPILED:
        w = _weights(case.f(x).size)
        jacobian = jax.jacfwd(case.reference)
        hessian = jax.jacfwd(jax.jacfwd(lambda x: jnp.sum(w * case.reference(x))))  # (quicker
        # to compile than reverse mode here)
        _COMPILED[case.name] = jax.jit(lambda x: (case.reference(x), jacobian(x), hessian(x)))
    return tuple(np.asarray(r) for r in _COMPILED[case.name](x))


def _close(actual, expected, dtype):
    tolerance = TOLERANCE[dtype]
    np.testing.assert_allclose(actual, expected, rtol=tolerance,
                               atol=tolerance * max(1.0, np.max(np.abs(expected))))


# -- values --------------------------------------------------------------------------------------

PLAIN = np.random.default_rng(3).standard_normal((4, 3)) + TALL
SQUARE = PLAIN[:3] + PLAIN[:3].T + SPREAD
PLAIN_CALLS = {
    "lstsq": (PLAIN, PLAIN[:, 0]), "pinv": (PLAIN,), "eigh": (SQUARE, np.eye(3) * 2.0),
    "eigvalsh": (SQUARE,), "eig": (PLAIN[:3],), "eigvals": (PLAIN[:3],), "svd": (PLAIN,),
    "svdvals": (PLAIN,), "qr": (PLAIN,), "norm": (PLAIN,), "block_diag": (1.0, PLAIN),
    "toeplitz": (PLAIN[:, 0], PLAIN[0]), "circulant": (PLAIN[:, 0],),
    "hankel": (PLAIN[:, 0],), "solve_banded": ((1, 1), PLAIN.T, PLAIN[:, 0]),
    "solveh_banded": (np.abs(PLAIN.T[1:]) + [[0.0], [9.0]], PLAIN[:, 1]),
}


def _same(actual, expected):
    assert type(actual) is type(expected)
    if isinstance(actual, tuple):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            _same(a, e)
    else:
        np.testing.assert_array_equal(actual, expected, strict=True)


def test_every_function_is_called_here():
    from cyad._primitives.scipy_linalg import SCIPY_LINALG
    assert set(PLAIN_CALLS) == set(SCIPY_LINALG)


@pytest.mark.parametrize("name", sorted(PLAIN_CALLS))
def test_plain_arrays_reach_scipys_function(name):
    wrapper = getattr(sl, name)
    assert wrapper.__cyad_dispatching__ and wrapper.__name__ == name
    _same(wrapper(*PLAIN_CALLS[name]), wrapper.__wrapped__(*PLAIN_CALLS[name]))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_values_are_scipys(case, engine):
    x = _point(case, np.float64)
    value, _ = cyad.value_and_jacobian(case.f, x, engine=engine)
    np.testing.assert_allclose(value, case.f(x), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(value, _reference(case, x)[0], rtol=1e-11, atol=1e-12)


# -- derivatives ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_derivatives_are_jaxs(case, engine, dtype):
    x = _point(case, dtype)
    _, jacobian, hessian = _reference(case, x)
    x = x.astype(dtype)
    w = _weights(jacobian.shape[0]).astype(dtype)

    def weighted(x):
        return np.sum(w * case.f(x))

    _close(cyad.jacobian(case.f, x, engine=engine), jacobian, dtype)
    _close(cyad.gradient(weighted, x, engine=engine), w @ jacobian, dtype)
    _close(cyad.hessian(weighted, x, engine=engine), hessian, dtype)
    _close(cyad.jacobian(lambda x: cyad.gradient(weighted, x, engine=engine), x, engine=engine),
           hessian, dtype)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_first_derivatives_are_scipys_by_central_differences(case):
    x = _point(case, np.float64)
    np.testing.assert_allclose(cyad.jacobian(case.f, x), central_differences(case.f, x),
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_other_variants_are_scipys(name, engine):
    size, f = VARIANTS[name]
    x = 0.5 * seeded(name).standard_normal(size)
    value, jacobian = cyad.value_and_jacobian(f, x, engine=engine)
    np.testing.assert_allclose(value, f(x), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(jacobian, central_differences(f, x), rtol=1e-6, atol=1e-7)


# -- SciPy's return structure on cyad's arrays ---------------------------------------------------

def _inside(call, x, engine):
    """call(a)'s result on cyad's arrays, a the 4 x 3 matrix of x, as seen inside a
    cyad.jacobian."""
    seen = []

    def f(x):
        seen.append(call(x.reshape(4, 3)))
        return x * 1.0

    cyad.jacobian(f, x, engine=engine)
    return seen[0]


def _same_structure(actual, expected):
    """The same nesting, types of numbers, shapes and dtypes (an engine's arrays for ndarrays)."""
    if isinstance(expected, tuple) or expected is None:
        assert type(actual) is type(expected)
        for a, e in zip(actual or (), expected or ()):
            _same_structure(a, e)
    elif isinstance(expected, (int, np.integer)):
        assert type(actual) is type(expected) and actual == expected
    else:
        assert np.shape(actual) == np.shape(expected) and actual.dtype == expected.dtype


STRUCTURES = {
    "lstsq-vector": lambda a: sl.lstsq(a, a[:, 0] ** 2),
    "lstsq-matrix": lambda a: sl.lstsq(a, a[:, :2] ** 2),
    "lstsq-wide": lambda a: sl.lstsq(a.T, a[0]),
    "lstsq-gelsy": lambda a: sl.lstsq(a, a[:, 0], lapack_driver="gelsy"),
    "pinv-rank": lambda a: sl.pinv(a, return_rank=True),
    "qr-r": lambda a: sl.qr(a, mode="r"),
    "qr-economic": lambda a: sl.qr(a, mode="economic"),
    "qr-full-wide": lambda a: sl.qr(a.T),
    "svd": lambda a: sl.svd(a, full_matrices=False),
    "svd-values": lambda a: sl.svd(a, compute_uv=False),
    "eig": lambda a: sl.eig(a[:3]),
    "eig-complex": lambda a: sl.eig(a[:3] - a[:3].T),
    "eig-values-only": lambda a: sl.eig(a[:3], right=False),
    "eigvals-homogeneous": lambda a: sl.eigvals(a[:3], homogeneous_eigvals=True),
    "eigh": lambda a: sl.eigh(a[:3], subset_by_index=[1, 2]),
    "eigvalsh": lambda a: sl.eigvalsh(a[:3], a[:3] @ a[:3].T),
    "norm": lambda a: sl.norm(a, axis=0, keepdims=True),
    "block_diag": lambda a: sl.block_diag(a[0, 0], a[0], a[1:3, :2], np.zeros((0, 2), a.dtype)),
    "block_diag-stacks": lambda a: sl.block_diag(a.reshape(2, 2, 3), np.ones((1, 2), a.dtype)),
    "toeplitz-stacks": lambda a: sl.toeplitz(a[:2], a[0]),
    "circulant-stacks": lambda a: sl.circulant(a),
    "hankel": lambda a: sl.hankel(a[0], a[:, 0]),
    "solve_banded": lambda a: sl.solve_banded((2, 0), a.T ** 2 + 9.0 * np.eye(3, 1, dtype=a.dtype),
                                              a[:, :2]),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_results_have_scipys_structure(name, dtype, engine):
    # (a skew-symmetric block has complex eigenvalues: its eigenvectors are complex too; the
    # constants are of x's dtype, which the tape engine computes in)
    x = PLAIN.ravel().astype(dtype)
    expected = STRUCTURES[name](x.reshape(4, 3))
    _same_structure(_inside(STRUCTURES[name], x, engine), expected)


def test_lstsq_cuts_off_as_gelsd():
    # singular values 1, 0.5 and 1e-15 of a 40 x 3 matrix: above gelsd's default cutoff
    # (eps), below np.linalg.lstsq's (max(M, N) eps). (The dual engine alone: the tape
    # engine's reverse pass of np.linalg.lstsq takes the singular values' part too, which
    # raises below max(M, N) eps.)
    q, _ = np.linalg.qr(seeded("cutoff").standard_normal((40, 3)))
    a = q * [1.0, 0.5, 1e-15]
    assert sl.lstsq(a, a[:, 0])[2] == 3 and np.linalg.lstsq(a, a[:, 0])[2] == 2
    seen = []
    jacobian = cyad.jacobian(lambda b: seen.append(sl.lstsq(a, b)) or seen[-1][0], a[:, 0])
    assert seen[0][2] == 3
    np.testing.assert_allclose(jacobian, sl.pinv(a, rtol=1e-16), rtol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_rank_deficient_at_the_cutoff_raises(engine):
    q, _ = np.linalg.qr(seeded("cutoff").standard_normal((40, 3)))
    a = q * [1.0, 0.5, 0.01]
    assert sl.pinv(a, atol=0.1, return_rank=True)[1] == 2
    for call in (lambda x: sl.lstsq(x.reshape(40, 3), a[:, 0], cond=0.1)[0],
                 lambda x: sl.pinv(x.reshape(40, 3), atol=0.1)):
        with pytest.raises(np.linalg.LinAlgError, match="rank-deficient"):
            cyad.jacobian(call, a.ravel(), engine=engine)
    value, _ = cyad.value_and_jacobian(lambda x: sl.pinv(x.reshape(40, 3), atol=1e-3),
                                       a.ravel(), engine=engine)
    np.testing.assert_allclose(value, sl.pinv(a, atol=1e-3), rtol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_stacks_of_matrices(engine):
    stack = np.stack([SQUARE, SQUARE.T @ SQUARE])
    b = np.stack([np.eye(3) * 2.0, SQUARE @ SQUARE.T + np.eye(3)])
    calls = [lambda a: sl.eigh(a, b, lower=False, type=2)[1] ** 2,
             lambda a: sl.eigh(a, subset_by_index=[1, 2])[0],
             lambda a: sl.svd(a)[1], lambda a: sl.pinv(a, atol=1e-3), lambda a: sl.qr(a)[1] ** 2,
             lambda a: sl.norm(a, 2, axis=(1, 2)), lambda a: np.real(sl.eigvals(a))]
    for call in calls:
        value, _ = cyad.value_and_jacobian(lambda x, call=call: call(x.reshape(2, 3, 3)),
                                           stack.ravel(), engine=engine)
        np.testing.assert_allclose(value, call(stack), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_prepared_call_follows_the_values(engine):
    # eig's eigenvalues real where prepared, complex where called; pinv's rank at its cutoff
    def f(x):
        return np.abs(sl.eigvals(x.reshape(3, 3))) + np.real(sl.eig(x.reshape(3, 3))[0])

    def g(x):
        return sl.pinv(x.reshape(4, 3), atol=0.5)

    x = 0.03 * np.arange(9.0).reshape(3, 3)
    prep = cyad.prepare_jacobian(f, (x + np.diag([1.0, 2.5, 4.0])).ravel(), engine=engine)
    complex_point = (x + ROTATION).ravel()
    np.testing.assert_allclose(cyad.jacobian(f, complex_point, prep=prep),
                               central_differences(f, complex_point), rtol=1e-6, atol=1e-7)
    prep = cyad.prepare_jacobian(g, TALL.ravel(), engine=engine)
    with pytest.raises(np.linalg.LinAlgError, match="rank-deficient at its cutoff"):
        cyad.jacobian(g, (TALL * [1.0, 1.0, 0.1]).ravel(), prep=prep)


def test_hankel_of_several_axes_ravels_with_scipys_warning():
    x = np.arange(1.0, 7.0)
    with pytest.warns(FutureWarning, match="SciPy 1.19"):
        expected = sl.hankel(x.reshape(2, 3), x[:2])
    with pytest.warns(FutureWarning, match="SciPy 1.19"):
        value, _ = cyad.value_and_jacobian(lambda x: sl.hankel(x.reshape(2, 3), x[:2]), x)
    np.testing.assert_array_equal(value, expected)


# -- refused ----------------------------------------------------------------------------------

REFUSED = {
    "eigh-subset_by_value": (lambda a: sl.eigh(a, subset_by_value=(-1.0, 1.0)),
                             r"scipy\.linalg\.eigh with subset_by_value"),
    "eigvalsh-subset_by_value": (lambda a: sl.eigvalsh(a, subset_by_value=(-1.0, 1.0)),
                                 r"scipy\.linalg\.eigvalsh with subset_by_value"),
    "qr-pivoting": (lambda a: sl.qr(a, pivoting=True), r"scipy\.linalg\.qr with pivoting=True"),
    "qr-raw": (lambda a: sl.qr(a, mode="raw"), r"scipy\.linalg\.qr with mode='raw'"),
    "eig-b": (lambda a: sl.eig(a, np.eye(3)), r"scipy\.linalg\.eig with b"),
    "eig-left": (lambda a: sl.eig(a, left=True), r"scipy\.linalg\.eig with left=True"),
    "eigvals-b": (lambda a: sl.eigvals(a, np.eye(3)), r"scipy\.linalg\.eigvals with b"),
    "lstsq-stack": (lambda a: sl.lstsq(np.stack([a, a]), a[0]),
                    r"scipy\.linalg\.lstsq with arrays of shapes \(2, 3, 3\) and \(3,\)"),
    "solve_banded-stack": (lambda a: sl.solve_banded((1, 1), a[None], a),
                           r"scipy\.linalg\.solve_banded with arrays of shapes"),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_unsupported_arguments_are_refused_by_name(name, engine):
    call, match = REFUSED[name]
    with pytest.raises(TypeError, match=match):
        cyad.jacobian(lambda x: call(x.reshape(3, 3)), SQUARE.ravel(), engine=engine)


@pytest.mark.parametrize("call, error, match", [
    (lambda a: sl.qr(a, mode="thin"), ValueError, "Mode argument should be one of"),
    (lambda a: sl.lstsq(a, a[0]), ValueError, r"Shape mismatch: .* \(3 != 4\)"),
    (lambda a: sl.lstsq(a, a[:, 0], lapack_driver="gels"), ValueError, "gels.* is not found"),
    (lambda a: sl.pinv(a, rtol=-1.0), ValueError, "atol and rtol values must be positive"),
    (lambda a: sl.eigh(a[:, :3], subset_by_index=[1, 3]), ValueError, "indices are not valid"),
    (lambda a: sl.eigh(a[:, :3], a[:, :3], type=4), ValueError, '"type" keyword only accepts'),
    (lambda a: sl.eigh(a[:, :3], driver="gesv"), ValueError, '"gesv" is unknown'),
    (lambda a: sl.svd(a, lapack_driver="gesvx"), ValueError, "lapack_driver must be"),
    (lambda a: sl.solve_banded((1, 0), a, a[0]), ValueError, r"l\+u\+1 \(2\) does not equal"),
    (lambda a: sl.solveh_banded(a, a[:, 0]), ValueError, "shapes of ab and b are not compat"),
])
def test_errors_are_scipys(call, error, match):
    x = PLAIN.T.ravel()
    with pytest.raises(error, match=match):
        call(PLAIN.T)
    for engine in ENGINES:
        with pytest.raises(error, match=match):
            cyad.jacobian(lambda x: call(x.reshape(3, 4)), x, engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_qr_full_of_a_tall_matrix_is_not_differentiable(engine):
    # the columns of Q beyond a's are not unique: as np.linalg.qr(mode="complete")
    with pytest.raises(np.linalg.LinAlgError, match=r"qr\(mode='full'\) of a tall matrix .* "
                                                    "use mode='economic'"):
        cyad.jacobian(lambda x: sl.qr(x.reshape(4, 3))[0], PLAIN.ravel(), engine=engine)
