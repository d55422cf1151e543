"""Outputs that share memory with inputs: the results of the same call on separate copies.

Like a NumPy ufunc given an overlapping out=, every operator reads x, the tangents and
y's starting values as they were when the call started. Each case below makes one call
with its buffers laid out to overlap, or (separate=True) the same call on buffers of the
same starting values in memory of their own, and returns the results with their
analytic values: the two calls must agree bit for bit, and the separate one with the
analytic derivatives. Outputs that overlap one another are refused.
"""
import ctypes

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import cyad
from reference_functions import (C, KINDS, N, PYTHON, F_jacobian, F_value, g_gradient,
                                 g_hessian, g_value, h_derivative, h_second_derivative,
                                 h_value)

PREPARE = {
    cyad.pushforward: cyad.prepare_pushforward,
    cyad.value_and_pushforward: cyad.prepare_pushforward,
    cyad.derivative: cyad.prepare_derivative,
    cyad.value_and_derivative: cyad.prepare_derivative,
    cyad.gradient: cyad.prepare_gradient,
    cyad.value_and_gradient: cyad.prepare_gradient,
    cyad.jacobian: cyad.prepare_jacobian,
    cyad.value_and_jacobian: cyad.prepare_jacobian,
    cyad.second_derivative: cyad.prepare_second_derivative,
    cyad.value_derivative_and_second_derivative: cyad.prepare_second_derivative,
    cyad.hvp: cyad.prepare_hvp,
    cyad.gradient_and_hvp: cyad.prepare_hvp,
    cyad.hessian: cyad.prepare_hessian,
    cyad.value_gradient_and_hessian: cyad.prepare_hessian,
}
TOLERANCE = {np.float64: 1e-12, np.float32: 3e-5}


def _copies(a):
    """a with every array in it copied (tuples kept)."""
    if isinstance(a, tuple):
        return tuple(_copies(b) for b in a)
    return np.array(a) if isinstance(a, np.ndarray) else a


class Caller:
    """Makes a case's call unprepared, or on a prep that a call on separate copies of the
    arguments has used first (so that the call runs every chunk in the engine)."""

    def __init__(self, chunk, prepared):
        self.chunk = chunk
        self.prepared = prepared

    def __call__(self, operator, f, *args, y=None, out=None):
        if not self.prepared:
            return operator(f, *args, y=y, out=out, chunk=self.chunk)
        prep = PREPARE[operator](f, *_copies(args), y=_copies(y), chunk=self.chunk)
        operator(f, *_copies(args), y=_copies(y), prep=prep, out=_copies(out))
        return operator(f, *args, y=y, prep=prep, out=out)


def own(a, separate):
    """a itself, or (separate) a copy of it in memory of its own."""
    return np.array(a) if separate else a


def points(dtype):
    """Fresh x, three tangents and a two-argument F's y of the given dtype."""
    x = np.linspace(0.3, 1.4, N).astype(dtype)
    tangents = tuple(np.linspace(a, b, N).astype(dtype) for a, b in
                     [(1.0, -0.5), (-0.7, 0.9), (0.2, 1.3)])
    return x, tangents, np.linspace(-1.0, 1.0, N).astype(dtype)


def scalar_in(buffer, i, separate):
    """A 0-d array: a view of buffer[i], or (separate) one of its own of the same value."""
    return np.array(buffer[i]) if separate else buffer[i, ...]


T = 0.7      # the scalar input of h
H_START = np.array([0.5, T, -1.0])    # a buffer of h's output shape holding T


CASES = []


def case(fn):
    CASES.append(fn)
    return fn


# -- pushforward and derivative --------------------------------------------------------------

@case
def pushforward_into_its_tangent(fs, dtype, call, separate):
    x, (v, _, _), _ = points(dtype)
    expected = [F_jacobian(x) @ v]
    out = own(v, separate)
    assert call(cyad.pushforward, fs.F, x, v, out=out) is out
    return [out], expected


