"""Operations that write their result into one of their own inputs, at first and second order.

A second-order rule reads more of its operands than a first-order one (their first-order
lanes for the second-derivative terms too), so a result written over an operand before
all of it is read corrupts the Hessian while the gradient stays right. Every case below
is a program written with such aliasing; each is differentiated by cyad and compared

  (a) with the same program written without aliasing (fresh arrays), run through cyad,
      to a tight tolerance, and
  (b) with an independent reference (`derivative_references`: JAX, else central
      differences).

First order: `value_and_jacobian` of the vector program and `gradient` of a scalar one
(the weighted sum of the vector program, or a two-argument program writing a 0-d y).
Second order: `hessian`, `hvp` and the nested `jacobian` of `gradient` of the scalar one.

The cases are generated from cyad's own tables, so a rule or NumPy function added
later is covered (or, lacking a classification, fails a test here):

* every elementwise rule -- every ufunc of the rule table (cyad._rules.table), on its
  rule's test domain -- in every aliasing pattern of PATTERNS that applies to it, at every
  position its operands can alias the output (unary: x; binary: a, b, both, and a or b
  beside a constant operand). Per unary rule: 5 programs; per binary rule: 22, plus 11
  for one with an in-place operator (+= -= *= /= **=).
* every NumPy function of `HANDLED_FUNCTIONS` that can alias: `out=` an input, a view
  written through (reshape, flip, ...), a view read while its base is written
  (broadcast_to, diag); np.copyto and overlapping assignment.

Size: per unary rule 5 programs, per binary rule 22 (plus 11 for one with an in-place
operator), and one or a few programs per NumPy function that can alias; each x 3 variants
(float64 with the default chunk, float64 with chunk 2 over n = 5, which leaves a remainder
of 1 at both levels of a Hessian, float32 with chunk 2) x 2 orders (the nested Jacobian of
the gradient in the float64 default-chunk and the float32 variants: nesting derives the
program whatever the chunk), plus the checks of the central-difference fallback against JAX
and of what the cases cover.
"""
import dataclasses
import inspect
import types
from typing import NamedTuple

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
    replaced,
    seeded,
)
from rule_domains import (
    BINARY_DOMAINS,
    BINARY_RULES,
    IN_PLACE_OPERATORS,
    ONLY_IN_B,
    QUOTIENTS,
    UNARY_DOMAINS,
    UNARY_RULES,
    binary_points,
    points,
    same_operand_points,
    spread,
)

import cyad
from cyad._dual.functions import HANDLED_FUNCTIONS
from cyad._primitives import TABLE
from cyad._rules.table import ANY, ufunc_name

N = 5

# (dtype, chunk): chunk 2 over n = 5 leaves a remainder of 1, at both levels of a Hessian
VARIANTS = [pytest.param(np.float64, None, id="float64"),
            pytest.param(np.float64, 2, id="float64-chunk2"),
            pytest.param(np.float32, 2, id="float32-chunk2")]

# cyad on the aliased program against cyad on the same program without aliasing: the same
# operations on the same numbers (float32: up to a different rounding of the same sums)
SAME_PROGRAM_TOLERANCE = {np.float64: dict(rtol=1e-13, atol=1e-14),
                          np.float32: dict(rtol=1e-5, atol=1e-6)}
# cyad against the float64 reference, beyond the reference's own accuracy
REFERENCE_TOLERANCE = {np.float64: dict(rtol=1e-10, atol=1e-11),
                       np.float32: dict(rtol=1e-4, atol=1e-5)}


# -- the operands -------------------------------------------------------------------------

def operands_from(xp, k, x, position, scalar=False):
    """y, the array an operation writes, and z, the other operand of a binary rule.

    Fresh arrays of the values k.point (x's own) and k.other at the point, whose first
    and second derivatives couple the elements of x; z is the constant k.other for a
    position "...-const" (and unused by a unary rule). scalar: 0-d y and z.
    """
    d = x - k.point
    reversed_d = d[::-1]
    y = x + 0.3 * d * reversed_d
    constant = position == "x" or position.endswith("const")
    z = k.other if constant else k.other + 0.5 * reversed_d - 0.2 * d * d
    if scalar:
        y = y[0] + xp.sum(0.1 * d + 0.2 * d * reversed_d)
        z = z[0] if constant else z[0] + xp.sum(0.2 * d)
    return y, z


# -- aliasing patterns of the elementwise rules -------------------------------------------------
# Each pattern is a body written with aliasing, aliased(f, y, z, position) -> result (f the
# ufunc; y the array written, z the other operand), and its twin without aliasing,
# twin(xp, f, y, z, position) (f the ufunc's namesake in xp).

def operands(position, ya, yb, za, zb):
    """The operands of the rule: y's view as the one operand (x), as a or b beside z, or both."""
    if position == "x":
        return (ya,)
    if position in ("a", "a-const"):
        return ya, zb
    if position in ("b", "b-const"):
        return za, yb
    return ya, yb


def _out_same(f, y, z, position):
    f(*operands(position, y, y, z, z), out=y)
    return y


def _out_slice(f, y, z, position):
    f(*operands(position, y[1:4], y[1:4], z[1:4], z[1:4]), out=y[1:4])
    return y


def _out_slice_twin(xp, f, y, z, position):
    return replaced(xp, y, slice(1, 4), f(*operands(position, y[1:4], y[1:4], z[1:4], z[1:4])))


def _out_reversed(f, y, z, position):
    # partial overlap in another layout: y[i] is written from the operands at n-1-i
    f(*operands(position, y, y, z, z), out=y[::-1])
    return y


