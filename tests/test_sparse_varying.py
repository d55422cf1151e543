"""Sparse matrices whose entries carry derivatives (cyad/_primitives/scipy_sparse_varying.py):
scipy.sparse's diags, diags_array, spdiags and kron of cyad's arrays, their products, solves,
sums and views, on both engines at first and second order, against the same computation
with the dense matrix on cyad's arrays and against JAX.

Each program is one function of z returning a vector: with xp None it builds its matrix with
scipy.sparse (what is tested), with xp an array namespace the same matrix dense (NumPy on
cyad's arrays, jax.numpy for the references). `objective` makes a scalar of the vector.
"""
import functools
import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose

pytest.importorskip("scipy")
jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import scipy.sparse as sparse  # noqa: E402
import scipy.sparse.linalg as sparse_linalg  # noqa: E402

import cyad  # noqa: E402
from cyad._primitives.scipy_sparse_varying import VaryingSparseMatrix  # noqa: E402

pytestmark = pytest.mark.xdist_group("test_sparse_varying")

jnp = jax.numpy

ENGINES = ("dual", "tape")
DTYPES = (np.float64, np.float32)
TOLERANCE = {np.float64: dict(rtol=1e-9, atol=1e-9), np.float32: dict(rtol=2e-3, atol=2e-3)}
C = np.array([[1.0, 0.0, -2.0], [0.0, 0.5, 0.0]])      # a constant factor of kron


def placed(xp, values, rows, cols, shape):
    """The dense matrix of `values` at (rows, cols), by a constant 0/1 matrix: written once
    for cyad's arrays and JAX's."""
    m, n = shape
    e = np.zeros((m * n, len(rows)))
    e[np.asarray(rows) * n + np.asarray(cols), np.arange(len(rows))] = 1.0
    return (xp.asarray(e) @ values).reshape(shape)


def dense_diagonals(xp, diagonals, offsets, shape):
    """np.diag(d, k) summed, in a rectangle: diags' meaning, a scalar broadcast."""
    m, n = shape
    total = 0.0
    for d, k in zip(diagonals, offsets, strict=True):
        i = np.arange(max(-k, 0), min(m, n - k))
        total = total + placed(xp, d * xp.ones(len(i)), i, i + k, shape)
    return total


# -- the programs: z -> a vector, sparse for cyad (xp None) and dense over xp -----------------

def xp_of(xp):
    return np if xp is None else xp


def xp_concatenate(xp, parts):
    return xp_of(xp).concatenate(parts)


def tridiagonal(z, xp=None):
    k, u = z[:6], z[6:]
    diagonals = [k[1:], 2.0 + k ** 2, -k[:-1]]
    if xp is None:
        a = sparse.diags(diagonals, [-1, 0, 1])
    else:
        a = dense_diagonals(xp, diagonals, [-1, 0, 1], (6, 6))
    return xp_concatenate(xp, [a @ u, u @ a, a.T @ (u * u), a.dot(u) ** 3])


def rectangular(z, xp=None):
    # three offsets in a (5, 7) rectangle, a scalar broadcast, CSR as the format
    k, u = z[:5], z[5:]
    diagonals = [k, 1.5, k[1:] * u[:4]]
    if xp is None:
        a = sparse.diags_array(diagonals, offsets=[0, 2, -1], shape=(5, 7), format="csr")
    else:
        a = dense_diagonals(xp, diagonals, [0, 2, -1], (5, 7))
    y = xp_of(xp).tanh(a @ u)
    return xp_concatenate(xp, [y, (y @ a) * u, a.T @ y])


def columns(z, xp=None):
    # spdiags' layout: A[j - k, j] = data[r, j] for the r-th offset k
    k, u = z[:5], z[5:]
    if xp is None:
        a = sparse.spdiags(np.stack([k, u ** 2]), [0, -2], 5, 5)
    else:
        j = np.arange(3)
        a = placed(xp, k, np.arange(5), np.arange(5), (5, 5)) + \
            placed(xp, (u ** 2)[:3], j + 2, j, (5, 5))
    return xp_concatenate(xp, [a @ u, u @ a])


