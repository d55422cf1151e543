"""C-level functions of every kind FunctionWrapper takes, through every operator."""
import ctypes

import numpy as np
import pytest

import cyad
from cyad._dual.layout import NestedLanes

P = ctypes.POINTER
SIGNATURE = (ctypes.c_int, P(ctypes.c_double), P(ctypes.c_double), P(ctypes.c_double),
             P(ctypes.c_double), ctypes.c_ssize_t, ctypes.c_ssize_t, ctypes.c_ssize_t,
             ctypes.c_void_p)
SIGNATURE_F32 = (ctypes.c_int, P(ctypes.c_float), P(ctypes.c_float), P(ctypes.c_float),
                 P(ctypes.c_float), ctypes.c_ssize_t, ctypes.c_ssize_t, ctypes.c_ssize_t,
                 ctypes.c_void_p)
# second order: (outer, inner) where the first order has width
SECOND = SIGNATURE[:8] + (ctypes.c_ssize_t,) + SIGNATURE[8:]
SECOND_F32 = SIGNATURE_F32[:8] + (ctypes.c_ssize_t,) + SIGNATURE_F32[8:]


def _arrays(x, dx, y, dy, n_x, n_y, width):
    as_array = np.ctypeslib.as_array
    return (as_array(x, (n_x,)), as_array(dx, (n_x, width)),
            as_array(y, (n_y,)), as_array(dy, (n_y, width)))


def cube_plus_shift(x, dx, y, dy, n_x, n_y, width, context):
    """y_i = x_i**3 + x_{i+1} (x_{n} taken as 0), written at the dual level by hand."""
    x, dx, y, dy = _arrays(x, dx, y, dy, n_x, n_y, width)
    y[:] = x**3
    y[:-1] += x[1:]
    dy[:] = 3 * x[:, None] ** 2 * dx
    dy[:-1] += dx[1:]
    return 0


def cube_plus_shift_jacobian(x):
    return np.diag(3 * x**2) + np.eye(x.size, k=1)


def sum_of_squares(x, dx, y, dy, n_x, n_y, width, context):
    x, dx, y, dy = _arrays(x, dx, y, dy, n_x, n_y, width)
    y[0] = np.sum(x**2)
    dy[0] = 2 * x @ dx
    return 0


def failing(x, dx, y, dy, n_x, n_y, width, context):
    return 3


ctypes_function = ctypes.CFUNCTYPE(*SIGNATURE)
second_ctypes_function = ctypes.CFUNCTYPE(*SECOND)


def make(kind, impl, second=False):
    """impl as a C-level function of the given kind (of the second-order signature if second)."""
    fn = (second_ctypes_function if second else ctypes_function)(impl)
    if kind == "ctypes":
        return fn
    if kind == "LowLevelCallable":
        scipy = pytest.importorskip("scipy")
        return scipy.LowLevelCallable(fn)
    if kind == "capsule":
        new_capsule = ctypes.pythonapi.PyCapsule_New
        new_capsule.restype = ctypes.py_object
        new_capsule.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
        signature = cyad._wrapper.SECOND_F64_SIGNATURE if second else cyad._wrapper.F64_SIGNATURE
        name = ctypes.create_string_buffer(signature.encode())
        capsule = new_capsule(ctypes.cast(fn, ctypes.c_void_p), name, None)
        _keep_alive.extend([fn, name])
        return capsule
    if kind == "cffi":
        cffi = pytest.importorskip("cffi")
        ffi = cffi.FFI()
        sizes = "ssize_t, " * (4 if second else 3)
        callback = ffi.callback(
            f"int(double *, double *, double *, double *, {sizes}void *)",
            lambda *args: impl(*[_cffi_pointer(ffi, a) for a in args[:4]], *args[4:]))
        _keep_alive.append(callback)
        return callback
    raise ValueError(kind)


def _cffi_pointer(ffi, pointer):
    return ctypes.cast(int(ffi.cast("uintptr_t", pointer)), P(ctypes.c_double))


_keep_alive = []
KINDS = ["ctypes", "LowLevelCallable", "capsule", "cffi"]


