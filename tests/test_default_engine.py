"""The engine cyad chooses when none is named: the tape for a prepared call of a Python f
(and a gradient, hvp and Hessian without prep= from a size of x on), the dual engine
otherwise; and a default tape never answers where the dual engine
would answer differently (Python state f reads, f it cannot trace, control flow it cannot
follow)."""
import numpy as np
import pytest
from numpy.testing import assert_allclose
from rosenbrock import rosenbrock, rosenbrock_gradient, rosenbrock_hessian

import cyad

X = np.linspace(-0.8, 1.3, 7)
V = np.cos(np.arange(7.0))


@pytest.mark.parametrize("prepare, args, engine", [
    (cyad.prepare_gradient, (X,), "tape"),
    (cyad.prepare_hvp, (X, V), "tape"),
    (cyad.prepare_hessian, (X,), "tape"),
    (cyad.prepare_jacobian, (X,), "tape"),
    (cyad.prepare_pushforward, (X, V), "tape"),
    (cyad.prepare_value_and_pushforward, (X, V), "tape"),
])
def test_the_default_engine_by_operator(prepare, args, engine):
    assert prepare(rosenbrock, *args).engine == engine


def test_a_sparse_jacobians_products_default_to_the_tape():
    def broyden(x):
        f = (3 - 2 * x) * x + 1
        f[1:] -= x[:-1]
        f[:-1] -= 2 * x[1:]
        return f

    prep = cyad.prepare_sparse_jacobian(broyden, X)
    assert prep._first.prep.engine == "tape"
    J = cyad.sparse_jacobian(broyden, X, prep=prep).toarray()
    assert_allclose(J, np.diag(3 - 4 * X) - np.eye(7, k=-1) - 2 * np.eye(7, k=1), rtol=1e-15)


@pytest.mark.parametrize("prepare", [cyad.prepare_derivative, cyad.prepare_second_derivative])
def test_a_prepared_derivative_of_a_scalar_defaults_to_the_tape(prepare):
    def f(t):
        return np.sin(t) * np.exp(-t * t) + t ** 3

    assert prepare(f, 0.3).engine == "tape"


@pytest.mark.parametrize("family", ["pushforward", "jacobian", "derivative",
                                    "second_derivative"])
def test_a_forward_call_without_prep_defaults_to_the_dual_engine(family):
    # recording f for one call costs more than evaluating it on dual numbers
    engine, reason = cyad._engines.default_engine(family, False, True, 10**6, True)
    assert engine == "dual" and "without prep=" in reason
    assert cyad._engines.default_engine(family, False, True, 10, False)[0] == "tape"


def test_a_c_function_defaults_to_the_dual_engine():
    f = cyad._reporting.profile.copy_function()
    x = np.arange(3.0)
    assert cyad.prepare_jacobian(f, x, y=np.zeros(3)).engine == "dual"


def test_default_preps_answer_right():
    g, h = np.empty(7), np.empty((7, 7))
    prep = cyad.prepare_gradient(rosenbrock, X)
    for point in (X, X[::-1].copy(), X * 0.5):
        assert_allclose(cyad.gradient(rosenbrock, point, prep=prep, out=g),
                        rosenbrock_gradient(point), rtol=1e-13)
    prep = cyad.prepare_hessian(rosenbrock, X)
    assert_allclose(cyad.hessian(rosenbrock, X, prep=prep, out=h), rosenbrock_hessian(X),
                    rtol=1e-13)


SCALE = 2.0


def _scaled(x):
    return SCALE * np.sum(x ** 2)


def test_a_global_number_changed_between_calls_is_seen():
    global SCALE
    prep = cyad.prepare_gradient(_scaled, X)
    try:
        assert_allclose(cyad.gradient(_scaled, X, prep=prep), 4.0 * X, rtol=1e-14)
        SCALE = 3.0
        assert_allclose(cyad.gradient(_scaled, X, prep=prep), 6.0 * X, rtol=1e-14)
    finally:
        SCALE = 2.0
    assert prep.engine_state.records == 1   # data changed, not control flow: not counted


