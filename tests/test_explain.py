"""What a prep says of itself: the engine that answers, why, and what a call does."""
import numpy as np
import pytest

import cyad

X = np.linspace(-0.8, 1.3, 300)


def _sum_of_squares(x):
    return np.sum(x ** 2)


def test_a_default_tape_says_it_was_chosen_and_replays():
    prep = cyad.prepare_gradient(_sum_of_squares, X)
    assert prep.engine == "tape" and prep.why_engine.startswith("chosen by default")
    text = str(cyad.explain(prep))
    assert "not yet called: the first call traces f once" in text
    cyad.gradient(_sum_of_squares, X, prep=prep)
    text = str(cyad.explain(prep))
    assert "a call: one reverse sweep of its tape per call, f not evaluated" in text
    assert "instructions of f's values" in text and "f traced 1 time(s)" in text
    assert "engine 'tape' (chosen by default" in repr(prep)
    assert "one reverse sweep" in repr(prep)


def test_a_named_engine_says_so_and_names_the_faster_one():
    prep = cyad.prepare_hessian(_sum_of_squares, X, engine="dual")
    assert (prep.engine, prep.why_engine) == ("dual", "named with engine=")
    text = str(cyad.explain(prep))
    assert f"{prep.evaluations} evaluation(s) of f per call" in text
    assert "engine='tape' (the default of a prepared call) would replay a tape" in text
    assert "engine 'dual' (named with engine=)" in repr(prep)


@pytest.mark.parametrize("operator", ["jacobian", "pushforward"])
def test_a_forward_operator_says_why_the_tape(operator):
    extra = (np.ones_like(X),) if operator == "pushforward" else ()
    prep = getattr(cyad, f"prepare_{operator}")(np.sin, X, *extra)
    assert prep.engine == "tape"
    assert prep.why_engine == (f"chosen by default: a prepared {operator} of a Python f "
                               "replays a tape (forward mode) without evaluating f")


def test_a_tape_that_handed_f_over_says_dual_and_why():
    @cyad.custom_derivative
    def scaled(w):
        return 2.0 * w

    scaled.defjvp(lambda primals, tangents: (2.0 * primals[0], 2.0 * tangents[0]))

    def f(w):
        return np.sum(np.sin(scaled(w)))

    prep = cyad.prepare_gradient(f, X)
    assert prep.engine == "tape"
    np.testing.assert_allclose(cyad.gradient(f, X, prep=prep), 2.0 * np.cos(2.0 * X),
                               rtol=1e-13)
    assert prep.engine == "dual" and prep.engine_made == "tape"
    assert prep.why_engine.startswith("the tape chosen by default handed f over: ")
    assert "no VJP rule" in prep.why_engine
    assert "evaluation(s) of f per call" in prep.work
    assert "engine 'dual': the tape chosen by default handed f over" in str(cyad.explain(prep))
    # the call's engine= is checked against the engine the prep was made on
    cyad.gradient(f, X, prep=prep, engine="tape")


def test_explain_takes_a_prep():
    with pytest.raises(TypeError, match="cyad.explain takes a prep"):
        cyad.explain(_sum_of_squares)
