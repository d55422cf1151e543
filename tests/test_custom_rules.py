"""Custom derivative rules (cyad.custom_derivative) on every engine and order, against JAX.

The functions here hide their computation from cyad (np.asarray drops an engine array's
derivative, so without its rules cyad would refuse them) and give rules: written in NumPy
operations (every order), per direction or with the directions as a leading axis
(lanes=True), or declared first order (order=1, plain NumPy inside). References: JAX's
derivatives of the same mathematics, in float64.
"""
import ctypes
import ctypes.util
import importlib.util
import pathlib
import subprocess
import sys
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from derivative_references import exact_in_float32

import cyad

pytestmark = pytest.mark.xdist_group("test_custom_rules")

jax.config.update("jax_enable_x64", True)

ENGINES = ["dual", "tape"]
TOLERANCES = {np.float64: dict(rtol=1e-10, atol=1e-10), np.float32: dict(rtol=2e-3, atol=2e-3)}
X = exact_in_float32(np.array([0.3, -0.7, 1.1, 0.4]))
Y = exact_in_float32(np.array([0.9, 0.2, -0.5, 1.3]))


def _close(actual, expected, dtype):
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected),
                               **TOLERANCES[dtype])


# -- a function of two operands, a flag and a keyword, rules in NumPy operations -------------

@cyad.custom_derivative(nondiff_argnames=("flip",))
def warp(x, y, flip, *, scale=1.0):
    """scale * sin(x) * y (or y reversed), computed where cyad cannot see."""
    x, y = np.asarray(x), np.asarray(y)
    return scale * np.sin(x) * (y[::-1] if flip else y)


@warp.defjvp
def _warp_jvp(primals, tangents, *, flip, scale):
    (x, y), (tx, ty) = primals, tangents
    yy, ty = (y[::-1], ty[::-1]) if flip else (y, ty)
    return warp(x, y, flip, scale=scale), scale * (np.cos(x) * tx * yy + np.sin(x) * ty)


@warp.defvjp
def _warp_vjp(primals, cotangent, *, flip, scale):
    x, y = primals
    yy = y[::-1] if flip else y
    gy = scale * np.sin(x) * cotangent
    return scale * np.cos(x) * yy * cotangent, gy[::-1] if flip else gy


def _program(xp, z, warp_function):
    x, y = z[:4], z[4:]
    w = warp_function(x, y, True, scale=0.5) + warp_function(x * x, y, False)
    return xp.sum(w * w) + xp.sum(xp.exp(0.3 * w) * x)


def _jax_warp(x, y, flip, scale=1.0):
    return scale * jnp.sin(x) * (y[::-1] if flip else y)


Z = np.concatenate([X, Y])
JAX_F = jax.jit(lambda z: _program(jnp, z, _jax_warp))
_REFERENCES = {}


def _reference(name, function, *args):
    """jax.jit(function)(*args): a reference compiled as one function and computed once per
    name and arguments, for every engine and dtype that checks against it."""
    key = (name, *((np.shape(a), np.result_type(a).str, np.asarray(a).tobytes()) for a in args))
    if key not in _REFERENCES:
        _REFERENCES[key] = jax.jit(function)(*args)
    return _REFERENCES[key]


def _jax_f_gradient_and_hessian():
    return _reference("JAX_F", lambda z: (jax.grad(JAX_F)(z), jax.hessian(JAX_F)(z)), Z)


def _f(z):
    return _program(np, z, warp)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gradient_and_hessian_match_jax(engine, dtype):
    z = Z.astype(dtype)
    expected_gradient, expected_hessian = _jax_f_gradient_and_hessian()
    value, gradient = cyad.value_and_gradient(_f, z, engine=engine)
    _close(value, JAX_F(Z), dtype)
    _close(gradient, expected_gradient, dtype)
    _close(cyad.hessian(_f, z, engine=engine), expected_hessian, dtype)
    v = np.linspace(-1.0, 1.0, 8).astype(dtype)
    _close(cyad.hvp(_f, z, v, engine=engine), expected_hessian @ v, dtype)
    _close(cyad.second_derivative(lambda s: _f(z + s * v), dtype(0.0), engine=engine),
           v @ expected_hessian @ v, dtype)


