"""Random programs of NumPy operations against JAX, out of place and with aliasing.

Each program is a seeded straight line of steps on a pool of values that starts from
x (n = 5): elementwise rules from cyad's tables (their operands mapped affinely into
the rule's domain, away from its jumps), reductions, a product with a constant matrix,
slices, reversal, gathers, concatenation, shifts, where, dot, and the shape functions
that place elements (pad in its modes, roll, repeat, tile, take). The program's value
is s (1 + s / 10), where s is the weighted sum of every value no later step uses.

Every program runs in three variants through cyad:

* out-of-place: every step makes a fresh array;
* in-place: every elementwise rule writes its result into one of its own operands (with
  out= or an in-place operator): into the value itself, mapped in place, where it is
  dead afterwards and shares no memory with a live value, else into the fresh array of
  its mapped copy; a square matrix product and a shift write into their dead input;
* two-argument: the in-place variant as f(y, x), writing its value into a 0-d y and
  finishing there in place.

The reference is the same program on jax.numpy (functional): gradient, Hessian, HVP and
the nested Jacobian of the gradient, in float64 and, for a subset, float32; without JAX,
central differences of cyad's exact gradient (checked against JAX where both run).
The aliased variants are also compared with the out-of-place one, to a tight tolerance.
Every program runs on every engine: the tape's answers are also held to the dual
engine's (the same variant, dtype and chunk), to that tight tolerance.

Size: 48 programs x 3 variants x (the dual engine in float64 with the default chunk and with
chunk 2, the tape in float64; float32 with chunk 2 on both for 12 of them) x 2 orders
(value and gradient; Hessian, HVP and Jacobian of the gradient) = 1 080 tests, plus 8
checks of the fallback against JAX.
"""
import dataclasses

import numpy as np
import pytest
from derivative_references import (
    assert_matches,
    by_differences,
    exact_in_float32,
    function_of,
    jax,
    loosest,
    references,
    seeded,
)
from scenarios import ENGINES
from rule_domains import (
    BINARY_DOMAINS,
    BINARY_RULES,
    IN_PLACE_OPERATORS,
    ONLY_IN_B,
    UNARY_DOMAINS,
    UNARY_RULES,
    interval,
)

import cyad
from cyad._rules.table import APART

# one worker of a parallel run runs them all (pytest -n with --dist loadgroup), so that
# their references, computed once per process, are computed once
pytestmark = pytest.mark.xdist_group("test_random_programs")

N = 5
FLOAT32_EVERY = 4     # every 4th program also in float32
MAX_LENGTH = 8        # of a concatenation
# the rules a program draws from: every ufunc of the rule table
RULES = UNARY_RULES + BINARY_RULES

SAME_PROGRAM_TOLERANCE = {np.float64: dict(rtol=1e-12, atol=1e-13),
                          np.float32: dict(rtol=1e-4, atol=1e-5)}
REFERENCE_TOLERANCE = {np.float64: dict(rtol=1e-10, atol=1e-11),
                       np.float32: dict(rtol=1e-3, atol=1e-4)}


# -- programs ----------------------------------------------------------------------------

@dataclasses.dataclass
class Step:
    """One operation: kind, the pool entries it reads, its constants (float64, exact in
    float32), and for the in-place variant the operand it writes into and the entries it
    may overwrite."""
    kind: str
    inputs: tuple
    rule: object = None
    constants: dict = dataclasses.field(default_factory=dict)
    options: dict = dataclasses.field(default_factory=dict)
    into: int = None                   # operand position the result is written into
    overwrite: frozenset = frozenset()  # entries dead after this step, sharing no live memory


@dataclasses.dataclass
class Program:
    name: str
    point: np.ndarray
    steps: list
    weights: dict            # entry -> weights of an entry no step reads


def _map(xp, pool, i, scale, shift, in_place, dtype):
    """scale * pool[i] + shift, in place on pool[i] where allowed."""
    scale, shift = np.asarray(scale, dtype), np.asarray(shift, dtype)
    if in_place:
        value = pool[i]
        value *= scale
        value += shift
        return value
    return scale * pool[i] + shift


def _rule_operands(xp, step, pool, in_place, dtype):
    """The rule's operands: each input mapped into its domain, or a constant operand."""
    c = step.constants
    operands = []
    for slot, i in enumerate(step.inputs):
        if i is None:   # a constant operand
            operands.append(np.asarray(c[f"constant{slot}"], dtype))
        else:
            operands.append(_map(xp, pool, i, c[f"scale{slot}"], c[f"shift{slot}"],
                                 in_place and i in step.overwrite, dtype))
    if "signs" in c:
        # the second operand of maximum and minimum: a + signs * (mapped b), never a tie
        away = operands[1]
        if in_place:
            away *= np.asarray(c["signs"], dtype)
            away += operands[0]
            operands[1] = away
        else:
            operands[1] = operands[0] + np.asarray(c["signs"], dtype) * away
    return operands


