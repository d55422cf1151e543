"""Optimal control with IPOPT: cyad's sparse derivatives beside dense JAX ones
===========================================================================

The van der Pol oscillator steered to rest: minimise the integral of x1^2 + x2^2 + u^2 over
t in [0, 10] subject to

    x1' = (1 - x2^2) x1 - x2 + u,    x2' = x1,    x(0) = (0, 1),
    -1 <= u <= 1,    x1 >= -0.25,

discretised by the trapezoidal rule on N intervals (states and control at the N + 1 nodes:
3 (N + 1) variables, 2 N equality constraints, each on two neighbouring nodes). Solved by
IPOPT through cyipopt, its derivatives from:

- cyad, exact Hessian: ``cyad.ipopt.problem(f, w0, constraints=defects, ...)``: the
  gradient by reverse mode, the defects' sparse Jacobian (about 10 N nonzeros) from a few
  colored pushforwards, the Lagrangian's sparse Hessian (its lower triangle) from a few
  Hessian-vector products;
- cyad, limited-memory: the same with ``hessian=False``, IPOPT's quasi-Newton
  approximation of the Hessian (``hessian_approximation="limited-memory"``);
- JAX, dense: cyipopt's documented way with JAX, ``jit(grad(f))``, ``jit(jacfwd(defects))``
  and ``jit(hessian(lagrangian))``, handed to IPOPT as dense matrices (no structure
  callbacks: cyipopt then declares every entry, and the dense Hessian's lower triangle).
  The dense matrices grow as N^2, so this column runs only up to --dense-max intervals.

    python examples/ipopt/optimal_control.py [--n 1000] [--dense-max 200] [--quick] [--show]

Times are for the whole solve, preparation or compilation included (and that part
separately), after one solve of a tiny problem has done the imports; iterations are
IPOPT's (tol 1e-8). The limited-memory solves stop on their own approximation: their
objectives differ from the exact ones in the 7th digit. asv_bench/benchmarks/ipopt.py
times the same callbacks and solves.

The figure (drawn when matplotlib is installed; --show opens it in a window): the optimal
states x1, x2 and the control u against t from cyad's exact Hessian, the other solutions'
controls marked over it, and the bounds x1 >= -0.25 and -1 <= u <= 1.
"""
import argparse
import os
import time

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np

import cyad.ipopt

T = 10.0


def van_der_pol(x1, x2, u):
    """The right-hand side (x1', x2') at the nodes."""
    return (1.0 - x2 ** 2) * x1 - x2 + u, x1


def unpack(w):
    n = w.size // 3
    return w[:n], w[n:2 * n], w[2 * n:]


def make_problem(n_intervals):
    h = T / n_intervals
    weights = np.full(n_intervals + 1, h)
    weights[[0, -1]] = h / 2.0      # the trapezoidal rule's weights

    def objective(w, xp=np):
        x1, x2, u = unpack(w)
        return xp.sum(weights * (x1 ** 2 + x2 ** 2 + u ** 2))

    def defects(w, xp=np):
        x1, x2, u = unpack(w)
        f1, f2 = van_der_pol(x1, x2, u)
        d1 = x1[1:] - x1[:-1] - 0.5 * h * (f1[1:] + f1[:-1])
        d2 = x2[1:] - x2[:-1] - 0.5 * h * (f2[1:] + f2[:-1])
        return xp.concatenate([d1, d2])

    size = n_intervals + 1
    lb = np.concatenate([np.full(size, -0.25), np.full(size, -np.inf), np.full(size, -1.0)])
    ub = np.concatenate([np.full(size, np.inf), np.full(size, np.inf), np.full(size, 1.0)])
    lb[0] = ub[0] = 0.0             # x1(0)
    lb[size] = ub[size] = 1.0       # x2(0)
    w0 = np.zeros(3 * size)
    w0[size:2 * size] = 1.0
    bounds = dict(lb=np.maximum(lb, -2e19), ub=np.minimum(ub, 2e19),
                  cl=np.zeros(2 * n_intervals), cu=np.zeros(2 * n_intervals))
    return objective, defects, w0, bounds


class Counted:
    """IPOPT's iterations, from its intermediate callback."""

    def __init__(self, callbacks):
        self.callbacks, self.iterations = callbacks, 0

    def __getattr__(self, name):
        return getattr(self.callbacks, name)

    def intermediate(self, alg_mod, iter_count, *args):
        self.iterations = iter_count


def solve(callbacks, w0, bounds, limited_memory=False):
    import cyipopt

    counted = Counted(callbacks)
    nlp = cyipopt.Problem(n=w0.size, m=bounds["cl"].size, problem_obj=counted, **bounds)
    nlp.add_option("print_level", 0)
    nlp.add_option("sb", "yes")
    nlp.add_option("tol", 1e-8)
    nlp.add_option("max_iter", 1000)
    if limited_memory:
        nlp.add_option("hessian_approximation", "limited-memory")
    w, info = nlp.solve(w0)
    assert info["status"] in (0, 1), info["status_msg"]
    return info["obj_val"], counted.iterations, w


def cyad_solver(n_intervals, exact):
    objective, defects, w0, bounds = make_problem(n_intervals)
    start = time.perf_counter()
    callbacks = cyad.ipopt.Callbacks(objective, w0, constraints=defects, hessian=exact)
    prepared = time.perf_counter() - start
    value, iterations, w = solve(callbacks, w0, bounds, limited_memory=not exact)
    return value, iterations, time.perf_counter() - start, prepared, w


