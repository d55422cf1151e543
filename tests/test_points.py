"""cyad.at_points: every operator at every row of a batch of points, serially, on threads and
through map-likes (a thread pool, a process pool), against JAX (vmap of its derivatives) and
analytic references; threads and maps bit for bit as the serial loop; faults."""
import functools
import multiprocessing
import traceback
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from points_functions import Refused, refusing, scalar, vector, with_arguments
from rosenbrock import rosenbrock, rosenbrock_gradient, rosenbrock_hessian

import cyad

pytestmark = pytest.mark.xdist_group("test_points")

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

TOLERANCE = {np.float64: 1e-11, np.float32: 2e-4}


@functools.cache
def jitted_references(name, f):
    """One compiled function of (points, tangents, *args) -> the stacked results of operator
    `name` by JAX's vmap of its derivatives (compiled once per operator and f)."""
    def at(x, *a):
        return f(x, *a, xp=jnp)
    grad, jac, hess = jax.grad(at), jax.jacfwd(at), jax.hessian(at)

    def hvp(x, t, *a):
        return jax.jvp(lambda y: grad(y, *a), (x,), (t,))[1]
    batched = {"gradient": (grad,), "value_and_gradient": (at, grad), "jacobian": (jac,),
               "value_and_jacobian": (at, jac), "hessian": (hess,),
               "value_gradient_and_hessian": (at, grad, hess)}

    def references(pts, t, *a64):
        if name in ("hvp", "gradient_and_hvp"):
            h = jax.vmap(hvp)(pts, t, *a64)
            return (h,) if name == "hvp" else (jax.vmap(grad)(pts, *a64), h)
        return tuple(jax.vmap(g)(pts, *a64) for g in batched[name])
    return jax.jit(references)


_REFERENCES = {}


def jax_references(name, f, points, v=None, args=()):
    """The stacked results of operator `name` by JAX's vmap of its derivatives (computed
    once for each operator, f and inputs: the engines and workers share them)."""
    key = (name, f) + tuple((a.dtype.str, a.shape, a.tobytes())
                            for a in map(np.asarray, (points, *args)))
    if name in ("hvp", "gradient_and_hvp"):
        key += ((np.asarray(v).dtype.str, np.shape(v), np.asarray(v).tobytes()),)
    if key not in _REFERENCES:
        pts = jnp.asarray(points, dtype=jnp.float64)
        a64 = [jnp.asarray(a, dtype=jnp.float64) for a in args]
        t = (jnp.asarray(v, dtype=jnp.float64) if name in ("hvp", "gradient_and_hvp")
             else None)
        results = tuple(np.asarray(r) for r in jitted_references(name, f)(pts, t, *a64))
        _REFERENCES[key] = results[0] if len(results) == 1 else results
    return _REFERENCES[key]


def compare(got, want, dtype):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            compare(g, w, dtype)
        return
    assert got.dtype == dtype and got.shape == want.shape
    assert_allclose(got, want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype] * 10)


def same(got, want):
    """Bit for bit."""
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            assert_array_equal(g, w)
    else:
        assert_array_equal(got, want)


def random_points(m, n, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).uniform(-0.9, 0.9, (m, n)).astype(dtype)


SCALAR_OPERATORS = ["gradient", "value_and_gradient", "hessian", "value_gradient_and_hessian",
                    "hvp", "gradient_and_hvp"]
VECTOR_OPERATORS = ["jacobian", "value_and_jacobian"]


def call(name, f, points, v, **options):
    tangents = (v,) if name in ("hvp", "gradient_and_hvp") else ()
    return cyad.at_points(getattr(cyad, name), f, points, *tangents, **options)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("engine", [None, "dual", "tape"])
@pytest.mark.parametrize("name", SCALAR_OPERATORS + VECTOR_OPERATORS)
def test_against_jax_serial_and_threads(name, engine, dtype):
    f = vector if name in VECTOR_OPERATORS else scalar
    points = random_points(9, 5, dtype, seed=len(name))
    v = random_points(9, 5, dtype, seed=7)
    want = jax_references(name, f, points, v)
    serial = call(name, f, points, v, engine=engine)
    compare(serial, want, dtype)
    for workers in (1, 2, 3):
        same(call(name, f, points, v, engine=engine, workers=workers), serial)


