"""The compiled replay of a tape (cyad._tape.lowering, cyad._tape.replay) against NumPy and
JAX, kind by kind.

Tapes are built by hand with the Tape API. Values are checked against NumPy (elementwise
operands broadcast by NumPy's own rules, gathers and scatters by fancy indexing and
np.add.at), the derivative kinds against JAX in float64 at points of the rule table's
test domains, in float64 and float32 (whose points are the float32 numbers, so that the
references differ from the replay by the rounding of its results alone). Random tapes
(chains of kinds on operands of divisible sizes) run against an evaluation written here
from the tape's specification. tests/replay_hooks.pyx, built against the installed cyad,
runs a replay through the .pxd's struct and nogil entry point, as the tape engine does.
"""
import functools
import shutil
import sys
import threading

import numpy as np
import pytest
from conftest import _CYTHONIZE, _UNOPTIMISED, HERE, _built_once, _load, _run
from derivative_references import function_of, seeded
from numpy.testing import assert_allclose, assert_array_equal
from rosenbrock import rosenbrock, rosenbrock_gradient
from rule_domains import binary_points, points

from cyad._rules.table import BINARY_RULES, UNARY_RULES, resolve
from cyad._tape.program import COMPARISONS, Instr, Tape
from cyad._tape.lowering import (ALIGNMENT, BLOCKED_BY, COLUMNS, NUMPY_LOOPS,
                                 RECIPROCAL_SQUARED, SINE_SHIFTS, Replay, _blocked_runs)
from cyad._tape.replay import _sine_baseline

pytestmark = pytest.mark.xdist_group("test_tape_replay")

try:
    import jax
except ImportError:
    jax = jnp = None
else:
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

needs_jax = pytest.mark.skipif(jax is None, reason="JAX is not installed")

DTYPES = [np.float64, np.float32]
# the replay rounds once to the tape's dtype what it computes in double (the rules) or in
# the dtype itself (+ - * /): its error is that rounding, beside the references' own
TOLERANCE = {np.float64: dict(rtol=1e-13, atol=1e-300), np.float32: dict(rtol=3e-7, atol=1e-37)}
# of a scipy.special rule against JAX's implementation of the function (another algorithm,
# differentiated: a few digits fewer where a derivative cancels, 1e-10 near zeros)
SPECIAL_TOLERANCE = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: TOLERANCE[np.float32]}


def tolerance(rule, dtype):
    special = rule.ufuncs and rule.ufuncs[0].startswith("scipy.")
    return (SPECIAL_TOLERANCE if special else TOLERANCE)[dtype]
UNARY = {rule.name: op for op, rule in enumerate(UNARY_RULES)}
BINARY = {rule.name: op for op, rule in enumerate(BINARY_RULES)}


def replayed(tape, *inputs):
    """A Replay of tape, run once on inputs."""
    replay = Replay(tape)
    for i, x in enumerate(inputs):
        replay.set_input(i, x)
    assert replay.run() == 0
    return replay


def as_float(dtype, values):
    """values in dtype, and those same numbers in float64 (the references' points)."""
    values = np.asarray(values, dtype)
    return values, values.astype(np.float64)


# -- elementwise rules -------------------------------------------------------------------

@functools.cache
def unary_derivatives(name):
    """The first and second derivative of the ufunc `name` at each element, by JAX: compiled
    once (for both dtypes, whose points share a shape)."""
    f = function_of(jnp, resolve(name))
    return jax.jit(lambda t: (jax.vmap(jax.grad(f))(t), jax.vmap(jax.grad(jax.grad(f)))(t)))


@needs_jax
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", range(len(UNARY_RULES)), ids=[r.name for r in UNARY_RULES])
def test_unary_kinds(op, dtype):
    rule = UNARY_RULES[op]
    x, x64 = as_float(dtype, points(rule.domain, seeded(rule.name), 40).reshape(8, 5))
    t = Tape(dtype)
    a = t.input(x.shape)
    value, d, d2 = (t.emit(kind, (a,), x.shape, op=op) for kind in ("unary", "unary_d", "unary_d2"))
    replay = replayed(t, x)

    d_ref, d2_ref = (np.asarray(r).reshape(x.shape)
                     for r in unary_derivatives(rule.ufuncs[0])(x64.ravel()))
    assert replay.value(value).dtype == dtype
    assert_allclose(replay.value(value), resolve(rule.ufuncs[0])(x64), **TOLERANCE[dtype])
    assert_allclose(replay.value(d), d_ref, **tolerance(rule, dtype))
    assert_allclose(replay.value(d2), d2_ref, **tolerance(rule, dtype))


NUMPY_COLUMNS = sorted({(kind, name, ufunc) for by_kind in NUMPY_LOOPS.values()
                        for kind, names in by_kind.items() for name, ufunc in names.items()})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("kind", "name", "ufunc"), NUMPY_COLUMNS, ids=str)
def test_numpy_loops(kind, name, ufunc, dtype):
    # the columns that NumPy's own loops compute (where the dtype's table names them; else
    # the rule's loop): NumPy's numbers, and within 4 ulp of the exact ones (NumPy's SIMD
    # loops promise a few)
    rule = UNARY_RULES[UNARY[name]]
    x = points(rule.domain, seeded(name), 64).astype(dtype)
    t = Tape(dtype)
    a, single = t.input(x.shape), t.input(())
    column = t.emit(kind, (a,), x.shape, op=UNARY[name])
    repeated = t.emit(kind, (single,), (5,), op=UNARY[name])
    replay = replayed(t, x, x[3])
    used = NUMPY_LOOPS[np.dtype(dtype)][kind].get(name) == ufunc
    assert list(replay.code[:, COLUMNS["P0"]] != 0) == [used] * 2
    expected = getattr(np, ufunc)(x)
    if (kind, name) in RECIPROCAL_SQUARED:
        expected = 1.0 / (expected * expected)
    if used:
        assert_array_equal(replay.value(column), expected)
        assert_array_equal(replay.value(repeated), np.full(5, expected[3]))
    exact = getattr(np, ufunc)(x.astype(np.longdouble))
    if (kind, name) in RECIPROCAL_SQUARED:
        exact = 1 / (exact * exact)
    ulp = np.spacing(np.abs(exact).astype(dtype)).astype(np.longdouble)
    assert np.all(np.abs(replay.value(column) - exact) <= 4 * ulp)
    assert np.all(np.abs(replay.value(repeated) - exact[3]) <= 4 * ulp[3])


def sine_points(dtype):
    """Points for the vectorised sin and cos: random ones of several magnitudes (up to
    and beyond the reduction's range, 2^19), each side of the block length, near
    multiples of pi/2, signed zeros, subnormals, the largest numbers, inf and NaN."""
    rng = np.random.default_rng(7)
    info = np.finfo(dtype)
    magnitudes = [1e-6, 0.5, 1.0, 4.0, 100.0, 1e4, 5e5, 6e5, 1e8, float(info.max) / 2]
    x = [rng.uniform(-1, 1, 3001) * m for m in magnitudes]
    x.append(np.arange(-2000, 2000) * (np.pi / 2))
    x.append(np.nextafter(np.arange(-2000, 2000) * (np.pi / 2), np.inf))
    x.append([0.0, -0.0, info.smallest_subnormal, -info.smallest_subnormal,
              info.smallest_normal, float(info.max), -float(info.max), np.inf, -np.inf,
              np.nan, 524288.0, -524288.0])
    return np.concatenate(x).astype(dtype)


def ulps(values, exact, dtype):
    """|values - exact| in units in the last place of exact rounded to dtype (0 where
    both are the same number, NaN included)."""
    exact = np.asarray(exact, np.longdouble)
    same = (values == exact) | (np.isnan(values) & np.isnan(exact))
    with np.errstate(invalid="ignore", over="ignore"):
        spacing = np.spacing(np.abs(exact).astype(dtype)).astype(np.longdouble)
        return np.where(same, 0, np.abs(values - exact) / spacing)


SINE_COLUMNS = sorted(SINE_SHIFTS.items())