@case
def pushforward_in_place_into_its_tangent(fs, dtype, call, separate):
    # f(y, x) and one tangent: one evaluation on the caller's own buffers
    x, (v, _, _), y = points(dtype)
    expected = [F_jacobian(x) @ v, y + F_value(x)]
    out = own(v, separate)
    call(cyad.pushforward, fs.F_in_place, x, v, y=y, out=out)
    return [out, y], expected


@case
def pushforward_into_x(fs, dtype, call, separate):
    x, (v, _, _), _ = points(dtype)
    expected = [F_jacobian(x) @ v]
    out = own(x, separate)
    call(cyad.pushforward, fs.F, x, v, out=out)
    return [out], expected


@case
def pushforward_with_x_as_y(fs, dtype, call, separate):
    x, (v, _, _), _ = points(dtype)
    expected = [F_jacobian(x) @ v, x + F_value(x)]
    y, out = own(x, separate), np.empty_like(x)
    call(cyad.pushforward, fs.F_in_place, x, v, y=y, out=out)
    return [out, y], expected


@case
def batch_pushforward_into_the_next_tangents(fs, dtype, call, separate):
    # each output is a tangent that a later chunk reads
    x, tangents, _ = points(dtype)
    expected = [F_jacobian(x) @ t for t in tangents]
    outs = tuple(own(t, separate) for t in (tangents[1], tangents[2], tangents[0]))
    call(cyad.pushforward, fs.F, x, tangents, out=outs)
    return list(outs), expected


@case
def batch_pushforward_in_place_into_x(fs, dtype, call, separate):
    x, tangents, y = points(dtype)
    expected = [F_jacobian(x) @ t for t in tangents] + [y + F_value(x)]
    outs = (np.empty_like(x), own(x, separate), np.empty_like(x))
    call(cyad.pushforward, fs.F_in_place, x, tangents, y=y, out=outs)
    return list(outs) + [y], expected


@case
def value_and_pushforward_into_x_and_its_tangent(fs, dtype, call, separate):
    x, (v, _, _), _ = points(dtype)
    expected = [F_value(x), F_jacobian(x) @ v]
    pair = (own(x, separate), own(v, separate))
    call(cyad.value_and_pushforward, fs.F, x, v, out=pair)
    return list(pair), expected


@case
def value_and_pushforward_in_place_with_x_as_y(fs, dtype, call, separate):
    # the value output is y itself, which is x
    x, (v, _, _), _ = points(dtype)
    expected = [x + F_value(x), F_jacobian(x) @ v]
    y = own(x, separate)
    pair = (y, own(v, separate))
    call(cyad.value_and_pushforward, fs.F_in_place, x, v, y=y, out=pair)
    return list(pair), expected


@case
def derivative_into_its_input(fs, dtype, call, separate):
    buffer = H_START.astype(dtype)
    t = scalar_in(buffer, 1, separate)
    expected = [h_derivative(t)]
    out = own(buffer, separate)
    call(cyad.derivative, fs.h, t, out=out)
    return [out], expected


@case
def derivative_in_place_with_its_input_in_y(fs, dtype, call, separate):
    y = H_START.astype(dtype)
    t = scalar_in(y, 1, separate)
    expected = [h_derivative(t), y + h_value(t)]
    out = np.empty_like(y)
    call(cyad.derivative, fs.h_in_place, t, y=y, out=out)
    return [out, y], expected


@case
def value_and_derivative_with_its_input_in_the_value(fs, dtype, call, separate):
    buffer = H_START.astype(dtype)
    t = scalar_in(buffer, 1, separate)
    expected = [h_value(t), h_derivative(t)]
    pair = (own(buffer, separate), np.empty_like(buffer))
    call(cyad.value_and_derivative, fs.h, t, out=pair)
    return list(pair), expected


# -- gradient and Jacobian -------------------------------------------------------------------

@case
def gradient_into_x(fs, dtype, call, separate):
    x, _, _ = points(dtype)
    expected = [g_gradient(x)]
    out = own(x, separate)
    call(cyad.gradient, fs.g, x, out=out)
    return [out], expected


