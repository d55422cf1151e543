"""cyad.record: a Python function's tape as a C function (a FunctionWrapper of kind "tape").

References are JAX's (jvp, jacfwd, hessian) on the same random programs of NumPy
operations as tests/test_random_programs.py, each made vector-valued here: g(x) =
p(x) sin(x) + x * x with p the program's value, so that every lane carries p's whole
gradient. The wrapper is called through its C functions directly (tests/c_hooks.pyx,
without the GIL, every width and second-order layout), through the dual engine's
operators (its forward lanes) and through the tape engine's (its tape in reverse mode);
then guards, captured arrays, f(y, x), threads, allocations and errors.
"""
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from numpy.testing import assert_allclose
from test_random_programs import PROGRAMS, in_place, out_of_place, two_argument

import cyad
from cyad._tape.engine import RECORD_LIMIT, TapeLimit

pytestmark = pytest.mark.xdist_group("test_tape_function")

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

TOLERANCE = {np.float64: dict(rtol=1e-10, atol=1e-11), np.float32: dict(rtol=2e-3, atol=2e-4)}
CHOSEN = PROGRAMS[:12]


def vector_valued(program, xp):
    def g(x):
        return out_of_place(program)(xp, x) * xp.sin(x) + x * x
    return g


_COMPILED = {}
_REFERENCES = {}


def compiled(name, program, make):
    """jax.jit(make(program)): a reference compiled once per name and program."""
    key = (name, program.name)
    if key not in _COMPILED:
        _COMPILED[key] = jax.jit(make(program))
    return _COMPILED[key]


def reference(name, program, make, *args):
    """compiled(name, program, make)(*args) in float64, computed once per point: the
    references are shared by the engines, widths and dtypes that check against them."""
    args = tuple(np.asarray(a, np.float64) for a in args)
    key = (name, program.name, *((a.shape, a.tobytes()) for a in args))
    if key not in _REFERENCES:
        _REFERENCES[key] = jax.tree.map(np.asarray, compiled(name, program, make)(*args))
    return _REFERENCES[key]


def reference_jacobian(program, x):
    return reference("jacobian", program, lambda p: jax.jacfwd(vector_valued(p, jnp)), x)


def recorded(program, dtype):
    x = program.point.astype(dtype)
    return cyad.record(vector_valued(program, np), x), x


# -- forward lanes, called directly ---------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("width", [1, 2, 3, 4, 8, 16, 24])
@pytest.mark.parametrize("program", CHOSEN[:6], ids=lambda p: p.name)
def test_forward_lanes_of_every_width_against_jax(c_hooks, program, width, dtype):
    w, x = recorded(program, dtype)
    rng = np.random.default_rng(width)
    dx = rng.uniform(-1, 1, (x.size, width)).astype(dtype)
    y = np.zeros(x.size, dtype)
    dy = np.zeros((x.size, width), dtype)
    assert c_hooks.call_function(w, x, dx, y, dy) == 0
    jacobian = reference_jacobian(program, x)
    assert_allclose(dy, jacobian @ dx.astype(np.float64), **TOLERANCE[dtype])
    assert_allclose(y, vector_valued(program, np)(x.astype(np.float64)), **TOLERANCE[dtype])
    assert (1, width, 1) in w.tape.programs


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("program", CHOSEN, ids=lambda p: p.name)
def test_jacobian_through_the_dual_engine_against_jax(program, dtype):
    w, x = recorded(program, dtype)
    at = (x * np.asarray(1.01, dtype)).astype(dtype)   # another point
    for chunk in (None, 2):
        jacobian = cyad.jacobian(w, at, chunk=chunk)
        assert jacobian.dtype == dtype
        assert_allclose(jacobian, reference_jacobian(program, at), **TOLERANCE[dtype])


# -- second order --------------------------------------------------------------------------

def nested_reference(program, x, a, b, c):
    """The lanes of y = g(x) (g = vector_valued(program, jnp)) for nested duals of x: (da,
    db, dc) as the second-order signature lays them out, by JAX's jvp of jvp. (A jvp and a
    jvp of jvp, each compiled once per program and called per direction: compiling all of
    the lanes as one function, per number of lanes, costs more than it saves.)"""
    jvp = compiled("jvp", program, lambda p: lambda x, v: jax.jvp(
        vector_valued(p, jnp), (x,), (v,))[1])

    def jvp_of_jvp(p):
        g = vector_valued(p, jnp)

        def second(x, a_k, b_j):
            along_a = lambda t: jax.jvp(g, (t,), (a_k,))[1]  # noqa: E731
            return jax.jvp(along_a, (x,), (b_j,))[1]
        return second

    second = compiled("jvp-of-jvp", program, jvp_of_jvp)
    x, a, b, c = (np.asarray(t, np.float64) for t in (x, a, b, c))
    da = [jvp(x, a_k) for a_k in a]
    db = [jvp(x, b_j) for b_j in b]
    dc = [[second(x, a_k, b_j) + jvp(x, c[j][k]) for k, a_k in enumerate(a)]
          for j, b_j in enumerate(b)]
    return np.array(da), np.array(db), np.array(dc)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("outer, inner", [(1, 1), (1, 4), (2, 3), (3, 2)])