def _rule(xp, step, pool, in_place, dtype):
    operands = _rule_operands(xp, step, pool, in_place, dtype)
    f = function_of(xp, step.rule)
    if not in_place:
        return f(*operands)
    target = operands[step.into]
    if step.options.get("operator"):
        return IN_PLACE_OPERATORS[step.rule](*operands)
    f(*operands, out=target)
    return target


def _matmul(xp, step, pool, in_place, dtype):
    (i,) = step.inputs
    matrix = np.asarray(step.constants["matrix"], dtype)
    if in_place and i in step.overwrite:
        return np.matmul(matrix, pool[i], out=pool[i])
    return matrix @ pool[i]


def _shift(xp, step, pool, in_place, dtype):
    # v[1:] = v[:-1]: an assignment from an overlapping view
    (i,) = step.inputs
    v = pool[i]
    if in_place and i in step.overwrite:
        v[1:] = v[:-1]
        return v
    return xp.concatenate([v[:1], v[:-1]])


def _where(xp, step, pool, in_place, dtype):
    i, j = step.inputs
    if "mask" in step.constants:
        return xp.where(step.constants["mask"], pool[i], pool[j])
    return xp.where(pool[i] > pool[j], pool[i], pool[j])


def _gather(xp, step, pool, in_place, dtype):
    (i,) = step.inputs
    return pool[i][step.constants["index"]]


def _slice(xp, step, pool, in_place, dtype):
    (i,) = step.inputs
    return pool[i][slice(*step.options["slice"])]


def _place(xp, step, pool, in_place, dtype):
    # the shape functions that place elements: padded, rolled, repeated, tiled, taken
    (i,) = step.inputs
    v = pool[i]
    how, k = step.options["how"], step.options["k"]
    if how in ("constant", "edge", "reflect", "symmetric", "wrap"):
        return xp.pad(v, (k, 1), mode=how)
    if how == "roll":
        return xp.roll(v, k)
    if how == "repeat":
        return xp.repeat(v, k)
    if how == "tile":
        return xp.tile(v, k)
    return xp.take(v, step.constants["index"], mode="wrap")


STEPS = {
    "rule": _rule,
    "matmul": _matmul,
    "shift": _shift,
    "where": _where,
    "gather": _gather,
    "slice": _slice,
    "sum": lambda xp, step, pool, in_place, dtype: xp.sum(pool[step.inputs[0]]),
    "mean": lambda xp, step, pool, in_place, dtype: xp.mean(pool[step.inputs[0]]),
    "max": lambda xp, step, pool, in_place, dtype: xp.max(pool[step.inputs[0]]),
    "min": lambda xp, step, pool, in_place, dtype: xp.min(pool[step.inputs[0]]),
    "cumsum": lambda xp, step, pool, in_place, dtype: xp.cumsum(pool[step.inputs[0]]),
    "dot": lambda xp, step, pool, in_place, dtype: xp.dot(pool[step.inputs[0]],
                                                          pool[step.inputs[1]]),
    "concatenate": lambda xp, step, pool, in_place, dtype: xp.concatenate(
        [pool[i] for i in step.inputs]),
    "place": _place,
}


def run(program, xp, x, in_place=False):
    """The pool of values of `program` at x."""
    dtype = x.dtype
    pool = [x]
    for step in program.steps:
        pool.append(STEPS[step.kind](xp, step, pool, in_place, dtype))
    return pool


def weighted_sum(xp, program, pool, dtype):
    return sum(xp.sum(np.asarray(w, dtype) * pool[i]) for i, w in program.weights.items())


def finished(s):
    return s * (1 + 0.1 * s)


def out_of_place(program):
    def f(xp, x):
        return finished(weighted_sum(xp, program, run(program, xp, x), x.dtype))
    return f


def in_place(program):
    def f(x):
        s = weighted_sum(np, program, run(program, np, x, in_place=True), x.dtype)
        np.multiply(s, 1 + 0.1 * s, out=s)
        return s
    return f


def two_argument(program):
    def f(y, x):
        y[...] = weighted_sum(np, program, run(program, np, x, in_place=True), x.dtype)
        np.multiply(y, 1 + 0.1 * y, out=y)
    return f


# -- generation --------------------------------------------------------------------------

