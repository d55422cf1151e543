"""python -m cyad: differentiate a few typical functions, check them, and time a prepared call."""
import time

import numpy as np

import cyad


def robertson(y, u):
    """Robertson's stiff chemical kinetics, written in place: y = f(u)."""
    k1, k2, k3 = 0.04, 3e7, 1e4
    y[0] = -k1 * u[0] + k3 * u[1] * u[2]
    y[1] = k1 * u[0] - k3 * u[1] * u[2] - k2 * u[1] ** 2
    y[2] = k2 * u[1] ** 2


def robertson_jacobian(u):
    k1, k2, k3 = 0.04, 3e7, 1e4
    return np.array([
        [-k1, k3 * u[2], k3 * u[1]],
        [k1, -k3 * u[2] - 2 * k2 * u[1], -k3 * u[1]],
        [0.0, 2 * k2 * u[1], 0.0],
    ])


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def copy(y, x):
    y[...] = x


def _per_call(fn, seconds=0.2):
    """Median time per call of fn over repeated batches."""
    fn()
    batch, samples = 1000, []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(samples) < 5:
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter() - start) / batch)
    return float(np.median(samples))


def main():
    np.set_printoptions(precision=6, suppress=False)
    u = np.array([1.0, 2e-5, 1e-2])
    y = np.zeros(3)
    jac = cyad.jacobian(robertson, u, y=y)
    print("Jacobian of Robertson's kinetics at u =", u)
    print(jac)
    print("  max |error| against the analytic Jacobian:", np.abs(jac - robertson_jacobian(u)).max())

    x = np.array([0.1, 0.2, 0.3])
    value, grad = cyad.value_and_gradient(rosenbrock, x)
    print("\nRosenbrock at", x, "=", value)
    print("  gradient:", grad)

    print("\nd/dt [sin(t) * exp(-t**2)] at t = 0.5:",
          cyad.derivative(lambda t: np.sin(t) * np.exp(-t**2), 0.5))

    print("\nPrepared calls with out= of f(y, x): y[...] = x (no heap allocation),")
    print("beside the same memory work by hand (two np.copyto calls):")
    copyto = np.copyto
    for n in (10, 100):
        x, dx, y = np.arange(n, dtype=float), np.ones(n), np.zeros(n)
        out, pair = np.zeros(n), (np.zeros(n), np.zeros(n))
        prep = cyad.prepare_pushforward(copy, x, dx, y=y)
        pushforward, value_and_pushforward = cyad.pushforward, cyad.value_and_pushforward
        t_hand = _per_call(lambda: (copyto(y, x), copyto(out, dx)))
        t_push = _per_call(lambda: pushforward(copy, x, dx, y=y, prep=prep, out=out))
        t_value = _per_call(lambda: value_and_pushforward(copy, x, dx, y=y, prep=prep, out=pair))
        print(f"  n = {n:3d}: pushforward {t_push * 1e9:5.0f} ns ({t_push / t_hand:.2f}x),"
              f" value_and_pushforward {t_value * 1e9:5.0f} ns ({t_value / t_hand:.2f}x),"
              f" by hand {t_hand * 1e9:5.0f} ns")


if __name__ == "__main__":
    main()
