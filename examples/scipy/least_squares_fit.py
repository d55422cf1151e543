"""Least squares: cyad's Jacobian beside finite differences
========================================================

Nonlinear least squares with scipy.optimize.least_squares: cyad's Jacobian against
SciPy's finite differences (jac="2-point").

    python examples/scipy/least_squares_fit.py [--points 200] [--repeat 20] [--quick] [--show]

Two models fitted to noise-free data, from a poor starting point, with each of
least_squares' methods (tolerances 1e-12):

- Michaelis-Menten kinetics  v = Vmax s / (Km + s),  parameters (Vmax, Km) = (3.4, 1.7);
- a sum of two exponential decays  y = a1 exp(-k1 t) + a2 exp(-k2 t) + c,
  parameters (2.0, 0.8, 1.0, 3.0, 0.3).

"max error" is the largest relative error of the fitted parameters. "trf" and "dogbox" do not
count the evaluations of their finite-difference Jacobians in nfev ("lm" does, and reports
njev None), so "f calls" counts every evaluation of the residuals: on floats, on cyad's duals
and inside the finite differences. Times are the minimum over --repeat runs.

The figure (drawn when matplotlib is installed; --show opens it in a window): each model's
data, its curve at the starting point and its fitted curve (trf with cyad's Jacobian).
"""
import argparse
import os
import time

# BLAS on one thread unless the environment says otherwise: for matrices this small, threads
# only add contention, and make the timings erratic on a busy machine.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np
from scipy.optimize import least_squares

import cyad.scipy


class Counted:
    def __init__(self, fun):
        self.fun, self.calls = fun, 0

    def __call__(self, *args):
        self.calls += 1
        return self.fun(*args)


def michaelis_menten(p, s, v):
    return p[0] * s / (p[1] + s) - v


def two_exponentials(p, t, y):
    return p[0] * np.exp(-p[1] * t) + p[2] * np.exp(-p[3] * t) + p[4] - y


def problems(points):
    s = np.linspace(0.05, 10.0, points)
    mm = np.array([3.4, 1.7])
    t = np.linspace(0.0, 6.0, points)
    ex = np.array([2.0, 0.8, 1.0, 3.0, 0.3])
    return [
        ("Michaelis-Menten", michaelis_menten, mm, [1.0, 1.0],
         (s, mm[0] * s / (mm[1] + s))),
        ("two exponentials", two_exponentials, ex, [1.0, 0.5, 0.5, 2.0, 0.0],
         (t, two_exponentials(ex, t, 0.0))),
    ]


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
    parser.add_argument("--points", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="50 points, 2 runs each")
    parser.add_argument("--show", action="store_true", help="show the figure in a window")
    a = parser.parse_args()
    points, repeat = (50, 2) if a.quick else (a.points, a.repeat)
    rows, fits = [], []
    for name, fun, true, p0, args in problems(points):
        for method in ["trf", "dogbox", "lm"]:
            for label in ["cyad", "2-point"]:
                best = np.inf
                for _ in range(repeat):
                    f = Counted(fun)
                    start = time.perf_counter()
                    jac = cyad.scipy.jacobian(f) if label == "cyad" else "2-point"
                    fit = least_squares(f, p0, jac=jac, args=args, method=method,
                                        xtol=1e-12, ftol=1e-12, gtol=1e-12)
                    best = min(best, time.perf_counter() - start)
                error = np.max(np.abs(fit.x - true) / np.abs(true))
                rows.append([name, method, label, f"{best * 1e3:.2f}", fit.nfev,
                             "-" if fit.njev is None else fit.njev, f.calls, f"{error:.1e}"])
                if method == "trf" and label == "cyad":
                    fits.append((name, fun, p0, args, fit))
    print(f"least_squares, {points} data points, tolerances 1e-12; time: min of {repeat} "
          "run(s)\n")
    table(["model", "method", "jac", "time [ms]", "nfev", "njev", "f calls", "max error"], rows,
          3)
    plot(fits, a.show)


def plot(fits, show):
    """Each model's data, its starting curve and its fit (trf, cyad's Jacobian)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:     # the figure is optional: matplotlib comes with the docs extra
        print("\n(matplotlib is not installed: no figure)")
        return
    fig, axes = plt.subplots(1, len(fits), figsize=(10, 4), layout="constrained")
    for ax, (name, fun, p0, (t, data), fit) in zip(axes, fits):
        grid = np.linspace(t[0], t[-1], 400)
        ax.plot(t, data, "o", ms=3, color="0.5", label="data")
        ax.plot(grid, fun(np.asarray(p0), grid, 0.0), "--", color="C1", label="start")
        ax.plot(grid, fun(fit.x, grid, 0.0), color="C0", label="fit (trf, cyad)")
        xlabel, ylabel = ("s", "v") if fun is michaelis_menten else ("t", "y")
        ax.set(title=f"{name}: fitted in {fit.nfev} evaluations", xlabel=xlabel, ylabel=ylabel)
        ax.legend()
    fig.suptitle("least_squares with cyad's Jacobian: the fitted curves over the data")
    if show:
        plt.show()


if __name__ == "__main__":
    main()
