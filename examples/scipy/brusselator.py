"""2-D Brusselator: cyad's sparse Jacobian for BDF
================================================

The two-dimensional Brusselator (BRUSS-2D of Hairer and Wanner, Solving Ordinary Differential
Equations II, IV.10) with scipy.integrate.solve_ivp's BDF, its Jacobian three ways: cyad's
sparse Jacobian, SciPy's finite differences grouped by the pattern (jac_sparsity), and
SciPy's dense finite differences (jac=None).

    python examples/scipy/brusselator.py [--n 32] [--repeat 3] [--quick] [--show]

On the unit square, periodic in x and y, discretised on an n x n grid (2 n^2 states, 2 048
at n = 32) by the 5-point Laplacian:

    u_t = 1 + u^2 v - 4.4 u + alpha Laplacian(u) + f(x, y, t)
    v_t = 3.4 u - u^2 v + alpha Laplacian(v)

alpha = 0.1, u(x, y, 0) = 22 y (1 - y)^(3/2), v(x, y, 0) = 27 x (1 - x)^(3/2), and the
forcing f = 5 in the disc of radius 0.1 about (0.3, 0.6) from t = 1.1 on. t runs from 0 to
11.5, rtol = atol = 1e-6. The diffusion makes it stiff: the discrete Laplacian's
eigenvalues reach -8 alpha n^2, about -820 at n = 32.

- cyad: jac=cyad.scipy.ode_jacobian(brusselator, sparse=True), a CSC array from one
  evaluation of the right-hand side on dual numbers with one lane per color of the
  pattern (detected by cyad at the first call);
- sparse FD: jac_sparsity=cyad.scipy.ode_jac_sparsity(brusselator, ...), the same pattern,
  SciPy's finite differences evaluating the right-hand side once per group of columns;
- dense FD: jac=None, SciPy's dense finite differences, one evaluation per state, and dense
  LU factorisations.

BDF does not count the evaluations of its finite-difference Jacobians in nfev, so "rhs
calls" counts every evaluation of the right-hand side (on floats, on cyad's duals and inside
the finite differences). "max abs dy" is the largest difference from cyad's solution at the
final time, beside the tolerance there (atol + rtol max abs(y)). "jac" is the time spent in
the Jacobians (cyad's callable, its first call detecting and coloring the pattern; SciPy's
num_jac) and "LU" in the LU factorisations (SuperLU's splu, or LAPACK's for the dense
Jacobian). Times are the minimum over --repeat runs, the two sparse ways alternating; the
dense run is made once.

Where the time goes: BDF keeps a Jacobian for many steps (njev is small) and refactors
I - c J whenever its step size changes, so at n = 32 most of the time is SuperLU's
factorisations and solves and the right-hand side, the same for both sparse ways; cyad's
Jacobians cost a fraction of the finite differences', but they are a small part of the
whole, and the end-to-end times come out close. Dense Jacobians cost one evaluation per
state and dense factorisations, and take an order of magnitude longer.

The figure (drawn when matplotlib is installed; --show opens it in a window): u and v on the
grid from cyad's run, when the forcing starts (t = 1.1) and at the end, where the forced
disc about (0.3, 0.6) stands out.
"""
import argparse
import contextlib
import os
import time

# BLAS on one thread unless the environment says otherwise: the dense run's LU
# factorisations would otherwise take every core, and the timings would not compare.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np
import scipy.integrate._ivp.bdf as scipy_bdf
from scipy.integrate import solve_ivp

import cyad.scipy

RTOL = ATOL = 1e-6
T_END = 11.5


def laplacian(w):
    """The periodic 5-point Laplacian of an n x n grid, without the 1 / h^2.

    Slices of a copy padded with the opposite edges: 3x faster than four np.roll calls,
    on floats and on cyad's duals alike (np.roll normalises its arguments in Python).
    """
    padded = np.concatenate([w[-1:], w, w[:1]], axis=0)
    padded = np.concatenate([padded[:, -1:], padded, padded[:, :1]], axis=1)
    return (padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:]
            - 4.0 * w)


def brusselator(t, y, n, alpha, forcing):
    """dy/dt; y holds u then v, each an n x n grid raveled."""
    u = y[:n * n].reshape(n, n)
    v = y[n * n:].reshape(n, n)
    uuv = u * u * v
    du = 1.0 + uuv - 4.4 * u + (alpha * n * n) * laplacian(u)
    if t >= 1.1:
        du = du + forcing
    dv = 3.4 * u - uuv + (alpha * n * n) * laplacian(v)
    return np.concatenate([du.ravel(), dv.ravel()])


def problem(n):
    x = np.arange(n) / n
    X, Y = np.meshgrid(x, x, indexing="ij")
    u0 = 22.0 * Y * (1.0 - Y) ** 1.5
    v0 = 27.0 * X * (1.0 - X) ** 1.5
    forcing = np.where((X - 0.3) ** 2 + (Y - 0.6) ** 2 <= 0.1 ** 2, 5.0, 0.0)
    return np.concatenate([u0.ravel(), v0.ravel()]), (n, 0.1, forcing)


class Counted:
    def __init__(self, fun):
        self.fun, self.calls = fun, 0

    def __call__(self, *args):
        self.calls += 1
        return self.fun(*args)


