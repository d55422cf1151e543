"""The operators on complex x and on functions of complex values, against JAX's conventions.

The random programs of test_complex_programs.py, started from a complex x (z), and read out
either as a real number (jax.grad, jax.jvp of jax.grad) or as a vector of complex values
(jax.jvp, jax.vjp, jax.jacfwd of a real x); holomorphic programs (chains of holomorphic
steps) for holomorphic=True (jax.grad, jax.jacfwd, jax.hessian with holomorphic=True).
Then the operators' forms (prep=, out=, value_*, batches, y=, nesting, float32) and the
refusals, where JAX refuses too.
"""
import numpy as np
import pytest
from derivative_references import exact_in_float32, jax, seeded
from scenarios import ENGINES
from test_complex_programs import PROGRAMS, _into_domain, _step

import cyad

pytestmark = [pytest.mark.xdist_group("test_complex_operators"),
              pytest.mark.skipif(jax is None, reason="JAX's conventions are the reference")]

if jax is not None:
    import jax.numpy as jnp
else:
    jnp = None

N = 6
TOLERANCE = {np.float64: dict(rtol=1e-9, atol=1e-10), np.float32: dict(rtol=3e-3, atol=3e-4)}
FLOAT32_EVERY = 3


def _close(actual, expected, dtype=np.float64):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), **TOLERANCE[dtype])


def _complex_point(name, dtype=np.complex128):
    rng = seeded(name)
    return (exact_in_float32(rng.uniform(-1.0, 1.0, N))
            + 1j * exact_in_float32(rng.uniform(-1.0, 1.0, N))).astype(dtype)


def _pool(program, xp, z):
    pool = [z * (1.0 - 0.5j) + 0.3 * xp.conj(z[::-1])]
    for kind, inputs, options in program.steps[1:]:
        pool.append(_step(xp, kind, [pool[i] for i in inputs], options))
    return pool


def real_valued(program, xp, z):
    """A real number of the program's unread values (test_complex_programs' readout)."""
    pool, total = _pool(program, xp, z), 0.0
    for i, w in program.weights.items():
        v = pool[i]
        total = total + xp.sum(w[0] * xp.real(v) + w[1] * xp.imag(v)
                               + w[2] * xp.abs(_into_domain(xp, v, "right"))
                               + w[3] * xp.angle(_into_domain(xp, v, "right")))
    return total


def complex_valued(program, xp, z):
    """The program's unread values, weighted and concatenated: a complex vector."""
    pool = _pool(program, xp, z)
    return xp.concatenate([(w[0] + 1j * w[1]) * pool[i] for i, w in program.weights.items()])


def of_real(program, xp, x):
    """complex_valued of a complex number made of a real x."""
    return complex_valued(program, xp, x * (1.0 + 0.5j) + 1j * x[::-1])


PROGRAM_COUNT = 12      # (test_complex_programs.py runs all of them on real x)
CASES = [pytest.param(program, dtype, engine, id=f"{program.name}-{np.dtype(dtype).name}-{engine}")
         for seed, program in enumerate(PROGRAMS[:PROGRAM_COUNT])
         for dtype in ([np.float64, np.float32] if seed % FLOAT32_EVERY == 0 else [np.float64])
         for engine in ENGINES]
_REFERENCES = {}


def _reference(kind, program):
    """JAX's answers for a program read out as `kind`, computed once for every case."""
    key = (kind, program.name)
    if key not in _REFERENCES:
        z = jnp.asarray(_complex_point(program.name))
        v = jnp.asarray(_complex_point(program.name + "-v"))
        x = jnp.asarray(exact_in_float32(seeded(program.name + "-x").uniform(-1.0, 1.0, N)))
        if kind == "real":
            g = lambda w: real_valued(program, jnp, w)  # noqa: E731
            found = {"value": g(z), "gradient": jax.grad(g)(z), "jacobian": jax.jacrev(g)(z),
                     "hvp": jax.jvp(jax.grad(g), (z,), (v,))[1]}
        elif kind == "complex":
            g = lambda w: complex_valued(program, jnp, w)  # noqa: E731
            value, tangent = jax.jvp(g, (z,), (v,))
            ct = np.exp(0.5j * np.arange(len(value)))
            found = {"value": value, "tangent": tangent, "ct": ct,
                     "pullback": jax.vjp(g, z)[1](jnp.asarray(ct))[0]}
        else:
            g = lambda t: of_real(program, jnp, t)  # noqa: E731
            dx = np.linspace(-1.0, 1.0, N)
            ct = np.exp(1j * np.arange(len(g(x))))
            found = {"jacobian": jax.jacfwd(g)(x), "dx": dx,
                     "tangent": jax.jvp(g, (x,), (jnp.asarray(dx),))[1], "ct": ct,
                     "pullback": jax.vjp(g, x)[1](jnp.asarray(ct))[0]}
        _REFERENCES[key] = {k: np.asarray(a) for k, a in found.items()}
    return _REFERENCES[key]