def test_closure_and_attribute_state_changed_between_calls_is_seen():
    class Holder:
        __slots__ = ("args",)

    holder = Holder()
    holder.args = (2.0,)

    def fun(x, a):
        return a * np.sum(x ** 3)

    def with_args(x):
        return fun(x, *holder.args)

    prep = cyad.prepare_hvp(with_args, X, V)
    assert_allclose(cyad.hvp(with_args, X, V, prep=prep), 2.0 * 6.0 * X * V, rtol=1e-13)
    holder.args = (5.0,)
    assert_allclose(cyad.hvp(with_args, X, V, prep=prep), 5.0 * 6.0 * X * V, rtol=1e-13)

    class Model:
        def __init__(self):
            self.weight = 1.5

        def loss(self, x):
            return self.weight * np.sum(np.sin(x))

    model = Model()
    prep = cyad.prepare_gradient(model.loss, X)
    assert_allclose(cyad.gradient(model.loss, X, prep=prep), 1.5 * np.cos(X), rtol=1e-14)
    model.weight = -4.0
    assert_allclose(cyad.gradient(model.loss, X, prep=prep), -4.0 * np.cos(X), rtol=1e-14)


def test_an_array_changed_in_place_between_calls_is_seen():
    a = np.arange(1.0, 8.0)
    prep = cyad.prepare_gradient(lambda x: np.sum(a * x ** 2), X)
    assert_allclose(cyad.gradient(lambda x: np.sum(a * x ** 2), X, prep=prep), 2 * a * X)
    a[:] = -1.0
    assert_allclose(cyad.gradient(lambda x: np.sum(a * x ** 2), X, prep=prep), -2 * X)


def test_an_f_a_tape_cannot_trace_is_answered_by_the_dual_engine():
    # a custom function with a JVP rule alone: the dual engine's forward mode takes it, the
    # tape's reverse mode has no rule for it
    @cyad.custom_derivative
    def scaled(w):
        return 2.0 * w

    scaled.defjvp(lambda primals, tangents: (2.0 * primals[0], 2.0 * tangents[0]))

    def f(w):
        return np.sum(np.sin(scaled(w)))

    prep = cyad.prepare_gradient(f, X)
    expected = 2.0 * np.cos(2.0 * X)
    for _ in range(2):
        assert_allclose(cyad.gradient(f, X, prep=prep), expected, rtol=1e-13)
    assert prep.engine_state.delegated
    with pytest.raises(TypeError):
        cyad.gradient(f, X, engine="tape")


def test_a_derivative_inside_f_is_recorded_on_the_default_tape():
    def nested(w):
        return cyad.derivative(lambda t: np.sum(np.sin(w * t)), 1.0)

    prep = cyad.prepare_gradient(nested, X)
    expected = np.cos(X) - X * np.sin(X)
    for _ in range(2):
        assert_allclose(cyad.gradient(nested, X, prep=prep), expected, rtol=1e-13)
    assert not prep.engine_state.delegated and prep.engine_state.records == 1


def _branchy(w):
    total = 0.0
    for i in range(w.size):
        total = total + (w[i] ** 2 if w[i] > 0 else -w[i] ** 3)
    return total


def test_control_flow_a_tape_cannot_follow_is_handed_to_the_dual_engine():
    prep = cyad.prepare_gradient(_branchy, X)
    explicit = cyad.prepare_gradient(_branchy, X, engine="tape")
    for k in range(cyad._tape.engine.RECORD_LIMIT + 3):
        point = X * (-1.0) ** k + 0.01 * k
        expected = np.where(point > 0, 2 * point, -3 * point ** 2)
        assert_allclose(cyad.gradient(_branchy, point, prep=prep), expected, rtol=1e-13)
    with pytest.raises(RuntimeError, match="use engine='dual'"):
        for k in range(cyad._tape.engine.RECORD_LIMIT + 3):
            cyad.gradient(_branchy, X * (-1.0) ** k + 0.01 * k, prep=explicit)
    assert_allclose(cyad.gradient(_branchy, X, prep=prep),
                    np.where(X > 0, 2 * X, -3 * X ** 2), rtol=1e-13)


def test_a_default_prepared_call_allocates_nothing(allocations_per_call):
    prep = cyad.prepare_hvp(rosenbrock, X, V)
    out = np.empty(7)
    assert allocations_per_call(lambda: cyad.hvp(rosenbrock, X, V, prep=prep, out=out)) == 0
