"""python -m cyad: the classic profiling experiment, and the same measurement for your function.

    python -m cyad [--n 10 100] [--operators pushforward value_and_pushforward] [--json]
    python -m cyad profile module:function --n 100 [--operator jacobian] [--two-argument]

The first form times f(y, x): y[...] = x under prepared pushforward and
value_and_pushforward with out=: as a Python callable, as a C function behind a
FunctionWrapper, and from a nogil Cython loop. Beside each row stands the same
memory work by hand (two np.copyto; two memcpy from Python; the copies through a
function pointer in a nogil loop), so the overhead of differentiation reads as a
ratio. The second form profiles a function of yours (see cyad.profile).
"""
import argparse
import importlib
import inspect
import json
import sys

import numpy as np

import cyad
from cyad._reporting import profile as _profile
from cyad._reporting.profiling import (Profile, allocations_per_call, format_count, format_time,
                                       time_samples)


def copy(y, x):
    y[...] = x


def _baseline(label, fn, seconds):
    times, calls = time_samples(fn, seconds)
    return Profile(label, times, calls, allocations_per_call(fn), 1, 1, 1, "by hand")


def _nogil(operator, n, seconds):
    """The C copy from a nogil Cython loop, and the copies by hand in a nogil loop."""
    x, dx, y = np.arange(n, dtype=float), np.ones(n), np.zeros(n)
    value, out = np.zeros(n), np.zeros(n)
    prep = cyad.prepare_pushforward(_profile.copy_function(), x, dx, y=y)
    samples = []
    while sum(sample[0] for sample in samples) * 1000 < seconds or len(samples) < 5:
        samples.append(_profile.nogil_copy_times(prep, x, dx, y, value, out, operator, 1000))
    times = np.array(samples)[:, :2].T
    # allocations of the loop per call: two loop lengths, so the Python call around it cancels
    run = _profile.nogil_copy_times
    counts = []
    for calls in (1000, 2000):
        run(prep, x, dx, y, value, out, operator, calls)   # warm the interpreter's free lists
        counts.append(_profile.count_allocations(
            lambda calls=calls: run(prep, x, dx, y, value, out, operator, calls), 1))
    allocations = (counts[1] - counts[0]) / 1000
    return (Profile("nogil Cython loop", times[0], 1000, allocations, 1, prep.chunk, prep.width,
                    "c"),
            Profile("copies through a function pointer, nogil", times[1], 1000, 0.0, 1, 1, 1,
                    "by hand"))


def classic_rows(n, operator, seconds):
    """(cyad, by hand) profile pairs of the classic experiment for one size and operator."""
    x, dx, y = np.arange(n, dtype=float), np.ones(n), np.zeros(n)
    out = np.zeros(n)
    copyto = np.copyto
    c_copy = _profile.copy_function()
    by_hand = _profile.copy_by_hand
    return [
        (cyad.profile(operator, copy, x, dx, y=y, seconds=seconds, label="Python callable"),
         _baseline("two np.copyto", lambda: (copyto(y, x), copyto(out, dx)), seconds)),
        (cyad.profile(operator, c_copy, x, dx, y=y, seconds=seconds, label="C function"),
         _baseline("two memcpy from Python", lambda: by_hand(x, dx, y, out), seconds)),
        _nogil(operator, n, seconds),
    ]


def print_table(n, operator, rows):
    print(f"\n{operator} of f(y, x): y[...] = x, n = {n}, prepared, out=")
    print(f"  {'':22s} {'samples':>8s} {'evals':>6s} {'min':>9s} {'median':>9s} {'mean':>9s} "
          f"{'max':>9s} {'allocs':>7s} | {'by hand':>9s} {'allocs':>6s}  ratio")
    for mine, hand in rows:
        print(f"  {mine.label:22s} {mine.samples:8d} {mine.calls_per_sample:6d} "
              f"{format_time(mine.min):>9s} {format_time(mine.median):>9s} "
              f"{format_time(mine.mean):>9s} {format_time(mine.max):>9s} "
              f"{format_count(mine.allocations):>7s} | {format_time(hand.median):>9s} "
              f"{format_count(hand.allocations):>6s}  {mine.median / hand.median:5.2f}x   "
              f"({hand.label})")


