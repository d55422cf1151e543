"""The rule table (cyad/_rules/table.py): its entries, the code the build generates from it,
and the dual arrays' dispatch of its ufuncs.

The rules' values and derivatives are tested in test_rules.py (through the dual arrays) and
test_dual_elements.py (on C-level dual elements); both enumerate the table.
"""
import importlib.util
import pathlib

import numpy as np
import pytest

import cyad
from cyad._dual import array as _dual
from cyad._rules import table
from cyad._dual.functions import HANDLED_FUNCTIONS

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCE = ROOT / "cyad"
NAMED_DOMAINS = {table.NONZERO, table.INTEGER, table.NATURAL, table.BETWEEN_STEPS,
                 table.APART}
RULES = [(1, rule) for rule in table.UNARY_RULES] + [(2, rule) for rule in table.BINARY_RULES]


def generator():
    path = ROOT / "tools" / "generate_rules.py"
    spec = importlib.util.spec_from_file_location("generate_rules", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the entries -------------------------------------------------------------------------------

def test_names_are_distinct_identifiers():
    for rules in (table.UNARY_RULES, table.BINARY_RULES):
        names = [rule.name for rule in rules]
        assert len(set(names)) == len(names)
        assert all(name.isidentifier() and name == name.lower() for name in names)


@pytest.mark.parametrize("arity, rule", [pytest.param(*r, id=r[1].name) for r in RULES])
def test_ufuncs_are_numpy_ufuncs_of_the_arity_on_doubles(arity, rule):
    signature = "d" * arity + "->d"
    for name in rule.ufuncs:
        ufunc = table.resolve(name)
        assert isinstance(ufunc, np.ufunc)
        assert ufunc.nin == arity and ufunc.nout == 1
        # (or of an integer order in C longs: SciPy's private spherical Bessel ufuncs)
        assert signature in ufunc.types or (rule.differentiable == "b" and "ld->d" in ufunc.types)


def test_every_ufunc_belongs_to_one_rule():
    ufuncs = [table.resolve(name) for _, rule in RULES for name in rule.ufuncs]
    assert len(set(ufuncs)) == len(ufuncs)


@pytest.mark.parametrize("arity, rule", [pytest.param(*r, id=r[1].name) for r in RULES])
def test_domains_are_intervals_or_named_sets(arity, rule):
    domains = [rule.domain] if arity == 1 else list(rule.domain)
    assert len(domains) == arity
    for domain in domains:
        if isinstance(domain, str):
            assert domain in NAMED_DOMAINS
        else:
            low, high = domain
            assert low < high
    if arity == 2:
        assert rule.domain[0] != table.APART   # APART describes b relative to a


def test_variants_stand_for_a_rule_of_the_table():
    names = {rule.name for rule in table.BINARY_RULES}
    variants = [rule for rule in table.BINARY_RULES if rule.variant_of is not None]
    assert variants
    for rule in variants:
        assert rule.variant_of in names and rule.variant_of != rule.name
        assert rule.constant in ("a", "b")
        assert rule.ufuncs == ()
    # a rule with its own ufuncs has both operands variable
    assert all(rule.constant is None for rule in table.BINARY_RULES if rule.ufuncs)
    assert all(rule.differentiable in ("ab", "b") for rule in table.BINARY_RULES)
    assert all(rule.ufuncs for rule in table.UNARY_RULES)


# -- the generated code ------------------------------------------------------------------------

def test_the_installed_rule_code_is_generated_from_the_table():
    installed = pathlib.Path(cyad.get_include()) / "cyad" / "_rules/rules.pxd"
    template = (SOURCE / "_rules/rules.pxd.tp").read_text()
    assert installed.read_text() == generator().render(table, template)


def test_enumerators_follow_the_table():
    code = generator().render(table, (SOURCE / "_rules/rules.pxd.tp").read_text())
    for enum, rules in [("UnaryOp", table.UNARY_RULES), ("BinaryOp", table.BINARY_RULES)]:
        body = code.split(f"cdef enum {enum}:\n")[1].split("\n\n")[0]
        assert body.split() == [rule.name.upper() + "," for rule in rules]


def test_first_column_computes_what_an_expression_reads_first():
    first_column = generator().first_column
    # maximum's value picks the operand by its partial
    assert first_column({"v": "_pick(a, b, da)", "da": "_max_share(a, b)", "db": "1.0 - da"},
                        {"da", "db"}) == (
        "da[0] = _max_share(a, b); v = _pick(a, b, da[0]); db[0] = 1.0 - da[0]")
    # a partial written through its pointer by the value's helper
    assert first_column({"v": "_pow_const(a, b, &da)", "da": None, "db": "0.0"},
                        {"da", "db"}) == "v = _pow_const(a, b, da); db[0] = 0.0"
    # the table's order where nothing forces another; names that merely contain a
    # result's name are left alone
    assert first_column({"v": "sqrt(x)", "d": "0.5 / v + dd(x)"}, {"d"}) == (
        "v = sqrt(x); d[0] = 0.5 / v + dd(x)")


def test_first_column_refuses_what_it_cannot_order():
    first_column = generator().first_column
    with pytest.raises(ValueError, match="cycle"):
        first_column({"v": "da + 1.0", "da": "v", "db": "0.0"}, {"da", "db"})
    with pytest.raises(ValueError, match="computes"):
        first_column({"v": "a * b", "da": None, "db": "a"}, {"da", "db"})


# -- the dual arrays' dispatch -----------------------------------------------------------------

def test_the_dual_arrays_dispatch_the_ufuncs_of_the_table_to_their_rules():
    unary = {table.resolve(name): op for op, rule in enumerate(table.UNARY_RULES)
             for name in rule.ufuncs}
    binary = {table.resolve(name): op for op, rule in enumerate(table.BINARY_RULES)
              for name in rule.ufuncs}
    _dual._UNARY_UFUNCS.refresh()      # scipy.special's, imported by resolve
    _dual._BINARY_UFUNCS.refresh()
    assert _dual._UNARY_UFUNCS == unary
    # np.power and np.float_power pick their rule by the operand that is constant
    power = [rule.name for rule in table.BINARY_RULES].index("power")
    assert {np.power, np.float_power} == {u for u, op in binary.items() if op == power}
    assert _dual._BINARY_UFUNCS == {u: op for u, op in binary.items() if op != power}


def test_every_ufunc_of_the_table_runs_on_dual_arrays():
    seen = []

    def f(x):
        for _, rule in RULES:
            for name in rule.ufuncs:
                ufunc = table.resolve(name)
                # a constant first operand where the rule differentiates the second only
                operands = (2.0, x) if getattr(rule, "differentiable", "ab") == "b" else (x, x)
                with np.errstate(all="ignore"):   # arccosh(0.3) and the like
                    y = ufunc(*operands[2 - ufunc.nin:])
                assert isinstance(y, cyad.Dual), name
                seen.append(name)
        return x

    cyad.jacobian(f, np.array([0.3, 0.6]))
    assert len(seen) == sum(len(rule.ufuncs) for _, rule in RULES)


def _other_float_ufuncs():
    # NumPy's ufuncs on doubles that the rule table does not have, nor the NumPy functions
    # on duals (matmul, for one), nor the ones whose results carry no derivative
    in_table = {table.resolve(name) for _, rule in RULES for name in rule.ufuncs}
    ufuncs = {value for value in vars(np).values() if isinstance(value, np.ufunc)}
    return sorted((u for u in ufuncs
                   if u not in in_table and u not in HANDLED_FUNCTIONS
                   and u not in _dual._VALUE_UFUNCS and u.nout == 1 and u.nin in (1, 2)
                   and "d" * u.nin + "->d" in u.types), key=lambda u: u.__name__)


@pytest.mark.parametrize("ufunc", _other_float_ufuncs(), ids=lambda u: u.__name__)
def test_a_ufunc_outside_the_table_is_refused(ufunc):
    def f(x):
        return ufunc(*(x,) * ufunc.nin)

    with pytest.raises(TypeError, match="not supported on dual arrays"):
        cyad.jacobian(f, np.array([0.3, 0.6]))