def point(n=7):
    return np.random.default_rng(0).uniform(0.5, 1.5, n)


# -- every kind through every operator ------------------------------------------------------

@pytest.mark.parametrize("chunk", [None, 3])
@pytest.mark.parametrize("kind", KINDS)
def test_jacobian_one_and_two_argument(kind, chunk):
    x = point()
    f = cyad.FunctionWrapper(make(kind, cube_plus_shift), out_shape=x.shape)
    np.testing.assert_allclose(cyad.jacobian(f, x, chunk=chunk), cube_plus_shift_jacobian(x),
                               rtol=1e-15)
    y = np.full(7, np.nan)
    value, jac = cyad.value_and_jacobian(f, x, y=y, chunk=chunk)
    assert value is y
    np.testing.assert_allclose(y, x**3 + np.append(x[1:], 0.0), rtol=1e-15)
    np.testing.assert_allclose(jac, cube_plus_shift_jacobian(x), rtol=1e-15)


@pytest.mark.parametrize("kind", KINDS)
def test_pushforward_and_batches(kind):
    x, dx = point(), point() - 1.0
    f = cyad.FunctionWrapper(make(kind, cube_plus_shift), out_shape=7)
    np.testing.assert_allclose(cyad.pushforward(f, x, dx), cube_plus_shift_jacobian(x) @ dx,
                               rtol=1e-14)
    tangents = tuple(np.eye(7)[:5])
    for t, r in zip(tangents, cyad.pushforward(f, x, tangents, chunk=2)):
        np.testing.assert_allclose(r, cube_plus_shift_jacobian(x) @ t, rtol=1e-15)


@pytest.mark.parametrize("kind", KINDS)
def test_gradient(kind):
    x = point()
    f = cyad.FunctionWrapper(make(kind, sum_of_squares), out_shape=())
    value, grad = cyad.value_and_gradient(f, x, chunk=4)
    assert value == pytest.approx(np.sum(x**2), rel=1e-15)
    np.testing.assert_allclose(grad, 2 * x, rtol=1e-15)


def test_derivative():
    f = cyad.FunctionWrapper(make("ctypes", cube_plus_shift), out_shape=1)
    np.testing.assert_allclose(cyad.derivative(f, 0.5), [0.75], rtol=1e-15)


def test_a_bare_c_function_is_wrapped_on_the_fly():
    x = point()
    y = np.zeros(7)
    jac = cyad.jacobian(make("ctypes", cube_plus_shift), x, y=y)
    np.testing.assert_allclose(jac, cube_plus_shift_jacobian(x), rtol=1e-15)


def test_a_wrapper_of_a_wrapper_keeps_or_overrides_the_output_shape():
    f = cyad.FunctionWrapper(make("ctypes", sum_of_squares), out_shape=())
    assert cyad.FunctionWrapper(f).out_shape == ()
    assert cyad.FunctionWrapper(f, out_shape=1).out_shape == (1,)


def test_python_callable_in_a_wrapper():
    x = point()
    f = cyad.FunctionWrapper(lambda x: x**3)
    assert f.kind == "python" and f.supports_float64 and f.supports_float32
    assert f.supports_second_order_float64 and f.supports_second_order_float32
    np.testing.assert_allclose(cyad.jacobian(f, x), np.diag(3 * x**2), rtol=1e-15)


def test_float32_function():
    def impl(x, dx, y, dy, n_x, n_y, width, context):
        a = np.ctypeslib.as_array
        xa, dxa, ya, dya = a(x, (n_x,)), a(dx, (n_x, width)), a(y, (n_y,)), a(dy, (n_y, width))
        ya[:] = 2 * xa
        dya[:] = 2 * dxa
        return 0

    f32 = ctypes.CFUNCTYPE(*SIGNATURE_F32)(impl)
    f = cyad.FunctionWrapper(f32, out_shape=3)
    assert f.supports_float32 and not f.supports_float64
    jac = cyad.jacobian(f, np.ones(3, np.float32))
    assert jac.dtype == np.float32
    np.testing.assert_array_equal(jac, 2 * np.eye(3))
    with pytest.raises(TypeError, match="no float64 function"):
        cyad.jacobian(f, np.ones(3))


