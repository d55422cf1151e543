"""Every NumPy function of the primitive table, at every order, against JAX.

One scenario per function (or a few, for its spellings) runs f on dual arrays and on
JAX's arrays; every scenario is crossed with the orders: the Jacobian (first order),
the Hessian, Hessian-vector products and the second derivative along a line (second
order), and a derivative taken inside a derivative (nested), in float64 and float32, on
every engine (`ENGINES` of tests/scenarios.py).
A new table entry is tested by adding its scenario: `test_every_function_has_a_scenario`
holds every supported NumPy function to one, and `test_scenarios_call_what_they_cover`
checks that each scenario calls the functions it names.
"""
import functools
import warnings

import numpy as np
import pytest
import scipy_programs
from derivative_references import assert_matches, exact_in_float32, jax, references, seeded
from scenarios import ENGINES

import cyad
from cyad._dual.functions import HANDLED_FUNCTIONS

# one worker of a parallel run runs them all (pytest -n with --dist loadgroup), so that
# their references, computed once per process, are computed once
pytestmark = pytest.mark.xdist_group("test_primitives")


class Scenario:
    def __init__(self, name, covers, n, program, scale=1.0, shift=0.0):
        self.name, self.covers, self.program = name, covers, program
        self.point = exact_in_float32(shift + scale * seeded(name).standard_normal(n))

    def __repr__(self):
        return self.name


def constant(name, *shape):
    """A constant of the scenarios, exact in float32."""
    return exact_in_float32(seeded(name).standard_normal(shape))


K3 = constant("K3", 3)
K4 = constant("K4", 4)
K33 = constant("K33", 3, 3)
K34 = constant("K34", 3, 4)
K43 = constant("K43", 4, 3)
K234 = constant("K234", 2, 3, 4)
XP = np.linspace(-2.0, 2.0, 6)   # interpolation knots


def c(xp, x, a):
    """Constant a in x's dtype, as an array of xp."""
    return xp.asarray(a, dtype=x.dtype)


def m33(xp, x, shift=0.0):
    """A well-conditioned 3 x 3 matrix from the first nine elements of x."""
    return x[:9].reshape(3, 3) + shift * xp.eye(3, dtype=x.dtype)


def spd(xp, x):
    """A symmetric positive definite 3 x 3 matrix from x, eigenvalues well apart."""
    a = m33(xp, x)
    return a @ a.T + c(xp, x, np.diag([1.0, 2.5, 4.0]))


def _like_functions(xp, x):
    y = xp.zeros_like(x) + x * xp.ones_like(x) + xp.full_like(x, 0.5) * x * x
    if xp is np:   # buffers written in place; JAX's arrays are immutable
        e = np.empty_like(x)
        np.copyto(e, x ** 3)
        np.copyto(e, -x, where=np.arange(x.size) % 2 == 0)
        return y + e
    return y + xp.where(np.arange(x.size) % 2 == 0, -x, x ** 3)


def _queries(xp, x):
    a = x.reshape(3, 4)
    return a * (xp.size(a) + xp.ndim(a) + xp.shape(a)[1]) + xp.round(a * 3.0) + xp.around(a, 1)


def _positions(xp, x):
    # positions, orders and counts read off x, used as indices and factors
    above = xp.maximum(x - 0.3, 0.0)
    y = x[xp.argsort(x)] * x[xp.argmax(x)] + x[xp.argmin(x)] * xp.count_nonzero(above)
    return y + x[xp.searchsorted(c(xp, x, XP), x) % 12] * (1.0 + xp.any(above) + xp.all(x))


def _interp(xp, x):
    fp = xp.sin(x[6:12] * 0.7) + c(xp, x, XP)
    return xp.interp(x[:6] * 0.9, c(xp, x, XP), fp) + xp.interp(x[:6], c(xp, x, XP), fp,
                                                                left=x[0], right=-x[1])


def _eigh(xp, x):
    w, v = xp.linalg.eigh(spd(xp, x))
    return w * w + xp.sum(v * v * c(xp, x, K33), axis=0)   # squares: the vectors' signs drop


def _gaussian(xp, x):
    s = spd(xp, x)
    r = x[9:12] - c(xp, x, K3)
    return -0.5 * (r @ xp.linalg.solve(s, r)) - 0.5 * xp.linalg.slogdet(s)[1]


def _gaussian_by_cholesky(xp, x):
    low = xp.linalg.cholesky(spd(xp, x))
    z = xp.linalg.solve(low, x[9:12] - c(xp, x, K3))
    return -0.5 * (z @ z) - xp.sum(xp.log(xp.abs(xp.diagonal(low))) if xp is not np
                                   else np.log(np.abs(np.diag(low))))


# -- statistics, ufunc methods and stencils ------------------------------------------------------

NAN_AT = np.arange(12) % 5 == 1   # one NaN in each row of a 3 x 4 reshape
ZERO_AT = np.arange(12) % 7 == 3  # an exact zero in a cumulative product
COORDINATES = np.array([0.0, 0.5, 1.5, 1.75])


def flat(xp, *arrays):
    return xp.concatenate([xp.ravel(a) for a in arrays])


def method(xp, a, name):
    """a.name: the array's method on NumPy's side, the function on JAX's (whose methods drop
    some arguments, such as initial= of .sum)."""
    return getattr(a, name) if xp is np else functools.partial(getattr(xp, name), a)


def _with_nans(xp, x):
    return xp.where(NAN_AT, xp.nan, x).reshape(3, 4)


def _gradient_second_order_edges(xp, f, dx):
    # np.gradient(f, dx, axis=1, edge_order=2), written out (jax.numpy has edge order 1)
    first = (-1.5 * f[:, :1] + 2.0 * f[:, 1:2] - 0.5 * f[:, 2:3]) / dx
    last = (0.5 * f[:, -3:-2] - 2.0 * f[:, -2:-1] + 1.5 * f[:, -1:]) / dx
    return xp.concatenate([first, (f[:, 2:] - f[:, :-2]) / (2.0 * dx), last], axis=1)


def _gradients(xp, x):
    f = xp.sin(x).reshape(3, 4) * x[:4]
    coordinates = c(xp, x, COORDINATES)
    uniform = xp.gradient(f, 0.5, coordinates)
    along = xp.gradient(f * f, coordinates * x[5] ** 2, axis=1)
    second = (xp.gradient(f, 0.25, axis=1, edge_order=2) if xp is np
              else _gradient_second_order_edges(xp, f, 0.25))
    return flat(xp, *uniform, along, second, xp.gradient(x[:5] ** 3))


def _convolutions(xp, x):
    long, short = x[:8] * x[8], x[8:] ** 2
    return flat(xp, *[f(a, b, mode=m) for f in (xp.convolve, xp.correlate)
                      for a, b in ((long, short), (short, long), (x[:4], x[4:8]))
                      for m in ("full", "same", "valid")])


def _reduce(xp, x):
    a = x.reshape(3, 4)
    if xp is np:
        divided = np.divide.reduce(a + 3.0, axis=1)
        hypot = np.hypot.reduce(a, axis=0)
    else:
        divided = (a[:, 0] + 3.0) / xp.prod(a[:, 1:] + 3.0, axis=1)
        hypot = xp.sqrt(xp.sum(a * a, axis=0))
    return flat(xp, xp.add.reduce(a ** 2, axis=1), xp.multiply.reduce(a, axis=0),
                xp.maximum.reduce(x), xp.minimum.reduce(a, axis=1, keepdims=True),
                xp.add.reduce(a, axis=None), xp.subtract.reduce(a, axis=1), divided,
                xp.logaddexp.reduce(a, axis=1), hypot)


def _accumulate(xp, x):
    a = x.reshape(3, 4)
    if xp is np:
        logaddexp = np.logaddexp.accumulate(a, axis=1)
        subtract = np.subtract.accumulate(a, axis=1)
    else:
        logaddexp = xp.log(xp.cumsum(xp.exp(a), axis=1))
        subtract = xp.concatenate([a[:, :1], a[:, :1] - xp.cumsum(a[:, 1:], axis=1)], axis=1)
    return flat(xp, xp.add.accumulate(a, axis=1), xp.multiply.accumulate(a * 1.5, axis=0),
                xp.maximum.accumulate(a ** 3, axis=1), xp.minimum.accumulate(x),
                logaddexp, subtract)


