"""Sparse Jacobians and Hessians from compressed products, against dense cyad and JAX."""
import functools

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_allclose, assert_array_equal

import cyad

pytestmark = pytest.mark.xdist_group("test_sparse_operators")

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def broyden(x, xp=np):
    """Broyden tridiagonal: (3 - 2 x_i) x_i - x_{i-1} - 2 x_{i+1} + 1."""
    left = xp.concatenate([xp.zeros(1, dtype=x.dtype), x[:-1]])
    right = xp.concatenate([x[1:], xp.zeros(1, dtype=x.dtype)])
    return (3.0 - 2.0 * x) * x - left - 2.0 * right + 1.0


def broyden_into(y, x):
    y[...] = (3.0 - 2.0 * x) * x + 1.0
    y[1:] -= x[:-1]
    y[:-1] -= 2.0 * x[1:]


def laplacian(u, xp=np):
    """A 5-point stencil on a 2-D grid (zero outside), plus a cubic term."""
    padded = xp.pad(u, 1)
    return (padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:]
            - 4.0 * u + u ** 3)


def arrowhead(x, xp=np):
    """A dense first row and column and a diagonal."""
    return xp.concatenate([xp.sum(x ** 2, keepdims=True), x[0] * x[1:] + xp.sin(x[1:])])


def block_diagonal(x, xp=np):
    """Blocks of 4 coupled through a small matrix, each block on its own."""
    blocks = xp.reshape(x, (-1, 4))
    mixing = xp.asarray([[1.0, 2.0, 0.0, -1.0], [0.5, 0.0, 3.0, 1.0],
                         [0.0, 1.0, 1.0, 1.0], [2.0, 0.0, 0.0, 0.5]])
    return xp.reshape(xp.tanh(blocks) @ mixing * blocks, (-1,))


def rosenbrock(x, xp=np):
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _gradient_and_hessian(f):
    return lambda z: (jax.grad(f)(z), jax.hessian(f)(z))


@functools.cache
def _compiled(transform, f):
    """JAX's transform of f(z, jnp), compiled once per f (and shape of z)."""
    return jax.jit(transform(lambda z: f(z, jnp)))


def jax_jacobian(f, x, jit=True):
    """JAX's Jacobian of f(z, jnp) at x; eager (jit=False) for an f that branches on z."""
    if not jit:
        return np.asarray(jax.jacfwd(lambda z: f(z, jnp))(jnp.asarray(x)))
    return np.asarray(_compiled(jax.jacfwd, f)(jnp.asarray(x)))


def jax_hessian(f, x):
    return _compiled(jax.hessian, f)(jnp.asarray(x))


def jax_gradient_and_hessian(f, x):
    return _compiled(_gradient_and_hessian, f)(jnp.asarray(x))


def assert_matches(result, expected, rtol=1e-13):
    """A sparse result equal to the dense reference, zeros outside the pattern included."""
    assert scipy.sparse.issparse(result)
    dense = result.toarray()
    expected = np.asarray(expected).reshape(dense.shape)
    assert_allclose(dense, expected, rtol=rtol, atol=rtol * np.abs(expected).max())


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("coloring", ["auto", "column", "row"])
def test_broyden_tridiagonal(coloring):
    x = RNG.uniform(-1.0, 1.0, 500)
    prep = cyad.prepare_sparse_jacobian(broyden, x, coloring=coloring)
    assert prep.n_colors == 3
    assert prep.coloring == ("row" if coloring == "row" else "column")
    result = cyad.sparse_jacobian(broyden, x, prep=prep)
    assert result.format == "csr" and result.nnz == 3 * 500 - 2
    assert_matches(result, jax_jacobian(broyden, x))
    assert_matches(result, cyad.jacobian(broyden, x))


def test_laplacian_stencil_of_a_grid():
    u = RNG.uniform(-1.0, 1.0, (7, 9))
    prep = cyad.prepare_sparse_jacobian(laplacian, u)
    assert prep.sparsity.shape == (63, 63) and prep.n_colors <= 7
    assert_matches(cyad.sparse_jacobian(laplacian, u, prep=prep), jax_jacobian(laplacian, u))


