"""Impedance spectroscopy: fitting an equivalent circuit through complex numbers
=============================================================================

An electrochemical impedance spectrum fitted with scipy.optimize.least_squares: the model
computes with complex numbers, its residuals and parameters are real, and cyad's Jacobian
(exact, through the complex arithmetic) stands beside SciPy's finite differences.

    python examples/scipy/impedance_fit.py [--frequencies 60] [--repeat 20] [--quick] [--show]

The model is a Randles circuit: an electrolyte resistance R_s in series with a double layer
(a constant phase element, CPE, of parameters Q and alpha) in parallel with the
charge-transfer resistance R_ct and a Warburg diffusion element of coefficient sigma,

    Z(omega) = R_s + 1 / (1 / (R_ct + Z_W) + Q (j omega)^alpha),
    Z_W = sigma (1 - j) / sqrt(omega),

written in NumPy as it reads, with ``1j``, a complex power whose exponent is a parameter,
and complex division. The synthetic spectrum: (R_s, R_ct, Q, alpha, sigma) =
(20 Ohm, 100 Ohm, 2e-5 F s^(alpha-1), 0.85, 50 Ohm s^-1/2) at --frequencies frequencies
from 10 mHz to 100 kHz, each part of Z with 0.5 % of abs(Z) of Gaussian noise (seed 0).

The fit is in log parameters (all five are positive and span nine orders of magnitude), from
a start a factor of 2 to 5 off, the residuals being the real and imaginary parts stacked,
each weighted by 1 / abs(Z) of the data (modulus weighting, usual in impedance fitting):

    residuals(p) = np.concatenate([Z.real, Z.imag]) / abs(Z_data) - data / abs(Z_data).

Each way runs least_squares' trf method (tolerances 1e-12):

- cyad (tape): jac=cyad.scipy.jacobian(residuals, engine="tape"), the model recorded at the
  first call, its derivative tape replayed in compiled code (the five directions at once)
  at every later one;
- cyad (dual): jac=cyad.scipy.jacobian(residuals, engine="dual") (the default for a
  Jacobian), the model run in Python on dual numbers of five lanes at every Jacobian;
- 2-point and 3-point: SciPy's finite differences.

trf does not count the evaluations of its finite-difference Jacobians in nfev, so "f calls"
counts every evaluation of the residuals (on floats, on cyad's duals or tracers and inside
the finite differences). Times are the minimum over --repeat runs. "max rel error" is the
largest relative error of the fitted parameters against the true ones: the noise sets it,
not the method; "vs tape" is the largest relative difference from cyad's fit. The second
table times one Jacobian at the fit each way, its first call apart (where cyad prepares),
and gives its largest difference from the tape's, relative to the largest entry. The last
gives the fitted parameters with one standard error each, from the covariance
s^2 (J^T J)^-1 of the exact Jacobian at the fit (in log space, so a relative error).

At this size a whole fit takes milliseconds every way, and the tape's recording, inside its
first call, costs about as much as a fit with finite differences; after it, the tape's
Jacobian is several times quicker than 2-point's, the duals' somewhat slower. What cyad
brings here is exactness: 2-point's Jacobian is off in its eighth digit, and the fits agree
only as far as that lets them.

The figure (drawn when matplotlib is installed; --show opens it in a window): the Nyquist
plot (-Im Z against Re Z: the depressed semicircle of R_ct and the CPE, then the 45 degree
Warburg line) and abs(Z) against frequency, for the data, the start and the fit.
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

try:
    from scipy.optimize import approx_derivative
except ImportError:     # SciPy before 1.15 keeps it private
    from scipy.optimize._numdiff import approx_derivative

import cyad.scipy

NAMES = ["R_s", "R_ct", "Q", "alpha", "sigma"]
TRUE = np.array([20.0, 100.0, 2e-5, 0.85, 50.0])
START = np.array([40.0, 30.0, 1e-4, 0.7, 10.0])


class Counted:
    def __init__(self, fun):
        self.fun, self.calls = fun, 0

    def __call__(self, *args):
        self.calls += 1
        return self.fun(*args)


def randles(p, omega):
    """The Randles circuit's complex impedance at angular frequencies omega (p: the five
    parameters, not their logs)."""
    r_s, r_ct, q, alpha, sigma = p
    warburg = sigma * (1 - 1j) / np.sqrt(omega)
    return r_s + 1 / (1 / (r_ct + warburg) + q * (1j * omega) ** alpha)


def residuals(log_p, omega, data, weight):
    z = randles(np.exp(log_p), omega)
    return (np.concatenate([z.real, z.imag]) - data) * weight


def spectrum(frequencies):
    rng = np.random.default_rng(0)
    omega = 2 * np.pi * np.logspace(-2, 5, frequencies)
    z = randles(TRUE, omega)
    noise = 0.005 * np.abs(z) * (rng.standard_normal(frequencies)
                                 + 1j * rng.standard_normal(frequencies))
    z = z + noise
    data = np.concatenate([z.real, z.imag])
    weight = 1 / np.concatenate([np.abs(z), np.abs(z)])
    return omega, data, weight


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
    parser.add_argument("--frequencies", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="30 frequencies, 2 runs each")
    parser.add_argument("--show", action="store_true", help="show the figure in a window")
    a = parser.parse_args()
    frequencies, repeat = (30, 2) if a.quick else (a.frequencies, a.repeat)
    args = spectrum(frequencies)
    fits, rows = {}, []
    for label in ["cyad (tape)", "cyad (dual)", "2-point", "3-point"]:
        best = np.inf
        for _ in range(repeat):
            f = Counted(residuals)
            start = time.perf_counter()
            jac = (cyad.scipy.jacobian(f, engine=label[6:10]) if label.startswith("cyad")
                   else label)
            fit = least_squares(f, np.log(START), jac=jac, args=args, method="trf",
                                xtol=1e-12, ftol=1e-12, gtol=1e-12)
            best = min(best, time.perf_counter() - start)
        fits[label] = fit
        error = np.max(np.abs(np.exp(fit.x) - TRUE) / TRUE)
        versus = np.max(np.abs(np.exp(fit.x) / np.exp(fits["cyad (tape)"].x) - 1))
        rows.append([label, f"{best * 1e3:.2f}", fit.nfev, fit.njev, f.calls,
                     f"{2 * fit.cost:.4e}", f"{error:.2e}", f"{versus:.1e}"])
    print(f"least_squares (trf), a Randles circuit at {frequencies} frequencies "
          f"({2 * frequencies} residuals), tolerances 1e-12; time: min of {repeat} run(s)\n")
    table(["jac", "time [ms]", "nfev", "njev", "f calls", "2 cost", "max rel error",
           "vs tape"], rows, 1)

    # one Jacobian at the fit, each way: the first call (cyad's prepares there) and the
    # later calls, against the tape's
    fit = fits["cyad (tape)"]
    exact = cyad.scipy.jacobian(residuals, engine="tape")(fit.x, *args)
    rows = []
    for label in ["cyad (tape)", "cyad (dual)", "2-point", "3-point"]:
        if label.startswith("cyad"):
            jac = cyad.scipy.jacobian(residuals, engine=label[6:10])
        else:
            def jac(x, *args, method=label):
                return approx_derivative(residuals, x, method=method, args=args)
        start = time.perf_counter()
        jac(fit.x, *args)
        first = time.perf_counter() - start
        best = np.inf
        for _ in range(10 * repeat):
            start = time.perf_counter()
            value = jac(fit.x, *args)
            best = min(best, time.perf_counter() - start)
        rows.append([label, f"{first * 1e6:.0f}", f"{best * 1e6:.0f}",
                     f"{np.max(np.abs(value - exact)) / np.max(np.abs(exact)):.1e}"])
    print(f"\nOne Jacobian ({exact.shape[0]} x {exact.shape[1]}) at the fit; later calls: min "
          f"of {10 * repeat}\n")
    table(["jac", "first call [us]", "later calls [us]", "max difference from tape"], rows, 1)

    # standard errors from the exact Jacobian at the fit: s^2 (J^T J)^-1 in log parameters
    jacobian = exact
    s2 = 2 * fit.cost / (jacobian.shape[0] - jacobian.shape[1])
    standard = np.sqrt(np.diag(s2 * np.linalg.inv(jacobian.T @ jacobian)))
    fitted = np.exp(fit.x)
    print("\nThe parameters (cyad's fit; standard errors from s^2 (J^T J)^-1, relative)\n")
    table(["parameter", "true", "start", "fitted", "std. error", "(fitted - true) / error"],
          [[name, f"{t:.4g}", f"{s:.4g}", f"{v:.5g}", f"{e * v:.2g}",
            f"{(v - t) / (e * v):+.2f}"]
           for name, t, s, v, e in zip(NAMES, TRUE, START, fitted, standard)], 1)
    plot(args[0], args[1], fitted, a.show)


def plot(omega, data, fitted, show):
    """The Nyquist plot and |Z| of the data, the start and the fit (cyad's)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:     # the figure is optional: matplotlib comes with the docs extra
        print("\n(matplotlib is not installed: no figure)")
        return
    n = omega.size
    z_data = data[:n] + 1j * data[n:]
    grid = 2 * np.pi * np.logspace(-2, 5, 400)
    fig, (nyquist, bode) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    nyquist.plot(z_data.real, -z_data.imag, "o", ms=3, color="0.5", label="data")
    bode.loglog(omega / (2 * np.pi), np.abs(z_data), "o", ms=3, color="0.5", label="data")
    for p, style, label in [(START, "--", "start"), (fitted, "-", "fit (cyad)")]:
        z = randles(p, grid)
        color = "C1" if label == "start" else "C0"
        nyquist.plot(z.real, -z.imag, style, color=color, label=label)
        bode.loglog(grid / (2 * np.pi), np.abs(z), style, color=color, label=label)
    nyquist.set(title="Nyquist plot", xlabel="Re Z [Ohm]", ylabel="-Im Z [Ohm]",
                aspect="equal")
    nyquist.set_xlim(0, 1.05 * z_data.real.max())
    nyquist.set_ylim(0, 1.05 * (-z_data.imag).max())
    bode.set(title="|Z| against frequency", xlabel="frequency [Hz]", ylabel="|Z| [Ohm]")
    nyquist.legend()
    fig.suptitle("A Randles circuit fitted with least_squares and cyad's Jacobian")
    if show:
        plt.show()


if __name__ == "__main__":
    main()