@pytest.mark.parametrize("baseline", [False, True], ids=["dispatched", "baseline"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("column", "shift"), SINE_COLUMNS, ids=str)
def test_vectorised_sine(column, shift, dtype, baseline):
    # sin(x + shift pi/2) within 1 ulp of libm's sin and cos in float64 (computed in
    # double, as the rules do), float32 its rounding of those; exact signs of zeros, NaN
    # at inf and NaN, the same repeated to a larger output
    kind, name = column
    x = sine_points(dtype)
    t = Tape(dtype)
    a, single = t.input(x.shape), t.input(())
    out = t.emit(kind, (a,), x.shape, op=UNARY[name])
    repeated = t.emit(kind, (single,), (5,), op=UNARY[name])
    former = _sine_baseline(baseline)
    try:
        replay = replayed(t, x, x[3001])
    finally:
        _sine_baseline(former)
    numpy_loop = NUMPY_LOOPS[np.dtype(dtype)].get(kind, {}).get(name) is not None
    assert list(replay.code[:, COLUMNS["P2"]]) == [0 if numpy_loop else 1 + shift] * 2
    if numpy_loop:
        return
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        libm = [np.sin(x64), np.cos(x64), -np.sin(x64), -np.cos(x64)][shift]
    value = replay.value(out)
    if dtype == np.float64:
        assert ulps(value, libm, dtype).max() <= 1
    else:
        assert_array_equal(value, libm.astype(np.float32))
    assert_array_equal(np.signbit(value[value == 0]), np.signbit(libm[value == 0]))
    assert_array_equal(np.isnan(value), np.isnan(libm))
    assert_array_equal(replay.value(repeated), np.full(5, value[3001]))


def test_vectorised_sine_against_exact_values():
    # float64 sin and cos within 1 ulp of the exact values (mpmath at 100 digits)
    mpmath = pytest.importorskip("mpmath")
    x = sine_points(np.float64)
    x = x[np.isfinite(x) & (np.abs(x) < 1e6)][::7]
    t = Tape(np.float64)
    a = t.input(x.shape)
    outs = [t.emit("unary", (a,), x.shape, op=UNARY[name]) for name in ("sin", "cos")]
    replay = replayed(t, x)
    with mpmath.workdps(100):
        for out, f in zip(outs, (mpmath.sin, mpmath.cos)):
            exact = np.array([float(f(mpmath.mpf(float(v)))) for v in x])
            # (exact rounded to double: within 0.5 ulp; the replay within 1 of the exact)
            assert ulps(replay.value(out), exact, np.float64).max() <= 1.5


BINARY_KINDS = ("binary", "binary_da", "binary_db", "binary_daa", "binary_dab", "binary_dbb")


@functools.cache
def binary_partials(name, only_b):
    """The value and the five partials of the binary rule `name` at each pair, by JAX as one
    compiled computation, compiled once (for both dtypes); only_b: NaN for those in a."""
    f = function_of(jnp, resolve(next(r for r in BINARY_RULES if r.name == name).ufuncs[0]))
    pointwise = [f, jax.grad(f, 0), jax.grad(f, 1), jax.grad(jax.grad(f, 0), 0),
                 jax.grad(jax.grad(f, 0), 1), jax.grad(jax.grad(f, 1), 1)]
    if only_b:
        pointwise[1] = pointwise[3] = pointwise[4] = lambda a, b: jnp.nan * a
    return jax.jit(lambda a, b: [jax.vmap(g)(a, b) for g in pointwise])


def binary_references(rule, a, b):
    """The value and the five partials of `rule` at (a, b), from JAX: those of the rule
    the variant stands for, with a variant's constant operand's partials zero; a rule
    differentiable in b only has NaN for the partials in a."""
    results = [np.asarray(r) for r in
               binary_partials(rule.variant_of or rule.name, rule.differentiable == "b")(a, b)]
    zero = {"a": (1, 3, 4), "b": (2, 4, 5)}.get(rule.constant, ())
    return [np.zeros_like(r) if i in zero else r for i, r in enumerate(results)]


@needs_jax
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", range(len(BINARY_RULES)), ids=[r.name for r in BINARY_RULES])
def test_binary_kinds(op, dtype):
    rule = BINARY_RULES[op]
    a, b = binary_points(*rule.domain, seeded(rule.name), 20)
    a, a64 = as_float(dtype, a)
    b, b64 = as_float(dtype, b)
    t = Tape(dtype)
    x, y = t.input(a.shape), t.input(b.shape)
    outs = [t.emit(kind, (x, y), a.shape, op=op) for kind in BINARY_KINDS]
    replay = replayed(t, a, b)
    for kind, out, reference in zip(BINARY_KINDS, outs, binary_references(rule, a64, b64)):
        assert_allclose(replay.value(out), reference, **tolerance(rule, dtype), err_msg=kind)


# the shapes of (a, b), broadcast modularly: single numbers, values under leading lanes
BROADCASTS = [((7,), (7,)), ((7,), ()), ((), (7,)), ((1,), (4, 7)), ((), ()),
              ((4, 3), (3,)), ((3,), (4, 3)), ((3,), (1, 3)), ((1, 3), (2, 5, 3)),
              ((5, 3), (2, 5, 3)), ((0,), (0,)), ((2, 0), ())]


@needs_jax
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", BROADCASTS, ids=str)
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "hypot", "power"])
def test_binary_kinds_broadcast(name, shapes, dtype):
    # + - * / have loops of their own for each case; the other rules share one
    rule = BINARY_RULES[BINARY[name]]
    rng = seeded(name + str(shapes))
    a_shape, b_shape = shapes
    shape = np.broadcast_shapes(a_shape, b_shape)
    a = np.reshape(points(rule.domain[0], rng, int(np.prod(a_shape))), a_shape)
    b = np.reshape(points(rule.domain[1], rng, int(np.prod(b_shape))), b_shape)
    a, a64 = as_float(dtype, a)
    b, b64 = as_float(dtype, b)
    t = Tape(dtype)
    x, y = t.input(a_shape), t.input(b_shape)
    outs = [t.emit(kind, (x, y), shape, op=BINARY[name]) for kind in BINARY_KINDS]
    replay = replayed(t, a, b)
    wide = np.broadcast_arrays(a64, b64)
    references = binary_references(rule, wide[0].ravel(), wide[1].ravel())
    for kind, out, reference in zip(BINARY_KINDS, outs, references):
        assert replay.value(out).shape == shape
        assert_allclose(replay.value(out), reference.reshape(shape), **TOLERANCE[dtype],
                        err_msg=kind)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [((3,), (4, 3)), ((), (5,)), ((2, 3), (2, 2, 3)), ((), ())],
                         ids=str)
def test_unary_kinds_of_an_operand_under_lanes(shapes, dtype):
    a_shape, shape = shapes
    x, x64 = as_float(dtype, np.linspace(-1.0, 2.0, int(np.prod(a_shape))).reshape(a_shape))
    t = Tape(dtype)
    a = t.input(a_shape)
    out = t.emit("unary", (a,), shape, op=UNARY["exp"])
    derivative = t.emit("unary_d", (a,), shape, op=UNARY["sin"])
    replay = replayed(t, x)
    assert_allclose(replay.value(out), np.broadcast_to(np.exp(x64), shape), **TOLERANCE[dtype])
    assert_allclose(replay.value(derivative), np.broadcast_to(np.cos(x64), shape),
                    **TOLERANCE[dtype])


def test_sizes_that_do_not_broadcast_modularly_are_refused():
    t = Tape(np.float64)
    a, b = t.input((2,)), t.input((3,))
    t.emit("binary", (a, b), (6,), op=BINARY["add"])   # 2 and 3 both divide 6, not each other
    with pytest.raises(ValueError, match="broadcast"):
        Replay(t)
    t = Tape(np.float64)
    a = t.input((4,))
    t.emit("copy", (a,), (6,))
    with pytest.raises(ValueError, match="broadcast"):
        Replay(t)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [((12,), (12,)), ((12,), ()), ((), (12,)), ((3,), (4, 3)),
                                    ((4, 3), (3,)), ((), ())], ids=str)