def test_rosenbrock_analytic_at_many_points_on_two_threads():
    points = random_points(200, 10, seed=3) * 2
    g = cyad.at_points(cyad.gradient, rosenbrock, points, workers=2)
    h = cyad.at_points("hessian", rosenbrock, points, workers=2)
    for i in range(0, 200, 17):
        assert_allclose(g[i], rosenbrock_gradient(points[i]), rtol=1e-12, atol=1e-10)
        assert_allclose(h[i], rosenbrock_hessian(points[i]), rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("engine", [None, "dual", "tape"])
@pytest.mark.parametrize("name", SCALAR_OPERATORS)
def test_per_point_arguments(name, engine, dtype):
    m = 7
    points = random_points(m, 4, dtype, seed=1)
    a = random_points(m, 4, dtype, seed=2)
    b = random_points(m, 2, dtype, seed=3)
    v = random_points(m, 4, dtype, seed=4)
    want = jax_references(name, with_arguments, points, v, (a, b))
    got = call(name, with_arguments, points, v, args=(a, b), engine=engine)
    compare(got, want, dtype)
    same(call(name, with_arguments, points, v, args=(a, b), engine=engine, workers=2), got)


def test_per_point_arguments_of_a_jacobian_and_matrix_points():
    def f(x, a, xp=np):
        return xp.sin(x * a).sum(axis=1) * x[:, 0]
    points = random_points(6, 6).reshape(6, 3, 2)
    a = random_points(6, 6, seed=5).reshape(6, 3, 2)
    got = cyad.at_points(cyad.value_and_jacobian, f, points, args=(a,), workers=2)
    value, jacobian = got
    assert value.shape == (6, 3) and jacobian.shape == (6, 3, 3, 2)
    reference = jax.jit(jax.jacfwd(lambda x, ai: f(x, ai, xp=jnp)))
    for i in range(6):
        want = reference(jnp.asarray(points[i]), jnp.asarray(a[i]))
        assert_allclose(jacobian[i], np.asarray(want), rtol=1e-12, atol=1e-13)
        assert_allclose(value[i], f(points[i], a[i]), rtol=1e-14)


def test_arguments_at_many_points_record_the_tape_once():
    # the arguments are inputs of the tape, not constants of it: one record serves every row
    m = 40
    points, a = random_points(m, 3), random_points(m, 3, seed=9)
    b = random_points(m, 2, seed=8)
    from cyad._parallel import prep_cache as _prep_cache
    f = functools.partial(with_arguments)       # (its own preps in the cache)
    for name in ("gradient", "hessian"):
        got = cyad.at_points(name, f, points, args=(a, b), engine="tape", workers=2)
        compare(got, jax_references(name, f, points, None, (a, b)), np.float64)
        preps = [p.prep for key, entry in _prep_cache.cache.items()
                 if key[1] == id(f) and key[2] == name for p in entry[2]]
        # a prep per block, each recorded once; x alone differentiated (the arguments are
        # no directions of the Hessian)
        assert len(preps) == 2
        assert all(p.engine_state.traces == 1 and p.x_shape == (3,) for p in preps)


def test_out_is_filled_and_returned_and_may_be_the_points():
    points = random_points(8, 5)
    want = cyad.at_points(cyad.value_and_gradient, scalar, points)
    values, grads = np.empty(8), np.empty((8, 5))
    out = (values, grads)
    assert cyad.at_points(cyad.value_and_gradient, scalar, points, out=out, workers=2) is out
    same(out, want)
    aliased = points.copy()
    assert cyad.at_points(cyad.gradient, scalar, aliased, out=aliased, workers=2) is aliased
    assert_array_equal(aliased, want[1])
    with pytest.raises(ValueError, match="out="):
        cyad.at_points(cyad.gradient, scalar, points, out=np.empty((8, 4)))
    with pytest.raises(ValueError, match="out="):
        cyad.at_points(cyad.value_and_gradient, scalar, points, out=grads)


@pytest.mark.parametrize("engine", ["dual", "tape"])
def test_a_derivative_inside_f_nests(engine):
    # d/dx of d/dt sum(sin(t x)) at t = 0.5: cos(x / 2) - x sin(x / 2) / 2
    def f(x):
        return cyad.derivative(lambda t: np.sum(np.sin(t * x)), 0.5)
    points = random_points(5, 3)
    assert_allclose(cyad.at_points(cyad.gradient, f, points, engine=engine),
                    np.cos(points / 2) - points / 2 * np.sin(points / 2), rtol=1e-13)


def test_a_c_function_at_points_runs_on_threads():
    points = random_points(30, 6, seed=4) * 1.5
    f = cyad.record(rosenbrock, points[0])   # a C function: its recorded tape
    g = cyad.at_points(cyad.gradient, f, points, workers=2)
    same(g, cyad.at_points(cyad.gradient, f, points))
    for i in range(30):
        assert_allclose(g[i], rosenbrock_gradient(points[i]), rtol=1e-13, atol=1e-12)
    with pytest.raises(TypeError, match="Python f"):
        cyad.at_points(cyad.gradient, f, points, args=(points,))


# -- faults -----------------------------------------------------------------------------

@pytest.mark.parametrize("engine", [None, "dual"])
@pytest.mark.parametrize("workers", [None, 2])
def test_an_exception_in_f_propagates_with_the_point_and_later_calls_work(workers, engine):
    points = random_points(10, 3)
    good = cyad.at_points(cyad.gradient, refusing, points, engine=engine, workers=workers)
    assert_allclose(good, np.sin(points) + points * np.cos(points), rtol=1e-14)
    bad = points.copy()
    bad[7, 0] = 5.0
    with pytest.raises(Refused, match="refuses") as info:
        cyad.at_points(cyad.gradient, refusing, bad, engine=engine, workers=workers)
    assert any("at point 7" in note for note in getattr(info.value, "__notes__", []))
    assert "in refusing" in "".join(traceback.format_exception(info.value))   # f's frame
    same(cyad.at_points(cyad.gradient, refusing, points, engine=engine, workers=workers), good)


def test_a_python_f_on_the_dual_engine_runs_serially_on_one_prep():
    from cyad._parallel import prep_cache as _prep_cache

    def f(x):
        return np.sum(np.tanh(x) * x)
    points = random_points(12, 4, seed=13)
    got = cyad.at_points(cyad.gradient, f, points, engine="dual", workers=3)
    same(got, cyad.at_points(cyad.gradient, f, points, engine="dual"))
    preps = [p.prep for key, entry in _prep_cache.cache.items() if key[1] == id(f)
             for p in entry[2]]
    assert len(preps) == 1 and preps[0].engine == "dual"
    # a tape runs on threads, a prep each
    cyad.at_points(cyad.gradient, f, points, engine="tape", workers=3)
    preps = [p for key, entry in _prep_cache.cache.items() if key[1] == id(f) for p in entry[2]]
    assert len(preps) == 4


def test_bad_input_is_refused():
    points = random_points(4, 3)
    with pytest.raises(ValueError, match="operators"):
        cyad.at_points(cyad.pushforward, scalar, points)
    with pytest.raises(ValueError, match="operators"):
        cyad.at_points("laplacian", scalar, points)
    with pytest.raises(TypeError, match="tangent"):
        cyad.at_points(cyad.hvp, scalar, points)
    with pytest.raises(TypeError, match="no v"):
        cyad.at_points(cyad.gradient, scalar, points, points)
    with pytest.raises(ValueError, match="shaped like points"):
        cyad.at_points(cyad.hvp, scalar, points, points[:2])
    with pytest.raises(TypeError, match="real"):
        cyad.at_points(cyad.gradient, scalar, points + 1j)
    with pytest.raises(ValueError, match="at least one point"):
        cyad.at_points(cyad.gradient, scalar, np.empty((0, 3)))
    with pytest.raises(ValueError, match="workers"):
        cyad.at_points(cyad.gradient, scalar, points, workers=0)
    with pytest.raises(ValueError, match="first axis of 4"):
        cyad.at_points(cyad.gradient, with_arguments, points, args=(points[:3], points[:3]))
    with pytest.raises(TypeError, match="tuple"):
        cyad.at_points(cyad.gradient, with_arguments, points, args=[points])
    with pytest.raises(ValueError, match="scalar"):
        cyad.at_points(cyad.gradient, vector, points)


# -- map-likes: a thread pool, a process pool ---------------------------------------------

@pytest.fixture(scope="module")
def process_pool():
    pytest.importorskip("cloudpickle")
    # spawn: a fresh interpreter (forking one that runs JAX's threads is unsafe)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        yield pool


@pytest.mark.parametrize("name", ["value_and_gradient", "jacobian", "gradient_and_hvp"])
def test_a_thread_pool_map(name):
    pytest.importorskip("cloudpickle")
    f = vector if name == "jacobian" else scalar
    points, v = random_points(11, 4, seed=2), random_points(11, 4, seed=6)
    with ThreadPoolExecutor(2) as pool:
        got = call(name, f, points, v, workers=pool.map, tasks=3)
    same(got, call(name, f, points, v))


@pytest.mark.parametrize("name", ["gradient", "value_jacobian", "hessian", "hvp"])
def test_a_process_pool_map(process_pool, name):
    name = {"value_jacobian": "value_and_jacobian"}.get(name, name)
    f = vector if "jacobian" in name else scalar
    points, v = random_points(13, 5, seed=3), random_points(13, 5, seed=4)
    got = call(name, f, points, v, workers=process_pool.map, tasks=4)
    same(got, call(name, f, points, v))
    compare(got, jax_references(name, f, points, v), np.float64)


def test_a_process_pool_with_arguments_and_float32(process_pool):
    points, a, b = (random_points(9, 3, np.float32, seed=s) for s in (1, 2, 3))
    b = b[:, :2]
    got = cyad.at_points(cyad.gradient, with_arguments, points, args=(a, b),
                         workers=process_pool.map, tasks=3)
    assert got.dtype == np.float32
    same(got, cyad.at_points(cyad.gradient, with_arguments, points, args=(a, b)))


def test_a_process_pool_raises_f_exception_and_stays_usable(process_pool):
    points = random_points(8, 3)
    bad = points.copy()
    bad[5, 0] = 5.0
    with pytest.raises(Refused, match="refuses") as info:
        cyad.at_points(cyad.gradient, refusing, bad, engine="dual", workers=process_pool.map,
                       tasks=4)
    # the remote traceback, f's frame in it, comes as the cause
    assert "in refusing" in "".join(traceback.format_exception(info.value))
    got = cyad.at_points(cyad.gradient, refusing, points, engine="dual",
                         workers=process_pool.map, tasks=4)
    same(got, cyad.at_points(cyad.gradient, refusing, points, engine="dual"))


def test_a_map_that_drops_tasks_is_an_error():
    pytest.importorskip("cloudpickle")

    def lossy(func, tasks):
        return [func(t) for t in list(tasks)[:-1]]
    with pytest.raises(RuntimeError, match="answered 2 of 3"):
        cyad.at_points(cyad.gradient, scalar, random_points(6, 3), workers=lossy, tasks=3)


def test_threads_keep_their_preps_from_call_to_call():
    from cyad._parallel import prep_cache as _prep_cache

    def f(x):
        return np.sum(np.cos(x) * x)
    points = random_points(10, 4, seed=12)

    def free(dtype="<f8"):
        return {id(p) for key, entry in _prep_cache.cache.items()
                if key[1] == id(f) and key[-1] == dtype for p in entry[2]}
    first = cyad.at_points(cyad.gradient, f, points, workers=2)
    preps = free()
    assert len(preps) == 2
    same(cyad.at_points(cyad.gradient, f, points, workers=2), first)
    assert free() == preps
    cyad.at_points(cyad.gradient, f, points.astype(np.float32), workers=2)
    assert free() == preps and len(free("<f4")) == 2   # float32 points: preps of their own


SCALE = 2.0


def scaled(x):
    return SCALE * np.sum(x ** 3)


@pytest.mark.parametrize("workers", [None, 2])
def test_the_default_tape_sees_python_state_changed_between_calls(workers):
    # a block compares f's Python state once, at its start, and leaves the prep comparing
    # it before every call again
    global SCALE
    from cyad._parallel import prep_cache as _prep_cache
    points = random_points(8, 3, seed=13)
    try:
        for scale in (2.0, 5.0, 5.0, -1.5):
            SCALE = scale
            got = cyad.at_points(cyad.gradient, scaled, points, workers=workers)
            assert_allclose(got, 3 * scale * points ** 2, rtol=1e-14)
        preps = [p.prep for key, entry in _prep_cache.cache.items() if key[1] == id(scaled)
                 for p in entry[2]]
        assert preps
        SCALE = 7.0
        for prep in preps:
            assert_allclose(cyad.gradient(scaled, points[0], prep=prep),
                            21.0 * points[0] ** 2, rtol=1e-14)
    finally:
        SCALE = 2.0


def test_a_worker_process_keeps_its_prep():
    pytest.importorskip("cloudpickle")
    from cyad._parallel import prep_cache as _prep_cache
    problem_points = random_points(6, 3, seed=11)
    with ThreadPoolExecutor(1) as pool:
        cyad.at_points(cyad.gradient, scalar, problem_points, workers=pool.map, tasks=3)
        preps = {id(p) for entry in _prep_cache.cache.values() for p in entry[2]}
        cyad.at_points(cyad.gradient, scalar, problem_points, workers=pool.map, tasks=3)
        again = {id(p) for entry in _prep_cache.cache.values() for p in entry[2]}
    assert preps and preps == again


# -- random programs (tests/test_random_programs.py) ---------------------------------------

# (on the worker of test_random_programs, whose references, found for all its programs in
# one JAX run, serve here too)
@pytest.mark.xdist_group("test_random_programs")
@pytest.mark.parametrize("seed", range(0, 48, 4))
def test_random_programs_at_points(seed):
    import test_random_programs as random_programs

    program = random_programs.PROGRAMS[seed]
    exact = random_programs.reference(program)   # JAX's, or differences of an exact order
    rng = np.random.default_rng(seed)
    # the program's point (JAX's reference) and points close by (its rules' domains hold)
    points = program.point + np.concatenate([np.zeros((1, program.point.size)),
                                             rng.uniform(-1e-3, 1e-3, (5, program.point.size))])
    for variant in ("out-of-place", "in-place"):
        f, _ = random_programs.cyad_function(program, variant)
        value, gradient, hessian = cyad.at_points(cyad.value_gradient_and_hessian, f, points,
                                                  workers=2)
        tol = dict(rtol=1e-9, atol=1e-9 * (1 + np.max(np.abs(exact.second))))
        assert_allclose(value[0], exact.value, rtol=1e-12)
        assert_allclose(gradient[0], exact.first, **tol)
        assert_allclose(hessian[0], exact.second, **tol)
        prep = cyad.prepare_hessian(f, points[0])
        for i, p in enumerate(points):   # each row as one prepared call computes it
            one = cyad.value_gradient_and_hessian(f, p, prep=prep)
            assert_array_equal(value[i], one[0])
            assert_array_equal(gradient[i], one[1])
            assert_array_equal(hessian[i], one[2])


def test_scalar_points_against_analytic_derivatives():
    p = np.linspace(-1.5, 2.0, 7)
    assert_allclose(cyad.at_points(cyad.gradient, np.sin, p, workers=2), np.cos(p), rtol=1e-15)
    assert_allclose(cyad.at_points(cyad.hessian, np.sin, p), -np.sin(p), rtol=1e-15)
    assert_allclose(cyad.at_points(cyad.jacobian, lambda x: np.stack([x, x**2]), p),
                    np.stack([np.ones_like(p), 2 * p], axis=1), rtol=1e-15)
    assert_allclose(cyad.at_points(cyad.gradient, lambda x, a: np.sin(a * x), p, args=(p,)),
                    p * np.cos(p * p), rtol=1e-14)
