"""Sparsity detection (cyad/_sparsity.py) beside one evaluation of f (`detect` "f").

Broyden's tridiagonal function (its Jacobian's pattern) and Rosenbrock's function (its
Hessian's pattern) at n = 10^4 and 10^5: detection records f once and propagates index
sets, so its time is read as a multiple of f's.
"""
import cyad

from .common import Call
from .gradient import inputs, rosenbrock


def broyden(x):
    y = (3.0 - 2.0 * x) * x + 1.0
    y[1:] -= x[:-1]
    y[:-1] -= 2.0 * x[1:]
    return y


PROBLEMS = {"broyden jacobian": (broyden, cyad.jacobian_sparsity),
            "rosenbrock hessian": (rosenbrock, cyad.hessian_sparsity)}


class Sparsity(Call):
    params = [list(PROBLEMS), [10_000, 100_000], ["pattern", "f"]]
    param_names = ["problem", "n", "detect"]

    def setup(self, problem, n, detect):
        f, sparsity = PROBLEMS[problem]
        x = inputs(n)
        self.call = (lambda: f(x)) if detect == "f" else (lambda: sparsity(f, x))
