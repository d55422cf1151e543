"""pullback and value_and_pullback (dy @ J(x)) beyond the shared scenarios: random programs
against JAX, the adjoint identity with pushforward, batches, aliasing, nesting, bad input
and allocation-free prepared calls, on every engine."""
import numpy as np
import pytest
from derivative_references import jax
from scenarios import ENGINES
from test_random_programs import PROGRAMS, run

import cyad

pytestmark = pytest.mark.xdist_group("test_pullback")

if jax is not None:
    import jax.numpy as jnp

TOLERANCE = {np.float64: dict(rtol=1e-10, atol=1e-11), np.float32: dict(rtol=1e-3, atol=1e-4)}
# a third of the random programs, each in both variants on every engine
SOME_PROGRAMS = PROGRAMS[::2]


def vector_program(program, xp, in_place=False):
    """A vector-valued f of a random program: every value no later step reads, weighted,
    flattened and joined, then u (1 + u / 10) elementwise."""
    def f(x):
        pool = run(program, xp, x, in_place=in_place)
        parts = [xp.ravel(np.asarray(w, x.dtype) * pool[i]) for i, w in program.weights.items()]
        u = xp.concatenate(parts)
        return u * (1 + 0.1 * u)
    return f


_JACOBIANS = {}


def jax_jacobian(program, x):
    """The Jacobian of vector_program(program) at x, by JAX (each computed once)."""
    key = (program.name, np.asarray(x, np.float64).tobytes())
    if key not in _JACOBIANS:
        f = vector_program(program, jnp)
        # compiled as one (JAX compiles each primitive of an eager call on its own)
        _JACOBIANS[key] = np.asarray(jax.jit(jax.jacrev(f))(jnp.asarray(x, jnp.float64)))
    return _JACOBIANS[key]


@pytest.mark.skipif(jax is None, reason="JAX gives the reference")
@pytest.mark.parametrize("in_place", [False, True], ids=["out-of-place", "in-place"])
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("program", SOME_PROGRAMS, ids=lambda p: p.name)
def test_random_programs_against_jax(program, engine, in_place):
    x = program.point
    jac = jax_jacobian(program, x)
    rng = np.random.default_rng(len(program.steps))
    cotangents = tuple(rng.standard_normal(jac.shape[0]) for _ in range(3))
    f = vector_program(program, np, in_place)
    value, products = cyad.value_and_pullback(f, x, cotangents, engine=engine)
    np.testing.assert_allclose(value, vector_program(program, np)(x), rtol=1e-13)
    for dy, product in zip(cotangents, products, strict=True):
        np.testing.assert_allclose(product, dy @ jac, **TOLERANCE[np.float64])
    # prepared, with out=, at another point
    prep = cyad.prepare_pullback(f, x, cotangents[0], engine=engine)
    other = x * 0.9 + 0.01
    out = np.full(x.shape, np.nan)
    assert cyad.pullback(f, other, cotangents[0], prep=prep, out=out) is out
    np.testing.assert_allclose(out, cotangents[0] @ jax_jacobian(program, other),
                               **TOLERANCE[np.float64])


@pytest.mark.skipif(jax is None, reason="JAX gives the reference")
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("program", PROGRAMS[1::8], ids=lambda p: p.name)
def test_random_programs_in_float32(program, engine):
    x = program.point.astype(np.float32)
    jac = jax_jacobian(program, x.astype(np.float64))
    dy = np.random.default_rng(1).uniform(-1.0, 1.0, jac.shape[0]).astype(np.float32)
    product = cyad.pullback(vector_program(program, np), x, dy, engine=engine)
    assert product.dtype == np.float32
    scale = np.abs(dy) @ np.abs(jac)
    assert np.all(np.abs(product - dy.astype(np.float64) @ jac) <= 1e-3 * scale + 1e-4)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("program", PROGRAMS[::3], ids=lambda p: p.name)
