"""Derivatives where a function is not differentiable, or a partial is not finite, on every
engine.

Forward mode's conventions define them (cyad/_rules/table.py): a zero tangent times an
infinite partial contributes 0, so np.sqrt(x - x), np.std of equal numbers and
np.linalg.norm at 0 have derivative 0; ties of maximum, minimum and clip share; a sort
keeps the order of a stable one. The tape's reverse sweeps cannot see a zero tangent:
a call whose partials are not finite is answered by the dual engine
(cyad/_tape/engine.pyx), so every engine gives the same numbers at first and second
order, prepared or not.
"""
import numpy as np
import pytest
from scenarios import ENGINES

import cyad

RNG = np.random.default_rng(7)

# (id, f, x, the gradient): at points where a partial is infinite, NaN or a kink's
SPECIAL = [
    ("sqrt-of-zero-difference", lambda x: np.sum(np.sqrt(x - x)), np.ones(3), np.zeros(3)),
    ("std-of-equal-numbers", np.std, np.full(4, 3.5), np.zeros(4)),
    ("std-along-an-axis", lambda x: np.sum(np.std(x.reshape(2, 2), axis=0)),
     np.array([1.0, 2.0, 1.0, 2.0]), np.zeros(4)),
    ("var-of-equal-numbers", np.var, np.full(4, 3.5), np.zeros(4)),
    ("nanstd-of-equal-numbers", np.nanstd, np.full(3, -1.0), np.zeros(3)),
    ("norm-at-zero", np.linalg.norm, np.zeros(3), np.zeros(3)),
    ("norm-1-at-zero", lambda x: np.linalg.norm(x, 1), np.zeros(3), np.zeros(3)),
    ("frobenius-norm-at-zero", lambda x: np.linalg.norm(x.reshape(2, 2)), np.zeros(4),
     np.zeros(4)),
    ("vector-norm-3-at-zero", lambda x: np.linalg.vector_norm(x, ord=3), np.zeros(3),
     np.zeros(3)),
    ("sqrt-of-sum-of-squares", lambda x: np.sqrt(np.sum(x * x)), np.zeros(3), np.zeros(3)),
    ("abs-at-zero", lambda x: np.sum(np.abs(x) * x[::-1]), np.array([0.0, 1.0, 0.0]),
     np.array([0.0, 2.0, 0.0])),
    ("half-power-at-zero", lambda x: np.sum(x ** 0.5), np.array([0.0, 1.0, 4.0]),
     np.array([np.inf, 0.5, 0.25])),
    ("power-one-and-a-half-at-zero", lambda x: np.sum(x ** 1.5), np.array([0.0, 1.0]),
     np.array([0.0, 1.5])),
    ("cbrt-at-zero", lambda x: np.sum(np.cbrt(x)), np.array([0.0, 8.0]),
     np.array([np.inf, 1.0 / 12.0])),
    ("arcsin-at-one", lambda x: np.sum(np.arcsin(x)), np.array([1.0, -1.0, 0.0]),
     np.array([np.inf, np.inf, 1.0])),
    ("arccos-at-one", lambda x: np.sum(np.arccos(x)), np.array([1.0, -1.0, 0.0]),
     np.array([-np.inf, -np.inf, -1.0])),
    ("arctan2-at-the-origin", lambda x: np.sum(np.arctan2(x, x)), np.zeros(2),
     np.full(2, np.nan)),
    ("hypot-at-the-origin", lambda x: np.sum(np.hypot(x[:2], x[1:])), np.zeros(3), np.zeros(3)),
    ("maximum-ties", lambda x: np.sum(np.maximum(x, x[::-1])), np.array([1.0, 2.0, 1.0]),
     np.ones(3)),
    ("minimum-tie-with-a-constant", lambda x: np.sum(np.minimum(x, 1.0)),
     np.array([1.0, 2.0, 0.0]), np.array([0.5, 0.0, 1.0])),
    ("max-ties", np.max, np.array([2.0, 2.0, 1.0]), np.array([0.5, 0.5, 0.0])),
    ("clip-at-its-bounds", lambda x: np.sum(np.clip(x, 0.0, 1.0) ** 2),
     np.array([0.0, 1.0, 0.5]), np.array([0.0, 1.0, 1.0])),
    ("sort-ties", lambda x: np.sum(np.sort(x) * np.arange(3.0)), np.array([2.0, 1.0, 2.0]),
     np.array([1.0, 0.0, 2.0])),
    ("where-masking-log-of-zero", lambda x: np.sum(np.where(x > 0, np.log(x), 0.0)),
     np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 0.5])),
    # an infinite tangent meets a zero partial: NaN in forward mode, on every engine
    ("square-of-sqrt-at-zero", lambda x: np.sum(np.sqrt(x) ** 2), np.array([0.0, 1.0]),
     np.array([np.nan, 1.0])),
    ("difference-of-one-sqrt", lambda x: np.sum(np.sqrt(x) - np.sqrt(x)), np.zeros(2),
     np.full(2, np.nan)),
]


def _same(actual, expected):
    np.testing.assert_allclose(np.asarray(actual, np.float64), expected, rtol=1e-12, atol=1e-14,
                               equal_nan=True)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name, f, x, gradient", SPECIAL, ids=[c[0] for c in SPECIAL])
