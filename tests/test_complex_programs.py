"""Random programs through complex intermediates against JAX, on every engine.

Each program is a seeded straight line of steps on a pool of complex values that starts
from complex numbers built of x (n = 6) as users build them (x[i] + 1j * x[j], np.exp(1j *
x), x * (2 - 1j), np.fft.rfft(x)): NumPy's complex ufuncs (every rule of cyad._complex,
each operand mapped into the unit disk first, z / (1 + |z|), and from there away from the
function's branch cuts and poles), arithmetic with complex constants, integer, real and
complex powers, conjugation, products with complex matrices (matmul, dot, vdot with its
conjugation, einsum), sums, slices and reversal, concatenation, np.where by a condition on
the values, and numpy.fft's transforms with their norms and lengths. Its value is real: the
weighted sum of the real parts, imaginary parts, moduli and angles of every value no later
step reads, so that it holds the derivatives of the complex intermediates as real-linear
maps (JAX's convention).

Every program runs on every engine in float64 (gradient, Hessian, HVP) and, for a third of
them, in float32 (complex64 intermediates), against JAX's derivatives of the same program on
jax.numpy in float64; without JAX, central differences of cyad's gradient.
"""
import dataclasses
import itertools

import numpy as np
import pytest
from derivative_references import assert_matches, exact_in_float32, jax, loosest, references, seeded
from scenarios import ENGINES

import cyad

pytestmark = pytest.mark.xdist_group("test_complex_programs")

N = 6
PROGRAM_COUNT = 30
FLOAT32_EVERY = 3
TOLERANCE = {np.float64: dict(rtol=1e-10, atol=1e-11), np.float32: dict(rtol=2e-3, atol=2e-4)}

# unary rules and the map of the unit disk that keeps each away from its cuts and poles:
# "half" (|w| < 1/2: arcsin, arctanh, tan ...), "right" (2 + w: log, sqrt, arccosh), "any"
UNARY = {
    "exp": "any", "expm1": "half", "exp2": "any", "log": "right", "log2": "right",
    "log10": "right", "log1p": "any", "sqrt": "right", "square": "any", "reciprocal": "right",
    "sin": "any", "cos": "any", "tan": "half", "sinh": "any", "cosh": "any", "tanh": "half",
    "arcsinh": "half", "arccosh": "right", "arctanh": "half", "arcsin": "half",
    "arccos": "half", "arctan": "half", "negative": "any", "positive": "any", "conj": "any",
    "sign": "right", "abs": "right",
}
KINDS = ["unary"] * 6 + ["add", "subtract", "multiply", "divide", "power", "constant",
                         "matmul", "dot", "vdot", "einsum", "sum", "cumsum", "slice",
                         "concatenate", "where", "fft", "ifft", "rfft", "irfft", "fftshift",
                         "real_part"]


# the unary steps take the rules in turn, so that the programs hold every one
_NEXT_RULE = itertools.cycle(UNARY)


@dataclasses.dataclass
class Program:
    name: str
    point: np.ndarray
    steps: list   # (kind, inputs, options)
    weights: dict


def _disk(xp, z):
    return z / (1.0 + xp.abs(z))


def _into_domain(xp, z, domain):
    w = _disk(xp, z)
    return 0.5 * w if domain == "half" else 2.0 + w if domain == "right" else w


def _unary(xp, name):
    if name == "sign" and xp is not np:
        # (JAX gives sign a zero derivative, on complex numbers too: z / |z| is the reference)
        return lambda z: z / xp.abs(z)
    return {"conj": xp.conjugate, "abs": xp.abs}.get(name) or getattr(xp, name)


def _complex_constant(rng, shape):
    return exact_in_float32(rng.standard_normal(shape)) + 1j * exact_in_float32(
        rng.standard_normal(shape))


