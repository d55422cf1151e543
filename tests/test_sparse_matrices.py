"""scipy.sparse's matrices inside a differentiated function: products and solves by a
constant matrix (cyad/_primitives/scipy_sparse_matrices.py), against JAX.

The functions are written once over an array namespace: with SciPy's sparse matrix for cyad,
with the same matrix dense in jax.numpy for the references (the dense product is exact).
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

pytestmark = pytest.mark.xdist_group("test_sparse_matrices")

jnp = jax.numpy

FORMATS = ("csr", "csc", "coo", "bsr", "dia", "lil", "dok")
APIS = ("array", "matrix")
ENGINES = ("dual", "tape")
DTYPES = (np.float64, np.float32)
TOLERANCE = {np.float64: dict(rtol=1e-10, atol=1e-10), np.float32: dict(rtol=2e-4, atol=2e-4)}


def dense_matrix(m, n, seed=0):
    """A dense (m, n) matrix with about half its entries zero, and a diagonal."""
    rng = np.random.default_rng(seed)
    d = rng.standard_normal((m, n)) * (rng.uniform(size=(m, n)) < 0.4)
    d[np.arange(min(m, n)), np.arange(min(m, n))] += 3.0
    return d


def as_sparse(d, format, api="array", dtype=np.float64):
    return getattr(sparse, f"{format}_{api}")(d.astype(dtype))


def laplacian(n):
    """The 2-D Laplacian on an n x n grid, from 1-D ones by scipy.sparse.kron."""
    one = sparse.diags_array([np.ones(n - 1), -2.0 * np.ones(n), np.ones(n - 1)],
                             offsets=[-1, 0, 1])
    eye = sparse.eye_array(n)
    return (sparse.kron(eye, one) + sparse.kron(one, eye)).tocsr()


@functools.cache
def jax_of(transform, f):
    """JAX's transform of f(z, d, xp=jnp) in z, compiled once."""
    transforms = {"gradient": jax.grad, "jacobian": jax.jacfwd, "hessian": jax.hessian}
    return jax.jit(lambda x, d: transforms[transform](lambda z: f(z, d, xp=jnp))(x))


def reference(transform, f, x, d):
    return np.asarray(jax_of(transform, f)(jnp.asarray(x, np.float64), jnp.asarray(d)))


def jax_hvp(f, x, d, v):
    def g(z):
        return jax.grad(lambda w: f(w, jnp.asarray(d), xp=jnp))(z)
    return np.asarray(jax.jvp(g, (jnp.asarray(x, np.float64),), (jnp.asarray(v, np.float64),))[1])


# -- functions over a namespace: `a` a scipy.sparse matrix for cyad, dense for JAX ----------

def products(x, a, xp=np):
    """A @ x, x @ A, A.T @ y and A.dot(x), nonlinear around them."""
    return (xp.sum(xp.sin(a @ x)) + x @ (a @ x ** 2) + xp.sum((x @ a) ** 2)
            + xp.sum(xp.cos(a.T @ (x * x))) + xp.sum(a.dot(x) ** 3))


def matrix_products(x, a, xp=np):
    """The matrix API's a * x and x * a (products) beside the @ ones."""
    return xp.sum(xp.sin(a @ x) * (a @ x)) + xp.sum((x @ a) ** 2)


def matrix_api_products(x, a, xp=np):
    if xp is np:
        return xp.sum(xp.sin(a * x) * (a * x)) + xp.sum((x * a) ** 2)
    return matrix_products(x, a, xp)


def block_products(x, a, xp=np):
    """A @ X and X.T @ A for a 2-D X (3 columns)."""
    big = x.reshape(-1, 3)
    return xp.concatenate([xp.sin(a @ big).ravel(), (big.T @ a).ravel() ** 2])


def rectangular(x, a, xp=np):
    """A (5, 7) times x (7,), and y (5,) = A @ x times A from the left."""
    y = xp.tanh(a @ x)
    return xp.concatenate([y, (y @ a) * x])


def residual(u, a, xp=np):
    """A PDE's residual: A u + u^3 - f."""
    return a @ u + u ** 3 - 1.0


