"""NumPy functions on dual arrays, checked against finite differences and closed forms.

Every case is a function f that runs on plain ndarrays as well as on dual
arrays: cyad's Jacobian of f is compared with central differences of f on
plain float64 arrays, and cyad's value with f's plain value.
"""
import inspect

import numpy as np
import pytest

import cyad
from cyad._dual.functions import HANDLED_FUNCTIONS

STEP = 1e-6


def random(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# constants the functions combine with their dual argument
C2 = random(2, seed=1)
C3 = random(3, seed=2)
C5 = random(5, seed=3)
C22 = random(2, 2, seed=4)
C23 = random(2, 3, seed=5)
C25 = random(2, 5, seed=6)
C32 = random(3, 2, seed=7)
C33 = random(3, 3, seed=8)
C35 = random(3, 5, seed=9)
C52 = random(5, 2, seed=10)
C53 = random(5, 3, seed=11)
C253 = random(2, 5, 3, seed=12)
C2133 = random(2, 1, 3, 3, seed=13)
C333 = random(3, 3, 3, seed=14)
EYE3 = np.eye(3)


def finite_difference_jacobian(f, x):
    x = np.asarray(x, np.float64)
    columns = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = STEP
        e = e.reshape(x.shape)
        columns.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * STEP))
    return np.stack(columns, axis=-1).reshape(np.shape(f(x)) + x.shape)


