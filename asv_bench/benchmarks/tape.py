"""engine="tape" on the problems it is made for, beside the dual engine where that finishes.

Prepared calls with out= (`Tape`), and the cost of recording: a prepare and its first call,
which traces f and derives and lowers its tape (`Recording`), beside one call of f itself.
`WatchedState`: what a default tape's comparison of f's Python state costs per call, beside
the same tape named (engine="tape", no comparison).
The problems are those of asv_bench/peers.py: Rosenbrock's gradient, Hessian-vector product
and Hessian, the elementwise JVP, the Jacobian of tanh(A @ x) + x**2, an MLP's gradient.
"""
import numpy as np

import cyad

from .common import Call, buffers_like, skip
from .gradient import inputs, rosenbrock

ENGINES = ["tape", "dual"]


def elementwise(x):
    return np.sin(x) * np.exp(-x**2) + x**3


def dense(n):
    a = np.random.default_rng(0).standard_normal((n, n)) / np.sqrt(n)
    return lambda x: np.tanh(a @ x) + x**2


def mlp():
    """The mean squared error of a 32-64-32-8 tanh network on 128 samples, of its 4 456
    parameters (one flat vector, unpacked by slicing)."""
    rng = np.random.default_rng(0)
    data, target = rng.standard_normal((128, 32)), rng.standard_normal((128, 8))
    layers = [(32, 64), (64, 32), (32, 8)]

    def loss(w):
        h, k = data, 0
        for i, (a, b) in enumerate(layers):
            weights = w[k:k + a * b].reshape(a, b)
            k += a * b
            h = h @ weights + w[k:k + b]
            k += b
            if i < len(layers) - 1:
                h = np.tanh(h)
        return np.mean((h - target) ** 2)
    size = sum(a * b + b for a, b in layers)
    return loss, rng.standard_normal(size) * 0.1


# problem -> (operator, sizes, f and its arguments at size n)
PROBLEMS = {
    "rosenbrock gradient": ("gradient", [10, 100, 1_000, 10_000],
                            lambda n: (rosenbrock, inputs(n))),
    "rosenbrock hvp": ("hvp", [100, 1_000],
                       lambda n: (rosenbrock, inputs(n), np.cos(np.arange(n)))),
    "rosenbrock hessian": ("hessian", [10, 100], lambda n: (rosenbrock, inputs(n))),
    "elementwise jvp": ("pushforward", [10, 100, 1_000, 1_000_000],
                        lambda n: (elementwise, inputs(n), np.ones(n))),
    "dense jacobian": ("jacobian", [10, 100, 1_000], lambda n: (dense(n), inputs(n))),
    "mlp gradient": ("gradient", [4_456], lambda n: mlp()),
}
# where the dual engine takes more than a second per call
_DUAL_TOO_SLOW = {("rosenbrock gradient", 10_000), ("rosenbrock hvp", 1_000),
                  ("dense jacobian", 1_000), ("mlp gradient", 4_456)}


def _problem(problem, n, engine):
    operator, sizes, make = PROBLEMS[problem]
    if n not in sizes:
        skip(f"{problem} is not measured at n = {n}")
    if engine == "dual" and (problem, n) in _DUAL_TOO_SLOW:
        skip("the dual engine takes more than a second per call here")
    return operator, make(n)


class Tape(Call):
    params = [list(PROBLEMS), sorted({n for _, sizes, _ in PROBLEMS.values() for n in sizes}),
              ENGINES]
    param_names = ["problem", "n", "engine"]

    def setup(self, problem, n, engine):
        operator, args = _problem(problem, n, engine)
        run = getattr(cyad, operator)
        prep = getattr(cyad, f"prepare_{operator}")(*args, engine=engine)
        out = buffers_like(run(*args, prep=prep))
        self.call = lambda: run(*args, prep=prep, out=out)


class Recording(Call):
    """A prepare and its first call, and f alone (`engine` "f"): what recording costs."""

    params = [["rosenbrock gradient", "mlp gradient", "elementwise jvp"], [100, 4_456],
              ["tape", "dual", "f"]]
    param_names = ["problem", "n", "engine"]

    def setup(self, problem, n, engine):
        operator, args = _problem(problem, n, "tape")
        if engine == "f":
            f, x = args[:2]
            self.call = lambda: f(x)
            return
        run, prepare = getattr(cyad, operator), getattr(cyad, f"prepare_{operator}")
        self.call = lambda: run(*args, prep=prepare(*args, engine=engine))


class WatchedState(Call):
    """A prepared gradient of Rosenbrock scaled by numbers f reads out of a dict, a list of
    `reads` weights and an object's attribute: the default tape compares them before every
    call ("default"), the named one does not ("tape")."""

    params = [[10, 100, 1_000], ["default", "tape"]]
    param_names = ["reads", "engine"]

    def setup(self, reads, engine):
        settings = {"scale": 1.5, "weights": [1.0] * reads}
        model = type("Model", (), {})()
        model.offset = 0.5

        def f(x):
            return settings["scale"] * settings["weights"][-1] * rosenbrock(x) + model.offset

        x = inputs(100)
        prep = cyad.prepare_gradient(f, x, engine=None if engine == "default" else "tape")
        out = buffers_like(cyad.gradient(f, x, prep=prep))
        self.call = lambda: cyad.gradient(f, x, prep=prep, out=out)