def _complex_dtype(dtype):
    return np.complex128 if dtype == np.float64 else np.complex64


@pytest.mark.parametrize("program, dtype, engine", CASES)
def test_real_function_of_complex_x(program, dtype, engine):
    exact = _reference("real", program)
    z = _complex_point(program.name, _complex_dtype(dtype))
    v = _complex_point(program.name + "-v", _complex_dtype(dtype))
    f = lambda w: real_valued(program, np, w)  # noqa: E731
    value, gradient = cyad.value_and_gradient(f, z, engine=engine)
    assert gradient.dtype == _complex_dtype(dtype)
    _close(value, exact["value"], dtype)
    _close(gradient, exact["gradient"], dtype)
    _close(cyad.jacobian(f, z, engine=engine), exact["jacobian"], dtype)
    _close(cyad.hvp(f, z, v, engine=engine), exact["hvp"], dtype)


@pytest.mark.parametrize("program, dtype, engine", CASES)
def test_complex_function_of_complex_x(program, dtype, engine):
    exact = _reference("complex", program)
    z = _complex_point(program.name, _complex_dtype(dtype))
    dz = _complex_point(program.name + "-v", _complex_dtype(dtype))
    f = lambda w: complex_valued(program, np, w)  # noqa: E731
    value, tangent = cyad.value_and_pushforward(f, z, dz, engine=engine)
    assert tangent.dtype == _complex_dtype(dtype)
    _close(value, exact["value"], dtype)
    _close(tangent, exact["tangent"], dtype)
    ct = exact["ct"].astype(_complex_dtype(dtype))
    _close(cyad.pullback(f, z, ct, engine=engine), exact["pullback"], dtype)


@pytest.mark.parametrize("program, dtype, engine", CASES)
def test_complex_function_of_real_x(program, dtype, engine):
    exact = _reference("of real", program)
    x = exact_in_float32(seeded(program.name + "-x").uniform(-1.0, 1.0, N)).astype(dtype)
    f = lambda t: of_real(program, np, t)  # noqa: E731
    jacobian = cyad.jacobian(f, x, engine=engine)
    assert jacobian.dtype == _complex_dtype(dtype)
    _close(jacobian, exact["jacobian"], dtype)
    _close(cyad.pushforward(f, x, exact["dx"].astype(dtype), engine=engine), exact["tangent"],
           dtype)
    _close(cyad.pullback(f, x, exact["ct"].astype(_complex_dtype(dtype)), engine=engine),
           exact["pullback"], dtype)


# -- holomorphic functions -------------------------------------------------------------------

HOLOMORPHIC_STEPS = ["exp", "sin", "cos", "tanh", "log", "sqrt", "square", "reciprocal",
                     "arctan", "scale", "matmul", "fft", "cumsum", "power", "product"]


def _holomorphic_program(seed):
    rng = seeded(f"holomorphic-{seed}")
    steps = [HOLOMORPHIC_STEPS[(seed * 3 + k) % len(HOLOMORPHIC_STEPS)]
             for k in range(int(rng.integers(3, 6)))]
    constants = {"scale": complex(*rng.uniform(-1, 1, 2)),
                 "matrix": rng.uniform(-1, 1, (4, 4)) + 1j * rng.uniform(-1, 1, (4, 4)),
                 "weights": rng.uniform(-1, 1, 4) + 1j * rng.uniform(-1, 1, 4)}
    return steps, constants


def _holomorphic(program, xp, z):
    steps, c = program
    for step in steps:
        w = z / (2.0 + xp.sqrt(1.0 + z * z))   # holomorphic near the points below, |w| < 1
        if step in ("log", "sqrt", "reciprocal"):
            z = getattr(xp, step)(2.0 + w)
        elif step in ("tanh", "arctan"):
            z = getattr(xp, step)(0.5 * w)
        elif step in ("exp", "sin", "cos", "square"):
            z = getattr(xp, step)(z)
        elif step == "scale":
            z = c["scale"] * z + 0.5j
        elif step == "matmul":
            z = c["matrix"] @ z
        elif step == "fft":
            z = xp.fft.fft(z, norm="ortho")
        elif step == "cumsum":
            z = xp.cumsum(z)
        elif step == "power":
            z = (2.0 + w) ** (1.5 - 0.5j)
        else:
            z = z * z[::-1]
    return z