def test_first_and_second_order_at_special_points(name, f, x, gradient, engine):
    v = RNG.standard_normal(x.size)
    dual = [cyad.gradient(f, x, engine="dual"), cyad.hvp(f, x, v, engine="dual"),
            cyad.hessian(f, x, engine="dual"), cyad.jacobian(f, x, engine="dual")]
    _same(dual[0], gradient)
    _same(dual[3], gradient)
    h = dual[2]
    finite = np.all(np.isfinite(h))
    if finite:   # (a NaN row makes every product NaN)
        _same(dual[1], h @ v)
        _same(h, h.T)
    prep = cyad.prepare_gradient(f, x, engine=engine)
    results = [cyad.gradient(f, x, prep=prep), cyad.hvp(f, x, v, engine=engine),
               cyad.hessian(f, x, engine=engine), cyad.jacobian(f, x, engine=engine)]
    for actual, expected in zip(results, dual):
        _same(actual, expected)
    _same(cyad.gradient(f, x, prep=prep), gradient)   # prepared, called again
    w = np.array([-1.5])
    _same(cyad.pullback(lambda x: f(x)[None], x, w, engine=engine), w[0] * dual[0])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_issue_examples_on_the_tape(dtype):
    # the square root at 0 in reverse mode: 0 in directions that do not move
    assert cyad.gradient(lambda x: np.sqrt(x - x), dtype(1.0), engine="tape") == 0.0
    assert cyad.gradient(np.std, dtype(3.5), engine="tape") == 0.0
    np.testing.assert_array_equal(
        cyad.pullback(lambda x: np.std(x, axis=0), np.array([[0.3, -1.2, 0.8]], dtype),
                      np.ones(3, dtype), engine="tape"), np.zeros((1, 3)))
    # einsum with the broadcast axes in the middle and at the end, in reverse mode
    rs = np.random.RandomState(0)
    a, b = rs.randn(2, 2).astype(dtype), rs.randn(2, 2, 2).astype(dtype)
    f = lambda aa: np.sum(np.einsum("j...k,lj...->lk...", aa, b))  # noqa: E731
    expected = np.broadcast_to(b.sum(axis=(0, 2))[:, None], (2, 2))
    for engine in ENGINES:
        np.testing.assert_allclose(cyad.gradient(f, a, engine=engine), expected, rtol=1e-5)
    a3, b3 = rs.randn(3, 2).astype(dtype), rs.randn(2, 3, 4).astype(dtype)
    g = lambda aa: np.sum(np.einsum("jk...,lj...->lk...", aa, b3))  # noqa: E731
    for engine in ENGINES:
        np.testing.assert_allclose(cyad.gradient(g, a3, engine=engine),
                                   np.broadcast_to(b3.sum(axis=(0, 2))[:, None], (3, 2)),
                                   rtol=1e-5)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_reverse_call_with_partials_not_finite_is_answered_in_forward_mode():
    x = np.linspace(0.5, 2.0, 300)
    prep = cyad.prepare_gradient(np.std, x, engine="tape")
    np.testing.assert_allclose(cyad.gradient(np.std, x, prep=prep),
                               cyad.gradient(np.std, x, engine="dual"), rtol=1e-12)
    assert prep.engine_state.forward_calls == 0      # finite partials: the reverse sweep
    assert np.array_equal(cyad.gradient(np.std, np.full_like(x, 2.0), prep=prep),
                          np.zeros_like(x))
    assert prep.engine_state.forward_calls == 1
    cyad.gradient(np.std, x, prep=prep)
    assert prep.engine_state.forward_calls == 1      # the tape answers again
    hessian_prep = cyad.prepare_hessian(np.std, x[:20], engine="tape")
    constant = np.full(20, 2.0)
    np.testing.assert_array_equal(cyad.hessian(np.std, constant, prep=hessian_prep),
                                  cyad.hessian(np.std, constant, engine="dual"))
    assert hessian_prep.engine_state.forward_calls == 1


def test_a_prep_called_with_another_function_forgets_the_first():
    # a default tape handed f to the dual engine; another f gets its own tape
    def nesting(x):
        return np.sum(x ** 2) * cyad.derivative(lambda t: t * x[0], 1.0)

    x = np.ones(300)
    prep = cyad.prepare_gradient(nesting, x)
    cyad.gradient(nesting, x, prep=prep)
    np.testing.assert_array_equal(cyad.gradient(lambda x: np.sum(x ** 3), x, prep=prep),
                                  np.full(300, 3.0))


def test_the_replays_threads_raise_their_floating_point_flags_in_the_caller():
    # a log of zeros in one part of a split replay warns as NumPy does, whichever thread
    # ran that part (the caller or a helper: each call draws anew)
    x = np.ones(1 << 17)
    x[-5:] = 0.0
    before = cyad.set_threads(2)
    try:
        prep = cyad.prepare_pushforward(np.log, x, np.ones_like(x), engine="tape")
        for _ in range(20):
            with pytest.warns(RuntimeWarning, match="divide by zero encountered in log"):
                cyad.pushforward(np.log, x, np.ones_like(x), prep=prep)
    finally:
        cyad.set_threads(before)
