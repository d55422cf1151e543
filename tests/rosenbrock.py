"""Rosenbrock's function and its analytic gradient and Hessian: the reference of many tests."""
import numpy as np


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_gradient(x):
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return g


def rosenbrock_hessian(x):
    # tridiagonal: 1200 x_i^2 - 400 x_(i+1) + 2 [i < n-1] + 200 [i > 0], and -400 x_i beside
    n = x.size
    h = np.zeros((n, n))
    i = np.arange(n - 1)
    h[i, i] += 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    h[i + 1, i + 1] += 200.0
    h[i, i + 1] = h[i + 1, i] = -400.0 * x[:-1]
    return h


def rosenbrock_in_place(x):
    """Rosenbrock's function again, every intermediate updated in place (operators and out=)."""
    d = x[1:] * 1.0
    d -= np.square(x[:-1])
    d **= 2
    np.multiply(d, 100.0, out=d)
    e = 1.0 - x[:-1]
    np.square(e, out=e)
    d += e
    return np.sum(d)
