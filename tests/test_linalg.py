"""numpy.linalg where a derivative is not plain: kinks, refusals, stacks and out=.

The scenarios of tests/test_primitives.py test every linear algebra function at
well-conditioned points against JAX; here: the norms at their kinks (ties of the row
and column sums, against JAX's convention), the points where no derivative exists
(repeated or zero singular values, rank-deficient matrices, non-unique columns of Q, U
and V), which raise LinAlgError on every engine, lstsq at repeated singular values
(its solution differentiable, its singular values NaN), stacks of matrices, and out=.
"""
import numpy as np
import pytest
from derivative_references import jax, jnp
from scenarios import ENGINES

import cyad

pytestmark = pytest.mark.xdist_group("test_linalg")

needs_jax = pytest.mark.skipif(jax is None, reason="JAX references")


def _random(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


_REFERENCES = {}


def jax_reference(name, function, x):
    """function(x) (JAX's derivatives) as one compiled function, computed once for each name
    and x: the engines share it."""
    key = (name, x.dtype.str, x.shape, x.tobytes())
    if key not in _REFERENCES:
        _REFERENCES[key] = jax.tree_util.tree_map(np.asarray, jax.jit(function)(x))
    return _REFERENCES[key]


# -- kinks: ties of the norms' row and column sums, against JAX ----------------------------------

@needs_jax
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("order", [1, -1, np.inf, -np.inf])
def test_matrix_norm_at_tied_sums_takes_jax_convention(order, engine):
    # the columns' (1, -1) and rows' (inf, -inf) absolute sums all tie: 4
    a = np.array([[1.0, -2.0, 3.0], [2.0, 1.0, -0.5], [1.0, 1.0, -0.5]])
    a = a if order in (1, -1) else a.T
    x = a.ravel()

    def norm(x):
        return jnp.linalg.norm(x.reshape(3, 3), order)
    expected_gradient, expected_hessian = jax_reference(
        f"norm {order}", lambda x: (jax.grad(norm)(x), jax.hessian(norm)(x)), x)
    grad = cyad.gradient(lambda x: np.linalg.norm(x.reshape(3, 3), order), x, engine=engine)
    np.testing.assert_allclose(grad, expected_gradient, rtol=1e-14, atol=1e-15)
    hessian = cyad.hessian(lambda x: np.linalg.norm(x.reshape(3, 3), order), x, engine=engine)
    np.testing.assert_allclose(hessian, expected_hessian, atol=1e-15)


@pytest.mark.parametrize("engine", ENGINES)
def test_vector_norms_at_zero_entries_and_ties(engine):
    # abs has slope 0 at 0; tied extremes share the derivative
    x = np.array([0.0, -2.0, 2.0, 1.0])
    expected = {1: [0.0, -1.0, 1.0, 1.0], np.inf: [0.0, -0.5, 0.5, 0.0],
                -np.inf: [0.0, 0.0, 0.0, 0.0], 2: [0.0, -2.0 / 3.0, 2.0 / 3.0, 1.0 / 3.0]}
    for order, gradient in expected.items():
        np.testing.assert_allclose(
            cyad.gradient(lambda x, order=order: np.linalg.norm(x, order), x, engine=engine),
            gradient, rtol=1e-15, atol=1e-16, err_msg=str(order))


@pytest.mark.parametrize("engine", ENGINES)
def test_invalid_norm_orders_raise_as_numpy(engine):
    x = _random(9)
    for call, match in [(lambda x: np.linalg.norm(x, "fro"), "Invalid norm order 'fro'"),
                        (lambda x: np.linalg.norm(x.reshape(3, 3), 3),
                         "Invalid norm order for matrices")]:
        with pytest.raises(ValueError, match=match):
            call(x)
        with pytest.raises(ValueError, match=match):
            cyad.jacobian(call, x, engine=engine)


# -- refused where no derivative exists ----------------------------------------------------------

def _refused(function, x, match):
    for engine in ENGINES:
        with pytest.raises(np.linalg.LinAlgError, match=match):
            cyad.jacobian(function, x, engine=engine)
        with pytest.raises(np.linalg.LinAlgError, match=match):
            cyad.hessian(lambda x: np.sum(function(x)), x, engine=engine)


@pytest.mark.parametrize("function", [
    lambda a: np.linalg.svdvals(a), lambda a: np.linalg.svd(a, compute_uv=False),
    lambda a: np.linalg.svd(a, full_matrices=False)[0] ** 2,
    lambda a: np.linalg.norm(a, 2), lambda a: np.linalg.norm(a, "nuc")])
@pytest.mark.parametrize("a", [np.diag([1.0, 2.0, 1.0]),            # repeated
                               np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]]),
                               np.vstack([np.eye(3), np.zeros((1, 3))]),     # tall, repeated
                               ], ids=["repeated", "zero", "tall-repeated"])