@pytest.mark.parametrize("engine", ENGINES)
def test_jacobian_of_a_vector_function(engine):
    def g(z):
        return warp(z[:4], z[4:], True, scale=2.0)

    expected = _reference("warp-jacobian",
                          jax.jacfwd(lambda z: _jax_warp(z[:4], z[4:], True, 2.0)), Z)
    _close(cyad.jacobian(g, Z, engine=engine), expected, np.float64)


def test_nested_derivative():
    u, v = np.linspace(0.1, 0.8, 8), np.cos(np.arange(8.0))

    def inner(s):
        return cyad.derivative(lambda t: _f(Z + s * u + t * v), 0.0)

    _close(cyad.derivative(inner, 0.0), u @ _jax_f_gradient_and_hessian()[1] @ v, np.float64)


def test_plain_call_is_the_function_itself():
    assert np.array_equal(warp(X, Y, True, scale=0.5), 0.5 * np.sin(X) * Y[::-1])
    assert warp.__name__ == "warp" and "where cyad cannot see" in warp.__doc__
    assert "warp" in repr(warp)


@pytest.mark.parametrize("engine", ENGINES)
def test_in_place_function_writing_its_output(engine):
    # f(y, x) writing a custom function's result into y, which also feeds the next step
    def f(y, x):
        y[...] = warp(x, x, False)
        y[...] = warp(y, x, True)

    def reference(x):
        w = _jax_warp(x, x, False)
        return _jax_warp(w, x, True)

    _close(cyad.jacobian(f, X, y=np.zeros(4), engine=engine),
           _reference("in-place-jacobian", jax.jacfwd(reference), X), np.float64)


# -- lanes=True: every direction at once ------------------------------------------------------

@cyad.custom_derivative(lanes=True)
def matrix_cube(a):
    a = np.asarray(a)
    return a @ a @ a


@matrix_cube.defjvp
def _matrix_cube_jvp(primals, tangents):
    (a,), (t,) = primals, tangents     # t: (directions, n, n)
    a2 = a @ a
    return matrix_cube(a), t @ a2 + a @ t @ a + a2 @ t


@matrix_cube.defvjp
def _matrix_cube_vjp(primals, cotangent):
    (a,) = primals
    at = a.T
    return (cotangent @ (at @ at) + at @ cotangent @ at + (at @ at) @ cotangent,)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lanes_rule(engine, dtype):
    a0 = exact_in_float32(np.linspace(-0.5, 0.7, 9))

    def f(a):
        return np.sum(np.tanh(matrix_cube(a.reshape(3, 3))))

    def reference(a):
        m = a.reshape(3, 3)
        return jnp.sum(jnp.tanh(m @ m @ m))

    gradient, hessian = _reference(
        "matrix-cube", lambda a: (jax.grad(reference)(a), jax.hessian(reference)(a)), a0)
    a = a0.astype(dtype)
    _close(cyad.gradient(f, a, engine=engine), gradient, dtype)
    _close(cyad.hessian(f, a, engine=engine), hessian, dtype)


# -- several outputs -------------------------------------------------------------------------