def _shifted_operands(position, y, z):
    # y[:-1] beside z[1:]; both: y[:-1] beside y[1:] (the output itself)
    return operands(position, y[:-1], y[1:] if position == "both" else y[:-1], z[1:], z[1:])


def _out_shifted(f, y, z, position):
    # y[i] is written from y at i-1 (a plain loop would read what it has just written)
    f(*_shifted_operands(position, y, z), out=y[1:])
    return y


def _out_shifted_twin(xp, f, y, z, position):
    return xp.concatenate([y[:1], f(*_shifted_operands(position, y, z))])


def _broadcast_operands(position, y, z):
    # the aliased operand is y[:1], broadcast over the output y; both: op(y, y[:1])
    return operands(position, y if position == "both" else y[:1], y[:1], z, z)


def _out_broadcast(f, y, z, position):
    f(*_broadcast_operands(position, y, z), out=y)
    return y


def _in_place(f, y, z, position):
    IN_PLACE_OPERATORS[f](*operands(position, y, y, z, z))
    return y


def _in_place_broadcast(f, y, z, position):
    IN_PLACE_OPERATORS[f](y, y[0])     # y op= y[0]
    return y


def _at(index, other_index):
    """In place on y[index] (a view, or a fancy-indexed copy written back), from z[other_index]."""
    def aliased(f, y, z, position):
        # what `y[index] op= z[other_index]` does
        y[index] = IN_PLACE_OPERATORS[f](*operands(position, y[index], y[other_index],
                                                   z[other_index], z[other_index]))
        return y

    def twin(xp, f, y, z, position):
        return replaced(xp, y, index, f(*operands(position, y[index], y[other_index],
                                                  z[other_index], z[other_index])))
    return aliased, twin


@dataclasses.dataclass(frozen=True)
class Pattern:
    name: str
    aliased: object
    twin: object
    unary: bool            # applies to unary rules (position x)
    binary_positions: tuple
    in_place_operator: bool = False   # only for rules with an in-place operator

    def positions(self, rule):
        if rule in UNARY_RULES:
            return ("x",) if self.unary else ()
        if self.in_place_operator and rule not in IN_PLACE_OPERATORS:
            return ()
        if rule in ONLY_IN_B:    # a constant a
            return tuple(position for position in self.binary_positions if position == "b-const")
        if rule in QUOTIENTS:    # not y op y (rule_domains.QUOTIENTS)
            return tuple(position for position in self.binary_positions if position != "both")
        return self.binary_positions


ALL = ("a", "a-const", "b", "b-const", "both")
DUAL = ("a", "b", "both")
_same_twin = lambda xp, f, y, z, position: f(*operands(position, y, y, z, z))  # noqa: E731

PATTERNS = [
    Pattern("out-same", _out_same, _same_twin, True, ALL),
    # f(y, x) writing y through cyad's y= (a 0-d y at second order)
    Pattern("two-argument", _out_same, _same_twin, True, ALL),
    Pattern("out-slice", _out_slice, _out_slice_twin, True, DUAL),
    Pattern("out-reversed", _out_reversed,
            lambda xp, f, y, z, position: _same_twin(xp, f, y, z, position)[::-1], True, DUAL),
    Pattern("out-shifted", _out_shifted, _out_shifted_twin, True, DUAL),
    Pattern("out-broadcast", _out_broadcast,
            lambda xp, f, y, z, position: f(*_broadcast_operands(position, y, z)), False, DUAL),
    Pattern("in-place", _in_place, _same_twin, False, ("a", "a-const", "both"), True),
    Pattern("in-place-broadcast", _in_place_broadcast,
            lambda xp, f, y, z, position: f(y, y[0]), False, ("both",), True),
    Pattern("in-place-slice", *_at(slice(1, 4), slice(1, 4)), False, ("a", "both"), True),
    Pattern("in-place-element", *_at(2, 2), False, ("a", "a-const", "both"), True),
    Pattern("in-place-fancy", *_at(np.array([0, 2]), np.array([1, 2])), False, ("a", "both"), True),
]


# -- cases --------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, eq=False)
class Case:
    """A program written with aliasing and its twin without, on a 1-d x near `point`.

    One-argument: vector(k, x) -> array; the scalar program is sum(k.weights * vector).
    Two-argument: vector(k, y, x) and scalar(k, y, x) write y (of the vector's shape, 0-d).
    twin_vector(xp, k, x) and twin_scalar(xp, k, x) compute the same without aliasing.
    k holds `constants` in the dtype of the run. A case of an elementwise rule names its
    rule, pattern and position.
    """
    name: str
    point: np.ndarray
    constants: dict
    vector: object
    twin_vector: object
    scalar: object = None
    twin_scalar: object = None
    rule: object = None
    pattern: object = None
    position: str = None

    @property
    def two_argument(self):
        return self.scalar is not None

    def constants_in(self, dtype):
        return types.SimpleNamespace(**{name: value.astype(dtype) if value.dtype.kind == "f"
                                        else value for name, value in self.constants.items()})


def shared_constants(point, other):
    """The point and the constants every variant shares (exact in float32)."""
    point = exact_in_float32(point)
    return point, {"point": point, "other": exact_in_float32(other)}


def one_argument_case(name, point, constants, vector, twin, **fields):
    """A case whose scalar program is the weighted sum of its vector program."""
    shape = np.shape(twin(np, types.SimpleNamespace(**constants), point))
    constants = dict(constants, weights=exact_in_float32(seeded(name).standard_normal(shape)))
    return Case(name, point, constants, vector, twin, **fields)


