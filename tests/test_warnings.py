"""Calls that work but not as well as they could say so, once, with the faster way:
a long call on the dual engine, workers= that cannot run in parallel."""
import warnings

import numpy as np
import pytest

import cyad
import cyad._reporting.warnings

X = np.linspace(0.1, 1.0, 40)


def _scalar(x):
    return np.sum(np.sin(x) * x)


def _vector(x):
    return np.sin(x) * x


@pytest.fixture
def every_call_is_long(monkeypatch):
    monkeypatch.setattr(cyad._reporting.warnings, "LONG_CALL_SECONDS", 0.0)


@pytest.mark.parametrize("operator, f, advice", [
    ("hessian", _scalar, r"engine='tape'.*cyad\.sparse_hessian.*cyad\.hvp"),
    ("gradient", _scalar, r"The tape \(engine='tape', the default of a prepared call\)"),
    ("jacobian", _vector, r"cyad\.sparse_jacobian.*engine='tape' computes it by rows"),
])
def test_a_long_call_on_the_dual_engine_warns_with_the_faster_way(operator, f, advice,
                                                                    every_call_is_long):
    prep = getattr(cyad, f"prepare_{operator}")(f, X, chunk=8, engine="dual")
    with pytest.warns(cyad.CyadWarning, match=rf"this {operator} evaluates f "
                      rf"{prep.evaluations} times per call on the dual engine, about .* s "
                      rf"\(.* ms per evaluation\)\. .*{advice}"):
        expected = getattr(cyad, operator)(f, X, prep=prep)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # once per prep: its first call
        np.testing.assert_array_equal(getattr(cyad, operator)(f, X, prep=prep), expected)


def test_a_call_of_one_evaluation_does_not_warn(every_call_is_long):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cyad.gradient(_scalar, X, engine="dual")       # one chunk of all directions


def test_a_short_call_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cyad.hessian(_scalar, X, chunk=4, engine="dual")


@pytest.mark.parametrize("operator, engine, reason", [
    ("jacobian", "dual", "a Python f on the dual engine holds the GIL"),
    ("hessian", "dual", "a Python f on the dual engine holds the GIL"),
    ("gradient", "tape", "on the tape it is one reverse sweep, nothing to split"),
])
def test_workers_that_cannot_run_in_parallel_warn(operator, engine, reason):
    f = _vector if operator == "jacobian" else _scalar
    with pytest.warns(cyad.CyadWarning, match=rf"workers=2 runs this {operator} serially: "
                      rf"{reason}"):
        prep = getattr(cyad, f"prepare_{operator}")(f, X, engine=engine, workers=2)
    np.testing.assert_allclose(getattr(cyad, operator)(f, X, prep=prep),
                               getattr(cyad, operator)(f, X, engine="dual"), rtol=1e-13)


def test_workers_that_run_in_parallel_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cyad.prepare_hessian(_scalar, X, engine="tape", workers=2)
        cyad.at_points(cyad.gradient, _scalar, np.stack([X, 2 * X]), workers=2)


def test_at_points_workers_on_the_dual_engine_warn():
    points = np.stack([X, 2 * X, 3 * X])
    with pytest.warns(cyad.CyadWarning, match="workers=2 runs this jacobian serially"):
        got = cyad.at_points(cyad.jacobian, _vector, points, engine="dual", workers=2)
    np.testing.assert_allclose(got, [cyad.jacobian(_vector, p) for p in points], rtol=1e-14)
