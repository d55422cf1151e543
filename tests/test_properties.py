"""The reference-free checks (tests/properties.py) over every entry of cyad's tables.

Every rule of the rule table and every NumPy function of the primitive table is called
on generated arguments: on its test domain and at special points (0, +-1, ties), with
empty and one-element axes, broadcast operands, and operands that are strided or reversed
views; a function with axis, keepdims, ord or mode parameters with each of them
(tests/table_arguments.py). Each call is checked at first and second order in float64 and
float32 on every engine: the adjoint identity, the engines' agreement and the consistency
of second order. A new table entry is checked the day it is added:
`test_every_table_function_has_arguments` holds the primitive table to arguments, and the
rules are enumerated from the rule table itself.
"""
import zlib

import numpy as np
import pytest
from properties import check
from rule_domains import QUOTIENTS, binary_points, points, same_operand_points
from table_arguments import ARGUMENTS, covered

from cyad._rules import table as _rule_table
from cyad._primitives import NAMED, TABLE

DTYPES = [np.float64, np.float32]
# special points of a unary rule, and pairs of a binary one (ties among them): those where
# the rule's value is finite (where a function is defined, its derivatives may not be)
SPECIAL = np.array([0.0, 1.0, -1.0, 0.5, -2.0, 0.0])
SPECIAL_PAIRS = (np.array([0.0, 1.0, -1.0, 0.0, 2.0, 0.5, 1.0]),
                 np.array([0.0, 1.0, 1.0, 2.0, 2.0, -0.5, 0.0]))


def _defined(u, *operands):
    with np.errstate(all="ignore"):
        keep = np.isfinite(u(*operands))
    return [a[keep] for a in operands]


def _ufunc(rule):
    return _rule_table.resolve(rule.ufuncs[0])


def _seeded(*names):
    return np.random.default_rng(zlib.crc32(" ".join(names).encode()))


# -- the rule table ----------------------------------------------------------------------------

def _unary_cases():
    for rule in _rule_table.UNARY_RULES:
        u, rng = _ufunc(rule), _seeded(rule.name)
        inside = points(rule.domain, rng, 12)
        yield rule.name, "domain", u, inside[:6], lambda x, u=u: u(x)
        special, = _defined(u, SPECIAL)
        if special.size:
            yield rule.name, "special-points", u, special, lambda x, u=u: u(x)
        yield rule.name, "empty", u, inside[:2], lambda x, u=u: u(x[:0].reshape(2, 0, 3))
        yield rule.name, "one-element", u, inside[:1], lambda x, u=u: u(x.reshape(1, 1))
        yield rule.name, "strided-view", u, inside, lambda x, u=u: u(x.reshape(3, 4)[:, ::2])
        yield rule.name, "reversed-view", u, inside[:6], \
            lambda x, u=u: u(x.reshape(2, 3)[::-1, ::-1])


def _binary_cases():
    for rule in _rule_table.BINARY_RULES:
        if rule.variant_of:     # (reached through its rule's ufunc, np.power)
            continue
        u, rng = _ufunc(rule), _seeded(rule.name)
        a, b = binary_points(*rule.domain, rng, 12)
        a, b = _rule_table.numpy_operands(u, a, b)   # (the order as SciPy takes it)
        in_b = rule.differentiable == "b"   # the first operand a constant
        if in_b:
            def call(u, first, second):
                return lambda x: u(first, second(x))
            yield rule.name, "domain", u, b[:6], call(u, a[:6], lambda x: x)
            yield rule.name, "broadcast", u, b[:4], call(u, a[:3, None], lambda x: x)
            yield rule.name, "strided-view", u, b, call(u, a[:6].reshape(3, 2),
                                                       lambda x: x.reshape(3, 4)[:, ::2])
            continue
        yield rule.name, "domain", u, np.concatenate([a[:6], b[:6]]), \
            lambda x, u=u: u(x[:6], x[6:])
        yield rule.name, "broadcast", u, np.concatenate([a[:3], b[:4]]), \
            lambda x, u=u: u(x[:3, None], x[3:])
        yield rule.name, "scalar-and-array", u, np.concatenate([a[:1], b[:5]]), \
            lambda x, u=u: u(x[0], x[1:])
        yield rule.name, "constant-first", u, b[:6], lambda x, u=u, a=a[:6]: u(a, x)
        yield rule.name, "constant-second", u, a[:6], lambda x, u=u, b=b[:6]: u(x, b)
        first, second = _defined(u, *SPECIAL_PAIRS)
        if first.size:
            yield rule.name, "special-points", u, np.concatenate([first, second]), \
                lambda x, u=u, n=first.size: u(x[:n], x[n:])
        if u not in QUOTIENTS:   # (y // y is at a jump: its domains do not meet)
            yield rule.name, "same-operand", u, same_operand_points(*rule.domain, rng, 6), \
                lambda x, u=u: u(x, x)
        yield rule.name, "strided-and-reversed", u, np.concatenate([a, b[:6]]), \
            lambda x, u=u: u(x[:12].reshape(2, 6)[:, ::2], x[12:].reshape(2, 3)[::-1])
        yield rule.name, "empty", u, np.concatenate([a[:2], b[:2]]), \
            lambda x, u=u: u(x[:0].reshape(0, 1), x[2:])


RULE_CASES = list(_unary_cases()) + list(_binary_cases())


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("name, pattern, ufunc, x, f", RULE_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in RULE_CASES])
def test_rule(name, pattern, ufunc, x, f, dtype):
    check(f, x, dtype, rng=_seeded(name, pattern))


# -- the primitive table -----------------------------------------------------------------------

TABLE_CASES = [(name, pattern, f, x) for name, pattern, f, x in ARGUMENTS]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("name, pattern, f, x", TABLE_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in TABLE_CASES])
def test_table_function(name, pattern, f, x, dtype):
    check(f, x, dtype, rng=_seeded(name, pattern))


def test_every_table_function_has_arguments():
    missing = [f.__name__ for f, entry in TABLE.items()
               if entry.kind != "constant" and f not in covered()]
    missing += [name for name in NAMED if name not in covered()]
    assert not missing