HOLOMORPHIC = [_holomorphic_program(seed) for seed in range(8)]


_DIRECTION = np.array([1.0, 0.5, -0.25j, 1j])
_HOLOMORPHIC_REFERENCES = {}


def _holomorphic_case(seed, xp):
    program = HOLOMORPHIC[seed]
    z = _complex_point(f"holomorphic-point-{seed}")[:4] * 0.5
    v = _complex_point(f"holomorphic-v-{seed}")[:4]
    vector = lambda w: _holomorphic(program, xp, w)  # noqa: E731
    scalar = lambda w: xp.sum(program[1]["weights"] * _holomorphic(program, xp, w))  # noqa: E731
    line = lambda t: scalar(t * _DIRECTION + z)  # noqa: E731   (a function of a scalar)
    return z, v, vector, scalar, line


def _holomorphic_reference(seed):
    if seed not in _HOLOMORPHIC_REFERENCES:
        z, v, vector, scalar, line = _holomorphic_case(seed, jnp)
        grad, d = jax.grad(scalar, holomorphic=True), jax.jacfwd(line, holomorphic=True)
        found = {"jacobian": jax.jacfwd(vector, holomorphic=True)(z), "value": scalar(z),
                 "gradient": grad(z), "hessian": jax.hessian(scalar, holomorphic=True)(z),
                 "hvp": jax.jvp(grad, (z,), (v,))[1], "line": line(complex(z[0])),
                 "first": d(complex(z[0])),
                 "second": jax.jacfwd(d, holomorphic=True)(complex(z[0]))}
        _HOLOMORPHIC_REFERENCES[seed] = {k: np.asarray(a) for k, a in found.items()}
    return _HOLOMORPHIC_REFERENCES[seed]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", range(len(HOLOMORPHIC)))
def test_holomorphic(seed, engine):
    exact = _holomorphic_reference(seed)
    z, v, vector, scalar, line = _holomorphic_case(seed, np)
    _close(cyad.jacobian(vector, z, engine=engine, holomorphic=True), exact["jacobian"])
    value, gradient = cyad.value_and_gradient(scalar, z, engine=engine, holomorphic=True)
    _close([value], [exact["value"]])
    _close(gradient, exact["gradient"])
    value, gradient, hessian = cyad.value_gradient_and_hessian(scalar, z, engine=engine,
                                                               holomorphic=True)
    _close([value], [exact["value"]])
    _close(gradient, exact["gradient"])
    _close(hessian, exact["hessian"])
    _close(cyad.hvp(scalar, z, v, engine=engine, holomorphic=True), exact["hvp"])
    # a scalar x: derivative and second derivative
    point = complex(z[0])
    _close(cyad.derivative(line, point, engine=engine, holomorphic=True), exact["first"])
    value, first, second = cyad.value_derivative_and_second_derivative(
        line, point, engine=engine, holomorphic=True)
    _close([value, first, second], [exact["line"], exact["first"], exact["second"]])


# -- the operators' forms ------------------------------------------------------------------


def _f(z):
    return np.exp(z) * np.sin(np.conj(z)) + z * z[::-1]


def _jf(z):
    return jnp.exp(z) * jnp.sin(jnp.conj(z)) + z * z[::-1]


def _loss(z):
    return np.sum(np.abs(np.sin(z)) ** 2) + np.real(np.vdot(z, z[::-1]))


def _jloss(z):
    return jnp.sum(jnp.abs(jnp.sin(z)) ** 2) + jnp.real(jnp.vdot(z, z[::-1]))