def _affine_into(values, target, rng):
    """scale and shift (exact in float32) that map `values` into the open interval `target`.

    Values spread over an interval go to its middle; a single value goes to a random point
    of the interval's middle half, not to its middle: where that is 0, the shifted value
    would be only the rounding residual of the shift, and a rule that is ill-conditioned at
    0 (hypot at the origin) would turn rounding differences into different derivatives.
    """
    low, high = target
    spread = np.ptp(values) if np.ndim(values) else 0.0
    scale = min(1.0, 0.8 * (high - low) / spread) if spread > 0 else 1.0
    scale = exact_in_float32(scale * rng.choice([-1.0, 1.0]))
    center = (np.max(values) + np.min(values)) / 2
    middle = (low + high) / 2
    if spread == 0:
        middle += rng.uniform(-0.25, 0.25) * (high - low)
    return scale, exact_in_float32(middle - scale * center)


class Builder:
    """Grows a random program step by step, its values at the point known at every step."""

    def __init__(self, name):
        self.rng = seeded(name)
        self.name = name
        self.point = exact_in_float32(self.rng.uniform(-1.5, 1.5, N))
        self.steps = []
        self.values = [self.point]

    def program(self):
        return Program(self.name, self.point, self.steps, {})

    def add(self, step):
        self.steps.append(step)
        self.values = run(self.program(), np, self.point)

    def pick(self, vector=False, shape=None):
        candidates = [i for i, v in enumerate(self.values)
                      if (not vector or np.ndim(v) == 1) and (shape is None or
                                                              np.shape(v) in (shape, ()))]
        return candidates[self.rng.integers(len(candidates))]

    def rule_step(self):
        rng = self.rng
        rule = RULES[rng.integers(len(RULES))]
        if rule in UNARY_RULES:
            i = self.pick()
            scale, shift = _affine_into(self.values[i], interval(UNARY_DOMAINS[rule], rng), rng)
            return Step("rule", (i,), rule, {"scale0": scale, "shift0": shift}, into=0)
        domains = BINARY_DOMAINS[rule]
        i = self.pick()
        j = self.pick(shape=np.shape(self.values[i]))
        inputs, constants = [i, j], {}
        if domains[1] == APART:
            # b of a's shape, mapped into (0.3, 0.6) and added to a with random signs
            if np.shape(self.values[j]) != np.shape(self.values[i]):
                return None
            constants["signs"] = rng.choice([-1.0, 1.0], np.shape(self.values[i]))
            domains = (domains[0], (0.3, 0.6))
        elif rule in ONLY_IN_B or rng.uniform() < 0.25:
            # a constant operand, shaped like the other one, in place of a or b (of a, where
            # the rule is differentiable in b only)
            constant = 0 if rule in ONLY_IN_B else rng.integers(2)
            constants[f"constant{constant}"] = exact_in_float32(rng.uniform(
                *interval(domains[constant], rng), np.shape(self.values[inputs[1 - constant]])))
            inputs[constant] = None
        for slot, i in enumerate(inputs):
            if i is not None:
                constants[f"scale{slot}"], constants[f"shift{slot}"] = _affine_into(
                    self.values[i], interval(domains[slot], rng), rng)
        shape = np.broadcast_shapes(*(np.shape(self.values[i]) if i is not None
                                      else np.shape(constants[f"constant{slot}"])
                                      for slot, i in enumerate(inputs)))
        # written into an operand of the result's shape that is not a constant
        slots = [slot for slot, i in enumerate(inputs)
                 if i is not None and np.shape(self.values[i]) == shape]
        into = slots[rng.integers(len(slots))]
        operator = into == 0 and rule in IN_PLACE_OPERATORS and rng.uniform() < 0.5
        return Step("rule", tuple(inputs), rule, constants, {"operator": operator}, into=into)

    def other_step(self):
        rng = self.rng
        kind = ["sum", "mean", "max", "min", "cumsum", "dot", "matmul", "slice", "gather",
                "concatenate", "shift", "where", "place"][rng.integers(13)]
        i = self.pick(vector=True)
        v = self.values[i]
        if kind in ("max", "min"):
            top = np.sort(v)[::-1] if kind == "max" else np.sort(v)
            if len(v) > 1 and abs(top[0] - top[1]) < 0.05:
                return None   # a tie: the derivative conventions of cyad and JAX differ
        if kind == "dot":
            return Step(kind, (i, self.pick(vector=True, shape=v.shape)))
        if kind == "matmul":
            rows = len(v) if rng.uniform() < 0.5 else int(rng.integers(2, 7))
            matrix = exact_in_float32(rng.standard_normal((rows, len(v))) / np.sqrt(len(v)))
            return Step(kind, (i,), constants={"matrix": matrix})
        if kind == "slice":
            if len(v) < 3:
                return None
            start = int(rng.integers(0, 2))
            return Step(kind, (i,), options={"slice": (start, None, int(rng.choice([1, 2])))
                                             if rng.uniform() < 0.5 else (None, None, -1)})
        if kind == "gather":
            return Step(kind, (i,), constants={"index": rng.integers(0, len(v),
                                                                     rng.integers(1, 7))})
        if kind == "concatenate":
            j = self.pick(vector=True)
            return Step(kind, (i, j)) if len(v) + len(self.values[j]) <= MAX_LENGTH else None
        if kind == "shift":
            return Step(kind, (i,)) if len(v) >= 2 else None
        if kind == "place":
            how = ["constant", "edge", "reflect", "symmetric", "wrap", "roll", "repeat", "tile",
                   "take"][rng.integers(9)]
            k = int(rng.integers(1, 3))
            index = rng.integers(-2 * len(v), 2 * len(v), rng.integers(1, 7))
            length = {"roll": len(v), "repeat": k * len(v), "tile": k * len(v),
                      "take": len(index)}.get(how, len(v) + k + 1)
            if length > MAX_LENGTH or (how == "reflect" and len(v) < 2):
                return None
            return Step(kind, (i,), constants={"index": index}, options={"how": how, "k": k})
        if kind == "where":
            j = self.pick(vector=True, shape=v.shape)
            if np.shape(self.values[j]) != v.shape:
                return None
            if np.min(np.abs(v - self.values[j])) > 0.05:
                return Step(kind, (i, j))    # the mask from comparing the values
            return Step(kind, (i, j), constants={"mask": rng.uniform(size=v.shape) < 0.5})
        return Step(kind, (i,))

    def grow(self, steps):
        while len(self.steps) < steps:
            step = self.rule_step() if self.rng.uniform() < 0.55 else self.other_step()
            if step is not None:
                self.add(step)