def test_both_dtypes_in_one_wrapper():
    def f32_impl(x, dx, y, dy, n_x, n_y, width, context):
        return cube_plus_shift(ctypes.cast(x, P(ctypes.c_float)), dx, y, dy, n_x, n_y, width,
                               context)

    both = cyad.FunctionWrapper(make("ctypes", cube_plus_shift),
                                ctypes.CFUNCTYPE(*SIGNATURE_F32)(f32_impl), out_shape=7)
    assert both.supports_float64 and both.supports_float32


def test_user_data_reaches_the_function():
    scale = ctypes.c_double(4.0)
    seen = []

    def impl(x, dx, y, dy, n_x, n_y, width, context):
        seen.append(ctypes.cast(context, P(ctypes.c_double))[0])
        return cube_plus_shift(x, dx, y, dy, n_x, n_y, width, context)

    f = cyad.FunctionWrapper(ctypes_function(impl), user_data=ctypes.pointer(scale), out_shape=7)
    cyad.jacobian(f, point())
    assert seen == [4.0]


# -- errors -------------------------------------------------------------------------------

def test_nonzero_status_raises_and_the_prep_still_works():
    x = point()
    bad = cyad.FunctionWrapper(make("ctypes", failing), out_shape=7)
    good = cyad.FunctionWrapper(make("ctypes", cube_plus_shift), out_shape=7)
    prep = cyad.prepare_jacobian(bad, x)
    with pytest.raises(cyad.FunctionError, match="status 3") as info:
        cyad.jacobian(bad, x, prep=prep)
    assert info.value.status == 3
    np.testing.assert_allclose(cyad.jacobian(good, x, prep=prep), cube_plus_shift_jacobian(x),
                               rtol=1e-15)


def test_python_exception_keeps_its_traceback():
    def f(x):
        raise ArithmeticError("inside f")

    with pytest.raises(ArithmeticError, match="inside f") as info:
        cyad.jacobian(cyad.FunctionWrapper(f), point())
    assert info.traceback[-1].name == "f"


def test_wrong_signature_lists_the_accepted_ones():
    wrong = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(lambda x: x)
    with pytest.raises(TypeError, match=r"accepted signatures.*\n.*double const \*") as info:
        cyad.FunctionWrapper(wrong)
    message = str(info.value)
    for signature in [cyad._wrapper.F64_SIGNATURE, cyad._wrapper.F32_SIGNATURE,
                      cyad._wrapper.SECOND_F64_SIGNATURE, cyad._wrapper.SECOND_F32_SIGNATURE]:
        assert signature in message
    # one size argument too many is no signature of cyad's either
    too_long = ctypes.CFUNCTYPE(*SECOND[:8] + (ctypes.c_ssize_t,) + SECOND[8:])(lambda *a: 0)
    with pytest.raises(TypeError, match="cannot be differentiated"):
        cyad.FunctionWrapper(too_long)


def test_not_a_function():
    with pytest.raises(TypeError, match="cannot differentiate a int"):
        cyad.FunctionWrapper(3)


def test_c_function_needs_an_output_shape_without_y():
    with pytest.raises(TypeError, match="out_shape"):
        cyad.jacobian(cyad.FunctionWrapper(make("ctypes", cube_plus_shift)), point())


def test_prep_keeps_its_kind_of_function():
    x = point()
    c_function = cyad.FunctionWrapper(make("ctypes", cube_plus_shift), out_shape=7)
    prep = cyad.prepare_jacobian(c_function, x)
    with pytest.raises(ValueError, match="made for a C function"):
        cyad.jacobian(lambda x: x, x, prep=prep)
    prep = cyad.prepare_jacobian(lambda x: x, x)
    with pytest.raises(ValueError, match="made for a Python callable"):
        cyad.jacobian(c_function, x, prep=prep)


# -- numba ---------------------------------------------------------------------------------