def test_the_adjoint_identity(program, engine):
    # <pullback(dy), t> = <dy, pushforward(t)>: reverse (or forward contracted) against
    # forward on the other engine, for random dy and t
    x = program.point
    f = vector_program(program, np)
    other = "dual" if engine == "tape" else "tape"
    rng = np.random.default_rng(3)
    tangents = tuple(rng.standard_normal(x.shape) for _ in range(2))
    pushed = cyad.pushforward(f, x, tangents, engine=other)
    cotangents = tuple(rng.standard_normal(pushed[0].shape) for _ in range(2))
    pulled = cyad.pullback(f, x, cotangents, engine=engine)
    for dy, p in zip(cotangents, pulled, strict=True):
        for t, q in zip(tangents, pushed, strict=True):
            scale = np.abs(p) @ np.abs(t) + np.abs(dy) @ np.abs(q)
            assert abs(p @ t - dy @ q) <= 1e-12 * scale


# -- forms, shapes and batches ---------------------------------------------------------------

def outer_product(x):
    # R^(2x3) -> R^(3x2x3): shaped output, a Jacobian known in closed form
    return np.sin(x)[None, :, :] * x.T[:, :, None]


def outer_product_jacobian(x):
    n, m = x.shape
    jac = np.zeros((m, n, m, n, m))
    s, c = np.sin(x), np.cos(x)
    for i in range(m):
        for j in range(n):
            for k in range(m):
                jac[i, j, k, j, k] += c[j, k] * x[j, i]
                jac[i, j, k, j, i] += s[j, k]
    return jac


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("engine", ENGINES)
def test_shaped_output_and_two_argument_form(engine, dtype):
    x = np.linspace(0.2, 1.3, 6).reshape(2, 3).astype(dtype)
    dy = np.random.default_rng(0).standard_normal((3, 2, 3)).astype(dtype)
    expected = np.tensordot(dy.astype(np.float64), outer_product_jacobian(x.astype(np.float64)),
                            axes=3)
    tolerance = TOLERANCE[dtype]
    np.testing.assert_allclose(cyad.pullback(outer_product, x, dy, engine=engine), expected,
                               **tolerance)

    def in_place(y, x):
        y[...] = outer_product(x)

    y = np.zeros((3, 2, 3), dtype)
    value, product = cyad.value_and_pullback(in_place, x, dy, y=y, engine=engine)
    assert value is y
    np.testing.assert_allclose(y, outer_product(x.astype(np.float64)), **tolerance)
    np.testing.assert_allclose(product, expected, **tolerance)


@pytest.mark.parametrize("engine", ENGINES)
def test_scalar_input_and_output(engine):
    # a Python number is a cotangent of a scalar f, and a float comes back for a scalar x
    assert cyad.pullback(lambda t: t ** 3, 2.0, 0.5, engine=engine) == 6.0
    assert cyad.value_and_pullback(np.sin, 0.0, -2.0, engine=engine) == (0.0, -2.0)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(cyad.pullback(lambda x: x @ x, x, 3, engine=engine), 6.0 * x)
    # a batch of numbers
    products = cyad.pullback(lambda x: x @ x, x, (1.0, -1.0), engine=engine)
    np.testing.assert_allclose(products[0], 2.0 * x)
    np.testing.assert_allclose(products[1], -2.0 * x)