@pytest.mark.parametrize("format", ["csr", "csc", "coo"])
@pytest.mark.parametrize("coloring", ["column", "row", "bidirectional"])
def test_arrowhead(coloring, format):
    x = RNG.uniform(-1.0, 1.0, 30)
    prep = cyad.prepare_sparse_jacobian(arrowhead, x, coloring=coloring, format=format)
    # a dense row and a dense column: one product per column or row, unless both ways
    assert prep.n_colors == (3 if coloring == "bidirectional" else 30)
    value, result = cyad.value_and_sparse_jacobian(arrowhead, x, prep=prep)
    # a reverse coloring replays the tape, whose sin is its own vectorised loop (within an ulp
    # of NumPy's): the two may differ in the last bit of terms of order 1 that nearly cancel
    assert_allclose(value, arrowhead(x), rtol=1e-15, atol=1e-15)
    assert_matches(result, jax_jacobian(arrowhead, x))
    out = prep.new_result()
    assert cyad.sparse_jacobian(arrowhead, 2.0 * x, prep=prep, out=out) is out
    assert_matches(out, jax_jacobian(arrowhead, 2.0 * x))


def test_block_diagonal_needs_one_color_per_block_column():
    x = RNG.uniform(-1.0, 1.0, 40)
    prep = cyad.prepare_sparse_jacobian(block_diagonal, x)
    assert prep.n_colors == 4
    assert_matches(cyad.sparse_jacobian(block_diagonal, x, prep=prep),
                   jax_jacobian(block_diagonal, x))


@pytest.mark.parametrize("engine", ["dual", "tape"])
def test_engines_and_value(engine):
    x = RNG.uniform(-1.0, 1.0, 50)
    value, result = cyad.value_and_sparse_jacobian(broyden, x, engine=engine,
                                                   coloring="row" if engine == "tape" else "auto")
    assert_allclose(value, broyden(x), rtol=1e-15)
    assert_matches(result, jax_jacobian(broyden, x))


def test_float32():
    x = RNG.uniform(-1.0, 1.0, 40).astype(np.float32)
    value, result = cyad.value_and_sparse_jacobian(broyden, x)
    assert value.dtype == np.float32 and result.dtype == np.float32
    assert_matches(result, jax_jacobian(broyden, x.astype(np.float64)), rtol=1e-6)
    hessian = cyad.sparse_hessian(rosenbrock, x)
    assert hessian.dtype == np.float32
    assert_matches(hessian, jax_hessian(rosenbrock, x.astype(np.float64)), rtol=1e-5)


@pytest.mark.parametrize("format", ["csr", "csc", "coo"])
def test_two_argument_f_refilled_in_place(format):
    x, y = RNG.uniform(-1.0, 1.0, 100), np.zeros(100)
    prep = cyad.prepare_sparse_jacobian(broyden_into, x, y=y, format=format)
    out = prep.new_result()
    data = out.data
    call = lambda: cyad.sparse_jacobian(broyden_into, x, y=y, prep=prep, out=out)  # noqa: E731
    assert call() is out and out.data is data and out.format == format
    assert_matches(out, jax_jacobian(broyden, x))
    x[:] = RNG.uniform(-1.0, 1.0, 100)            # a new point, the same structure
    call()
    assert_matches(out, jax_jacobian(broyden, x))
    value_out = np.zeros(100)
    pair = (value_out, out)
    assert cyad.value_and_sparse_jacobian(broyden_into, x, y=y, prep=prep, out=pair) is pair
    assert_allclose(value_out, broyden(x), rtol=1e-13, atol=1e-14)
    assert_matches(out, jax_jacobian(broyden, x))


def squared_in_place(y, x):
    # allocates nothing: in-place operators on the output buffer
    y[...] = x
    y *= x