@pytest.mark.parametrize("engine", ENGINES)
def test_prepared_calls_with_out_follow_the_point(engine):
    z0, dz = _complex_point("prep-z0"), _complex_point("prep-dz")
    prep = cyad.prepare_pushforward(_f, z0, dz, engine=engine)
    out = np.empty(N, complex)
    for k in range(3):
        z = _complex_point(f"prep-z{k}")
        assert cyad.pushforward(_f, z, dz, prep=prep, out=out) is out
        _close(out, jax.jvp(_jf, (z,), (dz,))[1])
        z += 0.25j                                  # the same array, new values
        cyad.pushforward(_f, z, dz, prep=prep, out=out)
        _close(out, jax.jvp(_jf, (z,), (dz,))[1])
    value_out = np.empty(N, complex)
    value, tangent = cyad.value_and_pushforward(_f, z, dz, prep=prep, out=(value_out, out))
    assert value is value_out and tangent is out
    _close(value, _f(z))
    gradient_prep = cyad.prepare_gradient(_loss, z0, engine=engine)
    for k in range(2):
        z = _complex_point(f"prep-g{k}")
        assert cyad.gradient(_loss, z, prep=gradient_prep, out=out) is out
        _close(out, jax.grad(_jloss)(z))
    pullback_prep = cyad.prepare_pullback(_f, z0, dz, engine=engine)
    assert cyad.pullback(_f, z, dz, prep=pullback_prep, out=out) is out
    _close(out, jax.vjp(_jf, z)[1](dz)[0])
    hvp_prep = cyad.prepare_hvp(_loss, z0, dz, engine=engine)
    first = np.empty(N, complex)
    assert cyad.gradient_and_hvp(_loss, z, dz, prep=hvp_prep, out=(first, out)) == (first, out)
    _close(first, jax.grad(_jloss)(z))
    _close(out, jax.jvp(jax.grad(_jloss), (z,), (dz,))[1])


@pytest.mark.parametrize("engine", ENGINES)
def test_batches(engine):
    z = _complex_point("batch-z")
    tangents = tuple(_complex_point(f"batch-{k}") for k in range(3))
    results = cyad.pushforward(_f, z, tangents, engine=engine)
    assert isinstance(results, tuple) and len(results) == 3
    for t, r in zip(tangents, results, strict=True):
        _close(r, jax.jvp(_jf, (z,), (t,))[1])
    pulled = cyad.pullback(_f, z, tangents, engine=engine)
    for t, r in zip(tangents, pulled, strict=True):
        _close(r, jax.vjp(_jf, z)[1](t)[0])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_real_prep_answers_complex_values_once_it_meets_them(engine):
    # real x, f of complex values: the prep is a real one until f shows its values
    f = lambda x: np.exp(1j * x) * x  # noqa: E731
    jf = lambda x: jnp.exp(1j * x) * x  # noqa: E731
    x, dx = np.linspace(0.1, 0.6, N), np.linspace(1.0, 2.0, N)
    prep = cyad.prepare_pushforward(f, x, dx, engine=engine)
    for k in range(3):
        point = x + 0.1 * k
        _close(cyad.pushforward(f, point, dx, prep=prep), jax.jvp(jf, (point,), (dx,))[1])
    jacobian_prep = cyad.prepare_jacobian(f, x, engine=engine)
    _close(cyad.jacobian(f, x + 1.0, prep=jacobian_prep), jax.jacfwd(jf)(x + 1.0))
    # a second derivative of complex values of a real scalar (jax.jacfwd twice)
    s = lambda t: np.exp(1j * t) * t ** 2  # noqa: E731
    value, first, second = cyad.value_derivative_and_second_derivative(s, 0.3, engine=engine)
    js = lambda t: jnp.exp(1j * t) * t ** 2  # noqa: E731
    _close([value, first, second],
           [js(0.3), jax.jacfwd(js)(0.3), jax.jacfwd(jax.jacfwd(js))(0.3)])


@pytest.mark.parametrize("engine", ENGINES)
def test_two_argument_f_of_complex_x(engine):
    def f(y, z):
        y[...] = np.abs(z) ** 2 + np.real(z * z[::-1])

    def jf(z):
        return jnp.abs(z) ** 2 + jnp.real(z * z[::-1])

    z, y = _complex_point("y-z"), np.empty(N)
    ct = np.linspace(-1.0, 1.0, N)
    _close(cyad.pullback(f, z, ct, y=y, engine=engine), jax.vjp(jf, z)[1](ct)[0])
    _close(y, jf(z))
    _close(cyad.jacobian(f, z, y=y, engine=engine), jax.jacrev(jf)(z))


def _written_into_y(y, z):
    y[...] = np.exp(z) * z[::-1]
    y[0] += 1j * z[1]
    y[2] = y[2] * y[1]          # reads what it wrote


def _written_into_y_functionally(z):
    y = jnp.exp(z) * z[::-1]
    y = y.at[0].add(1j * z[1])
    return y.at[2].set(y[2] * y[1])