@pytest.mark.parametrize("chunk", [None, 1, 2, 3, 5, 8])
def test_every_chunk_of_the_dual_engine(chunk):
    # the dual engine contracts each chunk of columns; a last chunk shorter than the others
    x = np.linspace(0.1, 1.0, 7)
    w = np.linspace(-1.0, 2.0, 7)
    dys = (np.linspace(1.0, 3.0, 7), np.linspace(-2.0, 0.5, 7))

    def f(x):
        return np.tanh(w * x) * np.sum(x ** 2) + x[::-1]

    jac = np.diag(w / np.cosh(w * x) ** 2 * np.sum(x ** 2)) + np.outer(np.tanh(w * x), 2 * x)
    jac += np.eye(7)[::-1]
    prep = cyad.prepare_pullback(f, x, dys, chunk=chunk, engine="dual")
    assert prep.evaluations == -(-7 // prep.chunk)
    outs = (np.empty(7), np.empty(7))
    assert cyad.pullback(f, x, dys, prep=prep, out=outs) is outs
    for dy, out in zip(dys, outs, strict=True):
        np.testing.assert_allclose(out, dy @ jac, rtol=1e-13, atol=1e-13)


def test_the_tape_sweeps_once_per_chunk_of_cotangents():
    x = np.linspace(0.1, 1.0, 50)
    dys = tuple(np.random.default_rng(k).standard_normal(50) for k in range(3))
    prep = cyad.prepare_pullback(np.sin, x, dys, engine="tape")
    assert prep.evaluations == 1
    for dy, product in zip(dys, cyad.pullback(np.sin, x, dys, prep=prep), strict=True):
        np.testing.assert_allclose(product, dy * np.cos(x), rtol=1e-15)


@pytest.mark.parametrize("engine", ENGINES)
def test_zero_cotangents_meet_infinite_slopes_as_zero(engine):
    # sqrt's slope at 0 is infinite: a cotangent that does not weigh that output gives 0
    x = np.array([0.0, 4.0])
    product = cyad.pullback(np.sqrt, x, np.array([0.0, 1.0]), engine=engine)
    np.testing.assert_array_equal(product, [0.0, 0.25])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_constant_function(engine):
    product = cyad.pullback(lambda x: np.ones(3), np.arange(2.0), np.ones(3), engine=engine)
    np.testing.assert_array_equal(product, [0.0, 0.0])


# -- outputs that share memory with inputs --------------------------------------------------

def square_reversed(x):
    return x[::-1] ** 2


def square_reversed_jacobian(x):
    # d(x[n-1-i]^2)/dx[j] = 2 x[j] where j = n-1-i
    return np.eye(x.size)[::-1] * 2 * x


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("target", ["x", "dy"])
def test_out_may_be_an_input(engine, target):
    # the inputs are read as they were when the call started
    x = np.array([1.0, 2.0, 3.0])
    dy = np.array([0.5, -1.0, 2.0])
    expected = dy @ square_reversed_jacobian(x)
    prep = cyad.prepare_pullback(square_reversed, x, dy, engine=engine)
    for _ in range(2):
        xs, dys = x.copy(), dy.copy()
        out = xs if target == "x" else dys
        assert cyad.pullback(square_reversed, xs, dys, prep=prep, out=out) is out
        np.testing.assert_allclose(out, expected, rtol=1e-15)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cotangent_that_is_y(engine):
    # y is an output of the two-argument form: a cotangent sharing its memory is read first
    def f(y, x):
        y[...] = square_reversed(x)

    x = np.array([1.0, 2.0, 3.0])
    y = np.array([0.5, -1.0, 2.0])
    expected = y @ square_reversed_jacobian(x)
    value, product = cyad.value_and_pullback(f, x, y, y=y, engine=engine)
    assert value is y
    np.testing.assert_allclose(y, square_reversed(x))
    np.testing.assert_allclose(product, expected, rtol=1e-15)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_batch_whose_outputs_are_its_cotangents(engine):
    x = np.array([1.0, 2.0, 3.0])
    dys = (np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0]))
    jac = square_reversed_jacobian(x)
    prep = cyad.prepare_pullback(square_reversed, x, dys, engine=engine)
    outs = (dys[1], dys[2], dys[0])   # each another's cotangent
    cyad.pullback(square_reversed, x, dys, prep=prep, out=outs)
    for k in range(3):
        np.testing.assert_allclose(outs[k], jac[k], rtol=1e-15)


# -- nested differentiation ---------------------------------------------------------------------

def test_a_derivative_of_a_pullback():
    # d/dt [dy @ J(t x)] for f = sin: J = diag(cos(t x)), d/dt = -dy sin(t x) x
    x = np.array([0.3, 0.7, 1.1])
    dy = np.array([1.0, -2.0, 0.5])

    def g(t):
        return cyad.pullback(np.sin, t * x, dy)

    t = 0.8
    np.testing.assert_allclose(cyad.derivative(g, t), -dy * np.sin(t * x) * x, rtol=1e-14)
    value, d = cyad.value_and_derivative(g, t)
    np.testing.assert_allclose(value, dy * np.cos(t * x), rtol=1e-15)