def _memory(program):
    """For each entry of the in-place variant, the entry whose memory it is: its own, or that
    of the input it views (a slice) or was written into."""
    memory = [0]
    for step in program.steps:
        if step.kind == "slice":
            memory.append(memory[step.inputs[0]])
        elif step.kind == "rule" and step.inputs[step.into] in step.overwrite:
            memory.append(memory[step.inputs[step.into]])
        elif step.kind in ("matmul", "shift") and step.inputs[0] in step.overwrite:
            memory.append(memory[step.inputs[0]])
        else:
            memory.append(len(memory))
    return memory


def _can_write_into_an_input(step):
    return (step.kind in ("rule", "shift")
            or step.kind == "matmul" and len(set(step.constants["matrix"].shape)) == 1)


def _plan_overwrites(program):
    """Which entries each step may overwrite in the in-place variant: read for the last time
    there (the weighted sum reads the entries no step reads), once, and sharing no memory
    with x or with an entry read later."""
    last_read = {i: len(program.steps) for i in program.weights}
    for t, step in enumerate(program.steps):
        last_read.update((i, t) for i in step.inputs if i is not None)
    for t, step in enumerate(program.steps):
        if not _can_write_into_an_input(step):
            continue
        memory = _memory(program)
        inputs = [i for i in step.inputs if i is not None]
        step.overwrite = frozenset(
            i for i in inputs if inputs.count(i) == 1 and last_read[i] == t and memory[i] != 0
            and not any(memory[j] == memory[i] for j, read in last_read.items()
                        if j != i and read > t))


def build(name):
    builder = Builder(name)
    builder.grow(int(builder.rng.integers(6, 12)))
    program = builder.program()
    read = {i for step in program.steps for i in step.inputs}
    program.weights = {i: exact_in_float32(builder.rng.standard_normal(np.shape(v)))
                       for i, v in enumerate(builder.values) if i not in read}
    _plan_overwrites(program)
    return program


PROGRAMS = [build(f"program-{seed}") for seed in range(48)]


# -- derivatives -------------------------------------------------------------------------

_REFERENCES = {}


def reference(program):
    """The program's Derivatives (of its value), computed with those of all programs."""
    if not _REFERENCES:
        found = references([(lambda xp, x, p=p: [out_of_place(p)(xp, x)], p.point)
                            for p in PROGRAMS])
        _REFERENCES.update((p.name, derivatives)
                           for p, (derivatives,) in zip(PROGRAMS, found, strict=False))
    return _REFERENCES[program.name]