def kronecker(z, xp=None):
    # a varying factor with a constant one on either side, two varying factors, and a dense
    # factor carrying derivatives
    k, u = z[:3], z[3:]
    if xp is None:
        a = (sparse.kron(sparse.diags_array(k), sparse.csr_array(C))
             + sparse.kron(C, sparse.diags(k ** 2)))
        b = sparse.kron(sparse.diags(k[:2]), sparse.diags_array(u[:2]), format="csr")
        c = sparse.kron(k[:2].reshape(1, 2), C)
    else:
        a = xp.kron(xp.diag(k), C) + xp.kron(C, xp.diag(k ** 2))
        b = xp.kron(xp.diag(k[:2]), xp.diag(u[:2]))
        c = xp.kron(k[:2].reshape(1, 2), C)
    return xp_concatenate(xp, [a @ u, b @ u[:4], u[:2] @ c])


def arithmetic(z, xp=None):
    # sums (with a matrix of derivatives and a constant one), scaling by plain and traced
    # scalars, negation, a transpose, a dense copy and a diagonal
    k, u = z[:5], z[5:]
    constant = np.diag(np.arange(1.0, 5.0), 1)
    if xp is None:
        a, b = sparse.diags(k), sparse.diags_array([u[:-1]], offsets=[1])
        m = 2.0 * a - b / k[0] + sparse.csr_array(constant) - (-a) * u[0]
        n = sum([a, sparse.csr_matrix(constant)]) - b.T * 0.5
        dense, diagonal = m.toarray(), m.diagonal(1)
    else:
        a = dense_diagonals(xp, [k], [0], (5, 5))
        b = dense_diagonals(xp, [u[:-1]], [1], (5, 5))
        m = 2.0 * a - b / k[0] + constant - (-a) * u[0]
        n = a + constant - b.T * 0.5
        dense, diagonal = m, xp.diagonal(m, 1)
    return xp_concatenate(xp, [dense.ravel(), diagonal, m.T @ u, n @ u])


def blocks(z, xp=None):
    # products with 2-D operands: A @ X, X.T @ A, A.T.dot(X)
    k, x = z[:4], z[4:].reshape(4, 2)
    if xp is None:
        a = sparse.diags([k, k[1:] * k[:-1]], [0, 1], format="coo")
    else:
        a = dense_diagonals(xp, [k, k[1:] * k[:-1]], [0, 1], (4, 4))
    return xp_concatenate(xp, [(a @ x).ravel(), (x.T @ a).ravel(), a.T.dot(x).ravel()])


def matrix_api(z, xp=None):
    # diags makes a dia_matrix: * is its product
    k, u = z[:4], z[4:]
    if xp is None:
        a = sparse.diags([k, u[:3]], [0, -1])
        return xp_concatenate(xp, [a * u, u * a])
    a = dense_diagonals(xp, [k, u[:3]], [0, -1], (4, 4))
    return xp_concatenate(xp, [a @ u, u @ a])


def solves(z, xp=None):
    # spsolve and splu(...).solve (both transposes), 1-D, 2-D and (n, 1) right-hand sides,
    # plain and carrying derivatives; factorized
    k, u = z[:5], z[5:]
    diagonals = [-k[1:], 4.0 + k ** 2, -0.5 * k[:-1]]
    b = xp_of(xp).stack([u, k * u], axis=1)
    if xp is None:
        a = sparse.diags(diagonals, [-1, 0, 1], format="csc")
        lu = sparse_linalg.splu(a)
        return xp_concatenate(xp, [
            sparse_linalg.spsolve(a, u * k), lu.solve(u, trans="T"), lu.solve(b).ravel(),
            sparse_linalg.spsolve(a, np.ones((5, 1))), sparse_linalg.factorized(a)(u)])
    a = dense_diagonals(xp, diagonals, [-1, 0, 1], (5, 5))
    solve = xp.linalg.solve
    return xp_concatenate(xp, [solve(a, u * k), solve(a.T, u), solve(a, b).ravel(),
                               solve(a, xp.ones(5)), solve(a, u)])