def _ufunc_at(xp, x):
    index = np.array([0, 2, 2, 4, 0, 2])
    if xp is np:
        a = x[:5] * 1.0
        np.add.at(a, index, x[5:11] ** 2)
        np.multiply.at(a, [1, 3, 1], x[:3])
        np.maximum.at(a, [4, 4], x[9:11] * 2.0)
        np.negative.at(a, [1])
        m = x.reshape(3, 4) * 1.0
        np.subtract.at(m, (np.array([0, 2, 0]), np.array([1, 1, 1])), x[[3, 7, 8]])
        return flat(np, a, m)
    a = x[:5] * 1.0
    a = a.at[index].add(x[5:11] ** 2)
    for i, j in zip([1, 3, 1], range(3)):   # (JAX differentiates no repeated products)
        a = a.at[i].multiply(x[j])
    a = a.at[np.array([4, 4])].max(x[9:11] * 2.0)
    a = a.at[1].multiply(-1.0)
    m = x.reshape(3, 4).at[np.array([0, 2, 0]), np.array([1, 1, 1])].add(-x[np.array([3, 7, 8])])
    return flat(xp, a, m)


def _qr(xp, x):
    # products of a column of Q and a row of R keep their signs, which LAPACK chooses
    tall, wide = x[:12].reshape(4, 3), x[12:24].reshape(3, 4) + 2.0 * c(xp, x, np.eye(3, 4))
    q, r = xp.linalg.qr(tall)
    qw, rw = xp.linalg.qr(wide)
    qc, rc = xp.linalg.qr(wide[:, :3], mode="complete")
    return flat(xp, *[q * q, r * r, q[:, 1:2] * r[1:2, :], qw[:, :1] * rw[:1, :],
                     qc[:, 2:] * rc[2:, :], xp.linalg.qr(tall, mode="r") ** 2])


def _svd(xp, x):
    # singular values, and products of the singular vectors that keep their signs
    tall, wide = x[:12].reshape(4, 3), x[12:24].reshape(3, 4)
    u, s, vh = xp.linalg.svd(tall, full_matrices=False)
    uw, sw, vhw = xp.linalg.svd(wide, full_matrices=False)
    us, ss, vhs = xp.linalg.svd(wide[:, :3])
    return flat(xp, *[s, u * u, vh * vh, u[:, :1] * vh[:1, :], sw, uw[:, 2:] * vhw[2:, :],
                     ss * us[0, 0] * vhs[0, 0], xp.linalg.svd(tall, compute_uv=False),
                     xp.linalg.svdvals(wide) ** 2])


def _nonsymmetric(xp, x):
    # eigenvalues real and apart: 1, 2.5, 4 moved a little
    return 0.2 * m33(xp, x) + c(xp, x, np.diag([1.0, 2.5, 4.0]))


def _eigenpairs_by_newton(a):
    """JAX's eigenpairs of a real matrix with real eigenvalues, differentiable to any order:
    Newton's method on (A - w I) v = 0, |v|**2 = 1 from JAX's eig taken as a constant (JAX
    does not differentiate its non-symmetric eig twice). From the exact pairs, each step
    doubles the order of the derivatives that are exact: three steps give the second."""
    import jax.numpy as jnp

    n = a.shape[-1]
    w, v = (jnp.real(r) for r in jnp.linalg.eig(jax.lax.stop_gradient(a)))
    for _ in range(3):
        columns = []
        for i in range(n):
            jacobian = jnp.block([[a - w[i] * jnp.eye(n), -v[:, i:i + 1]],
                                  [v[:, i][None, :], jnp.zeros((1, 1))]])
            residual = jnp.concatenate([a @ v[:, i] - w[i] * v[:, i],
                                        0.5 * (v[:, i] @ v[:, i] - 1.0)[None]])
            columns.append(jnp.concatenate([v[:, i], w[i][None]])
                           - jnp.linalg.solve(jacobian, residual))
        pairs = jnp.stack(columns, axis=1)
        v, w = pairs[:n], pairs[n]
    return w, v


def _eig(xp, x):
    a = _nonsymmetric(xp, x)
    if xp is np:
        w, v = np.linalg.eig(a)
        values = np.linalg.eigvals(a.T * x[0])
    else:
        w, v = _eigenpairs_by_newton(a)
        values = _eigenpairs_by_newton(a.T * x[0])[0]
    return flat(xp, *[w, v * v, values ** 2])


def _lstsq(xp, x):
    tall, wide = x[:12].reshape(4, 3), x[12:24].reshape(3, 4)
    b = x[12:20].reshape(4, 2) ** 2
    x_tall, residuals, rank, s = xp.linalg.lstsq(tall, b)
    x_vector, residual, _, _ = xp.linalg.lstsq(tall, x[20:24])
    x_wide, _, _, s_wide = xp.linalg.lstsq(wide, x[:3] * x[3:6])
    if xp is not np:   # NumPy's residuals (JAX's numpy_resid does not trace)
        residuals = xp.sum((b - tall @ x_tall) ** 2, axis=0)
        residual = xp.sum((x[20:24] - tall @ x_vector) ** 2, keepdims=True)
    return flat(xp, *[x_tall * rank, residuals, s, x_vector, residual, x_wide, s_wide ** 2])


def _norms(xp, x):
    a = x[:12].reshape(3, 4)
    b = x[:24].reshape(2, 3, 4)
    orders = (1, -1, np.inf, -np.inf, 2, -2, "nuc", "fro")
    return flat(xp, *[xp.stack([xp.linalg.norm(a, order) for order in orders]),
                     xp.linalg.norm(b, 1, axis=(2, 1)),
                     xp.linalg.norm(b, np.inf, axis=(0, 2), keepdims=True),
                     xp.linalg.norm(x[:5], -1.5) + xp.linalg.norm(x[:5], 0.5)
                     + xp.linalg.norm(x[:5], 0),
                     xp.linalg.vector_norm(b, axis=(0, 2), ord=3),
                     xp.linalg.vector_norm(a, ord=-np.inf, keepdims=True),
                     xp.linalg.matrix_norm(b, ord="nuc"), xp.linalg.matrix_norm(b, keepdims=True),
                     xp.linalg.matrix_norm(a, ord=-1)])