def _phases_into_y(y, x):
    y[...] = np.exp(1j * x) * x
    y[1:] *= 2 - 1j


@pytest.mark.parametrize("engine", ENGINES)
def test_two_argument_f_with_complex_y(engine):
    z, dz, y = _complex_point("cy-z"), _complex_point("cy-dz"), np.empty(N, complex)
    jf = _written_into_y_functionally
    value, tangent = cyad.value_and_pushforward(_written_into_y, z, dz, y=y, engine=engine)
    expected_value, expected_tangent = jax.jvp(jf, (z,), (dz,))
    assert value is y
    _close(y, expected_value)
    _close(tangent, expected_tangent)
    ct = _complex_point("cy-ct")
    _close(cyad.pullback(_written_into_y, z, ct, y=y, engine=engine), jax.vjp(jf, z)[1](ct)[0])
    prep = cyad.prepare_pushforward(_written_into_y, z, dz, y=y, engine=engine)
    out = np.empty(N, complex)
    for k in range(2):
        point = z + 0.25 * k
        assert cyad.pushforward(_written_into_y, point, dz, y=y, prep=prep, out=out) is out
        _close(out, jax.jvp(jf, (point,), (dz,))[1])
        _close(y, jf(point))
    # a real x
    x = np.linspace(0.2, 1.2, N)
    jh = lambda x: (jnp.exp(1j * x) * x).at[1:].multiply(2 - 1j)  # noqa: E731
    _close(cyad.jacobian(_phases_into_y, x, y=y, engine=engine), jax.jacfwd(jh)(x))
    _close(y, jh(x))
    with pytest.raises(ValueError, match="dtype complex128"):
        cyad.pushforward(_written_into_y, z, dz, y=np.empty(N, np.complex64), prep=prep)


@pytest.mark.parametrize("engine", ENGINES)
def test_nested_in_a_real_differentiation(engine):
    # d/dx of a real readout of a JVP taken at a complex point made of x
    dz = _complex_point("nested-dz")

    def g(x):
        return np.sum(np.real(cyad.pushforward(_f, x + 1j * x[::-1], dz)) ** 2)

    def jg(x):
        return jnp.sum(jnp.real(jax.jvp(_jf, (x + 1j * x[::-1],), (dz,))[1]) ** 2)

    x = np.linspace(-0.5, 0.5, N)
    _close(cyad.gradient(g, x, engine=engine), jax.grad(jg)(x))


@pytest.mark.parametrize("engine", ENGINES)
def test_complex64(engine):
    z = _complex_point("c64").astype(np.complex64)
    gradient = cyad.gradient(_loss, z, engine=engine)
    assert gradient.dtype == np.complex64
    _close(gradient, jax.grad(_jloss)(z.astype(np.complex128)), np.float32)
    tangent = cyad.pushforward(_f, z, z, engine=engine)
    assert tangent.dtype == np.complex64