@pytest.mark.parametrize("coloring", ["column", "row", "bidirectional"])
@pytest.mark.parametrize("format", ["csr", "csc", "coo"])
def test_prepared_call_with_out_allocates_nothing(format, coloring, allocations_per_call):
    x, y = RNG.uniform(-1.0, 1.0, 100), np.zeros(100)
    prep = cyad.prepare_sparse_jacobian(squared_in_place, x, y=y, format=format,
                                        coloring=coloring)
    assert prep.n_colors == 1
    out = prep.new_result()
    call = lambda: cyad.sparse_jacobian(squared_in_place, x, y=y, prep=prep, out=out)  # noqa: E731
    call()
    assert_matches(out, np.diag(2.0 * x))
    assert allocations_per_call(call) == 0
    pair = (np.zeros(100), out)
    assert allocations_per_call(lambda: cyad.value_and_sparse_jacobian(
        squared_in_place, x, y=y, prep=prep, out=pair)) == 0
    assert_allclose(pair[0], x * x, rtol=1e-15)


@pytest.mark.parametrize("format", ["csr", "csc", "coo"])
def test_a_result_can_be_passed_back_as_out(format):
    x = RNG.uniform(-1.0, 1.0, 20)
    prep = cyad.prepare_sparse_jacobian(broyden, x, format=format, coloring="row")
    first = cyad.sparse_jacobian(broyden, x, prep=prep)
    assert first.format == format
    again = cyad.sparse_jacobian(broyden, 2.0 * x, prep=prep, out=first)
    assert again is first
    assert_matches(first, jax_jacobian(broyden, 2.0 * x))


def test_given_sparsity_equals_detected():
    x = RNG.uniform(-1.0, 1.0, 30)
    detected = cyad.jacobian_sparsity(broyden, x)
    dense = detected.toarray()
    reference = cyad.sparse_jacobian(broyden, x).toarray()
    for given in (dense, scipy.sparse.csc_array(dense), detected):
        prep = cyad.prepare_sparse_jacobian(broyden, x, sparsity=given)
        assert_array_equal(cyad.sparse_jacobian(broyden, x, prep=prep).toarray(), reference)
    # a wider pattern than needed: more colors, the same numbers, explicit zeros kept
    wider = np.abs(np.subtract.outer(np.arange(30), np.arange(30))) <= 2
    result = cyad.sparse_jacobian(broyden, x, sparsity=wider)
    assert result.nnz == wider.sum()
    assert_array_equal(result.toarray(), reference)


@pytest.mark.parametrize("prepare, f, sparsity", [
    (cyad.prepare_sparse_jacobian, broyden, np.eye(10, dtype=bool)),
    (cyad.prepare_sparse_hessian, rosenbrock, np.eye(10, dtype=bool)),
], ids=["jacobian", "hessian"])
def test_a_given_pattern_missing_a_nonzero_raises(prepare, f, sparsity):
    # the diagonal alone would put every column in one color and add each row's other
    # entries into its diagonal one: the detected pattern refuses it
    with pytest.raises(ValueError, match=r"misses the entry \(0, 1\)"):
        prepare(f, RNG.uniform(-1.0, 1.0, 10), sparsity=sparsity)


def test_rosenbrock_hessian_in_three_colors():
    x = RNG.uniform(-1.0, 1.5, 200)
    prep = cyad.prepare_sparse_hessian(rosenbrock, x)
    assert prep.coloring == "star" and prep.n_colors <= 3
    assert len(prep.colors) == 200 and prep.colors.max() + 1 == prep.n_colors
    gradient_reference, reference = jax_gradient_and_hessian(rosenbrock, x)
    assert_matches(cyad.sparse_hessian(rosenbrock, x, prep=prep), reference)
    assert_matches(cyad.sparse_hessian(rosenbrock, x, engine="dual"), cyad.hessian(rosenbrock, x))
    value, gradient, hessian = cyad.value_gradient_and_sparse_hessian(rosenbrock, x, prep=prep)
    assert value == pytest.approx(float(rosenbrock(x)), rel=1e-14)
    assert_allclose(gradient, gradient_reference, rtol=1e-13)
    assert_matches(hessian, reference)


