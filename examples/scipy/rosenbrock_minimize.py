"""Minimising Rosenbrock's function with cyad's derivatives
========================================================

Rosenbrock's function (n = 100) minimised by trust-exact and Newton-CG, with cyad's
derivatives and with finite differences.

    python examples/scipy/rosenbrock_minimize.py [--n 100] [--repeat 3] [--quick] [--show]

trust-exact and Newton-CG refuse jac="2-point", so the finite-difference gradient is SciPy's
2-point scheme (scipy.optimize approx_derivative, what jac="2-point" computes) behind a
callable. The finite-difference Hessian: trust-exact takes only a callable, so it is the
3-point difference of that gradient (what hess="3-point" computes); Newton-CG takes
hess="3-point" itself. (A HessianUpdateStrategy such as BFGS() is refused by trust-exact
and stops Newton-CG far from the minimum.) SciPy's nfev does not see the evaluations made
inside a callable, so "f calls" counts every evaluation of f: on floats, on cyad's duals and
inside the finite differences. Times are the minimum over --repeat runs (a run slower than
10 s is not repeated).

The figure (drawn when matplotlib is installed; --show opens it in a window): the
evaluations of f (log scale) and the time to the minimum of each method and derivatives.
"""
import argparse
import os
import time

# BLAS on one thread unless the environment says otherwise: for matrices this small, threads
# only add contention, and make the timings erratic on a busy machine.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np
from scipy.optimize import minimize

import cyad.scipy

try:
    from scipy.optimize import approx_derivative
except ImportError:     # private up to at least SciPy 1.17
    from scipy.optimize._numdiff import approx_derivative


class Counted:
    def __init__(self, fun):
        self.fun, self.calls = fun, 0

    def __call__(self, *args):
        self.calls += 1
        return self.fun(*args)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def cyad_derivatives(f, second):
    hess = cyad.scipy.hessian(f) if second == "hess" else cyad.scipy.hessp(f)
    return {"jac": cyad.scipy.gradient(f), second: hess}


def finite_differences(f, method):
    def gradient(x):
        return approx_derivative(f, x, method="2-point")

    if method == "Newton-CG":
        return {"jac": gradient, "hess": "3-point"}
    return {"jac": gradient, "hess": lambda x: approx_derivative(gradient, x, method="3-point")}


def run(method, derivatives, n, repeat):
    x0 = np.linspace(-1.2, 1.2, n)
    options = {"xtol": 1e-10} if method == "Newton-CG" else {}
    best = np.inf
    for _ in range(repeat):
        f = Counted(rosenbrock)
        start = time.perf_counter()
        res = minimize(f, x0, method=method, options=options, **derivatives(f))
        elapsed = time.perf_counter() - start
        best = min(best, elapsed)
        if elapsed > 10.0:
            break
    return [f"{best:.3f}", res.nit, res.nfev, res.njev, getattr(res, "nhev", 0), f.calls,
            f"{np.max(np.abs(res.x - 1.0)):.1e}"]


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
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="n = 20, one run each")
    parser.add_argument("--show", action="store_true", help="show the figure in a window")
    a = parser.parse_args()
    n, repeat = (20, 1) if a.quick else (a.n, a.repeat)
    cases = [
        ("trust-exact", "cyad gradient + hessian", lambda f: cyad_derivatives(f, "hess")),
        ("trust-exact", "finite differences", lambda f: finite_differences(f, "trust-exact")),
        ("Newton-CG", "cyad gradient + hessian", lambda f: cyad_derivatives(f, "hess")),
        ("Newton-CG", "cyad gradient + hessp", lambda f: cyad_derivatives(f, "hessp")),
        ("Newton-CG", "finite differences", lambda f: finite_differences(f, "Newton-CG")),
    ]
    rows = [[method, name] + run(method, derivatives, n, repeat)
            for method, name, derivatives in cases]
    print(f"Rosenbrock, n = {n}, x0 = linspace(-1.2, 1.2, n); time: min of {repeat} run(s)\n")
    table(["method", "derivatives", "time [s]", "nit", "nfev", "njev", "nhev", "f calls",
           "max error"], rows, 2)
    print("\nf calls: every evaluation of f (floats, duals, finite differences); "
          "max error: max abs(x - 1)")
    plot(rows, n, a.show)


def plot(rows, n, show):
    """Evaluations of f and time to the minimum, per method and derivatives (log scales)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:     # the figure is optional: matplotlib comes with the docs extra
        print("\n(matplotlib is not installed: no figure)")
        return
    labels = [f"{method}\n{name}" for method, name, *_ in rows]
    colors = ["C0" if name.startswith("cyad") else "C1" for _, name, *_ in rows]
    fig, (calls, seconds) = plt.subplots(1, 2, figsize=(10, 4), sharey=True,
                                         layout="constrained")
    bars = calls.barh(labels, [row[7] for row in rows], color=colors)
    calls.bar_label(bars, padding=3)
    calls.set(xscale="log", xlim=(1, 50 * max(row[7] for row in rows)),
              xlabel="evaluations of f (floats, duals, differences)")
    bars = seconds.barh(labels, [float(row[2]) for row in rows], color=colors)
    seconds.bar_label(bars, fmt="%.2f s", padding=3)
    seconds.set(xlim=(0, 1.3 * max(float(row[2]) for row in rows)),
                xlabel="time to the minimum [s]")
    calls.invert_yaxis()
    fig.suptitle(f"Rosenbrock, n = {n}: cyad's derivatives (blue) and finite differences "
                 "(orange)")
    if show:
        plt.show()


if __name__ == "__main__":
    main()