def test_scale(shapes, dtype):
    # a partial times a direction: 0 where the direction is 0, even for an infinite partial
    a_shape, b_shape = shapes
    shape = np.broadcast_shapes(a_shape, b_shape)
    partials = np.array([np.inf, -np.inf, np.nan, 2.5, -1.0, 0.0])
    directions = np.array([0.0, 1.5, -0.0, 0.0, 3.0, -2.0])
    rng = seeded("scale" + str(shapes))
    a = rng.choice(partials, a_shape).astype(dtype)
    b = rng.choice(directions, b_shape).astype(dtype)
    t = Tape(dtype)
    x, y = t.input(a_shape), t.input(b_shape)
    out = t.emit("scale", (x, y), shape)
    zero = t.emit("scale", (x, t.const(0.0)), shape)
    replay = replayed(t, a, b)
    with np.errstate(invalid="ignore"):
        expected = np.where(b == 0, 0.0, a * b)
    assert_array_equal(replay.value(out), np.broadcast_to(expected, shape))
    assert_array_equal(replay.value(zero), 0.0)


# -- compare, select, copy, zeros ---------------------------------------------------------

SPECIAL = np.array([-np.inf, -2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, np.inf, np.nan])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ufunc", list(COMPARISONS), ids=lambda u: u.__name__)
def test_compare(ufunc, dtype):
    a = np.repeat(SPECIAL, SPECIAL.size).astype(dtype)      # every pair of special numbers
    b = np.tile(SPECIAL, SPECIAL.size).astype(dtype)
    t = Tape(dtype)
    x, y = t.input(a.shape), t.input(b.shape)
    args = (x, y) if COMPARISONS[ufunc] == 2 else (x,)
    out = t.emit("compare", args, a.shape, dtype=bool, ufunc=ufunc)
    # a single number against every one, and the other way round
    single = t.const(0.5)
    left = t.emit("compare", (single, y)[:len(args)], a.shape, dtype=bool, ufunc=ufunc)
    right = t.emit("compare", (x, single)[:len(args)], a.shape, dtype=bool, ufunc=ufunc)
    replay = replayed(t, a, b)
    with np.errstate(invalid="ignore"):
        expected = ufunc(a, b) if len(args) == 2 else ufunc(a)
        expected_left = ufunc(0.5, b) if len(args) == 2 else np.full(a.shape, ufunc(0.5))
        expected_right = ufunc(a, np.float64(0.5)) if len(args) == 2 else ufunc(a)
    assert_array_equal(replay.value(out), expected.astype(dtype))
    assert_array_equal(replay.value(left), expected_left.astype(dtype))
    assert_array_equal(replay.value(right), expected_right.astype(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [((4, 3), (4, 3), (4, 3)), ((3,), (4, 3), ()),
                                    ((), (3,), (4, 3)), ((4, 3), (), ()), ((), (), ())],
                         ids=str)
def test_select(shapes, dtype):
    rng = seeded("select" + str(shapes))
    c_shape, a_shape, b_shape = shapes
    shape = np.broadcast_shapes(*shapes)
    c = rng.uniform(-1, 1, c_shape) > 0
    a, b = rng.standard_normal(a_shape).astype(dtype), rng.standard_normal(b_shape).astype(dtype)
    t = Tape(dtype)
    cond, x, y = t.const(c, bool), t.input(a_shape), t.input(b_shape)
    out = t.emit("select", (cond, x, y), shape)
    replay = replayed(t, a, b)
    assert_array_equal(replay.value(cond), c.astype(dtype))
    assert_array_equal(replay.value(out), np.where(c, a, b))


def test_select_on_a_comparison_is_np_where():
    a = np.linspace(-2, 2, 9)
    t = Tape(np.float64)
    x = t.input(a.shape)
    zero = t.const(0.0)
    positive = t.emit("compare", (x, zero), a.shape, dtype=bool, ufunc=np.greater)
    out = t.emit("select", (positive, x, zero), a.shape)    # relu
    replay = replayed(t, a)
    assert_array_equal(replay.value(out), np.maximum(a, 0.0))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [((5,), (5,)), ((), (6,)), ((3,), (4, 3)), ((2, 3), (5, 2, 3)),
                                    ((), ())], ids=str)
def test_copy_and_zeros(shapes, dtype):
    a_shape, shape = shapes
    a = np.arange(1, 1 + int(np.prod(a_shape)), dtype=dtype).reshape(a_shape)
    t = Tape(dtype)
    x = t.input(a_shape)
    out = t.emit("copy", (x,), shape)
    zeros = t.emit("zeros", (), shape)
    replay = Replay(t)
    replay.set_input(0, a)
    replay.value(zeros)[...] = 7.0      # what a previous run might have left
    assert replay.run() == 0
    assert_array_equal(replay.value(out), np.broadcast_to(a, shape))
    assert_array_equal(replay.value(zeros), 0.0)


# -- gather and scatter_add -----------------------------------------------------------------

def gathered(a, index, rows):
    # the reference: fancy indexing row by row, 0 where the index is negative
    a = a.reshape(rows, -1)
    return np.where(index >= 0, a[:, np.maximum(index, 0)], 0.0)


def scattered(a, index, rows, row_length):
    # the reference: np.add.at row by row, leaving out negative indices
    out = np.zeros((rows, row_length))
    keep = index >= 0
    for r in range(rows):
        np.add.at(out[r], index[keep], a.reshape(rows, -1)[r][keep])
    return out


INDICES = {
    "random with -1": lambda rng, r: np.where(rng.uniform(size=11) < 0.3, -1,
                                               rng.integers(0, r, 11)),
    "repeated": lambda rng, r: np.array([0, 2, 2, 2, r - 1, 0]),
    "step 1": lambda rng, r: np.arange(1, r - 1),
    "step 3": lambda rng, r: np.arange(0, r, 3),
    "step 0": lambda rng, r: np.full(4, r // 2),
    "step -2": lambda rng, r: np.arange(r - 1, -1, -2),
    "one": lambda rng, r: np.array([r - 2]),
    # a progression between runs of -1: concatenate's, pad's and stack's blocks
    "padded step 1": lambda rng, r: np.r_[-1, -1, np.arange(2, r - 1), -1],
    "padded step 2": lambda rng, r: np.r_[np.arange(1, r, 2), -1, -1, -1],
    "padded step -1": lambda rng, r: np.r_[-1, np.arange(r - 1, 3, -1)],
    "padded one": lambda rng, r: np.r_[-1, -1, -1, r - 1],
    "padded step 0": lambda rng, r: np.r_[-1, np.full(3, 4)],
    "-1 inside": lambda rng, r: np.r_[-1, 0, 1, -1, 2, 3],
    "-2 lead": lambda rng, r: np.r_[-2, 0, 1, 2],
    "all -1": lambda rng, r: np.full(5, -1),
}
# how the lowering should run each (column P2 of the gather's and the scatter's rows):
# 0 one index per element, 1 a strided copy, 2 a strided copy between zeros (and a gather
# of one row of a contiguous stretch: 3, a slice of its operand's slot, ALIASED)
ALIASED_ONE_ROW = {"step 1", "one"}
RUNS = {"random with -1": (0, 0), "repeated": (0, 0), "step 1": (1, 1), "step 3": (1, 1),
        "step 0": (1, 0), "step -2": (1, 1), "one": (1, 1), "padded step 1": (2, 2),
        "padded step 2": (2, 2), "padded step -1": (2, 2), "padded one": (2, 2),
        "padded step 0": (2, 0), "-1 inside": (0, 0), "-2 lead": (0, 0), "all -1": (0, 0)}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("index", INDICES, ids=str)
def test_gather_and_scatter_add(index, rows, dtype):
    rng = seeded("gather" + index)
    r = 9
    runs = (3, RUNS[index][1]) if rows == 1 and index in ALIASED_ONE_ROW else RUNS[index]
    index = np.asarray(INDICES[index](rng, r), np.int64)
    m = index.size
    a = rng.standard_normal(rows * r).astype(dtype)
    c = rng.standard_normal(rows * m).astype(dtype)
    t = Tape(dtype)
    x, y = t.input((rows, r)), t.input((rows, m))
    g = t.emit("gather", (x,), (rows, m), index=index)
    s = t.emit("scatter_add", (y,), (rows, r), index=index)
    replay = replayed(t, a.reshape(rows, r), c.reshape(rows, m))
    assert tuple(replay.code[:, COLUMNS["P2"]]) == runs
    assert_array_equal(replay.value(g), gathered(a, index, rows))
    assert_allclose(replay.value(s), scattered(c.astype(np.float64), index, rows, r),
                    **TOLERANCE[dtype])
    # the two are each other's transposes: <gather(a), c> == <a, scatter(c)>
    assert np.dot(replay.value(g).ravel(), c) == pytest.approx(
        np.dot(a, replay.value(s).ravel()), rel=1e-5 if dtype == np.float32 else 1e-13)


def test_gather_of_one_row_broadcast_to_lanes():
    # out[l*m + i] = a[l*r + index[i]] with r = |a| / L: a gather reads every row
    a = np.arange(12.0).reshape(3, 4)
    index = np.array([3, 3, 0, -1])
    t = Tape(np.float64)
    x = t.input(a.shape)
    g = t.emit("gather", (x,), (3, 4), index=index)
    replay = replayed(t, a)
    assert_array_equal(replay.value(g), [[3, 3, 0, 0], [7, 7, 4, 0], [11, 11, 8, 0]])


@pytest.mark.parametrize("kind", ["gather", "scatter_add"])
def test_empty_index(kind):
    t = Tape(np.float64)
    x = t.input((0,) if kind == "gather" else (0,))
    out = t.emit(kind, (x,), (0,) if kind == "gather" else (4,), index=np.zeros(0, np.int64))
    replay = replayed(t, np.zeros(0))
    assert_array_equal(replay.value(out), np.zeros(out.shape))


def test_an_index_beyond_its_row_is_refused():
    t = Tape(np.float64)
    x = t.input((2, 3))
    t.emit("gather", (x,), (2, 2), index=np.array([0, 3]))
    with pytest.raises(ValueError, match="index reaches 3"):
        Replay(t)
    t = Tape(np.float64)
    x = t.input((4,))
    t.emit("gather", (x,), (3,), index=np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="integer"):
        Replay(t)


# -- sum_inner and matmul -------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows, k", [(1, n) for n in (0, 1, 7, 8, 9, 16, 17, 100, 1001)]
                         + [(5, 3), (4, 8), (3, 19), (6, 0)])
