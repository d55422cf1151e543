"""cyad and its peers on the same problems, timed side by side in one run.

Run: python -P asv_bench/peers.py [--quick] [--problems P1,P3] [--json FILE]

Problems (x random, float64 everywhere):
  P1  the copy f(y, x): y[...] = x: pushforward and value_and_pushforward, n = 10, 100
  P2  JVP of sin(x)*exp(-x**2) + x**3, n = 10 ... 10**6
  P3  Jacobian of tanh(A @ x) + x**2 (A fixed, random), n = 10, 100, 1000
  P4  gradient of Rosenbrock's function, n = 10, 100, 1000
  P5  Hessian of Rosenbrock's function, n = 10, 100
  P6  Hessian-vector product H(x) @ v of Rosenbrock's function, n = 100, 1000

Every cell is the median time per call over repeats, and the ratio of that time to the time
of the cyad row named in the last column (peer / cyad: above 1, cyad is faster). cyad is
prepared and writes into out= buffers. The C-level rows use examples/cython, built with meson
into a temporary folder (its rows are skipped, with the reason, when that build fails, and the
second-order ones (P5, P6) when its Rosenbrock has no second-order function); CasADi's buffer
call (Function.buffer(): arguments and results bound once to NumPy arrays) is their
counterpart. Every result is checked against the analytic derivative before it is timed; a
wrong one is reported, not timed. The "targets" section at the end compares the ratios of
interest with their goals (none yet for P5 and P6: their ratios are only reported).

Peers, each optional ("not installed" in the tables otherwise):
  JAX (jax.jit of jax.jvp / jax.jacfwd / jax.hessian, and of jax.jvp of jax.grad for a
  Hessian-vector product, float64), torch.func (jvp / jacfwd / hessian, jvp of grad, float64),
  CasADi (SX functions, MX for large n; Jacobians and gradients in forward mode, Hessian-vector
  products as jtimes of the gradient), SciPy's finite differences (approx_derivative '2-point'
  and '3-point', approx_fprime; for second order, of the exact gradient: column by column for a
  Hessian, along v for a Hessian-vector product) and numdifftools (not for P6).
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
from cyad import _profile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CASADI_SX_MAX = 10**4          # CasADi builds SX (scalar) graphs up to this many inputs, MX above
EXACT_TOL = 1e-9               # accepted error of exact derivatives, relative to their size
FD_TOL = 1e-4                  # ... and of finite differences


# -- timing -------------------------------------------------------------------------------------

@dataclass
class Timing:
    median: float              # seconds per call
    min: float


def measure(call, budget, repeats, min_repeats):
    """Seconds per call of `call`: median and min over `repeats` samples of about budget/repeats
    seconds each (fewer samples, at least min_repeats, for calls slower than the budget)."""
    call()                                              # warm-up: compilation, caches
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


@dataclass
class Row:
    key: str                             # short name: ratio references, targets, JSON
    label: str
    build: Callable[[dict], Bench] | None = None   # data of one size -> Bench
    note: str = ""                       # shown instead of timings when there is no build
    ref: str = "cyad"                    # key of the cyad row this row's ratio is taken against
    max_n: float = math.inf              # larger sizes are skipped (too slow or too large)
    tol: float = EXACT_TOL


@dataclass
class Problem:
    key: str
    title: str
    sizes: tuple
    data: Callable[[int], dict]          # n -> {"x": ..., and "dx", "A" as the problem needs}
    exact: Callable[[dict], np.ndarray]  # the analytic derivative
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


SECOND_ORDER = ("hessian", "value_gradient_and_hessian", "hvp", "gradient_and_hvp",
                "second_derivative", "value_derivative_and_second_derivative")


def cyad_row(key, label, operator, f, *, tangent=False, y=False, note=None, ref="cyad"):
    """cyad's `operator` of f, prepared and into out= buffers (a pair for value_and_*).

    A row for an operator cyad does not have yet shows `note`: it starts timing by itself once
    cyad has the operator and its prepare_ function.
    """
    if not hasattr(cyad, operator):
        return Row(key, label, note=note or f"cyad.{operator} not available yet", ref=ref)
    op, prepare = getattr(cyad, operator), getattr(cyad, "prepare_" + operator)

    def build(d):
        fn = functools.partial(f, **constants(d)) if constants(d) else f
        x, dx, y_buffer = d["x"], d["dx"], np.zeros_like(d["x"]) if y else None
        args = (fn, x) + ((dx,) if tangent else ())
        prep = prepare(*args, y=y_buffer)
        first = op(*args, y=y_buffer, prep=prep)
        pair = isinstance(first, tuple)
        out = tuple(np.empty_like(r) for r in first) if pair else np.empty_like(first)
        # the call as a program writes it: no argument packing of the harness's own
        if tangent:
            def call():
                return op(fn, x, dx, y=y_buffer, prep=prep, out=out)
        else:
            def call():
                return op(fn, x, y=y_buffer, prep=prep, out=out)
        return Bench(call, lambda: call()[-1] if pair else call())

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
        transform = {"jacobian": jax.jacfwd, "gradient": jax.jacfwd, "hessian": jax.hessian}[kind]
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
                 "hessian": torch.func.hessian}[kind]
    call = functools.partial(transform(fn), x)
    return Bench(call, lambda: call().numpy())


def casadi_function(ca, kind, f, d, sx_max):
    """A CasADi Function of the derivative (for a JVP: of the value and the tangent), and its
    NumPy arguments. Jacobians and gradients in forward mode, as jax.jacfwd and cyad;
    Hessian-vector products as jtimes (forward) of the gradient (reverse)."""
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
    else:
        forward = ca.Function("f", [x], [e], {"ad_weight": 0}).jacobian()   # 0: forward mode
        derivative = forward(x, e)
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


OPERATION = {"jvp": ("jax.jvp", "torch.func.jvp"), "jacobian": ("jax.jacfwd", "torch.func.jacfwd"),
             "gradient": ("jax.jacfwd", "torch.func.jacfwd"),
             "hessian": ("jax.hessian", "torch.func.hessian"),
             "hvp": ("jax.jvp of jax.grad", "torch.func.jvp of grad")}


def peer_rows(peers, kind, f, *, gradient=None, buffer_ref="cyad", fd=True, nd_max=math.inf,
              casadi_sx_max=CASADI_SX_MAX):
    """The peers' rows for one kind of derivative ("jvp", "jacobian", "gradient", "hessian",
    "hvp") of f(xp, x, **constants), where xp is the framework's NumPy-like namespace.
    `gradient(x, **constants)` is f's exact gradient, which SciPy differentiates for the
    second-order kinds."""
    jax_op, torch_op = OPERATION[kind]
    in_casadi = functools.partial(casadi_bench, sx_max=casadi_sx_max)
    in_casadi_buffer = functools.partial(casadi_buffer_bench, sx_max=casadi_sx_max)
    specs = [
        ("jax", "jax", f"jax.jit({jax_op})", jax_bench, {}),
        ("torch", "torch", torch_op, torch_bench, {}),
        ("casadi", "casadi", "casadi Function call", in_casadi, {}),
        ("casadi-buffer", "casadi", "casadi buffer call (zero-copy)", in_casadi_buffer,
         {"ref": buffer_ref}),
    ]
    if fd:
        for method in ("2-point", "3-point"):
            build = functools.partial(fd_bench, method=method, gradient=gradient)
            label = {"hessian": f"scipy {method} of the exact gradient",
                     "hvp": f"scipy {method} of the exact gradient along v"}.get(
                         kind, f"scipy approx_derivative {method}")
            specs.append((f"fd{method[0]}", "scipy", label, build, {"tol": FD_TOL}))
        if kind in ("jacobian", "gradient"):
            specs.append(("fprime", "scipy", "scipy approx_fprime",
                          functools.partial(fd_bench, method="fprime"), {"tol": FD_TOL}))
        if kind != "hvp":              # numdifftools has no Hessian-vector product
            specs.append(("nd", "numdifftools", f"numdifftools {kind}", numdifftools_bench,
                          {"tol": FD_TOL, "max_n": nd_max}))
    rows = []
    for key, peer, label, bench, options in specs:
        module = peers.get(peer)
        if module is None:
            rows.append(Row(key, label, note=f"{peer}: not installed", **options))
        else:
            rows.append(Row(key, label, functools.partial(bench, module, kind, f), **options))
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


def c_row(example, key, label, operator, make, ref, **kw):
    """A cyad row of a C-level function of the example module (`make` names the function that
    returns its FunctionWrapper), or the reason it is skipped when `example` is that reason, or
    when a second-order `operator` meets a function without a second-order C function."""
    if example is None or isinstance(example, str):
        return Row(key, label, note=f"skipped: {example or 'no C-level example'}", ref=ref)
    function = getattr(example, make)()
    if operator in SECOND_ORDER:
        missing = missing_second_order(function)
        if missing:
            return Row(key, label, note=f"skipped: {missing}", ref=ref)
    return cyad_row(key, label, operator, function, ref=ref, **kw)


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
        cyad_row("cyad", "cyad pushforward", "pushforward", copy_into, tangent=True, y=True),
        cyad_row("cyad-value", "cyad value_and_pushforward", "value_and_pushforward", copy_into,
                 tangent=True, y=True),
        cyad_row("cyad-C", "cyad pushforward, C copy", "pushforward", _profile.copy_function(),
                 tangent=True, y=True, ref="cyad"),
        cyad_row("cyad-C-value", "cyad value_and_pushforward, C copy", "value_and_pushforward",
                 _profile.copy_function(), tangent=True, y=True, ref="cyad"),
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
    rows = [cyad_row("cyad", "cyad pushforward", "pushforward", functools.partial(p2_f, np),
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
    rows = [cyad_row("cyad", "cyad jacobian", "jacobian", functools.partial(p3_f, np))]
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
        cyad_row("cyad", "cyad gradient, Python function", "gradient",
                 functools.partial(rosenbrock, np)),
        c_row(example, "cyad-C", "cyad gradient, C function", "gradient", "rosenbrock_function",
              ref="cyad"),
    ]
    rows += peer_rows(peers, "gradient", rosenbrock, buffer_ref="cyad-C")
    return Problem("P4", "gradient of Rosenbrock's function (forward mode)", (10, 100, 1000),
                   random_data, lambda d: rosenbrock_gradient(d["x"]), rows,
                   notes=("CasADi: SX, forward mode (ad_weight 0); its symbolic forward sweep "
                          "drops structural zeros, so its cost grows with n, not n**2.",))


def p5_hessian(peers, example):
    rows = [
        cyad_row("cyad", "cyad hessian, Python function", "hessian",
                 functools.partial(rosenbrock, np)),
        c_row(example, "cyad-C", "cyad hessian, C function", "hessian", "rosenbrock_function",
              ref="cyad"),
    ]
    rows += peer_rows(peers, "hessian", rosenbrock, gradient=rosenbrock_gradient,
                      buffer_ref="cyad-C" if rows[1].build else "cyad")
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
        cyad_row("cyad", "cyad hvp, Python function", "hvp", functools.partial(rosenbrock, np),
                 tangent=True),
        c_row(example, "cyad-C", "cyad hvp, C function", "hvp", "rosenbrock_function",
              ref="cyad", tangent=True),
    ]
    rows += peer_rows(peers, "hvp", rosenbrock, gradient=rosenbrock_gradient,
                      buffer_ref="cyad-C" if rows[1].build else "cyad")
    return Problem("P6", "Hessian-vector product H(x) @ v of Rosenbrock's function", (100, 1000),
                   random_data, lambda d: rosenbrock_hvp(d["x"], d["dx"]), rows,
                   notes=("cyad: forward over forward, v outer and the n basis directions "
                          "inner (its cost grows with n); JAX, torch.func, CasADi: forward over "
                          "reverse.",
                          "SciPy: approx_derivative of t -> gradient(x + t v) at t = 0, the "
                          "exact gradient differenced along v (one direction).",))


PROBLEMS = {"P1": p1_copy, "P2": p2_jvp, "P3": p3_jacobian, "P4": p4_gradient, "P5": p5_hessian,
            "P6": p6_hvp}


# -- running ------------------------------------------------------------------------------------

def check(row, result, exact):
    """None when the result is right, else what is wrong."""
    result = np.asarray(result, dtype=float)
    if result.shape != exact.shape:
        return f"wrong shape {result.shape}"
    error = float(np.max(np.abs(result - exact)))
    if not error <= row.tol * max(1.0, float(np.max(np.abs(exact)))):
        return f"wrong result (error {error:.1e})"
    return None


def run_cell(problem, row, d, n, timing):
    """A Timing, or the text to show instead."""
    if row.build is None:
        return row.note
    if n > row.max_n:
        return "skipped (too slow)"
    try:
        bench = row.build(d)
        bench.call()
        wrong = check(row, bench.result(), problem.exact(d))
        if wrong:
            return wrong
        return measure(bench.call, **timing)
    except Exception as error:  # a peer that fails is reported, the run goes on
        print(f"    {row.label} failed at n={n}: {type(error).__name__}: {error}", file=sys.stderr)
        return f"failed: {type(error).__name__}"


def run_problem(problem, timing):
    """{row key: {n: Timing or text}}."""
    cells = {row.key: {} for row in problem.rows}
    for n in problem.sizes:
        d = problem.data(n)
        for row in problem.rows:
            start = time.perf_counter()
            cells[row.key][n] = run_cell(problem, row, d, n, timing)
            if row.build is not None and n <= row.max_n:
                seconds = time.perf_counter() - start
                print(f"  {problem.key} n={n:<7} {row.label:44s} {seconds:6.1f} s",
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


def print_table(problem, cells, label_width=42, cell_width=21):
    print(f"\n{problem.key}  {problem.title}")
    print("    median time per call, and its ratio to the row named in the last column")
    head = "".join(f"{'n = ' + format(n, ','):>{cell_width}}" for n in problem.sizes)
    print(f"{'':{label_width}}{head}   ratio to")
    labels = {row.key: row.label for row in problem.rows}
    for row in problem.rows:
        line = f"{row.label:{label_width}}"
        texts = [cells[row.key][n] for n in problem.sizes]
        if all(isinstance(t, str) for t in texts) and len(set(texts)) == 1:
            print(line + f"{'':4}{texts[0]}")
            continue
        for n, cell in zip(problem.sizes, texts):
            if isinstance(cell, Timing):
                r = ratio(cells, row, n)
                text = format_time(cell.median) + f"  {format_ratio(r):>6}"
            else:
                text = cell
            line += f"{text:>{cell_width}}"
        print(line + f"   {labels.get(row.ref, row.ref)}")
    for note in problem.notes:
        print(f"    {note}")


# -- targets ------------------------------------------------------------------------------------

@dataclass
class Target:
    problem: str
    sizes: tuple
    cyad: str                  # row key of cyad's call
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
    Target("P2", (10**6,), "cyad", "numpy", 1 / 1.5,
           "JVP within 1.5x of the NumPy derivative by hand"),
    Target("P1", (10, 100), "cyad-C-value", "casadi-buffer", 0.5,
           "C-level value_and_pushforward within 2x of CasADi's buffer call"),
    Target("P4", (10, 100, 1000), "cyad-C", "casadi-buffer", 0.5,
           "C-level gradient within 2x of CasADi's buffer call"),
]


def evaluate_targets(results):
    """[(target, n, ratio of medians, ratio of minima, verdict)] for the problems that ran."""
    rows = []
    for target in TARGETS:
        if target.problem not in results:
            continue
        cells = results[target.problem]
        for n in target.sizes:
            mine, theirs = (cells[key].get(n, "size not run") for key in (target.cyad, target.peer))
            if isinstance(mine, Timing) and isinstance(theirs, Timing):
                median, minimum = theirs.median / mine.median, theirs.min / mine.min
                verdict = "PASS" if median >= target.least else "MISS"
                rows.append((target, n, median, minimum, verdict))
            else:
                why = theirs if isinstance(mine, Timing) else mine
                rows.append((target, n, None, None, f"N/A ({why})"))
    return rows


def print_targets(evaluated):
    print("\ntargets  (ratio = peer time / cyad time, of medians; of minima in brackets)")
    for target, n, median, minimum, verdict in evaluated:
        goal = f">= {target.least:.2f}"
        measured = f"{median:7.2f} ({minimum:5.2f})" if median is not None else f"{'-':>7}        "
        print(f"  {target.problem} n={n:<10,} {target.goal:66s} {measured}  target {goal:8s}"
              f" {verdict}")


def to_json(problems, results, evaluated, peers, quick):
    def cell(c):
        return {"median": c.median, "min": c.min} if isinstance(c, Timing) else {"note": c}
    versions = {"python": platform.python_version(), "numpy": np.__version__,
                "cyad": cyad.__version__}
    return {
        "machine": platform.platform(),
        "quick": quick,
        "versions": versions | {name: version(name) if m else None for name, m in peers.items()},
        "problems": {p.key: {"title": p.title, "rows": {
            row.key: {"label": row.label, "ratio_to": row.ref,
                      "cells": {str(n): cell(results[p.key][row.key][n]) for n in p.sizes}}
            for row in p.rows}} for p in problems},
        "targets": [{"problem": t.problem, "n": n, "goal": t.goal, "cyad": t.cyad, "peer": t.peer,
                     "least_ratio": t.least, "ratio_of_medians": median, "ratio_of_minima": minimum,
                     "verdict": verdict} for t, n, median, minimum, verdict in evaluated],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter timings (about 2 minutes)")
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
            results[key] = run_problem(problem, timing)
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