def cyad_function(program, variant):
    """The program as cyad differentiates it in a variant, and the y= it takes at t."""
    if variant == "out-of-place":
        return (lambda x: out_of_place(program)(np, x)), lambda t: {}
    if variant == "in-place":
        return in_place(program), lambda t: {}
    # a 0-d y; inside the outer differentiation, a dual of it
    return two_argument(program), lambda t: {"y": np.zeros_like(t, shape=())}


def first_order(program, variant, x, chunk, engine):
    f, y_like = cyad_function(program, variant)
    value, gradient = cyad.value_and_gradient(f, x, chunk=chunk, engine=engine, **y_like(x))
    return {"value": value, "gradient": gradient}


def second_order(program, variant, x, chunk, direction, engine):
    f, y_like = cyad_function(program, variant)
    return {"hessian": cyad.hessian(f, x, chunk=chunk, engine=engine, **y_like(x)),
            "hvp": cyad.hvp(f, x, direction, chunk=chunk, engine=engine, **y_like(x)),
            "jacobian of gradient": cyad.jacobian(
                lambda t: cyad.gradient(f, t, chunk=chunk, engine=engine, **y_like(t)), x,
                chunk=chunk, engine=engine)}


def assert_derivatives(got, same, expected, variant, dtype, reference_tolerance):
    """`got` against `same` (the out-of-place variant's, or the dual engine's) to a tight
    tolerance, and against the reference."""
    tolerance = loosest(reference_tolerance, REFERENCE_TOLERANCE[dtype])
    for name, value in got.items():
        # (the value of a one-argument f comes as a float)
        assert name == "value" or value.dtype == dtype, name
        for against, what in same:
            assert_matches(value, against[name], **SAME_PROGRAM_TOLERANCE[dtype],
                           what=f"{name}: {variant} against {what}")
        assert_matches(value, expected[name], **tolerance, what=f"{name}: against the reference")


VARIANTS = ["out-of-place", "in-place", "two-argument"]
CASES = [pytest.param(program, variant, dtype, chunk, engine,
                      id=f"{program.name}-{variant}-{np.dtype(dtype).name}-chunk{chunk}-{engine}")
         for seed, program in enumerate(PROGRAMS) for variant in VARIANTS
         for dtype, chunk, engines in [(np.float64, None, ENGINES), (np.float64, 2, ["dual"])]
         + ([(np.float32, 2, ENGINES)] if seed % FLOAT32_EVERY == 0 else [])
         for engine in engines]


def _same_as(compute, program, variant, engine):
    """The answers `got` is held to: the out-of-place variant's on this engine, and the dual
    engine's (of this variant) for another engine."""
    same = [] if variant == "out-of-place" else [(compute("out-of-place", engine),
                                                  "out-of-place")]
    if engine != "dual":
        same.append((compute(variant, "dual"), "the dual engine"))
    return same


@pytest.mark.parametrize("program, variant, dtype, chunk, engine", CASES)
def test_first_order(program, variant, dtype, chunk, engine):
    exact = reference(program)
    x = program.point.astype(dtype)

    def compute(variant, engine):
        return first_order(program, variant, x, chunk, engine)

    assert_derivatives(compute(variant, engine), _same_as(compute, program, variant, engine),
                       {"value": exact.value, "gradient": exact.first}, variant, dtype,
                       exact.tolerance)


@pytest.mark.parametrize("program, variant, dtype, chunk, engine", CASES)
def test_second_order(program, variant, dtype, chunk, engine):
    exact = reference(program)
    x = program.point.astype(dtype)
    direction = exact_in_float32(seeded(program.name + "-direction").standard_normal(N))

    def compute(variant, engine):
        return second_order(program, variant, x, chunk, direction.astype(dtype), engine)

    assert_derivatives(compute(variant, engine), _same_as(compute, program, variant, engine),
                       {"hessian": exact.second, "hvp": exact.second @ direction,
                        "jacobian of gradient": exact.second}, variant, dtype, exact.tolerance)


@pytest.mark.skipif(jax is None, reason="JAX is the reference the fallback is checked against")
@pytest.mark.parametrize("program", PROGRAMS[:8], ids=lambda program: program.name)
def test_difference_fallback_agrees_with_jax(program):
    # without JAX the test above takes central differences: here they are checked once
    (approximate,) = by_differences(lambda xp, x: [out_of_place(program)(xp, x)], program.point)
    exact = reference(program)
    for name in ("value", "first", "second"):
        assert_matches(getattr(approximate, name), getattr(exact, name), **approximate.tolerance,
                       what=name)