def _cross(xp, x):
    # 3-vectors along any axis; 2-vectors (deprecated by NumPy 2, still computed)
    a, b = x[:12].reshape(4, 3), x[12:24].reshape(4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        two = [xp.cross(a[:, :2], b[:, :2]), xp.cross(a[:, :2], b), xp.cross(a, b[:, :2])]
    return flat(xp, *[xp.cross(a, b), xp.cross(a.T, b, axisa=0),
                     xp.cross(a, b.T, axisb=0, axisc=0), xp.cross(a.T, b.T, axis=0),
                     xp.linalg.cross(a, b * b)] + two)


def _tensor_solvers(xp, x):
    a = (x[:16].reshape(4, 4) + 4.0 * xp.eye(4, dtype=x.dtype)).reshape(2, 2, 4)
    b = x[:4].reshape(2, 2) ** 2
    return flat(xp, *[xp.linalg.tensorsolve(a, b),
                     xp.linalg.tensorsolve(xp.moveaxis(a, 2, 0), b, axes=(0,)),
                     xp.linalg.tensorinv(a, ind=2)])
def _partitions(xp, x):
    # only what every partition agrees on: the kth elements, and sums of each side
    p = xp.partition(x ** 2, 3)
    q = xp.partition(x.reshape(3, 4), 2, axis=1)
    return (p[3] * 2.0 + xp.sum(p[:3] ** 2) + xp.sum(p[4:] ** 3) + q[:, 2] * xp.sum(q[:, :2])
            + x[xp.argpartition(x, 4)[4]] * xp.sum(q[:, 3:]))


def _not_finite(xp, x):
    y = xp.where(x > 0.5, xp.inf, x ** 2)
    return xp.where(x < -0.5, -xp.inf, xp.where(xp.abs(x) < 0.2, xp.nan, y))


# -- functions NumPy dispatches less often -------------------------------------------------------

KEEP_ROWS = np.array([True, False, True])
EVERY_THIRD = np.arange(12).reshape(3, 4) % 3 == 0


def _compressed(xp, condition, a, axis=None):
    # (JAX's compress reads the condition as a traced value under jit: np.take of its positions)
    if xp is np:
        return np.compress(condition, a, axis)
    return xp.take(a, np.nonzero(condition)[0], axis)


def _extracted(xp, condition, a):
    if xp is np:
        return np.extract(condition, a)
    return xp.ravel(a)[np.nonzero(np.ravel(condition))[0]]


def _logspace_of_bases(xp, start, stop, base):
    # an array of bases takes an axis of its own (NumPy 2's rule; JAX's logspace differs)
    if xp is np:
        return np.logspace(start, stop, 3, base=base)
    return base[None] ** xp.linspace(start, stop, 3)[:, None, None]


def _ranges(xp, x):
    return flat(xp, xp.linspace(x[0], x[1] ** 2, 5), xp.linspace(x[:2], x[2:4] * x[4], 4, axis=1),
                xp.linspace(0.5, x[5], 3, endpoint=False),
                xp.linspace(x[0], x[1], 4, retstep=True)[1],
                xp.logspace(x[:2] * 0.3, x[2], 4), xp.logspace(x[3], x[4], 3, base=2.0),
                _logspace_of_bases(xp, x[3], x[4], x[5:7, None] ** 2 + 1.0),
                xp.geomspace(x[6] ** 2 + 0.5, x[7] ** 2 + 2.0, 4),
                xp.geomspace(-(x[8] ** 2 + 1.0), -(x[9] ** 2 + 0.1), 3),
                xp.geomspace(x[:2] ** 2 + 0.5, x[2:4] ** 2 + 2.0, 4, axis=1, endpoint=False))


def _exponents_and_parts(xp, x):
    mantissa, exponent = xp.frexp(x * 5.0)
    return flat(xp, *xp.modf(x * 3.0), mantissa, exponent * x,
                xp.ldexp(x ** 2, np.arange(12) - 6), xp.ldexp(x, 3),
                *xp.divmod(x * 3.0, 0.7), *xp.divmod(2.5, x), *xp.divmod(x[:6], x[6:] ** 2 + 0.5))


def _fits(xp, x):
    knots = c(xp, x, XP)
    fitted, covariance = xp.polyfit(knots, x[6:] * x[0], 2, cov=True)
    full = xp.polyfit(knots, x.reshape(6, 2), 1, full=True)
    return flat(xp, xp.vander(x[:4]), xp.vander(x[:3] * 2.0, 5, increasing=True),
                xp.polyfit(knots + 0.1 * x[:6], x[6:], 2, w=x[:6] ** 2 + 1.0),
                fitted, covariance, full[0], full[1], full[3])


def _like(xp, x):
    """like=x on NumPy's side: np.array hands a list to cyad only then (NEP 35)."""
    return {"like": x} if xp is np else {}


def _dtype_queries(xp, x):
    if xp is np:
        questions = (np.result_type(x, np.float64) == np.float64, np.result_type(x, 1.0) == x.dtype,
                     np.can_cast(x, np.float64), np.can_cast(x, np.int32),
                     np.dtype(np.min_scalar_type(x)) == x.dtype,
                     np.dtype(np.min_scalar_type(x[0] * 0.0)) == np.float16)
    else:
        questions = (True, True, True, False, True, True)
    return x * (1.0 + sum(2 ** i * bool(q) for i, q in enumerate(questions)))


SCENARIOS = [
    # reductions
    Scenario("sum", [np.sum], 12, lambda xp, x: xp.sum(x.reshape(3, 4) ** 2 * c(xp, x, K34),
                                                         axis=0)),
    Scenario("sum-axes-keepdims", [np.sum], 12,
             lambda xp, x: xp.sum(xp.sin(x).reshape(2, 3, 2), axis=(0, -1), keepdims=True)),
    Scenario("mean", [np.mean], 12,
             lambda xp, x: xp.mean(x.reshape(3, 4) * x[:4], axis=-1) + xp.mean(x ** 3)),
    Scenario("var-std", [np.var, np.std], 12,
             lambda xp, x: xp.var(x.reshape(3, 4) ** 2, axis=1)
             + xp.std(x.reshape(3, 4), axis=1, ddof=1)),
    Scenario("var-std-methods", [np.var, np.std], 12,
             lambda xp, x: x.reshape(3, 4).var(axis=0, keepdims=True) * x.std()),
    Scenario("prod", [np.prod], 12,
             lambda xp, x: xp.prod(x.reshape(3, 4), axis=1) + xp.prod(x[:5])),
    Scenario("prod-keepdims", [np.prod], 12,
             lambda xp, x: xp.prod(x.reshape(2, 3, 2), axis=(0, 2), keepdims=True)),
    Scenario("max-min", [np.max, np.min], 12,
             lambda xp, x: xp.max(x.reshape(3, 4) * x[:4], axis=0)
             - xp.min(x.reshape(3, 4) ** 3, axis=1, keepdims=True).reshape(3, 1)),
    Scenario("amax-amin", [np.amax, np.amin], 12,
             lambda xp, x: xp.amax(x * x) * xp.amin(xp.sin(x.reshape(2, 6)), axis=-1)),
    Scenario("cumsum", [np.cumsum], 12,
             lambda xp, x: xp.cumsum(x.reshape(3, 4) * x[:4], axis=0).ravel()
             + xp.cumsum(x ** 2)),
    Scenario("diff", [np.diff], 12,
             lambda xp, x: xp.diff(x.reshape(3, 4) ** 2, n=2, axis=1).ravel()),
    Scenario("diff-prepend-append", [np.diff], 12,
             lambda xp, x: xp.diff(x.reshape(3, 4) ** 2, axis=0, prepend=0.5,
                                   append=x[:4].reshape(1, 4) ** 3)),
    Scenario("trace", [np.trace], 12,
             lambda xp, x: xp.trace(m33(xp, x) @ m33(xp, x)) * xp.trace(x.reshape(3, 4), 1)),
    # products
    Scenario("matmul", [np.matmul], 12,
             lambda xp, x: (x.reshape(3, 4) @ x.reshape(4, 3)) @ c(xp, x, K3)
             + c(xp, x, K34) @ (x[:4] * x[4:8]) + x[:4] @ x[8:12]),
    Scenario("matmul-stacked", [np.matmul], 12,
             lambda xp, x: xp.matmul(x.reshape(2, 3, 2), xp.swapaxes(x.reshape(2, 3, 2), -1, -2))),
    Scenario("dot-inner-outer", [np.dot, np.inner, np.outer], 12,
             lambda xp, x: xp.dot(x.reshape(3, 4), x[:4]) * xp.inner(x[:3], x[3:6])
             + xp.outer(x[:3], x[9:12] ** 2).sum(axis=0)),
    Scenario("tensordot", [np.tensordot], 12,
             lambda xp, x: xp.tensordot(x.reshape(3, 4), c(xp, x, K234), ([0, 1], [1, 2]))
             + xp.tensordot(x.reshape(2, 3, 2), x.reshape(3, 2, 2), axes=([1, 2], [0, 1])).sum()),
    Scenario("einsum", [np.einsum], 12,
             lambda xp, x: xp.einsum("ij,jk->ik", x.reshape(3, 4), x.reshape(4, 3))
             + xp.einsum("ij,ij", x.reshape(3, 4), x.reshape(3, 4) ** 2)),
    Scenario("einsum-spellings", [np.einsum], 12,
             lambda xp, x: xp.einsum("ii->i", m33(xp, x) @ m33(xp, x))
             + xp.einsum("...ij,...j->...i", x.reshape(2, 2, 3)[:1, :, :].reshape(2, 3)[None],
                         x[:3][None], optimize=True)[0, :1]
             + xp.einsum("i,j,j", x[:3], x[3:6], x[6:9])),
    Scenario("einsum-ellipses", [np.einsum], 24, lambda xp, x: flat(
        xp, xp.einsum("j...k,lj...->lk...", x[:4].reshape(2, 2), x[4:12].reshape(2, 2, 2)),
        xp.einsum("jk...,lj...->lk...", x[:6].reshape(3, 2), x[:24].reshape(2, 3, 4) ** 2),
        xp.einsum("i...j,j...->...i", x[:24].reshape(3, 2, 4, 1), x[8:12].reshape(1, 4)),
        xp.einsum("a...b,b", x[:24].reshape(2, 3, 4), x[20:24] ** 3),
        xp.einsum("...i,...i->...", x[:12].reshape(3, 1, 4), x[4:24].reshape(5, 4)),
        xp.einsum("i...i,...->i...", x[:18].reshape(3, 2, 3), x[18:20]),
        xp.einsum("ij,jk->ik", x[:3].reshape(3, 1), x[3:11].reshape(4, 2)))),
    Scenario("einsum-sublists", [np.einsum], 12, lambda xp, x: flat(
        xp, xp.einsum(x.reshape(3, 4), [0, 1], x[4:12].reshape(4, 2) ** 2, [1, 30], [30, 0]),
        xp.einsum(x.reshape(3, 4), [Ellipsis, 1], x[:4], [1]),
        xp.einsum(x.reshape(3, 4), [0, 1], x.reshape(3, 4), [0, 1]))),
    Scenario("kron", [np.kron], 12,
             lambda xp, x: xp.kron(x[:4].reshape(2, 2), x[4:10].reshape(2, 3))
             + xp.sum(xp.kron(x[10:12], c(xp, x, K3)))),
    # selection and ordering
    Scenario("where", [np.where], 12,
             lambda xp, x: xp.where(x > 0, x ** 2, xp.sin(x)) + xp.where(x < 0.3, 1.5, x * x)),
    Scenario("clip", [np.clip], 12,
             lambda xp, x: xp.clip(x, -0.5, 0.5) * x + xp.clip(x * x, None, 0.3)),
    Scenario("sort", [np.sort], 12,
             lambda xp, x: xp.sort(x.reshape(3, 4) ** 3, axis=1) * c(xp, x, K34)
             + xp.sort(x * x, axis=None).reshape(3, 4)),
    Scenario("take-along-axis", [np.take_along_axis], 12,
             lambda xp, x: xp.take_along_axis(x.reshape(3, 4) ** 2,
                                              np.array([[3, 0], [1, 1], [2, 0]]), axis=1)),
    Scenario("interp", [np.interp], 12, _interp),
    Scenario("positions", [np.argsort, np.argmax, np.argmin, np.searchsorted, np.count_nonzero,
                           np.any, np.all], 12, _positions),
    Scenario("diag", [np.diag], 12,
             lambda xp, x: xp.diag(x[:3] ** 2) @ c(xp, x, K34)
             + xp.diag(x.reshape(3, 4), 1)[:, None]),
    Scenario("round-and-queries", [np.shape, np.ndim, np.size, np.round, np.around], 12,
             _queries),
    # joining, shape and layout
    Scenario("concatenate-stack", [np.concatenate, np.stack], 12,
             lambda xp, x: xp.concatenate([x.reshape(3, 4), xp.stack([x[:4] ** 2, c(xp, x, K4)])],
                                          axis=0).ravel()[:12]
             + xp.concatenate([x[:6].reshape(2, 3), x[6:] ** 2], axis=None)),
    Scenario("hstack-vstack", [np.hstack, np.vstack], 12,
             lambda xp, x: xp.vstack([x[:6], xp.hstack([x[6:9] ** 2, x[9:] * x[0]])])),
    Scenario("atleast", [np.atleast_1d, np.atleast_2d], 12,
             lambda xp, x: xp.atleast_2d(x[:6] ** 2) * xp.atleast_1d(xp.sum(x * x))),
    Scenario("reshape-ravel", [np.reshape, np.ravel], 12,
             lambda xp, x: xp.ravel(xp.reshape(x ** 2, (4, 3)), order="F")
             * xp.reshape(x, (3, -1), order="F").ravel()),
    Scenario("transpose-swapaxes-moveaxis", [np.transpose, np.swapaxes, np.moveaxis], 12,
             lambda xp, x: xp.transpose(x.reshape(2, 3, 2) ** 2, (1, 0, 2))
             + xp.swapaxes(x.reshape(2, 3, 2), 0, 1) * xp.moveaxis(x.reshape(2, 2, 3), -1, 0)),
    Scenario("squeeze-expand-dims", [np.squeeze, np.expand_dims], 12,
             lambda xp, x: xp.squeeze(x.reshape(3, 1, 4, 1) ** 2, axis=(1, 3))
             * xp.expand_dims(x[:4], 0)),
    Scenario("flip-broadcast-copy", [np.flip, np.broadcast_to, np.copy], 12,
             lambda xp, x: xp.flip(x.reshape(3, 4), 1) * xp.broadcast_to(x[:4] ** 2, (3, 4))
             + xp.copy(x.reshape(3, 4)) ** 3),
    Scenario("like-copyto", [np.zeros_like, np.ones_like, np.full_like, np.empty_like,
                             np.copyto], 12, _like_functions),
    # linear algebra
    Scenario("norm", [np.linalg.norm], 12,
             lambda xp, x: xp.linalg.norm(x) * xp.linalg.norm(x.reshape(3, 4), axis=1)
             + xp.linalg.norm(x[:4], 3) + xp.linalg.norm(x.reshape(3, 4), "fro")
             + xp.linalg.norm(x[:4], 1) + xp.linalg.norm(x[:4], np.inf)),
    Scenario("det", [np.linalg.det], 9, lambda xp, x: xp.linalg.det(m33(xp, x, 3.0))),
    Scenario("det-stacked", [np.linalg.det], 12,
             lambda xp, x: xp.linalg.det(x.reshape(3, 2, 2) + 2 * xp.eye(2, dtype=x.dtype))),
    Scenario("slogdet", [np.linalg.slogdet], 9,
             lambda xp, x: xp.linalg.slogdet(m33(xp, x, 3.0))[1]),
    Scenario("inv", [np.linalg.inv], 9, lambda xp, x: xp.linalg.inv(m33(xp, x, 3.0))),
    Scenario("solve", [np.linalg.solve], 12,
             lambda xp, x: xp.linalg.solve(m33(xp, x, 3.0), x[9:12] ** 2)),
    Scenario("solve-matrix-rhs", [np.linalg.solve], 12,
             lambda xp, x: xp.linalg.solve(m33(xp, x, 3.0), c(xp, x, K34) * x[8:12])),
    Scenario("cholesky", [np.linalg.cholesky], 9, lambda xp, x: xp.linalg.cholesky(spd(xp, x))),
    Scenario("eigh", [np.linalg.eigh], 9, _eigh),
    Scenario("eigvalsh", [np.linalg.eigvalsh], 9,
             lambda xp, x: xp.linalg.eigvalsh(spd(xp, x)) ** 2),
    Scenario("gaussian-log-likelihood", [np.linalg.solve, np.linalg.slogdet], 12, _gaussian),
    Scenario("gaussian-log-likelihood-cholesky", [np.linalg.cholesky, np.linalg.solve], 12,
             _gaussian_by_cholesky),
    # custom rules: SciPy's functions outside NumPy's dispatch (their coverage is held by
    # tests/test_scipy_functions.py, as they are not NumPy functions)
    Scenario("scipy-expm", [], 9, scipy_programs.expm, scale=0.7),
    Scenario("scipy-solve_triangular", [], 12, scipy_programs.solve_triangular),
    Scenario("scipy-lu_factor-lu_solve", [], 12, scipy_programs.lu),
    Scenario("scipy-cho_factor-cho_solve", [], 12, scipy_programs.cho),
    Scenario("scipy-solve", [], 12, scipy_programs.solve),
    Scenario("scipy-inv-det-cholesky", [], 9, scipy_programs.inv_det_cholesky),
    Scenario("scipy-logsumexp", [], 12, scipy_programs.logsumexp),
    Scenario("scipy-softmax-log_softmax", [], 12, scipy_programs.softmax),
    Scenario("scipy-polygamma", [], 4, scipy_programs.polygamma),
    Scenario("scipy-multigammaln", [], 4, scipy_programs.multigammaln),
    Scenario("scipy-spherical-bessel", [], 12, scipy_programs.spherical_bessel),
    Scenario("scipy-fft-signal", [], 12, scipy_programs.fourier),
    # statistics, ufunc methods and stencils
    Scenario("ptp-average", [np.ptp, np.average], 12,
             lambda xp, x: flat(xp, xp.ptp(x.reshape(3, 4) ** 3, axis=1),
                                xp.average(x.reshape(3, 4), axis=1, weights=x[:4] ** 2 + 1.0),
                                xp.average(xp.sin(x)),
                                xp.average(x.reshape(2, 3, 2), axis=(0, 2), keepdims=True,
                                           weights=c(xp, x, [[1.0, 2.0], [0.5, 3.0]])),
                                *xp.average(x.reshape(3, 4), axis=0, returned=True,
                                            weights=x[4:7] ** 2 + 0.5))),
    Scenario("cumprod", [np.cumprod, np.cumulative_prod], 12,
             lambda xp, x: flat(xp, xp.cumprod(xp.where(ZERO_AT, 0.0, x).reshape(3, 4), axis=1),
                                xp.cumprod(x * 1.5), x.reshape(3, 4).cumprod(axis=0),
                                xp.cumulative_prod(x[:5] * 2.0, include_initial=True))),
    Scenario("cumulative-sum", [np.cumulative_sum], 12,
             lambda xp, x: flat(xp, xp.cumulative_sum(x.reshape(3, 4) ** 2, axis=1,
                                                      include_initial=True),
                                xp.cumulative_sum(x * x[0]))),
    Scenario("nan-sums", [np.nansum, np.nanprod, np.nancumsum, np.nancumprod], 12,
             lambda xp, x: flat(xp, xp.nansum(_with_nans(xp, x) ** 2, axis=0),
                                xp.nansum(_with_nans(xp, x) * x[0]),
                                xp.nanprod(_with_nans(xp, x), axis=1, keepdims=True),
                                xp.nancumsum(_with_nans(xp, x), axis=1),
                                xp.nancumprod(_with_nans(xp, x) * 1.5, axis=1))),
    Scenario("nan-moments", [np.nanmean, np.nanvar, np.nanstd], 12,
             lambda xp, x: flat(xp, xp.nanmean(_with_nans(xp, x) ** 2, axis=1),
                                xp.nanvar(_with_nans(xp, x), axis=1, ddof=1),
                                xp.nanstd(_with_nans(xp, x) ** 3, axis=0, keepdims=True),
                                xp.nanmean(_with_nans(xp, x)))),
    Scenario("nan-extremes", [np.nanmax, np.nanmin], 12,
             lambda xp, x: flat(xp, xp.nanmax(_with_nans(xp, x) ** 3, axis=1),
                                xp.nanmin(_with_nans(xp, x) * x[0], axis=0),
                                xp.nanmax(_with_nans(xp, x)))),
    Scenario("median", [np.median], 12,
             lambda xp, x: flat(xp, xp.median(x.reshape(3, 4) ** 3, axis=1),
                                xp.median(x[:5] * x[5]), xp.median(x),
                                xp.median(x.reshape(2, 3, 2), axis=(0, 2), keepdims=True))),
    Scenario("quantile-percentile", [np.quantile, np.percentile], 12,
             lambda xp, x: flat(xp, xp.quantile(x.reshape(3, 4) ** 2, c(xp, x, [0.1, 0.5, 0.95]),
                                                axis=1),
                                xp.quantile(x, 0.3), xp.quantile(x.reshape(3, 4), 1.0, axis=0),
                                xp.percentile(x.reshape(3, 4), 62.5, axis=0, keepdims=True),
                                xp.percentile(x * x[0], c(xp, x, [0.0, 20.0, 75.0, 100.0])))),
    Scenario("quantile-methods", [np.quantile, np.percentile], 12,
             lambda xp, x: flat(xp, *[xp.quantile(x.reshape(3, 4), c(xp, x, [0.2, 0.45]),
                                                  axis=1, method=m)
                                      for m in ("lower", "higher", "midpoint", "nearest")],
                                xp.percentile(x, 40.0, method="midpoint"))),
    Scenario("nan-order-statistics", [np.nanmedian, np.nanquantile, np.nanpercentile], 12,
             lambda xp, x: flat(xp, xp.nanmedian(_with_nans(xp, x) ** 3, axis=1),
                                xp.nanmedian(_with_nans(xp, x)),
                                xp.nanquantile(_with_nans(xp, x), c(xp, x, [0.25, 0.9]), axis=1),
                                xp.nanpercentile(_with_nans(xp, x), 60.0, axis=0))),
    Scenario("cov", [np.cov], 12,
             lambda xp, x: flat(xp, xp.cov(x.reshape(3, 4) ** 2),
                                xp.cov(x.reshape(4, 3), x[:8].reshape(4, 2) * x[0], rowvar=False,
                                       ddof=0),
                                xp.cov(x.reshape(3, 4), fweights=np.array([1, 2, 1, 3]),
                                       aweights=np.array([0.5, 1.0, 2.0, 1.5])),
                                xp.cov(x[:6], bias=True))),
    Scenario("corrcoef", [np.corrcoef], 12,
             lambda xp, x: flat(xp, xp.corrcoef(x.reshape(3, 4) ** 3),
                                xp.corrcoef(x[:6], x[6:] * x[0]))),
    Scenario("convolve-correlate", [np.convolve, np.correlate], 12, _convolutions),
    Scenario("gradient", [np.gradient], 12, _gradients),
    Scenario("trapezoid-polyval", [np.trapezoid, np.polyval], 12,
             lambda xp, x: flat(xp, xp.trapezoid(x.reshape(3, 4) ** 2, axis=1),
                                xp.trapezoid(x.reshape(3, 4), x=c(xp, x, COORDINATES)),
                                xp.trapezoid(x.reshape(3, 4), dx=x[0] ** 2, axis=0),
                                xp.trapezoid(x[:6] ** 2, x=xp.cumsum(x[6:] ** 2)),
                                xp.polyval(x[:4], x[4:] * 0.5), xp.polyval(c(xp, x, K3), x[0]))),
    Scenario("sum-prod-where-initial", [np.sum, np.prod], 12,
             lambda xp, x: flat(xp, xp.sum(x.reshape(3, 4) ** 2, axis=1,
                                           where=np.array([True, False, True, True])),
                                xp.sum(x, initial=2.5),
                                method(xp, x.reshape(3, 4), "sum")(axis=0, initial=-1.0,
                                                                   where=x[:4] > 0),
                                xp.prod(x.reshape(3, 4), axis=1, initial=1.5,
                                        where=np.array([True, False, True, True])),
                                xp.prod(x[:4], initial=x[5]),
                                method(xp, x.reshape(3, 4), "prod")(
                                    axis=0, where=np.array([[True], [False], [True]])))),
    Scenario("max-min-mean-where-initial", [np.max, np.min, np.mean], 12,
             lambda xp, x: flat(xp, xp.max(x.reshape(3, 4), axis=1, initial=-0.2,
                                           where=np.array([True, False, True, True])),
                                xp.min(x.reshape(3, 4) ** 3, axis=0, initial=0.1),
                                method(xp, x.reshape(3, 4), "max")(axis=0, initial=0.0),
                                xp.mean(x.reshape(3, 4) ** 2, axis=1,
                                        where=np.array([True, False, True, True])),
                                method(xp, x.reshape(3, 4), "mean")(
                                    axis=0, keepdims=True,
                                    where=x.reshape(3, 4) > xp.min(x.reshape(3, 4), axis=0)))),
    Scenario("ufunc-reduce", [], 12, _reduce),
    Scenario("ufunc-accumulate", [np.cumsum, np.cumprod], 12, _accumulate),
    Scenario("ufunc-outer", [], 12,
             lambda xp, x: flat(xp, xp.multiply.outer(x[:3], x[3:7]),
                                xp.subtract.outer(x[:3] ** 2, x[7:9].reshape(2, 1)))),
    Scenario("ufunc-at", [], 12, _ufunc_at),
    # linear algebra: products, norms, decompositions, least squares
    Scenario("cross", [np.cross, np.linalg.cross], 24, _cross),
    Scenario("vdot-vecdot-outer", [np.vdot, np.linalg.vecdot, np.linalg.outer], 12,
             lambda xp, x: xp.vdot(x.reshape(3, 4), x.reshape(3, 4) ** 2)
             * xp.linalg.vecdot(x.reshape(3, 4), c(xp, x, K34), axis=0)
             + xp.linalg.outer(x[:2], x[2:6]).sum(axis=0)),
    Scenario("vecdot-matvec-vecmat", [np.vecdot, np.matvec, np.vecmat], 12,
             lambda xp, x: xp.vecdot(x.reshape(3, 4), x[:4] ** 2)
             * xp.matvec(x.reshape(3, 4), c(xp, x, K4) * x[4:8])
             + xp.vecmat(x[:3], x.reshape(3, 4))[:3] * xp.vecdot(x[:3], x[3:6])),
    Scenario("linalg-names", [np.linalg.matmul, np.linalg.tensordot, np.linalg.trace,
                              np.matrix_transpose, np.linalg.matrix_transpose], 12,
             lambda xp, x: xp.linalg.matmul(x.reshape(3, 4), xp.matrix_transpose(
                 x.reshape(3, 4) ** 2)) * xp.linalg.trace(x[:8].reshape(2, 2, 2), offset=1)[0]
             + xp.linalg.tensordot(x.reshape(3, 4), c(xp, x, K43), axes=1)
             + xp.linalg.matrix_transpose(c(xp, x, K33) * x[:3])),
    Scenario("multi-dot", [np.linalg.multi_dot], 12,
             lambda xp, x: xp.linalg.multi_dot([x[:3], x[:12].reshape(3, 4),
                                                c(xp, x, K43), x[3:6].reshape(3, 1) ** 2])
             + xp.linalg.multi_dot([x.reshape(4, 3), c(xp, x, K34), x.reshape(4, 3)]).sum()),
    Scenario("matrix-power", [np.linalg.matrix_power], 9,
             lambda xp, x: xp.linalg.matrix_power(m33(xp, x), 5) * 0.1
             + xp.linalg.matrix_power(m33(xp, x, 3.0), -2)
             + xp.linalg.matrix_power(m33(xp, x), 0) * x[0]
             + xp.linalg.matrix_power(m33(xp, x), 3)),
    Scenario("norms", [np.linalg.norm, np.linalg.vector_norm, np.linalg.matrix_norm], 24,
             _norms),
    Scenario("tensorsolve-tensorinv", [np.linalg.tensorsolve, np.linalg.tensorinv], 16,
             _tensor_solvers),
    Scenario("qr", [np.linalg.qr], 24, _qr),
    Scenario("svd", [np.linalg.svd, np.linalg.svdvals], 24, _svd),
    Scenario("eig-eigvals", [np.linalg.eig, np.linalg.eigvals], 9, _eig),
    Scenario("pinv", [np.linalg.pinv], 24,
             lambda xp, x: flat(xp, *[xp.linalg.pinv(x[:12].reshape(4, 3)),
                                     xp.linalg.pinv(x[12:24].reshape(3, 4), rtol=1e-12),
                                     xp.linalg.pinv(m33(xp, x, 3.0)) * x[:3]])),
    Scenario("lstsq", [np.linalg.lstsq], 24, _lstsq),
    Scenario("matrix-rank", [np.linalg.matrix_rank], 12,
             lambda xp, x: x * xp.linalg.matrix_rank(x.reshape(3, 4)) ** 2
             + x * x * xp.linalg.matrix_rank(xp.outer(x[:3], x[3:6]))),
    # shapes: padding, moving, splitting, joining, selecting by conditions; sinc, nan_to_num
    Scenario("take", [np.take], 12,
             lambda xp, x: flat(xp, xp.take(x ** 2, np.array([[0, 11], [5, 5]])),
                                   xp.take(x.reshape(3, 4), np.array([3, 0, 3]), axis=1),
                                   xp.take(x * x[0], np.array([-1, 13]), mode="wrap"),
                                   xp.take(x.reshape(3, 4), np.array([-2, 7]), axis=0,
                                           mode="clip"),
                                   x.reshape(3, 4).take(np.array([2, -1]), axis=-1))),
    Scenario("pad", [np.pad], 12,
             lambda xp, x: flat(xp, xp.pad(x.reshape(3, 4) ** 2, ((1, 2), (0, 1))),
                                   xp.pad(x[:5], 2, constant_values=0.5),
                                   xp.pad(x.reshape(3, 4), 1, mode="edge") * 2.0,
                                   xp.pad(x[:4] ** 3, (3, 2), mode="reflect"),
                                   xp.pad(x.reshape(2, 6), ((1, 1), (2, 0)), mode="symmetric"),
                                   xp.pad(x[:5] * x[5:10], (2, 7), mode="wrap"))),
    Scenario("roll", [np.roll], 12,
             lambda xp, x: flat(xp, xp.roll(x, 3) * x, xp.roll(x.reshape(3, 4), -1, axis=1),
                                   xp.roll(x.reshape(3, 4) ** 2, (1, 2), axis=(0, 1)),
                                   xp.roll(x.reshape(3, 4), 5))),
    Scenario("tile-repeat", [np.tile, np.repeat], 12,
             lambda xp, x: flat(xp, xp.tile(x[:4], 3) * x, xp.tile(x.reshape(3, 4), (2, 1, 2)),
                                   xp.repeat(x[:6] ** 2, 2),
                                   xp.repeat(x.reshape(3, 4), np.array([1, 0, 2, 1]), axis=1),
                                   x[:3].repeat(2))),
    Scenario("flips-rot90", [np.fliplr, np.flipud, np.rot90], 12,
             lambda xp, x: flat(xp, xp.fliplr(x.reshape(3, 4)) * x.reshape(3, 4),
                                   xp.flipud(x.reshape(3, 4) ** 2), xp.rot90(x.reshape(3, 4)),
                                   xp.rot90(x.reshape(2, 3, 2) ** 3, 3, axes=(1, 2)),
                                   xp.rot90(x.reshape(3, 4), -2))),
    Scenario("diagonal-triangles", [np.diagonal, np.diagflat, np.triu, np.tril], 12,
             lambda xp, x: flat(xp, xp.diagonal(x.reshape(3, 4) ** 2, 1),
                                   x.reshape(2, 2, 3).diagonal(0, 1, 2),
                                   xp.diagonal(x.reshape(2, 3, 2), -1, 2, 1),
                                   xp.diagflat(x[:3] * x[3:6], -1), xp.triu(x.reshape(3, 4), 1),
                                   xp.tril(x.reshape(3, 4) ** 2, -1),
                                   xp.triu(x.reshape(2, 2, 3) * x[0]))),
    Scenario("insert-delete-append", [np.insert, np.delete, np.append], 12,
             lambda xp, x: flat(xp, xp.insert(x ** 2, np.array([1, 5]), x[:2]),
                                   xp.insert(x.reshape(3, 4), 1, 0.5, axis=1),
                                   xp.insert(x.reshape(3, 4), 2, x[4:8] ** 3, axis=0),
                                   xp.delete(x * x[1], np.array([1, 3])),
                                   xp.delete(x.reshape(3, 4), 0, axis=0),
                                   xp.append(x, x[:2] ** 2),
                                   xp.append(x.reshape(3, 4), x[:4].reshape(1, 4), axis=0))),
    Scenario("splits", [np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit], 12,
             lambda xp, x: flat(xp, xp.split(x ** 2, 3)[1] * xp.array_split(x, 5)[-1][:1],
                                   xp.split(x.reshape(3, 4), [1, 3], axis=1)[2],
                                   xp.array_split(x.reshape(3, 4), 2)[1],
                                   xp.hsplit(x.reshape(3, 4) ** 3, 2)[1], xp.hsplit(x, [5])[0],
                                   xp.vsplit(x.reshape(4, 3), [1])[1],
                                   xp.dsplit(x.reshape(2, 2, 3), 3)[2] * x[0])),
    Scenario("column-stack-dstack-block", [np.column_stack, np.dstack, np.block], 12,
             lambda xp, x: flat(xp, xp.column_stack([x[:4], x[4:8] ** 2, x.reshape(4, 3)]),
                                   xp.dstack([x.reshape(3, 4), x.reshape(3, 4) ** 2]),
                                   xp.dstack([x[:3], x[3:6]]),
                                   xp.block([[x[:4].reshape(2, 2), x[4:10].reshape(2, 3)],
                                             [x[:5].reshape(1, 5) ** 2]]),
                                   xp.block([x[:3], x[3:5] * x[0], c(xp, x, K3)]))),
    Scenario("meshgrid-broadcast-arrays", [np.meshgrid, np.broadcast_arrays], 12,
             lambda xp, x: flat(xp, *xp.meshgrid(x[:3], x[3:5] ** 2),
                                   *xp.meshgrid(x[:2], x[2:5], x[5:7], indexing="ij"),
                                   *xp.meshgrid(x[:3] ** 3, x[3:5], sparse=True),
                                   *xp.broadcast_arrays(x[:3, None], x[None, 3:6] ** 2,
                                                        c(xp, x, K3)))),
    Scenario("select-piecewise", [np.select, np.piecewise], 12,
             lambda xp, x: xp.select([x < -0.5, x < 0.5], [x ** 2, xp.sin(x)], x ** 3)
             + xp.select([x > 0.0], [x * x[0]])
             + xp.piecewise(x, [x < 0.0, x >= 0.0], [lambda t: t ** 2, lambda t: t ** 3])
             + xp.piecewise(x, [x < -0.5, x > 0.8], [lambda t: -t, 0.25, lambda t: t * t])),
    Scenario("partition", [np.partition, np.argpartition], 12, _partitions),
    Scenario("interp-in-xp", [np.interp], 12,
             lambda xp, x: xp.interp(c(xp, x, [-1.5, -0.3, 0.2, 1.1]),
                                     xp.cumsum(xp.exp(x[:6])) - 3.0, x[6:12] ** 2)
             + xp.interp(x[:4] * 0.5, c(xp, x, XP) + x[4:10] * 0.01, c(xp, x, XP) ** 2)),
    Scenario("complex-parts-of-real", [np.real, np.imag, np.angle, np.real_if_close,
                                       np.iscomplex, np.isreal, np.iscomplexobj, np.isrealobj], 12,
             lambda xp, x: flat(xp, xp.real(x) * x, xp.imag(x) + x ** 2, xp.angle(x) * x,
                                   (xp.real_if_close(x) if xp is np else x) ** 3,
                                   xp.where(xp.iscomplex(x), 0.0, x),
                                   xp.where(xp.isreal(x), x, 0.0),
                                   x * (2.0 if xp.isrealobj(x) and not xp.iscomplexobj(x) else 0))),
    Scenario("fft", [np.fft.fft, np.fft.ifft, np.fft.fftn, np.fft.ifftn, np.fft.fft2,
                     np.fft.ifft2, np.fft.rfft, np.fft.irfft, np.fft.rfftn, np.fft.irfftn,
                     np.fft.rfft2, np.fft.irfft2, np.fft.hfft, np.fft.ihfft, np.fft.fftshift,
                     np.fft.ifftshift], 12,
             lambda xp, x: flat(xp, *_fourier_parts(xp, x))),
    Scenario("sinc-nan-to-num", [np.sinc, np.nan_to_num], 12,
             lambda xp, x: flat(xp, xp.sinc(x), xp.sinc(x * 0.01), xp.sinc(x * 5.0),
                                   xp.nan_to_num(xp.where(xp.abs(x) < 0.4, xp.nan, x ** 2)),
                                   xp.nan_to_num(_not_finite(xp, x), nan=-1.0, posinf=3.0,
                                                 neginf=x[0]))),
    Scenario("rollaxis-atleast-3d", [np.rollaxis, np.atleast_3d], 12,
             lambda xp, x: flat(xp, xp.rollaxis(x.reshape(2, 3, 2) ** 2, 2),
                                xp.rollaxis(x.reshape(2, 3, 2), 0, 3) * x[0],
                                xp.rollaxis(x.reshape(2, 3, 2), -1, 1),
                                xp.atleast_3d(x[:4] ** 2), xp.atleast_3d(x.reshape(3, 4)),
                                *xp.atleast_3d(x[0] * x[1], x[:2]))),
    Scenario("linspace-logspace-geomspace", [np.linspace, np.logspace, np.geomspace], 12,
             _ranges),
    Scenario("i0", [np.i0], 12, lambda xp, x: flat(xp, xp.i0(x), xp.i0(x * 6.0) * 1e-3)),
    Scenario("modf-frexp-ldexp-divmod", [np.modf, np.frexp, np.ldexp, np.divmod], 12,
             _exponents_and_parts),
    Scenario("compress-extract", [np.compress, np.extract], 12,
             lambda xp, x: flat(xp, _compressed(xp, KEEP_ROWS, x.reshape(3, 4) ** 2, 0),
                                _compressed(xp, EVERY_THIRD.ravel(), x * x[0]),
                                _compressed(xp, np.array([False, True]), x.reshape(3, 4), 1),
                                _extracted(xp, EVERY_THIRD, x.reshape(3, 4) ** 3))),
    Scenario("apply-along-axis", [np.apply_along_axis], 12,
             lambda xp, x: flat(xp, xp.apply_along_axis(lambda r: xp.sum(r ** 2) * r, 1,
                                                        x.reshape(3, 4)),
                                xp.apply_along_axis(lambda r: r[0] * r[1:], 0, x.reshape(3, 4)),
                                xp.apply_along_axis(lambda r: xp.outer(r, r), 1,
                                                    x.reshape(2, 3, 2)),
                                xp.apply_along_axis(xp.sum, -1, x.reshape(2, 6) ** 3))),
    Scenario("vander-polyfit", [np.vander, np.polyfit], 12, _fits),
    Scenario("cond", [np.linalg.cond], 12,
             lambda xp, x: flat(xp, xp.stack([xp.linalg.cond(m33(xp, x, 3.0), p)
                                              for p in (None, 2, -2, 1, -1, np.inf, -np.inf,
                                                        "fro", "nuc")]),
                                xp.linalg.cond(x.reshape(3, 2, 2) + c(xp, x, 2.0 * np.eye(2))))),
    Scenario("eigvals-symmetric", [np.linalg.eigvals], 9,
             lambda xp, x: (xp.sort(xp.linalg.eigvals(spd(xp, x))) if xp is np
                            else xp.linalg.eigvalsh(spd(xp, x))) ** 2),
    Scenario("array-like", [np.array, np.asarray, np.asanyarray], 12,
             lambda xp, x: flat(xp, xp.array([x[0], x[1] ** 2, 3.0], **_like(xp, x)),
                                xp.asarray([[x[0], 1.0], [x[2], x[3] * x[4]]], **_like(xp, x)),
                                (xp.asanyarray if xp is np else xp.asarray)(
                                    (x[:2], x[2:4] ** 2), **_like(xp, x)),
                                xp.array(x[4:8], ndmin=2, **_like(xp, x)) * 2.0)),
    Scenario("dtype-queries", [np.result_type, np.can_cast, np.min_scalar_type], 12,
             _dtype_queries),
]


def _fourier_parts(xp, x):
    """numpy.fft's transforms of x (real: each function reaches the engine) and of complex
    arrays made of it (cyad._complex), by parts."""
    z = x[:6] ** 2 + 1j * x[6:]
    m = x.reshape(3, 4)
    transforms = [xp.fft.fft(x), xp.fft.fft(z), xp.fft.ifft(x[:5], n=7, norm="ortho"),
                  xp.fft.ifft(x[:5] * z[:5]), xp.fft.fftn(m), xp.fft.fftn(m * z[0]),
                  xp.fft.ifftn(m ** 2, axes=(0,)), xp.fft.fft2(m, s=(2, 5), axes=(0, 1)),
                  xp.fft.ifft2(m ** 2), xp.fft.ifft2(m * 1j + m),
                  xp.fft.rfft(x ** 3, norm="forward"), xp.fft.irfft(x[:7]), xp.fft.irfft(z, n=9),
                  xp.fft.rfftn(m), xp.fft.irfftn(m), xp.fft.irfftn(xp.fft.rfftn(m ** 2) * 1j),
                  xp.fft.rfft2(m, axes=(1, 0)), xp.fft.irfft2(m ** 3, s=(2, 5), axes=(0, 1)),
                  xp.fft.hfft(x[:5], norm="ortho"), xp.fft.hfft(z), xp.fft.ihfft(x ** 2),
                  xp.fft.fftshift(m), xp.fft.fftshift(m * z[1]), xp.fft.ifftshift(x ** 2, axes=0)]
    return [part for t in transforms for part in (xp.real(t), xp.imag(t))]


@functools.cache
def _all_references():
    # one JAX computation for all scenarios: compiling once costs less than once per scenario
    found = references([(lambda xp, x, s=s: [s.program(xp, x)], s.point) for s in SCENARIOS])
    return {s.name: r[0] for s, r in zip(SCENARIOS, found, strict=True)}


def reference_of(scenario):
    return _all_references()[scenario.name]


TOLERANCES = {np.float64: dict(rtol=1e-9, atol=1e-10), np.float32: dict(rtol=2e-3, atol=2e-3)}
DTYPES = [np.float64, np.float32]


def weights(shape, dtype):
    # a fixed combination of f's outputs: the scalar whose Hessian is taken
    return np.cos(1.0 + np.arange(int(np.prod(shape)))).reshape(shape).astype(dtype)


def directions(n, dtype):
    rng = np.random.default_rng(n)
    return (exact_in_float32(rng.standard_normal(n)).astype(dtype),
            exact_in_float32(rng.standard_normal(n)).astype(dtype))


def _scalar(scenario, w):
    return lambda x: np.sum(scenario.program(np, x) * w)


def _checked(actual, expected, dtype, what):
    if isinstance(actual, np.ndarray):   # (a scalar result comes as a Python float)
        assert actual.dtype == dtype, what
    assert_matches(np.asarray(actual, np.float64), expected, what=what, **TOLERANCES[dtype])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=repr)