def numba_copy():
    numba = pytest.importorskip("numba")
    t = numba.types
    signature = t.intc(t.CPointer(t.float64), t.CPointer(t.float64), t.CPointer(t.float64),
                       t.CPointer(t.float64), t.intp, t.intp, t.intp, t.voidptr)

    @numba.cfunc(signature)
    def copy(x, dx, y, dy, n_x, n_y, width, context):
        for i in range(n_x):
            y[i] = x[i]
        for i in range(n_x * width):
            dy[i] = dx[i]
        return 0

    return copy


def test_numba_cfunc():
    copy = numba_copy()
    x, dx, y = point(), point() - 1.0, np.zeros(7)
    value, tangent = cyad.value_and_pushforward(cyad.FunctionWrapper(copy), x, dx, y=y)
    np.testing.assert_array_equal(value, x)
    np.testing.assert_array_equal(tangent, dx)
    np.testing.assert_array_equal(cyad.jacobian(copy, x, y=y, chunk=3), np.eye(7))


@pytest.mark.parametrize("n", [10, 100])
def test_prepared_c_function_call_allocates_nothing(n, allocations_per_call):
    copy = cyad.FunctionWrapper(numba_copy())
    x, dx, y = np.arange(n, dtype=float), np.ones(n), np.zeros(n)
    pair = (np.zeros(n), np.zeros(n))
    prep = cyad.prepare_pushforward(copy, x, dx, y=y)
    value_and_pushforward = cyad.value_and_pushforward
    assert allocations_per_call(
        lambda: value_and_pushforward(copy, x, dx, y=y, prep=prep, out=pair)) == 0
    np.testing.assert_array_equal(pair[1], dx)


# -- second order ------------------------------------------------------------------------------

def cubes_second(x, dx, y, dy, n_x, n_y, outer, inner, context):
    """y_i = x_i**3 at second order, on nested duals of the layout cyad states."""
    lanes = NestedLanes(outer, inner)
    x, dx, y, dy = _arrays(x, dx, y, dy, n_x, n_y, lanes.width)
    (a, b, c), (ya, yb, yc) = lanes.split(dx), lanes.split(dy)
    d, dd = 3 * x**2, 6 * x
    y[:] = x**3
    ya[...] = d[:, None] * a
    yb[...] = d[:, None] * b
    yc[...] = d[:, None, None] * c + dd[:, None, None] * b[:, :, None] * a[:, None, :]
    return 0


def check_cubes_second(c_hooks, f, dtype=np.float64, rtol=1e-15, inner=2):
    """Call f's second-order function on seeded buffers and check y = x**3 against calculus."""
    rng = np.random.default_rng(inner)
    n, lanes = 5, NestedLanes(1, inner)
    x = rng.uniform(0.5, 1.5, n).astype(dtype)
    dx = np.zeros((n, lanes.width), dtype)
    xa, xb, xc = lanes.split(dx)
    xa[:, 0], xb[...], xc[..., 0] = (rng.standard_normal(n), rng.standard_normal((n, inner)),
                                     rng.standard_normal((n, inner)))
    y, dy = np.zeros(n, dtype), np.zeros((n, lanes.width), dtype)
    assert c_hooks.call_second(f, x, dx, y, dy, 1, inner) == 0
    x, a, b, c = (np.float64(t) for t in (x, xa[:, 0], xb, xc[..., 0]))
    ya, yb, yc = lanes.split(dy)
    d, dd = 3 * x**2, 6 * x
    np.testing.assert_allclose(y, x**3, rtol=rtol)
    np.testing.assert_allclose(ya[:, 0], d * a, rtol=rtol)
    np.testing.assert_allclose(yb, d[:, None] * b, rtol=rtol)
    np.testing.assert_allclose(yc[..., 0], d[:, None] * c + (dd * a)[:, None] * b,
                               rtol=rtol, atol=rtol)
    np.testing.assert_array_equal(dy[:, lanes.c.stop:], 0.0)   # padding untouched


@pytest.mark.parametrize("kind", KINDS)
def test_second_order_function_of_every_kind(c_hooks, kind):
    f = cyad.FunctionWrapper(make(kind, cubes_second, second=True))
    assert f.kind == kind
    assert f.supports_second_order_float64
    assert not (f.supports_float64 or f.supports_float32 or f.supports_second_order_float32)
    assert "second-order float64" in repr(f)
    check_cubes_second(c_hooks, f)


