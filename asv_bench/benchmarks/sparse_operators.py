"""Sparse Jacobians and Hessians (cyad/_sparse/operators.py) beside their references.

Broyden's tridiagonal function at n = 10^4: the prepared sparse Jacobian (3 column colors,
tape or dual engine, ``out=``) beside one evaluation of f and SciPy's
``approx_derivative`` with the same sparsity (its own column grouping, 2-point
differences). Rosenbrock's function at n = 10^4: the prepared sparse Hessian (3 star
colors, tape hvps) beside cyad's prepared gradient. `TapeLanes`: the products under them
on the tape, prepared, with ``out=``: one pushforward lane and three (the coloring's
seeds) beside f, one hvp and three beside the gradient (k lanes share the value part,
and their seeds' own part is held from call to call).
"""
import numpy as np

import cyad

from .common import Call
from .gradient import inputs, rosenbrock
from .sparsity import broyden


def jacobian_calls(x):
    pattern = cyad.jacobian_sparsity(broyden, x)
    calls = {"f": lambda: broyden(x)}
    for engine in ("tape", "dual"):
        prep = cyad.prepare_sparse_jacobian(broyden, x, engine=engine, coloring="column")
        out = prep.new_result()
        calls[f"sparse {engine}"] = (lambda prep=prep, out=out: cyad.sparse_jacobian(
            broyden, x, prep=prep, out=out))
    try:
        from scipy.optimize._numdiff import approx_derivative, group_columns
    except ImportError:    # pragma: no cover - SciPy is in the benchmark environment
        return calls
    groups = group_columns(pattern)
    calls["scipy approx_derivative"] = lambda: approx_derivative(
        broyden, x, sparsity=(pattern, groups))
    return calls


def hessian_calls(x):
    prep = cyad.prepare_sparse_hessian(rosenbrock, x)
    out = prep.new_result()
    gradient_prep = cyad.prepare_gradient(rosenbrock, x, engine="tape")
    gradient_out = np.empty_like(x)
    return {"sparse hessian": lambda: cyad.sparse_hessian(rosenbrock, x, prep=prep, out=out),
            "gradient": lambda: cyad.gradient(rosenbrock, x, prep=gradient_prep,
                                              out=gradient_out)}


class SparseJacobian(Call):
    params = [["f", "sparse tape", "sparse dual", "scipy approx_derivative"]]
    param_names = ["call"]

    def setup(self, call):
        self.call = jacobian_calls(inputs(10_000))[call]


class SparseHessian(Call):
    params = [["sparse hessian", "gradient"]]
    param_names = ["call"]

    def setup(self, call):
        self.call = hessian_calls(inputs(10_000))[call]


def lane_calls(x):
    """Pushforwards of Broyden's function and hvps of Rosenbrock's, one lane or three."""
    rng = np.random.default_rng(0)
    seeds = tuple(rng.uniform(-1.0, 1.0, x.size) for _ in range(3))
    calls = {"broyden f": lambda: broyden(x), "rosenbrock f": lambda: rosenbrock(x)}
    for lanes in (1, 3):
        directions = seeds[0] if lanes == 1 else seeds[:lanes]
        outs = np.empty_like(x) if lanes == 1 else tuple(np.empty_like(x) for _ in seeds)
        for name, f in (("pushforward", broyden), ("hvp", rosenbrock)):
            run = getattr(cyad, name)
            prep = getattr(cyad, f"prepare_{name}")(f, x, directions, engine="tape")
            calls[f"{name} {lanes}"] = (lambda run=run, f=f, d=directions, prep=prep, out=outs:
                                        run(f, x, d, prep=prep, out=out))
    gradient_prep = cyad.prepare_gradient(rosenbrock, x, engine="tape")
    gradient_out = np.empty_like(x)
    calls["gradient"] = lambda: cyad.gradient(rosenbrock, x, prep=gradient_prep,
                                              out=gradient_out)
    return calls


class TapeLanes(Call):
    params = [["broyden f", "pushforward 1", "pushforward 3", "rosenbrock f", "gradient",
               "hvp 1", "hvp 3"]]
    param_names = ["call"]

    def setup(self, call):
        self.call = lane_calls(inputs(10_000))[call]
