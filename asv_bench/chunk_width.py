"""Time cyad.jacobian of Python callables over chunk widths: the evidence for the default chunk.

Run: python -P asv_bench/chunk_width.py [--quick]
For every problem and size it prints the time per Jacobian for each chunk width, as a ratio to
the best width measured, and marks the width cyad picks by default.
"""
import argparse
import time

import numpy as np

import cyad


def per_call(fn, seconds):
    fn()
    samples, deadline = [], time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(samples) < 3:
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return min(samples)


def prepared_time(f, x, chunk, seconds):
    """The time of a prepared jacobian call with out= at this chunk (None: the default)."""
    prep = cyad.prepare_jacobian(f, x, chunk=chunk)
    out = np.empty(np.shape(f(x)) + x.shape)
    return per_call(lambda: cyad.jacobian(f, x, prep=prep, out=out), seconds)


def problems(n):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)) / np.sqrt(n)
    return {
        "elementwise sin(x)*exp(-x**2)+x**3": lambda x: np.sin(x) * np.exp(-x**2) + x**3,
        "dense tanh(A @ x) + x**2": lambda x: np.tanh(a @ x) + x**2,
        "banded x[1:]*x[:-1] - x[1:]": lambda x: x[1:] * x[:-1] - x[1:],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="shorter timings")
    args = parser.parse_args()
    seconds = 0.05 if args.quick else 0.3
    for n in (10, 100, 1000):
        x = np.linspace(0.1, 1.0, n)
        widths = sorted({w for w in (1, 2, 4, 8, 16, 32, 64, 128, 256, n) if w <= n})
        default = cyad.default_chunk(n, n)
        for name, f in problems(n).items():
            times = {w: prepared_time(f, x, w, seconds) for w in widths}
            t_default = prepared_time(f, x, None, seconds)
            best = min(times.values())
            cells = "  ".join(f"{w}:{t / best:5.2f}" for w, t in times.items())
            print(f"n={n:5d} {name:38s} best {best * 1e6:9.1f} us | default chunk {default}: "
                  f"{t_default / best:4.2f}x best | {cells}")


if __name__ == "__main__":
    main()
