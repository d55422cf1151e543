"""cyad and its peers on the same problems, timed side by side in one run.

Run: python -P asv_bench/peers.py [--quick] [--problems P1,P3] [--json FILE]

Problems (x random, float64 everywhere):
  P1  the copy f(y, x): y[...] = x: pushforward and value_and_pushforward, n = 10, 100
  P2  JVP of sin(x)*exp(-x**2) + x**3, n = 10 ... 10**6
  P3  Jacobian of tanh(A @ x) + x**2 (A fixed, random), n = 10, 100, 1000
  P4  gradient of Rosenbrock's function, n = 10, 100, 1000, 10**4
  P5  Hessian of Rosenbrock's function, n = 10, 100
  P6  Hessian-vector product H(x) @ v of Rosenbrock's function, n = 100, 1000
  P7  gradient of an MLP's loss: 32 inputs, 128 tanh hidden units, 8 linear outputs, mean
      squared error on a fixed random batch of 128 samples; its 5 256 parameters are x, one
      flat vector that f slices and reshapes into the layers' weights and biases
  P8  third derivative of Rosenbrock's function along a line, d3/dt3 f(x + t v) at t = 0:
      cyad's derivative of a function calling second_derivative, n = 10, 100, 1000
  P9  gradient of w . (H(x) @ v) of Rosenbrock's function: cyad's gradient of a function
      calling hvp, n = 10, 100, 1000
  P10 gradient and JVP through a spectral step u -> irfft(k * rfft(u)) - 0.1 dt u**3 (k a
      fixed real filter), chained 10 times: the gradient of sum(u**2) after the steps, the
      JVP of u after them, n = 2**10, 2**16
  P11 JVP of exp(z)*sin(z) + z*z of complex z (complex128), n = 10, 1000

Every cell is the median time per call over repeats, and the ratio of that time to the time
of the cyad row named in the last column (peer / cyad: above 1, cyad is faster). cyad is
prepared and writes into out= buffers. Every cyad row comes once per engine of CYAD_ENGINES
(labelled [engine]); the ratios are taken against the first engine's rows, and an engine that
cyad does not know ("unknown engine") shows "not available" in its rows. The C-level rows use
examples/cython, built with meson into a temporary folder (its rows are skipped, with the
reason, when that build fails, and the second-order ones (P5, P6) when its Rosenbrock has no
second-order function); CasADi's buffer call (Function.buffer(): arguments and results bound
once to NumPy arrays) is their counterpart. Every result is checked before it is timed (a
wrong one is reported, not timed) against the analytic derivative, for P7 against JAX's
gradient (or, without JAX, the backpropagation written by hand in NumPy, which is also P7's
"by hand" row), for P10 against its adjoint and tangent sweeps written by hand with np.fft
(a problem of two derivatives: a row's own `exact` overrides the problem's). A call whose
first run takes longer than TOO_SLOW seconds (TOO_SLOW_QUICK with --quick) is not timed: its
cell says "too slow". The "targets" section at the end
compares the ratios of interest with their goals, for the best engine and for each engine.

Peers, each optional ("not installed" in the tables otherwise):
  JAX (float64, every call jax.jit-compiled): jax.jvp, jax.jacfwd, jax.grad (reverse mode),
  jax.hessian (forward over reverse), jax.jvp of jax.grad for a Hessian-vector product;
  torch.func (float64): jvp, jacfwd, grad (reverse mode), hessian, jvp of grad;
  CasADi (SX functions, MX for large n and for P7): Jacobians in forward mode, gradients in
  forward mode (ad_weight 0, as jax.jacfwd and cyad's dual engine) and in reverse mode
  (ad_weight 1), Hessian-vector products as jtimes (forward) of the gradient (reverse);
  SciPy's finite differences (approx_derivative '2-point' and '3-point', approx_fprime; for
  second order, of the exact gradient: column by column for a Hessian, along v for a
  Hessian-vector product) and numdifftools (not for P6 and P7, nor P4 at n = 10**4).
  Forward-mode peer gradients are skipped at P4's n = 10**4 (JAX and torch would carry all n
  directions at once, n x n arrays of 800 MB; CasADi takes over a minute to build its SX
  Jacobian) and left out at P7, where cyad's dual engine is the forward-mode row and the peers
  run in reverse mode.
  Install them with `pip install ".[peers]"`. torch is not in that group, since the default
  Linux build of torch brings several GB of CUDA libraries: install a CPU-only build of torch
  yourself (from PyTorch's CPU wheel index, or `pip install torch==2.13.0` where the package
  index at hand serves that version as a CPU build).

Each library runs with its defaults (JAX on the CPU, threads as the libraries choose). The
machine is shared: compare ratios within one run, not times across runs.
"""
import argparse
import functools
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import math
import os
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import cyad
from cyad._reporting import profile as _profile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CYAD_ENGINES = ["dual", "tape"]  # one row each per cyad row; the first is the ratios' reference
TRACING_ENGINES = {"tape"}       # engines that trace a Python f: a C function is not for them
CASADI_SX_MAX = 10**4          # CasADi builds SX (scalar) graphs up to this many inputs, MX above
EXACT_TOL = 1e-9               # accepted error of exact derivatives, relative to their size
FD_TOL = 1e-4                  # ... and of finite differences
TOO_SLOW = 60.0                # seconds: a call whose first run takes longer is not timed
TOO_SLOW_QUICK = 5.0           # ... with --quick


# -- timing -------------------------------------------------------------------------------------

@dataclass
class Timing:
    median: float              # seconds per call
    min: float


@dataclass
class TooSlow:
    first: float               # seconds of the first (warm-up) call
    cap: float

    def __str__(self):                  # fits a table's cell; the cap is in the JSON
        return f"too slow ({format_time(self.first)})"


def measure(call, budget, repeats, min_repeats):
    """Seconds per call of `call`, already warmed up: median and min over `repeats` samples of
    about budget/repeats seconds each (fewer samples, at least min_repeats, for calls slower than
    the budget)."""
    timer = timeit.Timer(call)
    once = timer.timeit(1)
    number = max(1, round(budget / repeats / max(once, 1e-9)))
    samples = [once] if number == 1 else []
    spent = once
    while len(samples) < repeats and (len(samples) < min_repeats or spent < budget):
        sample = timer.timeit(number)
        spent += sample
        samples.append(sample / number)
    return Timing(statistics.median(samples), min(samples))