@pytest.mark.parametrize("program", CHOSEN[:4], ids=lambda p: p.name)
def test_second_order_lanes_against_jax(c_hooks, program, outer, inner, dtype):
    from cyad._dual.layout import NestedLanes
    w, x = recorded(program, dtype)
    n = x.size
    lanes = NestedLanes(outer, inner)
    rng = np.random.default_rng(outer * 10 + inner)
    a = rng.uniform(-1, 1, (outer, n)).astype(dtype)
    b = rng.uniform(-1, 1, (inner, n)).astype(dtype)
    c = rng.uniform(-1, 1, (inner, outer, n)).astype(dtype)
    dx = np.zeros((n, lanes.width), dtype)
    for k in range(outer):
        dx[:, k] = a[k]
    for j in range(inner):
        dx[:, lanes.b_lane(j)] = b[j]
        for k in range(outer):
            dx[:, lanes.c_lane(j, k)] = c[j, k]
    y = np.zeros(n, dtype)
    dy = np.zeros((n, lanes.width), dtype)
    assert c_hooks.call_second_order_function(w, x, dx, y, dy, outer, inner) == 0
    da, db, dc = nested_reference(program, x, a, b, c)
    tolerance = TOLERANCE[dtype]
    for k in range(outer):
        assert_allclose(dy[:, k], da[k], **tolerance)
    for j in range(inner):
        assert_allclose(dy[:, lanes.b_lane(j)], db[j], **tolerance)
        for k in range(outer):
            assert_allclose(dy[:, lanes.c_lane(j, k)], dc[j, k], **tolerance)
    used = outer + inner + outer * inner
    assert not dy[:, used:].any()


def scalar_valued(program, xp):
    def g(x):
        return out_of_place(program)(xp, x) + xp.sum(xp.sin(x) * x)
    return g


def gradient_and_hessian(f):
    return lambda x: (jax.grad(f)(x), jax.hessian(f)(x))


@pytest.mark.parametrize("engine", ["dual", None])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("program", CHOSEN[:6], ids=lambda p: p.name)
def test_hessian_hvp_and_gradient_against_jax(program, dtype, engine):
    x = program.point.astype(dtype)
    w = cyad.record(scalar_valued(program, np), x)
    at = (x * np.asarray(0.99, dtype)).astype(dtype)
    v = np.linspace(-1, 1, x.size).astype(dtype)
    gradient, hessian = reference("scalar", program,
                                  lambda p: gradient_and_hessian(scalar_valued(p, jnp)), at)
    tolerance = TOLERANCE[dtype]
    assert_allclose(cyad.hessian(w, at, engine=engine), hessian, **tolerance)
    assert_allclose(cyad.hvp(w, at, v, engine=engine), hessian @ v.astype(np.float64),
                    **tolerance)
    assert_allclose(cyad.gradient(w, at, engine=engine), gradient, **tolerance)
    # the default engine of these operators replays the recorded tape in reverse mode: no
    # forward lanes were derived; the dual engine's go through them
    assert (w.tape.programs == []) == (engine is None)


@pytest.mark.parametrize("variant", ["in-place", "two-argument"])
@pytest.mark.parametrize("engine", ["dual", None])
@pytest.mark.parametrize("program", CHOSEN[:6], ids=lambda p: p.name)
def test_in_place_programs_and_aliased_outputs(program, engine, variant):
    # the programs writing into their own operands (and into y), recorded; the results
    # written over x itself (out= sharing memory with x)
    x = program.point.copy()
    y = {} if variant == "in-place" else {"y": np.zeros(())}
    f = in_place(program) if variant == "in-place" else two_argument(program)
    w = cyad.record(f, x, **y)
    at = x * 1.01
    gradient, hessian = reference(
        "out-of-place", program,
        lambda p: gradient_and_hessian(lambda t: out_of_place(p)(jnp, t)), at)
    tolerance = TOLERANCE[np.float64]
    assert_allclose(cyad.hessian(w, at, engine=engine, **y), hessian, **tolerance)
    aliased = at.copy()
    cyad.gradient(w, aliased, engine=engine, out=aliased, **y)
    assert_allclose(aliased, gradient, **tolerance)
    buffer = np.empty((x.size + 1, x.size))
    buffer[0] = at
    cyad.hessian(w, buffer[0], engine=engine, out=buffer[:x.size], **y)
    assert_allclose(buffer[:x.size], hessian, **tolerance)


