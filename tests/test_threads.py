"""A prep serves one call at a time: a second call, from another thread or from inside the
function being differentiated, is refused with RuntimeError and the prep stays sound."""
import ctypes
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from reference_functions import (
    PYTHON,
    C,
    F_jacobian,
    N,
    g_gradient,
    g_hessian,
    h_derivative,
    h_second_derivative,
)

import cyad
import cyad.scipy

BUSY = "in use by another call"
WAIT = 60       # seconds an event may take to come: a guard against a hang, never reached


def points():
    return np.linspace(0.3, 1.4, N), np.linspace(-0.5, 0.9, N)


V = np.linspace(1.0, -0.5, N)

# family: (prepare, operator, f, x0, x1, extra arguments, the analytic result at x)
FAMILIES = {
    "pushforward": (cyad.prepare_pushforward, cyad.pushforward, PYTHON.F, *points(), (V,),
                    lambda x: F_jacobian(x) @ V),
    "pullback": (cyad.prepare_pullback, cyad.pullback, PYTHON.F, *points(), (V,),
                 lambda x: V @ F_jacobian(x)),
    "derivative": (cyad.prepare_derivative, cyad.derivative, PYTHON.h, 0.7, -0.4, (),
                   h_derivative),
    "gradient": (cyad.prepare_gradient, cyad.gradient, PYTHON.g, *points(), (), g_gradient),
    "jacobian": (cyad.prepare_jacobian, cyad.jacobian, PYTHON.F, *points(), (), F_jacobian),
    "second_derivative": (cyad.prepare_second_derivative, cyad.second_derivative, PYTHON.h,
                          0.7, -0.4, (), h_second_derivative),
    "hvp": (cyad.prepare_hvp, cyad.hvp, PYTHON.g, *points(), (V,),
            lambda x: g_hessian(x) @ V),
    "hessian": (cyad.prepare_hessian, cyad.hessian, PYTHON.g, *points(), (), g_hessian),
}


def race(work, arguments):
    """work(argument) in one thread per argument at once, switching threads as often as the
    interpreter can; every thread's outcomes, in one list."""
    outcomes = [[] for _ in arguments]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(a, outcomes[k]))
                   for k, a in enumerate(arguments)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    return [o for thread in outcomes for o in thread]


class Held:
    """A call made in another thread (`start`) that waits inside the function given by
    `wrap` until `join` lets it finish."""

    def __init__(self):
        self.inside, self.go_on = threading.Event(), threading.Event()
        self.result, self.error = None, None

    def wrap(self, f):
        def held(*args):
            self.inside.set()
            self.go_on.wait(WAIT)
            return f(*args)
        return held

    def start(self, fn):
        def run():
            try:
                self.result = fn()
            except BaseException as error:      # re-raised by join
                self.error = error
        self.thread = threading.Thread(target=run)
        self.thread.start()
        assert self.inside.wait(WAIT)

    def join(self):
        self.go_on.set()
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.result


# -- a second call while the first runs ------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_a_call_on_a_prep_in_use_by_another_thread_is_refused(family):
    prepare, operator, f, x0, x1, extra, expected = FAMILIES[family]
    prep = prepare(f, x0, *extra)
    held = Held()
    held.start(lambda: operator(held.wrap(f), x0, *extra, prep=prep))
    try:
        with pytest.raises(RuntimeError, match=BUSY):
            operator(f, x1, *extra, prep=prep)
    finally:
        first = held.join()
    assert_allclose(first, expected(x0), rtol=1e-13, atol=1e-14)
    assert_allclose(operator(f, x1, *extra, prep=prep), expected(x1), rtol=1e-13, atol=1e-14)


# -- two threads calling one prep as fast as they can ----------------------------------------

def test_two_threads_on_one_prep_get_exact_jacobians_or_errors():
    # f(x) = x * x[::-1] on integers: every entry of the Jacobian is exact
    def f(x):
        return x * x[::-1]

    n = 8
    xs = [np.arange(1.0, n + 1), 7.0 * np.arange(1.0, n + 1)]
    expected = [np.diag(x[::-1]) + np.diag(x)[:, ::-1] for x in xs]
    prep = cyad.prepare_jacobian(f, xs[0])

    def work(k, outcomes):
        for _ in range(2000):
            try:
                right = np.array_equal(cyad.jacobian(f, xs[k], prep=prep), expected[k])
                outcomes.append("right" if right else "wrong")
            except RuntimeError as error:
                outcomes.append("busy" if BUSY in str(error) else repr(error))

    outcomes = race(work, [0, 1])
    assert len(outcomes) == 4000
    assert set(outcomes) <= {"right", "busy"}       # never a wrong Jacobian
    assert "right" in outcomes


# -- the prep used again from inside f -------------------------------------------------------