@case
def gradient_in_place_with_y_in_x(fs, dtype, call, separate):
    x, _, _ = points(dtype)
    y = scalar_in(x, 2, separate)
    expected = [g_gradient(x), x[2] + g_value(x)]
    out = np.empty_like(x)
    call(cyad.gradient, fs.g_in_place, x, y=y, out=out)
    return [out, y], expected


@case
def value_and_gradient_with_the_value_in_x(fs, dtype, call, separate):
    x, _, _ = points(dtype)
    expected = [g_value(x), g_gradient(x)]
    pair = (scalar_in(x, 4, separate), np.empty_like(x))
    call(cyad.value_and_gradient, fs.g, x, out=pair)
    return list(pair), expected


@case
def value_and_gradient_into_x(fs, dtype, call, separate):
    x, _, _ = points(dtype)
    expected = [g_value(x), g_gradient(x)]
    pair = (np.zeros((), dtype), own(x, separate))
    call(cyad.value_and_gradient, fs.g, x, out=pair)
    return list(pair), expected


def _x_inside(matrix, start, x, separate):
    """x written into matrix's memory from element `start` on, and that view (or a copy)."""
    flat = matrix.reshape(-1)
    flat[start:start + x.size] = x
    return own(flat[start:start + x.size], separate)


@case
def jacobian_of_its_first_row(fs, dtype, call, separate):
    x0, _, _ = points(dtype)
    out = np.zeros((N, N), dtype)
    x = _x_inside(out, 0, x0, separate)
    expected = [F_jacobian(x0)]
    out = own(out, separate)
    call(cyad.jacobian, fs.F, x, out=out)
    return [out], expected


@case
def jacobian_across_two_rows(fs, dtype, call, separate):
    x0, _, _ = points(dtype)
    out = np.zeros((N, N), dtype)
    x = _x_inside(out, N + 3, x0, separate)
    expected = [F_jacobian(x0)]
    out = own(out, separate)
    call(cyad.jacobian, fs.F, x, out=out)
    return [out], expected


@case
def jacobian_in_place_with_x_as_y(fs, dtype, call, separate):
    x, _, _ = points(dtype)
    expected = [F_jacobian(x), x + F_value(x)]
    y = own(x, separate)
    out = call(cyad.jacobian, fs.F_in_place, x, y=y)
    return [out, y], expected


@case
def value_and_jacobian_with_the_value_into_x(fs, dtype, call, separate):
    x, _, _ = points(dtype)
    expected = [F_value(x), F_jacobian(x)]
    pair = (own(x, separate), np.empty((N, N), dtype))
    call(cyad.value_and_jacobian, fs.F, x, out=pair)
    return list(pair), expected


# -- second order ----------------------------------------------------------------------------

@case
def second_derivative_into_its_input(fs, dtype, call, separate):
    buffer = H_START.astype(dtype)
    t = scalar_in(buffer, 1, separate)
    expected = [h_second_derivative(t)]
    out = own(buffer, separate)
    call(cyad.second_derivative, fs.h, t, out=out)
    return [out], expected


@case
def second_derivative_in_place_with_its_input_in_y(fs, dtype, call, separate):
    y = H_START.astype(dtype)
    t = scalar_in(y, 1, separate)
    expected = [h_second_derivative(t), y + h_value(t)]
    out = np.empty_like(y)
    call(cyad.second_derivative, fs.h_in_place, t, y=y, out=out)
    return [out, y], expected


@case
def value_derivative_and_second_derivative_with_the_input_in_the_first(fs, dtype, call,
                                                                      separate):
    buffer = H_START.astype(dtype)
    t = scalar_in(buffer, 1, separate)
    expected = [h_value(t), h_derivative(t), h_second_derivative(t)]
    triple = (np.empty_like(buffer), own(buffer, separate), np.empty_like(buffer))
    call(cyad.value_derivative_and_second_derivative, fs.h, t, out=triple)
    return list(triple), expected


@case
def hvp_into_its_tangent(fs, dtype, call, separate):
    x, (v, _, _), _ = points(dtype)
    expected = [g_hessian(x) @ v]
    out = own(v, separate)
    assert call(cyad.hvp, fs.g, x, v, out=out) is out
    return [out], expected