@pytest.mark.parametrize("format", ["csr", "csc", "coo"])
def test_hessian_in_place_without_allocation(format, allocations_per_call):
    def f(y, x):
        y[...] = x[0] * x[1] + x[1] ** 2 * x[2] + x[3] ** 3

    x, y = np.array([0.5, -1.0, 2.0, 1.5]), np.zeros(())
    prep = cyad.prepare_sparse_hessian(f, x, y=y, format=format)
    out = prep.new_result()
    call = lambda: cyad.sparse_hessian(f, x, y=y, prep=prep, out=out)  # noqa: E731
    assert call() is out
    expected = [[0, 1, 0, 0], [1, 2 * x[2], 2 * x[1], 0], [0, 2 * x[1], 0, 0],
                [0, 0, 0, 6 * x[3]]]
    assert_matches(out, expected)
    assert allocations_per_call(call) == 0
    triple = (np.zeros(()), np.zeros(4), out)
    assert cyad.value_gradient_and_sparse_hessian(f, x, y=y, prep=prep, out=triple) is triple
    assert allocations_per_call(lambda: cyad.value_gradient_and_sparse_hessian(
        f, x, y=y, prep=prep, out=triple)) == 0
    assert triple[0] == x[0] * x[1] + x[1] ** 2 * x[2] + x[3] ** 3
    assert_allclose(triple[1], [x[1], x[0] + 2 * x[1] * x[2], x[1] ** 2, 3 * x[3] ** 2])


def test_nested_a_function_calling_derivative():
    # the sparse Jacobian of a function that itself calls cyad.derivative
    def f(x):
        return np.stack([cyad.derivative(lambda t, xi=xi: np.sin(t * xi), 1.0)
                         for xi in x])

    x = RNG.uniform(-1.0, 1.0, 6)
    result = cyad.sparse_jacobian(f, x, sparsity=np.eye(6, dtype=bool))
    # d/dx cos(x) x = cos(x) - x sin(x)
    assert_allclose(result.diagonal(), np.cos(x) - x * np.sin(x), rtol=1e-14)


def test_c_function_needs_sparsity(example):
    u = np.array([1.0, 0.5, 0.25])
    y = np.zeros(3)
    f = example.robertson_function()
    with pytest.raises(TypeError, match="sparsity="):
        cyad.prepare_sparse_jacobian(f, u, y=y)
    result = cyad.sparse_jacobian(f, u, y=y, sparsity=np.ones((3, 3), dtype=bool))
    assert_matches(result, cyad.jacobian(f, u, y=y))


def test_errors():
    x = np.ones(5)
    with pytest.raises(ValueError, match="rows"):
        cyad.prepare_sparse_jacobian(broyden, x, sparsity=np.eye(4, 5, dtype=bool))
    with pytest.raises(ValueError, match="columns"):
        cyad.prepare_sparse_jacobian(broyden, x, sparsity=np.eye(5, 4, dtype=bool))
    with pytest.raises(ValueError, match="shape"):
        cyad.prepare_sparse_hessian(rosenbrock, x, sparsity=np.eye(4, dtype=bool))
    with pytest.raises(ValueError, match="symmetric"):
        cyad.prepare_sparse_hessian(rosenbrock, x,   # holds the tridiagonal Hessian
                                    sparsity=np.triu(np.ones((5, 5))) + np.eye(5, k=-1))
    with pytest.raises(ValueError, match="coloring"):
        cyad.prepare_sparse_jacobian(broyden, x, coloring="star")
    with pytest.raises(ValueError, match="format"):
        cyad.prepare_sparse_jacobian(broyden, x, format="dok")
    prep = cyad.prepare_sparse_jacobian(broyden, x)
    with pytest.raises(ValueError, match=r"made for another function \(broyden, not sin\): "
                       "pass the very object it was made with"):
        cyad.sparse_jacobian(np.sin, x, prep=prep)
    with pytest.raises(TypeError, match="SparseHessianPrep"):
        cyad.sparse_hessian(broyden, x, prep=prep)
    with pytest.raises(TypeError, match="coloring"):
        cyad.sparse_jacobian(broyden, x, prep=prep, coloring="row")
    with pytest.raises(ValueError, match="out"):
        cyad.sparse_jacobian(broyden, x, prep=prep, out=scipy.sparse.eye_array(5, format="csr"))
    other = cyad.prepare_sparse_jacobian(broyden, x, sparsity=np.ones((5, 5))).new_result()
    with pytest.raises(ValueError, match="out"):
        cyad.sparse_jacobian(broyden, x, prep=prep, out=other)