def test_first_order(scenario, dtype, engine):
    ref = reference_of(scenario)
    x = scenario.point.astype(dtype)
    value, jac = cyad.value_and_jacobian(lambda x: scenario.program(np, x), x, engine=engine)
    _checked(value, ref.value, dtype, "value")
    _checked(jac, ref.first, dtype, "jacobian")


# chunk 5: inner lanes padded (to 8) and a remainder chunk
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("chunk", [None, 5])
@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=repr)
def test_hessian_and_hvp(scenario, dtype, chunk, engine):
    ref = reference_of(scenario)
    w = weights(ref.value.shape, dtype)
    hessian = np.tensordot(w.astype(np.float64), ref.second, ref.value.ndim)
    x = scenario.point.astype(dtype)
    _, v = directions(x.size, dtype)
    _checked(cyad.hessian(_scalar(scenario, w), x, chunk=chunk, engine=engine), hessian, dtype,
             "hessian")
    _checked(cyad.hvp(_scalar(scenario, w), x, v, chunk=chunk, engine=engine), hessian @ v,
             dtype, "hvp")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=repr)
def test_second_derivative_along_a_line(scenario, dtype, engine):
    ref = reference_of(scenario)
    x = scenario.point.astype(dtype)
    _, v = directions(x.size, dtype)
    expected = np.einsum("...ij,i,j", ref.second, v.astype(np.float64), v.astype(np.float64))
    actual = cyad.second_derivative(lambda s: scenario.program(np, x + s * v), dtype(0.0),
                                    engine=engine)
    _checked(actual, expected, dtype, "second derivative")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=repr)