def rule_points(rule, position, rng):
    """The point (the values of y) and the values of the other operand."""
    if rule in UNARY_RULES:
        return points(UNARY_DOMAINS[rule], rng, N), np.zeros(N)
    a_domain, b_domain = BINARY_DOMAINS[rule]
    if position == "both":
        return same_operand_points(a_domain, b_domain, rng, N), np.zeros(N)
    a, b = binary_points(a_domain, b_domain, rng, N)
    return (a, b) if position.startswith("a") else (b, a)


def rule_twin(xp, rule, pattern, position, operands):
    return pattern.twin(xp, function_of(xp, rule), *operands, position)


def rule_case(rule, pattern, position):
    name = f"{rule.__name__}-{pattern.name}" + ("" if position == "x" else f"-{position}")
    # the same points in every pattern of a rule and position, whose references are
    # computed from the operands once
    point, constants = shared_constants(
        *rule_points(rule, position, seeded(f"{rule.__name__}-{position}")))

    def aliased(k, x):
        return pattern.aliased(rule, *operands_from(np, k, x, position), position)

    def twin(xp, k, x, scalar=False):
        return rule_twin(xp, rule, pattern, position, operands_from(xp, k, x, position, scalar))

    if pattern.name != "two-argument":
        return one_argument_case(name, point, constants, aliased, twin,
                                 rule=rule, pattern=pattern, position=position)

    def writer(scalar):
        def write(k, y, x):
            start, z = operands_from(np, k, x, position, scalar)
            y[...] = start
            pattern.aliased(rule, y, z, position)
        return write

    return Case(name, point, constants, writer(False), twin, writer(True),
                lambda xp, k, x: twin(xp, k, x, scalar=True), rule=rule, pattern=pattern,
                position=position)


RULE_CASES = [rule_case(rule, pattern, position) for rule in UNARY_RULES + BINARY_RULES
              for pattern in PATTERNS for position in pattern.positions(rule)]


# -- NumPy functions -----------------------------------------------------------------------
# Each program writes with aliasing into y (and reads z) of `operands_from`; its result r
# goes on as r + 0.4 r^2, so that the Hessian depends on r's first derivatives as well as
# on its second.

FUNCTION_CASES = []
COVERED_BY_OUT = set()      # functions called with out= aliasing an input
COVERED = set()             # all functions whose aliasing a program exercises


def _any(rng, n):
    return points(ANY, rng, n)


def _apart(rng, n):
    # at least 0.2 apart (no ties in max and min) and at least 0.08 from the bounds of clip
    return spread((-2.0, 2.0), rng, n)


def _between_roundings(rng, n):
    # 10 x at least 0.2 from every rounding boundary m + 0.5
    return (rng.integers(-20, 20, n) + rng.uniform(0.2, 0.3, n)) / 10


def _matrix(y, rows):
    return y.reshape(rows, -1)


def program(name, size, twin, *, out_of=(), covers=(), domain=_any, constants=None):
    """Register body(k, y, z) -> result, with twin(xp, k, y, z), as a case on x of `size`."""
    def register(body):
        rng = seeded(name)
        point, values = shared_constants(domain(rng, size), points(ANY, rng, size))
        for key, value in (constants or {}).items():
            value = np.asarray(value)
            values[key] = exact_in_float32(value) if value.dtype.kind == "f" else value

        def vector(k, x):
            r = body(k, *operands_from(np, k, x, "a"))
            return r + 0.4 * r * r

        def twin_vector(xp, k, x):
            r = twin(xp, k, *operands_from(xp, k, x, "a"))
            return r + 0.4 * r * r
        FUNCTION_CASES.append(one_argument_case(name, point, values, vector, twin_vector))
        COVERED_BY_OUT.update(out_of)
        COVERED.update(out_of, covers)
        return body
    return register


# out= into (a view of) an input

@program("sum-into-row", 6, lambda xp, k, y, z: replaced(
    xp, _matrix(y, 2), 0, xp.sum(_matrix(y, 2), axis=0)), out_of=[np.sum])
def _(k, y, z):
    m = _matrix(y, 2)
    np.sum(m, axis=0, out=m[0])
    return m


@program("mean-into-row", 6, lambda xp, k, y, z: replaced(
    xp, _matrix(y, 2), 1, xp.mean(_matrix(y, 2), axis=0)), out_of=[np.mean])
def _(k, y, z):
    m = _matrix(y, 2)
    np.mean(m, axis=0, out=m[1])
    return m


@program("var-into-row", 6, lambda xp, k, y, z: replaced(
    xp, _matrix(y, 2), 0, xp.var(_matrix(y, 2), axis=0)), out_of=[np.var])
def _(k, y, z):
    m = _matrix(y, 2)
    np.var(m, axis=0, out=m[0])
    return m


@program("std-into-row", 6, lambda xp, k, y, z: replaced(
    xp, _matrix(y, 2), 1, xp.std(_matrix(y, 2), axis=0, ddof=1)), out_of=[np.std])
def _(k, y, z):
    m = _matrix(y, 2)
    np.std(m, axis=0, ddof=1, out=m[1])
    return m


@program("prod-into-row", 6, lambda xp, k, y, z: replaced(
    xp, _matrix(y, 2), 0, xp.prod(_matrix(y, 2), axis=0)), out_of=[np.prod])
def _(k, y, z):
    m = _matrix(y, 2)
    np.prod(m, axis=0, out=m[0])
    return m


def _max_into_column(xp, k, y, z):
    return replaced(xp, _matrix(y, 2), (slice(None), 0), xp.max(_matrix(y, 2), axis=1))


def _min_into_row(xp, k, y, z):
    return replaced(xp, _matrix(y, 2), 1, xp.min(_matrix(y, 2), axis=0))