def test_a_pullback_of_a_gradient_is_a_hessian_vector_product():
    # a nested gradient inside the pullback's differentiation: v @ H, with H symmetric
    x = np.linspace(-0.5, 1.2, 5)
    v = np.linspace(1.0, -1.0, 5)

    def g(x):
        return np.sum(np.sin(x)) * np.sum(x ** 2)

    hessian = (np.diag(-np.sin(x)) * np.sum(x ** 2) + 2 * np.outer(np.cos(x), x)
               + 2 * np.outer(x, np.cos(x)) + 2 * np.eye(5) * np.sum(np.sin(x)))
    product = cyad.pullback(lambda x: cyad.gradient(g, x), x, v)
    np.testing.assert_allclose(product, v @ hessian, rtol=1e-13)
    np.testing.assert_allclose(product, cyad.hvp(g, x, v), rtol=1e-13)


def test_a_nested_pullback_with_a_dual_cotangent():
    # the cotangent depends on the outer variable too: d/dt [(t dy) @ J(t x)]
    x = np.array([0.3, 0.7])
    dy = np.array([1.0, -2.0])

    def g(t):
        return cyad.pullback(np.exp, t * x, t * dy)

    t = 0.5
    expected = dy * np.exp(t * x) + t * dy * np.exp(t * x) * x
    np.testing.assert_allclose(cyad.derivative(g, t), expected, rtol=1e-14)


# -- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_a_cotangent_of_the_wrong_shape(engine):
    x = np.arange(3.0)
    with pytest.raises(ValueError, match=r"a cotangent has shape \(2,\), but f's output has "
                                         r"shape \(3,\)"):
        cyad.pullback(np.sin, x, np.ones(2), engine=engine)
    with pytest.raises(ValueError, match="a cotangent has shape"):
        cyad.pullback(np.sin, x, 1.0, engine=engine)
    prep = cyad.prepare_pullback(np.sin, x, np.ones(3), engine=engine)
    with pytest.raises(ValueError, match="a cotangent has shape"):
        cyad.pullback(np.sin, x, np.ones((3, 1)), prep=prep)
    with pytest.raises(ValueError, match="a cotangent has dtype float32"):
        cyad.pullback(np.sin, x, np.ones(3, np.float32), prep=prep)
    # and the prep still works
    np.testing.assert_allclose(cyad.pullback(np.sin, x, np.ones(3), prep=prep), np.cos(x))


@pytest.mark.parametrize("engine", ENGINES)
def test_the_wrong_count_of_cotangents(engine):
    x = np.arange(3.0)
    prep = cyad.prepare_pullback(np.sin, x, np.ones(3), engine=engine)
    with pytest.raises(ValueError, match=r"2 cotangent\(s\) given, but this prep was made for 1"):
        cyad.pullback(np.sin, x, (np.ones(3), np.ones(3)), prep=prep)
    prep = cyad.prepare_pullback(np.sin, x, (np.ones(3), np.ones(3)), engine=engine)
    with pytest.raises(TypeError, match="must be a tuple of 2 arrays"):
        cyad.pullback(np.sin, x, (np.ones(3), np.ones(3)), prep=prep, out=np.empty(3))