def check(f, x, chunk=None, rtol=1e-6, atol=1e-7):
    value, jac = cyad.value_and_jacobian(f, x, chunk=chunk)
    np.testing.assert_allclose(value, f(x), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(jac, finite_difference_jacobian(f, x), rtol=rtol, atol=atol)


# (id, f, shape of x); inputs are standard normal
CASES = [
    # reductions
    ("sum", np.sum, (3, 5)),
    ("sum-axis-neg", lambda x: np.sum(x, axis=-1), (3, 5)),
    ("sum-axes-keepdims", lambda x: np.sum(x, axis=(0, -1), keepdims=True), (3, 1, 5)),
    ("sum-method", lambda x: x.sum(axis=1), (3, 5)),
    ("sum-mixed", lambda x: np.sum(x * C35, axis=0), (3, 5)),
    ("mean", np.mean, (3, 5)),
    ("mean-axes-keepdims", lambda x: np.mean(x, axis=(-1, 0), keepdims=True), (3, 3, 3)),
    ("prod", np.prod, (5,)),
    ("prod-axis-neg-keepdims", lambda x: np.prod(x, axis=-2, keepdims=True), (3, 3, 3)),
    ("prod-axes", lambda x: np.prod(x, axis=(0, 2)), (3, 3, 3)),
    ("cumsum", np.cumsum, (3, 5)),
    ("cumsum-axis-neg", lambda x: np.cumsum(x, axis=-2), (3, 5)),
    ("diff", np.diff, (3, 5)),
    ("diff-n2-axis0", lambda x: np.diff(x, n=2, axis=0), (3, 5)),
    ("diff-prepend-scalar", lambda x: np.diff(x, prepend=0.5, axis=-1), (3, 5)),
    ("diff-append-array", lambda x: np.diff(x, axis=0, append=C35[:1]), (3, 5)),
    ("diff-dual-prepend", lambda x: np.diff(C35, axis=0, prepend=x), (1, 5)),
    ("trace", lambda x: np.trace(x), (3, 3)),
    ("trace-offset-axes", lambda x: np.trace(x, 1, -1, 0), (3, 5, 3)),
    ("trace-method", lambda x: (x * C33).trace(), (3, 3)),
    ("max", np.max, (3, 5)),
    ("amax-axis-neg-keepdims", lambda x: np.amax(x, axis=-1, keepdims=True), (3, 5)),
    ("max-axes", lambda x: np.max(x, axis=(0, 2)), (3, 3, 3)),
    ("min", np.min, (5,)),
    ("amin-axis0", lambda x: np.amin(x, axis=0), (3, 5)),
    ("min-method-keepdims", lambda x: x.min(axis=(1, -1), keepdims=True), (3, 3, 3)),
    ("max-method", lambda x: x.max(axis=0), (3, 5)),
    # products
    ("matmul-dual-const", lambda x: x @ C52, (3, 5)),
    ("matmul-const-dual", lambda x: C23 @ x, (3, 5)),
    ("matmul-vector-matrix", lambda x: x @ C53, (5,)),
    ("matmul-matrix-vector", lambda x: C35 @ x, (5,)),
    ("matmul-dual-vector", lambda x: x @ C5, (3, 5)),
    ("matmul-vector-vector", lambda x: x @ x, (5,)),
    ("matmul-dual-dual", lambda x: x @ x.T, (3, 5)),
    ("matmul-ufunc", lambda x: np.matmul(x, C52), (3, 5)),
    ("matmul-stacked-const", lambda x: x @ C33, (3, 3, 3)),
    ("matmul-broadcast-const-dual", lambda x: C2133 @ x, (3, 3, 3)),
    ("matmul-stacked-dual-dual", lambda x: x @ np.swapaxes(x, -1, -2), (3, 3, 3)),
    ("matmul-stacked-vector", lambda x: x @ C3, (3, 3, 3)),
    ("matmul-vector-stacked", lambda x: C3 @ x, (3, 3, 3)),
    ("dot-vectors", lambda x: np.dot(x, C5), (5,)),
    ("dot-matrix-vector", lambda x: np.dot(C35, x), (5,)),
    ("dot-matrices", lambda x: np.dot(x, C52), (3, 5)),
    ("dot-dual-dual", lambda x: np.dot(x.T, x), (3, 5)),
    ("dot-nd-md", lambda x: np.dot(x, C253), (3, 1, 5)),
    ("dot-md-nd", lambda x: np.dot(C253, x), (3, 5)),
    ("dot-scalar", lambda x: np.dot(2.5, x), (5,)),
    ("dot-method", lambda x: x.dot(C53), (5,)),
    ("inner", lambda x: np.inner(x, C25), (3, 5)),
    ("inner-const-dual", lambda x: np.inner(C25, x), (3, 5)),
    ("inner-dual-dual", lambda x: np.inner(x, x), (3, 5)),
    ("inner-scalar", lambda x: np.inner(x, 3.0), (5,)),
    ("outer", lambda x: np.outer(x, C3), (5,)),
    ("outer-const-2d", lambda x: np.outer(C22, x), (5,)),
    ("outer-dual-dual", lambda x: np.outer(x, x), (5,)),
    # selection
    ("where", lambda x: np.where(x > 0, x, C35), (3, 5)),
    ("where-scalar", lambda x: np.where(x > 0, 1.5, x * x), (3, 5)),
    ("where-broadcast", lambda x: np.where(C5 > 0, x, -x), (3, 5)),
    ("where-const-condition", lambda x: np.where(C35 < 0, np.sin(x), x[0]), (3, 5)),
    ("clip", lambda x: np.clip(x, -0.5, 0.5), (3, 5)),
    ("clip-upper-only", lambda x: np.clip(x, None, 0.3), (3, 5)),
    ("clip-array-lower", lambda x: np.clip(x, C35, None), (3, 5)),
    ("clip-keywords", lambda x: np.clip(x, min=-0.2, max=C5), (3, 5)),
    ("clip-dual-bounds", lambda x: np.clip(C35, x - 1, x[0] + 0.5), (3, 5)),
    ("clip-method", lambda x: x.clip(-0.5, 0.5), (3, 5)),
    ("round", lambda x: np.round(3 * x, 1) + x, (3, 5)),
    ("around", lambda x: np.around(x, 2) * 2 + x * x, (5,)),
    ("round-method", lambda x: x.round() + x, (5,)),
    ("diag-vector", np.diag, (5,)),
    ("diag-vector-above", lambda x: np.diag(x, 2), (5,)),
    ("diag-vector-below", lambda x: np.diag(x, k=-1), (5,)),
    ("diag-matrix", np.diag, (3, 5)),
    ("diag-matrix-offset", lambda x: np.diag(x, 1), (3, 5)),
    ("diag-matrix-below", lambda x: np.diag(x, -1), (3, 5)),
    # joining
    ("concatenate", lambda x: np.concatenate([x, C32], axis=-1), (3, 5)),
    ("concatenate-axis0", lambda x: np.concatenate((C25, x, 2 * x)), (3, 5)),
    ("concatenate-none", lambda x: np.concatenate([x, C5, x], axis=None), (3, 5)),
    ("stack", lambda x: np.stack([x, C35, x * x]), (3, 5)),
    ("stack-axis-neg", lambda x: np.stack([C35, x], axis=-1), (3, 5)),
    ("stack-axis1", lambda x: np.stack([x, x], axis=1), (3, 5)),
    ("hstack-1d", lambda x: np.hstack([x, C2]), (5,)),
    ("hstack-2d", lambda x: np.hstack((C32, x)), (3, 5)),
    ("vstack-1d", lambda x: np.vstack([x, C5]), (5,)),
    ("vstack-2d", lambda x: np.vstack([x, C25, x[0]]), (3, 5)),
    # shape and layout
    ("reshape", lambda x: np.reshape(x, (5, 3)), (3, 5)),
    ("reshape-infer", lambda x: np.reshape(x, -1) * C35.ravel(), (3, 5)),
    ("reshape-order-f", lambda x: np.reshape(x, (5, 3), order="F") * C53, (3, 5)),
    ("reshape-method", lambda x: x.reshape(5, 3) @ C3, (3, 5)),
    ("ravel", lambda x: np.ravel(x.T) * C35.ravel(), (3, 5)),
    ("ravel-order-f", lambda x: np.ravel(x, order="F") * C35.ravel(), (3, 5)),
    ("transpose", lambda x: np.transpose(x) * C53, (3, 5)),
    ("transpose-axes-neg", lambda x: np.transpose(x, (-1, 0, 1)), (3, 1, 5)),
    ("transpose-T", lambda x: x.T @ C35, (3, 5)),
    ("transpose-method", lambda x: x.transpose(2, 0, 1), (3, 1, 5)),
    ("swapaxes", lambda x: np.swapaxes(x, 0, -1), (3, 1, 5)),
    ("swapaxes-method", lambda x: x.swapaxes(-2, -1) @ C3, (3, 3, 5)),
    ("moveaxis", lambda x: np.moveaxis(x, 0, -1), (3, 1, 5)),
    ("moveaxis-tuples", lambda x: np.moveaxis(x, (0, -1), (-1, 1)), (3, 1, 5)),
    ("squeeze", np.squeeze, (3, 1, 5)),
    ("squeeze-axis-neg", lambda x: np.squeeze(x, axis=-2), (3, 1, 5)),
    ("squeeze-method", lambda x: x.squeeze(), (1, 5, 1)),
    ("expand-dims", lambda x: np.expand_dims(x, 0), (3, 5)),
    ("expand-dims-axes", lambda x: np.expand_dims(x, (-1, 1)), (3, 5)),
    ("flip", np.flip, (3, 5)),
    ("flip-axis-neg", lambda x: np.flip(x, -1) * C35, (3, 5)),
    ("flip-axes", lambda x: np.flip(x, (0, 2)), (3, 1, 5)),
    ("broadcast-to", lambda x: np.broadcast_to(x, (3, 5)) * C35, (5,)),
    ("broadcast-to-3d", lambda x: np.broadcast_to(x, (2, 3, 4, 5)), (3, 1, 5)),
    ("atleast-1d", lambda x: np.atleast_1d(x) * C3, ()),
    ("atleast-2d", lambda x: np.atleast_2d(x) * C35, (5,)),
    ("atleast-2d-scalar", lambda x: np.atleast_2d(x * x), ()),
    ("copy", lambda x: np.copy(x) * x, (3, 5)),
    ("shape-queries", lambda x: x * (np.size(x) + np.ndim(x) + np.shape(x)[0] + np.size(x, -1)),
     (3, 5)),
    # new arrays shaped like a dual
    ("zeros-like", lambda x: np.zeros_like(x) + x * x, (3, 5)),
    ("ones-like-shape", lambda x: np.ones_like(x, shape=(2, 5)) * x, (5,)),
    ("ones-like-float32", lambda x: np.ones_like(x, dtype=np.float32) * x, (5,)),
    ("empty-like-buffer", lambda x: _fill(np.empty_like(x), np.sin(x)), (3, 5)),
    ("full-like", lambda x: np.full_like(x, 2.5) * x, (3, 5)),
    ("full-like-dual-fill", lambda x: np.full_like(x, x[1]) * x, (5,)),
    ("full-like-dual-row", lambda x: np.full_like(x, x[0] ** 2, shape=(2, 3, 5)), (3, 5)),
    # linear algebra
    ("norm", np.linalg.norm, (5,)),
    ("norm-flattened-3d", np.linalg.norm, (3, 1, 5)),
    ("norm-2", lambda x: np.linalg.norm(x, 2), (5,)),
    ("norm-1", lambda x: np.linalg.norm(x, 1), (5,)),
    ("norm-inf", lambda x: np.linalg.norm(x, np.inf), (5,)),
    ("norm-minus-inf", lambda x: np.linalg.norm(x, -np.inf), (5,)),
    ("norm-3", lambda x: np.linalg.norm(x, 3), (5,)),
    ("norm-half", lambda x: np.linalg.norm(x, 0.5), (5,)),
    ("norm-minus-2", lambda x: np.linalg.norm(x, -2), (5,)),
    ("norm-0", lambda x: np.linalg.norm(x, 0) + x, (5,)),
    ("norm-axis-neg-keepdims", lambda x: np.linalg.norm(x, axis=-1, keepdims=True), (3, 5)),
    ("norm-p-axis0", lambda x: np.linalg.norm(x, 3, axis=0), (3, 5)),
    ("norm-inf-axis-keepdims", lambda x: np.linalg.norm(x, np.inf, -1, True), (3, 5)),
    ("norm-fro", lambda x: np.linalg.norm(x, "fro"), (3, 5)),
    ("norm-matrix-axes", lambda x: np.linalg.norm(x, "fro", axis=(0, -1), keepdims=True),
     (3, 3, 3)),
    ("norm-keepdims-all", lambda x: np.linalg.norm(x, keepdims=True), (3, 5)),
    ("det", lambda x: np.linalg.det(x + 3 * EYE3), (3, 3)),
    ("det-stacked", lambda x: np.linalg.det(x + 3 * EYE3), (3, 3, 3)),
    ("det-mixed", lambda x: np.linalg.det(x @ C33), (3, 3)),
    ("inv", lambda x: np.linalg.inv(x + 3 * EYE3), (3, 3)),
    ("inv-stacked", lambda x: np.linalg.inv(x + 3 * EYE3), (3, 3, 3)),
    ("solve-dual-matrix", lambda x: np.linalg.solve(x + 3 * EYE3, C3), (3, 3)),
    ("solve-dual-rhs", lambda x: np.linalg.solve(C33 + 3 * EYE3, x), (3,)),
    ("solve-dual-rhs-columns", lambda x: np.linalg.solve(C33 + 3 * EYE3, x), (3, 5)),
    ("solve-dual-both", lambda x: np.linalg.solve(x[:, :3] + 3 * EYE3, x[:, 3:]), (3, 5)),
    ("solve-dual-both-vector", lambda x: np.linalg.solve(x[:, :3] + 3 * EYE3, x[:, 4]),
     (3, 5)),
    ("solve-stacked", lambda x: np.linalg.solve(x + 3 * EYE3, C3), (3, 3, 3)),
    ("solve-stacked-rhs", lambda x: np.linalg.solve(C333 + 3 * EYE3, x[..., :2]), (3, 3, 3)),
    ("solve-broadcast-rhs", lambda x: np.linalg.solve(C333 + 3 * EYE3, x), (3, 5)),
]


def _fill(buffer, value):
    buffer[...] = value
    return buffer


@pytest.mark.parametrize("chunk", [None, 2])
@pytest.mark.parametrize("f, shape", [pytest.param(f, s, id=name) for name, f, s in CASES])
def test_jacobian_matches_finite_differences(f, shape, chunk):
    check(f, random(*shape), chunk=chunk)


FLOAT32_CASES = [
    ("sum", lambda x: np.sum(x, axis=-1, keepdims=True)),
    ("prod", lambda x: np.prod(x, axis=0)),
    ("max", lambda x: np.max(x, axis=-1)),
    ("matmul", lambda x: x @ C52.astype(np.float32)),
    ("matmul-dual-dual", lambda x: x @ x.T),
    ("concatenate", lambda x: np.concatenate([x, x * x], axis=-1)),
    ("where-python-scalar", lambda x: np.where(x > 0, x, 0.5)),
    ("clip-python-scalars", lambda x: np.clip(x, -0.5, 0.5)),
    ("norm", lambda x: np.linalg.norm(x, axis=0)),
    ("full-like", lambda x: np.full_like(x, 2.0) * x),
    ("solve", lambda x: np.linalg.solve(x[:, :3] + 3 * np.eye(3, dtype=np.float32), x[:, 3:])),
    ("det", lambda x: np.linalg.det(x[:, :3] + 3 * np.eye(3, dtype=np.float32))),
]


@pytest.mark.parametrize("f", [pytest.param(f, id=name) for name, f in FLOAT32_CASES])
def test_float32_stays_float32(f):
    x = random(3, 5).astype(np.float32)
    value, jac = cyad.value_and_jacobian(f, x, chunk=4)
    assert jac.dtype == np.float32
    assert isinstance(value, float) or value.dtype == np.float32  # a 0-d value comes as a float
    np.testing.assert_allclose(value, f(x.astype(np.float64)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jac, finite_difference_jacobian(f, x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("f, dtype", [
    (lambda x: np.concatenate([x, C35]), np.float64),
    (lambda x: np.stack([x, C35.astype(np.float32)]), np.float32),
    (lambda x: np.where(C35 > 0, x, np.float64(1.0)), np.float64),
    (lambda x: x @ C53, np.float64),
    (lambda x: np.linalg.solve(C33, x[:, 0]), np.float64),
])
def test_mixed_dtypes_promote_like_numpy(f, dtype):
    # inside f the duals promote like NumPy; the results come in the problem's dtype
    x = random(3, 5).astype(np.float32)
    inside = []

    def recorded(x):
        y = f(x)
        inside.append(y.dtype)
        return y

    jac = cyad.jacobian(recorded, x)
    assert inside[0] == dtype
    assert jac.dtype == np.float32
    np.testing.assert_allclose(jac, finite_difference_jacobian(f, x), rtol=1e-5, atol=1e-5)


# -- closed forms -------------------------------------------------------------------

def test_sum_and_mean_gradients():
    x = random(3, 5)
    np.testing.assert_array_equal(cyad.gradient(np.sum, x), np.ones((3, 5)))
    np.testing.assert_allclose(cyad.gradient(np.mean, x), np.full((3, 5), 1 / 15), rtol=1e-15)


@pytest.mark.parametrize("x, expected", [
    ([2.0, 3.0, 5.0], [15.0, 10.0, 6.0]),
    ([2.0, 0.0, 5.0], [0.0, 10.0, 0.0]),
    ([0.0, 3.0, 0.0], [0.0, 0.0, 0.0]),
])
def test_prod_gradient_without_division(x, expected):
    np.testing.assert_array_equal(cyad.gradient(np.prod, np.array(x)), expected)


def test_prod_gradient_along_axis_with_zero():
    x = np.array([[2.0, 0.0], [3.0, 4.0]])
    jac = cyad.jacobian(lambda x: np.prod(x, axis=0), x)
    np.testing.assert_array_equal(jac, [[[3.0, 0.0], [2.0, 0.0]], [[0.0, 4.0], [0.0, 0.0]]])


@pytest.mark.parametrize("reduce, expected", [
    (np.max, [0.0, 0.5, 0.5, 0.0]),
    (np.min, [0.5, 0.0, 0.0, 0.5]),
])
def test_extremes_share_the_derivative_among_equal_elements(reduce, expected):
    # np.maximum's convention (each of two equal operands gets half), as in JAX
    np.testing.assert_array_equal(cyad.gradient(reduce, np.array([1.0, 3.0, 3.0, 1.0])), expected)


def test_extremes_along_an_axis_share_among_equal_elements_of_each_slice():
    x = np.array([[1.0, 3.0, 5.0, 1.0], [0.0, 3.0, 2.0, 1.0]])
    jac = cyad.jacobian(lambda x: np.max(x, axis=0), x)
    expected = np.zeros((4, 2, 4))
    expected[0, 0, 0] = expected[2, 0, 2] = 1.0
    expected[1, :, 1] = expected[3, :, 3] = 0.5
    np.testing.assert_array_equal(jac, expected)


def test_clip_at_its_bounds_follows_the_maximum_minimum_convention():
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    np.testing.assert_array_equal(cyad.gradient(lambda x: np.sum(np.clip(x, 0.0, 1.0)), x),
                                  [0.0, 0.5, 1.0, 0.5, 0.0])


def test_round_has_zero_derivative():
    np.testing.assert_array_equal(cyad.gradient(lambda x: np.sum(np.round(x, 1)), random(5)),
                                  np.zeros(5))


def test_trace_gradient_is_the_identity():
    np.testing.assert_array_equal(cyad.gradient(np.trace, random(3, 3)), np.eye(3))


def test_det_gradient_is_the_cofactor_matrix():
    a = random(3, 3) + 3 * EYE3
    np.testing.assert_allclose(cyad.gradient(np.linalg.det, a),
                               np.linalg.det(a) * np.linalg.inv(a).T, rtol=1e-12)


def test_inv_pushforward():
    a, da = random(3, 3) + 3 * EYE3, random(3, 3, seed=1)
    y = np.linalg.inv(a)
    np.testing.assert_allclose(cyad.pushforward(np.linalg.inv, a, da), -y @ da @ y, rtol=1e-12)


def test_solve_pushforward():
    a, b = random(3, 3) + 3 * EYE3, C3
    da = random(3, 3, seed=1)
    x = np.linalg.solve(a, b)
    np.testing.assert_allclose(cyad.pushforward(lambda a: np.linalg.solve(a, b), a, da),
                               -np.linalg.solve(a, da @ x), rtol=1e-12)


def test_norm_gradient():
    x = random(5)
    np.testing.assert_allclose(cyad.gradient(np.linalg.norm, x), x / np.sqrt(x @ x), rtol=1e-14)


@pytest.mark.parametrize("f", [
    np.linalg.norm,
    lambda x: np.linalg.norm(x, 2),
    lambda x: np.linalg.norm(x, 3),
    lambda x: np.linalg.norm(x, 1),
    lambda x: np.linalg.norm(x, np.inf),
    lambda x: np.linalg.norm(x.reshape(2, 3), "fro"),
    lambda x: np.sum(np.linalg.norm(x.reshape(2, 3), axis=-1)),
])
@pytest.mark.parametrize("chunk", [None, 4])
def test_norm_gradient_at_zero_is_zero(f, chunk):
    np.testing.assert_array_equal(cyad.gradient(f, np.zeros(6), chunk=chunk), np.zeros(6))


def test_norm_of_zero_and_nonzero_parts():
    # the zero row contributes nothing; the other row keeps its exact gradient
    x = np.array([[0.0, 0.0], [3.0, 4.0]])
    grad = cyad.gradient(lambda x: np.sum(np.linalg.norm(x, axis=1)), x)
    np.testing.assert_allclose(grad, [[0.0, 0.0], [0.6, 0.8]], rtol=1e-15)


def test_where_selects_partials():
    x = np.array([-1.0, 2.0, -3.0])
    jac = cyad.jacobian(lambda x: np.where(x > 0, 2 * x, 0.0), x)
    np.testing.assert_array_equal(jac, np.diag([0.0, 2.0, 0.0]))


def test_one_argument_where_reads_values():
    seen = []

    def f(x):
        seen.append(np.where(x > 0))
        return x
    cyad.jacobian(f, np.array([-1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(seen[0][0], [1, 2])


# -- out= ---------------------------------------------------------------------------

@pytest.mark.parametrize("product", [
    lambda x, y: np.matmul(C23, x, out=y),
    lambda x, y: np.dot(C23, x, out=y),
])
def test_products_write_into_a_dual_out(product):
    x = random(3, 5)

    def f(y, x):
        product(x, y)
    jac = cyad.jacobian(f, x, y=np.zeros((2, 5)))
    np.testing.assert_allclose(jac, np.einsum("ik,jl->ijkl", C23, np.eye(5)), rtol=1e-15)


def test_matmul_into_an_operand():
    a = random(3, 3)

    def f(y, x):
        y[...] = x
        np.matmul(y, y, out=y)
    np.testing.assert_allclose(cyad.jacobian(f, a, y=np.zeros((3, 3))),
                               finite_difference_jacobian(lambda x: x @ x, a), rtol=1e-6)


def test_matmul_into_a_plain_array_raises():
    def f(x):
        return np.matmul(x, C52, out=np.empty((3, 2)))
    with pytest.raises(TypeError, match="dual"):
        cyad.jacobian(f, random(3, 5))


# -- what the *_like functions return --------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda x: np.zeros_like(x, dtype=int),
    lambda x: np.ones_like(x, dtype=bool),
    lambda x: np.empty_like(x, dtype=np.int32),
    lambda x: np.full_like(x, 3, dtype=np.int64),
])
def test_like_functions_with_integer_dtypes_return_plain_arrays(make):
    made = []

    def f(x):
        made.append(make(x))
        return x
    cyad.jacobian(f, random(3))
    assert type(made[0]) is np.ndarray and made[0].dtype.kind in "biu"


@pytest.mark.parametrize("make", [np.zeros_like, np.ones_like, np.empty_like,
                                  lambda x: np.full_like(x, 2.0, dtype=np.float32)])
def test_like_functions_with_float_dtypes_return_constant_duals(make):
    def f(x):
        y = make(x)
        assert isinstance(y, cyad.Dual)
        return y
    np.testing.assert_array_equal(cyad.jacobian(f, random(3)), np.zeros((3, 3)))


def test_full_like_with_a_dual_fill_and_integer_dtype_raises():
    with pytest.raises(TypeError, match="float64 or float32"):
        cyad.jacobian(lambda x: np.full_like(x, x[0], dtype=int), random(3))


# -- errors ---------------------------------------------------------------------------

@pytest.mark.parametrize("func", [np.unwrap, np.histogram, np.spacing])
def test_unsupported_function_raises_naming_it(func):
    with pytest.raises(TypeError, match=func.__name__):
        cyad.jacobian(lambda x: func(x), random(3, 3))


@pytest.mark.parametrize("call, function, argument", [
    (lambda x: np.sum(x, 0, np.float32), "numpy.sum", "dtype"),
    (lambda x: np.var(x, where=x > 0), "numpy.var", "where"),
    (lambda x: np.nansum(x, initial=2.0), "numpy.nansum", "initial"),
    (lambda x: np.cumsum(x, dtype=np.float64), "numpy.cumsum", "dtype"),
    (lambda x: np.quantile(x, 0.5, weights=np.ones(3)), "numpy.quantile", "weights"),
    (lambda x: np.concatenate([x, x], dtype=np.float64), "numpy.concatenate", "dtype"),
    (lambda x: np.clip(x, 0, 1, casting="unsafe"), "numpy.clip", "casting"),
    (lambda x: np.reshape(x, -1, copy=True), "numpy.reshape", "copy"),
    (lambda x: np.zeros_like(x, order="F"), "numpy.zeros_like", "order"),
])
def test_unsupported_argument_raises_naming_function_and_argument(call, function, argument):
    with pytest.raises(TypeError, match=f"{function} does not support the argument '{argument}'"):
        cyad.jacobian(call, random(3, 3))


def _sum_into_first_row(x):
    y = x * 1.0
    np.sum(y, axis=0, out=y[0])    # out overlaps the operand it reduces
    return y


def _clip_in_place(x):
    y = x * 1.0
    np.clip(y, -0.5, 0.5, out=y)
    return y


def _trace_into_a_corner(x):
    y = x * 1.0
    np.trace(y, out=y[1, 1, ...])
    return y


def _cumsum_positional_out(x):
    y = x * 1.0
    np.cumsum(y, 1, None, y)
    return y


def _matmul_in_place(x):
    y = x * 1.0
    np.matmul(y, y, out=y)
    return y


@pytest.mark.parametrize("call", [_sum_into_first_row, _clip_in_place, _trace_into_a_corner,
                                  _cumsum_positional_out, _matmul_in_place])
def test_out_may_overlap_the_operands(call):
    # out= of a NumPy function: the result is computed apart, then copied, as in NumPy
    x = random(3, 3)
    np.testing.assert_allclose(cyad.jacobian(call, x), finite_difference_jacobian(call, x),
                               rtol=1e-6, atol=1e-8)


def test_out_of_the_wrong_shape_is_refused():
    with pytest.raises(ValueError, match="shape"):
        cyad.jacobian(lambda x: np.sum(x, out=x), random(3, 3))
    with pytest.raises(TypeError, match="plain ndarray"):
        cyad.jacobian(lambda x: np.sum(x, axis=0, out=np.zeros(3)), random(3, 3))


@pytest.mark.parametrize("call", [
    lambda x: np.sum(x, out=None),
    lambda x: np.sum(x, 0, None, None, True),
    lambda x: np.concatenate([x, x], 0, None),
    lambda x: np.reshape(x, -1, copy=None),
    lambda x: np.ones_like(x, None, "K", True, None),
])
def test_unsupported_arguments_at_their_default_are_accepted(call):
    x = random(3, 3)
    np.testing.assert_allclose(cyad.jacobian(call, x), finite_difference_jacobian(call, x),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("call, match", [
    (lambda x: np.reshape(x, -1, order="A"), "order 'C' and 'F', not 'A'"),
    (lambda x: np.ravel(x, order="K"), "order 'C' and 'F', not 'K'"),
])
def test_unsupported_options_raise(call, match):
    with pytest.raises(TypeError, match=match):
        cyad.jacobian(call, random(3, 3))


@pytest.mark.parametrize("combine", [
    lambda x, old: np.concatenate([x, old]),
    lambda x, old: np.stack([old, x]),
    lambda x, old: x @ old,
    lambda x, old: np.dot(old, x),
    lambda x, old: np.where(x > 0, x, old),
    lambda x, old: np.linalg.solve(np.diag(x) + 3 * EYE3, old),
    lambda x, old: np.full_like(x, old[0]),
])
def test_duals_of_two_differentiations_cannot_be_combined(combine):
    leaked = []
    cyad.jacobian(lambda x: leaked.append(x) or x, random(3))
    with pytest.raises(TypeError, match="valid only inside the call that made it"):
        cyad.jacobian(lambda x: combine(x, leaked[0]), random(3))


def test_shape_queries_read_the_values():
    seen = []

    def f(x):
        seen.append((np.shape(x), np.ndim(x), np.size(x), np.size(x, 0)))
        return x
    cyad.jacobian(f, random(3, 1, 5), chunk=2)
    assert seen[0] == ((3, 1, 5), 3, 15, 3)


def test_atleast_with_several_arguments():
    def f(x):
        a, b, c = np.atleast_2d(x[0], x, C3)
        assert a.shape == (1, 1) and b.shape == (1, 3) and type(c) is np.ndarray
        return a * b * c
    x = random(3)
    np.testing.assert_allclose(cyad.jacobian(f, x),
                               finite_difference_jacobian(lambda x: x[0] * x * C3, x)[None],
                               rtol=1e-6, atol=1e-8)


def test_implementations_mirror_numpy_signatures():
    # positional parameters are NumPy's, in NumPy's order; keywords are NumPy's names
    for func, implementation in HANDLED_FUNCTIONS.items():
        ours = inspect.signature(implementation.__wrapped__).parameters.values()
        theirs = list(inspect.signature(func).parameters.values())
        positional = [p.name for p in ours if p.kind is not p.KEYWORD_ONLY]
        assert positional == [p.name for p in theirs[:len(positional)]], func.__name__
        assert {p.name for p in ours} <= {p.name for p in theirs}, func.__name__


@pytest.mark.parametrize("n, dtype", [(4, np.float32), (4, np.float64), (90, np.float64)])
def test_matrix_times_dual_vector_small_and_large(n, dtype):
    # A @ x runs as a plain loop when small and through BLAS when large
    a = np.random.default_rng(n).standard_normal((n + 1, n)).astype(dtype)
    x = np.random.default_rng(1).standard_normal(n).astype(dtype)
    value, jac = cyad.value_and_jacobian(lambda x: a @ x, x)
    np.testing.assert_allclose(value, a @ x, rtol=1e-5 if dtype == np.float32 else 1e-13)
    np.testing.assert_array_equal(jac, a)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sum_of_all_elements_rounds_like_numpy(dtype):
    # the compiled np.sum / .sum() of a whole dual gives np.sum's value to the last bit
    rng = np.random.default_rng(5)
    for n in [1, 7, 8, 9, 127, 128, 129, 130, 300, 1000, 4097]:
        a = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)).astype(dtype)
        seen = []

        def both_sums(x, seen=seen):
            seen.append((np.sum(x), x.sum()))
            return seen[-1][0]

        g = cyad.gradient(both_sums, a, engine="dual")
        for total in seen[0]:
            assert total.values.dtype == dtype
            assert total.values[()] == np.sum(a)
        np.testing.assert_array_equal(g, np.ones(n, dtype))