REFUSED = [
    (lambda e: cyad.gradient(_f, _complex_point("r"), engine=e), "takes a real-valued f"),
    (lambda e: cyad.hvp(_f, _complex_point("r"), _complex_point("r"), engine=e),
     "takes a real-valued f"),
    (lambda e: cyad.jacobian(_f, _complex_point("r"), engine=e), "holomorphic=True"),
    (lambda e: cyad.hessian(_loss, _complex_point("r"), engine=e), "hvp"),
    (lambda e: cyad.derivative(np.sin, 1.0 + 1.0j, engine=e), "holomorphic=True"),
    (lambda e: cyad.gradient(np.sum, np.ones(3), engine=e, holomorphic=True),
     "takes a complex x"),
    (lambda e: cyad.gradient(_loss, _complex_point("r"), engine=e, holomorphic=True),
     "takes an f of complex values"),
    (lambda e: cyad.jacobian(lambda y, z: None, _complex_point("r"), y=np.zeros(N, complex),
                             engine=e), "holomorphic=True"),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("call, match", REFUSED)
def test_refused_where_jax_refuses(call, match, engine):
    with pytest.raises(TypeError, match=match):
        call(engine)


def test_a_prep_checks_its_calls():
    z, dz = _complex_point("check"), _complex_point("check-dz")
    prep = cyad.prepare_pushforward(_f, z, dz)
    with pytest.raises(ValueError, match="made for complex x"):
        cyad.pushforward(_f, z.real, dz.real, prep=prep)
    with pytest.raises(ValueError, match="shape"):
        cyad.pushforward(_f, z[:3], dz[:3], prep=prep)
    with pytest.raises(ValueError, match="made for pushforward"):
        cyad.pullback(_f, z, dz, prep=prep)
    with pytest.raises(ValueError, match="shape"):
        cyad.pushforward(_f, z, dz, prep=prep, out=np.empty(N + 1, complex))
    with pytest.raises(ValueError, match="dtype"):
        cyad.pushforward(_f, z, dz, prep=prep, out=np.empty(N))
    gradient_prep = cyad.prepare_gradient(_loss, z)
    with pytest.raises(ValueError, match="holomorphic"):
        cyad.gradient(_loss, z, prep=gradient_prep, holomorphic=True)


def test_lists_and_scalars_of_complex_numbers():
    np.testing.assert_allclose(cyad.gradient(lambda z: np.sum(np.abs(z) ** 2), [1 + 2j, 3j]),
                               [2 - 4j, -6j])
    np.testing.assert_allclose(cyad.pullback(np.exp, [1 + 1j, 2.0], [1.0, 1j]),
                               [np.exp(1 + 1j), 1j * np.exp(2.0)])
    tangent = cyad.pushforward(np.sin, 1 + 1j, 1.0)
    assert isinstance(tangent, complex)
    np.testing.assert_allclose(tangent, np.cos(1 + 1j))


def test_a_prep_serves_one_call_at_a_time():
    z = _complex_point("busy")
    prep = cyad.prepare_gradient(_loss, z)

    def inner(w):          # a call of the same prep from inside f
        cyad.gradient(_loss, z, prep=prep)
        return _loss(w)

    with pytest.raises(RuntimeError, match="in use by another call"):
        cyad.gradient(inner, z, prep=prep)
    _close(cyad.gradient(_loss, z, prep=prep), jax.grad(_jloss)(z))


@pytest.mark.parametrize("engine", ENGINES)
def test_repeated_calls_with_the_same_arrays_read_their_new_values(engine):
    # (a call with the arrays of the last one reuses their views: cyad/_operators.pyx)
    z, dz, ct = _complex_point("again-z"), _complex_point("again-dz"), _complex_point("ag-ct")
    cases = [("pushforward", _f, z, dz, lambda z, t: jax.jvp(_jf, (z,), (t,))[1]),
             ("pullback", _f, z, ct, lambda z, t: jax.vjp(_jf, z)[1](t)[0]),
             ("gradient", _loss, z, None, lambda z, t: jax.grad(_jloss)(z)),
             ("hvp", _loss, z, dz, lambda z, t: jax.jvp(jax.grad(_jloss), (z,), (t,))[1]),
             ("derivative", lambda t: np.exp(1j * t) * t, np.array(0.4), None,
              lambda t, _: jax.jacfwd(lambda t: jnp.exp(1j * t) * t)(t))]
    for name, f, point, tangent, expected in cases:
        args = (point,) if tangent is None else (point, tangent)
        prep = getattr(cyad, "prepare_" + name)(f, *args, engine=engine)
        out = np.empty(np.shape(expected(point, tangent)), complex)
        for _ in range(3):
            assert getattr(cyad, name)(f, *args, prep=prep, out=out) is out
            _close(out, expected(point, tangent))
            point += 0.125 * (1 + 1j) if point.dtype.kind == "c" else 0.125   # in place
            if tangent is not None:
                tangent *= 1 - 0.5j


@pytest.mark.parametrize("engine", ENGINES)
def test_out_may_be_x_or_the_tangent(engine):
    # (the real prep reads its inputs before it writes the views of out: cyad/_core.pyx)
    z0, dz0 = _complex_point("alias-z"), _complex_point("alias-dz")
    expected = np.asarray(jax.jvp(_jf, (z0,), (dz0,))[1])
    for aliased in ("x", "tangent"):
        z, dz = z0.copy(), dz0.copy()
        out = z if aliased == "x" else dz
        assert cyad.pushforward(_f, z, dz, engine=engine, out=out) is out
        _close(out, expected)
    z = z0.copy()
    assert cyad.gradient(_loss, z, engine=engine, out=z) is z
    _close(z, jax.grad(_jloss)(z0))
    z, v = z0.copy(), dz0.copy()
    assert cyad.hvp(_loss, z, v, engine=engine, out=v) is v
    _close(v, jax.jvp(jax.grad(_jloss), (z0,), (dz0,))[1])