def test_sum_inner(rows, k, dtype):
    a = seeded(f"sum {rows} {k}").standard_normal((rows, k)).astype(dtype)
    t = Tape(dtype)
    x = t.input(a.shape)
    out = t.emit("sum_inner", (x,), (rows,) if rows > 1 else (), k=k)
    replay = replayed(t, a)
    exact = [np.sum(np.asarray(row, np.longdouble)) for row in a.astype(np.float64)]
    # accumulated in double: float32 sums are rounded once
    tolerance = dict(rtol=1e-13, atol=1e-13) if dtype == np.float64 else TOLERANCE[dtype]
    assert_allclose(replay.value(out).ravel(), np.array(exact, np.float64), **tolerance)


MATMULS = [  # (a shape, b shape): batched, one matrix for every batch, vectors, empty
    ((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((3, 4), (6, 4, 5)), ((6, 3, 4), (4, 5)),
    ((5, 4), (4, 1)), ((3, 5, 4), (3, 4, 1)), ((1, 4), (4, 7)), ((3, 0), (0, 2)),
    ((2, 3, 17), (2, 17, 9)), ((0, 4), (4, 2)), ((5, 37), (37, 1)),
    ((40, 50), (50, 30)), ((3, 40, 30), (30, 41)), ((40, 30), (2, 30, 41)), ((64, 600), (600, 1)),
    # tiles of 4 x 4 below 16 columns, with every remainder of rows and columns
    ((4, 3), (3, 4)), ((5, 7), (7, 6)), ((6, 2), (2, 15)), ((7, 33), (33, 11)),
    ((9, 5), (5, 13)), ((2, 7, 9), (2, 9, 14)), ((128, 32), (32, 8)), ((3, 1), (1, 2)),
    ((11, 0), (0, 5)), ((13, 10), (10, 16)), ((1, 9), (9, 3)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", MATMULS, ids=str)
def test_matmul(shapes, dtype):
    rng = seeded("matmul" + str(shapes))
    a_shape, b_shape = shapes
    a = rng.standard_normal(a_shape).astype(dtype)
    b = rng.standard_normal(b_shape).astype(dtype)
    m, k = a_shape[-2:]
    n = b_shape[-1]
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    t = Tape(dtype)
    x, y = t.input(a_shape), t.input(b_shape)
    out = t.emit("matmul", (x, y), expected.shape, m=m, k=k, n=n)
    replay = replayed(t, a, b)
    tolerance = dict(rtol=1e-13, atol=1e-13) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-5)
    assert_allclose(replay.value(out), expected, **tolerance)


def test_matmul_sizes_are_checked():
    t = Tape(np.float64)
    x, y = t.input((3, 4)), t.input((5, 2))
    t.emit("matmul", (x, y), (3, 2), m=3, k=4, n=2)
    with pytest.raises(ValueError, match="matrices"):
        Replay(t)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [2, 3, 50])
def test_a_reverse_sweep_written_by_hand(n, dtype):
    # Rosenbrock's value and gradient: slices as gathers, their transposes as scatters
    x = np.linspace(-1.0, 1.5, n).astype(dtype)
    t = Tape(dtype)
    v = t.input((n,))

    def emit(kind, name, *args):
        table = UNARY if kind == "unary" else BINARY
        return t.emit(kind, args, (max(a.size for a in args),), op=table[name])

    head = t.emit("gather", (v,), (n - 1,), index=np.arange(n - 1))
    tail = t.emit("gather", (v,), (n - 1,), index=np.arange(1, n))
    d = emit("binary", "subtract", tail, emit("unary", "square", head))
    e = emit("binary", "subtract", t.const(1.0), head)
    terms = emit("binary", "add", emit("binary", "multiply", emit("unary", "square", d),
                                        t.const(100.0)), emit("unary", "square", e))
    value = t.emit("sum_inner", (terms,), (), k=n - 1)
    head_d = emit("binary", "multiply", head, d)
    d_head = emit("binary", "add", emit("binary", "multiply", head_d, t.const(-400.0)),
                  emit("binary", "multiply", e, t.const(-2.0)))
    d_tail = emit("binary", "multiply", d, t.const(200.0))
    gradient = emit("binary", "add", t.emit("scatter_add", (d_head,), (n,), index=np.arange(n - 1)),
                    t.emit("scatter_add", (d_tail,), (n,), index=np.arange(1, n)))
    replay = replayed(t, x)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    x64 = x.astype(np.float64)
    assert_allclose(replay.value(value), rosenbrock(x64), rtol=rtol)
    assert_allclose(replay.value(gradient), rosenbrock_gradient(x64), rtol=rtol, atol=rtol)


# -- python instructions ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_a_python_instruction(dtype):
    rng = seeded("solve")
    a = (rng.standard_normal((4, 4)) + 4 * np.eye(4)).astype(dtype)
    b = rng.standard_normal(4).astype(dtype)
    t = Tape(dtype)
    x, y = t.input(a.shape), t.input(b.shape)
    solved = t.emit("python", (x, y), (4,), function=np.linalg.solve, entry=None, params={},
                    where="numpy.linalg.solve")
    doubled = t.emit("binary", (solved, t.const(2.0)), (4,), op=BINARY["multiply"])
    replay = replayed(t, a, b)
    assert_allclose(replay.value(solved), np.linalg.solve(a, b), rtol=1e-5)
    assert_array_equal(replay.value(doubled), 2 * replay.value(solved))

    # its exception propagates; the replay works again on good inputs
    replay.set_input(0, np.zeros((4, 4)))
    with pytest.raises(np.linalg.LinAlgError):
        replay.run()
    replay.set_input(0, a)
    replay.value(doubled)[...] = 0.0
    assert replay.run() == 0
    assert_allclose(replay.value(doubled), 2 * np.linalg.solve(a, b), rtol=1e-5)


def test_a_python_instruction_of_several_outputs_and_a_bool_operand():
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    seen = []

    def eigh_where(mask, x):
        seen.append(mask.dtype)
        w, v = np.linalg.eigh(x)
        return np.where(mask, w, 0.0), v

    t = Tape(np.float64)
    x = t.input(a.shape)
    mask = t.const([True, False], bool)
    w, v = t.emit_many("python", (mask, x), [(2,), (2, 2)], function=eigh_where, entry=None,
                       params={}, where="eigh")
    replay = replayed(t, a)
    expected_w, expected_v = np.linalg.eigh(a)
    assert seen == [np.dtype(bool)]
    assert_allclose(replay.value(w), [expected_w[0], 0.0])
    assert_allclose(replay.value(v), expected_v)


def test_a_python_instruction_gives_what_the_tape_expects():
    t = Tape(np.float64)
    x = t.input((3,))
    t.emit_many("python", (x,), [(3,), (3,)], function=np.cumsum, entry=None, params={},
                where="cumsum")
    replay = Replay(t)
    with pytest.raises(ValueError, match="cumsum gave 1 results; the tape expects 2"):
        replay.run()
    t = Tape(np.float64)
    x = t.input((3,))
    t.emit("python", (x,), (3,), function=np.sum, entry=None, params={}, where="sum")
    with pytest.raises(ValueError, match=r"sum gave an array of shape \(\); the tape expects"):
        Replay(t).run()


def test_a_python_instruction_cannot_write_its_operands():
    def scale_in_place(x):
        x *= 2.0
        return x

    t = Tape(np.float64)
    x = t.input((3,))
    t.emit("python", (x,), (3,), function=scale_in_place, entry=None, params={}, where="f")
    replay = Replay(t)
    replay.set_input(0, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="read-only"):
        replay.run()
    assert_array_equal(replay.value(x), [1.0, 2.0, 3.0])


# -- guards ---------------------------------------------------------------------------------

def guarded_tape(dtype=np.float64):
    # y = |x| where the sign of x was recorded positive
    t = Tape(dtype)
    x = t.input((3,))
    positive = t.emit("compare", (x, t.const(0.0)), (3,), dtype=bool, ufunc=np.greater)
    t.guard(positive, [True, True, False], "if x > 0")
    y = t.emit("unary", (x,), (3,), op=UNARY["sin"])
    return t, x, y


@pytest.mark.parametrize("dtype", DTYPES)
def test_guards(dtype):
    t, x, y = guarded_tape(dtype)
    replay = Replay(t)
    replay.set_input(0, [1.0, 2.0, -3.0])
    assert replay.run() == 0
    assert_allclose(replay.value(y), np.sin(np.array([1.0, 2.0, -3.0], dtype)), rtol=1e-6)

    replay.set_input(0, [1.0, -2.0, -3.0])
    assert replay.run() == 2                       # the guard is instruction 1
    assert_allclose(replay.value(y), np.sin(np.array([1.0, 2.0, -3.0], dtype)), rtol=1e-6)
    # running on from the guard is the caller's choice
    assert replay.run(2) == 0
    assert_allclose(replay.value(y), np.sin(np.array([1.0, -2.0, -3.0], dtype)), rtol=1e-6)


def test_a_guard_on_values_treats_nan_as_equal_to_nan():
    t = Tape(np.float64)
    x = t.input((2,))
    t.guard(x, [1.5, np.nan], "float(x)")
    replay = Replay(t)
    replay.set_input(0, [1.5, np.nan])
    assert replay.run() == 0
    replay.set_input(0, [1.5, 0.0])
    assert replay.run() == 1
    replay.set_input(0, [np.nan, np.nan])
    assert replay.run() == 1


def test_run_ranges():
    t, x, y = guarded_tape()
    replay = Replay(t)
    replay.set_input(0, [0.5, 0.25, -1.0])
    assert replay.run(0, 1) == 0
    assert_array_equal(replay.value(y), 0.0)        # not run yet
    assert replay.run(1, 3) == 0
    assert_allclose(replay.value(y), np.sin([0.5, 0.25, -1.0]))
    assert replay.run(3, 3) == 0
    for start, stop in [(-1, 2), (2, 1), (0, 4)]:
        with pytest.raises(ValueError):
            replay.run(start, stop)


# -- the arena, lowering errors, allocations, threads ------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_slots_are_aligned_views_of_the_arena(dtype):
    t = Tape(dtype)
    x = t.input((3, 2))
    c = t.const(np.arange(5.0))
    y = t.emit("unary", (x,), (3, 2), op=UNARY["negative"])
    replay = replayed(t, np.ones((3, 2)))
    for var in (x, c, y):
        view = replay.value(var)
        assert view.shape == var.shape and view.dtype == dtype
        assert np.shares_memory(view, replay.arena)
        assert view.ctypes.data == replay.arena.ctypes.data + replay.offset(var) * view.itemsize
        assert view.ctypes.data % ALIGNMENT == 0
    assert_array_equal(replay.value(c), np.arange(5.0))
    assert_array_equal(replay.value(y), -1.0)
    assert replay.code.shape == (1, replay.code.shape[1]) and not replay.code.flags.writeable


def test_bad_tapes_are_refused():
    def tape_with(kind, args, shape=(3,), **params):
        t = Tape(np.float64)
        x = t.input((3,))
        t.emit(kind, tuple(x if a == "x" else a for a in args), shape, **params)
        return t

    with pytest.raises(TypeError, match="float16"):
        Replay(Tape(np.float16))
    with pytest.raises(ValueError, match="unknown kind"):
        Replay(tape_with("fma", ("x",)))
    with pytest.raises(ValueError, match="reads 2 Vars, not 1"):
        Replay(tape_with("unary", ("x", "x"), op=0))
    with pytest.raises(ValueError, match="position of a rule"):
        Replay(tape_with("unary", ("x",), op=len(UNARY_RULES)))
    with pytest.raises(ValueError, match="comparison"):
        Replay(tape_with("compare", ("x", "x"), ufunc=np.add))
    with pytest.raises(ValueError, match="sums"):
        Replay(tape_with("sum_inner", ("x",), shape=(), k=2))
    with pytest.raises(ValueError, match="not a Var of this tape"):
        Replay(tape_with("copy", (Tape(np.float64).input((3,)),)))
    t = Tape(np.float64)
    x = t.input((3,))
    t.instrs.append(Instr("copy", (x,), (x,), {}))
    with pytest.raises(ValueError, match="writes the input"):
        Replay(t)
    replay = Replay(Tape(np.float64))
    with pytest.raises(TypeError, match="once"):
        replay.__init__(t)


def chain_tape(dtype, n):
    # one instruction of every compiled kind, on vectors of n
    t = Tape(dtype)
    x = t.input((n,))
    s = t.emit("unary", (x,), (n,), op=UNARY["sin"])
    t.emit("unary_d", (x,), (n,), op=UNARY["exp"])   # (by NumPy's loop, NUMPY_LOOPS)
    d = t.emit("unary_d2", (x,), (n,), op=UNARY["tanh"])
    p = t.emit("binary", (s, d), (n,), op=BINARY["multiply"])
    q = t.emit("binary_dab", (p, t.const(2.0)), (n,), op=BINARY["power"])
    q = t.emit("scale", (q, d), (n,))
    c = t.emit("compare", (x, q), (n,), dtype=bool, ufunc=np.less)
    w = t.emit("select", (c, p, q), (n,))
    g = t.emit("gather", (w,), (n,), index=np.arange(n)[::-1].copy())
    h = t.emit("scatter_add", (g,), (n,), index=np.arange(n) // 2)
    y = t.emit("copy", (h,), (2, n))
    m = t.emit("matmul", (y, x), (2,), m=2, k=n, n=1)
    t.emit("sum_inner", (m,), (), k=2)
    square = t.emit("copy", (x,), (n, n))
    t.emit("matmul", (square, square), (n, n), m=n, k=n, n=n)
    t.emit("zeros", (), (n,))
    t.guard(t.const(np.arange(n)), np.arange(n), "a loop over range(n)")
    return t


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [10, 100])
def test_a_run_allocates_nothing(n, dtype, allocations_per_call):
    replay = Replay(chain_tape(dtype, n))
    replay.set_input(0, np.linspace(0.5, 1.5, n))
    run = replay.run
    assert allocations_per_call(lambda: run()) == 0


def test_replays_run_in_threads_at_once():
    # run releases the GIL: one Replay per thread, each with its own inputs
    tapes = [chain_tape(np.float64, 100) for _ in range(4)]
    replays = [Replay(t) for t in tapes]
    results = [None] * 4

    def work(i):
        replays[i].set_input(0, np.linspace(0.5, 1.5 + i, 100))
        for _ in range(50):
            replays[i].run()
        results[i] = replays[i].arena.copy()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, t in enumerate(tapes):
        alone = replayed(t, np.linspace(0.5, 1.5 + i, 100))
        assert_array_equal(results[i], alone.arena)


@pytest.fixture(scope="module")
def replay_hooks(tmp_path_factory):
    """tests/replay_hooks.pyx, compiled with cythonize against cyad.get_include()."""
    import cyad

    def build(folder):
        shutil.copy(HERE / "replay_hooks.pyx", folder)
        _run([sys.executable, "-c", _CYTHONIZE, "replay_hooks", cyad.get_include(),
              np.get_include()], folder, "building replay_hooks.pyx", _UNOPTIMISED)

    return _load("replay_hooks", _built_once(tmp_path_factory, "replay_hooks", build))


@pytest.mark.parametrize("dtype", DTYPES)
def test_replay_run_from_cython(replay_hooks, dtype):
    t, x, y = guarded_tape(dtype)
    total = t.emit("sum_inner", (y,), (), k=3)
    t.emit("python", (x,), (3,), function=np.linalg.cholesky, entry=None, params={},
           where="numpy.linalg.cholesky")      # raises: x is no matrix
    replay = Replay(t)
    replay.set_input(0, [0.5, 1.0, -2.0])
    assert replay_hooks.run_without_gil(replay, 0, 4) == 0
    assert replay_hooks.arena_sum(replay, y) == pytest.approx(np.sin([0.5, 1.0, -2.0]).sum(),
                                                              rel=1e-6)
    assert replay_hooks.arena_sum(replay, total) == pytest.approx(replay.value(total), rel=1e-6)
    with pytest.raises(np.linalg.LinAlgError):
        replay_hooks.run_without_gil(replay, 4, 5)
    replay.set_input(0, [0.5, -1.0, -2.0])
    assert replay_hooks.run_without_gil(replay, 0, 4) == 2


# -- random tapes ---------------------------------------------------------------------------

# the rules a random tape uses, with their derivatives written out: bounded on any reals
RANDOM_UNARY = {
    "sin": (np.sin, np.cos, lambda x: -np.sin(x)),
    "tanh": (np.tanh, lambda x: 1 / np.cosh(x) ** 2, lambda x: -2 * np.tanh(x) / np.cosh(x) ** 2),
    "arctan": (np.arctan, lambda x: 1 / (1 + x * x), lambda x: -2 * x / (1 + x * x) ** 2),
}
RANDOM_BINARY = {
    "add": (np.add, lambda a, b: np.ones_like(a), lambda a, b: np.ones_like(a)),
    "subtract": (np.subtract, lambda a, b: np.ones_like(a), lambda a, b: -np.ones_like(a)),
    "multiply": (np.multiply, lambda a, b: b, lambda a, b: a),
    "hypot": (np.hypot, lambda a, b: hypot_partial(a, b), lambda a, b: hypot_partial(b, a)),
}


def hypot_partial(a, b):
    # a / hypot(a, b), and 0 at (0, 0) (the rule table's convention)
    h = np.hypot(a, b)
    return np.divide(a, h, out=np.zeros_like(h), where=h != 0)
SIZES = (1, 2, 6, 12)


def modular(value, n):
    # i % size: the tape's broadcasting, stated directly
    return np.resize(value.ravel(), n)


def random_tape(rng, dtype, length=25):
    """A random chain of instructions, with its values computed here in float64."""
    t = Tape(dtype)
    pool = []
    for size in (12, 6, 1):
        var = t.input((size,))
        pool.append((var, rng.uniform(-2, 2, size).astype(dtype).astype(np.float64)))
    inputs = [value for _, value in pool]
    for _ in range(length):
        kind = rng.choice(["unary", "unary_d", "unary_d2", "binary", "binary_da", "binary_db",
                           "scale", "compare", "select", "copy", "gather", "scatter_add",
                           "sum_inner", "matmul"])
        (a, av), (b, bv), (c, cv) = (pool[i] for i in rng.integers(0, len(pool), 3))
        if kind.startswith("unary"):
            name = rng.choice(list(RANDOM_UNARY))
            n = max(a.size, int(rng.choice(SIZES)) // a.size * a.size)
            column = ("unary", "unary_d", "unary_d2").index(kind)
            out = t.emit(kind, (a,), (n,), op=UNARY[name])
            value = RANDOM_UNARY[name][column](modular(av, n))
        elif kind.startswith("binary") or kind in ("scale", "compare", "select"):
            operands = (c, a, b) if kind == "select" else (a, b)
            sizes = sorted(v.size for v in operands)
            if any(larger % smaller for smaller, larger in zip(sizes, sizes[1:])):
                continue
            n = sizes[-1]
            if kind == "compare":
                ufunc = rng.choice([np.less, np.greater_equal, np.not_equal, np.logical_xor])
                out = t.emit(kind, (a, b), (n,), dtype=bool, ufunc=ufunc)
                value = ufunc(modular(av, n), modular(bv, n)).astype(float)
            elif kind == "scale":
                out = t.emit(kind, (a, b), (n,))
                value = np.where(modular(bv, n) == 0, 0.0, modular(av, n) * modular(bv, n))
            elif kind == "select":
                out = t.emit(kind, (c, a, b), (n,))
                value = np.where(modular(cv, n) != 0, modular(av, n), modular(bv, n))
            else:
                name = rng.choice(list(RANDOM_BINARY))
                column = ("binary", "binary_da", "binary_db").index(kind)
                out = t.emit(kind, (a, b), (n,), op=BINARY[name])
                value = RANDOM_BINARY[name][column](modular(av, n), modular(bv, n))
        elif kind == "copy":
            n = a.size * int(rng.integers(1, 3))
            out = t.emit(kind, (a,), (n,))
            value = modular(av, n)
        elif kind == "gather":
            m = int(rng.integers(1, 8))
            index = rng.integers(-1, a.size, m)
            out = t.emit(kind, (a,), (m,), index=index)
            value = gathered(av, index, 1).ravel()
        elif kind == "scatter_add":
            index = rng.integers(-1, 7, a.size)
            out = t.emit(kind, (a,), (7,), index=index)
            value = scattered(av, index, 1, 7).ravel()
        elif kind == "sum_inner":
            k = int(rng.choice([d for d in SIZES if a.size % d == 0]))
            out = t.emit(kind, (a,), (a.size // k,), k=k)
            value = av.reshape(-1, k).sum(axis=1)
        else:   # matmul: a as (m, k), b as (k, 1) or a single number scaled
            if a.size % b.size:
                continue
            m = a.size // b.size
            out = t.emit(kind, (a, b), (m,), m=m, k=b.size, n=1)
            value = av.reshape(m, b.size) @ bv
        pool.append((out, np.asarray(value, np.float64)))
    return t, inputs, pool


def shared(tape, starts=()):
    """A Replay of tape whose slots pass on by liveness: no Var kept beyond the tape's
    own."""
    return Replay(tape, keep=(), starts=starts)


def test_shared_slots_shrink_the_arena_and_leave_results_alone():
    # a chain: each Var is read by the next instruction alone, so two slots serve them all
    t = Tape(np.float64)
    x = t.input((100,))
    v = x
    for _ in range(20):
        v = t.emit("unary", (v,), (100,), op=UNARY["sin"])
    t.outputs.append(v)
    own, reused = Replay(t), shared(t)
    assert reused.arena.size < own.arena.size / 5
    for replay in (own, reused):
        replay.set_input(0, np.linspace(-1, 1, 100))
        assert replay.run() == 0
    assert_array_equal(reused.value(v), own.value(v))
    # no output shares a slot with its operand, nor an input or an output with any Var
    offsets = {var.number: reused.offset(var) for var in t.vars}
    for instr in t.instrs:
        assert offsets[instr.outs[0].number] != offsets[instr.args[0].number]
    assert list(offsets.values()).count(offsets[x.number]) == 1
    assert list(offsets.values()).count(offsets[v.number]) == 1


def test_kept_vars_and_restarts_keep_their_values():
    # [0, split) once, then [split, n) again: a Var of the first part read in the second
    # keeps its slot to the end; a kept Var keeps its slot always
    t = Tape(np.float64)
    x, seed = t.input((8,)), t.input((8,))
    early = t.emit("unary", (x,), (8,), op=UNARY["exp"])
    primal = t.emit("unary", (early,), (8,), op=UNARY["sin"])
    split = len(t.instrs)
    kept = t.emit("binary", (seed, seed), (8,), op=BINARY["add"])
    late = kept
    for _ in range(6):
        late = t.emit("binary", (late, early), (8,), op=BINARY["multiply"])
        late = t.emit("unary", (late,), (8,), op=UNARY["tanh"])
    t.outputs += [primal, late]
    reference, replay = Replay(t), Replay(t, keep=[kept], starts=[split])
    assert replay.arena.size < reference.arena.size
    values = np.linspace(-1, 1, 8)
    for r in (reference, replay):
        r.set_input(0, values)
        assert r.run(0, split) == 0
    for seed_values in (values**2, values + 3):
        for r in (reference, replay):
            r.set_input(1, seed_values)
            assert r.run(split) == 0
        assert_array_equal(replay.value(late), reference.value(late))
        assert_array_equal(replay.value(kept), reference.value(kept))
        assert_array_equal(replay.value(primal), reference.value(primal))


def test_bad_keep_and_starts_are_errors():
    t = Tape(np.float64)
    t.emit("copy", (t.input((3,)),), (3,))
    with pytest.raises(ValueError, match="not a Var of this tape"):
        Replay(t, keep=[Tape(np.float64).input((3,))])
    with pytest.raises(ValueError, match="cannot start at instruction 5"):
        Replay(t, keep=(), starts=[5])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", range(40))
def test_random_tapes_with_shared_slots(seed, dtype):
    # the same results with slots passed on as with a slot per Var, for the outputs, run
    # whole and again from a start in the middle
    rng = np.random.default_rng(seed)
    t, inputs, pool = random_tape(rng, dtype)
    for var, _ in pool[len(inputs):][::3]:
        if var not in t.outputs:
            t.outputs.append(var)
    split = len(t.instrs) // 2
    reference, replay = Replay(t), shared(t, starts=[split])
    assert replay.arena.size <= reference.arena.size
    for r in (reference, replay):
        for i, x in enumerate(inputs):
            r.set_input(i, x)
        assert r.run() == 0
    for var in t.outputs:
        assert_array_equal(replay.value(var), reference.value(var), err_msg=repr(t))
    for r in (reference, replay):
        r.set_input(0, inputs[0][::-1])
        assert r.run(0, split) == 0
        r.set_input(1, inputs[1] * 0.5)
        assert r.run(split) == 0
        assert r.run(split) == 0
    for var in t.outputs:
        assert_array_equal(replay.value(var), reference.value(var), err_msg=repr(t))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", range(40))
def test_random_tapes(seed, dtype):
    rng = np.random.default_rng(seed)
    t, inputs, pool = random_tape(rng, dtype)
    replay = replayed(t, *inputs)
    for var, value in pool:
        if dtype == np.float64:
            assert_allclose(replay.value(var).ravel(), value, rtol=1e-12, atol=1e-12,
                            err_msg=repr(t))
        elif var.dtype != bool:
            # a float32 chain rounds at every step: a loose comparison (a comparison's
            # outcome may flip between the two, so it is left out)
            scale = max(1.0, np.abs(value).max(initial=0))
            assert_allclose(replay.value(var).ravel(), value, rtol=0, atol=1e-3 * scale,
                            err_msg=repr(t))


# -- blocked runs ---------------------------------------------------------------------------

def elementwise_tape(rng, dtype, n, period, length=30):
    """A random program of mostly elementwise instructions on Vars of n elements, of
    `period` elements (broadcast to n) and single numbers, with a gather or a sum now and
    then (which end a blocked run, but for a gather of one number, a slice of a wider
    input, a pad of a narrower slice, a sum of n numbers), sin and cos columns of one
    operand in a row (pairs); and its inputs' values. A sum of n numbers is an output
    alone (a blocked run rounds it otherwise than a whole sum)."""
    t = Tape(dtype)
    sizes = (n, period, 1)
    inputs = [rng.uniform(-3, 3, size).astype(dtype) for size in sizes + (n, n + 3)]
    pool = [t.input((size,)) for size in sizes + (n,)]
    wide = t.input((n + 3,))
    for _ in range(length):
        kind = rng.choice(["unary", "sines", "binary", "scale", "compare", "select", "copy",
                           "gather", "sum_inner", "slice", "pad", "fill"],
                          p=[.18, .1, .22, .1, .05, .1, .05, .06, .05, .04, .03, .02])
        a, b, c = (pool[i] for i in rng.integers(0, len(pool), 3))
        if kind == "slice":
            first = int(rng.integers(0, 4))
            pool.append(t.emit("gather", (wide,), (n,), index=np.arange(first, first + n)))
            continue
        if kind == "pad":
            narrow = t.emit("gather", (wide,), (n - 2,), index=np.arange(1, n - 1))
            first = int(rng.integers(0, 3))
            pool.append(t.emit("scatter_add", (narrow,), (n,),
                               index=np.arange(first, first + n - 2)))
            continue
        if kind == "fill":
            if a.size == 1:
                pool.append(t.emit("gather", (a,), (n,), index=np.zeros(n, np.int64)))
            continue
        if kind in ("unary", "sines", "copy") and a.size == 1:
            continue
        if kind == "unary":
            name = rng.choice(["exp", "tanh", "square", "negative", "cos", "arctan"])
            column = rng.choice(["unary", "unary_d", "unary_d2"])
            out = t.emit(column, (a,), (max(a.size, int(rng.choice([a.size, n]))),),
                         op=UNARY[name])
        elif kind == "sines":
            name = rng.choice(["sin", "cos"])
            size = max(a.size, int(rng.choice([a.size, n])))
            first, second = rng.choice(["unary", "unary_d", "unary_d2"], 2)
            pool.append(t.emit(first, (a,), (size,), op=UNARY[name]))
            out = t.emit(second, (a,), (size,), op=UNARY[name])
        elif kind == "copy":
            out = t.emit(kind, (a,), (n,))
        elif kind == "gather":
            out = t.emit(kind, (a,), (n,), index=rng.integers(0, a.size, n))
        elif kind == "sum_inner":
            if a.size != n:
                continue
            out = t.emit(kind, (a,), (period,), k=n // period)
            if period == 1:
                t.outputs.append(out)
                continue
        else:
            operands = (c, a, b) if kind == "select" else (a, b)
            size = max(v.size for v in operands)
            if kind == "compare":
                out = t.emit(kind, (a, b), (size,), dtype=bool, ufunc=np.less)
            elif kind in ("scale", "select"):
                out = t.emit(kind, operands, (size,))
            else:
                name = rng.choice(["add", "subtract", "multiply", "divide"])
                out = t.emit(kind, (a, b), (size,), op=BINARY[name])
        pool.append(out)
    t.outputs += pool[len(sizes) + 1:][::4] + pool[-1:]
    return t, inputs


# (small blocks, so that small Vars make several)
BLOCK = 256
BLOCKED_FROM = BLOCKED_BY * BLOCK


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("n", "period"), [
    (BLOCKED_FROM, BLOCK), (3 * (BLOCKED_FROM + 5), BLOCKED_FROM + 5),
    (2 * BLOCKED_FROM + 2, BLOCKED_FROM + 1), (BLOCKED_FROM + 1, 1)], ids=str)
@pytest.mark.parametrize("seed", range(6))
def test_blocked_runs_give_the_numbers_of_whole_instructions(seed, n, period, dtype):
    # random elementwise programs over large Vars, slots passed on by liveness, slices as
    # offsets, the Vars that live within a run in its scratch: blocked runs (blocks of
    # BLOCK elements, within periods of broadcast operands, sin and cos paired, fills,
    # pads) give the very numbers that instructions run whole do, run whole and from
    # starts (where runs break); a sum in a run, its blocks' sums added in order
    rng = np.random.default_rng(seed)
    t, inputs = elementwise_tape(rng, dtype, n, period)
    starts = sorted({int(s) for s in rng.integers(1, len(t.instrs), 2)})
    blocked = Replay(t, keep=(), starts=starts, block=BLOCK)
    whole = Replay(t, keep=(), starts=starts, block=0)
    runs = blocked.runs
    assert (runs[:, 0] - np.arange(len(t.instrs)) >= 3).any()   # (a run of 3 at least)
    inside = (runs[starts, 0] != 0) & (runs[starts, 0] == runs[[s - 1 for s in starts], 0])
    assert not inside.any()
    summed = {instr.outs[0] for s, instr in enumerate(t.instrs)
              if instr.kind == "sum_inner" and runs[s, 0]}

    def agree():
        for var in t.outputs:
            if var in summed:
                assert_allclose(blocked.value(var), whole.value(var),
                                rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-3)
            else:
                assert_array_equal(blocked.value(var), whole.value(var), err_msg=repr(t))

    for r in (blocked, whole):
        for i, x in enumerate(inputs):
            r.set_input(i, x)
        assert r.run() == 0
    agree()
    for r in (blocked, whole):
        r.set_input(0, inputs[0][::-1])
        assert r.run(0, starts[0]) == 0
        r.set_input(3, inputs[3] * 0.5)
        for start, stop in zip(starts, starts[1:] + [len(t.instrs)]):
            assert r.run(start, stop) == 0
    agree()


def blocked_tape(n):
    """A tape of every form of blocked run (test_blocked_runs_of_a_tape)."""
    t = Tape(np.float64)
    x, half, one, wide = t.input((n,)), t.input((n // 2,)), t.input(()), t.input((n + 2,))
    s0 = t.emit("unary", (x,), (n,), op=UNARY["sin"])                 # 0 run [0, 6)
    t.emit("unary_d", (x,), (n,), op=UNARY["sin"])                    # 1 (paired with 0)
    s2 = t.emit("binary", (s0, half), (n,), op=BINARY["add"])         # 2 period n/2
    s3 = t.emit("scale", (s2, one), (n,))                             # 3
    s4 = t.emit("copy", (one,), (n,))                                 # 4 of one element
    total = t.emit("sum_inner", (s3,), (), k=n)                       # 5 a sum of n
    s6 = t.emit("binary", (s4, total), (n,), op=BINARY["add"])        # 6 reads it: [6, 11)
    s7 = t.emit("gather", (wide,), (n,), index=np.arange(1, n + 1))   # 7 a slice
    s8 = t.emit("binary", (s7, s6), (n,), op=BINARY["multiply"])      # 8
    s9 = t.emit("gather", (one,), (n,), index=np.zeros(n, np.int64))  # 9 a fill
    s10 = t.emit("scatter_add", (half,), (n,), index=np.arange(1, n // 2 + 1))  # 10 a pad
    s11 = t.emit("unary", (half,), (n // 2,), op=UNARY["exp"])        # 11 another size
    t.emit("binary", (s11, s11), (n // 2,), op=BINARY["multiply"])    # 12 too small
    t.emit("gather", (x,), (n,), index=np.arange(n)[::-1])            # 13 a gather
    s14 = t.emit("unary", (x,), (n,), op=UNARY["exp"])                # 14 run [14, 16)
    t.emit("select", (s14, half, one), (n,))                          # 15 period n/2
    t.emit("binary", (x, t.input((n // 4,))), (n,), op=BINARY["add"])  # 16 a second period
    t.outputs += [total, s8, s9, s10, t.vars[-1]]
    return t


def test_blocked_runs_of_a_tape():
    # runs: from an elementwise, fill or pad instruction of N >= BLOCKED_FROM elements on,
    # the next ones of N elements whose operands have N, one period of it or one element;
    # slices (nothing to do); sums of all N numbers, whose result the run does not read
    n = BLOCKED_FROM
    t = blocked_tape(n)
    replay = Replay(t, block=BLOCK)
    assert_array_equal(replay.runs,
                       [[6, n // 2, BLOCK, 1]] * 6 + [[11, n, BLOCK, 0]] * 5 + [[0] * 4] * 3
                       + [[16, n // 2, BLOCK, 0]] * 2 + [[0] * 4])
    # gather 7 not a slice: it runs alone, the run after it is [8, 11)
    assert_array_equal(_blocked_runs(t.instrs, set(), BLOCK)[:, 0],
                       [6] * 6 + [0] * 2 + [11] * 3 + [0] * 3 + [16] * 2 + [0])
    assert not _blocked_runs(t.instrs, set(), BLOCK + 1).any()
    assert not _blocked_runs(t.instrs, set(), 0).any()
    assert_array_equal(_blocked_runs(t.instrs, {7}, BLOCK, breaks=[3])[:, 0],
                       [3] * 3 + [6] * 3 + [11] * 5 + [0] * 3 + [16] * 2 + [0])
    assert list(replay.code[:2, COLUMNS["P3"]]) == [1, 0]    # the sine pair
    assert replay.code[7, COLUMNS["P2"]] == 3                # ALIASED
    assert replay.offset(t.instrs[7].outs[0]) == replay.offset(t.inputs[3]) + 1
    assert not replay.code[:, COLUMNS["LOCAL"]].any()        # (no keep: every Var a slot)


def test_a_slice_of_a_var_its_run_writes_ends_the_run():
    # z, a slice of y from P on, broadcast over y's N elements: a block of z lies ahead
    # of the block the run is at, so the slice is not in y's run
    n, period = BLOCKED_FROM, BLOCK
    t = Tape(np.float64)
    x = t.input((n,))
    y = t.emit("unary", (x,), (n,), op=UNARY["exp"])
    t.emit("binary", (y, x), (n,), op=BINARY["add"])
    z = t.emit("gather", (y,), (period,), index=np.arange(period, 2 * period))
    w = t.emit("binary", (y, z), (n,), op=BINARY["multiply"])
    t.outputs.append(w)
    blocked = Replay(t, keep=(), block=BLOCK)
    whole = Replay(t, keep=(), block=0)
    assert blocked.code[2, COLUMNS["P2"]] == 3               # (z is a slice)
    assert list(blocked.runs[:, 0]) == [2, 2, 0, 0]
    x_value = np.linspace(-1, 1, n)
    for r in (blocked, whole):
        r.set_input(0, x_value)
        assert r.run() == 0
    assert_array_equal(blocked.value(w), whole.value(w))
    y_value = np.exp(x_value)
    assert_allclose(blocked.value(w), y_value * np.tile(y_value[period:2 * period], n // period),
                    rtol=1e-15)


def test_vars_that_live_within_a_run_are_in_its_scratch():
    n = BLOCKED_FROM
    t = blocked_tape(n)
    rng = np.random.default_rng(3)
    kept = Replay(t, keep=(), block=BLOCK)
    whole = Replay(t, keep=(), block=0)
    local = kept.code[:, COLUMNS["LOCAL"]]
    # s0 (read by 2), the derivative nothing reads (1), s2 (read by 3), s3 (read by the sum
    # 5); s6, s7's slice is wide's; s14 in run [14, 16) is read by 15 alone, whose output
    # nothing reads
    assert list(local[:6]) == [1, 1, 3, 3, 0, 2]
    assert local[14] == 1 and local[15] == 3
    for var in (t.instrs[0].outs[0], t.instrs[2].outs[0]):
        with pytest.raises(ValueError, match="scratch"):
            kept.value(var)
    inputs = [rng.uniform(-1, 1, var.shape) for var in t.inputs]
    for r in (kept, whole):
        for i, x in enumerate(inputs):
            r.set_input(i, x)
        assert r.run() == 0
    for var in t.outputs:
        assert_allclose(kept.value(var), whole.value(var), rtol=1e-13, atol=1e-12)
    total = t.outputs[0]
    # a run holding Vars in its scratch or a sum runs whole: no start or stop inside
    with pytest.raises(ValueError, match="inside a blocked run"):
        kept.run(0, 3)
    with pytest.raises(ValueError, match="inside a blocked run"):
        kept.run(2)
    assert kept.run(0, 6) == 0 and kept.run(6) == 0
    assert_allclose(kept.value(total), whole.value(total), rtol=1e-13)