def test_the_tape_engine_starts_from_the_recorded_tape():
    calls = []

    def f(x):
        calls.append(1)
        return np.sum(np.exp(x) * x)

    x = np.array([0.5, -1.0, 2.0])
    w = cyad.record(f, x)
    prep = cyad.prepare_gradient(w, x)
    assert prep.engine == "tape"
    assert_allclose(cyad.gradient(w, x + 1, prep=prep), np.exp(x + 1) * (x + 2), rtol=1e-14)
    assert len(calls) == 1      # traced once, by record
    assert cyad.prepare_jacobian(w, x).engine == "dual"


_NESTED_INSIDE = {}


@pytest.mark.parametrize("wrap", [cyad.FunctionWrapper, lambda f: cyad.record(f, np.zeros(3))])
def test_nested_inside_another_differentiation(wrap):
    # inside a differentiation, a recorded function (and a wrapped callable) nests as its
    # Python f on dual arrays: d/ds of the Jacobian of g at s x, against JAX
    def g(x):
        return np.sin(x) * x[0] + np.exp(x[1] * x)

    def g_jax(x):
        return jnp.sin(x) * x[0] + jnp.exp(x[1] * x)

    w = wrap(g)
    x = np.array([0.3, -0.4, 0.8])
    if "expected" not in _NESTED_INSIDE:     # the same for every wrap
        _NESTED_INSIDE["expected"] = jax.jit(
            lambda x: (jax.jvp(jax.jacfwd(g_jax), (1.5 * x,), (x,))[1],
                       jax.grad(lambda t: jax.jacfwd(g_jax)(t).sum())(x)))(x)
    along, gradient = _NESTED_INSIDE["expected"]
    got = cyad.derivative(lambda s: cyad.jacobian(w, s * x), 1.5)
    assert_allclose(got, along, rtol=1e-12)
    got = cyad.gradient(lambda t: cyad.jacobian(w, t).sum(), x)
    assert_allclose(got, gradient, rtol=1e-12)


# -- guards, captured arrays, f(y, x) ----------------------------------------------------------

def branching(x):
    if x[0] > 0:
        return np.sin(x) * x[1]
    return np.cos(x) + x[1]


def branching_jacobian(x):
    if x[0] > 0:
        jacobian = np.diag(np.cos(x) * x[1])
        jacobian[:, 1] += np.sin(x)
    else:
        jacobian = np.diag(-np.sin(x))
        jacobian[:, 1] += 1
    return jacobian


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_guard_flipping_records_again(dtype):
    x = np.array([0.5, 2.0, -1.0], dtype)
    w = cyad.record(branching, x)
    for k in range(RECORD_LIMIT - 1):
        at = (x * (-1) ** (k + 1)).astype(dtype)
        assert_allclose(cyad.jacobian(w, at), branching_jacobian(at.astype(np.float64)),
                        **TOLERANCE[dtype])
        assert w.tape.records == k + 2
        # the same branch again: the same record
        assert_allclose(cyad.jacobian(w, at), branching_jacobian(at.astype(np.float64)),
                        **TOLERANCE[dtype])
        assert w.tape.records == k + 2
    with pytest.raises(TapeLimit, match=r"recorded 8 times.*bool\(\)"):
        cyad.jacobian(w, x * (-1) ** RECORD_LIMIT)


def test_the_record_limit_through_the_c_function(c_hooks):
    x = np.array([0.5, 2.0, -1.0])
    w = cyad.record(branching, x)
    dx = np.eye(3)
    statuses = []
    for k in range(RECORD_LIMIT + 1):
        y, dy = np.zeros(3), np.zeros((3, 3))
        statuses.append(c_hooks.call_function(w, x * (-1) ** (k + 1), dx, y, dy))
        if statuses[-1] == 0:
            assert_allclose(dy, branching_jacobian(x * (-1) ** (k + 1)), rtol=1e-14)
    # the last record still answers its own branch
    assert statuses == [0] * (RECORD_LIMIT - 1) + [cyad._c_api.PYTHON_ERROR, 0]
    statuses.append(c_hooks.call_function(w, x, dx, np.zeros(3), np.zeros((3, 3))))
    assert statuses[-1] == cyad._c_api.PYTHON_ERROR
    with pytest.raises(TapeLimit, match="a guard failed again"):
        c_hooks.raise_function_status(w, statuses[-1])
    # nothing kept once raised; another status is the function's own
    with pytest.raises(cyad.FunctionError):
        c_hooks.raise_function_status(w, statuses[-1])