class JaxCallbacks:
    """cyipopt's callbacks from JAX's dense derivatives, jit-compiled."""

    def __init__(self, objective, defects, w0):
        import jax
        import jax.numpy as jnp

        def f(w):
            return objective(w, jnp)

        def c(w):
            return defects(w, jnp)

        def lagrangian(w, lagrange, obj_factor):
            return obj_factor * f(w) + jnp.dot(lagrange, c(w))

        self.objective = jax.jit(f)
        self.gradient = jax.jit(jax.grad(f))
        self.constraints = jax.jit(c)
        self.jacobian = jax.jit(jax.jacfwd(c))
        hessian = jax.jit(jax.hessian(lagrangian))
        rows, cols = np.tril_indices(w0.size)
        self.hessian = lambda w, lagrange, obj_factor: hessian(w, lagrange, obj_factor)[
            rows, cols]
        # compile now, as a prepared cyad call is prepared
        lagrange = np.ones(self.jacobian(w0).shape[0])
        for call in (self.objective(w0), self.gradient(w0), self.constraints(w0),
                     self.jacobian(w0), self.hessian(w0, lagrange, 1.0)):
            np.asarray(call)


def jax_solver(n_intervals):
    import jax

    jax.config.update("jax_enable_x64", True)
    objective, defects, w0, bounds = make_problem(n_intervals)
    start = time.perf_counter()
    callbacks = JaxCallbacks(objective, defects, w0)
    prepared = time.perf_counter() - start
    value, iterations, w = solve(callbacks, w0, bounds)
    return value, iterations, time.perf_counter() - start, prepared, w


def table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]

    def line(r):
        return "| " + " | ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                                 for i, (c, w) in enumerate(zip(r, widths))) + " |"

    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="intervals")
    parser.add_argument("--dense-max", type=int, default=200,
                        help="the largest N for JAX's dense derivatives")
    parser.add_argument("--quick", action="store_true", help="N = 50")
    parser.add_argument("--show", action="store_true", help="show the figure in a window")
    a = parser.parse_args()
    n_intervals = 50 if a.quick else a.n
    try:
        import jax  # noqa: F401
    except ImportError:
        jax = None
    solvers = [("cyad, exact sparse Hessian", lambda n: cyad_solver(n, True)),
               ("cyad, limited-memory Hessian", lambda n: cyad_solver(n, False))]
    if jax is not None:
        solvers.append(("JAX, dense (cyipopt's docs)", jax_solver))
    for _, solver in solvers:
        solver(5)       # imports and one-time set-ups, outside the times
    sizes = sorted({n_intervals, min(n_intervals, a.dense_max)})
    rows, solutions = [], {}
    for n in sizes:
        for name, solver in solvers:
            if name.startswith("JAX") and n > a.dense_max:
                continue
            value, iterations, total, prepared, w = solver(n)
            if n == n_intervals:
                solutions[name] = w
            rows.append([name, n, iterations, f"{value:.8f}", f"{total:.3f}",
                         f"{prepared:.3f}"])
    objective, defects, w0, _ = make_problem(n_intervals)
    callbacks = cyad.ipopt.Callbacks(objective, w0, constraints=defects)
    print(f"van der Pol optimal control, trapezoidal rule, N = {n_intervals}: "
          f"{callbacks.n} variables, {callbacks.m} constraints; Jacobian "
          f"{len(callbacks.jacobianstructure()[0])} nonzeros from "
          f"{callbacks.jacobian_prep.n_colors} pushforwards, Hessian lower triangle "
          f"{len(callbacks.hessianstructure()[0])} nonzeros from {callbacks.hessian_colors} "
          "Hessian-vector products\n")
    table(["derivatives", "N", "iterations", "objective", "time [s]", "of it prepare [s]"],
          rows)
    if jax is None:
        print("\nJAX is not installed: its rows are left out")
    elif n_intervals > a.dense_max:
        print(f"\nJAX, dense: left out at N = {n_intervals} (above --dense-max): its "
              "Jacobian and Hessian hold every entry, N^2 of them, and so does IPOPT's "
              "linear algebra")
    plot(solutions, n_intervals, a.show)


def plot(solutions, n_intervals, show):
    """The optimal states and control, from cyad's exact Hessian (the other solutions' controls
    marked over it)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:     # the figure is optional: matplotlib comes with the docs extra
        print("\n(matplotlib is not installed: no figure)")
        return
    t = np.linspace(0.0, T, n_intervals + 1)
    fig, (states, control) = plt.subplots(2, 1, figsize=(8, 6), sharex=True,
                                          layout="constrained")
    (first, w), *others = solutions.items()
    x1, x2, u = unpack(w)
    states.plot(t, x1, label="x1")
    states.plot(t, x2, label="x2")
    control.plot(t, u, color="C2", lw=2, label=f"u, {first}")
    for (name, w), marker in zip(others, "ox"):
        control.plot(t, unpack(w)[2], marker, ms=5, mfc="none", color="k", label=name,
                     markevery=0.04)
    states.axhline(-0.25, color="0.5", ls="--", label="x1 >= -0.25")
    control.axhline(-1.0, color="0.5", ls="--", label="-1 <= u <= 1")
    control.axhline(1.0, color="0.5", ls="--")
    states.set(ylabel="state", title=f"van der Pol steered to rest by IPOPT, N = {n_intervals}")
    control.set(xlabel="t", ylabel="control u")
    states.legend()
    control.legend()
    if show:
        plt.show()


if __name__ == "__main__":
    main()
