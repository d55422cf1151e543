"""Sparse Jacobians and Hessians (cyad/_sparse_operators.py) beside their references.

Broyden's tridiagonal function at n = 10^4: the prepared sparse Jacobian (3 column colors,
tape or dual engine, ``out=``) beside one evaluation of f and SciPy's
``approx_derivative`` with the same sparsity (its own column grouping, 2-point
differences). Rosenbrock's function at n = 10^4: the prepared sparse Hessian (3 star
colors, tape hvps) beside cyad's prepared gradient.
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