@pytest.mark.parametrize("seed", range(6))
def test_random_sparse_programs(seed):
    # f(x) = sin(M x) + (N x) * x with random sparse constant M, N: every coloring and
    # format against JAX; the Hessian of sum(cos(M x)) + (N x) . x likewise
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    m_matrix = np.where(rng.random((n, n)) < 0.1, rng.standard_normal((n, n)), 0.0)
    n_matrix = np.where(rng.random((n, n)) < 0.1, rng.standard_normal((n, n)), 0.0)
    x = rng.uniform(-1.0, 1.0, n)

    def f(z, xp=np):
        return xp.sin(m_matrix @ z) + (n_matrix @ z) * z

    def g(z, xp=np):
        return xp.sum(xp.cos(m_matrix @ z)) + (n_matrix @ z) @ z

    expected, hessian = (np.asarray(r) for r in jax.jit(lambda z: (
        jax.jacfwd(lambda t: f(t, jnp))(z), jax.hessian(lambda t: g(t, jnp))(z)))(x))
    for coloring in ("auto", "column", "row", "bidirectional"):
        format = ("csr", "csc", "coo")[int(rng.integers(3))]
        prep = cyad.prepare_sparse_jacobian(f, x, coloring=coloring, format=format)
        assert prep.n_colors <= n
        assert_matches(cyad.sparse_jacobian(f, x, prep=prep), expected)
    hessian_prep = cyad.prepare_sparse_hessian(g, x)
    assert_matches(cyad.sparse_hessian(g, x, prep=hessian_prep), hessian)


def test_hessian_given_sparsity_equals_detected():
    x = RNG.uniform(-1.0, 1.5, 25)
    detected = cyad.hessian_sparsity(rosenbrock, x)
    reference = cyad.sparse_hessian(rosenbrock, x)
    for given in (detected.toarray().astype(bool), scipy.sparse.coo_array(detected)):
        result = cyad.sparse_hessian(rosenbrock, x, sparsity=given, format="csc")
        assert result.format == "csc"
        assert_array_equal(result.toarray(), reference.toarray())
    # a full pattern: one product per variable, the same numbers
    full = cyad.prepare_sparse_hessian(rosenbrock, x, sparsity=np.ones((25, 25), dtype=bool))
    assert full.n_colors == 25
    assert_allclose(cyad.sparse_hessian(rosenbrock, x, prep=full).toarray(),
                    reference.toarray(), rtol=1e-14, atol=1e-12)


def recurrence_into(y, x, xp=np):
    """Writes y, then reads what it wrote (and, where y is x, what it overwrote)."""
    y[...] = x * xp.sin(x)
    y[0] += xp.sum(x ** 2)             # a dense row: bidirectional splits it off
    y[1:] += 0.5 * y[:-1] * x[1:]
    y *= xp.cos(y)


def recurrence(x):
    """recurrence_into's y as a function of x alone (the reference)."""
    y = x * jnp.sin(x)
    y = y.at[0].add(jnp.sum(x ** 2))
    y = y.at[1:].add(0.5 * y[:-1] * x[1:])
    return y * jnp.cos(y)


@functools.cache
def _recurrence_jacobian_and_value():
    """JAX's Jacobian of recurrence and its value, compiled once."""
    return jax.jit(lambda x: (jax.jacfwd(recurrence)(x), recurrence(x)))


