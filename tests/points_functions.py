"""Functions of the tests of cyad.at_points and cyad.dask, in a module of their own so that
worker processes import them by name (cloudpickle ships them by reference) and an exception
raised there is the same class here."""
import os

import numpy as np


def scalar(x, xp=np):
    """A scalar-valued program (Rosenbrock plus transcendental terms)."""
    return (xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
            + xp.sum(xp.sin(x) * xp.exp(0.3 * x)) + xp.log(1.0 + xp.sum(x ** 2)))


def vector(x, xp=np):
    """A vector-valued program of 4 outputs."""
    return xp.stack([xp.sum(xp.sin(x) * x ** 2), xp.prod(xp.cos(x)), x[0] * x[-1],
                     xp.sum(xp.tanh(x[::-1] * x))])


def with_arguments(x, a, b, xp=np):
    """f(x, a_i, b_i) with per-point arguments a (shaped like x) and b (a 2-vector)."""
    return xp.sum(a * xp.sin(x) ** 2) + b[0] * xp.sum(x ** 3) + xp.exp(b[1] * x[0])


class Refused(Exception):
    pass


def refusing(x):
    """sum(sin(x) x), raising Refused at a point whose first coordinate is 5 (a Python
    branch on x's value: the dual engine's)."""
    if bool(x[0] == 5.0):
        raise Refused("a point f refuses")
    return np.sum(np.sin(x) * x)


def dies_once(x, marker):
    """sum(x^2), but the first evaluation anywhere (no file at `marker` yet) kills its
    process."""
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return np.sum(x ** 2)