@program("max-into-column", 6, _max_into_column, out_of=[np.max], domain=_apart)
def _(k, y, z):
    m = _matrix(y, 2)
    np.max(m, axis=1, out=m[:, 0])    # a strided output
    return m


@program("amax-into-column", 6, _max_into_column, out_of=[np.amax], domain=_apart)
def _(k, y, z):
    m = _matrix(y, 2)
    np.amax(m, axis=1, out=m[:, 0])
    return m


@program("min-into-row", 6, _min_into_row, out_of=[np.min], domain=_apart)
def _(k, y, z):
    m = _matrix(y, 2)
    np.min(m, axis=0, out=m[1])
    return m


@program("einsum-into-operand", 4, lambda xp, k, y, z: _matrix(y, 2) @ _matrix(z, 2),
         out_of=[np.einsum])
def _(k, y, z):
    m = _matrix(y, 2)
    np.einsum("ij,jk->ik", m, _matrix(z, 2), out=m)
    return m


@program("amin-into-row", 6, _min_into_row, out_of=[np.amin], domain=_apart)
def _(k, y, z):
    m = _matrix(y, 2)
    np.amin(m, axis=0, out=m[1])
    return m


@program("take-into-input", 5, lambda xp, k, y, z: xp.take(y, xp.array([4, 0, 2, 2, 1])),
         out_of=[np.take])
def _(k, y, z):
    np.take(y, [4, 0, 2, 2, 1], out=y)
    return y


@program("take-of-reversed-into-input", 5,
         lambda xp, k, y, z: xp.take(y[::-1], xp.array([1, 1, 3, 0, 4])), out_of=[np.take])
def _(k, y, z):
    np.take(y[::-1], [1, 1, 3, 0, 4], out=y)
    return y


@program("ldexp-into-input", 5,
         lambda xp, k, y, z: y * xp.asarray([2.0, 0.25, 1.0, 8.0, 2.0]), out_of=[np.ldexp])
def _(k, y, z):
    np.ldexp(y, np.array([1, -2, 0, 3, 1]), out=y)
    return y


@program("compress-into-input", 5, lambda xp, k, y, z: replaced(
    xp, y, slice(1, 4), y[xp.array([0, 2, 3])]), out_of=[np.compress])
def _(k, y, z):
    np.compress([True, False, True, True], y, out=y[1:4])
    return y


@program("nan-to-num-in-place", 5,
         lambda xp, k, y, z: xp.where(xp.arange(5) == 1, 2.0, y * y), covers=[np.nan_to_num])
def _(k, y, z):
    y *= y
    y[1] = np.inf
    np.nan_to_num(y, copy=False, posinf=2.0)
    return y


@program("cumsum-into-input", 5, lambda xp, k, y, z: xp.cumsum(y), out_of=[np.cumsum])
def _(k, y, z):
    np.cumsum(y, out=y)
    return y


@program("cumsum-of-reversed-into-input", 5, lambda xp, k, y, z: xp.cumsum(y[::-1]),
         out_of=[np.cumsum])
def _(k, y, z):
    np.cumsum(y[::-1], out=y)
    return y


# linear algebra with out=: multi_dot and the vector-matrix gufuncs into an operand

@program("multi-dot-into-operand", 9,
         lambda xp, k, y, z: xp.ravel(_matrix(y, 3) @ _matrix(z, 3) @ _matrix(y, 3)),
         out_of=[np.linalg.multi_dot])
def _(k, y, z):
    m = _matrix(y, 3)
    np.linalg.multi_dot([m, _matrix(z, 3), m], out=m)
    return y


@program("vecdot-into-operand", 9,
         lambda xp, k, y, z: xp.concatenate([xp.sum(_matrix(y, 3) * _matrix(z, 3), axis=-1),
                                             y[3:]]),
         out_of=[np.vecdot])
def _(k, y, z):
    np.vecdot(_matrix(y, 3), _matrix(z, 3), out=y[:3])
    return y


@program("matvec-vecmat-into-operand", 9,
         lambda xp, k, y, z: xp.concatenate([_matrix(y, 3) @ y[:3], y[3:6],
                                             (_matrix(y, 3) @ y[:3]) @ _matrix(y, 3)]),
         out_of=[np.matvec, np.vecmat])
def _(k, y, z):
    m = _matrix(y, 3).copy()
    np.matvec(m, y[:3], out=y[:3])
    np.vecmat(y[:3], m, out=y[6:9])
    return y


# the statistics: the reductions into a row of their operand, the cumulative ones into it
def _statistic_into_row(function, arguments, row, domain=_any):
    def twin(xp, k, y, z):
        return replaced(xp, _matrix(y, 3), row, getattr(xp, function.__name__)(
            _matrix(y, 3), *arguments, axis=0))

    def body(k, y, z):
        m = _matrix(y, 3)
        function(m, *arguments, axis=0, out=m[row])
        return m
    program(f"{function.__name__}-into-row", 9, twin, out_of=[function], domain=domain)(body)


for _function, _arguments in [(np.nansum, ()), (np.nanprod, ()), (np.nanmean, ()),
                              (np.nanvar, ()), (np.nanstd, ()), (np.median, ()),
                              (np.nanmedian, ()), (np.quantile, (0.3,)),
                              (np.nanquantile, (0.8,)), (np.percentile, (40.0,)),
                              (np.nanpercentile, (65.0,))]:
    _statistic_into_row(_function, _arguments, 1)
for _function in (np.ptp, np.nanmax, np.nanmin):
    _statistic_into_row(_function, (), 2, _apart)


def _cumulative_into_input(function, kwargs):
    def twin(xp, k, y, z):
        return getattr(xp, function.__name__)(y[::-1], **kwargs)

    def body(k, y, z):
        function(y[::-1], out=y, **kwargs)
        return y
    program(f"{function.__name__}-into-input", 5, twin, out_of=[function])(body)