def test_nested(scenario, dtype, engine):
    # d/ds d/dt g(x + s u + t v) = u^T H v, a derivative inside a derivative
    ref = reference_of(scenario)
    w = weights(ref.value.shape, dtype)
    hessian = np.tensordot(w.astype(np.float64), ref.second, ref.value.ndim)
    x = scenario.point.astype(dtype)
    u, v = directions(x.size, dtype)
    g = _scalar(scenario, w)

    def inner(s):
        return cyad.derivative(lambda t: g(x + s * u + t * v), dtype(0.0), engine=engine)

    _checked(cyad.derivative(inner, dtype(0.0), engine=engine), u @ hessian @ v, dtype, "nested")


def test_every_function_has_a_scenario():
    covered = {f for s in SCENARIOS for f in s.covers}
    missing = [f.__name__ for f in HANDLED_FUNCTIONS if f not in covered]
    assert not missing


@pytest.mark.parametrize("scenario", SCENARIOS, ids=repr)
def test_scenarios_call_what_they_cover(scenario, monkeypatch):
    called = set()
    for f, impl in list(HANDLED_FUNCTIONS.items()):
        def recording(*args, f=f, impl=impl, **kwargs):
            called.add(f)
            return impl(*args, **kwargs)
        monkeypatch.setitem(HANDLED_FUNCTIONS, f, recording)
    cyad.jacobian(lambda x: scenario.program(np, x), scenario.point)
    assert not [f.__name__ for f in scenario.covers if f not in called]