def format_time(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


# -- rows of a problem: what is timed -----------------------------------------------------------

@dataclass
class Bench:
    call: Callable[[], Any]              # the timed call
    result: Callable[[], np.ndarray]     # the derivative it computes, as a NumPy array
    first: float | None = None           # seconds of a first call the build made (its warm-up)


def cyad_key(base, engine=None):
    """The key of cyad's row `base` on `engine` (default: the reference engine, the first)."""
    return f"{base}:{engine or CYAD_ENGINES[0]}"


@dataclass
class Row:
    key: str                             # short name: ratio references, targets, JSON
    label: str
    build: Callable[[dict], Bench] | None = None   # data of one size -> Bench
    note: str = ""                       # shown instead of timings when there is no build
    ref: str = cyad_key("cyad")          # key of the cyad row this row's ratio is taken against
    max_n: float = math.inf              # larger sizes are skipped (too slow or too large)
    tol: float = EXACT_TOL
    exact: Callable[[dict], np.ndarray] | None = None   # the row's reference, if not the problem's


@dataclass
class Problem:
    key: str
    title: str
    sizes: tuple
    data: Callable[[int], dict]          # n -> {"x": ..., and "dx", "A" ... as the problem needs}
    exact: Callable[[dict], np.ndarray]  # the reference derivative (analytic where there is one)
    rows: list = field(default_factory=list)
    notes: tuple = ()                    # printed under the table


class Namespace:
    """A module with a few names replaced: one problem function serves every framework."""

    def __init__(self, module, **overrides):
        self._module = module
        self.__dict__.update(overrides)

    def __getattr__(self, name):
        return getattr(self._module, name)


def constants(d):
    """The problem's fixed arrays: everything in its data but x and the tangent dx."""
    return {k: v for k, v in d.items() if k not in ("x", "dx")}


def derivative_shape(kind, n):
    return (n, n) if kind in ("jacobian", "hessian") else (n,)


@functools.cache
def engine_missing(engine):
    """"not available" when cyad does not know `engine` (its ValueError "unknown engine"), else
    None: any other failure is the rows' to report."""
    try:
        cyad.prepare_gradient(lambda x: x.sum(), np.zeros(2), engine=engine)
    except ValueError as error:
        if "unknown engine" in str(error):
            return "not available"
    except Exception:  # the engine exists: what it refuses, its rows report
        pass
    return None


SECOND_ORDER = ("hessian", "value_gradient_and_hessian", "hvp", "gradient_and_hvp",
                "second_derivative", "value_derivative_and_second_derivative")


def cyad_rows(key, label, operator, f, *, ref="cyad", **options):
    """cyad_row of every engine of CYAD_ENGINES: keys cyad_key(key, engine), labels
    "label [engine]", each row's ratio taken against the reference engine's row `ref`."""
    return [cyad_row(cyad_key(key, engine), f"{label} [{engine}]", operator, f, engine=engine,
                     ref=cyad_key(ref), **options)
            for engine in CYAD_ENGINES]


def cyad_row(key, label, operator, f, *, engine, tangent=False, y=False, note=None, ref):
    """cyad's `operator` of f on `engine`, prepared and into out= buffers (a pair for value_and_*).

    A row for an operator cyad does not have yet shows `note`, and one for an engine it does not
    know "not available": they start timing by themselves once cyad has them.
    """
    if not hasattr(cyad, operator):
        return Row(key, label, note=note or f"cyad.{operator} not available yet", ref=ref)
    if engine_missing(engine):
        return Row(key, label, note=engine_missing(engine), ref=ref)
    if engine in TRACING_ENGINES and isinstance(f, cyad.FunctionWrapper):
        return Row(key, label, note=f"n/a: engine={engine!r} traces Python callables", ref=ref)
    op, prepare = getattr(cyad, operator), getattr(cyad, "prepare_" + operator)

    def build(d):
        fn = functools.partial(f, **constants(d)) if constants(d) else f
        x, dx, y_buffer = d["x"], d.get("dx"), np.zeros_like(d["x"]) if y else None
        args = (fn, x) + ((dx,) if tangent else ())
        prep = prepare(*args, y=y_buffer, engine=engine)
        start = time.perf_counter()
        first = op(*args, y=y_buffer, prep=prep)        # the warm-up, and the shapes of out=
        seconds = time.perf_counter() - start
        pair = isinstance(first, tuple)
        out = tuple(np.empty_like(r) for r in first) if pair else np.empty_like(first)
        # the call as a program writes it: no argument packing of the harness's own
        if tangent:
            def call():
                return op(fn, x, dx, y=y_buffer, prep=prep, out=out)
        else:
            def call():
                return op(fn, x, y=y_buffer, prep=prep, out=out)
        return Bench(call, lambda: call()[-1] if pair else call(), seconds)

    return Row(key, label, build, ref=ref)


# -- peers -------------------------------------------------------------------------------------

def _jax():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    jax.config.update("jax_enable_x64", True)
    return jax


def _torch():
    import torch
    import torch.func  # noqa: F401
    return torch


def _scipy():
    import scipy.optimize
    import scipy.optimize._numdiff  # noqa: F401
    return scipy.optimize


PEER_LOADERS = {
    "jax": _jax,
    "torch": _torch,
    "casadi": lambda: importlib.import_module("casadi"),
    "scipy": _scipy,
    "numdifftools": lambda: importlib.import_module("numdifftools"),
}
NO_PEERS = dict.fromkeys(PEER_LOADERS)


def load_peers():
    """{name: module or None when it cannot be imported}."""
    peers = {}
    for name, load in PEER_LOADERS.items():
        try:
            peers[name] = load()
        except ImportError:
            peers[name] = None
    return peers


def version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def jax_bench(jax, kind, f, d):
    jnp = jax.numpy
    fn = functools.partial(f, Namespace(jnp),
                           **{k: jnp.asarray(c) for k, c in constants(d).items()})
    x = jnp.asarray(d["x"])
    if kind == "jvp":
        g, args = jax.jit(lambda x, v: jax.jvp(fn, (x,), (v,))), (x, jnp.asarray(d["dx"]))
    elif kind == "hvp":                 # forward over reverse
        g = jax.jit(lambda x, v: jax.jvp(jax.grad(fn), (x,), (v,))[1])
        args = (x, jnp.asarray(d["dx"]))
    else:
        transform = {"jacobian": jax.jacfwd, "gradient": jax.jacfwd, "grad": jax.grad,
                     "hessian": jax.hessian}[kind]
        g, args = jax.jit(transform(fn)), (x,)

    def call():
        return jax.block_until_ready(g(*args))
    return Bench(call, lambda: np.asarray(call()[1] if kind == "jvp" else call()))


def torch_bench(torch, kind, f, d):
    fn = functools.partial(f, Namespace(torch, copy=torch.clone),
                           **{k: torch.from_numpy(c) for k, c in constants(d).items()})
    x = torch.from_numpy(d["x"])
    if kind in ("jvp", "hvp"):          # hvp: forward over reverse
        g = fn if kind == "jvp" else torch.func.grad(fn)
        call = functools.partial(torch.func.jvp, g, (x,), (torch.from_numpy(d["dx"]),))
        return Bench(call, lambda: call()[1].numpy())
    transform = {"jacobian": torch.func.jacfwd, "gradient": torch.func.jacfwd,
                 "grad": torch.func.grad, "hessian": torch.func.hessian}[kind]
    call = functools.partial(transform(fn), x)
    return Bench(call, lambda: call().numpy())


def casadi_function(ca, kind, f, d, sx_max):
    """A CasADi Function of the derivative (for a JVP: of the value and the tangent), and its
    NumPy arguments. Jacobians and "gradient" in forward mode, as jax.jacfwd and cyad's dual
    engine, "grad" in reverse mode; Hessian-vector products as jtimes (forward) of the gradient
    (reverse)."""
    n = d["x"].size
    sym = ca.SX if n <= sx_max else ca.MX
    x = sym.sym("x", n)
    xp = Namespace(ca, sum=ca.sum1, copy=lambda a: a)
    e = f(xp, x, **{k: ca.DM(c) for k, c in constants(d).items()})
    if kind == "jvp":
        v = sym.sym("v", n)
        return ca.Function("jvp", [x, v], [e, ca.jtimes(e, x, v)]), [d["x"], d["dx"]]
    if kind == "hvp":                   # forward over reverse
        v = sym.sym("v", n)
        return ca.Function("hvp", [x, v], [ca.jtimes(ca.gradient(e, x), x, v)]), [d["x"], d["dx"]]
    if kind == "hessian":
        derivative = ca.hessian(e, x)[0]
    else:                               # ad_weight 0: forward mode, 1: reverse mode
        weight = 1 if kind == "grad" else 0
        derivative = ca.Function("f", [x], [e], {"ad_weight": weight}).jacobian()(x, e)
    return ca.Function(kind, [x], [ca.densify(derivative)]), [d["x"]]


def casadi_bench(ca, kind, f, d, sx_max):
    function, args = casadi_function(ca, kind, f, d, sx_max)
    call = functools.partial(function, *args)
    shape = derivative_shape(kind, d["x"].size)

    def result():
        r = call()
        return (r[-1] if isinstance(r, (tuple, list)) else r).full().reshape(shape, order="F")
    return Bench(call, result)


def casadi_buffer_bench(ca, kind, f, d, sx_max):
    """CasADi's zero-copy call: inputs and outputs bound once to NumPy buffers."""
    function, args = casadi_function(ca, kind, f, d, sx_max)
    buffer, evaluate = function.buffer()
    args = [np.ascontiguousarray(a) for a in args]
    results = [np.zeros(function.nnz_out(i)) for i in range(function.n_out())]
    for i, a in enumerate(args):
        buffer.set_arg(i, memoryview(a))
    for i, r in enumerate(results):
        buffer.set_res(i, memoryview(r))
    shape = derivative_shape(kind, d["x"].size)

    def result():
        evaluate()
        if buffer.ret():
            raise RuntimeError(f"CasADi returned {buffer.ret()}")
        return results[-1].reshape(shape, order="F")
    result.keep = (buffer, args, results)      # the bound memory lives as long as the call
    return Bench(evaluate, result)


def fd_bench(optimize, kind, f, d, method, gradient=None):
    """SciPy's finite differences: of t -> f(x + t dx) for a JVP, of the gradient for a Hessian
    (column by column), of t -> gradient(x + t dx) for a Hessian-vector product (one direction,
    so one or two gradients per call, as a JVP)."""
    approx_derivative = optimize._numdiff.approx_derivative
    fn = functools.partial(f, np, **constants(d))
    x = d["x"]
    if kind == "jvp":
        v = d["dx"]
        call = functools.partial(approx_derivative, lambda t: fn(x + t[0] * v), np.zeros(1),
                                 method=method)
        return Bench(call, lambda: call()[:, 0])
    if kind == "hvp":
        v, g = d["dx"], functools.partial(gradient, **constants(d))
        call = functools.partial(approx_derivative, lambda t: g(x + t[0] * v), np.zeros(1),
                                 method=method)
        return Bench(call, lambda: call()[:, 0])
    if method == "fprime":
        call = functools.partial(optimize.approx_fprime, x, fn)
    else:
        target = functools.partial(gradient, **constants(d)) if kind == "hessian" else fn
        call = functools.partial(approx_derivative, target, x, method=method)
    return Bench(call, call)


def numdifftools_bench(nd, kind, f, d):
    fn = functools.partial(f, np, **constants(d))
    x = d["x"]
    if kind == "jvp":
        v = d["dx"]
        call = functools.partial(nd.Derivative(lambda t: fn(x + t * v)), 0.0)
    else:
        method = {"jacobian": nd.Jacobian, "gradient": nd.Gradient, "hessian": nd.Hessian}[kind]
        call = functools.partial(method(fn), x)
    shape = derivative_shape(kind, x.size)
    return Bench(call, lambda: np.reshape(call(), shape))


# kind: (JAX's operation, torch's, what CasADi's label adds, the row keys' suffix)
OPERATION = {"jvp": ("jax.jvp", "torch.func.jvp", "", ""),
             "jacobian": ("jax.jacfwd", "torch.func.jacfwd", "", ""),
             "gradient": ("jax.jacfwd", "torch.func.jacfwd", ", forward", ""),
             "grad": ("jax.grad", "torch.func.grad", ", reverse", "-grad"),
             "hessian": ("jax.hessian", "torch.func.hessian", "", ""),
             "hvp": ("jax.jvp of jax.grad", "torch.func.jvp of grad", "", "")}


def framework_specs(kind, buffer_ref, casadi_sx_max, max_n=math.inf):
    """(key, peer, label, bench, kind, Row options) of JAX's, torch's and CasADi's rows."""
    jax_op, torch_op, casadi_mode, suffix = OPERATION[kind]
    in_casadi = functools.partial(casadi_bench, sx_max=casadi_sx_max)
    in_casadi_buffer = functools.partial(casadi_buffer_bench, sx_max=casadi_sx_max)
    return [
        ("jax" + suffix, "jax", f"jax.jit({jax_op})", jax_bench, kind, {"max_n": max_n}),
        ("torch" + suffix, "torch", torch_op, torch_bench, kind, {"max_n": max_n}),
        ("casadi" + suffix, "casadi", f"casadi Function call{casadi_mode}", in_casadi, kind,
         {"max_n": max_n}),
        ("casadi-buffer" + suffix, "casadi", f"casadi buffer call (zero-copy{casadi_mode})",
         in_casadi_buffer, kind, {"ref": buffer_ref, "max_n": max_n}),
    ]


def peer_rows(peers, kind, f, *, gradient=None, buffer_ref="cyad", fd=True, nd_max=math.inf,
              casadi_sx_max=CASADI_SX_MAX, casadi_f=None, forward=True, forward_max=math.inf):
    """The peers' rows for one kind of derivative ("jvp", "jacobian", "gradient", "hessian",
    "hvp") of f(xp, x, **constants), where xp is the framework's NumPy-like namespace.
    `gradient(x, **constants)` is f's exact gradient, which SciPy differentiates for the
    second-order kinds; `casadi_f` replaces f for CasADi. A gradient has rows in forward mode
    (left out when not `forward`, skipped above n = forward_max) and in reverse mode.
    `buffer_ref` is the base key of the cyad row CasADi's buffer call is compared with."""
    if kind == "gradient":
        specs = (framework_specs(kind, cyad_key(buffer_ref), casadi_sx_max, forward_max)
                 if forward else [])
        specs += framework_specs("grad", cyad_key(buffer_ref), casadi_sx_max)
    else:
        specs = framework_specs(kind, cyad_key(buffer_ref), casadi_sx_max)
    if fd:
        for method in ("2-point", "3-point"):
            build = functools.partial(fd_bench, method=method, gradient=gradient)
            label = {"hessian": f"scipy {method} of the exact gradient",
                     "hvp": f"scipy {method} of the exact gradient along v"}.get(
                         kind, f"scipy approx_derivative {method}")
            specs.append((f"fd{method[0]}", "scipy", label, build, kind, {"tol": FD_TOL}))
        if kind in ("jacobian", "gradient"):
            specs.append(("fprime", "scipy", "scipy approx_fprime",
                          functools.partial(fd_bench, method="fprime"), kind, {"tol": FD_TOL}))
        if kind != "hvp":              # numdifftools has no Hessian-vector product
            specs.append(("nd", "numdifftools", f"numdifftools {kind}", numdifftools_bench, kind,
                          {"tol": FD_TOL, "max_n": nd_max}))
    rows = []
    for key, peer, label, bench, row_kind, options in specs:
        module = peers.get(peer)
        if module is None:
            rows.append(Row(key, label, note=f"{peer}: not installed", **options))
            continue
        row_f = casadi_f if peer == "casadi" and casadi_f else f
        rows.append(Row(key, label, functools.partial(bench, module, row_kind, row_f), **options))
    return rows


# -- the C-level example --------------------------------------------------------------------

def build_example(folder):
    """examples/cython built with its meson.build in `folder`: (module, None) or (None, why)."""
    source = folder / "cython"
    shutil.copytree(ROOT / "examples" / "cython", source)
    meson = [sys.executable, "-m", "mesonbuild.mesonmain"]
    env = dict(os.environ, PATH=os.pathsep.join([os.path.dirname(sys.executable),
                                                 os.environ.get("PATH", "")]))
    for command in (["setup", "build"], ["compile", "-C", "build"]):
        try:
            done = subprocess.run(meson + command, cwd=source, env=env,
                                  capture_output=True, text=True)
        except OSError as error:
            return None, f"meson {command[0]} could not run: {error}"
        if done.returncode:
            lines = (done.stdout + done.stderr).strip().splitlines() or [""]
            first_error = next((line for line in lines if "error" in line.lower()), lines[-1])
            return None, f"meson {command[0]} failed: {first_error.strip()}"
    try:
        path = next(path for suffix in importlib.machinery.EXTENSION_SUFFIXES
                    for path in [source / "build" / ("cyad_examples" + suffix)] if path.exists())
        spec = importlib.util.spec_from_file_location("cyad_examples", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception as error:  # any failure only skips the C-level rows
        return None, f"the built example does not load: {error}"
    return module, None


def c_rows(example, key, label, operator, make, **kw):
    """cyad's rows (cyad_rows) of a C-level function of the example module (`make` names the
    function that returns its FunctionWrapper), or rows saying why they are skipped: when
    `example` is that reason, or when a second-order `operator` meets a function without a
    second-order C function."""
    if example is None or isinstance(example, str):
        why = f"skipped: {example or 'no C-level example'}"
        return [Row(cyad_key(key, engine), f"{label} [{engine}]", note=why, ref=cyad_key("cyad"))
                for engine in CYAD_ENGINES]
    function = getattr(example, make)()
    if operator in SECOND_ORDER:
        missing = missing_second_order(function)
        if missing:
            return [Row(cyad_key(key, engine), f"{label} [{engine}]", note=f"skipped: {missing}",
                        ref=cyad_key("cyad")) for engine in CYAD_ENGINES]
    return cyad_rows(key, label, operator, function, **kw)


def missing_second_order(function):
    """Why cyad cannot take second derivatives of the FunctionWrapper `function` (cyad's
    TypeError naming the missing second-order function), or None when it can."""
    if not hasattr(cyad, "prepare_hessian"):
        return None                    # cyad_row reports the missing operator itself
    try:
        cyad.prepare_hessian(function, np.zeros(2))
    except TypeError as error:
        if "second-order" in str(error):
            return str(error).removeprefix("cyad: ")
        raise
    return None


# -- the problems -------------------------------------------------------------------------------

def random_data(n, matrix=False):
    rng = np.random.default_rng(n)
    d = {"x": rng.uniform(-1.0, 1.5, n), "dx": rng.standard_normal(n)}
    if matrix:
        d["A"] = rng.standard_normal((n, n)) / np.sqrt(n)
    return d


def copy_into(y, x):
    y[...] = x


def p1_copy(peers, example):
    rows = [
        *cyad_rows("cyad", "cyad pushforward", "pushforward", copy_into, tangent=True, y=True),
        *cyad_rows("cyad-value", "cyad value_and_pushforward", "value_and_pushforward",
                   copy_into, tangent=True, y=True),
        *cyad_rows("cyad-C", "cyad pushforward, C copy", "pushforward", _profile.copy_function(),
                   tangent=True, y=True),
        *cyad_rows("cyad-C-value", "cyad value_and_pushforward, C copy", "value_and_pushforward",
                   _profile.copy_function(), tangent=True, y=True),
        Row("copyto", "two np.copyto (hand-written)", p1_hand_written),
    ]
    rows += peer_rows(peers, "jvp", lambda xp, x: xp.copy(x), buffer_ref="cyad-C-value", fd=False)
    return Problem("P1", "the copy y[...] = x: pushforward (value and tangent for the peers)",
                   (10, 100), random_data, lambda d: d["dx"], rows)


def p1_hand_written(d):
    x, dx = d["x"], d["dx"]
    value, tangent = np.empty_like(x), np.empty_like(x)

    def call():
        np.copyto(value, x)
        np.copyto(tangent, dx)
        return tangent
    return Bench(call, call)


def p2_f(xp, x):
    return xp.sin(x) * xp.exp(-x**2) + x**3


def p2_exact(d):
    x = d["x"]
    return (np.cos(x) * np.exp(-x**2) - 2 * x * np.sin(x) * np.exp(-x**2) + 3 * x**2) * d["dx"]


def p2_hand_written(d):
    """The JVP written out by hand into preallocated buffers."""
    x, v = d["x"], d["dx"]
    square, gauss, part, out = (np.empty_like(x) for _ in range(4))

    def call():
        np.multiply(x, x, out=square)
        np.negative(square, out=gauss)
        np.exp(gauss, out=gauss)                # exp(-x^2)
        np.sin(x, out=part)
        np.multiply(part, x, out=part)
        np.multiply(part, 2.0, out=part)        # 2 x sin(x)
        np.cos(x, out=out)
        np.subtract(out, part, out=out)
        np.multiply(out, gauss, out=out)        # (cos(x) - 2 x sin(x)) exp(-x^2)
        np.multiply(square, 3.0, out=square)
        np.add(out, square, out=out)            # + 3 x^2
        np.multiply(out, v, out=out)
        return out
    return Bench(call, call)


def p2_jvp(peers, example):
    rows = [*cyad_rows("cyad", "cyad pushforward", "pushforward", functools.partial(p2_f, np),
                       tangent=True),
            Row("numpy", "NumPy derivative by hand, out= buffers", p2_hand_written)]
    rows += peer_rows(peers, "jvp", p2_f, nd_max=10**4)
    return Problem("P2", "JVP of sin(x)*exp(-x**2) + x**3", (10, 100, 10**4, 10**6),
                   random_data, p2_exact, rows,
                   notes=(f"CasADi: SX up to n = {CASADI_SX_MAX:,}, MX above.",))


def p3_f(xp, x, A):
    return xp.tanh(A @ x) + x**2


def p3_exact(d):
    x, A = d["x"], d["A"]
    return (1 - np.tanh(A @ x) ** 2)[:, None] * A + np.diag(2 * x)


def p3_jacobian(peers, example):
    rows = cyad_rows("cyad", "cyad jacobian", "jacobian", functools.partial(p3_f, np))
    rows += peer_rows(peers, "jacobian", p3_f, nd_max=100, casadi_sx_max=100)
    return Problem("P3", "Jacobian of tanh(A @ x) + x**2", (10, 100, 1000),
                   functools.partial(random_data, matrix=True), p3_exact, rows,
                   notes=("CasADi: SX up to n = 100, MX above (an SX Jacobian at n = 1000 takes "
                          "minutes to build); forward mode.",))


def rosenbrock(xp, x):
    return xp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_gradient(x):
    g = np.zeros_like(x)
    g[:-1] = -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g


def rosenbrock_hessian(x):
    diagonal = np.zeros_like(x)
    diagonal[:-1] = 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
    diagonal[1:] += 200
    off = -400 * x[:-1]
    return np.diag(diagonal) + np.diag(off, 1) + np.diag(off, -1)


def p4_gradient(peers, example):
    rows = [
        *cyad_rows("cyad", "cyad gradient, Python function", "gradient",
                   functools.partial(rosenbrock, np)),
        *c_rows(example, "cyad-C", "cyad gradient, C function", "gradient", "rosenbrock_function"),
    ]
    rows += peer_rows(peers, "gradient", rosenbrock, buffer_ref="cyad-C", nd_max=1000,
                      forward_max=1000)
    return Problem("P4", "gradient of Rosenbrock's function", (10, 100, 1000, 10**4),
                   random_data, lambda d: rosenbrock_gradient(d["x"]), rows,
                   notes=("CasADi: SX, forward mode (ad_weight 0) and reverse mode (ad_weight 1); "
                          "its symbolic forward sweep drops structural zeros, so its cost grows "
                          "with n, not n**2.",
                          "Forward-mode peers up to n = 1000: at 10**4 JAX and torch carry all n "
                          "directions at once (n x n arrays of 800 MB), CasADi takes over a "
                          "minute to build its Jacobian.",))


def buffer_ref(rows):
    """The cyad rows CasADi's buffer call is compared with: the C function's when it runs."""
    c_row = next(row for row in rows if row.key == cyad_key("cyad-C"))
    return "cyad-C" if c_row.build else "cyad"


def p5_hessian(peers, example):
    rows = [
        *cyad_rows("cyad", "cyad hessian, Python function", "hessian",
                   functools.partial(rosenbrock, np)),
        *c_rows(example, "cyad-C", "cyad hessian, C function", "hessian", "rosenbrock_function"),
    ]
    rows += peer_rows(peers, "hessian", rosenbrock, gradient=rosenbrock_gradient,
                      buffer_ref=buffer_ref(rows))
    return Problem("P5", "Hessian of Rosenbrock's function", (10, 100),
                   random_data, lambda d: rosenbrock_hessian(d["x"]), rows)


def rosenbrock_hvp(x, v):
    """H(x) @ v from the Hessian's three diagonals, without forming H."""
    diagonal = np.zeros_like(x)
    diagonal[:-1] = 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
    diagonal[1:] += 200
    off = -400 * x[:-1]
    product = diagonal * v
    product[:-1] += off * v[1:]
    product[1:] += off * v[:-1]
    return product


def p6_hvp(peers, example):
    rows = [
        *cyad_rows("cyad", "cyad hvp, Python function", "hvp", functools.partial(rosenbrock, np),
                   tangent=True),
        *c_rows(example, "cyad-C", "cyad hvp, C function", "hvp", "rosenbrock_function",
                tangent=True),
    ]
    rows += peer_rows(peers, "hvp", rosenbrock, gradient=rosenbrock_gradient,
                      buffer_ref=buffer_ref(rows))
    return Problem("P6", "Hessian-vector product H(x) @ v of Rosenbrock's function", (100, 1000),
                   random_data, lambda d: rosenbrock_hvp(d["x"], d["dx"]), rows,
                   notes=("cyad's dual engine: forward over forward, v outer and the n basis "
                          "directions inner (its cost grows with n); JAX, torch.func, CasADi: "
                          "forward over reverse.",
                          "SciPy: approx_derivative of t -> gradient(x + t v) at t = 0, the "
                          "exact gradient differenced along v (one direction).",))


MLP_BATCH, MLP_INPUTS, MLP_HIDDEN, MLP_OUTPUTS = 128, 32, 128, 8
MLP_PARAMETERS = MLP_HIDDEN * (MLP_INPUTS + 1 + MLP_OUTPUTS) + MLP_OUTPUTS       # 5 256


def mlp_shapes(n, inputs, outputs):
    """The shapes of W1, b1, W2, b2 in the order they lie in the n flat parameters of an MLP
    with `inputs` inputs and `outputs` outputs (the hidden layer takes what is left)."""
    hidden, rest = divmod(n - outputs, inputs + 1 + outputs)
    if rest or hidden < 1:
        raise ValueError(f"{n} parameters make no MLP with {inputs} inputs, {outputs} outputs")
    return (inputs, hidden), (hidden,), (hidden, outputs), (outputs,)


def mlp_slices(x, X, Y):
    """(slice of x, shape) of each of W1, b1, W2, b2 for inputs X and targets Y."""
    start = 0
    for shape in mlp_shapes(x.shape[0], X.shape[1], Y.shape[1]):
        yield x[start:start + math.prod(shape)], shape
        start += math.prod(shape)


def mlp_loss(xp, x, X, Y):
    """Mean squared error of the MLP with parameters x on inputs X (batch x inputs), targets Y:
    the layers are slices of x reshaped row-major."""
    W1, b1, W2, b2 = (part.reshape(shape) for part, shape in mlp_slices(x, X, Y))
    prediction = xp.tanh(X @ W1 + b1) @ W2 + b2
    return xp.mean((prediction - Y) ** 2)


def mlp_loss_casadi(ca, x, X, Y):
    """mlp_loss on CasADi symbols: the same row-major layout of x (CasADi reshapes column by
    column, hence the transposes), biases as rows repeated over the batch."""
    W1, b1, W2, b2 = (ca.reshape(part, shape[1], shape[0]).T if len(shape) == 2 else part.T
                      for part, shape in mlp_slices(x, X, Y))
    batch = X.shape[0]
    hidden = ca.tanh(ca.mtimes(X, W1) + ca.repmat(b1, batch, 1))
    prediction = ca.mtimes(hidden, W2) + ca.repmat(b2, batch, 1)
    return ca.sumsqr(prediction - Y) / (batch * Y.shape[1])


def mlp_data(n, batch=MLP_BATCH, inputs=MLP_INPUTS, outputs=MLP_OUTPUTS):
    """Parameters x (weights scaled by 1/sqrt(fan-in)), a batch X of inputs and its targets Y."""
    rng = np.random.default_rng(n)
    x = np.concatenate([rng.standard_normal(shape) / math.sqrt(shape[0]) if len(shape) == 2
                        else 0.1 * rng.standard_normal(shape)
                        for shape in mlp_shapes(n, inputs, outputs)], axis=None)
    return {"x": x, "X": rng.standard_normal((batch, inputs)),
            "Y": rng.standard_normal((batch, outputs))}


def mlp_backpropagation(d):
    """The gradient by hand: backpropagation through the two layers, into buffers made once."""
    x, X, Y = d["x"], d["X"], d["Y"]
    W1, b1, W2, b2 = (part.reshape(shape) for part, shape in mlp_slices(x, X, Y))
    gradient = np.empty_like(x)
    gW1, gb1, gW2, gb2 = (part.reshape(shape) for part, shape in mlp_slices(gradient, X, Y))
    hidden, d_hidden, slope = (np.empty((X.shape[0], b1.size)) for _ in range(3))
    residual = np.empty_like(Y)

    def call():
        np.matmul(X, W1, out=hidden)
        np.add(hidden, b1, out=hidden)
        np.tanh(hidden, out=hidden)
        np.matmul(hidden, W2, out=residual)
        np.add(residual, b2, out=residual)
        np.subtract(residual, Y, out=residual)
        np.multiply(residual, 2.0 / residual.size, out=residual)   # d loss / d prediction
        np.matmul(hidden.T, residual, out=gW2)
        np.sum(residual, axis=0, out=gb2)
        np.matmul(residual, W2.T, out=d_hidden)
        np.multiply(hidden, hidden, out=slope)
        np.subtract(1.0, slope, out=slope)               # tanh' = 1 - tanh**2
        np.multiply(d_hidden, slope, out=d_hidden)
        np.matmul(X.T, d_hidden, out=gW1)
        np.sum(d_hidden, axis=0, out=gb1)
        return gradient
    return Bench(call, call)


def mlp_reference(jax, d):
    """JAX's gradient of the loss when JAX is installed, else the backpropagation by hand."""
    if jax is None:
        return mlp_backpropagation(d).call().copy()
    jnp = jax.numpy
    loss = functools.partial(mlp_loss, jnp, X=jnp.asarray(d["X"]), Y=jnp.asarray(d["Y"]))
    return np.asarray(jax.grad(loss)(jnp.asarray(d["x"])))


def p7_mlp(peers, example):
    rows = [*cyad_rows("cyad", "cyad gradient, Python function", "gradient",
                       functools.partial(mlp_loss, np)),
            Row("numpy", "NumPy backpropagation by hand, buffers", mlp_backpropagation)]
    rows += peer_rows(peers, "gradient", mlp_loss, casadi_f=mlp_loss_casadi, casadi_sx_max=0,
                      forward=False, nd_max=0)
    reference = "JAX's gradient" if peers.get("jax") else "the backpropagation by hand"
    return Problem("P7", f"gradient of an MLP's loss ({MLP_INPUTS}-{MLP_HIDDEN}-{MLP_OUTPUTS}, "
                   f"tanh, batch {MLP_BATCH})", (MLP_PARAMETERS,), mlp_data,
                   functools.partial(mlp_reference, peers.get("jax")), rows,
                   notes=(f"n: the {MLP_PARAMETERS:,} parameters; every result checked against "
                          f"{reference}.",
                          "cyad's dual engine is forward mode (n directions); the peers run in "
                          "reverse mode (CasADi: MX, ad_weight 1), forward-mode peers are left "
                          "out."))


def line_data(n):
    d = random_data(n)
    return {"x": 0.0, "point": d["x"], "direction": d["dx"]}


def rosenbrock_third_along(point, direction):
    """d3/dt3 of Rosenbrock's function at point + t direction, t = 0: of its terms
    100 g**2, g = u[i+1] - u[i]**2 along the line, 600 g' g'' (g is quadratic in t)."""
    x, v = point, direction
    return float(np.sum(600 * (v[1:] - 2 * x[:-1] * v[:-1]) * (-2 * v[:-1] ** 2)))


def third_along(t, point, direction):
    """cyad's third derivative along the line: the derivative of this second derivative."""
    return cyad.second_derivative(lambda s: rosenbrock(np, point + s * direction), t)


def jax_nested_bench(jax, make, d):
    """jax.jit of the nested transforms make(jax, jnp, constants) returns, called at x."""
    jnp = jax.numpy
    g = jax.jit(make(jax, jnp, {k: jnp.asarray(c) for k, c in constants(d).items()}))
    x = jnp.asarray(d["x"])

    def call():
        return jax.block_until_ready(g(x))
    return Bench(call, lambda: np.asarray(call()))


def nested_peer_rows(peers, label, make):
    if peers.get("jax") is None:
        return [Row("jax", label, note="jax: not installed")]
    return [Row("jax", label, functools.partial(jax_nested_bench, peers["jax"], make))]


def p8_third(peers, example):
    def make(jax, jnp, c):
        def line(t):
            return rosenbrock(jnp, c["point"] + t * c["direction"])
        return jax.grad(jax.grad(jax.grad(line)))

    rows = cyad_rows("cyad", "cyad derivative of second_derivative", "derivative", third_along)
    rows += nested_peer_rows(peers, "jax.jit(grad(grad(grad)))", make)
    return Problem("P8", "third derivative of Rosenbrock's function along a line",
                   (10, 100, 1000), line_data,
                   lambda d: np.asarray(rosenbrock_third_along(d["point"], d["direction"])), rows,
                   notes=("cyad: prepared; the outer engine as labelled, the inner "
                          "second_derivative nested (recorded on the outer tape, or a program "
                          "pushed through the dual engine's duals at every call).",))


def hvp_data(n):
    d = random_data(n)
    return {"x": d["x"], "v": d["dx"], "w": np.random.default_rng(n + 1).standard_normal(n)}


def rosenbrock_hvp_gradient(x, v, w):
    """The gradient of w . (H(x) @ v): of the Hessian's diagonal terms 1200 x_i**2 and
    -400 x_(i+1), and of its off-diagonal -400 x_i."""
    g = np.zeros_like(x)
    g[:-1] += 2400 * x[:-1] * w[:-1] * v[:-1] - 400 * (w[:-1] * v[1:] + w[1:] * v[:-1])
    g[1:] -= 400 * w[:-1] * v[:-1]
    return g


def hvp_along(x, v, w):
    return w @ cyad.hvp(functools.partial(rosenbrock, np), x, v)


def p9_gradient_of_hvp(peers, example):
    def make(jax, jnp, c):
        f = functools.partial(rosenbrock, jnp)
        return jax.grad(lambda x: c["w"] @ jax.jvp(jax.grad(f), (x,), (c["v"],))[1])

    rows = cyad_rows("cyad", "cyad gradient of hvp", "gradient", hvp_along)
    rows += nested_peer_rows(peers, "jax.jit(grad of jvp of grad)", make)
    return Problem("P9", "gradient of w . (H(x) @ v) of Rosenbrock's function", (10, 100, 1000),
                   hvp_data, lambda d: rosenbrock_hvp_gradient(d["x"], d["v"], d["w"]), rows,
                   notes=("cyad: prepared; the outer engine as labelled, the inner hvp nested.",))


SPECTRAL_STEPS = 10
SPECTRAL_DT = 0.01


def spectral_data(n):
    """u and a tangent, and the filter k of an implicit heat step on n points of [0, 2 pi)."""
    d = random_data(n)
    wave = np.arange(n // 2 + 1)
    return {"x": d["x"], "dx": d["dx"], "k": 1.0 / (1.0 + SPECTRAL_DT * 1e-3 * wave**2)}


def spectral_steps(xp, x, k):
    u = x
    for _ in range(SPECTRAL_STEPS):
        u = xp.fft.irfft(k * xp.fft.rfft(u), u.shape[-1]) - 0.1 * SPECTRAL_DT * u**3
    return u


def spectral_loss(xp, x, k):
    return xp.sum(spectral_steps(xp, x, k) ** 2)


def spectral_states(d):
    """u before each step; the filter L: u -> irfft(k rfft(u)) is symmetric (a real even
    convolution), so that it is its own transpose."""
    states, u = [], d["x"]
    for _ in range(SPECTRAL_STEPS):
        states.append(u)
        u = np.fft.irfft(d["k"] * np.fft.rfft(u), u.size) - 0.1 * SPECTRAL_DT * u**3
    return states, u


def spectral_gradient(d):
    """The adjoint sweep: g -> L g - 0.3 dt u**2 g, from 2 u at the end."""
    states, u = spectral_states(d)
    g = 2 * u
    for u in reversed(states):
        g = np.fft.irfft(d["k"] * np.fft.rfft(g), g.size) - 0.3 * SPECTRAL_DT * u**2 * g
    return g


def spectral_jvp(d):
    """The tangent sweep: t -> L t - 0.3 dt u**2 t."""
    states, _ = spectral_states(d)
    t = d["dx"]
    for u in states:
        t = np.fft.irfft(d["k"] * np.fft.rfft(t), t.size) - 0.3 * SPECTRAL_DT * u**2 * t
    return t


def p10_spectral(peers, example):
    rows = cyad_rows("cyad", "cyad gradient", "gradient", functools.partial(spectral_loss, np))
    rows[0].max_n = 2**10      # the dual engine's gradient: n directions in forward mode
    rows += cyad_rows("cyad-jvp", "cyad pushforward", "pushforward",
                      functools.partial(spectral_steps, np), tangent=True, ref="cyad-jvp")
    for row in rows[len(CYAD_ENGINES):]:
        row.exact = spectral_jvp
    for key, peer, label, bench in (("jax-grad", "jax", "jax.jit(jax.grad)", jax_bench),
                                    ("torch-grad", "torch", "torch.func.grad", torch_bench)):
        rows.append(Row(key, label, note=f"{peer}: not installed") if peers.get(peer) is None
                    else Row(key, label, functools.partial(bench, peers[peer], "grad",
                                                           spectral_loss)))
    for key, peer, label, bench in (("jax", "jax", "jax.jit(jax.jvp)", jax_bench),
                                    ("torch", "torch", "torch.func.jvp", torch_bench)):
        options = {"ref": cyad_key("cyad-jvp"), "exact": spectral_jvp}
        rows.append(Row(key, label, note=f"{peer}: not installed", **options)
                    if peers.get(peer) is None
                    else Row(key, label, functools.partial(bench, peers[peer], "jvp",
                                                           spectral_steps), **options))
    return Problem("P10", f"gradient and JVP through a spectral step, chained "
                   f"{SPECTRAL_STEPS} times", (2**10, 2**16), spectral_data, spectral_gradient,
                   rows, notes=("u -> irfft(k * rfft(u)) - 0.1 dt u**3; gradient of sum(u**2) "
                                "after the steps, JVP of u after them; checked against the "
                                "adjoint and tangent sweeps written with np.fft.",
                                "cyad's dual engine: gradient up to n = 2**10 (forward mode, "
                                "n directions)."))


def complex_data(n):
    """z and a tangent dz, complex128."""
    d, rng = random_data(n), np.random.default_rng(n + 1)
    return {"x": d["x"] + 1j * rng.uniform(-1.0, 1.0, n),
            "dx": d["dx"] + 1j * rng.standard_normal(n)}


def p11_f(xp, z):
    return xp.exp(z) * xp.sin(z) + z * z


def p11_exact(d):
    z = d["x"]
    return (np.exp(z) * (np.sin(z) + np.cos(z)) + 2 * z) * d["dx"]


def p11_complex_jvp(peers, example):
    rows = cyad_rows("cyad", "cyad pushforward", "pushforward", functools.partial(p11_f, np),
                     tangent=True)
    for key, peer, label, bench in (("jax", "jax", "jax.jit(jax.jvp)", jax_bench),
                                    ("torch", "torch", "torch.func.jvp", torch_bench)):
        rows.append(Row(key, label, note=f"{peer}: not installed") if peers.get(peer) is None
                    else Row(key, label, functools.partial(bench, peers[peer], "jvp", p11_f)))
    return Problem("P11", "JVP of exp(z)*sin(z) + z*z of complex z", (10, 1000), complex_data,
                   p11_exact, rows, notes=("complex128 z and tangent; checked against "
                                           "f'(z) dz.",))


PROBLEMS = {"P1": p1_copy, "P2": p2_jvp, "P3": p3_jacobian, "P4": p4_gradient, "P5": p5_hessian,
            "P6": p6_hvp, "P7": p7_mlp, "P8": p8_third, "P9": p9_gradient_of_hvp,
            "P10": p10_spectral, "P11": p11_complex_jvp}


# -- running ------------------------------------------------------------------------------------

def check(row, result, exact):
    """None when the result is right, else what is wrong."""
    result = np.asarray(result)
    if result.dtype.kind not in "fc":
        result = result.astype(float)
    if result.shape != exact.shape:
        return f"wrong shape {result.shape}"
    error = float(np.max(np.abs(result - exact)))
    if not error <= row.tol * max(1.0, float(np.max(np.abs(exact)))):
        return f"wrong result (error {error:.1e})"
    return None


def run_cell(row, d, exact, n, timing, cap):
    """A Timing, or what to show instead: TooSlow, or a text."""
    if row.build is None:
        return row.note
    if n > row.max_n:
        return "skipped at this n"      # too slow or too large: the notes say
    try:
        bench = row.build(d)
        first = bench.first
        if first is None:
            start = time.perf_counter()
            bench.call()                                # warm-up: compilation, caches
            first = time.perf_counter() - start
        if first > cap:
            return TooSlow(first, cap)
        wrong = check(row, bench.result(), exact)
        if wrong:
            return wrong
        return measure(bench.call, **timing)
    except Exception as error:  # a peer that fails is reported, the run goes on
        print(f"    {row.label} failed at n={n}: {type(error).__name__}: {error}", file=sys.stderr)
        return f"failed: {type(error).__name__}"


def run_problem(problem, timing, cap):
    """{row key: {n: Timing, TooSlow or text}}."""
    cells = {row.key: {} for row in problem.rows}
    for n in problem.sizes:
        d = problem.data(n)
        exact = {None: problem.exact(d)}
        for row in problem.rows:
            if row.exact not in exact:
                exact[row.exact] = row.exact(d)
            start = time.perf_counter()
            cells[row.key][n] = run_cell(row, d, exact[row.exact], n, timing, cap)
            if row.build is not None and n <= row.max_n:
                seconds = time.perf_counter() - start
                print(f"  {problem.key} n={n:<7} {row.label:50s} {seconds:6.1f} s",
                      file=sys.stderr, flush=True)
    return cells


def ratio(cells, row, n):
    mine, ref = cells[row.key][n], cells.get(row.ref, {}).get(n)
    if isinstance(mine, Timing) and isinstance(ref, Timing):
        return mine.median / ref.median
    return None


def format_ratio(r):
    """Two decimals; ratios below 0.01 (P6's) in two significant digits rather than 0.00."""
    if r is None:
        return "-"
    return f"{r:.2f}" if r >= 0.01 else f"{r:.1e}"


def print_table(problem, cells, label_width=50, cell_width=21):
    print(f"\n{problem.key}  {problem.title}")
    print("    median time per call, and its ratio to the row named in the last column")
    head = "".join(f"{'n = ' + format(n, ','):>{cell_width}}" for n in problem.sizes)
    print(f"{'':{label_width}}{head}   ratio to")
    labels = {row.key: row.label for row in problem.rows}
    for row in problem.rows:
        line = f"{row.label:{label_width}}"
        texts = [cells[row.key][n] for n in problem.sizes]
        texts = [t if isinstance(t, Timing) else str(t) for t in texts]
        if all(isinstance(t, str) for t in texts) and len(set(texts)) == 1:
            print(line + f"{'':4}{texts[0]}")
            continue
        for n, cell in zip(problem.sizes, texts):
            if isinstance(cell, Timing):
                r = ratio(cells, row, n)
                text = format_time(cell.median) + f"  {format_ratio(r):>6}"
            else:
                text = cell
            line += f" {text:>{cell_width - 1}}"
        print(line + f"   {labels.get(row.ref, row.ref)}")
    for note in problem.notes:
        print(f"    {note}")


# -- targets ------------------------------------------------------------------------------------

@dataclass
class Target:
    problem: str
    sizes: tuple
    cyad: str                  # base key of cyad's rows (one per engine: cyad_key)
    peer: str                  # row key of the comparison
    least: float               # the goal: peer time / cyad time >= least
    goal: str


TARGETS = [
    Target("P1", (10, 100), "cyad", "copyto", 1.0,
           "prepared pushforward(out=) no slower than two np.copyto"),
    Target("P1", (10, 100), "cyad", "jax", 10.0, "pushforward >= 10x faster than jax.jit(jvp)"),
    Target("P3", (10,), "cyad", "jax", 4.0, "jacobian >= 4x faster than jax.jit(jacfwd)"),
    Target("P3", (100, 1000), "cyad", "jax", 1.0, "jacobian no slower than jax.jit(jacfwd)"),
    Target("P3", (100,), "cyad", "fd2", 20.0, "jacobian >= 20x faster than 2-point differences"),
    Target("P3", (1000,), "cyad", "casadi-buffer", 1.0,
           "jacobian no slower than CasADi's buffer call"),
    Target("P2", (10,), "cyad", "jax", 5.0, "JVP >= 5x faster than jax.jit(jvp)"),
    Target("P2", (10**6,), "cyad", "jax", 1.0, "JVP no slower than jax.jit(jvp)"),
    Target("P2", (10**6,), "cyad", "numpy", 1.5,
           "JVP >= 1.5x faster than the NumPy derivative by hand"),
    Target("P1", (10, 100), "cyad-C-value", "casadi-buffer", 0.5,
           "C-level value_and_pushforward within 2x of CasADi's buffer call"),
    Target("P4", (10, 100, 1000), "cyad-C", "casadi-buffer", 0.5,
           "C-level gradient within 2x of CasADi's buffer call (forward)"),
    Target("P4", (10,), "cyad", "jax-grad", 5.0, "gradient >= 5x faster than jax.jit(jax.grad)"),
    Target("P4", (100, 1000), "cyad", "jax-grad", 1.0,
           "gradient no slower than jax.jit(jax.grad)"),
    Target("P4", (10**4,), "cyad", "jax-grad", 0.5, "gradient within 2x of jax.jit(jax.grad)"),
    Target("P6", (1000,), "cyad", "jax", 1.0, "hvp no slower than jax.jit(jvp of grad)"),
    Target("P5", (100,), "cyad", "jax", 1.0, "hessian no slower than jax.jit(jax.hessian)"),
    Target("P7", (MLP_PARAMETERS,), "cyad", "jax-grad", 0.5,
           "MLP gradient within 2x of jax.jit(jax.grad)"),
    Target("P8", (10, 100, 1000), "cyad", "jax", 1.0,
           "third derivative no slower than jax.jit of nested grads"),
    Target("P9", (10, 100, 1000), "cyad", "jax", 1.0,
           "gradient of an hvp no slower than jax.jit(grad of jvp of grad)"),
    Target("P10", (2**16,), "cyad", "jax-grad", 1.0,
           "gradient through spectral steps no slower than jax.jit(jax.grad)"),
    Target("P10", (2**16,), "cyad-jvp", "jax", 1.0,
           "JVP through spectral steps no slower than jax.jit(jax.jvp)"),
    Target("P11", (10,), "cyad", "jax", 5.0, "complex JVP >= 5x faster than jax.jit(jvp)"),
]


@dataclass
class EngineRatio:
    engine: str
    median: float | None = None    # peer time / cyad time, of medians
    minimum: float | None = None   # ... of minima
    note: str = ""                 # why there is no ratio, or how it was taken


def engine_ratio(engine, mine, theirs):
    """The ratio of the peer's cell `theirs` to cyad's cell `mine` on `engine`. A cyad call too
    slow to time is compared by its first call (a real call: its prep is made beforehand)."""
    if isinstance(mine, Timing) and isinstance(theirs, Timing):
        return EngineRatio(engine, theirs.median / mine.median, theirs.min / mine.min)
    if isinstance(mine, TooSlow) and isinstance(theirs, Timing):
        return EngineRatio(engine, theirs.median / mine.first, note="from cyad's first call")
    return EngineRatio(engine, note=str(theirs if isinstance(mine, Timing) else mine))


def evaluate_targets(results):
    """[(target, n, the best engine's EngineRatio, every engine's, verdict)] for the problems
    that ran."""
    rows = []
    for target in TARGETS:
        if target.problem not in results:
            continue
        cells = results[target.problem]
        for n in target.sizes:
            theirs = cells[target.peer].get(n, "size not run")
            ratios = [engine_ratio(engine, cells[cyad_key(target.cyad, engine)].get(
                n, "size not run"), theirs) for engine in CYAD_ENGINES]
            measured = [r for r in ratios if r.median is not None]
            if measured:
                best = max(measured, key=lambda r: r.median)
                verdict = "PASS" if best.median >= target.least else "MISS"
            else:
                best, verdict = ratios[0], f"N/A ({ratios[0].note})"
            rows.append((target, n, best, ratios, verdict))
    return rows


def format_engine_ratio(r):
    if r.median is None:
        return f"{r.engine} {r.note}"
    return f"{r.engine} {format_ratio(r.median)}" + (f" ({r.note})" if r.note else "")


def print_targets(evaluated):
    print("\ntargets  (ratio = peer time / cyad time: of medians, of minima in brackets, for the "
          "best engine; then each engine's ratio of medians)")
    for target, n, best, ratios, verdict in evaluated:
        goal = f">= {target.least:.2f}"
        median = "-" if best.median is None else format_ratio(best.median)
        minimum = f"({format_ratio(best.minimum)})" if best.minimum is not None else ""
        print(f"  {target.problem} n={n:<9,} {target.goal:64s} {median:>7} {minimum:9} "
              f"target {goal:8s} {verdict:4s}  " + "; ".join(map(format_engine_ratio, ratios)))


def to_json(problems, results, evaluated, peers, quick):
    def cell(c):
        if isinstance(c, Timing):
            return {"median": c.median, "min": c.min}
        if isinstance(c, TooSlow):
            return {"note": str(c), "first_call": c.first, "cap": c.cap}
        return {"note": c}

    def ratios(r):
        return {"ratio_of_medians": r.median, "ratio_of_minima": r.minimum, "note": r.note}
    versions = {"python": platform.python_version(), "numpy": np.__version__,
                "cyad": cyad.__version__}
    return {
        "machine": platform.platform(),
        "quick": quick,
        "versions": versions | {name: version(name) if m else None for name, m in peers.items()},
        "engines": CYAD_ENGINES,
        "problems": {p.key: {"title": p.title, "rows": {
            row.key: {"label": row.label, "ratio_to": row.ref,
                      "cells": {str(n): cell(results[p.key][row.key][n]) for n in p.sizes}}
            for row in p.rows}} for p in problems},
        "targets": [{"problem": t.problem, "n": n, "goal": t.goal, "cyad": t.cyad, "peer": t.peer,
                     "least_ratio": t.least, "best_engine": best.engine, **ratios(best),
                     "verdict": verdict, "engines": {r.engine: ratios(r) for r in engine_ratios}}
                    for t, n, best, engine_ratios, verdict in evaluated],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter timings (about 3 minutes)")
    parser.add_argument("--problems", default=",".join(PROBLEMS),
                        help="comma-separated problems to run (default: all)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)
    wanted = [p.strip().upper() for p in args.problems.split(",") if p.strip()]
    unknown = [p for p in wanted if p not in PROBLEMS]
    if unknown:
        parser.error(f"unknown problems {unknown}; choose among {list(PROBLEMS)}")
    timing = (dict(budget=0.08, repeats=5, min_repeats=1) if args.quick
              else dict(budget=1.0, repeats=9, min_repeats=3))
    cap = TOO_SLOW_QUICK if args.quick else TOO_SLOW

    peers = load_peers()
    print(f"cyad {cyad.__version__}, NumPy {np.__version__}, Python {platform.python_version()}, "
          f"{platform.machine()}, {os.cpu_count()} cores")
    print("peers: " + ", ".join(f"{name} {version(name)}" if m else f"{name} not installed"
                                for name, m in peers.items()))

    with tempfile.TemporaryDirectory() as folder:
        example = None
        if {"P1", "P4", "P5", "P6"} & set(wanted):
            print("building examples/cython with meson ...", file=sys.stderr, flush=True)
            example, why = build_example(pathlib.Path(folder))
            if example is None:
                print(f"C-level rows skipped: {why}")
                example = why
        problems, results = [], {}
        for key in wanted:
            problem = PROBLEMS[key](peers, example)
            print(f"{key}: {problem.title}", file=sys.stderr, flush=True)
            results[key] = run_problem(problem, timing, cap)
            problems.append(problem)
            print_table(problem, results[key])
            sys.stdout.flush()

    evaluated = evaluate_targets(results)
    print_targets(evaluated)
    if args.json:
        report = to_json(problems, results, evaluated, peers, args.quick)
        pathlib.Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