for _function, _kwargs in [(np.cumprod, {}), (np.nancumsum, {}), (np.nancumprod, {}),
                           (np.cumulative_sum, {"axis": 0}), (np.cumulative_prod, {"axis": 0})]:
    _cumulative_into_input(_function, _kwargs)


@program("trace-into-element", 9, lambda xp, k, y, z: replaced(
    xp, _matrix(y, 3), (0, 0), xp.trace(_matrix(y, 3))), out_of=[np.trace])
def _(k, y, z):
    m = _matrix(y, 3)
    np.trace(m, out=m[0, 0])
    return m


@program("matmul-constant-into-operand", 5, lambda xp, k, y, z: k.matrix @ y,
         out_of=[np.matmul], constants={"matrix": seeded("matrix").standard_normal((5, 5))})
def _(k, y, z):
    np.matmul(k.matrix, y, out=y)
    return y


@program("matmul-into-both-operands", 9, lambda xp, k, y, z: _matrix(y, 3) @ _matrix(y, 3),
         out_of=[np.matmul])
def _(k, y, z):
    m = _matrix(y, 3)
    np.matmul(m, m, out=m)
    return m


@program("dot-into-operand", 9, lambda xp, k, y, z: replaced(
    xp, _matrix(y, 3), 1, _matrix(y, 3) @ _matrix(y, 3)[0]), out_of=[np.dot])
def _(k, y, z):
    m = _matrix(y, 3)
    np.dot(m, m[0], out=m[1])
    return m


@program("outer-into-operands", 4, lambda xp, k, y, z: xp.outer(_matrix(y, 2)[0],
                                                                _matrix(y, 2)[:, 1]),
         out_of=[np.outer])
def _(k, y, z):
    m = _matrix(y, 2)
    np.outer(m[0], m[:, 1], out=m)
    return m


@program("clip-into-input", 5, lambda xp, k, y, z: xp.clip(y, k.low, k.high), out_of=[np.clip],
         domain=_apart, constants={"low": -0.6, "high": 0.9})
def _(k, y, z):
    np.clip(y, k.low, k.high, out=y)
    return y


# the upper bound is the output itself; n is even, so no element is compared with itself
@program("clip-bound-into-output", 6,
         lambda xp, k, y, z: xp.minimum(xp.maximum(y[::-1], k.low), y), out_of=[np.clip],
         domain=_apart, constants={"low": -0.6})
def _(k, y, z):
    np.clip(y[::-1], k.low, y, out=y)
    return y


def _rounded_slice(xp, k, y, z):
    return replaced(xp, y, slice(1, 3), xp.round(y[1:3], 1))


@program("round-into-slice", 5, _rounded_slice, out_of=[np.round], domain=_between_roundings)
def _(k, y, z):
    np.round(y[1:3], 1, out=y[1:3])
    return y


@program("around-into-slice", 5, _rounded_slice, out_of=[np.around], domain=_between_roundings)
def _(k, y, z):
    np.around(y[1:3], 1, out=y[1:3])
    return y


@program("concatenate-into-input", 5,
         lambda xp, k, y, z: xp.concatenate([y[:1], y[:2], y[3:]]), out_of=[np.concatenate])
def _(k, y, z):
    np.concatenate([y[:2], y[3:]], out=y[1:])
    return y


@program("stack-into-input", 6,
         lambda xp, k, y, z: xp.stack([_matrix(y, 2)[1], _matrix(y, 2)[0]]), out_of=[np.stack])
def _(k, y, z):
    m = _matrix(y, 2)
    np.stack([m[1], m[0]], out=m)
    return m


# results that are views of their input, written in place

@program("reshape-view", 6,
         lambda xp, k, y, z: (_matrix(y, 2) * _matrix(y, 2)[::-1]).reshape(6), covers=[np.reshape])
def _(k, y, z):
    v = np.reshape(y, (2, 3))
    v *= v[::-1]
    return y


@program("ravel-view", 6, lambda xp, k, y, z: _matrix(y * y[::-1], 2), covers=[np.ravel])
def _(k, y, z):
    m = _matrix(y, 2)
    v = np.ravel(m)
    v *= v[::-1]
    return m


@program("transpose-view", 9, lambda xp, k, y, z: _matrix(y, 3) * _matrix(y, 3).T,
         covers=[np.transpose])
def _(k, y, z):
    m = _matrix(y, 3)
    v = np.transpose(m)
    v *= m
    return m


@program("swapaxes-view", 9, lambda xp, k, y, z: _matrix(y, 3) * _matrix(y, 3).T,
         covers=[np.swapaxes])
def _(k, y, z):
    m = _matrix(y, 3)
    v = np.swapaxes(m, 0, 1)
    v *= m
    return m


@program("moveaxis-view", 6, lambda xp, k, y, z: (_matrix(y, 2).T * _matrix(y, 2).T[::-1]).T,
         covers=[np.moveaxis])
def _(k, y, z):
    m = _matrix(y, 2)
    v = np.moveaxis(m, 0, 1)
    v *= v[::-1]
    return m


@program("squeeze-view", 5, lambda xp, k, y, z: _matrix(y * y[::-1], 1), covers=[np.squeeze])
def _(k, y, z):
    m = _matrix(y, 1)
    v = np.squeeze(m)
    v *= v[::-1]
    return m


@program("expand-dims-view", 5, lambda xp, k, y, z: y * y[::-1], covers=[np.expand_dims])
def _(k, y, z):
    v = np.expand_dims(y, 0)
    v *= v[:, ::-1]
    return y


