"""cyad embedded in Cython code: the example project, the nogil entry points, threads."""
import ctypes
import pathlib
import re
import threading

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from reference_functions import C, N, PYTHON
from rosenbrock import rosenbrock, rosenbrock_gradient, rosenbrock_hessian

import cyad

TANGENT_COUNTS = [1, 2, 3, 8, 16, 17]   # lane widths 1, 2, 4, 8, 16 and 24 (3 blocks of 8)


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
    for t, r in zip(tangents, results, strict=True):
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
    for t, r in zip(tangents, results, strict=True):
        t = t.astype(np.float64)
        assert r.dtype == dtype
        # errors bounded by rtol times the sum of the magnitudes of the terms
        assert np.all(np.abs(r - jac @ t) <= rtol * (np.abs(jac) @ np.abs(t)))


# -- second order: the same generic body on nested-dual elements ---------------------------------

INNER_WIDTHS = [1, 2, 4, 8, 16, 24]
ISSUE_POINT = np.array([0.1, 0.2, 0.3])
ISSUE_HESSIAN = np.array([[-66.0, -40.0, 0.0], [-40.0, 130.0, -80.0], [0.0, -80.0, 200.0]])


def second_order_row(inner):
    """The lanes of a row with one outer and `inner` inner directions."""
    lanes = 1 + 2 * inner
    return -(-lanes // 8) * 8 if lanes > 16 else 1 << (lanes - 1).bit_length()


def second_order_call(c_hooks, f, x, u, directions, inner):
    """f's second-order function at x, outer direction u, the given inner directions (at
    most `inner`, the rest zero) and zero second-order seeds: (value, a, b, c)."""
    n, row, count = x.size, second_order_row(inner), len(directions)
    dx = np.zeros((n, row), x.dtype)
    dx[:, 0] = u
    dx[:, 1:1 + count] = np.transpose(directions)
    y, dy = np.zeros(1, x.dtype), np.zeros((1, row), x.dtype)
    assert c_hooks.call_second(f, x, dx, y, dy, 1, inner) == 0
    assert not dy[0, 1 + 2 * inner:].any()   # the padding stays zero
    return y[0], dy[0, 0], dy[0, 1:1 + count], dy[0, 1 + inner:1 + inner + count]


def issue_hessian(c_hooks, f, inner, dtype):
    """Rosenbrock's Hessian at the issue point, column k from outer direction e_k and the
    inner directions e_0, e_1, e_2 in as many calls as `inner` lanes need."""
    x, eye = ISSUE_POINT.astype(dtype), np.eye(3)
    gradient = np.array([-9.4, 15.6, 52.0])
    rtol = 1e-6 if dtype == np.float32 else 1e-14
    hessian = np.zeros((3, 3))
    for k in range(3):
        for first in range(0, 3, inner):
            value, a, b, c = second_order_call(c_hooks, f, x, eye[k], eye[first:first + inner],
                                               inner)
            hessian[first:first + inner, k] = c
            assert value == pytest.approx(rosenbrock(ISSUE_POINT), rel=rtol)
            assert a == pytest.approx(gradient[k], rel=rtol)
            assert_allclose(b, gradient[first:first + inner], rtol=rtol)
    return hessian


def both_orders(example):
    """Rosenbrock's first- and second-order functions from the module's __pyx_capi__."""
    return cyad.FunctionWrapper(example.__pyx_capi__["rosenbrock"],
                                example.__pyx_capi__["rosenbrock_second"])


def test_rosenbrock_function_carries_both_orders(example):
    for f in [example.rosenbrock_function(), both_orders(example)]:
        assert f.supports_float64 and f.supports_second_order_float64
        assert not (f.supports_float32 or f.supports_second_order_float32)
    f32 = cyad.FunctionWrapper(example.__pyx_capi__["rosenbrock_second_f32"])
    assert f32.supports_second_order_float32 and not f32.supports_second_order_float64


@pytest.mark.parametrize("inner", INNER_WIDTHS)
def test_rosenbrock_hessian_at_the_issue_point(c_hooks, example, inner):
    for f in [example.rosenbrock_function(), both_orders(example)]:
        assert_allclose(issue_hessian(c_hooks, f, inner, np.float64), ISSUE_HESSIAN,
                        rtol=1e-14, atol=1e-13)


@pytest.mark.parametrize("inner", INNER_WIDTHS)
def test_rosenbrock_hessian_float32(c_hooks, example, inner):
    f = cyad.FunctionWrapper(example.__pyx_capi__["rosenbrock_second_f32"])
    assert_allclose(issue_hessian(c_hooks, f, inner, np.float32), ISSUE_HESSIAN,
                    rtol=2e-6, atol=2e-5)


# (inner lanes, directions): every specialisation, and blocks of 8 with zero lanes left over
@pytest.mark.parametrize("inner, count", [(1, 1), (2, 2), (4, 3), (8, 8), (16, 16), (24, 17),
                                          (24, 24), (40, 33)])
def test_rosenbrock_second_order_in_random_directions(c_hooks, example, inner, count):
    rng = np.random.default_rng(count)
    x = rng.uniform(-1.0, 1.5, 20)
    u, directions = rng.standard_normal(20), rng.standard_normal((count, 20))
    value, a, b, c = second_order_call(c_hooks, example.rosenbrock_function(), x, u,
                                       directions, inner)
    g, h = rosenbrock_gradient(x), rosenbrock_hessian(x)
    assert value == pytest.approx(rosenbrock(x), rel=1e-15)
    assert abs(a - g @ u) <= 1e-13 * (np.abs(g) @ np.abs(u))
    assert np.all(np.abs(b - directions @ g) <= 1e-13 * (np.abs(directions) @ np.abs(g)))
    assert np.all(np.abs(c - directions @ h @ u)
                  <= 1e-13 * (np.abs(directions) @ np.abs(h) @ np.abs(u)))


def test_rosenbrock_second_order_refuses_other_outer_counts(c_hooks, example):
    dx, dy = np.zeros((3, 8)), np.zeros((1, 8))
    status = c_hooks.call_second(example.rosenbrock_function(), ISSUE_POINT, dx, np.zeros(1),
                                 dy, 2, 1)
    assert status == 1


# -- the example's nogil loops -----------------------------------------------------------------

@pytest.mark.parametrize("chunk", [None, 1, 2])
def test_rosenbrock_gradients_without_the_gil(example, chunk):
    points = np.random.default_rng(0).uniform(-1.0, 1.5, (5, 11))
    gradients = example.rosenbrock_gradients(points, chunk=chunk)
    assert_allclose(gradients, [rosenbrock_gradient(p) for p in points], rtol=1e-13)


def test_robertson_jacobians_without_the_gil(example):
    assert_allclose(example.robertson_jacobians(STATES), [robertson_jacobian(u) for u in STATES],
                    rtol=1e-15)


def test_robertson_pullbacks_without_the_gil(example):
    cotangents = np.random.default_rng(7).standard_normal(STATES.shape)
    products = example.robertson_pullbacks(STATES, cotangents)
    for u, dy, product in zip(STATES, cotangents, products, strict=True):
        jac = robertson_jacobian(u)
        assert np.all(np.abs(product - dy @ jac) <= 1e-15 * (np.abs(dy) @ np.abs(jac)))
        # and the Python operator's answer, bit for bit
        assert_array_equal(product, cyad.pullback(example.robertson_function(), u, dy))


def test_a_cdef_function_from_pyx_capi(example):
    f = cyad.FunctionWrapper(example.__pyx_capi__["robertson"], out_shape=3)
    assert f.kind == "capsule" and f.supports_float64 and not f.supports_float32
    for u in STATES:
        assert_allclose(cyad.jacobian(f, u), robertson_jacobian(u), rtol=1e-15)
    both = cyad.FunctionWrapper(example.__pyx_capi__["robertson"],
                                example.__pyx_capi__["robertson_f32"], out_shape=3)
    assert both.supports_float32
    assert cyad.jacobian(both, STATES[1].astype(np.float32)).dtype == np.float32


# -- the entry points: statuses and threads ------------------------------------------------

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
    assert status == cyad._c_api.PYTHON_ERROR
    with pytest.raises(LookupError, match="inside f"):
        prep.raise_for_status(status)


def test_an_entry_point_of_another_dtype_is_refused(c_hooks, example):
    prep = cyad.prepare_gradient(example.rosenbrock_function(), np.ones(3))
    status = c_hooks.gradient_without_gil_float32(prep, np.ones(3, np.float32))
    assert status == cyad._c_api.WRONG_CALL
    with pytest.raises(ValueError, match="another dtype or operator"):
        prep.raise_for_status(status)


def test_prep_state_needs_a_known_output(c_hooks):
    prep = cyad.prepare_jacobian(lambda x: x * 2.0, np.ones(3))
    with pytest.raises(ValueError, match="call the operator once"):
        c_hooks.jacobian_without_gil(prep, np.ones(3), np.zeros(3), np.zeros((3, 3)))


# -- second order through cyad's operators and the nogil entry point ----------------------------

@pytest.mark.parametrize("chunk", [None, 1, 2, 3, 4, 8, 16, 17])
def test_c_function_hessian_through_the_operators(example, chunk):
    f = example.rosenbrock_function()
    x = np.linspace(-1.2, 1.3, 11)
    h = cyad.hessian(f, x, chunk=chunk)
    assert_allclose(h, rosenbrock_hessian(x), rtol=1e-13, atol=1e-10)
    assert_array_equal(h, h.T)
    value, g, h2 = cyad.value_gradient_and_hessian(f, x, chunk=chunk)
    assert value == pytest.approx(rosenbrock(x), rel=1e-14)
    assert_allclose(g, rosenbrock_gradient(x), rtol=1e-13, atol=1e-12)
    assert_array_equal(h2, h)
    assert_allclose(cyad.hessian(f, ISSUE_POINT, chunk=chunk), ISSUE_HESSIAN, atol=1e-12)


def test_c_function_hvp_and_float32(example):
    x = np.linspace(-1.2, 1.3, 11)
    vs = (np.ones(11), np.arange(11.0))
    g, products = cyad.gradient_and_hvp(example.rosenbrock_function(), x, vs, chunk=4)
    assert_allclose(g, rosenbrock_gradient(x), rtol=1e-13, atol=1e-12)
    for v, hv in zip(vs, products, strict=True):
        assert_allclose(hv, rosenbrock_hessian(x) @ v, rtol=1e-12, atol=1e-9)
    f32 = cyad.FunctionWrapper(example.__pyx_capi__["rosenbrock_second_f32"], out_shape=())
    h = cyad.hessian(f32, ISSUE_POINT.astype(np.float32))
    assert h.dtype == np.float32
    assert_allclose(h, ISSUE_HESSIAN, rtol=2e-6, atol=2e-5)


def test_a_c_function_without_second_order_is_refused(example):
    with pytest.raises(TypeError, match="second-order"):
        cyad.hessian(example.robertson_function(), np.ones(3))


def test_prepared_c_hessian_allocates_nothing(example, allocations_per_call):
    f = example.rosenbrock_function()
    x = np.linspace(-1.0, 1.0, 20)
    prep = cyad.prepare_hessian(f, x)
    out = np.zeros((20, 20))
    assert allocations_per_call(lambda: cyad.hessian(f, x, prep=prep, out=out)) == 0
    assert_allclose(out, rosenbrock_hessian(x), rtol=1e-13, atol=1e-10)


@pytest.mark.parametrize("chunk", [None, 3])
def test_hessians_in_a_nogil_loop(example, chunk):
    points = np.random.default_rng(3).uniform(-1.5, 1.5, (6, 9))
    hessians = example.rosenbrock_hessians(points, chunk)
    for point, h in zip(points, hessians, strict=True):
        assert_allclose(h, rosenbrock_hessian(point), rtol=1e-13, atol=1e-10)


# -- the public C API: the handle's table, entry points by family -------------------------------

def test_the_example_compiles_against_no_cyad_type_or_struct(example):
    # cimport cyad declares no cdef class and no prep's or engine's state: the example's C
    # knows the handle's public table of entry points and calls through it, and imports
    # three functions of cyad._c_api; no layout inside cyad reaches it. (The rule code it
    # inlines calls SciPy's kernels through the C functions of cyad._rules.special_kernels,
    # which holds no type either.)
    source = next(pathlib.Path(example.__file__).parent.glob("*.p/*.c")).read_text()
    types = re.findall(r'__Pyx_ImportType\w*\(\w+, "(cyad[\w.]*)", "(\w+)"', source)
    assert types == []
    modules = set(re.findall(r'PyImport_ImportModule\("(cyad[\w.]*)"\)', source))
    assert modules == {"cyad._c_api", "cyad._rules.special_kernels"}
    imported = set(re.findall(r"\(void \(\*\*\)\(void\)\)&__pyx_f_4cyad_6_c_api_(\w+)", source))
    assert imported == {"prep_handle", "raise_status", "wrap", "function_of",
                        "raise_function_status"}
    for entry_point in ["gradient_f64", "jacobian_f64", "hessian_f64", "pullback_f64"]:
        assert f"->entry_points.{entry_point}(" in source
    assert "struct cyad_prep {" in source
    assert "prep_header" not in source and "dual_prep" not in source


def test_prep_handle_takes_only_a_prep(c_hooks):
    with pytest.raises(TypeError, match="prepare_"):
        c_hooks.jacobian_without_gil(object(), np.ones(3), np.zeros(3), np.zeros((3, 3)))


def test_an_entry_point_of_another_family_is_refused(c_hooks, example):
    x, v = np.linspace(0.1, 0.9, 3), np.ones(3)
    f = example.rosenbrock_function()
    hessian = cyad.prepare_hessian(f, x)
    hvp = cyad.prepare_hvp(f, x, v)
    gradient = cyad.prepare_gradient(f, x)
    two_tangents = cyad.prepare_pushforward(f, x, (v, v))
    vector = cyad.prepare_jacobian(lambda x: 2.0 * x, x)
    cyad.jacobian(lambda x: 2.0 * x, x, prep=vector)     # learns f's output
    refused = [
        c_hooks.hvp_without_gil(hessian, x, v, np.zeros(3)),
        c_hooks.hessian_without_gil(hvp, x, np.zeros(3), np.zeros((3, 3))),
        c_hooks.gradient_without_gil(hessian, x, np.zeros(1), np.zeros(3)),
        c_hooks.pushforward_without_gil(gradient, x, v, np.zeros(1)),
        c_hooks.pushforward_without_gil(two_tangents, x, v, np.zeros(1)),
        c_hooks.gradient_without_gil(vector, x, np.zeros(3), np.zeros(3)),
    ]
    assert refused == [cyad._c_api.WRONG_CALL] * len(refused)
    # and each answers its own
    out, h = np.zeros(3), np.zeros((3, 3))
    assert c_hooks.hvp_without_gil(hvp, x, v, out) == 0
    assert_allclose(out, rosenbrock_hessian(x) @ v, rtol=1e-13)
    assert c_hooks.hessian_without_gil(hessian, x, np.zeros(3), h) == 0
    assert_allclose(h, rosenbrock_hessian(x), rtol=1e-13)
    value, g = np.zeros(1), np.zeros(3)
    assert c_hooks.gradient_without_gil(gradient, x, value, g) == 0
    assert_allclose(g, rosenbrock_gradient(x), rtol=1e-13)
    assert value[0] == pytest.approx(rosenbrock(x), rel=1e-15)


# -- the handle's table: every slot, every prep family, both dtypes ----------------------------

def _table_cases():
    """(name, prep maker, the entry points it answers, its answers by entry point: the
    nogil call's arguments after the handle and the results the operators give)."""
    x, v = np.linspace(0.3, 1.4, N), np.linspace(1.0, -0.5, N)
    t = 0.7

    def first_order(dtype):
        xs, vs = x.astype(dtype), v.astype(dtype)
        prep = cyad.prepare_pushforward(C.F, xs, vs)
        value, out = cyad.value_and_pushforward(C.F, xs, vs, prep=prep)
        return prep, {"pushforward": ([xs, vs, None], [out]),
                      "value_and_pushforward": ([xs, vs, None], [value, out])}

    def derivative(dtype):
        ts = np.array(t, dtype)
        prep = cyad.prepare_derivative(C.h, ts)
        value, out = cyad.value_and_derivative(C.h, ts, prep=prep)
        one = np.ones((), dtype)
        return prep, {"pushforward": ([ts, one, None], [out]),
                      "value_and_pushforward": ([ts, one, None], [value, out])}

    def gradient(dtype):
        xs = x.astype(dtype)
        prep = cyad.prepare_gradient(C.g, xs)
        value, grad = cyad.value_and_gradient(C.g, xs, prep=prep)
        return prep, {"gradient": ([xs, None], [value, grad]),
                      "jacobian": ([xs, None], [value, grad])}

    def jacobian(dtype):
        xs = x.astype(dtype)
        prep = cyad.prepare_jacobian(C.F, xs)
        value, jac = cyad.value_and_jacobian(C.F, xs, prep=prep)
        return prep, {"jacobian": ([xs, None], [value, jac])}

    def scalar_jacobian(dtype):
        xs = x.astype(dtype)
        prep = cyad.prepare_jacobian(C.g, xs)
        value, jac = cyad.value_and_jacobian(C.g, xs, prep=prep)
        return prep, {"gradient": ([xs, None], [value, jac]),
                      "jacobian": ([xs, None], [value, jac])}

    def hvp(dtype):
        xs, vs = x.astype(dtype), v.astype(dtype)
        prep = cyad.prepare_hvp(C.g, xs, vs)
        grad, product = cyad.gradient_and_hvp(C.g, xs, vs, prep=prep)
        return prep, {"hvp": ([xs, vs, None], [grad, product])}

    def hessian(dtype):
        xs = x.astype(dtype)
        prep = cyad.prepare_hessian(C.g, xs)
        return prep, {"hessian": ([xs, None], list(cyad.value_gradient_and_hessian(
            C.g, xs, prep=prep)))}

    def pullback(dtype):
        # forward mode on the dual engine, a C function
        xs, dys = x.astype(dtype), v.astype(dtype)
        prep = cyad.prepare_pullback(C.F, xs, dys)
        value, out = cyad.value_and_pullback(C.F, xs, dys, prep=prep)
        return prep, {"pullback": ([xs, dys, None], [out]),
                      "value_and_pullback": ([xs, dys, None], [value, out])}

    def tape_pullback(dtype):
        # the reverse sweep of the tape engine, a Python callable
        xs, dys = x.astype(dtype), v.astype(dtype)
        prep = cyad.prepare_pullback(PYTHON.F, xs, dys, engine="tape")
        value, out = cyad.value_and_pullback(PYTHON.F, xs, dys, prep=prep)
        return prep, {"pullback": ([xs, dys, None], [out]),
                      "value_and_pullback": ([xs, dys, None], [value, out])}

    def scalar_pullback(dtype):
        # a scalar-valued f: dy a single number
        xs, dys = x.astype(dtype), np.array(-1.5, dtype)
        prep = cyad.prepare_pullback(C.g, xs, dys)
        value, out = cyad.value_and_pullback(C.g, xs, dys, prep=prep)
        return prep, {"pullback": ([xs, dys, None], [out]),
                      "value_and_pullback": ([xs, dys, None], [value, out])}

    def two_cotangents(dtype):
        xs, vs = x.astype(dtype), v.astype(dtype)
        return cyad.prepare_pullback(C.F, xs, (vs, xs)), {}

    def two_tangents(dtype):
        xs, vs = x.astype(dtype), v.astype(dtype)
        return cyad.prepare_pushforward(C.F, xs, (vs, xs)), {}

    def second_derivative(dtype):
        return cyad.prepare_second_derivative(C.h, np.array(t, dtype)), {}

    def two_hvp_tangents(dtype):
        xs, vs = x.astype(dtype), v.astype(dtype)
        return cyad.prepare_hvp(C.g, xs, (vs, xs)), {}

    return [first_order, derivative, gradient, jacobian, scalar_jacobian, hvp, hessian,
            pullback, tape_pullback, scalar_pullback, two_cotangents, two_tangents,
            second_derivative, two_hvp_tangents]


@pytest.mark.parametrize("prep_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("make", _table_cases(), ids=lambda make: make.__name__)
def test_every_slot_of_the_table_answers_or_refuses(c_hooks, make, prep_dtype):
    # each entry point in each dtype: the prep's own answer where it answers it (the
    # operators' results, bit for bit), else WRONG_CALL with nothing written
    prep, answers = make(prep_dtype)
    for entry in c_hooks.ENTRY_POINTS:
        for dtype in [np.float64, np.float32]:
            if entry in answers and dtype == prep_dtype:
                inputs, expected = answers[entry]
                outputs = [np.full(np.shape(e), np.nan, dtype) for e in expected]
                status = c_hooks.entry_point_without_gil(entry, prep, dtype, *inputs, *outputs)
                assert status == 0, (entry, dtype)
                for got, want in zip(outputs, expected, strict=True):
                    assert_array_equal(got, want)
            else:
                # buffers ample for any prep here, of the entry point's arity
                arrays = [np.full(64, np.nan, dtype) for _ in range(5)]
                status = c_hooks.entry_point_without_gil(entry, prep, dtype, *arrays)
                assert status == cyad._c_api.WRONG_CALL, (entry, dtype)
                assert all(np.isnan(a).all() for a in arrays)


def test_a_recorded_python_function_in_a_nogil_loop(example):
    # cyad.record's tape through its C function, from the example's nogil loop
    points = np.random.default_rng(5).uniform(-1, 1, (6, 5))
    jacobians = example.recorded_jacobians(lambda x: np.sin(x) * x[::-1], points)
    for x, jacobian in zip(points, jacobians, strict=True):
        expected = np.diag(np.cos(x) * x[::-1])
        expected[np.arange(5), np.arange(5)[::-1]] += np.sin(x)
        assert_allclose(jacobian, expected, rtol=1e-14)
