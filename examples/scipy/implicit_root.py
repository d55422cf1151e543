"""Implicit differentiation of scipy.optimize.root
===============================================

Implicit differentiation of scipy.optimize.root inside a differentiated function.

    python examples/scipy/implicit_root.py [--quick] [--show]

The steady state z(theta) of a small recurrent network solves g(z, theta) = 0 with
g(z, theta) = z - tanh(W z + theta); scipy.optimize.root finds it, on plain floats, so cyad
cannot see through it. `cyad.custom_derivative` gives it the implicit-function rules:
with s = 1 - tanh(W z + theta)^2 (the slope at the solution) and J = I - diag(s) W,

    dz = J^-1 (s * dtheta)                 (the JVP)
    gtheta = s * J^-T gz                   (the VJP)

written in NumPy operations on the solution z(theta) itself (a call of the custom function,
so that cyad differentiates the rules again): every order, on every engine. The script
compares the gradient and the Hessian of a loss of z(theta) with central differences of
the solver, and with the derivatives of the unrolled fixed-point iteration
z <- tanh(W z + theta) (W is a contraction, so its derivatives converge to the same).

The figure (drawn when matplotlib is installed; --show opens it in a window): the loss along
a line theta + s d, every point a solve by scipy.optimize.root, beside the first and second-
order Taylor models at s = 0 from cyad's gradient and Hessian of it.
"""
import argparse

import numpy as np
from scipy.optimize import root

import cyad

N = 6
W = 0.4 * np.cos(np.arange(N * N).reshape(N, N) * 1.3) / np.sqrt(N)   # a contraction


def _residual(z, theta):
    return z - np.tanh(W @ z + theta)


def _residual_jacobian(z, theta):
    s = 1.0 - np.tanh(W @ z + theta) ** 2
    return np.eye(len(z)) - s[:, None] * W


@cyad.custom_derivative
def steady_state(theta):
    """The z solving z = tanh(W z + theta), by scipy.optimize.root on plain values."""
    theta = np.asarray(theta, dtype=np.float64)
    solution = root(_residual, np.zeros_like(theta), args=(theta,), jac=_residual_jacobian,
                    tol=1e-13)
    if np.max(np.abs(_residual(solution.x, theta))) > 1e-13:
        raise RuntimeError(f"steady_state: {solution.message}")
    return solution.x


def _slope_and_jacobian(theta):
    z = steady_state(theta)
    s = 1.0 - np.tanh(W @ z + theta) ** 2
    return z, s, np.eye(N) - s[:, None] * W


@steady_state.defjvp
def _steady_state_jvp(primals, tangents):
    (theta,), (t,) = primals, tangents
    z, s, jacobian = _slope_and_jacobian(theta)
    return z, np.linalg.solve(jacobian, s * t)


@steady_state.defvjp
def _steady_state_vjp(primals, cotangent):
    (theta,) = primals
    _, s, jacobian = _slope_and_jacobian(theta)
    return (s * np.linalg.solve(jacobian.T, cotangent),)


def loss(theta):
    z = steady_state(theta)
    return np.sum(z ** 2) + theta @ z


def unrolled_loss(theta, steps=200):
    """The same loss with z by fixed-point iteration, which cyad differentiates directly."""
    z = np.zeros_like(theta)
    for _ in range(steps):
        z = np.tanh(W @ z + theta)
    return np.sum(z ** 2) + theta @ z


def _central(f, x, h=1e-5):
    rows = []
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = h
        rows.append((f(x + e) - f(x - e)) / (2 * h))
    return np.array(rows)


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="(runs as fast either way)")
    parser.add_argument("--show", action="store_true", help="show the figure in a window")
    a = parser.parse_args()
    theta = np.linspace(-1.0, 1.0, N)
    for engine in ("dual", "tape"):
        gradient = cyad.gradient(loss, theta, engine=engine)
        hessian = cyad.hessian(loss, theta, engine=engine)
        print(f"engine={engine}")
        print("  gradient vs central differences of root:  ",
              f"{np.max(np.abs(gradient - _central(loss, theta))):.1e}")
        print("  gradient vs the unrolled iteration:       ",
              f"{np.max(np.abs(gradient - cyad.gradient(unrolled_loss, theta))):.1e}")
        print("  Hessian vs the unrolled iteration's:      ",
              f"{np.max(np.abs(hessian - cyad.hessian(unrolled_loss, theta))):.1e}")
    plot(theta, gradient, hessian, a.show)


def plot(theta, gradient, hessian, show):
    """The loss along a line through theta, each point a solve by root, beside the first and
    second-order Taylor models from cyad's gradient and Hessian there."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:     # the figure is optional: matplotlib comes with the docs extra
        print("\n(matplotlib is not installed: no figure)")
        return
    direction = np.cos(np.arange(N) + 0.5)
    s = np.linspace(-1.5, 1.5, 61)
    slope, curvature = gradient @ direction, direction @ hessian @ direction
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    ax.plot(s, [loss(theta + t * direction) for t in s], color="C0", lw=3,
            label="loss(theta + s d), z by scipy.optimize.root")
    ax.plot(s, loss(theta) + slope * s, "--", color="C1", label="first order: cyad's gradient")
    ax.plot(s, loss(theta) + slope * s + 0.5 * curvature * s ** 2, ":", color="C2", lw=2,
            label="second order: cyad's Hessian")
    ax.plot(0.0, loss(theta), "ko")
    ax.set(xlabel="s", ylabel="loss",
           title="Derivatives through a root solve: the Taylor models at theta")
    ax.legend()
    if show:
        plt.show()


if __name__ == "__main__":
    main()