@program("flip-view", 5, lambda xp, k, y, z: y * y[::-1], covers=[np.flip])
def _(k, y, z):
    v = np.flip(y)
    v *= y
    return y


# the very elements of y in the very layout, as another dual object
@program("atleast-1d-view", 5, lambda xp, k, y, z: y * y, covers=[np.atleast_1d])
def _(k, y, z):
    v = np.atleast_1d(y)
    v *= y
    return y


@program("atleast-2d-view", 5, lambda xp, k, y, z: y * y, covers=[np.atleast_2d])
def _(k, y, z):
    v = np.atleast_2d(y)
    v *= y
    return y


# read-only views, read while their base is written

@program("broadcast-to-operand", 5, lambda xp, k, y, z: y * y[0], covers=[np.broadcast_to])
def _(k, y, z):
    np.multiply(y, np.broadcast_to(y[:1], (5,)), out=y)
    return y


@program("diag-operand", 9, lambda xp, k, y, z: replaced(
    xp, _matrix(y, 3), 0, _matrix(y, 3)[0] * xp.diag(_matrix(y, 3))), covers=[np.diag])
def _(k, y, z):
    m = _matrix(y, 3)
    np.multiply(m[0], np.diag(m), out=m[0])
    return m


# copies between overlapping arrays

@program("copyto-reversed", 5, lambda xp, k, y, z: y[::-1], covers=[np.copyto])
def _(k, y, z):
    np.copyto(y, y[::-1])
    return y


@program("copyto-shifted", 5, lambda xp, k, y, z: xp.concatenate([y[:1], y[:-1]]),
         covers=[np.copyto])
def _(k, y, z):
    np.copyto(y[1:], y[:-1])
    return y


@program("copyto-where", 5, lambda xp, k, y, z: xp.where(k.mask, z, y), covers=[np.copyto],
         constants={"mask": np.array([True, False, True, True, False])})
def _(k, y, z):
    np.copyto(y, z, where=k.mask)
    return y


@program("setitem-shifted-right", 5, lambda xp, k, y, z: xp.concatenate([y[:1], y[:-1]]))
def _(k, y, z):
    y[1:] = y[:-1]
    return y


@program("setitem-shifted-left", 5, lambda xp, k, y, z: xp.concatenate([y[1:], y[-1:]]))
def _(k, y, z):
    y[:-1] = y[1:]
    return y


@program("setitem-reversed", 5, lambda xp, k, y, z: y[::-1])
def _(k, y, z):
    y[...] = y[::-1]
    return y


# The functions of HANDLED_FUNCTIONS no program can make write into its own input, and why.
CANNOT_ALIAS = {
    np.shape: "returns a tuple of ints, not an array",
    np.argsort: "returns positions (ints) read off the values, carrying no derivative",
    np.linalg.matrix_rank: "returns a count (an int) read off the values",
    np.matrix_transpose: "returns a view",
    np.linalg.matrix_transpose: "returns a view",
    np.argmax: "returns a position (an int) read off the values",
    np.argmin: "returns a position (an int) read off the values",
    np.searchsorted: "returns positions (ints) read off the values",
    np.count_nonzero: "returns a count (an int) read off the values",
    np.any: "returns a bool read off the values",
    np.all: "returns a bool read off the values",
    np.ndim: "returns an int",
    np.size: "returns an int",
    np.copy: "returns a new array (no out=)",
    np.diff: "returns a new array (no out=)",
    np.inner: "returns a new array (no out=)",
    np.where: "returns a new array (no out=)",
    np.hstack: "returns a new array (no out=)",
    np.vstack: "returns a new array (no out=)",
    np.zeros_like: "returns a new array, sharing no memory with its argument",
    np.ones_like: "returns a new array, sharing no memory with its argument",
    np.empty_like: "returns a new array, sharing no memory with its argument",
    np.full_like: "returns a new array, sharing no memory with its arguments",
    np.linalg.norm: "returns a new array (no out=)",
    np.linalg.det: "returns a new array (no out=)",
    np.linalg.inv: "returns a new array (no out=)",
    np.linalg.solve: "returns a new array (no out=)",
    np.linalg.slogdet: "returns new arrays (no out=)",
    np.linalg.cholesky: "returns a new array (no out=)",
    np.linalg.eigh: "returns new arrays (no out=)",
    np.linalg.eigvalsh: "returns a new array (no out=)",
    np.sort: "returns a new array (no out=)",
    np.take_along_axis: "returns a new array (no out=)",
    np.interp: "returns a new array (no out=)",
    np.kron: "returns a new array (no out=)",
    np.tensordot: "returns a new array (no out=)",
    np.average: "returns new arrays (no out=)",
    np.cov: "returns a new array (no out=)",
    np.corrcoef: "returns a new array (no out=)",
    np.convolve: "returns a new array (no out=)",
    np.correlate: "returns a new array (no out=)",
    np.gradient: "returns new arrays (no out=)",
    np.trapezoid: "returns a new array (no out=)",
    np.polyval: "returns a new array (no out=)",
    np.sinc: "returns a new array (no out=)",
    np.argpartition: "returns positions (ints) read off the values",
}
# the shape functions without out=: each returns a new array (or new views, for the splits,
# broadcast_arrays and meshgrid(copy=False), which NumPy makes read-only or which no
# function writes through)
CANNOT_ALIAS.update({f: "returns a new array (no out=)" for f in (
    np.linalg.qr, np.linalg.svd, np.linalg.svdvals, np.linalg.eig, np.linalg.eigvals,
    np.linalg.pinv, np.linalg.lstsq, np.cross, np.linalg.cross, np.vdot, np.linalg.vecdot,
    np.linalg.outer, np.linalg.matmul, np.linalg.tensordot, np.linalg.trace,
    np.linalg.matrix_power, np.linalg.tensorinv, np.linalg.tensorsolve, np.linalg.vector_norm,
    np.linalg.matrix_norm, np.pad, np.roll, np.tile, np.repeat, np.fliplr, np.flipud, np.rot90,
    np.diagonal, np.diagflat, np.triu, np.tril, np.delete, np.insert, np.append, np.array_split,
    np.split, np.hsplit, np.vsplit, np.dsplit, np.column_stack, np.dstack, np.block, np.meshgrid,
    np.broadcast_arrays, np.select, np.piecewise, np.partition)})

