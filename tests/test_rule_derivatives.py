"""The rule table's first partials composed of the tables' operations (cyad._rules.derivatives)
give the numbers of the compiled columns, for every rule, on its test domain and at special
points; and, run on a tape's tracers, they differentiate to the rule table's second column."""
import numpy as np
import pytest
from rule_domains import binary_points, points

import cyad
from cyad._rules import table as _rule_table
from cyad._rules.arrays import binary_column, unary_column
from cyad._rules.derivatives import partials

pytest.importorskip("scipy")
import scipy.special  # noqa: E402, F401

SPECIAL = np.array([0.0, 1.0, -1.0, 0.5, -2.0, 2.5, 1e-3, -40.0, 40.0])
UNARY = [(op, rule) for op, rule in enumerate(_rule_table.UNARY_RULES)]
BINARY = [(op, rule) for op, rule in enumerate(_rule_table.BINARY_RULES)]


def _same(actual, expected):
    actual = np.broadcast_to(np.asarray(actual, np.float64), np.shape(expected))
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(np.isfinite(actual), finite)
    np.testing.assert_allclose(actual[finite], expected[finite], rtol=1e-12, atol=1e-14)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("op, rule", UNARY, ids=[r.name for _, r in UNARY])
def test_unary_compositions_are_the_column(op, rule):
    x = np.concatenate([points(rule.domain, np.random.default_rng(op), 20), SPECIAL])
    (d,) = partials("unary", op)
    with np.errstate(all="ignore"):
        value = unary_column("unary", op, x)
        _same(d(x, value), unary_column("unary_d", op, x))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("op, rule", BINARY, ids=[r.name for _, r in BINARY])
def test_binary_compositions_are_the_columns(op, rule):
    a, b = binary_points(*rule.domain, np.random.default_rng(op), 20)
    grid_a, grid_b = np.meshgrid(SPECIAL[:6], SPECIAL[:6])
    a, b = np.concatenate([a, grid_a.ravel()]), np.concatenate([b, grid_b.ravel()])
    da, db = partials("binary", op)
    with np.errstate(all="ignore"):
        value = binary_column("binary", op, a, b)
        first = binary_column("binary_da", op, a, b)
        if rule.differentiable == "ab":
            _same(da(a, b, value), first)
        _same(db(a, b, value), binary_column("binary_db", op, a, b))


@pytest.mark.parametrize("op, rule", [(op, rule) for op, rule in UNARY if rule.d2 != "0.0"],
                         ids=[r.name for _, r in UNARY if r.d2 != "0.0"])
def test_a_composed_derivative_differentiates_to_the_second_column(op, rule):
    x = points(rule.domain, np.random.default_rng(op), 6)
    (d,) = partials("unary", op)
    ufunc = _rule_table.resolve(rule.ufuncs[0])
    second = cyad.jacobian(lambda x: d(x, ufunc(x)), x, engine="tape")
    np.testing.assert_allclose(np.diag(second), unary_column("unary_d2", op, x), rtol=1e-10,
                               atol=1e-12)
