"""Fitting an ODE's parameters: p an argument of the right-hand side, exact sensitivities
======================================================================================

The four rates p = (a, b, c, d) of the Lotka-Volterra equations

    prey' = a prey - b prey predator,    predator' = -c predator + d prey predator,

fitted by `scipy.optimize.least_squares` to noisy counts of both species at 40 times, the
right-hand side written as SciPy takes it: ``rhs(t, u, p)``, p passed as ``args=(p,)``.

    python examples/scipy/ode_parameter_fit.py [--points 40] [--repeat 3] [--quick] [--show]

The residuals' Jacobian with respect to p comes from the forward sensitivities S = du/dp,
solved with u: S' = (d rhs/du) S + d rhs/dp. Both blocks are one call of a prepared cyad
Jacobian of ``rhs(t, u, p)`` in its arguments 1 and 2 (``argnums=(1, 2)``, ``flat=True``:
one 2 x 6 matrix), prepared once: t and p are arguments, inputs of the tape, so the tape
records rhs once for every step of every solve at every p the fit tries (``prep.records``).
Against it, the same fit with least_squares' own finite differences of the solutions (one
more solve per parameter per Jacobian). The script prints both fits' rates, cost, solves,
right-hand side evaluations (with cyad, each beside one replay of the Jacobian's tape,
which does not evaluate rhs) and time (the minimum over --repeat runs).

The figure (drawn when matplotlib is installed; --show opens it in a window): the counts
and the fitted trajectories.
"""
import argparse
import time

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import least_squares

import cyad

TRUE = np.array([1.0, 0.1, 1.5, 0.075])     # a, b, c, d
U0 = np.array([10.0, 5.0])                  # prey, predator at t = 0
START = np.array([0.9, 0.12, 1.3, 0.09])     # the fit's first guess
TOLERANCES = dict(rtol=1e-9, atol=1e-9)


class Counted:
    """rhs, counting its evaluations."""

    def __init__(self):
        self.calls = 0

    def __call__(self, t, u, p):
        self.calls += 1
        return rhs(t, u, p)


def rhs(t, u, p):
    prey, predator = u[0], u[1]
    return np.stack([p[0] * prey - p[1] * prey * predator,
                     -p[2] * predator + p[3] * prey * predator])


def data(points, rng):
    times = np.linspace(0.0, 15.0, points)
    exact = solve_ivp(rhs, (0.0, 15.0), U0, t_eval=times, args=(TRUE,), method="DOP853",
                      **TOLERANCES).y
    return times, exact * (1.0 + 0.05 * rng.standard_normal(exact.shape))


class Sensitivities:
    """u(t) and du/dp at the data's times, one solve of u and S together per p."""

    def __init__(self, times, counts):
        self.times, self.counts = times, counts
        self.solves = 0
        self.evaluations = 0     # of rhs on floats (each with one replay of the Jacobian)
        self.prep = cyad.prepare_jacobian(rhs, 0.0, U0, START, argnums=(1, 2), flat=True,
                                          engine="tape")
        self.J = np.empty((2, 6))   # [d rhs/du | d rhs/dp]
        self._p = None

    def augmented(self, t, z, p):
        u, S = z[:2], z[2:].reshape(2, 4)
        cyad.jacobian(rhs, t, u, p, argnums=(1, 2), flat=True, prep=self.prep, out=self.J)
        self.evaluations += 1
        return np.concatenate([rhs(t, u, p), (self.J[:, :2] @ S + self.J[:, 2:]).ravel()])

    def solve(self, p):
        if self._p is None or not np.array_equal(p, self._p):
            z0 = np.concatenate([U0, np.zeros(8)])
            sol = solve_ivp(self.augmented, (0.0, self.times[-1]), z0, t_eval=self.times,
                            args=(p,), method="DOP853", **TOLERANCES)
            self.solves += 1
            self._p = p.copy()
            self._u, self._S = sol.y[:2], sol.y[2:].reshape(2, 4, -1)
        return self._u, self._S

    def residuals(self, p):
        return (self.solve(p)[0] - self.counts).ravel()

    def jacobian(self, p):
        # d(u_i(t_k))/dp_j in the residuals' order (species, then time)
        return self.solve(p)[1].transpose(0, 2, 1).reshape(-1, 4)


