"""Where each elementwise rule is tested: one domain per NumPy ufunc cyad differentiates.

A domain keeps the points inside the function's real domain and away from the places
where it is not differentiable (the jumps of sign, floor, ceil, rint and trunc, the
kink of abs at 0, the ties of maximum and minimum), so that a derivative there is
the derivative of the function and a finite difference around it is meaningful.
A test checks that every ufunc of cyad's rule tables has an entry here.
"""
import operator

import numpy as np

from cyad._dual import _BINARY_UFUNCS, _UNARY_UFUNCS

# the elementwise rules cyad differentiates: its tables of unary and binary ufuncs, and
# power and float_power (dispatched outside the binary table, by which operand is constant)
UNARY_RULES = list(_UNARY_UFUNCS)
BINARY_RULES = list(_BINARY_UFUNCS) + [np.power, np.float_power]
# the rules NumPy has an in-place operator for
IN_PLACE_OPERATORS = {np.add: operator.iadd, np.subtract: operator.isub,
                      np.multiply: operator.imul, np.true_divide: operator.itruediv,
                      np.power: operator.ipow}

ANY = (-3.0, 3.0)
POSITIVE = (0.1, 5.0)
ABOVE_ONE = (1.05, 5.0)
OPEN_UNIT = (-0.9, 0.9)
NEGATIVE = (-3.0, -0.2)
NONZERO = "nonzero"                # +-(0.2, 3)
INTEGER = "integer"                # integers in [-3, 3]
# k + (0.1, 0.4) for integers k in [-3, 2]: at least 0.1 from every integer and every
# half-integer (the jumps of floor, ceil and trunc, and of rint)
BETWEEN_STEPS = "between-steps"
# a second operand of maximum and minimum: every b at least 0.1 from every a, and the
# a at least 0.2 from each other, so that no comparison of any two operand elements ties
APART = "apart"

UNARY_DOMAINS = {
    np.negative: ANY, np.positive: ANY, np.conjugate: ANY,
    np.absolute: NONZERO, np.fabs: NONZERO,
    np.sqrt: POSITIVE, np.cbrt: NONZERO, np.square: ANY, np.reciprocal: NONZERO,
    np.exp: ANY, np.exp2: ANY, np.expm1: ANY,
    np.log: POSITIVE, np.log2: POSITIVE, np.log10: POSITIVE, np.log1p: (-0.9, 4.0),
    np.sin: ANY, np.cos: ANY, np.tan: (-1.4, 1.4),
    np.arcsin: OPEN_UNIT, np.arccos: OPEN_UNIT, np.arctan: ANY,
    np.sinh: ANY, np.cosh: ANY, np.tanh: ANY,
    np.arcsinh: ANY, np.arccosh: ABOVE_ONE, np.arctanh: OPEN_UNIT,
    np.deg2rad: (-200.0, 200.0), np.radians: (-200.0, 200.0),
    np.rad2deg: ANY, np.degrees: ANY,
    np.sign: NONZERO, np.floor: BETWEEN_STEPS, np.ceil: BETWEEN_STEPS,
    np.rint: BETWEEN_STEPS, np.trunc: BETWEEN_STEPS,
}

# (domain of the first operand, domain of the second)
BINARY_DOMAINS = {
    np.add: (ANY, ANY), np.subtract: (ANY, ANY), np.multiply: (ANY, ANY),
    np.true_divide: (ANY, NONZERO),
    np.power: ((0.2, 3.0), (-2.5, 2.5)), np.float_power: ((0.2, 3.0), (-2.5, 2.5)),
    # the first operand (y) away from 0: no difference crosses the branch cut of arctan2(y, x < 0)
    np.arctan2: (NONZERO, ANY),
    np.hypot: (ANY, ANY),
    np.maximum: (ANY, APART), np.minimum: (ANY, APART),
    np.fmax: (ANY, APART), np.fmin: (ANY, APART),
    np.logaddexp: (ANY, ANY), np.logaddexp2: (ANY, ANY),
}


def points(domain, rng, n):
    """n points of a one-operand domain."""
    if domain == NONZERO:
        return rng.choice([-1.0, 1.0], n) * rng.uniform(0.2, 3.0, n)
    if domain == INTEGER:
        return rng.integers(-3, 4, n).astype(float)
    if domain == BETWEEN_STEPS:
        return rng.integers(-3, 3, n) + rng.uniform(0.1, 0.4, n)
    return rng.uniform(*domain, n)


def spread(domain, rng, n):
    """n points of an interval at least 0.2 apart: distinct slots of a 0.25 grid, jittered."""
    low, high = domain
    slots = np.arange(low + 0.05, high - 0.05, 0.25)
    if len(slots) < n:
        raise ValueError(f"{n} points do not fit 0.25 apart into {domain}")
    return rng.permutation(slots)[:n] + rng.uniform(-0.02, 0.02, n)


def binary_points(a_domain, b_domain, rng, n):
    """n pairs of operands, a from a_domain and b from b_domain."""
    if b_domain == APART:
        a = spread(a_domain, rng, n)
        return a, a + rng.choice([-1.0, 1.0], n) * rng.uniform(0.1, 0.11, n)
    return points(a_domain, rng, n), points(b_domain, rng, n)


def _inside(domain, values):
    if domain == APART:
        return np.ones(np.shape(values), bool)
    if domain == NONZERO:
        return (np.abs(values) >= 0.2) & (np.abs(values) <= 3.0)
    if domain == BETWEEN_STEPS:
        fraction = values - np.floor(values)
        return (fraction >= 0.1) & (fraction <= 0.4)
    if domain == INTEGER:
        return values == np.round(values)
    low, high = domain
    return (values > low) & (values < high)


def same_operand_points(a_domain, b_domain, rng, n):
    """n points valid as both operands at once (op(y, y), op(y, y[:1]), op(y[:-1], y[1:])).

    With maximum and minimum the elements are spread apart: comparing an element with
    itself ties, which is harmless (the two halves add up), but two different elements
    must not.
    """
    if b_domain == APART:
        return spread(a_domain, rng, n)
    found = np.empty(0)
    while len(found) < n:
        candidates = points(a_domain, rng, 4 * n)
        found = np.concatenate([found, candidates[_inside(b_domain, candidates)]])
    return found[:n]


def interval(domain, rng):
    """An interval of a one-operand domain, well inside it and away from its jumps."""
    if domain == NONZERO:
        return (0.3, 2.8) if rng.uniform() < 0.5 else (-2.8, -0.3)
    if domain == BETWEEN_STEPS:
        return tuple(rng.integers(-2, 3) + np.array([0.15, 0.35]))
    if domain in (INTEGER, APART):
        raise ValueError(f"no interval of the domain {domain!r}")
    low, high = domain
    margin = 0.1 * (high - low)
    return low + margin, high - margin
