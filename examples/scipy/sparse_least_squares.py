"""Sparse least squares: cyad's sparse Jacobian for lsmr
=====================================================

Large sparse nonlinear least squares with scipy.optimize.least_squares(tr_solver="lsmr"):
cyad's sparse Jacobian against SciPy's finite differences grouped by the pattern
(jac_sparsity).

    python examples/scipy/sparse_least_squares.py [--n 10000] [--repeat 3] [--quick] [--show]

Two of Moré, Garbow and Hillstrom's test problems (ACM TOMS 7, 1981), n residuals in n
variables from x0 = -1, their solution a root (cost 0):

- Broyden tridiagonal:  f_i = (3 - 2 x_i) x_i - x_(i-1) - 2 x_(i+1) + 1;
- Broyden banded:  f_i = x_i (2 + 5 x_i^2) + 1 - sum x_j (1 + x_j) over the j != i
  from i - 5 to i + 1 (seven nonzeros a row).

cyad: jac=cyad.scipy.jacobian(fun, sparse=True), a CSR array from one evaluation of fun
on dual numbers with one lane per color of the pattern (detected at the first call).
sparse FD: jac_sparsity=cyad.scipy.jac_sparsity(fun, x0), SciPy's "2-point" differences,
one evaluation of fun per group of columns. "trf" does not count the evaluations of its
finite-difference Jacobians in nfev, so "f calls" counts every evaluation of fun (on floats,
on cyad's duals and inside the finite differences). "max abs dx" is the largest difference
from cyad's solution. Times are the minimum over --repeat runs.

The figure (drawn when matplotlib is installed; --show opens it in a window): each problem's
solution near both ends (flat in between), and the evaluations of fun with cyad's Jacobian
and with the sparse finite differences.
"""
import argparse
import os
import time

# BLAS on one thread unless the environment says otherwise (timings on a busy machine)
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np
from scipy.optimize import least_squares

import cyad.scipy


def broyden_tridiagonal(x):
    f = (3.0 - 2.0 * x) * x + 1.0
    f[1:] -= x[:-1]
    f[:-1] -= 2.0 * x[1:]
    return f


def broyden_banded(x):
    g = x * (1.0 + x)
    f = x * (2.0 + 5.0 * x * x) + 1.0
    n = x.shape[0]
    for k in range(1, 6):           # j = i - k, for k = 1 .. 5
        f[k:] -= g[:n - k]
    f[:-1] -= g[1:]                 # j = i + 1
    return f


class Counted:
    def __init__(self, fun):
        self.fun, self.calls = fun, 0

    def __call__(self, *args):
        self.calls += 1
        return self.fun(*args)


def solve(fun, x0, way):
    counted = Counted(fun)
    if way == "cyad":
        options = {"jac": cyad.scipy.jacobian(counted, sparse=True)}
    else:
        options = {"jac_sparsity": cyad.scipy.jac_sparsity(fun, x0)}
    start = time.perf_counter()
    res = least_squares(counted, x0, tr_solver="lsmr", ftol=1e-12, xtol=1e-12, gtol=1e-12,
                        **options)
    elapsed = time.perf_counter() - start
    assert res.success, res.message
    return res, counted.calls, elapsed


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="residuals (and variables)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="n = 1000, one run each")
    parser.add_argument("--show", action="store_true", help="show the figure in a window")
    a = parser.parse_args()
    n, repeat = (1000, 1) if a.quick else (a.n, a.repeat)
    x0 = -np.ones(n)
    rows, ratios, solved = [], [], []
    for name, fun in [("Broyden tridiagonal", broyden_tridiagonal),
                      ("Broyden banded", broyden_banded)]:
        runs = {}
        for way in ["cyad", "sparse FD"]:
            runs[way] = min((solve(fun, x0, way) for _ in range(repeat)), key=lambda r: r[2])
        reference = runs["cyad"][0].x
        for way, (res, calls, elapsed) in runs.items():
            rows.append([name, way, f"{elapsed:.3f}", res.nfev, res.njev, calls,
                         f"{res.cost:.1e}", f"{np.max(np.abs(res.x - reference)):.1e}"])
        ratios.append(f"{name} {runs['sparse FD'][2] / runs['cyad'][2]:.2f}x")
        solved.append((name, runs))
    print(f"least_squares(tr_solver='lsmr'), n = {n} residuals, tolerances 1e-12; time: min "
          f"of {repeat} run(s)\n")
    header = ["problem", "Jacobian", "time [s]", "nfev", "njev", "f calls", "cost",
              "max abs dx"]
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]

    def line(r):
        return "| " + " | ".join(str(c).ljust(w) if i < 2 else str(c).rjust(w)
                                 for i, (c, w) in enumerate(zip(r, widths))) + " |"

    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
    print("\nsparse FD time / cyad time: " + ", ".join(ratios))
    plot(solved, n, a.show)


def plot(solved, n, show):
    """The solutions near both ends (flat in between), and the evaluations of fun each way."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:     # the figure is optional: matplotlib comes with the docs extra
        print("\n(matplotlib is not installed: no figure)")
        return
    fig, (start, end, calls) = plt.subplots(1, 3, figsize=(11, 3.8), layout="constrained",
                                            gridspec_kw={"width_ratios": [2, 2, 1.4]})
    end.sharey(start)
    i = np.arange(n)
    for k, (name, runs) in enumerate(solved):
        x = runs["cyad"][0].x
        start.plot(i[:30], x[:30], "o-", ms=3, color=f"C{k}", label=name)
        end.plot(i[-30:], x[-30:], "o-", ms=3, color=f"C{k}")
        calls.bar([3 * k, 3 * k + 1], [runs["cyad"][1], runs["sparse FD"][1]],
                  color=[f"C{k}", "0.6"])
    start.set(xlabel="i", ylabel="solution x_i", title="the first 30 entries")
    end.set(xlabel="i", title="the last 30 entries")
    start.legend()
    calls.set(xticks=[0, 1, 3, 4], xticklabels=["cyad", "FD", "cyad", "FD"],
              ylabel="evaluations of fun", title="cyad / sparse FD")
    fig.suptitle(f"least_squares(tr_solver='lsmr'), n = {n}: the solutions, from x0 = -1")
    if show:
        plt.show()


if __name__ == "__main__":
    main()
