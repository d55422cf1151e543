"""cyad on 1, 2, 4, ... threads: the scaling table, every count timed side by side in one run.

Run: python -P asv_bench/scaling.py [--quick] [--threads 1,2,4] [--json FILE]

Rows (float64, x random; the ratio is the time on 1 thread over the time on k):
  jacobian      prepared Jacobian of tanh(A @ x) + x**2 at n = 1000 with workers=k (threads
                over chunks of directions), on engine="tape" and on the function cyad.record
                made of f (a C function on the dual engine); the replay's own pool off
  points        gradients of Rosenbrock (n = 10) at 10^4 points, cyad.at_points(workers=k)
  jvp           pushforward of sin(x) * exp(-x**2) + x**3 at n = 10^6 on engine="tape",
                cyad.set_threads(k) (threads inside the replay's elementwise work)
  gradient      gradient of Rosenbrock's function at n = 10^6 on engine="tape",
                cyad.set_threads(k)
  dask          gradients at 64 and 256 points of an f costing about 1 ms per call, on a Dask
                LocalCluster of k worker processes (one task each), against the serial loop
                (--dask; needs dask[distributed])
JAX (jax.jit, its own threads on every core) is timed beside jvp and gradient where installed.

Each row is timed in rounds that visit every thread count in turn, keeping the best time per
count, so that a machine whose speed drifts shifts all counts alike.
"""
import argparse
import functools
import json
import os
import time

import numpy as np

import cyad

ROUNDS = 7


def best_of(calls, rounds, seconds):
    """The best seconds per call of each callable in `calls` (a dict), visited in turn."""
    best = dict.fromkeys(calls, float("inf"))
    for fn in calls.values():
        fn()                                        # warm up (a prep's first record)
    for _ in range(rounds):
        for key, fn in calls.items():
            number, start = 0, time.perf_counter()
            while True:
                fn()
                number += 1
                spent = time.perf_counter() - start
                if spent >= seconds:
                    break
            best[key] = min(best[key], spent / number)
    return best


def tanh_residual(x, a):
    return np.tanh(a @ x) + x**2


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def elementwise(x):
    return np.sin(x) * np.exp(-x**2) + x**3


def costly(x, repeats):
    # about 2 us of interpreted NumPy calls per repeat on the dual engine
    total = np.sum(x * x)
    for _ in range(repeats):
        total = total + np.sum(np.sin(x) * 1e-6)
    return total


def jacobian_rows(counts, rounds, seconds):
    rng = np.random.default_rng(0)
    n = 1000
    a = rng.standard_normal((n, n)) / np.sqrt(n)
    x = rng.uniform(-1.0, 1.0, n)
    f = functools.partial(tanh_residual, a=a)
    out = np.empty((n, n))
    rows = {}
    for label, fn, engine in (("jacobian n=1000 [tape]", f, "tape"),
                              ("jacobian n=1000 [cyad.record]", cyad.record(f, x), None)):
        calls = {}
        for k in counts:
            prep = cyad.prepare_jacobian(fn, x, engine=engine, workers=k)
            calls[k] = functools.partial(cyad.jacobian, fn, x, prep=prep, out=out)
        rows[label] = best_of(calls, rounds, seconds)
    return rows


def points_rows(counts, rounds, seconds):
    points = np.random.default_rng(0).uniform(-1.0, 1.0, (10_000, 10))
    out = np.empty_like(points)
    calls = {k: functools.partial(cyad.at_points, cyad.gradient, rosenbrock, points, workers=k,
                                  out=out) for k in counts}
    return {"gradients at 10^4 points": best_of(calls, rounds, seconds)}


def with_threads(k, fn):
    def call():
        cyad.set_threads(k)
        fn()
    return call


def _block(jitted, args):
    jitted(*args).block_until_ready()