def test_f_calling_a_c_function_with_the_prep_running_it():
    x0, x1 = points()

    def f(z):
        cyad.jacobian(C.F, x1, prep=prep)
        return PYTHON.F(z)

    prep = cyad.prepare_jacobian(f, x0)
    for _ in range(2):      # while the prep learns f's output, then once it knows it
        with pytest.raises(RuntimeError, match=BUSY):
            cyad.jacobian(f, x0, prep=prep)
        assert_allclose(cyad.jacobian(PYTHON.F, x1, prep=prep), F_jacobian(x1), rtol=1e-13)


@pytest.mark.parametrize("operator, prepare", [(cyad.hessian, cyad.prepare_hessian),
                                               (cyad.hvp, cyad.prepare_hvp)])
def test_f_calling_a_second_order_operator_with_the_prep_running_it(operator, prepare):
    x0, x1 = points()
    extra = (V,) if operator is cyad.hvp else ()

    def f(z):
        operator(PYTHON.g, x1, *extra, prep=prep)
        return PYTHON.g(z)

    prep = prepare(PYTHON.g, x0, *extra)
    operator(PYTHON.g, x0, *extra, prep=prep)
    with pytest.raises(RuntimeError, match=BUSY):
        operator(f, x0, *extra, prep=prep)
    expected = g_hessian(x1) @ V if extra else g_hessian(x1)
    assert_allclose(operator(PYTHON.g, x1, *extra, prep=prep), expected, rtol=1e-13)


def test_a_nested_call_given_the_prep_running_it():
    x0, x1 = points()

    def f(z):
        # a nested differentiation runs without a prep, and refuses one in use
        return cyad.gradient(lambda w: np.sum(w * z), z, prep=prep)

    prep = cyad.prepare_jacobian(f, x0)
    with pytest.raises(RuntimeError, match=BUSY):
        cyad.jacobian(f, x0, prep=prep)
    # f(z) is z (the gradient of w . z in w): its Jacobian is the identity
    other = cyad.prepare_gradient(PYTHON.g, x0)
    for given in [other, None]:     # an idle prep given to a nested call is ignored
        def f(z, given=given):
            return cyad.gradient(lambda w: np.sum(w * z), z, prep=given)

        assert_array_equal(cyad.jacobian(f, x1, prep=prep), np.eye(N))


def test_a_failed_call_leaves_nothing_behind():
    # a call that fails after f's first evaluation: the next call evaluates afresh
    x0, x1 = points()
    prep = cyad.prepare_jacobian(PYTHON.F, x0)
    with pytest.raises(ValueError, match="it must have shape"):
        cyad.jacobian(PYTHON.F, x0, prep=prep, out=np.empty(3))
    assert_allclose(cyad.jacobian(PYTHON.F, x1, prep=prep), F_jacobian(x1), rtol=1e-13)


# -- one prep per thread ---------------------------------------------------------------------

def test_one_prep_per_thread():
    local = threading.local()
    preps = []

    def jacobian(x):
        if not hasattr(local, "prep"):
            local.prep = cyad.prepare_jacobian(PYTHON.F, x)
            preps.append(local.prep)
        return cyad.jacobian(PYTHON.F, x, prep=local.prep)

    xs = np.random.default_rng(0).uniform(0.1, 1.5, (400, N))
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)     # threads take turns as often as the interpreter can
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            jacobians = list(pool.map(jacobian, xs))
    finally:
        sys.setswitchinterval(interval)
    assert 1 <= len(preps) <= 4
    for x, J in zip(xs, jacobians, strict=True):
        assert_allclose(J, F_jacobian(x), rtol=1e-13)


# -- cyad.scipy's callables ------------------------------------------------------------------

def _objective(x, a):
    return a * PYTHON.g(x)


def _residuals(x, a):
    return a * PYTHON.F(x)


def _rhs(t, y, a):
    return a * t * PYTHON.F(y)


def _rhs_in_place(dydt, t, y, a):
    dydt[...] = a * t * PYTHON.F(y)


# name: (callable from fun, its call with the extra argument a, the analytic result); on
# the dual engine, which evaluates fun in every call (the tests hold it there)
ADAPTERS = {
    "gradient": (lambda fun: cyad.scipy.gradient(fun, chunk=1, engine="dual"),
                 lambda c, x, a: c(x, a), lambda x, a: a * g_gradient(x)),
    "value_and_gradient": (lambda fun: cyad.scipy.value_and_gradient(fun, chunk=1, engine="dual"),
                           lambda c, x, a: c(x, a)[1], lambda x, a: a * g_gradient(x)),
    "hessian": (lambda fun: cyad.scipy.hessian(fun, chunk=1, engine="dual"),
                lambda c, x, a: c(x, a), lambda x, a: a * g_hessian(x)),
    "hessp": (lambda fun: cyad.scipy.hessp(fun, chunk=1, engine="dual"), lambda c, x, a: c(x, V, a),
              lambda x, a: a * g_hessian(x) @ V),
    "jacobian": (lambda fun: cyad.scipy.jacobian(fun, chunk=1), lambda c, x, a: c(x, a),
                 lambda x, a: a * F_jacobian(x)),
    "ode_jacobian": (lambda fun: cyad.scipy.ode_jacobian(fun, chunk=1),
                     lambda c, x, a: c(0.5, x, a), lambda x, a: 0.5 * a * F_jacobian(x)),
    "ode_jacobian in place": (lambda fun: cyad.scipy.ode_jacobian(fun, in_place=True, chunk=1),
                              lambda c, x, a: c(0.5, x, a),
                              lambda x, a: 0.5 * a * F_jacobian(x)),
}
FUNCTIONS = {"gradient": _objective, "value_and_gradient": _objective, "hessian": _objective,
             "hessp": _objective, "jacobian": _residuals, "ode_jacobian": _rhs,
             "ode_jacobian in place": _rhs_in_place}