def fit_with_sensitivities(times, counts):
    model = Sensitivities(times, counts)
    fit = least_squares(model.residuals, START, jac=model.jacobian, bounds=(0.0, np.inf),
                        x_scale="jac")
    return fit, model.solves, model.evaluations, model.prep


def fit_with_differences(times, counts):
    counted = Counted()
    solves = [0]

    def residuals(p):
        solves[0] += 1
        sol = solve_ivp(counted, (0.0, times[-1]), U0, t_eval=times, args=(p,),
                        method="DOP853", **TOLERANCES)
        return (sol.y - counts).ravel()

    fit = least_squares(residuals, START, bounds=(0.0, np.inf), x_scale="jac")
    return fit, solves[0], counted.calls


def timed(run, repeat):
    best, result = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def main():
    parser = argparse.ArgumentParser(
        description="Lotka-Volterra rates fitted with exact forward sensitivities")
    parser.add_argument("--points", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="20 points, one run")
    parser.add_argument("--show", action="store_true", help="show the figure in a window")
    a = parser.parse_args()
    points, repeat = (20, 1) if a.quick else (a.points, a.repeat)
    times, counts = data(points, np.random.default_rng(0))

    t_cyad, (fit, solves, evaluations, prep) = timed(
        lambda: fit_with_sensitivities(times, counts), repeat)
    t_fd, (fd, fd_solves, fd_evaluations) = timed(
        lambda: fit_with_differences(times, counts), repeat)

    print(f"Lotka-Volterra, {points} times, 2 species, 4 rates; true rates {TRUE}")
    print(f"{'Jacobian':<28} | {'rates a, b, c, d':<40} | {'cost':>9} | {'solves':>6} | "
          f"{'rhs evaluations':>15} | {'time':>8}")
    print("-" * 120)
    for name, r, s, e, t in [("cyad sensitivities", fit, solves, evaluations, t_cyad),
                             ("finite differences", fd, fd_solves, fd_evaluations, t_fd)]:
        rates = ", ".join(f"{v:.6f}" for v in r.x)
        print(f"{name:<28} | {rates:<40} | {r.cost:9.4f} | {s:6d} | {e:15d} | "
              f"{t * 1e3:6.1f} ms")
    print(f"\nlargest difference between the two fits' rates: "
          f"{np.max(np.abs(fit.x - fd.x)):.2e}")
    print(f"the prepared Jacobian of rhs(t, u, p): engine {prep.engine}, recordings of rhs "
          f"{prep.records}, preparations {prep.preparations} (t and p change at every call)")
    plot(times, counts, fit.x, a.show)


def plot(times, counts, p, show):
    """The counts and the fitted trajectories."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:     # the figure is optional: matplotlib comes with the docs extra
        print("\n(matplotlib is not installed: no figure)")
        return
    fine = np.linspace(0.0, times[-1], 400)
    u = solve_ivp(rhs, (0.0, times[-1]), U0, t_eval=fine, args=(p,), method="DOP853",
                  **TOLERANCES).y
    fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
    for k, (name, color) in enumerate([("prey", "C0"), ("predators", "C1")]):
        ax.plot(times, counts[k], "o", ms=4, color=color, label=f"{name}, counted")
        ax.plot(fine, u[k], color=color, label=f"{name}, fitted")
    ax.set(xlabel="t", ylabel="count", title="Lotka-Volterra rates fitted with exact "
                                             "sensitivities (p an argument of rhs)")
    ax.legend()
    if show:
        plt.show()


if __name__ == "__main__":
    main()