def test_a_captured_array_changed_in_place_records_again():
    weights = np.array([1.0, 2.0, 3.0])
    x = np.array([0.1, 0.2, 0.3])
    w = cyad.record(lambda x: np.sin(x) * weights, x)
    assert_allclose(cyad.jacobian(w, x), np.diag(np.cos(x) * weights), rtol=1e-15)
    weights *= -2
    assert_allclose(cyad.jacobian(w, x), np.diag(np.cos(x) * weights), rtol=1e-15)
    assert w.tape.records == 1      # data changed, not control flow: not counted
    strided = np.arange(6.0)[::2]
    w = cyad.record(lambda x: x * strided, x)
    strided[1] = 7.0
    assert_allclose(cyad.jacobian(w, x), np.diag(strided), rtol=1e-15)


def test_the_two_argument_form():
    def f(y, x):
        y[:2] = x[:2] * x[2]
        y[2] += np.exp(x[0])

    x = np.array([0.3, -0.7, 1.5])
    y = np.array([0.0, 0.0, 4.0])
    w = cyad.record(f, x, y)
    assert w.out_shape == (3,)
    expected = np.array([[x[2], 0, x[0]], [0, x[2], x[1]], [np.exp(x[0]), 0, 0]])
    y_in = np.array([0.0, 0.0, 4.0])
    assert_allclose(cyad.jacobian(w, x, y=y_in), expected, rtol=1e-15)
    assert_allclose(y_in, [x[0] * x[2], x[1] * x[2], 4.0 + np.exp(x[0])], rtol=1e-15)
    assert_allclose(cyad.pullback(w, x, np.array([1.0, 2.0, 3.0]), y=np.zeros(3)),
                    np.array([1.0, 2.0, 3.0]) @ expected, rtol=1e-14)


# -- threads ---------------------------------------------------------------------------------

@pytest.mark.parametrize("threads", [2, 4])
def test_threads_with_a_prep_each(threads):
    program = CHOSEN[1]
    w, x = recorded(program, np.float64)
    points = [x * (1 + 0.01 * k) for k in range(threads * 6)]
    serial = [cyad.jacobian(w, p) for p in points]
    preps = {}

    def jacobian(p):
        prep = preps.setdefault(threading.get_ident(), cyad.prepare_jacobian(w, x))
        return cyad.jacobian(w, p, prep=prep)

    with ThreadPoolExecutor(threads) as pool:
        parallel = list(pool.map(jacobian, points))
    for got, expected in zip(parallel, serial, strict=True):
        assert_allclose(got, expected, rtol=0, atol=0)


def test_concurrent_calls_without_the_gil(c_hooks):
    program = CHOSEN[2]
    w, x = recorded(program, np.float64)
    n = x.size
    repeats = 300
    jobs = []
    for k in range(4):
        at = x * (1 + 0.02 * k)
        jobs.append((at, np.eye(n), np.zeros(n), np.zeros((n, n))))
    barrier = threading.Barrier(4)

    def run(job):
        at, dx, y, dy = job
        barrier.wait()
        return c_hooks.call_function(w, at, dx, y, dy, repeats)

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(run, jobs)) == [0] * 4
    for at, _, y, dy in jobs:
        assert_allclose(dy, reference_jacobian(program, at), **TOLERANCE[np.float64])
        assert_allclose(y, vector_valued(program, np)(at), rtol=1e-13)
    (order, width, arenas), = w.tape.programs
    assert (order, width) == (1, n) and 1 <= arenas <= 4


def test_threads_deriving_widths_at_once(c_hooks):
    # each thread's first call derives the program of its width, all at once
    program = CHOSEN[3]
    w, x = recorded(program, np.float64)
    widths = [1, 2, 4, 8, 16, 24, 3, 5]
    rng = np.random.default_rng(1)
    jobs = [(rng.uniform(-1, 1, (x.size, k)), np.zeros(x.size), np.zeros((x.size, k)))
            for k in widths]
    barrier = threading.Barrier(len(jobs))

    def run(job):
        dx, y, dy = job
        barrier.wait()
        return c_hooks.call_function(w, x, dx, y, dy, 20)

    with ThreadPoolExecutor(len(jobs)) as pool:
        assert list(pool.map(run, jobs)) == [0] * len(jobs)
    jacobian = reference_jacobian(program, x)
    for dx, _, dy in jobs:
        assert_allclose(dy, jacobian @ dx, **TOLERANCE[np.float64])
    assert sorted(width for _, width, _ in w.tape.programs) == sorted(widths)