@pytest.mark.parametrize("coloring", ["auto", "column", "row", "bidirectional"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_f_of_y_reading_y_and_y_sharing_x(coloring, dtype):
    """f(y, x) that reads y back, with y a separate array, then with y x itself: the
    Jacobian of the map from x as the call found it; y holds f's value after it."""
    rtol = 1e-13 if dtype == np.float64 else 2e-5
    x0 = RNG.uniform(-1.0, 1.0, 12)
    expected, value = (np.asarray(r) for r in _recurrence_jacobian_and_value()(x0))
    x = x0.astype(dtype)
    y = np.zeros_like(x)
    prep = cyad.prepare_sparse_jacobian(recurrence_into, x, y=y, coloring=coloring)
    assert_matches(cyad.sparse_jacobian(recurrence_into, x, y=y, prep=prep), expected, rtol)
    assert_allclose(y, value, rtol=rtol)
    for prepared in (True, False):
        shared = x0.astype(dtype)
        options = ({"prep": cyad.prepare_sparse_jacobian(recurrence_into, shared.copy(),
                                                         y=shared.copy(), coloring=coloring)}
                   if prepared else {"coloring": coloring})
        result = cyad.sparse_jacobian(recurrence_into, shared, y=shared, **options)
        assert_matches(result, expected, rtol)
        assert_allclose(shared, value, rtol=rtol)      # y (= x) holds f's value
        shared = x0.astype(dtype)
        val, result = cyad.value_and_sparse_jacobian(recurrence_into, shared, y=shared,
                                                     **options)
        assert_matches(result, expected, rtol)
        assert_allclose(val, value, rtol=rtol)


def test_the_calls_own_y_is_written():
    def squares_into(y, x):
        y[...] = x ** 2

    x = np.arange(1.0, 5.0)
    prepared_y, call_y = np.zeros(4), np.zeros(4)
    prep = cyad.prepare_sparse_jacobian(squares_into, x, y=prepared_y)
    prepared_y[:] = 0.0
    result = cyad.sparse_jacobian(squares_into, x, y=call_y, prep=prep)
    assert_array_equal(call_y, x ** 2)
    assert_array_equal(prepared_y, 0.0)
    assert_array_equal(result.toarray(), np.diag(2 * x))
    with pytest.raises(ValueError, match="y="):
        cyad.sparse_jacobian(squares_into, x, prep=prep)


def in_place_program(x, xp=np):
    """In-place operators on a copy: each product reads entries the one before wrote."""
    if xp is np:
        z = x.copy()
        z[1:] *= z[:-1]
        z **= 2
        z[:-2] += np.tanh(z[2:])
    else:
        z = x.at[1:].multiply(x[:-1])
        z = z ** 2
        z = z.at[:-2].add(jnp.tanh(z[2:]))
    return xp.sum(z * xp.cos(z))


@pytest.mark.parametrize("engine", ["tape", "dual"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_hessian_through_in_place_operators(engine, dtype):
    rtol = 1e-12 if dtype == np.float64 else 1e-4
    x0 = RNG.uniform(-1.0, 1.0, 15)
    gradient_reference, expected = jax_gradient_and_hessian(in_place_program, x0)
    expected = np.asarray(expected)
    x = x0.astype(dtype)
    prep = cyad.prepare_sparse_hessian(in_place_program, x, engine=engine)
    assert prep.n_colors < x.size
    hessian = cyad.sparse_hessian(in_place_program, x, prep=prep)
    assert hessian.dtype == dtype
    assert_matches(hessian, expected, rtol)
    value, gradient, again = cyad.value_gradient_and_sparse_hessian(in_place_program, x,
                                                                    prep=prep)
    assert_allclose(gradient, gradient_reference, rtol=rtol, atol=rtol)
    assert_array_equal(again.toarray(), hessian.toarray())


def energy(u, xp=np):
    return xp.sum(laplacian(u, xp) * u) + xp.sum(xp.sin(u))


@pytest.mark.parametrize("format", ["csr", "csc", "coo"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_acyclic_hessians_by_substitution(format, dtype):
    """coloring="acyclic": Rosenbrock's tridiagonal Hessian in 2 products (star: 3), a 2-D
    stencil's in at most 4 (star: 5), each against JAX; out= refilled in place."""
    rtol = 1e-12 if dtype == np.float64 else 2e-4
    x0 = RNG.uniform(-1.0, 1.5, 60)
    x = x0.astype(dtype)
    prep = cyad.prepare_sparse_hessian(rosenbrock, x, coloring="acyclic", format=format)
    assert prep.coloring == "acyclic" and prep.n_colors == 2
    out = prep.new_result()
    assert cyad.sparse_hessian(rosenbrock, x, prep=prep, out=out) is out
    assert out.format == format and out.dtype == dtype
    assert_matches(out, jax_hessian(rosenbrock, x0), rtol)
    value, gradient, again = cyad.value_gradient_and_sparse_hessian(rosenbrock, x, prep=prep)
    assert_array_equal(again.toarray(), out.toarray())

    u0 = RNG.uniform(-1.0, 1.0, (8, 8))
    stencil = cyad.prepare_sparse_hessian(energy, u0.astype(dtype), coloring="acyclic",
                                          format=format)
    assert stencil.n_colors <= 4 < cyad.prepare_sparse_hessian(energy, u0).n_colors
    assert_matches(cyad.sparse_hessian(energy, u0.astype(dtype), prep=stencil),
                   jax_hessian(energy, u0).reshape(64, 64), rtol)
    with pytest.raises(ValueError, match="coloring is one of"):
        cyad.prepare_sparse_hessian(rosenbrock, x, coloring="column")


def test_acyclic_hessian_call_allocates_nothing(allocations_per_call):
    x = RNG.uniform(-1.0, 1.5, 200)
    prep = cyad.prepare_sparse_hessian(rosenbrock, x, coloring="acyclic")
    out = prep.new_result()
    assert allocations_per_call(lambda: cyad.sparse_hessian(rosenbrock, x, prep=prep,
                                                            out=out)) == 0


def branching(x, xp=np):
    """Diagonal on one branch, diagonal and anti-diagonal on the other."""
    return x ** 2 if x[0] > 0 else x * x[::-1]


def same_pattern_branches(x, xp=np):
    return xp.sin(x) * x if x[0] > 0 else xp.exp(x) - x ** 3


def scalar_branching(x, xp=np):
    return xp.sum(x ** 3) if x[0] > 0 else xp.sum(x * x[::-1])


@pytest.mark.parametrize("engine", ["tape", "dual", None])
def test_a_branch_outside_the_pattern_raises(engine):
    x = np.arange(1.0, 7.0)
    prep = cyad.prepare_sparse_jacobian(branching, x, engine=engine)
    out = cyad.sparse_jacobian(branching, x, prep=prep)
    before = out.data.copy()
    with pytest.raises(ValueError, match=r"another branch.*\(0, 5\)"):
        cyad.sparse_jacobian(branching, -x, prep=prep, out=out)
    assert_array_equal(out.data, before)            # no result half-written
    hessian_prep = cyad.prepare_sparse_hessian(scalar_branching, x,
                                               engine="tape" if engine is None else engine)
    with pytest.raises(ValueError, match="another branch"):
        cyad.sparse_hessian(scalar_branching, -x, prep=hessian_prep)


@pytest.mark.parametrize("engine", ["tape", "dual", None])
def test_a_branch_inside_the_pattern_is_followed(engine):
    x = RNG.uniform(0.5, 1.0, 8)
    prep = cyad.prepare_sparse_jacobian(same_pattern_branches, x, engine=engine)
    for point in (x, -x, x, -x):            # every call after a flip checks the pattern
        assert_matches(cyad.sparse_jacobian(same_pattern_branches, point, prep=prep),
                       jax_jacobian(same_pattern_branches, point, jit=False))
    # a given pattern holding both branches serves both
    both = cyad.jacobian_sparsity(branching, x) + cyad.jacobian_sparsity(branching, -x)
    prep = cyad.prepare_sparse_jacobian(branching, x, sparsity=both, engine=engine)
    for point in (x, -x, x):
        assert_matches(cyad.sparse_jacobian(branching, point, prep=prep),
                       jax_jacobian(branching, point, jit=False))
    hessian_both = (cyad.hessian_sparsity(scalar_branching, x)
                    + cyad.hessian_sparsity(scalar_branching, -x))
    hessian_prep = cyad.prepare_sparse_hessian(scalar_branching, x, sparsity=hessian_both,
                                               engine="tape" if engine is None else engine)
    for point in (x, -x, x):
        assert_matches(cyad.sparse_hessian(scalar_branching, point, prep=hessian_prep),
                       jax.hessian(lambda z: scalar_branching(z, jnp))(point))


def test_a_constant_changed_in_place_is_seen():
    """A matrix f closes over fixes the pattern by its zeros: changed in place between
    calls, the tape records f anew and the pattern is checked again."""
    matrix = np.eye(5)

    def f(x):
        return np.tanh(matrix @ x)

    x = RNG.uniform(-1.0, 1.0, 5)
    for engine in ("tape", "dual"):
        matrix[:] = np.eye(5)
        prep = cyad.prepare_sparse_jacobian(f, x, engine=engine)
        assert prep.sparsity.nnz == 5
        matrix[0, 3] = 2.0
        with pytest.raises(ValueError, match=r"\(0, 3\)"):
            cyad.sparse_jacobian(f, x, prep=prep)


def test_branches_that_keep_changing():
    """After the tape's record limit: a given pattern is trusted (the dual engine answers),
    a detected one refused."""
    x = RNG.uniform(0.5, 1.0, 6)
    both = cyad.jacobian_sparsity(branching, x) + cyad.jacobian_sparsity(branching, -x)
    given = cyad.prepare_sparse_jacobian(branching, x, sparsity=both, coloring="row")
    detected = cyad.prepare_sparse_jacobian(same_pattern_branches, x, coloring="row")
    with pytest.raises(RuntimeError, match="no longer follows"):
        for flip in range(20):
            point = x if flip % 2 else -x
            assert_matches(cyad.sparse_jacobian(branching, point, prep=given),
                           jax_jacobian(branching, point, jit=False))
            cyad.sparse_jacobian(same_pattern_branches, point, prep=detected)
    assert flip > 6
    for point in (x, -x):                    # the given one goes on
        assert_matches(cyad.sparse_jacobian(branching, point, prep=given),
                       jax_jacobian(branching, point, jit=False))


def test_new_numbers_in_the_same_program_need_no_detection(monkeypatch):
    """A constant f closes over changes its values but not its zeros: the tape records f
    anew, the program is the same, and the pattern is not detected again."""
    import cyad._sparse.operators as sparse_operators

    scale = np.ones(6)

    def f(x):
        return np.tanh(scale * x) + x[::-1]

    detections = []
    detect = sparse_operators.recorded_pattern
    monkeypatch.setattr(sparse_operators, "recorded_pattern",
                        lambda *a, **k: detections.append(1) or detect(*a, **k))
    x = RNG.uniform(-1.0, 1.0, 6)
    for engine in ("tape", "dual"):
        scale[:] = 1.0
        prep = cyad.prepare_sparse_jacobian(f, x, engine=engine)
        detections.clear()
        for value in (2.0, 3.0, 0.5):
            scale[:] = value
            expected = np.diag(value / np.cosh(value * x) ** 2) + np.eye(6)[::-1]
            assert_matches(cyad.sparse_jacobian(f, x, prep=prep), expected)
        assert not detections
        scale[2] = 0.0                      # a new zero: another pattern, detected
        cyad.sparse_jacobian(f, x, prep=prep)
        assert detections


def test_a_method_accessed_anew_is_the_function_its_prep_was_made_for():
    class Model:
        def residual(self, x):
            return broyden(x)

    model, x = Model(), np.linspace(0.1, 1.0, 6)
    prep = cyad.prepare_sparse_jacobian(model.residual, x)
    np.testing.assert_allclose(cyad.sparse_jacobian(model.residual, x, prep=prep).toarray(),
                               cyad.jacobian(broyden, x), rtol=1e-14)
