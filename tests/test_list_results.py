"""f returning a list or tuple, and lists assigned into arrays: stacked as np.asarray stacks them.

The shared scenarios ("list result", "tuple result") cross every operator, engine and dtype;
here: the solve_ivp style through cyad.scipy, lists written into slices, nesting, and the
errors for lists NumPy would not stack either. References are analytic.
"""
import numpy as np
import pytest
from numpy.testing import assert_allclose

import cyad

scipy = pytest.importorskip("scipy")
import cyad.scipy as cs  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402

ENGINES = ["dual", "tape"]
Y = np.array([0.9, 3e-5, 0.1])


def robertson_list(t, y):
    # solve_ivp's usual style: a list of the three rates
    return [-0.04 * y[0] + 1e4 * y[1] * y[2],
            0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2,
            3e7 * y[1] ** 2]


def robertson_jacobian(y):
    return np.array([[-0.04, 1e4 * y[2], 1e4 * y[1]],
                     [0.04, -1e4 * y[2] - 6e7 * y[1], -1e4 * y[1]],
                     [0.0, 6e7 * y[1], 0.0]])


@pytest.mark.parametrize("engine", ENGINES)
def test_ode_jacobian_of_a_list_right_hand_side(engine):
    jac = cs.ode_jacobian(robertson_list, engine=engine)
    assert_allclose(jac(0.0, Y), robertson_jacobian(Y), rtol=1e-13)
    # and solve_ivp runs with it as with the exact Jacobian
    solved = [solve_ivp(robertson_list, (0.0, 40.0), [1.0, 0.0, 0.0], method="BDF", jac=j,
                        rtol=1e-6, atol=1e-10) for j in (jac, lambda t, y: robertson_jacobian(y))]
    assert solved[0].success and solved[1].success
    assert_allclose(solved[0].y[:, -1], solved[1].y[:, -1], rtol=1e-9, atol=1e-14)


def write_list_into_slices(y, x):
    y[...] = [x[0] * x[1], 2.0, np.sin(x[1])]
    y[1:] = [y[1] * x[0], [x[1] ** 2][0]]


def written_jacobian(x):
    a, b = x
    return np.array([[b, a], [2.0, 0.0], [0.0, 2 * b]])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lists_written_into_a_dual_or_traced_array(engine, dtype):
    x = np.array([0.7, -1.3], dtype)
    tol = 1e-13 if dtype == np.float64 else 1e-5
    value, jacobian = cyad.value_and_jacobian(write_list_into_slices, x, y=np.zeros(3, dtype),
                                              engine=engine)
    assert value.dtype == dtype and jacobian.dtype == dtype
    assert_allclose(value, [0.7 * -1.3, 1.4, 1.69], rtol=tol)
    assert_allclose(jacobian, written_jacobian(x.astype(np.float64)), rtol=tol, atol=tol)


@pytest.mark.parametrize("engine", ENGINES)
def test_nested_lists_and_a_derivative_inside(engine):
    # [[f, g], [h, k]] stacks to 2 x 2; the inner derivative returns a list too
    def f(x):
        inner = cyad.derivative(lambda t: [t * x[0], x[1] * t ** 2], 1.5)
        return [[inner[0], x[0] * x[1]], [inner[1], 3.0]]

    x = np.array([0.4, 2.0])
    expected = np.array([[[1.0, 0.0], [x[1], x[0]]], [[0.0, 3.0], [0.0, 0.0]]])
    assert_allclose(cyad.jacobian(f, x, engine=engine), expected, rtol=1e-14)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("f", "message"), [
    (lambda x: [x, x[0]], r"a list of parts shaped \[\(2,\), \(\)\]"),
    (lambda x: (x[0], [x[1], x[0]]), r"a tuple of parts shaped \[\(\), \(2,\)\]"),
    (lambda x: [], "an empty list"),
], ids=["ragged", "ragged nested", "empty"])
def test_lists_numpy_would_not_stack_are_refused(engine, f, message):
    with pytest.raises(ValueError, match=message):
        cyad.jacobian(f, np.array([1.0, 2.0]), engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_ragged_list_assigned_is_refused(engine):
    def f(y, x):
        y[...] = [x[0], x]

    with pytest.raises(ValueError, match="a value assigned to"):
        cyad.jacobian(f, np.array([1.0, 2.0]), y=np.zeros(2), engine=engine)