@case
def hvp_into_x(fs, dtype, call, separate):
    x, (v, _, _), _ = points(dtype)
    expected = [g_hessian(x) @ v]
    out = own(x, separate)
    call(cyad.hvp, fs.g, x, v, out=out)
    return [out], expected


@case
def hvp_in_place_with_y_in_its_tangent(fs, dtype, call, separate):
    x, (v, _, _), _ = points(dtype)
    y = scalar_in(v, 3, separate)
    expected = [g_hessian(x) @ v, v[3] + g_value(x)]
    out = np.empty_like(x)
    call(cyad.hvp, fs.g_in_place, x, v, y=y, out=out)
    return [out, y], expected


@case
def batch_hvp_into_each_others_tangents(fs, dtype, call, separate):
    x, (v0, v1, _), _ = points(dtype)
    expected = [g_hessian(x) @ v0, g_hessian(x) @ v1]
    outs = (own(v1, separate), own(v0, separate))
    call(cyad.hvp, fs.g, x, (v0, v1), out=outs)
    return list(outs), expected


@case
def gradient_and_hvp_into_x_and_the_tangent(fs, dtype, call, separate):
    x, (v, _, _), _ = points(dtype)
    expected = [g_gradient(x), g_hessian(x) @ v]
    pair = (own(x, separate), own(v, separate))
    call(cyad.gradient_and_hvp, fs.g, x, v, out=pair)
    return list(pair), expected


@case
def hessian_of_its_first_row(fs, dtype, call, separate):
    x0, _, _ = points(dtype)
    out = np.zeros((N, N), dtype)
    x = _x_inside(out, 0, x0, separate)
    expected = [g_hessian(x0)]
    out = own(out, separate)
    call(cyad.hessian, fs.g, x, out=out)
    return [out], expected


@case
def hessian_across_two_rows(fs, dtype, call, separate):
    x0, _, _ = points(dtype)
    out = np.zeros((N, N), dtype)
    x = _x_inside(out, 2 * N - 2, x0, separate)
    expected = [g_hessian(x0)]
    out = own(out, separate)
    call(cyad.hessian, fs.g, x, out=out)
    return [out], expected


@case
def hessian_in_place_with_y_in_x(fs, dtype, call, separate):
    x, _, _ = points(dtype)
    y = scalar_in(x, 0, separate)
    expected = [g_hessian(x), x[0] + g_value(x)]
    out = call(cyad.hessian, fs.g_in_place, x, y=y)
    return [out, y], expected


@case
def value_gradient_and_hessian_with_the_gradient_into_x(fs, dtype, call, separate):
    x, _, _ = points(dtype)
    expected = [g_value(x), g_gradient(x), g_hessian(x)]
    triple = (np.zeros((), dtype), own(x, separate), np.empty((N, N), dtype))
    call(cyad.value_gradient_and_hessian, fs.g, x, out=triple)
    return list(triple), expected


@case
def value_gradient_and_hessian_with_x_in_the_hessian(fs, dtype, call, separate):
    x0, _, _ = points(dtype)
    hessian = np.zeros((N, N), dtype)
    x = _x_inside(hessian, 3 * N, x0, separate)
    expected = [g_value(x0), g_gradient(x0), g_hessian(x0)]
    triple = (np.zeros((), dtype), np.empty_like(x0), own(hessian, separate))
    call(cyad.value_gradient_and_hessian, fs.g, x, out=triple)
    return list(triple), expected