# -- where a function is not differentiable ---------------------------------------------------

def test_sort_at_ties_takes_the_order_of_a_stable_sort():
    # sorted: x[3], x[1], x[0], x[2]; the tied x[0] and x[2] keep their order
    w = np.array([1.0, 10.0, 100.0, 1000.0])
    grad = cyad.gradient(lambda x: np.sum(w * np.sort(x)), np.array([2.0, 1.0, 2.0, 0.0]))
    np.testing.assert_array_equal(grad, [100.0, 10.0, 1000.0, 1.0])


@pytest.mark.parametrize("function", [lambda a: np.linalg.eigvalsh(a),
                                      lambda a: np.linalg.eigh(a)[0],
                                      lambda a: np.linalg.eigh(a)[1] ** 2])
@pytest.mark.parametrize("a", [np.diag([1.0, 2.0, 1.0]),
                               # a rotated diag(1, 1, 2): equal eigenvalues up to rounding
                               np.array([[1.5, 0.5, 0.0], [0.5, 1.5, 0.0], [0.0, 0.0, 1.0]])],
                         ids=["exact", "rounded"])
def test_eigh_at_repeated_eigenvalues_raises(function, a):
    with pytest.raises(np.linalg.LinAlgError, match="repeated eigenvalues"):
        cyad.jacobian(lambda x: function(x.reshape(3, 3)), a.ravel())
    with pytest.raises(np.linalg.LinAlgError, match="repeated eigenvalues"):
        cyad.hessian(lambda x: np.sum(function(x.reshape(3, 3))), a.ravel())