def test_svd_at_repeated_or_zero_singular_values_raises(function, a):
    shape = a.shape
    _refused(lambda x: function(x.reshape(shape)), a.ravel(), "repeated or zero singular")


@pytest.mark.parametrize("function,match", [
    (lambda a: np.linalg.pinv(a), "pinv of a rank-deficient"),
    (lambda a: np.linalg.pinv(a.T), "pinv of a rank-deficient"),
    (lambda a: np.linalg.lstsq(a, np.arange(4.0))[0], "lstsq of a rank-deficient"),
    (lambda a: np.linalg.lstsq(a.T, np.arange(3.0))[0], "lstsq of a rank-deficient")])
def test_pinv_and_lstsq_of_rank_deficient_matrices_raise(function, match):
    a = np.outer(np.arange(1.0, 5.0), [1.0, 2.0, 3.0]) + np.outer([1.0, 0.0, 1.0, 0.0],
                                                                   [0.0, 1.0, 1.0])   # rank 2
    _refused(lambda x: function(x.reshape(4, 3)), a.ravel(), match)


@pytest.mark.parametrize("function", [lambda a: np.linalg.eigvals(a),
                                      lambda a: np.linalg.eig(a)[1] ** 2])
def test_eig_at_repeated_eigenvalues_raises(function):
    a = np.array([[2.0, 1.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.5, 3.0]])   # 2 twice
    _refused(lambda x: function(x.reshape(3, 3)), a.ravel(), "at repeated eigenvalues")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("function", [lambda a: np.linalg.eigvals(a),
                                      lambda a: np.linalg.eig(a)[0]])