# -- products on every format, API, engine and dtype -----------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("format", FORMATS)
def test_products_against_jax(format, api, engine, dtype):
    d = dense_matrix(6, 6)
    a = as_sparse(d, format, api, dtype)
    x = np.linspace(-0.6, 0.9, 6).astype(dtype)
    tolerance = TOLERANCE[dtype]
    g = cyad.gradient(lambda z: products(z, a), x, engine=engine)
    assert g.dtype == dtype
    assert_allclose(g, reference("gradient", products, x, d.astype(dtype)), **tolerance)
    h = cyad.hessian(lambda z: products(z, a), x, engine=engine)
    assert_allclose(h, reference("hessian", products, x, d.astype(dtype)), **tolerance)
    if api == "matrix":
        h = cyad.hessian(lambda z: matrix_api_products(z, a), x, engine=engine)
        assert_allclose(h, reference("hessian", matrix_products, x, d.astype(dtype)),
                        **tolerance)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("format", FORMATS)
def test_block_and_rectangular_products_against_jax(format, engine):
    d = dense_matrix(6, 6, seed=1)
    a = as_sparse(d, format)
    x = np.linspace(-1.0, 1.0, 18)
    assert_allclose(cyad.jacobian(lambda z: block_products(z, a), x, engine=engine),
                    reference("jacobian", block_products, x, d), rtol=1e-10, atol=1e-10)
    d = dense_matrix(5, 7, seed=2)
    a = as_sparse(d, format, "matrix")
    x = np.linspace(-1.0, 1.0, 7)
    assert_allclose(cyad.jacobian(lambda z: rectangular(z, a), x, engine=engine),
                    reference("jacobian", rectangular, x, d), rtol=1e-10, atol=1e-10)
    # second order of a rectangular product, by reverse mode on the tape
    f = lambda z, a, xp=np: xp.sum(rectangular(z, a, xp) ** 2)   # noqa: E731
    assert_allclose(cyad.hessian(lambda z: f(z, a), x, engine=engine),
                    reference("hessian", f, x, d), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("engine", ENGINES)
def test_hvp_pullback_and_pushforward_against_jax(engine):
    d = dense_matrix(8, 8, seed=3)
    a = as_sparse(d, "csr")
    x = np.linspace(-0.5, 0.7, 8)
    v = np.cos(np.arange(8.0))
    assert_allclose(cyad.hvp(lambda z: products(z, a), x, v, engine=engine),
                    jax_hvp(products, x, d, v), rtol=1e-10, atol=1e-10)
    jac = reference("jacobian", residual, x, d)
    assert_allclose(cyad.pushforward(lambda z: residual(z, a), x, v, engine=engine), jac @ v,
                    rtol=1e-10, atol=1e-10)
    if engine == "tape":
        assert_allclose(cyad.pullback(lambda z: residual(z, a), x, v, engine=engine), v @ jac,
                        rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("outer, inner", list(itertools.product(ENGINES, ENGINES)))
def test_nested_differentiations_of_products_and_solves(outer, inner):
    d = dense_matrix(5, 5, seed=13)
    a = sparse.csr_array(d)
    x = np.linspace(0.1, 0.5, 5)

    def f(z, a, xp=np):
        solved = sparse_linalg.spsolve(a, z ** 2) if xp is np else xp.linalg.solve(a, z ** 2)
        return xp.sum(xp.sin(a @ z)) + xp.sum(solved)
    hess = cyad.jacobian(lambda y: cyad.gradient(lambda z: f(z, a), y, engine=inner), x,
                         engine=outer)
    assert_allclose(hess, reference("hessian", f, x, d), rtol=1e-10, atol=1e-10)


def test_a_1d_sparse_array_is_a_row_and_a_column():
    d = dense_matrix(1, 6)[0]
    a = sparse.coo_array(d)
    assert a.ndim == 1
    x = np.linspace(0.1, 0.6, 6)
    for engine in ENGINES:
        assert_allclose(cyad.gradient(lambda z: np.sin(a @ z) + (z * z) @ a, x, engine=engine),
                        np.cos(d @ x) * d + 2 * x * d, rtol=1e-12)


# -- sparsity: the matrix's pattern ------------------------------------------------------------

def test_jacobian_pattern_of_a_pde_residual_is_the_laplacians():
    a = laplacian(7)
    u = np.linspace(0.0, 1.0, 49)
    pattern = cyad.jacobian_sparsity(lambda z: residual(z, a), u)
    expected = (a.toarray() != 0) | np.eye(49, dtype=bool)
    assert np.array_equal(pattern.toarray() != 0, expected)
    for engine in ENGINES:
        jac = cyad.sparse_jacobian(lambda z: residual(z, a), u, engine=engine)
        assert jac.nnz == expected.sum()
        assert_allclose(jac.toarray(), reference("jacobian", residual, u, a.toarray()),
                        rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("format", FORMATS)
def test_patterns_of_every_product_are_exact(format):
    d = dense_matrix(6, 6, seed=4)
    d[1, 2] = 0.0
    a = as_sparse(d, format)
    x = np.linspace(-1.0, 1.0, 18)

    def f(z, a, xp=np):
        # A @ X: out[i, c] on X[j, c] where A[i, j] != 0; X.T @ A: out[c, j] on X[i, c]
        big = z.reshape(6, 3)
        return xp.concatenate([(a @ big).ravel(), (big.T @ a).ravel()])
    pattern = cyad.jacobian_sparsity(lambda z: f(z, a), x)
    assert np.array_equal(pattern.toarray() != 0, reference("jacobian", f, x, d) != 0)
    assert pattern.nnz == 2 * 3 * np.count_nonzero(d)


def test_explicit_zeros_are_left_out_of_the_pattern():
    d = dense_matrix(5, 5, seed=5)
    a = sparse.csr_array(d)
    a.data[a.indices == 0] = 0.0      # stored entries, zero
    pattern = cyad.jacobian_sparsity(lambda z: a @ z, np.ones(5))
    assert np.array_equal(pattern.toarray() != 0, a.toarray() != 0)


def test_hessian_pattern_and_sparse_hessian():
    a = laplacian(4)
    u = np.linspace(0.0, 1.0, 16)

    def f(z, a, xp=np):
        return xp.sum(xp.sin(a @ z)) + z @ (a @ z ** 2)
    pattern = cyad.hessian_sparsity(lambda z: f(z, a), u)
    mask = (a.toarray() != 0).astype(int)
    # sin(A u): A^T diag A; u (A u^2): A + A^T and the diagonal
    expected = ((mask.T @ mask) + mask + mask.T) != 0
    assert np.array_equal(pattern.toarray() != 0, expected)
    for engine in ENGINES:
        hess = cyad.sparse_hessian(lambda z: f(z, a), u, engine=engine)
        assert_allclose(hess.toarray(), reference("hessian", f, u, a.toarray()), rtol=1e-12,
                        atol=1e-12)


# -- solves ------------------------------------------------------------------------------------

def solves(x, d, xp=np):
    """The reference of the solves below: the dense solve."""
    return (xp.sum(xp.sin(xp.linalg.solve(d, x ** 2))) + x @ xp.linalg.solve(d.T, x)
            + xp.sum(xp.linalg.solve(d, xp.stack([x, xp.cos(x)], axis=1)) ** 2))


def sparse_solves(x, a, kind):
    if kind == "spsolve":
        def solve(b):
            return sparse_linalg.spsolve(a, b)

        def solve_t(b):
            return sparse_linalg.spsolve(a.T, b)
    elif kind == "factorized":
        solve = sparse_linalg.factorized(a.tocsc())
        solve_t = sparse_linalg.factorized(a.T.tocsc())
    else:
        lu = sparse_linalg.splu(a.tocsc())
        solve, solve_t = lu.solve, functools.partial(lu.solve, trans="T")
    return (np.sum(np.sin(solve(x ** 2))) + x @ solve_t(x)
            + np.sum(solve(np.stack([x, np.cos(x)], axis=1)) ** 2))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", ("spsolve", "splu", "factorized"))
def test_solves_against_jax(kind, engine):
    d = dense_matrix(7, 7, seed=6)
    a = sparse.csr_array(d)
    x = np.linspace(-0.8, 0.9, 7)
    assert_allclose(cyad.gradient(lambda z: sparse_solves(z, a, kind), x, engine=engine),
                    reference("gradient", solves, x, d), rtol=1e-10, atol=1e-10)
    assert_allclose(cyad.hessian(lambda z: sparse_solves(z, a, kind), x, engine=engine),
                    reference("hessian", solves, x, d), rtol=1e-10, atol=1e-10)


def test_spsolve_of_a_column_is_a_vector_and_float32_promotes():
    d = dense_matrix(5, 5, seed=7)
    x = np.linspace(0.1, 0.5, 5)
    a = sparse.csc_array(d)
    for engine in ENGINES:
        jac = cyad.jacobian(lambda z: sparse_linalg.spsolve(a, z[:, None]), x, engine=engine)
        assert_allclose(jac, np.linalg.inv(d), rtol=1e-10, atol=1e-12)
    a32 = sparse.csc_array(d.astype(np.float32))
    jac = cyad.jacobian(lambda z: sparse_linalg.spsolve(a32, z), x.astype(np.float32))
    assert_allclose(jac, np.linalg.inv(d), rtol=1e-4, atol=1e-5)


def test_spilu_solve_is_its_linear_map():
    d = dense_matrix(6, 6, seed=8)
    ilu = sparse_linalg.spilu(sparse.csc_array(d), drop_tol=0.5)
    x = np.linspace(0.1, 0.6, 6)
    inverse = ilu.solve(np.eye(6))
    for engine in ENGINES:
        assert_allclose(cyad.jacobian(lambda z: ilu.solve(z), x, engine=engine), inverse,
                        rtol=1e-12, atol=1e-12)
        assert_allclose(cyad.jacobian(lambda z: ilu.solve(z, "T"), x, engine=engine),
                        inverse.T, rtol=1e-12, atol=1e-12)


def test_solve_patterns_keep_columns_apart():
    a = sparse.csr_array(dense_matrix(3, 3, seed=9))
    pattern = cyad.jacobian_sparsity(lambda z: sparse_linalg.spsolve(a, z.reshape(3, 2)),
                                     np.ones(6))
    assert np.array_equal(pattern.toarray(), np.kron(np.ones((3, 3), int), np.eye(2, dtype=int)))


# -- plain calls are SciPy's -------------------------------------------------------------------

def test_plain_calls_are_scipys():
    from scipy.sparse._base import _spbase
    from scipy.sparse._coo import _coo_base
    for cls, name in [(_spbase, "_matmul_dispatch"), (_spbase, "_rmatmul_dispatch"),
                      (_coo_base, "_matmul_dispatch"), (_coo_base, "_rmatmul_dispatch"),
                      (_coo_base, "dot")]:
        assert cls.__dict__[name].__cyad_dispatching__
        assert cls.__dict__[name].__wrapped__.__name__ == name
    d = dense_matrix(6, 6, seed=10)
    x, big = np.linspace(0.0, 1.0, 6), np.arange(18.0).reshape(6, 3)
    for format, api in itertools.product(FORMATS, APIS):
        a = as_sparse(d, format, api)
        dispatch = type(a)._matmul_dispatch.__wrapped__
        assert np.array_equal(a @ x, dispatch(a, x))
        assert np.array_equal(a @ big, dispatch(a, big))
        assert np.array_equal((a * 2.0).toarray(), 2.0 * d)
        assert_allclose(x @ a, d.T @ x, rtol=1e-14)
        assert_allclose(a.dot(big), d @ big, rtol=1e-14)
        assert type(a @ x) is np.ndarray
        product = a @ a
        assert sparse.issparse(product) and np.allclose(product.toarray(), d @ d)
    b = np.linspace(1.0, 2.0, 6)
    a = sparse.csc_array(d)
    assert np.array_equal(sparse_linalg.spsolve(a, b), sparse_linalg.spsolve.__wrapped__(a, b))
    lu = sparse_linalg.splu(a)
    assert isinstance(lu, sparse_linalg.SuperLU)
    assert np.array_equal(lu.solve(b), sparse_linalg.splu.__wrapped__(a).solve(b))
    assert lu.shape == (6, 6) and lu.L.shape == (6, 6)
    assert np.array_equal(sparse_linalg.factorized(a)(b),
                          sparse_linalg.factorized.__wrapped__(a)(b))
    v = np.arange(1.0, 6.0)
    assert np.array_equal(sparse.diags(v).toarray(), np.diag(v))
    assert np.array_equal(sparse.kron(sparse.eye_array(2), np.eye(2)).toarray(), np.eye(4))


# -- refusals ---------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_matrices_carrying_derivatives_are_refused_naming_the_call(engine):
    x = np.linspace(0.1, 0.6, 6)
    a = sparse.csr_array(dense_matrix(6, 6, seed=11))
    cases = {
        "scipy.sparse.kronsum": lambda z: np.sum(sparse.kronsum(sparse.eye_array(2),
                                                                z[:4].reshape(2, 2))),
        "scipy.sparse.vstack": lambda z: np.sum(sparse.vstack([a, z.reshape(1, 6)]) @ z),
        "constructor": lambda z: np.sum(sparse.csr_array((z, a.indices[:6], np.arange(7))) @ z),
        "__mul__": lambda z: np.sum(a * z),
        "0-d array": lambda z: np.sum(sparse.csr_matrix(a) * z[0]),
    }
    for name, f in cases.items():
        with pytest.raises(TypeError, match=name):
            cyad.gradient(f, x, engine=engine)
    with pytest.raises(TypeError, match="complex"):
        cyad.gradient(lambda z: np.sum(sparse.csr_array(a * 1j) @ z), x, engine=engine)
    with pytest.raises(ValueError, match="dimension mismatch"):
        cyad.gradient(lambda z: np.sum(a @ z[:5]), x, engine=engine)
    with pytest.raises(ValueError, match="could not interpret dimensions"):
        cyad.gradient(lambda z: np.sum(a @ z.reshape(6, 1, 1)), x, engine=engine)


# -- a tape and its constant matrix -----------------------------------------------------------

def test_a_tape_records_anew_when_the_matrix_changes_in_place():
    d = dense_matrix(6, 6, seed=12)
    a = sparse.csr_array(d)
    x = np.linspace(0.1, 0.6, 6)

    def f(z):
        return np.sum(np.sin(a @ z))
    prep = cyad.prepare_gradient(f, x, engine="tape")
    assert_allclose(cyad.gradient(f, x, prep=prep), np.cos(d @ x) @ d, rtol=1e-12)
    a.data *= 2.0
    assert_allclose(cyad.gradient(f, x, prep=prep), np.cos(2 * d @ x) @ (2 * d), rtol=1e-12)


def test_a_sparse_prep_follows_the_matrix_changed_in_place():
    a = laplacian(4)
    a.data[a.data == 1.0] = 0.0       # off-diagonal entries stored, zero
    u = np.linspace(0.0, 1.0, 16)

    def f(z):
        return residual(z, a)
    prep = cyad.prepare_sparse_jacobian(f, u, engine="tape")
    jac = cyad.sparse_jacobian(f, u, prep=prep)
    assert jac.nnz == 16
    a.data *= 2.0                      # the same pattern, other numbers
    jac = cyad.sparse_jacobian(f, u, prep=prep)
    assert_allclose(jac.toarray(), a.toarray() + np.diag(3 * u ** 2), rtol=1e-12)
    a.data[a.data == 0.0] = 1.0        # a wider pattern: refused, not silently dropped
    with pytest.raises(ValueError, match="outside the prep's pattern"):
        cyad.sparse_jacobian(f, u, prep=prep)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_engines_leave_products_to_sparse_matrices_alone(engine):
    # x @ A and x * A defer to a scipy.sparse matrix, as ndarray's operators do; NumPy's
    # scalars, lists and arrays are multiplied as before
    m = np.arange(16.0).reshape(4, 4)
    x = np.linspace(0.1, 1.0, 4)

    def f(z):
        return (np.sum(z * [1.0, 2.0, 3.0, 4.0]) + np.sum(z * np.float64(2.0))
                + np.sum(z * np.float32(2.0)) + np.sum(z @ m) + np.sum(z @ [1.0, 2.0, 3.0, 4.0])
                + np.sum(z @ sparse.csr_array(m)) + np.sum(z * sparse.csr_matrix(m)))
    expected = np.arange(1.0, 5.0) + 4.0 + 3 * m.sum(axis=1) + np.arange(1.0, 5.0)
    assert_allclose(cyad.gradient(f, x, engine=engine), expected, rtol=1e-14)
