"""Where each elementwise rule is tested: the test domains of the rule table, by NumPy ufunc.

The domains live in the rule table (cyad/_rules/table.py, which says what they promise);
this module lists the table's ufuncs with their rules' domains, and draws points from them.
"""
import operator

import numpy as np

from cyad._rules import table
from cyad._rules.table import APART, BETWEEN_STEPS, DIVISOR, INTEGER, NATURAL, NONZERO

# Every ufunc of the rule table (np.power and np.float_power among the binary ones), with
# the test domain of its rule: one for a unary rule, (of a, of b) for a binary one
UNARY_DOMAINS = {table.resolve(name): rule.domain for rule in table.UNARY_RULES
                 for name in rule.ufuncs}
BINARY_DOMAINS = {table.resolve(name): rule.domain for rule in table.BINARY_RULES
                  for name in rule.ufuncs}
UNARY_RULES = list(UNARY_DOMAINS)
BINARY_RULES = list(BINARY_DOMAINS)
# the binary ufuncs differentiable in their second operand only (the first a constant)
ONLY_IN_B = {table.resolve(name) for rule in table.BINARY_RULES if rule.differentiable == "b"
             for name in rule.ufuncs}
# the rules of a quotient's steps (//, %, fmod): y op y divides y by itself, a jump, where
# no reference is sure (XLA's x * (1 / y) may round below 1); their domains do not meet
QUOTIENTS = {func for func, (_, b_domain) in BINARY_DOMAINS.items() if b_domain == DIVISOR}
# the rules NumPy has an in-place operator for
IN_PLACE_OPERATORS = {np.add: operator.iadd, np.subtract: operator.isub,
                      np.multiply: operator.imul, np.true_divide: operator.itruediv,
                      np.power: operator.ipow, np.floor_divide: operator.ifloordiv,
                      np.remainder: operator.imod}

def points(domain, rng, n):
    """n points of a one-operand domain."""
    if domain == NONZERO:
        return rng.choice([-1.0, 1.0], n) * rng.uniform(0.2, 3.0, n)
    if domain == INTEGER:
        return rng.integers(-3, 4, n).astype(float)
    if domain == NATURAL:
        return rng.integers(0, 4, n).astype(float)
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
    if domain == NATURAL:
        return (values == np.round(values)) & (values >= 0.0) & (values <= 3.0)
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
    """An interval of a one-operand domain, well inside it and away from its jumps; of
    NATURAL (the constant integer order of a rule), one of its integers (k, k)."""
    if domain == NATURAL:
        k = float(rng.integers(0, 4))
        return k, k
    if domain == NONZERO:
        return (0.3, 2.8) if rng.uniform() < 0.5 else (-2.8, -0.3)
    if domain == BETWEEN_STEPS:
        return tuple(rng.integers(-2, 3) + np.array([0.15, 0.35]))
    if domain in (INTEGER, APART):
        raise ValueError(f"no interval of the domain {domain!r}")
    low, high = domain
    margin = 0.1 * (high - low)
    return low + margin, high - margin