def wrapper_cost(n):
    """Median seconds per call of the C copy through its FunctionWrapper and directly."""
    x, dx, y, value, out = (np.zeros(n) for _ in range(5))
    prep = cyad.prepare_pushforward(_profile.copy_function(), x, dx, y=y)
    samples = np.array([_profile.nogil_copy_times(prep, x, dx, y, value, out, "pushforward",
                                                  10_000)
                        for _ in range(50)])
    return np.median(samples[:, 2:], axis=0)


def empty_call():
    """Median seconds per call of an empty compiled function with the operators' arguments."""
    x, pair = np.zeros(10), (np.zeros(10), np.zeros(10))
    empty, f = _profile.empty, _profile.copy_function()
    return float(np.median(time_samples(lambda: empty(f, x, x, y=x, prep=None, out=pair), 0.2)[0]))


def classic(args):
    results = []
    for n in args.n:
        for operator in args.operators:
            print(f"measuring {operator}, n = {n} ...", file=sys.stderr)
            rows = classic_rows(n, operator, args.seconds)
            results.append({"n": n, "operator": operator,
                            "rows": [{"cyad": mine.as_dict(), "by_hand": hand.as_dict(),
                                      "ratio": mine.median / hand.median}
                                     for mine, hand in rows]})
            if not args.json:
                print_table(n, operator, rows)
    costs = {n: wrapper_cost(n) for n in args.n}
    floor = empty_call()
    if args.json:
        json.dump({"tables": results, "empty_call": floor,
                   "function_wrapper_call": {n: {"through_wrapper": through, "direct": direct}
                                             for n, (through, direct) in costs.items()}},
                  sys.stdout, indent=1)
        print()
        return
    print(f"\nAn empty compiled function with value_and_pushforward's arguments: "
          f"{format_time(floor)} per call from Python.")
    print("The C copy called in a nogil loop through its FunctionWrapper, and directly:")
    for n, (through, direct) in costs.items():
        print(f"  n = {n}: {format_time(through)} and {format_time(direct)} per call "
              f"({through / direct:.2f}x)")


def profile_user_function(args):
    module_name, _, name = args.function.partition(":")
    f = getattr(importlib.import_module(module_name), name)
    x = np.random.default_rng(0).uniform(0.5, 1.5, args.n)
    two_argument = args.two_argument or len(inspect.signature(f).parameters) == 2
    y_shape = args.out_shape if args.out_shape is not None else x.shape
    y = np.zeros(y_shape) if two_argument else None
    operator = args.operator or ("jacobian" if two_argument or np.ndim(f(x)) else "gradient")
    dx = None
    if operator.endswith("pushforward"):
        dx = np.ones_like(x)
    elif operator.endswith("pullback"):
        dx = np.ones(y_shape if two_argument else np.shape(f(x)))
    result = cyad.profile(operator, f, x, dx, y=y, chunk=args.chunk, seconds=args.seconds,
                          label=f"{operator} of {args.function}, n = {args.n}")
    print(json.dumps(result.as_dict(), indent=1) if args.json else result)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m cyad", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=0.5, help="sampling time per row")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    commands = parser.add_subparsers(dest="command")
    mine = commands.add_parser("profile", help="profile a function of yours")
    mine.add_argument("function", help="module:function, f(x) or f(y, x)")
    mine.add_argument("--n", type=int, default=100, help="size of x (random in [0.5, 1.5])")
    mine.add_argument("--operator", choices=cyad._reporting.profiling.OPERATORS,
                      help="default: gradient for scalar f, else jacobian")
    mine.add_argument("--chunk", type=int)
    mine.add_argument("--two-argument", action="store_true", help="f(y, x) writes into y")
    mine.add_argument("--out-shape", type=int, nargs="+", help="y's shape (default: x's)")
    mine.add_argument("--seconds", type=float, default=1.0)
    mine.add_argument("--json", action="store_true")
    parser.add_argument("--n", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--operators", nargs="+", default=["pushforward", "value_and_pushforward"],
                        choices=["pushforward", "value_and_pushforward"])
    args = parser.parse_args(argv)
    if args.command == "profile":
        profile_user_function(args)
    else:
        classic(args)


if __name__ == "__main__":
    main()
