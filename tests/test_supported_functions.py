"""The supported-functions table of the documentation, generated from cyad's tables: every
table function is listed once, under a public path that reaches it."""
import importlib

import pytest

from cyad._rules import table as _rule_table
from cyad._dual.functions import HANDLED_FUNCTIONS
from cyad._primitives import TABLE
from cyad._reporting.supported import rule_ufunc_path, supported_functions

pytest.importorskip("scipy")
import scipy.linalg  # noqa: E402, F401
import scipy.special  # noqa: E402, F401

ROWS = supported_functions()


def _resolve(row):
    return getattr(importlib.import_module(row.module), row.name)


def test_rows_are_unique_and_public():
    names = [(row.module, row.name) for row in ROWS]
    assert len(names) == len(set(names))
    assert not [row for row in ROWS if row.name.startswith("_") or "._" in row.module]


@pytest.mark.parametrize("function", list(TABLE) + [f for f in HANDLED_FUNCTIONS
                                                    if f not in TABLE],
                         ids=lambda f: f.__name__)
def test_every_table_function_is_listed_under_a_path_that_reaches_it(function):
    found = [row for row in ROWS if _resolve(row) is function]
    assert len(found) == 1
    constant = function in TABLE and TABLE[function].kind == "constant"
    assert (found[0].orders == "") == constant


@pytest.mark.parametrize("rule", [r for r in _rule_table.UNARY_RULES + _rule_table.BINARY_RULES
                                  if not getattr(r, "variant_of", None)],
                         ids=lambda r: r.name)
def test_every_rule_ufunc_is_listed(rule):
    for name in rule.ufuncs:
        ufunc = _rule_table.resolve(name)
        rows = [row for row in ROWS if row.kind.startswith("elementwise")
                and (_resolve(row) is ufunc or (row.module, row.name) == rule_ufunc_path(name))]
        assert rows, name
        if getattr(rule, "differentiable", "ab") == "b":
            assert all("second argument only" in row.note for row in rows)


def test_scipy_functions_outside_numpy_dispatch_are_listed():
    from cyad._primitives.scipy_functions import SCIPY_FUNCTIONS
    for module, functions in SCIPY_FUNCTIONS.items():
        for name in functions:
            assert [row for row in ROWS if (row.module, row.name) == (module, name)
                    and row.orders], f"{module}.{name}"


def test_other_modules_ufuncs_of_the_primitive_table_are_listed_with_their_restriction():
    from cyad._primitives import NAMED
    for public, entry in NAMED.items():
        module, _, name = public.rpartition(".")
        (row,) = [row for row in ROWS if (row.module, row.name) == (module, name)]
        assert _resolve(row) is _rule_table.resolve(public)
        assert row.note == entry.note
    assert "x only" in next(row.note for row in ROWS if row.name == "betainc")