def test_a_guard_flipping_under_threads(c_hooks):
    x = np.array([0.5, 2.0, -1.0])
    w = cyad.record(branching, x)
    jobs = [(x if k % 2 else -x, np.eye(3), np.zeros(3), np.zeros((3, 3))) for k in range(4)]

    def run(job):
        at, dx, y, dy = job
        return c_hooks.call_function(w, at, dx, y, dy, 1)

    with ThreadPoolExecutor(4) as pool:
        statuses = list(pool.map(run, jobs))
    for status, (at, _, _, dy) in zip(statuses, jobs, strict=True):
        assert status == 0
        assert_allclose(dy, branching_jacobian(at), rtol=1e-14)


def test_a_prepared_call_allocates_nothing(allocations_per_call):
    # (a tape without python instructions: those call Python, which allocates)
    x = np.linspace(0.1, 1.0, 6)
    w = cyad.record(lambda x: np.sin(x) * x[0] + np.exp(x) @ x, x)
    prep = cyad.prepare_jacobian(w, x)
    out = np.empty((x.size, x.size))
    assert allocations_per_call(lambda: cyad.jacobian(w, x, prep=prep, out=out)) == 0
    s = cyad.record(lambda x: np.sum(np.sin(x) * x[0]) + np.exp(x) @ x, x)
    for engine in ("dual", "tape"):
        hessian = cyad.prepare_hessian(s, x, engine=engine)
        assert allocations_per_call(
            lambda hessian=hessian: cyad.hessian(s, x, prep=hessian, out=out)) == 0


# -- errors ---------------------------------------------------------------------------------

def test_bad_input():
    with pytest.raises(TypeError, match="Python callable"):
        cyad.record(cyad.record(np.sin, 1.0), 1.0)
    with pytest.raises(TypeError, match="float64 or float32"):
        cyad.record(np.sin, np.arange(3))
    with pytest.raises(TypeError, match="float32"):
        cyad.jacobian(cyad.record(np.sin, np.zeros(2)), np.zeros(2, np.float32))


def test_wrong_sizes_and_python_callables_in_c(c_hooks):
    w = cyad.record(np.sin, np.zeros(3))
    status = c_hooks.call_function(w, np.zeros(4), np.zeros((4, 1)), np.zeros(4),
                                   np.zeros((4, 1)))
    with pytest.raises(ValueError, match="takes 3 inputs and gives 3 outputs"):
        c_hooks.raise_function_status(w, status)
    with pytest.raises(TypeError, match="cyad.record"):
        c_hooks.call_function(cyad.FunctionWrapper(np.sin), np.zeros(1), np.zeros((1, 1)),
                              np.zeros(1), np.zeros((1, 1)))


def test_f_raising_while_recorded_again():
    def f(x):
        if x[0] > 0:
            return np.sin(x)
        raise ArithmeticError("negative")

    w = cyad.record(f, np.array([1.0, 2.0]))
    with pytest.raises(ArithmeticError, match="negative"):
        cyad.jacobian(w, np.array([-1.0, 2.0]))
    assert_allclose(cyad.jacobian(w, np.array([1.0, 2.0])), np.diag(np.cos([1.0, 2.0])))


@pytest.mark.parametrize("engine", ["dual", "tape"])
def test_an_error_of_a_python_instruction_is_raised(engine):
    # (inv is a python instruction of the tape: NumPy's own call, run at every replay)
    def f(x):
        return np.linalg.inv(x.reshape(2, 2)).ravel()

    w = cyad.record(f, np.eye(2).ravel())
    prep = cyad.prepare_jacobian(w, np.eye(2).ravel(), engine=engine)
    with pytest.raises(np.linalg.LinAlgError, match="Singular"):
        cyad.jacobian(w, np.ones(4), prep=prep)
    x = np.array([2.0, 1.0, 0.0, 1.0])
    inverse = np.linalg.inv(x.reshape(2, 2))
    assert_allclose(cyad.jacobian(w, x, prep=prep),
                    -np.einsum("ik,lj->ijkl", inverse, inverse).reshape(4, 4), rtol=1e-14)