def test_eig_with_complex_eigenvalues_gives_complex_values(function, engine):
    # complex eigenvalues are complex values, as NumPy's (cyad._complex.linalg; tested
    # further in tests/test_complex_linalg.py), also for a prep (a tape) made where the
    # eigenvalues are real
    def f(x):
        w = function(x.reshape(2, 2))
        return np.concatenate([np.real(w), np.imag(w)])

    def central(x):
        h = 1e-6
        return np.stack([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(4)], -1)

    rotation = np.array([1.0, -2.0, 2.0, 1.0])   # eigenvalues 1 +- 2i
    real = np.array([1.0, 2.0, 0.5, 1.5])   # eigenvalues 1.25 +- sqrt(1.0625)
    prep = cyad.prepare_jacobian(f, real, engine=engine)
    for x in (rotation, real, rotation):
        value, jacobian = cyad.value_and_jacobian(f, x, prep=prep)
        np.testing.assert_allclose(value, f(x), rtol=1e-14)
        np.testing.assert_allclose(jacobian, central(x), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("engine", ENGINES)
def test_non_unique_columns_are_refused(engine):
    x = _random(12)
    with pytest.raises(np.linalg.LinAlgError, match="of a tall matrix is not differentiable"):
        cyad.jacobian(lambda x: np.linalg.qr(x.reshape(4, 3), mode="complete")[0], x,
                      engine=engine)
    for shape in ((4, 3), (3, 4)):
        with pytest.raises(np.linalg.LinAlgError, match="full_matrices=True of a non-square"):
            cyad.jacobian(lambda x, shape=shape: np.linalg.svd(x.reshape(shape))[0], x,
                          engine=engine)
    with pytest.raises(TypeError, match="mode='raw' is not supported"):
        cyad.jacobian(lambda x: np.linalg.qr(x.reshape(4, 3), mode="raw")[0], x, engine=engine)


# -- lstsq at repeated singular values ---------------------------------------------------------

@needs_jax
@pytest.mark.parametrize("engine", ENGINES)
def test_lstsq_of_orthonormal_columns_differentiates_the_solution(engine):
    # Q has orthonormal columns: singular values all 1; the solution is differentiable there
    q, _ = np.linalg.qr(_random((5, 3)))
    x = np.concatenate([q.ravel(), _random(5, 1)])

    def normal_equations(x):   # (JAX's lstsq, through the SVD, gives NaN here)
        a = x[:15].reshape(5, 3)
        return jnp.sum(jnp.linalg.solve(a.T @ a, a.T @ x[15:]) ** 2)

    def solution(x):
        return np.sum(np.linalg.lstsq(x[:15].reshape(5, 3), x[15:])[0] ** 2)

    gradient, hessian = jax_reference(
        "lstsq", lambda x: (jax.grad(normal_equations)(x), jax.hessian(normal_equations)(x)), x)
    np.testing.assert_allclose(cyad.gradient(solution, x, engine=engine), gradient, rtol=1e-9,
                               atol=1e-11)
    np.testing.assert_allclose(cyad.hessian(solution, x, engine=engine), hessian, rtol=1e-9,
                               atol=1e-11)
    jacobian = cyad.jacobian(lambda x: np.linalg.lstsq(x[:15].reshape(5, 3), x[15:])[3], x,
                             engine=engine)
    assert np.isnan(jacobian).all()


# -- stacks of matrices, and out= ------------------------------------------------------------------

@needs_jax
@pytest.mark.parametrize("engine", ENGINES)
def test_stacks_of_matrices(engine):
    x = _random(24, 2)

    def f(xp):
        def program(x):
            a = x.reshape(2, 4, 3)
            q, r = xp.linalg.qr(a)
            u, s, vh = xp.linalg.svd(a, full_matrices=False)
            return xp.concatenate([xp.ravel(q[..., :1] * r[..., :1, :]), xp.ravel(s),
                                   xp.ravel(u[..., :, 1:2] * vh[..., 1:2, :]),
                                   xp.ravel(xp.linalg.pinv(a)), xp.ravel(xp.linalg.svdvals(a)),
                                   xp.ravel(xp.linalg.norm(a, 2, axis=(1, 2))),
                                   xp.ravel(xp.linalg.matrix_power(a[:, :3, :], 3))])
        return program

    w = np.cos(np.arange(f(np)(x).size))
    jacobian, expected = jax_reference(
        "stacks", lambda x: (jax.jacobian(f(jnp))(x),
                             jax.hessian(lambda x: jnp.sum(w * f(jnp)(x)))(x)), x)
    np.testing.assert_allclose(cyad.jacobian(f(np), x, engine=engine), jacobian, rtol=1e-9,
                               atol=1e-11)
    np.testing.assert_allclose(cyad.hessian(lambda x: np.sum(w * f(np)(x)), x, engine=engine),
                               expected, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_multi_dot_into_its_operand(dtype):
    # out= an operand: the product is computed apart, then written
    def in_place(x):
        a, b = x[:9].reshape(3, 3) * 1.0, x[9:18].reshape(3, 3)
        np.linalg.multi_dot([a, b, np.sin(a)], out=a)
        return np.sum(a * np.arange(9.0).reshape(3, 3))

    def apart(x):
        a, b = x[:9].reshape(3, 3), x[9:18].reshape(3, 3)
        return np.sum((a @ b @ np.sin(a)) * np.arange(9.0).reshape(3, 3))

    x = _random(18, 3).astype(dtype)
    tolerance = 1e-12 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(cyad.hessian(in_place, x), cyad.hessian(apart, x),
                               rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(cyad.gradient(in_place, x), cyad.gradient(apart, x),
                               rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("engine", ENGINES)
def test_lstsq_rank_is_an_integer(engine):
    seen = []

    def f(x):
        solution, _, rank, _ = np.linalg.lstsq(x.reshape(4, 3), np.ones(4))
        seen.append(rank)
        return solution * rank

    x = _random(12, 4)
    jacobian = cyad.jacobian(f, x, engine=engine)
    assert all(isinstance(r, (int, np.integer)) and r == 3 for r in seen)
    reference = cyad.jacobian(lambda x: np.linalg.lstsq(x.reshape(4, 3), np.ones(4))[0], x,
                              engine=engine)
    np.testing.assert_allclose(jacobian, 3 * reference, rtol=1e-14)


@needs_jax
@pytest.mark.parametrize("engine", ENGINES)
def test_pinv_hermitian_reads_the_lower_triangle(engine):
    # hermitian=True: NumPy's pinv through eigh, of the symmetric matrix of the lower triangle
    x = _random(9, 5) + 3.0 * np.eye(3).ravel()

    def reference(x):
        a = x.reshape(3, 3)
        low = jnp.tril(a)
        return jnp.sum(jnp.linalg.pinv(low + jnp.tril(a, -1).T) * np.arange(9.0).reshape(3, 3))

    def f(x):
        return np.sum(np.linalg.pinv(x.reshape(3, 3), hermitian=True)
                      * np.arange(9.0).reshape(3, 3))

    gradient, hessian = jax_reference(
        "pinv hermitian", lambda x: (jax.grad(reference)(x), jax.hessian(reference)(x)), x)
    np.testing.assert_allclose(cyad.gradient(f, x, engine=engine), gradient, rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(cyad.hessian(f, x, engine=engine), hessian, rtol=1e-9,
                               atol=1e-11)


@pytest.mark.parametrize("engine", ENGINES)
def test_cross_of_2_vectors_warns_as_numpy(engine):
    x = _random(4, 6)
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors are deprecated"):
        gradient = cyad.gradient(lambda x: np.cross(x[:2], x[2:]), x, engine=engine)
    np.testing.assert_array_equal(gradient, [x[3], -x[2], -x[1], x[0]])


@pytest.mark.parametrize("operator", ["gradient", "hessian"])
def test_a_tape_replays_the_decompositions_at_another_point(operator):
    # the rules are recorded, not their numbers: a prep made at x0 differentiates at x1
    def f(x):
        a = x[:12].reshape(4, 3)
        q, r = np.linalg.qr(a)
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        solution, residual, rank, singular = np.linalg.lstsq(a, x[12:16])
        w, v = np.linalg.eig(0.2 * x[:9].reshape(3, 3) + np.diag([1.0, 2.5, 4.0]))
        return (np.sum(q[:, :1] * r[:1, :]) + np.sum(s ** 2) + np.sum(u[:, :1] * vh[:1, :])
                + np.sum(solution * rank) + np.sum(residual) + np.sum(singular)
                + np.sum(np.linalg.pinv(a) ** 2) + np.sum(w ** 2)
                + np.sum(v ** 2 * np.arange(9.0).reshape(3, 3)))

    x0, x1 = _random(16, 6), _random(16, 7)
    prep = getattr(cyad, f"prepare_{operator}")(f, x0, engine="tape")
    getattr(cyad, operator)(f, x0, prep=prep)
    np.testing.assert_allclose(getattr(cyad, operator)(f, x1, prep=prep),
                               getattr(cyad, operator)(f, x1, engine="dual"),
                               rtol=1e-12, atol=1e-12)