@pytest.mark.parametrize("engine", ENGINES)
def test_outputs_that_overlap(engine):
    x = np.arange(3.0)
    dys = (np.ones(3), np.arange(3.0))
    buffer = np.empty(4)
    with pytest.raises(ValueError, match="share memory"):
        cyad.pullback(np.sin, x, dys, out=(buffer[:3], buffer[1:]), engine=engine)
    with pytest.raises(ValueError, match="the value output and the pullback output share"):
        cyad.value_and_pullback(np.sin, x, dys[0], out=(buffer[:3], buffer[1:]), engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_out_of_the_wrong_shape_and_a_prep_of_another_family(engine):
    x = np.arange(3.0)
    f = lambda x: np.sum(x ** 2)  # noqa: E731
    with pytest.raises(ValueError, match=r"it must have shape \(3,\)"):
        cyad.pullback(f, x, 1.0, out=np.empty(()), engine=engine)
    prep = cyad.prepare_pushforward(f, x, np.ones(3), engine=engine)
    with pytest.raises(ValueError, match="made for pushforward, not pullback"):
        cyad.pullback(f, x, 1.0, prep=prep)
    prep = cyad.prepare_pullback(f, x, 1.0, engine=engine)
    with pytest.raises(ValueError, match="made for pullback, not gradient"):
        cyad.gradient(f, x, prep=prep)


def test_an_unknown_engine():
    with pytest.raises(ValueError, match="unknown engine 'reverse'"):
        cyad.pullback(np.sin, np.ones(2), np.ones(2), engine="reverse")


def test_the_tape_refuses_a_c_function():
    from reference_functions import C, N
    with pytest.raises(TypeError, match="traces Python callables"):
        cyad.pullback(C.F, np.ones(N), np.ones(N), engine="tape")


# -- prepared calls allocate nothing ------------------------------------------------------------

def copy_scaled(y, x):
    y[...] = x
    y *= 2.0


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("n", [10, 100])
def test_prepared_calls_allocate_nothing(n, engine, allocations_per_call):
    x, dy, y = np.arange(n, dtype=float), np.linspace(-1.0, 1.0, n), np.zeros(n)
    prep = cyad.prepare_pullback(copy_scaled, x, dy, y=y, engine=engine)
    out, pair = np.zeros(n), (np.zeros(n), np.zeros(n))
    pullback, value_and_pullback = cyad.pullback, cyad.value_and_pullback
    # (f's in-place operators allocate nothing on duals, and nothing on a replayed tape)
    assert allocations_per_call(lambda: pullback(copy_scaled, x, dy, y=y, prep=prep,
                                                 out=out)) == 0
    assert allocations_per_call(
        lambda: value_and_pullback(copy_scaled, x, dy, y=y, prep=prep, out=pair)) == 0
    np.testing.assert_array_equal(out, 2.0 * dy)
    np.testing.assert_array_equal(pair[0], 2.0 * x)
    np.testing.assert_array_equal(pair[1], 2.0 * dy)


def test_a_prepared_tape_batch_allocates_nothing(allocations_per_call):
    x = np.linspace(0.1, 1.0, 20)
    dys = (np.ones(20), np.linspace(-1.0, 1.0, 20))
    f = lambda x: np.sin(x) * x  # noqa: E731
    prep = cyad.prepare_pullback(f, x, dys, engine="tape")
    outs = (np.zeros(20), np.zeros(20))
    assert allocations_per_call(lambda: cyad.pullback(f, x, dys, prep=prep, out=outs)) == 0
    for dy, out in zip(dys, outs, strict=True):
        np.testing.assert_allclose(out, dy * (np.cos(x) * x + np.sin(x)), rtol=1e-14)


def test_the_tape_records_again_when_a_branch_flips():
    # a guard of the recorded tape fails at the second point: f is recorded anew there
    def f(x):
        return np.sin(x) * x[0] if x[0] > 0 else np.cos(x) * 2.0

    dy = np.array([1.0, -1.0, 0.5])
    x, other = np.array([0.5, 1.0, 1.5]), np.array([-0.5, 1.0, 1.5])
    prep = cyad.prepare_pullback(f, x, dy, engine="tape")
    jac = np.diag(np.cos(x) * x[0])
    jac[:, 0] += np.sin(x)
    np.testing.assert_allclose(cyad.pullback(f, x, dy, prep=prep), dy @ jac, rtol=1e-15)
    np.testing.assert_allclose(cyad.pullback(f, other, dy, prep=prep), -2.0 * dy * np.sin(other),
                               rtol=1e-15)
    assert prep.engine_state.records == 2
