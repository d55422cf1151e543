"""Stiff ODEs: cyad's Jacobian for BDF, Radau and LSODA
====================================================

Stiff ODEs with solve_ivp (BDF, Radau, LSODA): cyad's Jacobian against SciPy's finite
differences (jac=None).

    python examples/scipy/stiff_kinetics.py [--n 200] [--repeat 3] [--quick] [--show]

Two problems, rtol 1e-6 and atol 1e-10:

- Robertson's chemical kinetics (3 species, t from 0 to 40), its right-hand side written in
  place as rhs(dydt, t, y) (output first, like cyad's f(y, x)), given to solve_ivp through
  cyad.scipy.ode_function and differentiated by cyad.scipy.ode_jacobian(rhs, in_place=True);
- a reaction-diffusion equation u_t = D u_xx + u (1 - u) on (0, 1] with D = 0.1, u = 0 at
  x = 0 and du/dx = 0 at x = 1, on n points (t from 0 to 10), written vectorised with
  np.concatenate and slicing as fun(t, u).

BDF and Radau do not count the evaluations of their finite-difference Jacobians in nfev
(LSODA does), so "rhs calls" counts every evaluation of the right-hand side: on floats, on
cyad's duals and inside the finite differences. max abs dy is the largest difference between
the two solutions at the final time. Times are the minimum over --repeat runs.

The figure (drawn when matplotlib is installed; --show opens it in a window): the two
solutions by BDF with cyad's Jacobian: Robertson's three species against log t (y2 scaled by
1e4), and the reaction-diffusion profile u(x) at a few times.
"""
import argparse
import os
import time

# BLAS on one thread unless the environment says otherwise: for matrices this small, threads
# only add contention, and make the timings erratic on a busy machine.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np
from scipy.integrate import solve_ivp

import cyad.scipy


class Counted:
    def __init__(self, fun):
        self.fun, self.calls = fun, 0

    def __call__(self, *args):
        self.calls += 1
        return self.fun(*args)


def robertson(dydt, t, y):
    dydt[0] = -0.04 * y[0] + 1e4 * y[1] * y[2]
    dydt[1] = 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2
    dydt[2] = 3e7 * y[1] ** 2


def reaction_diffusion(t, u, D, h):
    left = np.concatenate([np.zeros_like(u[:1]), u[:-1]])   # u = 0 at x = 0
    right = np.concatenate([u[1:], u[-2:-1]])              # du/dx = 0 at x = 1 (mirror)
    return D * (left - 2.0 * u + right) / h ** 2 + u * (1.0 - u)


def robertson_problem():
    def solve(method, exact):
        rhs = Counted(robertson)
        jac = cyad.scipy.ode_jacobian(rhs, in_place=True) if exact else None
        sol = solve_ivp(cyad.scipy.ode_function(rhs), (0.0, 40.0), [1.0, 0.0, 0.0],
                        method=method, jac=jac, rtol=1e-6, atol=1e-10)
        return sol, rhs.calls
    return "Robertson, 3 species", solve


def reaction_diffusion_problem(n):
    h = 1.0 / n
    x = np.linspace(h, 1.0, n)
    u0 = np.exp(-50.0 * (x - 0.5) ** 2)

    def solve(method, exact):
        rhs = Counted(reaction_diffusion)
        jac = cyad.scipy.ode_jacobian(rhs) if exact else None
        sol = solve_ivp(rhs, (0.0, 10.0), u0, method=method, jac=jac, args=(0.1, h),
                        rtol=1e-6, atol=1e-10)
        return sol, rhs.calls
    return f"reaction-diffusion, n = {n}", solve


def timed(solve, method, exact, repeat):
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        sol, calls = solve(method, exact)
        best = min(best, time.perf_counter() - start)
    assert sol.success, sol.message
    return sol, calls, best


def table(header, rows, text):
    # a Markdown table: the first `text` columns left-aligned, the numbers right-aligned
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]

    def line(r):
        return "| " + " | ".join(str(c).ljust(w) if i < text else str(c).rjust(w)
                                 for i, (c, w) in enumerate(zip(r, widths))) + " |"

    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="n = 50, one run each")
    parser.add_argument("--show", action="store_true", help="show the figure in a window")
    a = parser.parse_args()
    n, repeat = (50, 1) if a.quick else (a.n, a.repeat)
    rows, solutions = [], []
    for name, solve in [robertson_problem(), reaction_diffusion_problem(n)]:
        for method in ["BDF", "Radau", "LSODA"]:
            exact, exact_calls, exact_time = timed(solve, method, True, repeat)
            if method == "BDF":
                solutions.append(exact)
            fd, fd_calls, fd_time = timed(solve, method, False, repeat)
            rows.append([name, method, f"{exact_time:.3f}", f"{fd_time:.3f}", exact.nfev,
                         fd.nfev, exact.njev, fd.njev, exact_calls, fd_calls,
                         f"{np.max(np.abs(exact.y[:, -1] - fd.y[:, -1])):.1e}"])
    print(f"solve_ivp, rtol 1e-6, atol 1e-10; cyad: jac=cyad.scipy.ode_jacobian(...), "
          f"FD: jac=None; time: min of {repeat} run(s)\n")
    table(["problem", "method", "time cyad [s]", "time FD [s]", "nfev cyad", "nfev FD",
           "njev cyad", "njev FD", "rhs calls cyad", "rhs calls FD", "max abs dy"],
          rows, 2)
    print("\nrhs calls: every evaluation of the right-hand side (floats, duals, finite "
          "differences)")
    plot(*solutions, n, a.show)


def plot(robertson, diffusion, n, show):
    """The two solutions by BDF with cyad's Jacobian: Robertson's species over log time, and
    the reaction-diffusion front at a few of the solver's steps."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:     # the figure is optional: matplotlib comes with the docs extra
        print("\n(matplotlib is not installed: no figure)")
        return
    fig, (kinetics, front) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    t = robertson.t[1:]                 # t = 0 is off the log axis
    for y, label in zip(robertson.y[:, 1:], ["y1", "y2 x 1e4", "y3"]):
        kinetics.plot(t, y * (1e4 if label.startswith("y2") else 1.0), label=label)
    kinetics.set(xscale="log", xlabel="t", ylabel="concentration",
                 title=f"Robertson: {robertson.t.size - 1} BDF steps")
    kinetics.legend()
    x = np.linspace(1.0 / n, 1.0, n)
    for when in (0.0, 1.0, 2.5, 5.0, 10.0):
        step = np.argmin(np.abs(diffusion.t - when))
        front.plot(x, diffusion.y[:, step], label=f"t = {diffusion.t[step]:.2f}")
    front.set(xlabel="x", ylabel="u", title=f"reaction-diffusion, n = {n}")
    front.legend()
    fig.suptitle("solve_ivp(method='BDF') with cyad's Jacobian")
    if show:
        plt.show()


if __name__ == "__main__":
    main()
