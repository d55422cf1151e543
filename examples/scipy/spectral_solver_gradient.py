"""A gradient through a spectral solver: Burgers' equation at 65 536 points
=========================================================================

The gradient of a loss through a pseudo-spectral solver of the viscous Burgers equation with
respect to its whole initial condition, 65 536 numbers, by cyad's tape (reverse mode through
numpy.fft), checked against central differences along a random direction, and its time
beside the forward solve's (and JAX's, where JAX is installed).

    python examples/scipy/spectral_solver_gradient.py [--n 65536] [--steps 100] [--repeat 3]
                                                      [--quick] [--show]

On the periodic interval [0, 2 pi), n points,

    u_t + (u^2 / 2)_x = nu u_xx,    nu = 5e-4,

from a random initial field: the Fourier modes 1 to n / 128 with random phases and
amplitudes falling as k^-1, scaled to an rms of 1 (a "Burgers turbulence" start, seed 0).
The solver holds the state as its rfft and takes --steps steps of the integrating-factor
Heun method (the diffusion exactly, as the factor exp(-nu k^2 dt), the advection
explicitly), the nonlinear term dealiased by the 2/3 rule; dt = 0.4 dx / max abs(u0) (a
Courant number of 0.4). The steps cover a short stretch of the flow (the field moves by
about 0.4 --steps grid points): its steepest fronts steepen (max abs(u_x) grows, printed)
while the viscosity damps the highest modes.

The loss is a data assimilation's: the mean squared mismatch of the final state with the
final state from a "true" initial field,

    loss(u0) = mean((solve(u0) - solve(u_true))^2),

at a first guess u0, the true field plus a smooth perturbation. Its gradient with respect
to u0 (all n values) is what an adjoint solver gives (4D-Var); here cyad's tape records the
solver once (engine="tape", prepared), and every call replays the recording in compiled
code: the values forward, then one reverse sweep with the transposes of the transforms.

The gradient is checked against the central difference of the loss along a random
direction d, (loss(u0 + h d) - loss(u0 - h d)) / 2h, h = 1e-3 (the loss is smooth in u0,
and the difference's error of order h^2 is below 1e-6 of it). Times are the minimum over
--repeat runs: the forward solve in NumPy, and the prepared gradient (value and gradient
together), its first call (which records the solver) apart from the later ones (which
replay it). --quick runs n = 1024 points and 50 steps.

What it costs at the full size: a replay (value and gradient) takes about three times the
forward solve, the first call, which runs the solver's steps in Python on tracers and builds
the tape, some thirty times. The tape keeps every step's intermediate arrays for the reverse
sweep, about 3 GB at n = 65 536 and 100 steps (it grows with n times --steps).

The figure (drawn when matplotlib is installed; --show opens it in a window): the initial
and final fields (a window of the interval) and the gradient with respect to u0.
"""
import argparse
import os
import time

# FFTs and BLAS on one thread unless the environment says otherwise, as cyad's replay runs
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np

import cyad

NU = 5e-4


class Solver:
    """Burgers' equation on n points, `steps` steps of dt, written once for an array
    namespace xp (NumPy, and jax.numpy for the comparison)."""

    def __init__(self, n, steps, dt):
        self.n, self.steps, self.dt = n, steps, dt
        k = np.fft.rfftfreq(n, 1.0 / n)
        self.decay = np.exp(-NU * k ** 2 * dt)      # the integrating factor
        # -(u^2 / 2)_x in Fourier space, the top third of the modes dropped (2/3 rule)
        self.advection = -0.5j * k * (k < n / 3)

    def nonlinear(self, xp, u_hat):
        u = xp.fft.irfft(u_hat, n=self.n)
        return self.advection * xp.fft.rfft(u * u)

    def step(self, xp, u_hat):
        # integrating-factor Heun: a predictor to t + dt, then the trapezoidal corrector
        n0 = self.nonlinear(xp, u_hat)
        predicted = self.decay * (u_hat + self.dt * n0)
        return self.decay * (u_hat + 0.5 * self.dt * n0) \
            + 0.5 * self.dt * self.nonlinear(xp, predicted)

    def solve(self, u0, xp=np):
        u_hat = xp.fft.rfft(u0)
        for _ in range(self.steps):
            u_hat = self.step(xp, u_hat)
        return xp.fft.irfft(u_hat, n=self.n)


