"""IPOPT's callbacks from cyad.ipopt beside JAX's dense ones, and whole IPOPT solves.

The problem is examples/ipopt/optimal_control.py's (the van der Pol oscillator, trapezoidal
rule on N intervals: 3 (N + 1) variables, 2 N constraints), loaded from that script.
`IpoptCallbacks` times one call of each callback IPOPT makes per iteration that involves a
derivative: cyad's prepared ones (gradient, the constraints' sparse Jacobian, the sparse
Lagrangian Hessian's lower triangle) beside the ``jax.jit`` compiled dense ones cyipopt's
documentation writes (``grad``, ``jacfwd``, ``hessian`` of the Lagrangian, the lower
triangle taken out). `IpoptSolve` times whole solves (cyipopt, the optional extra
``ipopt``): cyad's exact Hessian, IPOPT's limited-memory approximation with cyad's first
derivatives, and the dense JAX callbacks, compiled in setup.
"""
import importlib.util
import pathlib

import numpy as np

from .common import skip

SCRIPT = (pathlib.Path(__file__).resolve().parents[2] / "examples" / "ipopt"
          / "optimal_control.py")
DENSE_MAX = 200       # JAX's dense matrices hold N^2 entries: larger N take minutes a solve


def example():
    spec = importlib.util.spec_from_file_location("optimal_control", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def jax_callbacks(module, n):
    if n > DENSE_MAX:
        skip(f"JAX's dense derivatives only up to N = {DENSE_MAX}")
    try:
        import jax
    except ImportError:
        skip("JAX is not installed")
    jax.config.update("jax_enable_x64", True)
    objective, defects, w0, _ = module.make_problem(n)
    return module.JaxCallbacks(objective, defects, w0)


class IpoptCallbacks:
    params = [["cyad", "jax dense"], ["gradient", "jacobian", "hessian"], [200, 1000]]
    param_names = ["derivatives", "callback", "N"]

    def setup(self, derivatives, callback, n):
        import cyad.ipopt

        module = example()
        objective, defects, w0, _ = module.make_problem(n)
        callbacks = (cyad.ipopt.Callbacks(objective, w0, constraints=defects)
                     if derivatives == "cyad" else jax_callbacks(module, n))
        rng = np.random.default_rng(0)
        w = rng.uniform(-1.0, 1.0, w0.size)
        lagrange = rng.standard_normal(2 * n)
        method = getattr(callbacks, callback)
        if callback == "hessian":
            self.call = lambda: np.asarray(method(w, lagrange, 1.0))
        else:
            self.call = lambda: np.asarray(method(w))
        self.call()

    def time_call(self, *params):
        self.call()


class IpoptSolve:
    params = [["cyad exact", "cyad limited-memory", "jax dense"], [200, 1000]]
    param_names = ["derivatives", "N"]
    timeout = 300

    def setup(self, derivatives, n):
        try:
            import cyipopt  # noqa: F401
        except ImportError:
            skip("cyipopt is not installed (the optional extra ipopt)")
        import cyad.ipopt

        module = example()
        objective, defects, w0, bounds = module.make_problem(n)
        limited_memory = derivatives == "cyad limited-memory"
        if derivatives == "jax dense":
            callbacks = jax_callbacks(module, n)
        else:
            callbacks = cyad.ipopt.Callbacks(objective, w0, constraints=defects,
                                             hessian=not limited_memory)
        self.call = lambda: module.solve(callbacks, w0, bounds, limited_memory)

    def time_solve(self, *params):
        self.call()