PROGRAMS = {"tridiagonal": (tridiagonal, 12), "rectangular": (rectangular, 12),
            "columns": (columns, 10), "kronecker": (kronecker, 12),
            "arithmetic": (arithmetic, 10), "blocks": (blocks, 12),
            "matrix_api": (matrix_api, 8), "solves": (solves, 10)}


def objective(vector, xp=np):
    return xp.sum(xp.sin(vector)) + 0.5 * xp.sum(vector * vector)


def point(size, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(0.3, 1.2, size) * rng.choice([-1.0, 1.0], size)).astype(dtype)


@functools.cache
def jax_reference(name, transform, dtype):
    program, size = PROGRAMS[name]
    x = jnp.asarray(point(size, dtype), np.float64)
    vector = functools.partial(program, xp=jnp)
    scalar = lambda z: objective(vector(z), jnp)   # noqa: E731
    transformed = {"jacobian": jax.jacfwd(vector), "gradient": jax.grad(scalar),
                   "hessian": jax.hessian(scalar)}[transform]
    return np.asarray(jax.jit(transformed)(x))


def sparse_objective(program):
    return lambda z: objective(program(z))


def dense_objective(program):
    return lambda z: objective(program(z, np))


# -- every program, engine and dtype: first and second order --------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", PROGRAMS)
def test_against_the_dense_matrix_and_jax(name, engine, dtype):
    program, size = PROGRAMS[name]
    z = point(size, dtype)
    tolerance = TOLERANCE[dtype]
    jac = cyad.jacobian(program, z, engine=engine)
    assert jac.dtype == dtype
    assert_allclose(jac, cyad.jacobian(lambda z: program(z, np), z, engine=engine), **tolerance)
    assert_allclose(jac, jax_reference(name, "jacobian", dtype), **tolerance)
    f = sparse_objective(program)
    grad = cyad.gradient(f, z, engine=engine)
    assert grad.dtype == dtype
    assert_allclose(grad, cyad.gradient(dense_objective(program), z, engine=engine),
                    **tolerance)
    assert_allclose(grad, jax_reference(name, "gradient", dtype), **tolerance)
    hess = cyad.hessian(f, z, engine=engine)
    assert_allclose(hess, cyad.hessian(dense_objective(program), z, engine=engine),
                    **tolerance)
    assert_allclose(hess, jax_reference(name, "hessian", dtype), **tolerance)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["tridiagonal", "kronecker", "arithmetic", "solves"])
