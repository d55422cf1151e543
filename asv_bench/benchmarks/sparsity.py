"""Sparsity detection (cyad/_sparse/sparsity.py) beside one evaluation of f (`detect` "f").

Broyden's tridiagonal function (its Jacobian's pattern), written two ways (slices updated in
place, and slices written into zeros), and Rosenbrock's function (its Hessian's pattern)
at n = 10^4 and 10^5: detection records f once and propagates index sets, so its time is
read as a multiple of f's. `DetectionOverF` measures that multiple directly, the two
timed side by side in one run (the machine's speed drifts between benchmarks).
"""
import time

import numpy as np

import cyad

from .common import Call
from .gradient import inputs, rosenbrock


def broyden(x):
    y = (3.0 - 2.0 * x) * x + 1.0
    y[1:] -= x[:-1]
    y[:-1] -= 2.0 * x[1:]
    return y


def broyden_written(x):
    y = np.zeros_like(x)
    y[1:-1] = (3.0 - 2.0 * x[1:-1]) * x[1:-1] - x[:-2] - 2.0 * x[2:] + 1.0
    y[0] = (3.0 - 2.0 * x[0]) * x[0] - 2.0 * x[1] + 1.0
    y[-1] = (3.0 - 2.0 * x[-1]) * x[-1] - x[-2] + 1.0
    return y


PROBLEMS = {"broyden jacobian": (broyden, cyad.jacobian_sparsity),
            "broyden written jacobian": (broyden_written, cyad.jacobian_sparsity),
            "rosenbrock hessian": (rosenbrock, cyad.hessian_sparsity)}
SIZES = [10_000, 100_000]


class Sparsity(Call):
    params = [list(PROBLEMS), SIZES, ["pattern", "f"]]
    param_names = ["problem", "n", "detect"]

    def setup(self, problem, n, detect):
        f, sparsity = PROBLEMS[problem]
        x = inputs(n)
        self.call = (lambda: f(x)) if detect == "f" else (lambda: sparsity(f, x))


def _best(call, repeat):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


class DetectionOverF:
    """The time of one detection over the time of one evaluation of f (the best of
    rounds that time both, alternately)."""

    params = [list(PROBLEMS), SIZES]
    param_names = ["problem", "n"]
    timeout = 120

    def setup(self, problem, n):
        self.f, self.sparsity = PROBLEMS[problem]
        self.x = inputs(n)

    def track_ratio(self, problem, n):
        f, sparsity, x = self.f, self.sparsity, self.x
        detection = evaluation = float("inf")
        for _ in range(20):
            evaluation = min(evaluation, _best(lambda: f(x), 20))
            detection = min(detection, _best(lambda: sparsity(f, x), 2))
        return detection / evaluation

    track_ratio.unit = "evaluations of f"
