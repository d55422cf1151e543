"""cyad embedded in Cython code: the example project, the nogil entry points, threads."""
import ctypes
import threading

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import cyad

TANGENT_COUNTS = [1, 2, 3, 8, 16, 17]   # lane widths 1, 2, 4, 8, 16 and 24 (3 blocks of 8)


def rosenbrock(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_gradient(x):
    g = np.zeros_like(x)
    g[:-1] = -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g


def robertson(u):
    return np.array([-0.04 * u[0] + 1e4 * u[1] * u[2],
                     0.04 * u[0] - 1e4 * u[1] * u[2] - 3e7 * u[1] ** 2,
                     3e7 * u[1] ** 2])


def robertson_jacobian(u):
    return np.array([[-0.04, 1e4 * u[2], 1e4 * u[1]],
                     [0.04, -1e4 * u[2] - 6e7 * u[1], -1e4 * u[1]],
                     [0.0, 6e7 * u[1], 0.0]])


STATES = np.array([[1.0, 0.0, 0.0], [0.8, 3e-5, 0.2], [0.1, 1e-6, 0.9]])


# -- functions written once on dual elements, at every lane width --------------------------------

def test_rosenbrock_at_the_issue_point(example):
    x = np.array([0.1, 0.2, 0.3])
    value, grad = cyad.value_and_gradient(example.rosenbrock_function(), x)
    assert value == pytest.approx(rosenbrock(x), rel=1e-15)
    assert_allclose(grad, [-9.4, 15.6, 52.0], rtol=1e-14)


@pytest.mark.parametrize("count", TANGENT_COUNTS)
def test_rosenbrock_every_width(example, count):
    x = np.random.default_rng(count).uniform(-1.0, 1.5, 20)
    tangents = tuple(np.random.default_rng(count + 1).standard_normal((count, 20)))
    results = cyad.pushforward(example.rosenbrock_function(), x, tangents, chunk=count)
    gradient = rosenbrock_gradient(x)
    for t, r in zip(tangents, results):
        assert abs(r - gradient @ t) <= 1e-13 * (np.abs(gradient) @ np.abs(t))


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-13), (np.float32, 2e-6)])
@pytest.mark.parametrize("count", TANGENT_COUNTS)
def test_robertson_every_width(example, count, dtype, rtol):
    u = STATES[1].astype(dtype)
    tangents = tuple(np.random.default_rng(count).standard_normal((count, 3)).astype(dtype))
    y = np.zeros(3, dtype)
    value, results = cyad.value_and_pushforward(example.robertson_function(), u, tangents, y=y,
                                                chunk=count)
    u64 = u.astype(np.float64)
    jac = robertson_jacobian(u64)
    assert_allclose(value, robertson(u64), rtol=rtol, atol=rtol * 1e-2)
    for t, r in zip(tangents, results):
        t = t.astype(np.float64)
        assert r.dtype == dtype
        # errors bounded by rtol times the sum of the magnitudes of the terms
        assert np.all(np.abs(r - jac @ t) <= rtol * (np.abs(jac) @ np.abs(t)))


# -- the example's nogil loops -----------------------------------------------------------------

@pytest.mark.parametrize("chunk", [None, 1, 2])
def test_rosenbrock_gradients_without_the_gil(example, chunk):
    points = np.random.default_rng(0).uniform(-1.0, 1.5, (5, 11))
    gradients = example.rosenbrock_gradients(points, chunk=chunk)
    assert_allclose(gradients, [rosenbrock_gradient(p) for p in points], rtol=1e-13)


def test_robertson_jacobians_without_the_gil(example):
    assert_allclose(example.robertson_jacobians(STATES), [robertson_jacobian(u) for u in STATES],
                    rtol=1e-15)


def test_a_cdef_function_from_pyx_capi(example):
    f = cyad.FunctionWrapper(example.__pyx_capi__["robertson"], out_shape=3)
    assert f.kind == "capsule" and f.supports_float64 and not f.supports_float32
    for u in STATES:
        assert_allclose(cyad.jacobian(f, u), robertson_jacobian(u), rtol=1e-15)
    both = cyad.FunctionWrapper(example.__pyx_capi__["robertson"],
                                example.__pyx_capi__["robertson_f32"], out_shape=3)
    assert both.supports_float32
    assert cyad.jacobian(both, STATES[1].astype(np.float32)).dtype == np.float32


def test_the_copy(example):
    x = np.linspace(0.0, 1.0, 5)
    y = np.zeros(5)
    assert_array_equal(cyad.jacobian(example.copy_function(), x, y=y), np.eye(5))
    assert_array_equal(y, x)
    with pytest.raises(cyad.FunctionError) as error:
        cyad.pushforward(example.copy_function(), x, x, y=np.zeros(4))
    assert error.value.status == 1


# -- the entry points: statuses and threads ---------------------------------------------------------

def test_two_threads_run_at_the_same_time_without_the_gil(c_hooks):
    # `together` returns 1 unless another call is inside it at the same time
    counter = ctypes.c_int(0)
    f = c_hooks.together_function(ctypes.addressof(counter))
    x = [np.arange(4.0), np.arange(4.0) + 10.0]
    y = [np.zeros(4), np.zeros(4)]
    jacobians = [np.zeros((4, 4)), np.zeros((4, 4))]
    preps = [cyad.prepare_jacobian(f, x[k], y=y[k]) for k in range(2)]
    statuses = [None, None]

    def work(k):
        statuses[k] = c_hooks.jacobian_without_gil(preps[k], x[k], y[k], jacobians[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [0, 0]
    for k in range(2):
        assert_array_equal(jacobians[k], np.eye(4))
        assert_array_equal(y[k], x[k])


def test_a_python_callable_through_the_nogil_entry_point(c_hooks):
    x, y, jacobian = np.arange(3.0), np.zeros(3), np.zeros((3, 3))

    def f(y, x):
        y[...] = x**2

    prep = cyad.prepare_jacobian(f, x, y=y)
    assert c_hooks.jacobian_without_gil(prep, x, y, jacobian) == 0
    assert_array_equal(jacobian, np.diag(2 * x))

    def fails(y, x):
        raise LookupError("inside f")

    prep = cyad.prepare_jacobian(fails, x, y=y)
    status = c_hooks.jacobian_without_gil(prep, x, y, jacobian)
    assert status == cyad._core.PYTHON_ERROR
    with pytest.raises(LookupError, match="inside f"):
        prep.raise_for_status(status)


def test_an_entry_point_of_another_dtype_is_refused(c_hooks, example):
    prep = cyad.prepare_gradient(example.rosenbrock_function(), np.ones(3))
    status = c_hooks.gradient_without_gil_float32(prep, np.ones(3, np.float32))
    assert status == cyad._core.WRONG_CALL
    with pytest.raises(ValueError, match="another dtype or operator"):
        prep.raise_for_status(status)


def test_prep_state_needs_a_known_output(c_hooks):
    prep = cyad.prepare_jacobian(lambda x: x * 2.0, np.ones(3))
    with pytest.raises(ValueError, match="call the operator once"):
        c_hooks.jacobian_without_gil(prep, np.ones(3), np.zeros(3), np.zeros((3, 3)))