@pytest.mark.parametrize("name", ADAPTERS)
def test_a_scipy_callable_in_use_by_another_thread_is_refused(name):
    # chunk=1: the held call evaluates fun again after the refused one tried to set its
    # own argument a
    make, call, expected = ADAPTERS[name]
    fun = FUNCTIONS[name]
    held = Held()
    holding = [False]

    def maybe_held(*args):
        return (held.wrap(fun) if holding[0] else fun)(*args)

    adapter = make(maybe_held)
    x0, x1 = points()
    call(adapter, x0, 2.0)          # prepared
    holding[0] = True
    held.start(lambda: call(adapter, x0, 2.0))
    holding[0] = False
    try:
        with pytest.raises(RuntimeError, match="cyad.scipy: .* is in use by another call"):
            call(adapter, x1, 3.0)
    finally:
        first = held.join()
    assert_allclose(first, expected(x0, 2.0), rtol=1e-13)
    assert_allclose(call(adapter, x1, 3.0), expected(x1, 3.0), rtol=1e-13)


def test_two_threads_on_one_scipy_callable_get_right_gradients_or_errors():
    adapter = cyad.scipy.gradient(_objective, chunk=2)
    x = np.linspace(0.3, 1.4, N)
    expected = {a: a * g_gradient(x) for a in (2.0, 3.0)}

    def work(a, outcomes):
        for _ in range(500):
            try:
                right = np.allclose(adapter(x, a), expected[a], rtol=1e-13, atol=0)
                outcomes.append("right" if right else "wrong")
            except RuntimeError as error:
                outcomes.append("busy" if BUSY in str(error) else repr(error))

    outcomes = race(work, list(expected))
    assert len(outcomes) == 1000
    assert set(outcomes) <= {"right", "busy"}
    assert "right" in outcomes


# -- the nogil entry points ------------------------------------------------------------------

def test_an_entry_point_called_from_inside_f_on_its_prep_reports_busy(c_hooks):
    x, y = np.arange(1.0, 4.0), np.zeros(3)
    statuses = []

    def f(y, x):
        statuses.append(c_hooks.jacobian_without_gil(prep, np.ones(3), np.zeros(3),
                                                     np.zeros((3, 3))))
        y[...] = x ** 2

    prep = cyad.prepare_jacobian(f, x, y=y)
    assert_array_equal(cyad.jacobian(f, x, y=y, prep=prep), np.diag(2.0 * x))
    assert statuses == [cyad._c_api.PREP_BUSY]
    with pytest.raises(RuntimeError, match=BUSY):
        prep.raise_for_status(statuses[0])


def test_an_entry_point_on_a_prep_another_thread_runs_without_the_gil(c_hooks):
    # `held` waits inside the C function, without the GIL, until flags[1] is set
    flags = (ctypes.c_int * 2)()
    f = c_hooks.held_function(ctypes.addressof(flags))
    x, y, J = np.arange(4.0), np.zeros(4), np.zeros((4, 4))
    prep = cyad.prepare_jacobian(f, x, y=y)
    statuses = []
    thread = threading.Thread(
        target=lambda: statuses.append(c_hooks.jacobian_without_gil(prep, x, y, J)))
    thread.start()
    try:
        for _ in range(WAIT * 1000):
            if flags[0]:
                break
            time.sleep(0.001)
        assert flags[0] == 1
        other = (np.ones(4), np.zeros(4), np.zeros((4, 4)))
        assert c_hooks.jacobian_without_gil(prep, *other) == cyad._c_api.PREP_BUSY
        with pytest.raises(RuntimeError, match=BUSY):
            cyad.jacobian(f, other[0], y=other[1], prep=prep)
        assert not other[1].any() and not other[2].any()
    finally:
        flags[1] = 1
        thread.join()
    assert statuses == [0]
    assert_array_equal(J, np.eye(4))
    assert_array_equal(y, x)
    assert c_hooks.jacobian_without_gil(prep, *other) == 0
    assert_array_equal(other[2], np.eye(4))