class Timed:
    """A callable, timed."""

    def __init__(self, fun):
        self.fun, self.seconds = fun, 0.0

    def __call__(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return self.fun(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start


@contextlib.contextmanager
def timing(module, names):
    """The module's functions of these names timed (Timed) while in the block."""
    originals = {name: getattr(module, name) for name in names}
    timed = {name: Timed(fun) for name, fun in originals.items()}
    for name, fun in timed.items():
        setattr(module, name, fun)
    try:
        yield timed
    finally:
        for name, fun in originals.items():
            setattr(module, name, fun)


def solve(way, y0, args):
    rhs = Counted(brusselator)
    jac = Timed(cyad.scipy.ode_jacobian(rhs, sparse=True))
    if way == "cyad":
        options = {"jac": jac}
    elif way == "sparse FD":
        options = {"jac_sparsity": cyad.scipy.ode_jac_sparsity(brusselator, 0.0, y0, args)}
    else:
        options = {}
    # BDF's finite differences (num_jac) and LU factorisations (splu, lu_factor), timed for
    # the table by replacing them in SciPy's module while the solver runs
    with timing(scipy_bdf, ["num_jac", "splu", "lu_factor"]) as timed:
        start = time.perf_counter()
        sol = solve_ivp(rhs, (0.0, T_END), y0, method="BDF", args=args, rtol=RTOL, atol=ATOL,
                        **options)
        elapsed = time.perf_counter() - start
    assert sol.success, sol.message
    jac_time = timed["num_jac"].seconds + jac.seconds
    lu_time = timed["splu"].seconds + timed["lu_factor"].seconds
    return sol, rhs.calls, elapsed, jac_time, lu_time


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--n", type=int, default=32, help="grid points per side")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="n = 8, one run each")
    parser.add_argument("--no-dense", action="store_true", help="skip the dense run")
    parser.add_argument("--show", action="store_true", help="show the figure in a window")
    a = parser.parse_args()
    n, repeat = (8, 1) if a.quick else (a.n, a.repeat)
    y0, args = problem(n)
    runs = {}
    for _ in range(repeat):       # the two sparse ways alternate: the machine drifts
        for way in ["cyad", "sparse FD"]:
            run = solve(way, y0, args)
            if way not in runs or run[2] < runs[way][2]:
                runs[way] = run
    if not a.no_dense:
        runs["dense FD"] = solve("dense FD", y0, args)
    reference = runs["cyad"][0].y[:, -1]
    tolerance = ATOL + RTOL * np.max(np.abs(reference))
    rows = []
    for way, (sol, calls, elapsed, jac_time, lu_time) in runs.items():
        rows.append([way, f"{elapsed:.3f}", f"{jac_time:.3f}", f"{lu_time:.3f}", sol.nfev,
                     sol.njev, sol.nlu, calls,
                     f"{np.max(np.abs(sol.y[:, -1] - reference)):.1e}"])
    print(f"2-D Brusselator, n = {n} ({2 * n * n} states), solve_ivp BDF, t in [0, {T_END}], "
          f"rtol = atol = {RTOL:g}; time: min of {repeat} run(s), dense FD one run\n")
    header = ["Jacobian", "time [s]", "jac [s]", "LU [s]", "nfev", "njev", "nlu", "rhs calls",
              "max abs dy"]
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]

    def line(r):
        return "| " + " | ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                                 for i, (c, w) in enumerate(zip(r, widths))) + " |"

    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
    cyad_time, fd_time = runs["cyad"][2], runs["sparse FD"][2]
    print(f"\nsparse FD / cyad: end to end {fd_time / cyad_time:.2f}x, the Jacobians alone "
          f"{runs['sparse FD'][3] / runs['cyad'][3]:.1f}x (cyad's first call detects and "
          "colors the pattern)")
    print(f"the tolerance at the final state: atol + rtol max|y| = {tolerance:.1e}")
    plot(runs["cyad"][0], n, a.show)


def plot(sol, n, show):
    """u and v on the grid, at the forcing's start (t = 1.1) and at the end, from cyad's run."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:     # the figure is optional: matplotlib comes with the docs extra
        print("\n(matplotlib is not installed: no figure)")
        return
    fig, axes = plt.subplots(2, 2, figsize=(8, 7), layout="constrained")
    edges = (-0.5 / n, 1.0 - 0.5 / n) * 2     # the cells centred on the points i / n
    for column, when in enumerate((1.1, T_END)):
        step = np.argmin(np.abs(sol.t - when))
        for row, (name, field) in enumerate(zip("uv", np.split(sol.y[:, step], 2))):
            ax = axes[row, column]
            # the grid's first index is x, the second y: transposed, y runs up
            image = ax.imshow(field.reshape(n, n).T, origin="lower", extent=edges,
                              cmap="viridis")
            fig.colorbar(image, ax=ax, shrink=0.85)
            ax.set(title=f"{name} at t = {sol.t[step]:.2f}", xlabel="x", ylabel="y")
    fig.suptitle(f"2-D Brusselator, n = {n}: BDF with cyad's sparse Jacobian")
    if show:
        plt.show()


if __name__ == "__main__":
    main()
