"""The rules of the tape's instruction kinds (cyad/_tape/instructions.py) against their table
(cyad/_tape/kind_table.py): every row has its rules, and every rules object answers what
the tape engine asks of a kind. What the rules compute is tested through the engine
(tests/test_tape_replay.py, tests/test_sparsity.py, tests/test_tape.py, ...).
"""
import numpy as np
import pytest

from cyad._tape import instructions, kind_table
from cyad._tape.program import Instr, Tape, evaluate

pytestmark = pytest.mark.xdist_group("test_instructions")

KINDS = [kind.name for kind in kind_table.KINDS]
# the kinds whose derivative rules the transformations call (a guard has no output)
DIFFERENTIATED = [kind for kind in KINDS if kind != "guard"]
METHODS = ["evaluate", "numpy_values", "jvp", "vjp", "dependencies", "second_order", "lower"]


def test_every_row_has_its_rules_and_every_rules_object_a_row():
    assert set(instructions.RULES) == set(kind_table.BY_NAME)


def test_each_kind_is_served_by_one_rules_object():
    served = [kind for rules in {id(r): r for r in instructions.RULES.values()}.values()
              for kind in rules.kinds]
    assert sorted(served) == sorted(KINDS)
    for kind, rules in instructions.RULES.items():
        assert kind in rules.kinds


@pytest.mark.parametrize("kind", KINDS)
def test_rules_answer_every_question(kind):
    rules = instructions.RULES[kind]
    assert isinstance(rules, instructions.Rules)
    for method in METHODS:
        assert callable(getattr(rules, method))
    assert isinstance(rules.numpy_warns, bool)
    # its own meaning and sparsity, not the base class's
    for method in ("evaluate", "dependencies"):
        assert getattr(type(rules), method) is not getattr(instructions.Rules, method), method


@pytest.mark.parametrize("kind", DIFFERENTIATED)
def test_differentiated_kinds_have_derivative_rules(kind):
    rules = type(instructions.RULES[kind])
    for method in ("jvp", "vjp"):
        assert getattr(rules, method) is not getattr(instructions.Rules, method), method


def test_the_kinds_numpy_warns_of():
    assert {kind for kind, rules in instructions.RULES.items() if rules.numpy_warns} == \
        {"unary", "binary", "sum_inner", "matmul"}


def test_index_kinds_say_which_side_is_indexed():
    for kind in KINDS:
        if "index" in kind_table.BY_NAME[kind].params:
            assert isinstance(instructions.RULES[kind].scatters, bool)
    assert not instructions.RULES["gather"].scatters
    assert instructions.RULES["scatter_add"].scatters


def _fail(message):
    return ValueError(message)


def test_lower_gives_the_params_of_sum_inner_and_matmul():
    tape = Tape(np.float64)
    x = tape.input((2, 3))
    sums = tape.emit("sum_inner", (x,), (2,), k=3)
    rules = instructions.RULES["sum_inner"]
    assert rules.lower(tape.instrs[-1], (x,), sums, _fail) == (3,)
    wrong = Instr("sum_inner", (x,), (sums,), {"k": 2})
    with pytest.raises(ValueError, match="6 elements are not 2 sums of 2"):
        rules.lower(wrong, (x,), sums, _fail)

    a, b = tape.input((4, 2, 3)), tape.input((3, 5))
    product = tape.emit("matmul", (a, b), (4, 2, 5), m=2, k=3, n=5)
    rules = instructions.RULES["matmul"]
    assert tuple(rules.lower(tape.instrs[-1], (a, b), product, _fail)) == (2, 3, 5)
    with pytest.raises(ValueError, match="a matrix of"):
        rules.lower(Instr("matmul", (a, b), (product,), {"m": -1, "k": 3, "n": 5}), (a, b),
                    product, _fail)
    with pytest.raises(ValueError, match="are not"):
        rules.lower(Instr("matmul", (a, b), (product,), {"m": 2, "k": 2, "n": 5}), (a, b),
                    product, _fail)


@pytest.mark.parametrize("kind", [kind for kind in KINDS if kind not in ("sum_inner", "matmul")])
def test_lower_gives_no_params_for_kinds_their_row_describes(kind):
    tape = Tape(np.float64)
    x = tape.input((3,))
    out = tape.var((3,))
    instr = Instr(kind, (x,), (out,), {})
    assert tuple(instructions.RULES[kind].lower(instr, (x,), out, _fail)) == ()


def test_evaluate_dispatches_to_the_rules():
    tape = Tape(np.float64)
    x = tape.input((2, 3))
    tape.emit("sum_inner", (x,), (2,), k=3)
    value = np.arange(6.0).reshape(2, 3)
    (out,) = evaluate(tape.instrs[-1], [value])
    np.testing.assert_array_equal(out, [3.0, 12.0])
    (same,) = instructions.RULES["sum_inner"].evaluate(tape.instrs[-1], [value])
    np.testing.assert_array_equal(same, out)


def test_evaluate_refuses_an_unknown_kind():
    with pytest.raises(ValueError, match="unknown instruction kind 'nothing'"):
        evaluate(Instr("nothing", (), (), {}), [])