@pytest.mark.parametrize("prepared", [False, True], ids=["new_prep", "prepared"])
@pytest.mark.parametrize("chunk", [1, 2, None], ids=["chunk1", "chunk2", "default_chunk"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("layout", CASES, ids=lambda c: c.__name__)
def test_an_overlapping_call_equals_the_call_on_copies(layout, kind, dtype, chunk, prepared):
    call = Caller(chunk, prepared)
    got, expected = layout(KINDS[kind], dtype, call, separate=False)
    want, _ = layout(KINDS[kind], dtype, call, separate=True)
    for g, w, e in zip(got, want, expected, strict=True):
        assert g.dtype == dtype
        assert_array_equal(g, w)
        assert_allclose(w, e, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


def test_an_overlapping_call_between_separate_ones_on_one_prep():
    # the copies go to scratch the prep keeps: every call is right, in any order
    x, (v, _, _), _ = points(np.float64)
    prep = cyad.prepare_hvp(C.g, x, v, chunk=2)
    expected = g_hessian(x) @ v
    for overlapping in [False, True, True, False, True]:
        tangent = np.array(v)
        out = tangent if overlapping else np.empty_like(v)
        cyad.hvp(C.g, x, tangent, prep=prep, out=out)
        assert_allclose(out, expected, rtol=1e-13)


# -- outputs that overlap one another --------------------------------------------------------

def _sharing_an_element(n):
    """Two arrays of n elements in one buffer, sharing one element."""
    buffer = np.zeros(2 * n - 1)
    return buffer[:n], buffer[n - 1:]


# Calls whose outputs overlap: each gives (operator, f, args, y, out, the outputs the error
# names, and the analytic results of the call with separate outputs), on fresh buffers.
REFUSED = []


def refused(fn):
    REFUSED.append(fn)
    return fn


@refused
def value_inside_the_gradient(fs, x, v, y0):
    g = np.empty(N)
    return (cyad.value_and_gradient, fs.g, (x,), None, (g[0, ...], g),
            ["the value output", "the gradient output"], [g_value(x), g_gradient(x)])


@refused
def value_inside_the_jacobian(fs, x, v, y0):
    J = np.empty((N, N))
    return (cyad.value_and_jacobian, fs.F, (x,), None, (J[2], J),
            ["the value output", "the Jacobian output"], [F_value(x), F_jacobian(x)])


@refused
def y_inside_the_jacobian(fs, x, v, y0):
    J = np.empty((N, N))
    J[1] = y0
    return (cyad.jacobian, fs.F_in_place, (x,), J[1], J, ["y", "the Jacobian output"],
            [F_jacobian(x), y0 + F_value(x)])


@refused
def value_overlapping_y(fs, x, v, y0):
    y, value = _sharing_an_element(N)
    y[...] = y0
    return (cyad.value_and_pushforward, fs.F_in_place, (x, v), y, (value, np.empty(N)),
            ["y", "the value output"], [y0 + F_value(x), F_jacobian(x) @ v, y0 + F_value(x)])


@refused
def two_tangent_outputs_in_one_buffer(fs, x, v, y0):
    out = np.empty(N)
    return (cyad.pushforward, fs.F, (x, (v, x)), None, (out, out),
            ["the tangent output for tangent 0", "the tangent output for tangent 1"],
            [F_jacobian(x) @ v, F_jacobian(x) @ x])


@refused
def gradient_overlapping_the_hvp(fs, x, v, y0):
    return (cyad.gradient_and_hvp, fs.g, (x, v), None, _sharing_an_element(N),
            ["the gradient output", "the hvp output"], [g_gradient(x), g_hessian(x) @ v])


@refused
def two_hvp_outputs_overlapping(fs, x, v, y0):
    return (cyad.hvp, fs.g, (x, (v, x)), None, _sharing_an_element(N),
            ["the hvp output for tangent 0", "the hvp output for tangent 1"],
            [g_hessian(x) @ v, g_hessian(x) @ x])


@refused
def value_inside_the_hessian(fs, x, v, y0):
    H = np.empty((N, N))
    return (cyad.value_gradient_and_hessian, fs.g, (x,), None, (H[3, 3, ...], np.empty(N), H),
            ["the value output", "the Hessian output"], [g_value(x), g_gradient(x), g_hessian(x)])


@refused
def value_and_derivative_in_one_buffer(fs, x, v, y0):
    b = np.empty(3)
    return (cyad.value_derivative_and_second_derivative, fs.h, (T,), None,
            (b, b, np.empty(3)), ["the value output", "the derivative output"],
            [h_value(T), h_derivative(T), h_second_derivative(T)])


def _flatten(r):
    return [b for a in r for b in _flatten(a)] if isinstance(r, tuple) else [r]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("make", REFUSED, ids=lambda c: c.__name__)
def test_outputs_that_overlap_one_another_are_refused(make, kind):
    x, (v, _, _), y0 = points(np.float64)
    operator, f, args, y, out, names, _ = make(KINDS[kind], x, v, y0)
    prep = PREPARE[operator](f, *args, y=_copies(y))
    with pytest.raises(ValueError, match="share memory") as error:
        operator(f, *args, y=y, prep=prep, out=out)
    message = str(error.value)
    assert all(f"{name} " in message for name in names), message
    if y is not None:
        assert_array_equal(y, y0)       # refused before anything was written
    # the prep serves the next call
    operator, f, args, y, _, _, expected = make(KINDS[kind], x, v, y0)
    results = _flatten(operator(f, *args, y=y, prep=prep)) + ([] if y is None else [y])
    for r, e in zip(results, expected, strict=True):
        assert_allclose(r, e, rtol=1e-13, atol=1e-13)


def test_the_value_output_may_be_y_itself():
    x, _, y = points(np.float64)
    expected = y + F_value(x)
    value, J = cyad.value_and_jacobian(C.F_in_place, x, y=y, out=(y, np.empty((N, N))))
    assert value is y
    assert_allclose(y, expected, rtol=1e-13)
    assert_allclose(J, F_jacobian(x), rtol=1e-13)


# -- the nogil entry points ------------------------------------------------------------------

def test_nogil_pushforward_into_its_tangent(c_hooks):
    x, (v, _, _), _ = points(np.float64)
    prep = cyad.prepare_pushforward(C.F, x, v)
    expected = F_jacobian(x) @ v
    assert c_hooks.pushforward_without_gil(prep, x, v, v) == 0
    assert_allclose(v, expected, rtol=1e-13)


def test_nogil_jacobian_with_x_in_it_or_as_y(c_hooks):
    x0, _, y0 = points(np.float64)
    prep = cyad.prepare_jacobian(C.F_in_place, x0, y=np.zeros(N), chunk=2)
    out, y = np.zeros((N, N)), np.array(y0)
    x = _x_inside(out, 0, x0, False)
    assert c_hooks.jacobian_without_gil(prep, x, y, out) == 0
    assert_allclose(out, F_jacobian(x0), rtol=1e-13)
    assert_allclose(y, y0 + F_value(x0), rtol=1e-13)
    x = np.array(x0)        # y is x: it starts from x's values
    assert c_hooks.jacobian_without_gil(prep, x, x, out) == 0
    assert_allclose(out, F_jacobian(x0), rtol=1e-13)
    assert_allclose(x, x0 + F_value(x0), rtol=1e-13)


def test_nogil_outputs_that_overlap_are_refused(c_hooks):
    x0, _, _ = points(np.float64)
    prep = cyad.prepare_jacobian(C.F_in_place, x0, y=np.zeros(N))
    out = np.zeros((N, N))
    status = c_hooks.jacobian_without_gil(prep, x0, out[1], out)
    assert status == cyad._c_api.OVERLAPPING_OUTPUTS
    with pytest.raises(ValueError, match="y and the Jacobian output share memory"):
        prep.raise_for_status(status)
    assert not out.any()       # refused before anything was written


def test_nogil_gradient_into_x_and_its_value_in_x(c_hooks):
    x0, _, _ = points(np.float64)
    prep = cyad.prepare_gradient(C.g, x0, chunk=2)
    x = np.array(x0)
    assert c_hooks.gradient_without_gil(prep, x, x[2:3], x) == cyad._c_api.OVERLAPPING_OUTPUTS
    assert_array_equal(x, x0)      # refused before anything was written
    value = np.zeros(1)
    assert c_hooks.gradient_without_gil(prep, x, value, x) == 0
    assert_allclose(x, g_gradient(x0), rtol=1e-13)
    assert value[0] == pytest.approx(g_value(x0), rel=1e-13)


def test_nogil_hvp_and_hessian_into_their_inputs(c_hooks):
    x0, (v0, _, _), _ = points(np.float64)
    prep = cyad.prepare_hvp(C.g, x0, v0, chunk=2)
    v = np.array(v0)
    assert c_hooks.hvp_without_gil(prep, x0, v, v) == 0
    assert_allclose(v, g_hessian(x0) @ v0, rtol=1e-13)
    prep = cyad.prepare_hessian(C.g, x0, chunk=2)
    hessian = np.zeros((N, N))
    x = _x_inside(hessian, N - 2, x0, False)
    gradient = np.empty(N)
    assert c_hooks.hessian_without_gil(prep, x, gradient, hessian) == 0
    assert_allclose(hessian, g_hessian(x0), rtol=1e-13, atol=1e-13)
    assert_allclose(gradient, g_gradient(x0), rtol=1e-13)


def test_a_c_function_never_sees_an_input_overlapping_an_output():
    # the function checks the addresses it is given: status 1 if x or dx meets y or dy
    p = ctypes.POINTER(ctypes.c_double)

    def meets(a, a_count, b, b_count):
        start, other = ctypes.addressof(a.contents), ctypes.addressof(b.contents)
        return start < other + 8 * b_count and other < start + 8 * a_count

    @ctypes.CFUNCTYPE(ctypes.c_int, p, p, p, p, ctypes.c_ssize_t, ctypes.c_ssize_t,
                      ctypes.c_ssize_t, ctypes.c_void_p)
    def double(x, dx, y, dy, n_x, n_y, width, context):
        for a, count in [(x, n_x), (dx, n_x * width)]:
            if meets(a, count, y, n_y) or meets(a, count, dy, n_y * width):
                return 1
        for i in range(n_x):
            y[i] = 2.0 * x[i]
        for i in range(n_x * width):
            dy[i] = 2.0 * dx[i]
        return 0

    f = cyad.FunctionWrapper(double)
    x, v = np.arange(1.0, 5.0), np.ones(4)
    assert_array_equal(cyad.pushforward(f, x, v, y=x, out=v), 2.0 * np.ones(4))
    assert_array_equal(x, 2.0 * np.arange(1.0, 5.0))
    buffer = np.zeros(8)
    x, v = buffer[:4], buffer[4:]
    x[...], v[...] = np.arange(1.0, 5.0), 1.0
    assert_array_equal(cyad.pushforward(f, x, v, y=v, out=x), 2.0 * np.ones(4))
    assert_array_equal(v, 2.0 * np.arange(1.0, 5.0))


# -- random layouts in one buffer: the Python operators and the nogil entry points -------------
#
# Every buffer of a call at a random place in one array, so that inputs meet outputs, each
# other and nothing in every combination (and f's value is sometimes y itself): a call is
# refused, with nothing written, exactly when two outputs share memory; otherwise it gives
# the results of the same call on separate copies, bit for bit.

class Layout:
    """A call with its buffers' shapes: inputs (read), y (read and written), outputs."""

    def __init__(self, name, prepare, operator, entry, f, inputs, y, outputs, engine="dual"):
        self.name, self.prepare, self.operator, self.entry, self.f = (
            name, prepare, operator, entry, f)
        self.inputs, self.y, self.outputs, self.engine = inputs, y, outputs, engine

    def __repr__(self):
        return self.name


LAYOUTS = [
    Layout("value_and_pushforward", cyad.prepare_pushforward, cyad.value_and_pushforward,
           "value_and_pushforward", C.F_in_place, [(N,), (N,)], (N,), [(N,), (N,)]),
    Layout("value_and_jacobian", cyad.prepare_jacobian, cyad.value_and_jacobian, "jacobian",
           C.F_in_place, [(N,)], (N,), [(N,), (N, N)]),
    Layout("gradient_and_hvp", cyad.prepare_hvp, cyad.gradient_and_hvp, "hvp", C.g,
           [(N,), (N,)], None, [(N,), (N,)]),
    Layout("value_gradient_and_hessian", cyad.prepare_hessian, cyad.value_gradient_and_hessian,
           "hessian", C.g_in_place, [(N,)], (), [(), (N,), (N, N)]),
    # a cotangent shaped like y, the result like x
    Layout("value_and_pullback", cyad.prepare_pullback, cyad.value_and_pullback,
           "value_and_pullback", C.F_in_place, [(N,), (N,)], (N,), [(N,), (N,)]),
    Layout("value_and_pullback of a scalar", cyad.prepare_pullback, cyad.value_and_pullback,
           "value_and_pullback", C.g_in_place, [(N,), ()], (), [(), (N,)]),
    Layout("value_and_pullback on the tape", cyad.prepare_pullback, cyad.value_and_pullback,
           "value_and_pullback", PYTHON.g_in_place, [(N,), ()], (), [(), (N,)], "tape"),
]


def _place(rng, shapes, size):
    """Random starts of buffers of these shapes in an array of `size` elements."""
    return [int(rng.integers(0, size - max(1, int(np.prod(s))) + 1)) for s in shapes]


@pytest.mark.parametrize("chunk", [None, 2], ids=["default_chunk", "chunk2"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("nogil", [False, True], ids=["operator", "nogil"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=repr)
def test_random_layouts_in_one_buffer(c_hooks, layout, nogil, dtype, chunk):
    rng = np.random.default_rng([len(layout.name), nogil, chunk or 0])
    shapes = layout.inputs + ([] if layout.y is None else [layout.y]) + layout.outputs
    sizes = [max(1, int(np.prod(s))) for s in shapes]
    first_output = len(shapes) - len(layout.outputs)
    size = 2 * sum(sizes)
    x0 = np.linspace(0.3, 1.4, N).astype(dtype)
    y0 = None if layout.y is None else np.zeros(layout.y, dtype)
    seeds = [np.linspace(1.0, -0.5, int(np.prod(s))).reshape(s).astype(dtype)
             for s in layout.inputs[1:]]   # a tangent or cotangent
    prep = layout.prepare(layout.f, x0, *seeds, y=y0, chunk=chunk, engine=layout.engine)
    refused = copied = 0
    trials = 100
    for _ in range(trials):
        memory = rng.uniform(0.2, 1.2, size).astype(dtype)
        starts = _place(rng, shapes, size)
        if layout.y is not None and rng.random() < 0.25:
            starts[first_output] = starts[first_output - 1]   # f's value: y itself
        views = [memory[s:s + n].reshape(shape) for s, n, shape in zip(starts, sizes, shapes)]
        inputs = views[:len(layout.inputs)]
        y = None if layout.y is None else views[len(layout.inputs)]
        outputs = views[first_output:]
        # the same call on separate copies
        copies_y = None if y is None else np.array(y)
        separate = layout.operator(layout.f, *[np.array(a) for a in inputs], y=copies_y,
                                   prep=prep)
        # the outputs y (if any), then f's value (if any), ...: they may meet only where f's
        # value is y itself
        written = list(zip(starts[first_output - (y is not None):], sizes[first_output
                                                                          - (y is not None):]))
        value_is_y = y is not None and starts[first_output] == starts[first_output - 1]
        meet = any(a < c + d and c < a + b
                   for i, (a, b) in enumerate(written) for (c, d) in written[:i]
                   if not (value_is_y and i == 1))
        before = memory.copy()
        if nogil:
            status = c_hooks.entry_point_without_gil(layout.entry, prep, dtype, *inputs, y,
                                                     *outputs)
            assert status == (cyad._c_api.OVERLAPPING_OUTPUTS if meet else 0)
        elif meet:
            with pytest.raises(ValueError, match="share memory"):
                layout.operator(layout.f, *inputs, y=y, prep=prep, out=tuple(outputs))
        else:
            layout.operator(layout.f, *inputs, y=y, prep=prep, out=tuple(outputs))
        if meet:
            refused += 1
            assert_array_equal(memory, before)
            continue
        read = list(zip(starts[:len(layout.inputs)], sizes))
        copied += any(a < c + d and c < a + b for a, b in read for c, d in written)
        for got, want in zip(outputs, separate, strict=True):
            assert_array_equal(got, want)
        if y is not None:
            assert_array_equal(y, copies_y)
    assert 0.1 * trials < refused < 0.9 * trials
    assert copied > 0.1 * trials
