"""Test programs of SciPy's functions outside NumPy's dispatch (cyad/_primitives/
scipy_functions.py), written once for SciPy and for JAX's jax.scipy: program(xp, x) with
xp NumPy or jax.numpy, as the scenarios of tests/test_primitives.py take them."""
import numpy as np
import scipy.linalg
import scipy.special

try:
    import jax.scipy.linalg
    import jax.scipy.special
except ImportError:
    jax = None

UPPER = np.triu(np.ones((3, 3)))
LOWER = UPPER.T


def scipy_of(xp):
    """(linalg, special) of SciPy for NumPy, of jax.scipy for jax.numpy."""
    if xp is np:
        return scipy.linalg, scipy.special
    return jax.scipy.linalg, jax.scipy.special


def _c(xp, x, a):
    return xp.asarray(a, dtype=x.dtype)


def _matrix(xp, x, shift=3.0):
    return x[:9].reshape(3, 3) + shift * xp.eye(3, dtype=x.dtype)


def _spd(xp, x):
    a = x[:9].reshape(3, 3)
    return a @ a.T + _c(xp, x, np.diag([1.0, 2.5, 4.0]))


def expm(xp, x):
    linalg, _ = scipy_of(xp)
    a = 0.5 * x[:9].reshape(3, 3)
    stack = 0.5 * x[:8].reshape(2, 2, 2)
    return linalg.expm(a) + xp.sum(linalg.expm(stack)) * a


def solve_triangular(xp, x):
    linalg, _ = scipy_of(xp)
    a, b = _matrix(xp, x), x[9:12]
    m = xp.stack([b, b * b, x[:3]], axis=1)
    return (linalg.solve_triangular(a, b, lower=True)
            + linalg.solve_triangular(a, b, trans=1)
            + linalg.solve_triangular(a, b, trans="T", lower=True, unit_diagonal=True)
            + xp.sum(linalg.solve_triangular(a, m, unit_diagonal=True), axis=1))


def lu(xp, x):
    # rows in an order that partial pivoting changes (the shifted diagonal is largest)
    linalg, _ = scipy_of(xp)
    a = _matrix(xp, x)[np.array([2, 0, 1])]
    lu_, piv = linalg.lu_factor(a)
    b = x[9:12]
    m = xp.stack([b, x[:3]], axis=1)
    return (linalg.lu_solve((lu_, piv), b) + linalg.lu_solve((lu_, piv), b, trans=1)
            + xp.sum(linalg.lu_solve((lu_, piv), m), axis=1) + xp.sum(lu_ * x[:9].reshape(3, 3),
                                                                      axis=0))


def cho(xp, x):
    linalg, _ = scipy_of(xp)
    s, b = _spd(xp, x), x[9:12]
    upper, lower = linalg.cho_factor(s), linalg.cho_factor(s, lower=True)
    factors = upper[0] * _c(xp, x, UPPER) + lower[0] * _c(xp, x, LOWER)
    return (linalg.cho_solve(upper, b) + linalg.cho_solve(lower, b * b)
            + xp.sum(factors * x[:9].reshape(3, 3), axis=1))


def solve(xp, x):
    linalg, _ = scipy_of(xp)
    a, s, b = _matrix(xp, x), _spd(xp, x), x[9:12]
    return (linalg.solve(a, b) + linalg.solve(s, b, assume_a="pos")
            + linalg.solve(s, b * b, assume_a="sym", lower=True))


def inv_det_cholesky(xp, x):
    linalg, _ = scipy_of(xp)
    a, s = _matrix(xp, x), _spd(xp, x)
    return (linalg.inv(a) * linalg.det(a) + linalg.cholesky(s)
            + linalg.cholesky(s, lower=True) * 0.5)


def logsumexp(xp, x):
    _, special = scipy_of(xp)
    a = x.reshape(3, 4)
    w = _c(xp, x, np.linspace(0.5, 2.0, 4))
    return (special.logsumexp(a, axis=1) + special.logsumexp(x)
            + special.logsumexp(a, axis=1, b=w) + special.logsumexp(a, axis=0, keepdims=True)[0, :3]
            + special.logsumexp(a, axis=1, return_sign=True)[0])


def softmax(xp, x):
    _, special = scipy_of(xp)
    a = x.reshape(3, 4)
    return (special.softmax(a, axis=1) * special.log_softmax(a, axis=0)
            + special.softmax(x).reshape(3, 4) + special.log_softmax(a))


def polygamma(xp, x):
    _, special = scipy_of(xp)
    y = xp.exp(0.5 * x) + 0.5
    return special.polygamma(0, y) + special.polygamma(1, y) * special.polygamma(3, y[::-1])