def _make(seed):
    rng = seeded(f"complex-program-{seed}")
    point = exact_in_float32(rng.uniform(-1.5, 1.5, N))
    steps = [("start", (), {"pairs": rng.integers(0, N, (N, 2)),
                            "how": int(rng.integers(0, 4))})]
    sizes = [N]
    for _ in range(int(rng.integers(4, 9))):
        kind = KINDS[rng.integers(len(KINDS))]
        i = int(rng.integers(len(sizes)))
        j = int(rng.integers(len(sizes)))
        n = sizes[i]
        options = {}
        inputs = (i,)
        if kind == "unary":
            options["name"] = next(_NEXT_RULE)
            size = n
        elif kind in ("add", "subtract", "multiply", "divide"):
            inputs = (i, j)
            options["common"] = min(n, sizes[j])
            size = options["common"]
        elif kind == "power":
            options["exponent"] = [2, 3, -1, 0.5, 1.7, "complex"][rng.integers(6)]
            options["constant"] = _complex_constant(rng, ())
            size = n
        elif kind == "constant":
            options["constant"] = _complex_constant(rng, (n,))
            options["op"] = ["+", "*", "/"][rng.integers(3)]
            size = n
        elif kind in ("matmul", "einsum"):
            m = int(rng.integers(2, 6))
            options["matrix"] = _complex_constant(rng, (m, n))
            size = m
        elif kind in ("dot", "vdot"):
            options["vector"] = _complex_constant(rng, (n,))
            options["swap"] = bool(rng.integers(2))
            size = 1
        elif kind == "sum":
            size = 1
        elif kind in ("cumsum", "fftshift"):
            size = n
        elif kind == "slice":
            options["slice"] = slice(int(rng.integers(0, max(1, n - 1))), None,
                                     [1, -1][rng.integers(2)])
            size = len(range(n)[options["slice"]])
        elif kind == "concatenate":
            inputs = (i, j)
            size = n + sizes[j]
        elif kind == "where":
            inputs = (i, j)
            options["common"] = size = min(n, sizes[j])
        elif kind in ("fft", "ifft"):
            options["norm"] = [None, "ortho", "forward", "backward"][rng.integers(4)]
            options["n"] = [None, n + 2, max(1, n - 1)][rng.integers(3)]
            size = n if options["n"] is None else options["n"]
        elif kind == "rfft":   # of the real part
            options["norm"] = [None, "ortho", "forward"][rng.integers(3)]
            size = n // 2 + 1
        elif kind == "irfft":
            options["norm"] = [None, "ortho", "forward"][rng.integers(3)]
            options["n"] = [None, 2 * n - 1, 2 * n][rng.integers(3)]
            size = 2 * (n - 1) if options["n"] is None else options["n"]
            if size < 1:
                continue
        else:   # real_part: a real value made complex again by a real factor
            size = n
        steps.append((kind, inputs, options))
        sizes.append(size)
    read = {i for _, inputs, _ in steps for i in inputs}
    weights = {i: exact_in_float32(rng.standard_normal((4, sizes[i])))
               for i in range(len(sizes)) if i not in read}
    return Program(f"complex{seed}", point, steps, weights)


def _step(xp, kind, operands, options):
    if kind == "unary":
        (z,) = operands
        return _unary(xp, options["name"])(_into_domain(xp, z, UNARY[options["name"]]))
    if kind in ("add", "subtract", "multiply", "divide"):
        k = options["common"]
        z, w = operands[0][:k], operands[1][:k]
        if kind == "divide":
            w = _into_domain(xp, w, "right")
        return getattr(xp, kind)(z, w)
    if kind == "power":
        (z,) = operands
        p = options["exponent"]
        base = _into_domain(xp, z, "right")
        if p == "complex":
            return base ** (options["constant"] * 0.5)
        return _disk(xp, z) ** p if isinstance(p, int) and p > 0 else base ** p
    if kind == "constant":
        (z,) = operands
        c = options["constant"]
        return z + c if options["op"] == "+" else z * c if options["op"] == "*" \
            else z / (2.0 + _disk(xp, c))
    if kind == "matmul":
        return options["matrix"] @ _disk(xp, operands[0])
    if kind == "einsum":
        return xp.einsum("ij,j->i", options["matrix"], _disk(xp, operands[0]))
    if kind in ("dot", "vdot"):
        z, v = _disk(xp, operands[0]), options["vector"]
        a, b = (v, z) if options["swap"] else (z, v)
        return xp.reshape(getattr(xp, kind)(a, b), (1,))
    if kind == "sum":
        return xp.reshape(xp.sum(_disk(xp, operands[0])), (1,))
    if kind == "cumsum":
        return xp.cumsum(_disk(xp, operands[0]))
    if kind == "slice":
        return operands[0][options["slice"]]
    if kind == "concatenate":
        return xp.concatenate(operands)
    if kind == "where":
        k = options["common"]
        z, w = operands[0][:k], operands[1][:k]
        # (the condition, on the values, away from its boundary at these points: 0.3)
        return xp.where(xp.real(z) > xp.imag(z) + 0.3, z, w * 0.5)
    if kind in ("fft", "ifft"):
        return getattr(xp.fft, kind)(_disk(xp, operands[0]), n=options["n"], norm=options["norm"])
    if kind == "rfft":
        return xp.fft.rfft(xp.real(_disk(xp, operands[0])), norm=options["norm"])
    if kind == "irfft":
        return xp.fft.irfft(_disk(xp, operands[0]), n=options["n"], norm=options["norm"]) \
            * (1.0 - 0.5j)
    if kind == "fftshift":
        return xp.fft.fftshift(operands[0])
    (z,) = operands   # real_part
    return xp.abs(z) * (0.5 + 0.25j) + xp.real(z)