def replay_rows(counts, rounds, seconds, peers):
    n = 10**6
    x = np.random.default_rng(0).uniform(-1.0, 1.0, n)
    dx = np.ones(n)
    out = np.empty(n)
    jvp = cyad.prepare_pushforward(elementwise, x, dx, engine="tape")
    grad = cyad.prepare_gradient(rosenbrock, x, engine="tape")
    problems = {
        "jvp n=10^6 [tape]": (
            functools.partial(cyad.pushforward, elementwise, x, dx, prep=jvp, out=out),
            lambda jax, jnp: jax.jit(lambda x, dx: jax.jvp(
                lambda x: jnp.sin(x) * jnp.exp(-x**2) + x**3, (x,), (dx,))[1])),
        "gradient n=10^6 [tape]": (
            functools.partial(cyad.gradient, rosenbrock, x, prep=grad, out=out),
            lambda jax, jnp: jax.jit(jax.grad(lambda x: jnp.sum(
                100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2))))}
    rows = {}
    before = cyad.get_threads()
    try:
        for label, (cyad_call, jax_of) in problems.items():
            calls = {k: with_threads(k, cyad_call) for k in counts}
            if peers is not None:
                jax, jnp = peers
                jitted = jax_of(jax, jnp)
                args = (jnp.asarray(x), jnp.asarray(dx)) if "jvp" in label else (jnp.asarray(x),)
                calls["jax.jit"] = functools.partial(_block, jitted, args)
            rows[label] = best_of(calls, rounds, seconds)
    finally:
        cyad.set_threads(before)
    return rows


def dask_rows(counts, rounds):
    from dask.distributed import Client, LocalCluster
    f = functools.partial(costly, repeats=450)           # about 1 ms per call
    rows = {}
    for m in (64, 256):
        points = np.random.default_rng(0).uniform(-1.0, 1.0, (m, 10))
        times = {1: best_of({1: functools.partial(cyad.at_points, cyad.gradient, f, points,
                                                  engine="dual")}, rounds, 0.0)[1]}
        for k in counts:
            if k == 1:
                continue
            with LocalCluster(n_workers=k, threads_per_worker=1, processes=True) as cluster, \
                    Client(cluster) as client:
                run = functools.partial(cyad.at_points, cyad.gradient, f, points,
                                        workers=client.get_executor().map, tasks=k,
                                        engine="dual")
                times[k] = best_of({k: run}, rounds, 0.0)[k]
        rows[f"dask, f of 1 ms, {m} points"] = times
    return rows


def table(rows, counts):
    heads = [str(k) for k in counts]
    peer = any("jax.jit" in times for times in rows.values())
    lines = ["| row | " + " | ".join(f"{h} thread(s)" for h in heads)
             + (" | jax.jit |" if peer else " |"),
             "|---" * (len(heads) + 1 + peer) + "|"]
    for label, times in rows.items():
        one = times[counts[0]]
        cells = [f"{times[k] * 1e3:.3g} ms ({one / times[k]:.2f}x)" if k in times else "-"
                 for k in counts]
        if peer:
            cells.append(f"{times['jax.jit'] * 1e3:.3g} ms" if "jax.jit" in times else "-")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cpus = len(os.sched_getaffinity(0))
    default = [k for k in (1, 2, 4, 8, 16, 32, 64) if k <= cpus]
    parser.add_argument("--threads", default=",".join(map(str, default)),
                        help="thread counts, the first the reference (default: 1, 2, 4, ... "
                             "up to the CPUs this process may use)")
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    parser.add_argument("--dask", action="store_true", help="also the Dask rows")
    parser.add_argument("--json", metavar="FILE", help="also write the times as JSON")
    args = parser.parse_args(argv)
    counts = [int(k) for k in args.threads.split(",")]
    rounds, seconds = (3, 0.05) if args.quick else (ROUNDS, 0.2)
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        peers = (jax, jax.numpy)
    except ImportError:
        peers = None
    rows = {}
    replay_before = cyad.get_threads()
    cyad.set_threads(1)     # threads over chunks and points alone
    try:
        rows.update(jacobian_rows(counts, rounds, seconds))
        rows.update(points_rows(counts, rounds, seconds))
    finally:
        cyad.set_threads(replay_before)
    rows.update(replay_rows(counts, rounds, seconds, peers))
    if args.dask:
        rows.update(dask_rows(counts, min(rounds, 3)))
    print(f"{cpus} CPUs; best of {rounds} rounds; (ratio to {counts[0]} thread(s))")
    print(table(rows, counts))
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"cpus": cpus, "rows": {label: {str(k): t for k, t in times.items()}
                                              for label, times in rows.items()}}, file, indent=1)


if __name__ == "__main__":
    main()