@cyad.custom_derivative
def polar(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return np.hypot(x, y), np.arctan2(y, x)


@polar.defjvp
def _polar_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    r2 = x * x + y * y
    r = np.sqrt(r2)
    return polar(x, y), ((x * tx + y * ty) / r, (x * ty - y * tx) / r2)


@polar.defvjp
def _polar_vjp(primals, cotangent):
    (x, y), (gr, gt) = primals, cotangent
    r2 = x * x + y * y
    r = np.sqrt(r2)
    return x / r * gr - y / r2 * gt, y / r * gr + x / r2 * gt


@pytest.mark.parametrize("engine", ENGINES)
def test_several_outputs(engine):
    def f(z):
        r, t = polar(z[:4], z[4:])
        return np.sum(r * np.sin(t) + t * t)

    def reference(z):
        r, t = jnp.hypot(z[:4], z[4:]), jnp.arctan2(z[4:], z[:4])
        return jnp.sum(r * jnp.sin(t) + t * t)

    gradient, hessian = _reference(
        "polar", lambda z: (jax.grad(reference)(z), jax.hessian(reference)(z)), Z)
    _close(cyad.gradient(f, Z, engine=engine), gradient, np.float64)
    _close(cyad.hessian(f, Z, engine=engine), hessian, np.float64)


# -- *args operands ----------------------------------------------------------------------------

@cyad.custom_derivative
def product(*factors):
    out = np.ones_like(np.asarray(factors[0]))
    for f in factors:
        out = out * np.asarray(f)
    return out


@product.defjvp
def _product_jvp(primals, tangents):
    out = product(*primals)
    return out, sum(t * product(*(p for j, p in enumerate(primals) if j != i))
                    for i, t in enumerate(tangents))


@product.defvjp
def _product_vjp(primals, cotangent):
    return tuple(cotangent * product(*(p for j, p in enumerate(primals) if j != i))
                 for i in range(len(primals)))


@pytest.mark.parametrize("engine", ENGINES)
def test_varargs_operands(engine):
    def f(z):
        return np.sum(product(z[:4], np.sin(z[4:]), z[:4] + 1.0))

    def reference(z):
        return jnp.sum(z[:4] * jnp.sin(z[4:]) * (z[:4] + 1.0))

    gradient, hessian = _reference(
        "product", lambda z: (jax.grad(reference)(z), jax.hessian(reference)(z)), Z)
    _close(cyad.gradient(f, Z, engine=engine), gradient, np.float64)
    _close(cyad.hessian(f, Z, engine=engine), hessian, np.float64)


# -- order=1: rules of plain NumPy, first order only -------------------------------------------

@cyad.custom_derivative(order=1)
def softplus(x):
    return np.logaddexp(0.0, np.asarray(x))


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    x, t = np.asarray(primals[0]), np.asarray(tangents[0])   # plain values only
    return np.logaddexp(0.0, x), t / (1.0 + np.exp(-x))


@softplus.defvjp
def _softplus_vjp(primals, cotangent):
    x = np.asarray(primals[0])
    return (np.asarray(cotangent) / (1.0 + np.exp(-x)),)


def _softplus_program(xp, z, function):
    return xp.sum(function(z[:4] * z[4:]) ** 2)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_first_order_rules(engine, dtype):
    z = Z.astype(dtype)
    gradient, jacobian = _reference("softplus", lambda z: (
        jax.grad(lambda z: _softplus_program(jnp, z, jax.nn.softplus))(z),
        jax.jacfwd(lambda z: jax.nn.softplus(z * z))(z)), Z)
    _close(cyad.gradient(lambda z: _softplus_program(np, z, softplus), z, engine=engine),
           gradient, dtype)
    _close(cyad.jacobian(lambda z: softplus(z * z), z, engine=engine), jacobian, dtype)


@pytest.mark.parametrize("engine", ENGINES)
def test_first_order_rules_refuse_a_second_order(engine):
    def f(z):
        return _softplus_program(np, z, softplus)

    for operator in (cyad.hessian, lambda f, z, engine: cyad.hvp(f, z, z, engine=engine)):
        with pytest.raises(TypeError, match=r"softplus is declared first order \(order=1\)"):
            operator(f, Z, engine=engine)
    with pytest.raises(TypeError, match="declared first order"):
        cyad.second_derivative(lambda s: softplus(s * s), 0.5, engine=engine)


def test_first_order_rules_refuse_a_nested_derivative():
    def inner(s):
        return cyad.derivative(lambda t: softplus(s * t), 0.5)

    with pytest.raises(TypeError, match="declared first order"):
        cyad.derivative(inner, 0.3)


# -- a C function and its derivative, C functions too -----------------------------------------

LIBM = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
for _name in ("sin", "cos"):
    getattr(LIBM, _name).restype = ctypes.c_double
    getattr(LIBM, _name).argtypes = [ctypes.c_double]
C_SIN, C_COS = np.vectorize(LIBM.sin, otypes=[float]), np.vectorize(LIBM.cos, otypes=[float])


@cyad.custom_derivative(order=1)
def c_sin(x):
    return C_SIN(x)


@c_sin.defjvp
def _c_sin_jvp(primals, tangents):
    return C_SIN(primals[0]), C_COS(primals[0]) * tangents[0]


@c_sin.defvjp
def _c_sin_vjp(primals, cotangent):
    return (C_COS(primals[0]) * cotangent,)


@pytest.mark.parametrize("engine", ENGINES)
def test_c_function_with_c_derivative(engine):
    def f(z):
        return np.sum(c_sin(z * z) * z)

    def reference(z):
        return jnp.sum(jnp.sin(z * z) * z)

    gradient, jacobian = _reference("c_sin", lambda z: (
        jax.grad(reference)(z), jax.jacfwd(lambda z: jnp.sin(z) * z)(z)), Z)
    _close(cyad.gradient(f, Z, engine=engine), gradient, np.float64)
    _close(cyad.jacobian(lambda z: c_sin(z) * z, Z, engine=engine), jacobian, np.float64)
    with pytest.raises(TypeError, match="c_sin is declared first order"):
        cyad.hessian(f, Z, engine=engine)


# -- missing rules and wrong rules ---------------------------------------------------------------

def _cube(x):
    return np.asarray(x) ** 3


def test_missing_jvp_rule():
    f = cyad.custom_derivative(_cube)
    f.defvjp(lambda primals, ct: (3 * primals[0] ** 2 * ct,))
    with pytest.raises(TypeError, match=r"_cube has no JVP rule \(defjvp\), which forward mode"):
        cyad.gradient(lambda x: np.sum(f(x)), X)
    # the tape's reverse mode needs only the VJP rule
    _close(cyad.gradient(lambda x: np.sum(f(x)), X, engine="tape"), 3 * X ** 2, np.float64)


def test_missing_vjp_rule():
    f = cyad.custom_derivative(_cube)

    @f.defjvp
    def _(primals, tangents):
        return f(primals[0]), 3 * primals[0] ** 2 * tangents[0]

    with pytest.raises(TypeError, match=r"_cube has no VJP rule \(defvjp\), which reverse mode"):
        cyad.gradient(lambda x: np.sum(f(x)), X, engine="tape")
    _close(cyad.gradient(lambda x: np.sum(f(x)), X), 3 * X ** 2, np.float64)
    _close(cyad.hessian(lambda x: np.sum(f(x)), X), np.diag(6 * X), np.float64)


def test_no_rules_at_all():
    f = cyad.custom_derivative(_cube)
    for engine in ENGINES:
        with pytest.raises(TypeError, match="_cube has no"):
            cyad.gradient(lambda x: np.sum(f(x)), X, engine=engine)


@pytest.mark.parametrize("lanes", [False, True])
def test_wrongly_shaped_tangent(lanes):
    f = cyad.custom_derivative(_cube, lanes=lanes)
    f.defjvp(lambda primals, tangents: (f(primals[0]), np.ones((4, 3))))
    with pytest.raises(ValueError, match="JVP rule of .*_cube returned a tangent of shape"):
        cyad.jacobian(f, X)


def test_wrong_number_of_tangents():
    f = cyad.custom_derivative(lambda x: (np.asarray(x), np.asarray(x)))
    f.defjvp(lambda primals, tangents: (f(primals[0]), tangents[0]))
    with pytest.raises(ValueError, match="returned 1 tangents for 2 outputs"):
        cyad.jacobian(lambda x: f(x)[0], X)


def test_wrongly_shaped_cotangent():
    f = cyad.custom_derivative(_cube)
    f.defvjp(lambda primals, ct: (np.sum(ct),))
    with pytest.raises(ValueError, match=r"cotangent of shape \(\) for 'x' of shape \(4,\)"):
        cyad.gradient(lambda x: np.sum(f(x)), X, engine="tape")


def test_wrong_number_of_cotangents():
    f = cyad.custom_derivative(_cube)
    f.defvjp(lambda primals, ct: 3 * primals[0] ** 2 * ct)
    with pytest.raises(ValueError, match=r"must return a tuple of 1 cotangents, one per operand"):
        cyad.gradient(lambda x: np.sum(f(x)), X, engine="tape")


def test_an_operand_that_is_not_an_array():
    f = cyad.custom_derivative(lambda x, mode: np.asarray(x) * (2.0 if mode == "double" else 1))
    f.defjvp(lambda primals, tangents: (f(*primals), tangents[0]))
    with pytest.raises(TypeError, match="argument 'mode' .* is a str, not an array or a number: "
                                        "a parameter that is not differentiated belongs in "
                                        "nondiff_argnames"):
        cyad.gradient(lambda x: np.sum(f(x, "double")), X)


def test_one_name_for_nondiff_argnames():
    f = cyad.custom_derivative(lambda x, k: np.asarray(x) * k, nondiff_argnames="k")
    assert f.operand_names == ("x",)


def test_bad_definitions():
    with pytest.raises(TypeError, match="must be callable"):
        cyad.custom_derivative(3)
    with pytest.raises(ValueError, match="order must be None"):
        cyad.custom_derivative(_cube, order=2)
    with pytest.raises(ValueError, match="has no parameter 'y'"):
        cyad.custom_derivative(_cube, nondiff_argnames=("y",))
    with pytest.raises(TypeError, match=r"takes \*\*kwargs"):
        cyad.custom_derivative(lambda x, **kwargs: x)
    f = cyad.custom_derivative(_cube)
    with pytest.raises(TypeError, match="JVP rule of .* must be callable"):
        f.defjvp(None)
    with pytest.raises(TypeError, match="VJP rule of .* must be callable"):
        f.defvjp(None)


# -- threads ------------------------------------------------------------------------------------

def test_threads_define_and_use_their_own_functions():
    # each custom function carries its rules: nothing shared is written
    errors, results = [], {}

    def work(k):
        try:
            f = cyad.custom_derivative(lambda x: np.asarray(x) ** 2 * k)

            @f.defjvp
            def _(primals, tangents):
                return f(primals[0]), 2 * k * primals[0] * tangents[0]

            f.defvjp(lambda primals, ct: (2 * k * primals[0] * ct,))
            results[k] = [cyad.gradient(lambda x: np.sum(f(x) + warp(x, x, False)), X,
                                        engine=engine) for engine in ENGINES for _ in range(5)]
        except Exception as error:   # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    warp_gradient = jax.jit(jax.grad(lambda x: jnp.sum(_jax_warp(x, x, False))))(X)
    for k, found in results.items():
        expected = 2 * k * X + warp_gradient
        for gradient in found:
            _close(gradient, expected, np.float64)


# -- the worked example: implicit differentiation of scipy.optimize.root ---------------------------

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "scipy" / "implicit_root.py"


@pytest.fixture(scope="module")
def implicit_root():
    spec = importlib.util.spec_from_file_location("implicit_root", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _jax_unrolled_loss(w, theta, steps=200):
    # the fixed point by iteration (w is a contraction): JAX's derivatives of it converge to
    # the implicit function's
    z = jax.lax.fori_loop(0, steps, lambda _, z: jnp.tanh(w @ z + theta), jnp.zeros_like(theta))
    return jnp.sum(z ** 2) + theta @ z


def _jax_unrolled_gradient_and_hessian(w, theta):
    def derivatives(w, t):
        def loss(t):
            return _jax_unrolled_loss(w, t)
        return jax.grad(loss)(t), jax.hessian(loss)(t)
    return _reference("unrolled-loss", derivatives, w, theta)


@pytest.mark.parametrize("engine", ENGINES)
def test_implicit_differentiation_of_root(implicit_root, engine):
    theta = np.linspace(-1.0, 1.0, implicit_root.N)
    gradient, hessian = _jax_unrolled_gradient_and_hessian(implicit_root.W, theta)
    _close(cyad.gradient(implicit_root.loss, theta, engine=engine), gradient, np.float64)
    _close(cyad.hessian(implicit_root.loss, theta, engine=engine), hessian, np.float64)


def test_implicit_differentiation_of_root_nested(implicit_root):
    theta = np.linspace(-1.0, 1.0, implicit_root.N)
    u, v = np.cos(np.arange(6.0)), np.sin(np.arange(6.0) + 1.0)
    hessian = _jax_unrolled_gradient_and_hessian(implicit_root.W, theta)[1]

    def inner(s):
        return cyad.derivative(lambda t: implicit_root.loss(theta + s * u + t * v), 0.0)

    _close(cyad.derivative(inner, 0.0), u @ hessian @ v, np.float64)


def test_implicit_root_example_runs(tmp_path):
    done = subprocess.run([sys.executable, str(EXAMPLE), "--quick"], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("gradient vs the unrolled iteration") == 2


# -- random programs mixing custom functions with NumPy's -------------------------------------

@cyad.custom_derivative(lanes=True)
def scaled_exp(x, a):
    """a * exp(x / 2), with rules taking all directions at once."""
    return np.asarray(a) * np.exp(np.asarray(x) / 2)


@scaled_exp.defjvp
def _scaled_exp_jvp(primals, tangents):
    (x, a), (tx, ta) = primals, tangents
    out, e = scaled_exp(x, a), np.exp(x / 2)
    tangent = None if tx is None else out * tx / 2
    if ta is not None:
        tangent = ta * e if tangent is None else tangent + ta * e
    return out, tangent


@scaled_exp.defvjp
def _scaled_exp_vjp(primals, cotangent):
    x, a = primals
    e = np.exp(x / 2)
    return a * e * cotangent / 2, e * cotangent


# (name, cyad's function, JAX's function, arity)
RANDOM_OPERATIONS = [
    ("warp", lambda a, b: warp(a, b, True, scale=0.7),
     lambda a, b: _jax_warp(a, b, True, 0.7), 2),
    ("polar", lambda a, b: polar(a, b + 2.0)[0] * polar(a, b + 2.0)[1],
     lambda a, b: jnp.hypot(a, b + 2.0) * jnp.arctan2(b + 2.0, a), 2),
    ("product", lambda a, b: product(a, b, a), lambda a, b: a * b * a, 2),
    ("scaled_exp", lambda a, b: scaled_exp(np.tanh(a), b), lambda a, b: b * jnp.exp(
        jnp.tanh(a) / 2), 2),
    ("sin", np.sin, jnp.sin, 1),
    ("tanh-sum", lambda a: np.tanh(a + np.sum(a) / 4), lambda a: jnp.tanh(a + jnp.sum(a) / 4), 1),
]


def _random_program(seed):
    """A program of six steps, each an operation of the list on earlier results."""
    rng = np.random.default_rng(seed)
    steps = []
    for k in range(6):
        op = int(rng.integers(len(RANDOM_OPERATIONS)))
        arity = RANDOM_OPERATIONS[op][3]
        steps.append((op, tuple(int(i) for i in rng.integers(0, k + 2, size=arity))))

    def program(z, jax_version):
        pool = [z[:4], z[4:]]
        for op, operands in steps:
            function = RANDOM_OPERATIONS[op][2 if jax_version else 1]
            pool.append(function(*(pool[i] for i in operands)))
        total = pool[-1] + 0.5 * pool[-2]
        return (jnp if jax_version else np).sum(total * total)
    return program, {RANDOM_OPERATIONS[op][0] for op, _ in steps}


def test_random_programs_use_every_operation():
    used = set().union(*(_random_program(seed)[1] for seed in range(8)))
    assert used == {name for name, *_ in RANDOM_OPERATIONS}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", range(8))
def test_random_programs(seed, engine):
    program, _ = _random_program(seed)

    def reference(z):
        return program(z, True)

    z = 0.5 * Z
    gradient, hessian = _reference(
        f"random-program-{seed}", lambda z: (jax.grad(reference)(z), jax.hessian(reference)(z)),
        z)
    _close(cyad.gradient(lambda z: program(z, False), z, engine=engine), gradient, np.float64)
    _close(cyad.hessian(lambda z: program(z, False), z, engine=engine), hessian, np.float64)


# -- rules checked where they are declared ----------------------------------------------------

def _square_with(jvp_shape_wrong=False, vjp_shape_wrong=False, vjp_factor=2.0, check=False):
    @cyad.custom_derivative(check=check)
    def square(x):
        return np.asarray(x) ** 2

    @square.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        tangent = 2.0 * x * t
        return square(x), np.sum(tangent) if jvp_shape_wrong else tangent

    @square.defvjp
    def _(primals, cotangent):
        (x,) = primals
        ct = vjp_factor * x * cotangent
        return (np.sum(ct) if vjp_shape_wrong else ct,)

    return square


@pytest.mark.parametrize("engine", ["dual", "tape"])
@pytest.mark.parametrize("operator", ["jacobian", "gradient"])
def test_a_vjp_rule_of_the_wrong_shape_fails_on_every_engine_at_first_use(operator, engine):
    # the dual engine never runs the VJP rule: it is checked all the same
    square = _square_with(vjp_shape_wrong=True)
    f = (lambda x: square(x)) if operator == "jacobian" else (lambda x: np.sum(square(x)))
    with pytest.raises(ValueError, match=r"the VJP rule of .*square returned a cotangent of "
                       r"shape \(\) for 'x' of shape \(4,\)"):
        getattr(cyad, operator)(f, np.linspace(0.1, 1.0, 4), engine=engine)


@pytest.mark.parametrize("engine", ["dual", "tape"])
def test_a_jvp_rule_of_the_wrong_shape_fails_on_every_engine_at_first_use(engine):
    # the tape's gradient never runs the JVP rule: it is checked all the same
    square = _square_with(jvp_shape_wrong=True)
    with pytest.raises(ValueError, match=r"the JVP rule of .*square returned a tangent of "
                       r"shape \(\) for an output of shape \(4,\)"):
        cyad.gradient(lambda x: np.sum(square(x)), np.linspace(0.1, 1.0, 4), engine=engine)


def test_a_rule_returning_no_numbers_is_refused():
    @cyad.custom_derivative
    def double(x):
        return 2.0 * np.asarray(x)

    double.defjvp(lambda primals, tangents: (double(primals[0]), 2.0 * tangents[0]))
    double.defvjp(lambda primals, cotangent: (np.full(np.shape(cotangent), "2"),))
    with pytest.raises(TypeError, match=r"VJP rule of .*double returned a cotangent of dtype "
                       r"<U1, not of numbers"):
        cyad.jacobian(double, np.ones(3))


@pytest.mark.parametrize("engine", ["dual", "tape"])
def test_check_holds_the_rules_to_each_other(engine):
    x = np.linspace(0.1, 1.0, 4)
    wrong = _square_with(vjp_factor=3.0, check=True)
    with pytest.raises(ValueError, match=r"the JVP and VJP rules of .*square disagree "
                       r"\(check=True\)"):
        cyad.gradient(lambda x: np.sum(wrong(x)), x, engine=engine)
    # without check=, a VJP rule of the right shape is taken as it is
    unchecked = _square_with(vjp_factor=3.0)
    _close(cyad.gradient(lambda x: np.sum(unchecked(x)), x, engine="tape"), 3.0 * x,
           np.float64)
    right = _square_with(check=True)
    _close(cyad.gradient(lambda x: np.sum(right(x)), x, engine=engine), 2.0 * x, np.float64)


def test_the_rules_are_checked_once_per_shape():
    calls = []

    @cyad.custom_derivative
    def triple(x):
        return 3.0 * np.asarray(x)

    @triple.defvjp
    def _(primals, cotangent):
        calls.append(np.shape(cotangent))
        return (3.0 * cotangent,)

    triple.defjvp(lambda primals, tangents: (triple(primals[0]), 3.0 * tangents[0]))
    for n in (3, 3, 3, 5):
        cyad.jacobian(triple, np.ones(n), engine="dual")
    assert calls == [(3,), (5,)]