def _start(xp, x, options):
    pairs, how = options["pairs"], options["how"]
    if how == 0:
        return x[pairs[:, 0]] + 1j * x[pairs[:, 1]]
    if how == 1:
        return xp.exp(1j * x) * x[::-1]
    if how == 2:
        return x * (2.0 - 1.0j) + 1j
    return xp.concatenate([xp.fft.fft(x[:3] + 0.5j * x[3:]), xp.sqrt(x[3:] + 2j)])


def run(program, xp, x):
    pool = [_start(xp, x, program.steps[0][2])]
    for kind, inputs, options in program.steps[1:]:
        pool.append(_step(xp, kind, [pool[i] for i in inputs], options))
    total = 0.0
    for i, w in program.weights.items():
        z = pool[i]
        total = total + xp.sum(w[0] * xp.real(z) + w[1] * xp.imag(z)
                               + w[2] * xp.abs(_into_domain(xp, z, "right"))
                               + w[3] * xp.angle(_into_domain(xp, z, "right")))
    return total


PROGRAMS = [_make(seed) for seed in range(PROGRAM_COUNT)]
_REFERENCES = {}


def reference(program):
    if not _REFERENCES:
        found = references([(lambda xp, x, p=p: [run(p, xp, x)], p.point) for p in PROGRAMS])
        _REFERENCES.update((p.name, d) for p, (d,) in zip(PROGRAMS, found, strict=True))
    return _REFERENCES[program.name]


CASES = [pytest.param(program, dtype, engine,
                      id=f"{program.name}-{np.dtype(dtype).name}-{engine}")
         for seed, program in enumerate(PROGRAMS)
         for dtype in ([np.float64, np.float32] if seed % FLOAT32_EVERY == 0 else [np.float64])
         for engine in ENGINES]


@pytest.mark.parametrize("program, dtype, engine", CASES)
def test_first_order(program, dtype, engine):
    exact = reference(program)
    x = program.point.astype(dtype)
    f = lambda t: run(program, np, t)  # noqa: E731
    value, gradient = cyad.value_and_gradient(f, x, engine=engine)
    assert gradient.dtype == dtype
    tolerance = loosest(exact.tolerance, TOLERANCE[dtype])
    assert_matches(value, exact.value, **tolerance, what="value")
    assert_matches(gradient, exact.first, **tolerance, what="gradient")


@pytest.mark.parametrize("program, dtype, engine", CASES)
def test_second_order(program, dtype, engine):
    exact = reference(program)
    x = program.point.astype(dtype)
    f = lambda t: run(program, np, t)  # noqa: E731
    direction = exact_in_float32(seeded(program.name + "-direction").standard_normal(N))
    tolerance = loosest(exact.tolerance, TOLERANCE[dtype])
    assert_matches(cyad.hessian(f, x, engine=engine), exact.second, **tolerance,
                   what="hessian")
    assert_matches(cyad.hvp(f, x, direction.astype(dtype), engine=engine),
                   exact.second @ direction, **tolerance, what="hvp")


def test_programs_reach_every_step_and_rule():
    # (the programs cover what the docstring says they draw from)
    kinds = {kind for p in PROGRAMS for kind, _, _ in p.steps}
    rules = {options["name"] for p in PROGRAMS for kind, _, options in p.steps
             if kind == "unary"}
    assert set(KINDS) <= kinds
    assert rules == set(UNARY), set(UNARY) - rules


@pytest.mark.skipif(jax is None, reason="the programs' complex numbers checked in JAX")
def test_programs_compute_what_numpy_computes():
    # the same program on NumPy's own complex arrays (no engine): the program's meaning
    for program in PROGRAMS[:10]:
        assert_matches(run(program, np, program.point), reference(program).value,
                       rtol=1e-12, atol=1e-12, what=program.name)