def random_field(n, rng, modes):
    k = np.arange(1, modes + 1)
    spectrum = np.zeros(n // 2 + 1, complex)
    spectrum[1:modes + 1] = np.exp(2j * np.pi * rng.random(modes)) / k
    u = np.fft.irfft(spectrum, n=n)
    return u / np.sqrt(np.mean(u ** 2))


def best_time(fun, repeat):
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        result = fun()
        best = min(best, time.perf_counter() - start)
    return best, result


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
    parser.add_argument("--n", type=int, default=2 ** 16)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="n = 1024, 50 steps, 2 runs each")
    parser.add_argument("--show", action="store_true", help="show the figure in a window")
    a = parser.parse_args()
    n, steps, repeat = (2 ** 10, 50, 2) if a.quick else (a.n, a.steps, a.repeat)

    rng = np.random.default_rng(0)
    x = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    truth = random_field(n, rng, max(n // 128, 8))
    dt = 0.4 * (2 * np.pi / n) / np.max(np.abs(truth))
    solver = Solver(n, steps, dt)
    target = solver.solve(truth)
    guess = truth + 0.3 * np.sin(3 * x + 1.0) * np.exp(np.cos(x))

    def loss(u0):
        return np.mean((solver.solve(u0) - target) ** 2)

    slope = [np.max(np.abs(np.fft.irfft(1j * np.fft.rfftfreq(n, 1.0 / n) * np.fft.rfft(u),
                                          n=n))) for u in (truth, target)]
    print(f"Burgers' equation, n = {n} points, {steps} steps of dt = {dt:.3g} (t = "
          f"{steps * dt:.3g}), nu = {NU}, max |u_x| from {slope[0]:.3g} to {slope[1]:.3g}; "
          f"the gradient of the loss w.r.t. all {n} initial values\n")
    forward, value = best_time(lambda: loss(guess), repeat)
    # the prep records the solver at its first call, and replays the recording at every call
    prep = cyad.prepare_gradient(loss, guess, engine="tape")
    first, _ = best_time(lambda: cyad.value_and_gradient(loss, guess, prep=prep), 1)
    backward, (tape_value, gradient) = best_time(
        lambda: cyad.value_and_gradient(loss, guess, prep=prep), repeat)

    # the check: a central difference along a random direction
    direction = rng.standard_normal(n)
    h = 1e-3
    central = (loss(guess + h * direction) - loss(guess - h * direction)) / (2 * h)
    along = gradient @ direction

    rows = [["forward solve (NumPy)", f"{forward * 1e3:.1f}", "1.0", f"{value:.10e}"],
            ["cyad: first call (records the solver)", f"{first * 1e3:.1f}",
             f"{first / forward:.1f}", ""],
            ["cyad: value and gradient (replay)", f"{backward * 1e3:.1f}",
             f"{backward / forward:.1f}", f"{tape_value:.10e}"]]
    jax_row = with_jax(solver, target, guess, direction, repeat)
    if jax_row is not None:
        rows.append(jax_row[:4])
    table(["", "time [ms]", "x forward", "loss"], rows, 1)
    print("\nThe derivative along a random direction d\n")
    table(["", "d loss / d u0 along d", "relative difference"],
          [["cyad: gradient @ d", f"{along:.12e}", ""],
           [f"central difference, h = {h:g}", f"{central:.12e}",
            f"{abs(along - central) / abs(central):.1e}"]], 1)
    if jax_row is not None:
        print(f"\nJAX's gradient (jax.grad, float64): max difference from cyad's "
              f"{np.max(np.abs(jax_row[4] - gradient)) / np.max(np.abs(gradient)):.1e} "
              "(relative to the largest entry)")
    plot(x, guess, solver.solve(guess), target, gradient, a.show)


def with_jax(solver, target, guess, direction, repeat):
    """JAX's value and gradient of the same solver (jit-compiled, the steps a fori_loop),
    where JAX is installed: the row of the table and the gradient."""
    try:
        import jax
    except ImportError:
        print("(JAX is not installed: no comparison)\n")
        return None
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def loss(u0):
        u_hat = jax.lax.fori_loop(0, solver.steps, lambda i, u: solver.step(jnp, u),
                                  jnp.fft.rfft(u0))
        return jnp.mean((jnp.fft.irfft(u_hat, n=solver.n) - target) ** 2)

    value_and_grad = jax.jit(jax.value_and_grad(loss))
    start = time.perf_counter()
    jax.block_until_ready(value_and_grad(guess))
    compiled = time.perf_counter() - start
    best, (value, gradient) = best_time(
        lambda: jax.block_until_ready(value_and_grad(guess)), repeat)
    return [f"JAX: value and gradient (jit; compiling {compiled * 1e3:.0f} ms)",
            f"{best * 1e3:.1f}", "", f"{float(value):.10e}", np.asarray(gradient)]


def plot(x, guess, final, target, gradient, show):
    """The fields over a window of the interval, and the gradient."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:     # the figure is optional: matplotlib comes with the docs extra
        print("\n(matplotlib is not installed: no figure)")
        return
    window = x < 0.5
    fig, (fields, grad) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    fields.plot(x[window], guess[window], color="0.6", label="u0 (first guess)")
    fields.plot(x[window], final[window], color="C0", label="solve(u0)")
    fields.plot(x[window], target[window], "--", color="C1", label="target")
    fields.set(title="the fields on [0, 0.5)", xlabel="x", ylabel="u")
    fields.legend()
    grad.plot(x, gradient, lw=0.5)
    grad.set(title="d loss / d u0", xlabel="x")
    fig.suptitle("Burgers' equation: the gradient with respect to the initial field")
    if show:
        plt.show()


if __name__ == "__main__":
    main()