def test_second_order_numba_cfunc(c_hooks):
    numba = pytest.importorskip("numba")
    t = numba.types
    signature = t.intc(t.CPointer(t.float64), t.CPointer(t.float64), t.CPointer(t.float64),
                       t.CPointer(t.float64), t.intp, t.intp, t.intp, t.intp, t.voidptr)

    @numba.cfunc(signature)
    def cubes(x, dx, y, dy, n_x, n_y, outer, inner, context):
        # outer == 1: row i is a, b[0 .. inner), c[0 .. inner), padding (written out as a
        # user's compiled function must, from the documented layout)
        lanes = 1 + 2 * inner
        row = 1
        while row < lanes:
            row *= 2
        if lanes > 16:
            row = (lanes + 7) // 8 * 8
        for i in range(n_x):
            d, dd = 3 * x[i] ** 2, 6 * x[i]
            y[i] = x[i] ** 3
            a = dx[i * row]
            dy[i * row] = d * a
            for j in range(inner):
                b = dx[i * row + 1 + j]
                dy[i * row + 1 + j] = d * b
                dy[i * row + 1 + inner + j] = d * dx[i * row + 1 + inner + j] + dd * b * a
        return 0

    f = cyad.FunctionWrapper(cubes)
    assert f.kind == "numba" and f.supports_second_order_float64 and not f.supports_float64
    for inner in [1, 2, 4, 8]:
        check_cubes_second(c_hooks, f, inner=inner, rtol=1e-14)


def test_both_orders_and_dtypes_in_one_wrapper(c_hooks):
    def f32_impl(x, dx, y, dy, n_x, n_y, width, context):
        return cube_plus_shift(x, dx, y, dy, n_x, n_y, width, context)

    first32 = ctypes.CFUNCTYPE(*SIGNATURE_F32)(f32_impl)
    second32 = ctypes.CFUNCTYPE(*SECOND_F32)(cubes_second)
    f = cyad.FunctionWrapper(make("ctypes", cube_plus_shift), make("cffi", cubes_second, True),
                             first32, second32, out_shape=7)
    assert (f.supports_float64 and f.supports_float32 and f.supports_second_order_float64
            and f.supports_second_order_float32)
    x = point()
    np.testing.assert_allclose(cyad.jacobian(f, x), cube_plus_shift_jacobian(x), rtol=1e-15)
    for w in [f, cyad.FunctionWrapper(f)]:   # a wrapper of a wrapper has them too
        check_cubes_second(c_hooks, w)
        check_cubes_second(c_hooks, w, np.float32, rtol=1e-5, inner=4)


def test_two_second_order_functions_of_one_dtype():
    with pytest.raises(TypeError, match="two second-order float64 functions"):
        cyad.FunctionWrapper(make("ctypes", cubes_second, True), make("cffi", cubes_second, True))


def test_user_data_reaches_the_second_order_function(c_hooks):
    scale = ctypes.c_double(4.0)
    seen = []

    def impl(*args):
        seen.append(ctypes.cast(args[-1], P(ctypes.c_double))[0])
        return cubes_second(*args)

    f = cyad.FunctionWrapper(make("ctypes", cube_plus_shift), second_ctypes_function(impl),
                             user_data=ctypes.pointer(scale))
    check_cubes_second(c_hooks, f)
    assert seen == [4.0]


def test_wrap_of_second_order_functions(c_hooks):
    f = c_hooks.second_only_function()
    assert f.kind == "cython" and f.supports_second_order_float64
    assert not (f.supports_float64 or f.supports_float32 or f.supports_second_order_float32)
    x = np.arange(1.0, 4.0)
    dx = np.arange(3.0 * 8).reshape(3, 8)   # inner 2: rows of 8 lanes, the last 3 padding
    y, dy = np.zeros(3), np.zeros((3, 8))
    assert c_hooks.call_second(f, x, dx, y, dy, 1, 2) == 0
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(dy[:, :5], dx[:, :5])
    np.testing.assert_array_equal(dy[:, 5:], 0.0)
    with pytest.raises(TypeError, match="at least one function"):
        c_hooks.wrap_nothing()