def test_hvp_against_jax(name, engine):
    program, size = PROGRAMS[name]
    z, v = point(size), point(size, seed=1)
    assert_allclose(cyad.hvp(sparse_objective(program), z, v, engine=engine),
                    jax_reference(name, "hessian", np.float64) @ v, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("outer, inner", list(itertools.product(ENGINES, ENGINES)))
@pytest.mark.parametrize("name", ["rectangular", "solves"])
def test_nested_derivative_of_a_gradient(name, outer, inner):
    program, size = PROGRAMS[name]
    z = point(size)
    f = sparse_objective(program)
    hess = cyad.jacobian(lambda y: cyad.gradient(f, y, engine=inner), z, engine=outer)
    assert_allclose(hess, jax_reference(name, "hessian", np.float64), rtol=1e-9, atol=1e-9)


def test_a_prepared_tape_follows_new_values():
    # the tape replays the products and solves (SciPy's splu on each point's values)
    program, size = PROGRAMS["solves"]
    f = sparse_objective(program)
    z = point(size)
    prep = cyad.prepare_gradient(f, z, engine="tape")
    for seed in (2, 3):
        w = point(size, seed=seed)
        assert_allclose(cyad.gradient(f, w, prep=prep), cyad.gradient(f, w, engine="dual"),
                        rtol=1e-10, atol=1e-12)


# -- SciPy's patterns, formats and checks -----------------------------------------------------

BUILDS = {
    "diags": lambda v: sparse.diags([v[1:], v, v[:-1] * 2.0], [-1, 0, 1]),
    "diags shape format": lambda v: sparse.diags([v, 1.0], [1, -2], shape=(4, 6),
                                                 format="csr"),
    "diags_array": lambda v: sparse.diags_array(v, offsets=-1, format="lil"),
    "diags_array 2-D": lambda v: sparse.diags_array(v.reshape(2, 2), offsets=[0, 1],
                                                    shape=(2, 3), format="bsr"),
    "spdiags": lambda v: sparse.spdiags(v.reshape(2, 2), [0, 1], 2, 3, format="csc"),
    "kron": lambda v: sparse.kron(sparse.diags_array(v[:2]), C),
    "kron matrices": lambda v: sparse.kron(sparse.csr_matrix(C), sparse.diags(v[1:]),
                                           format="coo"),
    "kron dense": lambda v: sparse.kron(np.ones((2, 2)), v.reshape(2, 2)),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", BUILDS)
def test_a_build_stands_in_for_scipys_result(name, dtype):
    build = BUILDS[name]
    v = np.array([1.5, -2.0, 0.5, 3.0], dtype)
    expected = build(v)
    seen = []

    def f(z):
        m = build(z)
        seen.append(m)
        return m.toarray().ravel()
    value, jac = cyad.value_and_jacobian(f, v, engine="dual")
    m = seen[0]
    assert isinstance(m, VaryingSparseMatrix)
    assert (m.kind, m.format, m.shape, m.ndim) == (type(expected), expected.format,
                                                   expected.shape, 2)
    assert m.nnz == expected.count_nonzero() and m.dtype == expected.dtype   # (no padding)
    assert_allclose(value, expected.toarray().ravel(), rtol=1e-6)
    # each entry's derivative: the dual engine's Jacobian by finite differences of SciPy's
    step = 1e-3 if dtype == np.float32 else 1e-7
    columns = [(build(v.astype(np.float64) + step * e).toarray().ravel()
                - build(v.astype(np.float64) - step * e).toarray().ravel()) / (2 * step)
               for e in np.eye(4)]
    assert_allclose(jac, np.stack(columns, axis=1), rtol=1e-3, atol=1e-3)


def test_scipys_checks_are_kept():
    z = np.linspace(1.0, 2.0, 4)
    for engine in ENGINES:
        with pytest.raises(ValueError, match="Different number of diagonals and offsets"):
            cyad.gradient(lambda z: np.sum(sparse.diags([z, z], [0]) @ z), z, engine=engine)
        with pytest.raises(ValueError, match="Diagonal length"):
            cyad.gradient(lambda z: np.sum(sparse.diags(z[:2], 0, shape=(3, 3)) @ z[:3]), z,
                          engine=engine)
        with pytest.raises(ValueError, match="dimension mismatch"):
            cyad.gradient(lambda z: np.sum(sparse.diags(z) @ z[:3]), z, engine=engine)
        with pytest.raises(ValueError, match="inconsistent shapes"):
            cyad.gradient(lambda z: np.sum((sparse.diags(z) + sparse.eye(3)) @ z[:3]), z,
                          engine=engine)
        with pytest.raises(ValueError, match="must be square"):
            cyad.gradient(lambda z: np.sum(sparse_linalg.spsolve(
                sparse.diags(z, shape=(4, 5)), z)), z, engine=engine)


# -- sparsity -----------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_the_detected_pattern_is_the_true_one(engine):
    n = 7

    def f(z):
        k, u = z[:n], z[n:]
        return sparse.diags([k[:-1], k, k[1:]], [-1, 0, 1]) @ u + sparse.diags(k) @ u

    # row i: A[i, i-1] = k[i-1], A[i, i] = k[i], A[i, i+1] = k[i+1], times u[i-1], u[i], u[i+1]
    z = point(2 * n)
    near = np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 1
    expected = np.concatenate([near, near], axis=1)
    assert np.array_equal(cyad.jacobian(f, z, engine="dual") != 0, expected)
    pattern = cyad.jacobian_sparsity(f, z)
    assert np.array_equal(pattern.toarray() != 0, expected)
    jac = cyad.sparse_jacobian(f, z, engine=engine)
    assert jac.nnz == expected.sum()
    assert_allclose(jac.toarray(), cyad.jacobian(f, z, engine="dual"), rtol=1e-12)


# -- refusals ------------------------------------------------------------------------------------

REFUSED = {
    "scipy.sparse.kronsum": lambda z: sparse.kronsum(sparse.diags(z[:2]), np.eye(2)),
    "scipy.sparse.block_diag": lambda z: sparse.block_diag([z.reshape(2, 3), C]),
    "scipy.sparse.bmat": lambda z: sparse.bmat([[sparse.diags_array(z[:3]), None]]),
    "scipy.sparse.block_array": lambda z: sparse.block_array([[z.reshape(2, 3)]]),
    "scipy.sparse.hstack": lambda z: sparse.hstack([sparse.diags(z[:2]), C]),
    "scipy.sparse.vstack": lambda z: sparse.vstack([z.reshape(2, 3), C]),
    "scipy.sparse.tril": lambda z: sparse.tril(sparse.diags(z[:3])),
    "scipy.sparse.triu": lambda z: sparse.triu(z.reshape(2, 3)),
    "scipy.sparse.diags of complex": lambda z: sparse.diags(z + 1j),
    "scipy.sparse.kron of complex": lambda z: sparse.kron(sparse.diags(z[:2]), C * 1j),
    "scipy.sparse.diags of an argument other": lambda z: sparse.diags(z[:2], shape=z[:2]),
    r"elementwise multiplication \(\*\)": lambda z: sparse.diags_array(z) * z,
    "product of a sparse matrix carrying derivatives": lambda z: sparse.diags(z) @
    sparse.eye(6),
    "sum of a sparse matrix carrying derivatives": lambda z: sparse.diags(z).sum(),
    "tocsr of a sparse matrix": lambda z: sparse.diags(z).tocsr(),
    "indexing of a sparse matrix": lambda z: sparse.diags(z)[0, 0],
    r"\*\* of a sparse matrix": lambda z: sparse.diags(z) ** 2,
    "cannot become a plain ndarray": lambda z: np.asarray(sparse.diags(z)),
    "__matmul__": lambda z: sparse.eye_array(6) @ sparse.diags_array(z),
    "scipy.sparse.linalg.spilu": lambda z: sparse_linalg.spilu(sparse.diags(z, format="csc")),
    "L of splu": lambda z: sparse_linalg.splu(sparse.diags(z, format="csc")).L,
    "sparse b": lambda z: sparse_linalg.spsolve(sparse.diags(z), sparse.eye(6)),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", REFUSED)
def test_refusals_name_the_call(name, engine):
    z = np.linspace(0.5, 1.5, 6)
    with pytest.raises(TypeError, match=name):
        cyad.jacobian(lambda z: np.ravel(REFUSED[name](z)), z, engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_constructor_is_refused(engine):
    # SciPy's constructor catches cyad's refusal of np.asarray and raises its own ValueError
    # from it on the dual engine; the tape raises cyad's
    z = np.linspace(0.5, 1.5, 6)
    with pytest.raises((TypeError, ValueError)) as raised:
        cyad.gradient(lambda z: np.sum(sparse.csr_array(sparse.diags(z)) @ z), z,
                      engine=engine)
    error = raised.value if isinstance(raised.value, TypeError) else raised.value.__cause__
    assert "a scipy.sparse matrix's constructor" in str(error)


def test_plain_calls_are_scipys():
    v = np.arange(1.0, 5.0)
    for build in BUILDS.values():
        assert sparse.issparse(build(v))
    assert type(sparse.diags(v)) is sparse.dia_matrix