# numpy.fft's functions: a complex result, which out= (refused: a TypeError) could not hold in
# a real engine array
FOURIER = (np.fft.fft, np.fft.ifft, np.fft.fftn, np.fft.ifftn, np.fft.fft2, np.fft.ifft2,
           np.fft.rfft, np.fft.rfftn, np.fft.rfft2, np.fft.irfft, np.fft.irfftn, np.fft.irfft2,
           np.fft.hfft, np.fft.ihfft)
CANNOT_ALIAS.update({f: "returns a new array; out= is refused" for f in FOURIER})
CANNOT_ALIAS.update({f: "returns a new array (no out=)" for f in (
    np.fft.fftshift, np.fft.ifftshift, np.imag)})
# ufuncs of two outputs: out= a pair of arrays, refused (a TypeError) on every engine
TWO_OUTPUTS = (np.modf, np.frexp, np.divmod)
CANNOT_ALIAS.update({f: "two outputs: out= is refused" for f in TWO_OUTPUTS})
CANNOT_ALIAS.update({f: "returns a new array (no out=)" for f in (
    np.linspace, np.logspace, np.geomspace, np.apply_along_axis, np.i0, np.linalg.cond,
    np.extract, np.vander, np.polyfit)})
CANNOT_ALIAS.update({np.rollaxis: "returns a view", np.atleast_3d: "returns a view",
                     np.array: "returns a new array", np.asarray: "returns its operand itself",
                     np.asanyarray: "returns its operand itself",
                     np.result_type: "returns a dtype", np.can_cast: "returns a bool",
                     np.min_scalar_type: "returns a dtype"})
CANNOT_ALIAS.update({np.real: "returns its real operand itself (in NumPy, a view)",
                     np.real_if_close: "returns its real operand itself",
                     np.angle: "returns a new array read off the values (no out=)",
                     np.iscomplex: "returns bools", np.isreal: "returns bools",
                     np.iscomplexobj: "returns a bool", np.isrealobj: "returns a bool"})

CASES = RULE_CASES + FUNCTION_CASES


# -- what the cases cover ------------------------------------------------------------------

def test_every_numpy_function_is_aliased_or_cannot_be():
    unclassified = [f.__name__ for f in HANDLED_FUNCTIONS
                    if f not in COVERED and f not in CANNOT_ALIAS]
    assert not unclassified, ("NumPy functions on duals neither tested with aliasing here nor "
                              f"listed in CANNOT_ALIAS: {unclassified}")


def test_every_numpy_function_with_out_is_tested_with_out_aliasing_an_input():
    # (the value-only entries - argmax, any, ... - take no out=: their results carry no
    # derivative)
    with_out = [f for f in HANDLED_FUNCTIONS if "out" in inspect.signature(f).parameters
                and not (f in TABLE and TABLE[f].kind == "constant")
                and f not in FOURIER + TWO_OUTPUTS]
    assert with_out
    assert [f.__name__ for f in with_out if f not in COVERED_BY_OUT] == []


# -- derivatives --------------------------------------------------------------------------

class Expected(NamedTuple):
    value: np.ndarray       # of the vector program
    jacobian: np.ndarray
    gradient: np.ndarray    # of the scalar program
    hessian: np.ndarray
    tolerance: dict


def reference_program(cases):
    """One program of (xp, x) computing the twins of `cases` (which share their point and
    constants but for the weights): a case of a NumPy function alone, the cases of one rule
    and position from one computation of their operands."""
    k = cases[0].constants_in(np.float64)
    if cases[0].rule is None:
        (case,) = cases
        return lambda xp, x: [case.twin_vector(xp, k, x)]
    rule, position = cases[0].rule, cases[0].position

    def program(xp, x):
        operands = {scalar: operands_from(xp, k, x, position, scalar) for scalar in (False, True)}
        return [rule_twin(xp, rule, case.pattern, position, operands[scalar]) for case in cases
                for scalar in ((False, True) if case.two_argument else (False,))]
    return program


def reference_groups(cases):
    """The cases grouped by what they share: rule and position, or nothing."""
    groups = {}
    for case in cases:
        key = case.name if case.rule is None else (case.rule, case.position)
        groups.setdefault(key, []).append(case)
    return list(groups.values())


def expected_from(cases, derivatives):
    """The Expected of each case from the Derivatives of its twins, in order."""
    derivatives = iter(derivatives)
    for case in cases:
        vector = next(derivatives)
        if case.two_argument:
            scalar = next(derivatives)
            gradient, hessian = scalar.first, scalar.second
        else:
            # the scalar program is the weighted sum of the vector program
            weights = case.constants["weights"]
            gradient, hessian = (np.tensordot(weights, derivative, weights.ndim)
                                 for derivative in (vector.first, vector.second))
        yield Expected(vector.value, vector.first, gradient, hessian, vector.tolerance)


_EXPECTED = {}