def test_det_of_a_singular_matrix_raises():
    with pytest.raises(np.linalg.LinAlgError):
        cyad.gradient(lambda x: np.linalg.det(x.reshape(2, 2)), np.array([1.0, 2.0, 2.0, 4.0]))


def test_interp_slope_at_knots_and_outside():
    xp, fp = np.array([0.0, 1.0, 3.0]), np.array([0.0, 2.0, 3.0])
    x = np.array([-1.0, 0.0, 1.0, 2.0, 3.0, 4.0])
    # at a knot the slope on its right; at the last knot the last interval's; outside 0
    np.testing.assert_array_equal(np.diag(cyad.jacobian(lambda x: np.interp(x, xp, fp), x)),
                                  [0.0, 2.0, 0.5, 0.5, 0.5, 0.0])




def test_einsum_sublists_take_numpys_letters():
    # labels 0-25 are A-Z and 26-51 a-z, so the implicit output is ordered as NumPy orders it
    a, b = SCENARIOS[0].point[:6].reshape(2, 3), SCENARIOS[0].point[6:12].reshape(3, 2)
    f = lambda x: np.einsum(x.reshape(2, 3), [40, 1], b, [1, 3])  # noqa: E731
    np.testing.assert_array_equal(cyad.jacobian(f, a.ravel()).reshape(2, 2, 6).sum(-1),
                                  np.einsum(np.ones((2, 3)), [40, 1], b, [1, 3]))


@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
def test_einsum_into_its_operand(dtype):
    # out= an operand: the product is computed apart, then written
    w = weights((3, 3), dtype)

    def in_place(x):
        a = x.reshape(3, 3) * 1.0
        np.einsum("ij,jk->ik", a, np.sin(a), out=a)
        return np.sum(w * a)

    def apart(x):
        a = x.reshape(3, 3)
        return np.sum(w * (a @ np.sin(a)))

    x = SCENARIOS[0].point[:9].astype(dtype)
    np.testing.assert_allclose(cyad.hessian(in_place, x), cyad.hessian(apart, x), rtol=1e-6)
    np.testing.assert_allclose(cyad.gradient(in_place, x), cyad.gradient(apart, x), rtol=1e-6)
