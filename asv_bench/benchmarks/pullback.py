"""cyad.pullback and cyad.value_and_pullback (dy @ J) of square dense Jacobians, per engine.

engine="tape" sweeps f's recorded tape backwards once per cotangent; engine="dual" pulls
back by forward mode, a chunk of x's basis directions per evaluation of f (the work of a
Jacobian). Functions (the `function` parameter), from the jacobian module:
- "dense": tanh(A @ x) + x**2 with a dense n × n matrix A, a Python function
- "copy": f(y, x): y[...] = x, a Python function
The Baseline computes dy @ J by hand in NumPy: dy (1 - tanh(A x)²) @ A + 2 x dy.
"""
import numpy as np

from .common import CALLS, COPIES, SIZES, Call, buffers_like, output, skip
from .jacobian import dense_of

import cyad

ENGINES = ["dual", "tape"]


def inputs(n):
    return np.linspace(0.1, 1.0, n), np.linspace(-1.0, 2.0, n)


class Pullback(Call):
    operator = "pullback"
    params = [SIZES, CALLS, ["dense", "copy"], ENGINES]
    param_names = ["n", "call", "function", "engine"]

    def setup(self, n, call, function, engine):
        if engine == "dual" and n >= 10_000:
            # forward mode: 1250 evaluations of a Python f per call
            skip("more than a second per call")
        x, dy = inputs(n)
        run = getattr(cyad, self.operator)
        if function == "dense":
            f, _ = dense_of(n)
            y = None
        else:
            f, y = COPIES[function], np.zeros(n)
        if call == "unprepared":
            self.call = lambda: run(f, x, dy, y=y, engine=engine)
            return
        prep = cyad.prepare_pullback(f, x, dy, y=y, engine=engine)
        out = buffers_like(run(f, x, dy, y=y, prep=prep))
        self.call = lambda: run(f, x, dy, y=y, prep=prep, out=out)


class ValueAndPullback(Pullback):
    operator = "value_and_pullback"


class Baseline(Call):
    """Without cyad: the primal alone, or value and dy @ J of "dense" written by hand."""

    params = [SIZES, ["primal", "by hand"]]
    param_names = ["n", "computes"]

    def setup(self, n, computes):
        x, dy = inputs(n)
        dense, _ = dense_of(n)
        a = np.random.default_rng(0).standard_normal((n, n)) / np.sqrt(n)   # dense_of's A
        value, product = output(n), output(n)

        def by_hand():
            t = np.tanh(a @ x)
            np.add(t, x**2, out=value)
            np.add((dy * (1.0 - t**2)) @ a, 2.0 * x * dy, out=product)

        self.call = (lambda: dense(x)) if computes == "primal" else by_hand