def by_reference(cases):
    """The cases as parameters, each in the group of the cases whose references `expected`
    computes together (its rule's, or all NumPy function cases): pytest-xdist runs a group
    on one worker (--dist loadgroup), which computes them once."""
    return [pytest.param(case, id=case.name, marks=pytest.mark.xdist_group(
        "aliasing-" + ("functions" if case.rule is None else ufunc_name(case.rule))))
        for case in cases]


def expected(case):
    """The reference derivatives of a case, computed with those of its rule (or of all the
    NumPy function cases) in one go."""
    if case not in _EXPECTED:
        batch = reference_groups([other for other in CASES if other.rule is case.rule])
        found = references([(reference_program(group), group[0].point) for group in batch])
        for group, derivatives in zip(batch, found, strict=True):
            _EXPECTED.update(zip(group, expected_from(group, derivatives), strict=True))
    return _EXPECTED[case]


def cyad_programs(case, dtype, aliased):
    """The vector and scalar programs cyad differentiates: the aliased ones (two-argument
    for a two-argument case) or their twins on NumPy (one-argument)."""
    k = case.constants_in(dtype)
    if aliased and case.two_argument:
        return (lambda y, x: case.vector(k, y, x)), (lambda y, x: case.scalar(k, y, x))
    vector = (lambda x: case.vector(k, x)) if aliased else (lambda x: case.twin_vector(np, k, x))
    if case.two_argument:
        return vector, lambda x: case.twin_scalar(np, k, x)
    return vector, lambda x: np.sum(k.weights * vector(x))


def first_order(vector, scalar, x, chunk, y_shape=None):
    """Value and Jacobian of the vector program, gradient of the scalar one."""
    if y_shape is None:
        value, jac = cyad.value_and_jacobian(vector, x, chunk=chunk)
        return value, jac, cyad.gradient(scalar, x, chunk=chunk)
    value, jac = cyad.value_and_jacobian(vector, x, y=np.zeros(y_shape, x.dtype), chunk=chunk)
    return value, jac, cyad.gradient(scalar, x, y=np.zeros((), x.dtype), chunk=chunk)


def second_order(scalar, x, direction, chunk, two_argument=False, nested=True):
    """Hessian, Hessian times `direction`, and the Jacobian of the gradient (nested, where
    `nested`)."""
    def y_like(t):
        # a 0-d y; inside the outer differentiation, a dual of it
        return {"y": np.zeros_like(t, shape=())} if two_argument else {}
    results = (cyad.hessian(scalar, x, chunk=chunk, **y_like(x)),
               cyad.hvp(scalar, x, direction, chunk=chunk, **y_like(x)))
    if not nested:
        return results
    return results + (cyad.jacobian(lambda t: cyad.gradient(scalar, t, chunk=chunk,
                                                            **y_like(t)), x, chunk=chunk),)


def assert_derivatives(names, aliased, plain, exact, dtype, reference_tolerance):
    for name, got, same, reference in zip(names, aliased, plain, exact, strict=True):
        assert np.asarray(got).dtype == dtype, name
        assert_matches(got, same, **SAME_PROGRAM_TOLERANCE[dtype],
                       what=f"{name}: the aliased program against the same without aliasing")
        assert_matches(got, reference, **loosest(reference_tolerance, REFERENCE_TOLERANCE[dtype]),
                       what=f"{name}: the aliased program against the reference")


@pytest.mark.parametrize("dtype, chunk", VARIANTS)
@pytest.mark.parametrize("case", by_reference(CASES))
def test_first_order(case, dtype, chunk):
    exact = expected(case)
    x = case.point.astype(dtype)
    y_shape = exact.value.shape if case.two_argument else None
    assert_derivatives(("value", "jacobian", "gradient"),
                       first_order(*cyad_programs(case, dtype, True), x, chunk, y_shape),
                       first_order(*cyad_programs(case, dtype, False), x, chunk),
                       exact[:3], dtype, exact.tolerance)


@pytest.mark.parametrize("dtype, chunk", VARIANTS)
@pytest.mark.parametrize("case", by_reference(CASES))
def test_second_order(case, dtype, chunk):
    exact = expected(case)
    x = case.point.astype(dtype)
    direction = exact_in_float32(seeded(case.name + "-direction").standard_normal(x.shape))
    _, scalar = cyad_programs(case, dtype, True)
    _, plain_scalar = cyad_programs(case, dtype, False)
    # the nested Jacobian of the gradient once per dtype: it derives the program whatever
    # the chunk
    nested = dtype == np.float32 or chunk is None
    checked = 3 if nested else 2
    assert_derivatives(("hessian", "hvp", "jacobian of gradient")[:checked],
                       second_order(scalar, x, direction.astype(dtype), chunk, case.two_argument,
                                    nested),
                       second_order(plain_scalar, x, direction.astype(dtype), chunk,
                                    nested=nested),
                       (exact.hessian, exact.hessian @ direction, exact.hessian)[:checked],
                       dtype, exact.tolerance)


# every rule written into its (first) operand, and as a two-argument f with a 0-d y; every
# NumPy function program
FALLBACK_CASES = [case for case in RULE_CASES if case.name.endswith(("-out-same", "-out-same-a",
                                                                     "-two-argument-b"))]
FALLBACK_CASES += FUNCTION_CASES


@pytest.mark.skipif(jax is None, reason="JAX is the reference the fallback is checked against")
@pytest.mark.parametrize("case", by_reference(FALLBACK_CASES))
def test_difference_fallback_agrees_with_jax(case):
    # without JAX the tests above take central differences: here they are checked once
    (approximate,) = expected_from([case], by_differences(reference_program([case]), case.point))
    for name, exact in zip(Expected._fields[:4], expected(case), strict=False):
        assert_matches(getattr(approximate, name), exact, **approximate.tolerance, what=name)
