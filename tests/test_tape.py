"""engine="tape" never gives a silently wrong derivative: views, aliasing, errors, allocations,
random programs.

Views and writes must behave as NumPy's (values against plain NumPy, derivatives against
the dual engine), f(y, x) reads y's incoming values, outputs may alias inputs; bad uses
fail with a clear TypeError, and an exception in f leaves the prep usable; a prepared
call with out= makes no heap allocation; random programs agree with the dual engine and
JAX at first and second order. The guards are tested in tests/test_tape_guards.py.
"""
import functools

import numpy as np
import pytest
import reference_functions
from derivative_references import (
    assert_matches,
    exact_in_float32,
    jax,
    jnp,
    loosest,
    references,
    seeded,
)
from test_tape_guards import (
    DIRECTION,
    DTYPES,
    FAMILIES,
    REFERENCE_TOLERANCE,
    assert_close,
    prepared,
)

import cyad

pytestmark = pytest.mark.xdist_group("test_tape")

# the same program on both engines
SAME_TOLERANCE = {np.float64: dict(rtol=1e-12, atol=1e-13), np.float32: dict(rtol=1e-4, atol=1e-5)}


# -- views and writes --------------------------------------------------------------------------

def _view_zeroed(x):
    a = x * 2.0
    v = a[1:]
    v[...] = 0.0
    return a * x


def _reshape_transpose_written(x):
    a = x.copy()
    r = a.reshape(2, 3)
    r[0] = x[3:] ** 2
    t = a.reshape(2, 3).T
    t[1] *= 3.0
    return a


def _view_after_its_base_was_written(x):
    a = x * 1.0
    v = a[::2]
    a[0] = x[3] ** 2
    a += 1.0
    return v * x[:3]


def _copyto(x):
    a = np.zeros_like(x)
    np.copyto(a, x ** 2)
    np.copyto(a, np.sin(x), where=x > 0)
    return a


def _ufunc_out_and_in_place(x):
    a = x * 1.0
    np.multiply(a, x, out=a)
    np.sin(a, out=a)
    a -= x
    a /= 2.0 + x ** 2
    a **= 2
    np.add(a[:3], a[3:], out=a[3:])
    return a


def _view_of_a_view(x):
    a = x * 1.0
    v = a[1:]
    w = v[::2]
    w[...] = x[:3] ** 2
    return a + v.sum()


def _repeated_indices(x):
    a = x * 1.0
    a[[0, 0, 2]] += x[:3]      # += once per distinct index, as NumPy
    a[[1, 1]] = x[4:] ** 2     # the last write wins
    return a


def _column_of_a_reshape(x):
    a = x * 1.0
    a.reshape(2, 3)[:, 0] *= x[:2]
    np.multiply(x[:3], x[3:], out=a[::2])
    return a


def _transpose_read_after_a_write(x):
    m = (x * 1.0).reshape(2, 3)
    t = m.T
    m[...] = m ** 2
    return t.ravel() * 1.0


def _shifted_onto_itself(x):
    a = np.empty_like(x)
    a[:] = x
    a[1:] = a[:-1]
    b = x * 1.0
    b[2:] = b[::-1][:4]
    return a * b


def _written_into_x(x):
    m = x.reshape(2, 3)
    m[0, 1] = 5.0
    s = np.swapaxes(m, 0, 1)
    s[2] = np.sin(s[0])
    return x ** 2


def _masked_update(x):
    a = x * 1.0
    a[a > 0] *= 2.0
    return a


def _views_without_a_copy(x):
    a = x * 1.0
    np.flip(a)[0] = 7.0 * x[0]                     # a view: writes a[-1]
    a.reshape(3, 2)[1:].ravel()[0] = x[1] ** 2     # rows of a reshape: a view
    a[::2].reshape(3, 1)[1, 0] = x[5] ** 3          # a strided vector reshaped: a view
    b = a[np.newaxis, :, None]
    b[0, 5, 0] += x[3]
    return a


def _reshapes_that_copy(x):
    a = (x * 1.0).reshape(2, 3)
    a.T.ravel()[0] = 7.0                           # a copy: a is not written
    a[:, 1:].ravel()[1] = 8.0                      # a copy
    a.reshape(3, 2, order="F")[0, 0] = 9.0         # a copy
    a.flatten()[2] = 10.0                          # a copy
    return a.ravel() * x


def _partial_write_into_a_matrix(x):
    c = x.reshape(2, 3) * 1.0
    v = c.reshape(-1)[::2]
    v[...] = np.sin(v) * 2.0       # c stays (2, 3): broadcast below by rows
    return (c * x[:2].reshape(2, 1)).ravel()


def _function_out(x):
    a = x * 1.0
    np.sum(a.reshape(2, 3) ** 2, axis=0, out=a[3:])    # a NumPy function's out=, a view
    np.cumsum(a[::-1][:3], out=a[:3])                   # read from what it overwrites
    return a * x


def _reads_y(y, x):
    y[1:] += x[:-1]
    y *= x
    y[...] = y * x + y ** 2


def _y_view_read_after_y_written(y, x):
    v = y[::2]
    y[...] = x
    y[:3] += v
    y *= y[::-1]


def _slices_updated_in_place(x):
    a = x.reshape(2, 3) * 1.0
    a[:, 1:] -= a[:, :-1] * 2.0    # a tuple of slices, reading what it writes
    a[1, ::2] *= x[:2]             # an int and a strided slice
    a[..., 0] += 2.0
    a[None, 1] = a[1] ** 2         # a new axis in the key
    v = a[:, 1:]
    a[0] = x[3:]                   # v sees the write
    a[:, 1:] = v                   # and is written back onto its own places
    a[1:, :2] = a[:1, 1:] * 2.0    # another view's places
    return a.ravel() * x


VIEW_PROGRAMS = {f.__name__.lstrip("_"): f for f in (
    _view_zeroed, _reshape_transpose_written, _view_after_its_base_was_written, _copyto,
    _ufunc_out_and_in_place, _view_of_a_view, _repeated_indices, _column_of_a_reshape,
    _transpose_read_after_a_write, _shifted_onto_itself, _written_into_x, _masked_update,
    _views_without_a_copy, _reshapes_that_copy, _partial_write_into_a_matrix, _function_out,
    _reads_y,
    _y_view_read_after_y_written, _slices_updated_in_place)}
VIEW_POINT = np.array([0.5, -1.0, 2.0, 0.3, 1.5, -0.7])
VIEW_OTHER = np.array([-0.25, 0.75, 1.25, -0.5, 0.125, 0.9])
Y_START = np.array([1.0, 2.0, -3.0, 4.0, 0.5, -1.5])


def _numpy_value(f, x, two_argument):
    x = x.copy()
    if not two_argument:
        return f(x)
    y = Y_START.astype(x.dtype)
    f(y, x)
    return y


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", list(VIEW_PROGRAMS))
def test_views_and_writes_follow_numpy(name, dtype):
    f = VIEW_PROGRAMS[name]
    two_argument = f.__code__.co_argcount == 2

    def y_keywords():
        return {"y": Y_START.astype(dtype)} if two_argument else {}

    x = VIEW_POINT.astype(dtype)
    prep = cyad.prepare_jacobian(f, x, engine="tape", **y_keywords())
    size = np.size(_numpy_value(f, x, two_argument))
    out = (np.zeros(size, dtype), np.zeros((size, 6), dtype))
    for point in (VIEW_POINT, VIEW_OTHER):
        point = point.astype(dtype)
        kwargs = y_keywords()
        value, jacobian = cyad.value_and_jacobian(f, point, prep=prep, out=out, **kwargs)
        assert value is out[0]
        if two_argument:
            assert_close(kwargs["y"], value, dtype, what="y")
        assert_close(value, _numpy_value(f, point, two_argument), dtype, what="value")
        _, expected = cyad.value_and_jacobian(f, point, engine="dual", **y_keywords())
        assert_close(jacobian, expected, dtype, what="jacobian")
    # a mask read off the values is guarded, the rest is fixed
    assert prep.engine_state.records == (2 if name == "masked_update" else 1)

    # second order, through a scalar of the program
    def scalar(x):
        if not two_argument:
            r = f(x)
            return np.sum(np.sin(r) * r)
        y = np.zeros_like(x)
        y[...] = Y_START
        f(y, x)
        return np.sum(np.sin(y) * y)

    x = VIEW_POINT.astype(dtype)
    assert_close(cyad.hessian(scalar, x, engine="tape"), cyad.hessian(scalar, x, engine="dual"),
                  dtype, what="hessian")


def _empty_selections(x):
    c = x[:1] * 1.0
    c[1:] += x[:0] ** 2            # empty on both sides
    x[2:2] = 5.0
    return np.sum(c) * np.sum(x[1:1]) + np.sum(x ** 3) + c[0] * np.sum(x[::-1][:0])


@pytest.mark.parametrize("family", FAMILIES)
def test_empty_selections(family):
    # f = sum(x**3) + 0: the empty slices select, add and write nothing
    x = np.array([0.5, -1.0, 2.0])
    prep, call, _ = prepared(family, _empty_selections, x, np.float64)
    v = DIRECTION[:3]
    expected = {"gradient": 3 * x ** 2, "hvp": 6 * x * v, "hessian": np.diag(6 * x)}[family]
    assert_close(call(x), expected, np.float64)


def test_a_reshape_view_is_what_numpy_says():
    # the rule behind the two programs above, on every kind of view of a (2, 3) array
    from cyad._tape.trace import Recording, _numpy_gives_a_view
    from cyad._primitives import TABLE

    views = [lambda a: a, lambda a: a.T, lambda a: a[:, 1:], lambda a: a[1:], lambda a: a[::-1],
             lambda a: a[:, ::2], lambda a: a.T[::-1], lambda a: a[np.newaxis]]
    shapes = [(-1,), (3, 2), (6, 1), (1, 2, 3)]
    for view in views:
        base = np.arange(6.0).reshape(2, 3)
        rec = Recording(np.float64)
        traced = view(rec.input(base).reshape(2, 3))
        plain = view(base)
        for shape in shapes:
            for order in ("C", "F"):
                if plain.size != int(np.prod([s for s in shape if s > 0])) and -1 not in shape:
                    continue
                entry = TABLE[np.reshape]
                _, params = entry.bind(plain, shape, order=order)
                expected = np.shares_memory(np.reshape(plain, shape, order=order), base)
                assert _numpy_gives_a_view(entry, traced, params) == expected, (shape, order)


def test_broadcast_shapes_agree_with_numpy():
    # tracing's own np.broadcast_shapes (it makes no arrays), errors included
    from cyad._tape.trace import _broadcast_shapes

    rng = np.random.default_rng(0)
    for _ in range(5000):
        shapes = {tuple(int(n) for n in rng.choice([0, 1, 2, 3], rng.integers(0, 4)))
                  for _ in range(rng.integers(2, 4))}
        try:
            expected = np.broadcast_shapes(*shapes)
        except ValueError:
            with pytest.raises(ValueError):
                _broadcast_shapes(shapes)
            continue
        assert _broadcast_shapes(shapes) == expected, shapes


# -- what recording evaluates in NumPy ------------------------------------------------------------

def _counting_evaluations(monkeypatch):
    """The kinds of the instructions tracing evaluates in NumPy from now on, in order."""
    import cyad._tape.trace as tracing

    kinds = []

    def evaluate(instr, args):
        kinds.append(instr.kind)
        return original(instr, args)
    original = tracing.evaluate
    monkeypatch.setattr(tracing, "evaluate", evaluate)
    return kinds


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("family", ["gradient", "hvp", "hessian", "second_derivative"])
def test_a_tape_nothing_reads_is_never_evaluated_in_numpy(monkeypatch, family, dtype):
    # recording evaluates no instruction (the replay computes f and its derivatives), and
    # the derivatives are right at the recorded point and at another
    from rosenbrock import rosenbrock, rosenbrock_gradient, rosenbrock_hessian

    kinds = _counting_evaluations(monkeypatch)
    x = np.linspace(-1.2, 1.4, 5)
    v = DIRECTION[:x.size]
    if family == "second_derivative":
        def f(t):
            return np.exp(np.sin(t) * t) / (1.0 + t ** 2)

        def expected(t):
            # d/dt of f'(t) = f(t) ((t cos t + sin t) - 2t / (1 + t^2))
            value = np.exp(np.sin(t) * t) / (1.0 + t ** 2)
            g = t * np.cos(t) + np.sin(t) - 2.0 * t / (1.0 + t ** 2)
            dg = 2.0 * np.cos(t) - t * np.sin(t) - (2.0 - 2.0 * t ** 2) / (1.0 + t ** 2) ** 2
            return value * (g * g + dg)
        points = [np.asarray(0.7, dtype), np.asarray(-1.3, dtype)]
        prep = cyad.prepare_second_derivative(f, points[0], engine="tape")
        run = [cyad.second_derivative(f, p, prep=prep) for p in points]
    else:
        expected = {"gradient": rosenbrock_gradient,
                    "hvp": lambda t: rosenbrock_hessian(t) @ v,
                    "hessian": rosenbrock_hessian}[family]
        prepare, call = getattr(cyad, f"prepare_{family}"), getattr(cyad, family)
        args = (v.astype(dtype),) if family == "hvp" else ()
        points = [x.astype(dtype), (x[::-1] * 0.9).astype(dtype)]
        prep = prepare(rosenbrock, points[0], *args, engine="tape")
        run = [call(rosenbrock, p, *args, prep=prep) for p in points]
    assert kinds == []
    for point, result in zip(points, run):
        assert_close(result, expected(np.asarray(point, np.float64)), dtype,
                     REFERENCE_TOLERANCE)


def _chain(xp, x):
    y = x
    for _ in range(1000):   # a dependency chain deeper than Python's recursion limit
        y = y * 0.999 + y * y * 1e-4
    return y


def _long_chain_then_a_branch(x):
    y = _chain(np, x)
    if np.sum(y) > 0:
        return np.sum(np.sin(y) * x)
    return np.sum(np.cos(y) * x)


@functools.cache
def _branch_gradient(branch):
    """JAX's gradient of the chain then the branch taken, compiled as one: the chain's steps
    as a loop (XLA compiles 1000 unrolled steps far slower than JAX runs them eagerly)."""
    def reference(t):
        y = jax.lax.fori_loop(0, 1000, lambda _, y: y * 0.999 + y * y * 1e-4, t)   # _chain
        return jnp.sum((jnp.sin(y) if branch else jnp.cos(y)) * t)
    return jax.jit(jax.grad(reference))


@pytest.mark.skipif(jax is None, reason="JAX is the reference")
def test_a_guard_evaluates_what_it_reads_and_still_fires(monkeypatch):
    # the guard's value is computed (only from what it depends on) at the end of a chain
    # too long to walk recursively, with an operand read twice; the guard fires where the
    # branch flips, and each branch's gradient is right
    kinds = _counting_evaluations(monkeypatch)
    x = np.array([0.5, 1.0, -0.25])
    prep = cyad.prepare_gradient(_long_chain_then_a_branch, x, engine="tape")
    branches = []
    for point in (x, -x, x * 2.0):
        result = cyad.gradient(_long_chain_then_a_branch, point, prep=prep)
        if point is x:
            # the chain's 4 instructions a step, the sum, the comparison: nothing after
            # the guard, nothing of the derivative tape
            assert len(kinds) == 4 * 1000 + 2 and kinds[-1] == "compare"
        branch = bool(np.sum(_chain(np, point)) > 0)
        branches.append(branch)
        assert_close(result, _branch_gradient(branch)(point), np.float64, REFERENCE_TOLERANCE)
    assert branches == [True, False, True]
    assert prep.engine_state.records == 3    # recorded anew at -x, and again at 2x
    assert len(kinds) == 3 * (4 * 1000 + 2)


# -- outputs that alias inputs -------------------------------------------------------------------

def _smooth(x):
    return np.sin(x) * x[::-1] + x ** 2


def _smooth_scalar(x):
    return np.sum(np.sin(x) * x[::-1] ** 2)


def _smooth_in_place(y, x):
    y[...] = y * np.sin(x) + x[::-1]


ALIAS_X = np.array([0.3, -0.2, 1.1, 0.7])
ALIAS_V = np.array([1.0, 2.0, -3.0, 0.5])


def test_outputs_that_alias_inputs():
    run = {}
    # gradient into x
    x = ALIAS_X.copy()
    prep = cyad.prepare_gradient(_smooth_scalar, x, engine="tape")
    run["gradient out=x"] = (cyad.gradient(_smooth_scalar, x, prep=prep, out=x), x,
                             cyad.gradient(_smooth_scalar, ALIAS_X, engine="dual"))
    # pushforward into x, into the tangent
    for into in ("x", "dx"):
        x, dx = ALIAS_X.copy(), ALIAS_V.copy()
        prep = cyad.prepare_pushforward(_smooth, x, dx, engine="tape")
        out = x if into == "x" else dx
        run[f"pushforward out={into}"] = (cyad.pushforward(_smooth, x, dx, prep=prep, out=out),
                                          out, cyad.pushforward(_smooth, ALIAS_X, ALIAS_V,
                                                                engine="dual"))
    # hvp into the direction, gradient_and_hvp's gradient into x
    x, v = ALIAS_X.copy(), ALIAS_V.copy()
    prep = cyad.prepare_hvp(_smooth_scalar, x, v, engine="tape")
    run["hvp out=v"] = (cyad.hvp(_smooth_scalar, x, v, prep=prep, out=v), v,
                        cyad.hvp(_smooth_scalar, ALIAS_X, ALIAS_V, engine="dual"))
    x, v = ALIAS_X.copy(), ALIAS_V.copy()
    hv = np.zeros(4)
    got = cyad.gradient_and_hvp(_smooth_scalar, x, v, prep=prep, out=(x, hv))
    expected = cyad.gradient_and_hvp(_smooth_scalar, ALIAS_X, ALIAS_V, engine="dual")
    run["gradient_and_hvp out=(x, .)"] = (got[0], x, expected[0])
    run["gradient_and_hvp's hvp"] = (got[1], hv, expected[1])
    # a Jacobian whose buffer holds x, and a Hessian's
    for family, f in (("jacobian", _smooth), ("hessian", _smooth_scalar)):
        buffer = np.zeros((4, 4))
        x = buffer[2]
        x[...] = ALIAS_X
        prep = getattr(cyad, f"prepare_{family}")(f, x, engine="tape")
        run[f"{family} holding x"] = (getattr(cyad, family)(f, x, prep=prep, out=buffer), buffer,
                                      getattr(cyad, family)(f, ALIAS_X, engine="dual"))
    # value=y, and y read as it was
    y = ALIAS_V.copy()
    prep = cyad.prepare_jacobian(_smooth_in_place, ALIAS_X, y=y.copy(), engine="tape")
    jacobian = np.zeros((4, 4))
    value, _ = cyad.value_and_jacobian(_smooth_in_place, ALIAS_X, y=y, prep=prep,
                                       out=(y, jacobian))
    expected = cyad.value_and_jacobian(_smooth_in_place, ALIAS_X, y=ALIAS_V.copy(),
                                       engine="dual")
    run["value=y"] = (value, y, expected[0])
    run["value=y's jacobian"] = (jacobian, jacobian, expected[1])
    assert_close(value, ALIAS_V * np.sin(ALIAS_X) + ALIAS_X[::-1], np.float64)

    for name, (result, out, expected) in run.items():
        assert result is out, name
        assert_close(result, expected, np.float64, what=name)


# -- errors ------------------------------------------------------------------------------------

def test_a_c_function_is_refused():
    g = reference_functions.C.g
    x = np.linspace(0.1, 0.6, reference_functions.N)
    for family, args in (("gradient", ()), ("hvp", (x,)), ("hessian", ())):
        with pytest.raises(TypeError, match="engine='tape' traces Python callables"):
            getattr(cyad, f"prepare_{family}")(g, x, *args, engine="tape")
        with pytest.raises(TypeError, match="engine='tape' traces Python callables"):
            getattr(cyad, family)(g, x, *args, engine="tape")


NESTED = {
    "traced x": lambda x: np.sum(cyad.gradient(lambda t: np.sum(t * x), x * 1.0)),
    "captured, traced first": lambda x: cyad.derivative(lambda t: np.sum(x * t), 1.0),
    "captured, dual first": lambda x: cyad.derivative(lambda t: np.sum(t * x), 1.0),
    "captured, through a rule": lambda x: cyad.derivative(lambda t: np.sin(t) + x[0], 1.0),
    "inner tape": lambda x: cyad.derivative(lambda t: np.sum(x * t), 1.0, engine="tape"),
}


@pytest.mark.parametrize("engine", ["tape", "dual"])
@pytest.mark.parametrize("name", list(NESTED))
def test_a_cyad_call_inside_f_nests(name, engine):
    # the tape records the inner derivative as instructions: d/dx of sum(x) is 1 (the
    # rule's derivative is cos(1), whatever x)
    x = np.array([0.5, -1.0, 2.0])
    expected = np.zeros(3) if name == "captured, through a rule" else np.ones(3)
    assert_close(cyad.gradient(NESTED[name], x, engine=engine), expected, np.float64)


@pytest.mark.parametrize("call, match", [
    (lambda x: np.sum(np.lib.stride_tricks.sliding_window_view(x, 2)),
     "numpy.lib.stride_tricks.sliding_window_view"),
    (lambda x: np.sum(np.unwrap(x)), "numpy.unwrap"),
    (lambda x: np.sum(np.spacing(x)), "numpy.spacing"),
    (lambda x: np.add.reduceat(x, [0, 1]), r"numpy.add.reduceat"),
    (lambda x: np.sum(np.asarray(x)), "cannot become a plain ndarray"),
    (lambda x: np.sum(np.array([x[0], x[1]])), "cannot become a plain ndarray"),
    (lambda x: float(x[0]) * np.sum(x), r"Python number through float\(\)"),
    (lambda x: x[0].item() * x[1], r"Python number through item\(\)"),
    (lambda x: np.sum(x * complex(x[0])), r"Python number through complex\(\)"),
    (lambda x: np.sum(np.multiply(x, x, out=np.zeros(3))), "into a plain ndarray"),
], ids=["sliding_window_view", "unwrap", "spacing", "ufunc.reduceat", "asarray", "array",
        "float", "item", "complex", "out=ndarray"])
def test_what_a_tape_cannot_follow_is_a_type_error(call, match):
    x = np.array([0.5, -1.0, 2.0])
    with pytest.raises(TypeError, match=match):
        cyad.gradient(call, x, engine="tape")


class Failure(Exception):
    pass


def _fails_for_large_x(x):
    if x[0] > 1.0:
        raise Failure("x[0] is large")
    return np.sum(np.sin(x) * x)


@pytest.mark.parametrize("family", FAMILIES)
def test_an_exception_in_f_propagates_and_the_prep_stays_usable(family):
    x = np.array([0.5, -1.0, 2.0])
    args = (DIRECTION[:3],) if family == "hvp" else ()
    prepare, run = getattr(cyad, f"prepare_{family}"), getattr(cyad, family)
    prep = prepare(_fails_for_large_x, x, *args, engine="tape")
    out = np.zeros((3, 3) if family == "hessian" else 3)
    # raised while recording the first tape, while recording anew, then recorded again
    for point, raises in ((x + 1.0, True), (x, False), (x * 0.5, False), (x + 1.0, True),
                          (x - 0.25, False)):
        if raises:
            with pytest.raises(Failure, match="large"):
                run(_fails_for_large_x, point, *args, prep=prep, out=out)
            continue
        run(_fails_for_large_x, point, *args, prep=prep, out=out)
        assert_close(out, run(_fails_for_large_x, point, *args, engine="dual"), np.float64)


# -- allocations ---------------------------------------------------------------------------------

N_ALLOCATIONS = 8


def _elementwise_scalar(x):
    return np.sum(np.sin(x[1:]) * x[:-1] ** 2) + np.sum(np.exp(x) / (1.0 + x * x))


def _elementwise_vector(x):
    return np.sin(x[1:]) * x[:-1] ** 2 + np.maximum(x[1:], 0.5) / (1.0 + x[:-1] * x[:-1])


def _elementwise_in_place(y, x):
    y[...] = x[1:] * 2.0
    y += np.cos(x[:-1])
    y[::2] *= np.where(x[1::2] > 0.5, x[1::2], 0.5)


@pytest.mark.parametrize("two_argument", [False, True], ids=["f(x)", "f(y, x)"])
def test_prepared_calls_with_out_allocate_nothing(two_argument, allocations_per_call):
    n = N_ALLOCATIONS
    x = np.linspace(0.1, 1.0, n)
    v = np.linspace(-1.0, 1.0, n)
    y = np.zeros(n - 1)
    if two_argument:
        f = _elementwise_in_place
        prep = cyad.prepare_jacobian(f, x, y=y, engine="tape", chunk=3)
        jac = np.zeros((n - 1, n))
        assert allocations_per_call(lambda: cyad.jacobian(f, x, y=y, prep=prep, out=jac)) == 0
        prep = cyad.prepare_pushforward(f, x, v, y=y, engine="tape")
        tangent = np.zeros(n - 1)
        assert allocations_per_call(
            lambda: cyad.pushforward(f, x, v, y=y, prep=prep, out=tangent)) == 0
        expected = cyad.jacobian(f, x, y=np.zeros(n - 1), engine="dual")
        assert_close(jac, expected, np.float64)
        assert_close(tangent, expected @ v, np.float64)
        return

    g, h = _elementwise_scalar, _elementwise_vector
    results = {}
    prep = cyad.prepare_gradient(g, x, engine="tape")
    results["gradient"] = out = np.zeros(n)
    assert allocations_per_call(lambda: cyad.gradient(g, x, prep=prep, out=out)) == 0
    prep_j = cyad.prepare_jacobian(h, x, engine="tape", chunk=3)
    results["jacobian"] = jac = np.zeros((n - 1, n))
    assert allocations_per_call(lambda: cyad.jacobian(h, x, prep=prep_j, out=jac)) == 0
    prep_p = cyad.prepare_pushforward(h, x, v, engine="tape")
    results["pushforward"] = tangent = np.zeros(n - 1)
    assert allocations_per_call(lambda: cyad.pushforward(h, x, v, prep=prep_p, out=tangent)) == 0
    prep_v = cyad.prepare_hvp(g, x, v, engine="tape")
    results["hvp"] = hv = np.zeros(n)
    assert allocations_per_call(lambda: cyad.hvp(g, x, v, prep=prep_v, out=hv)) == 0
    prep_h = cyad.prepare_hessian(g, x, engine="tape", chunk=3)
    results["hessian"] = hess = np.zeros((n, n))
    assert allocations_per_call(lambda: cyad.hessian(g, x, prep=prep_h, out=hess)) == 0

    expected = {"gradient": cyad.gradient(g, x, engine="dual"),
                "jacobian": cyad.jacobian(h, x, engine="dual"),
                "pushforward": cyad.pushforward(h, x, v, engine="dual"),
                "hvp": cyad.hvp(g, x, v, engine="dual"),
                "hessian": cyad.hessian(g, x, engine="dual")}
    for name, result in results.items():
        assert_close(result, expected[name], np.float64, what=name)


# -- random programs ---------------------------------------------------------------------------
#
# A program is a seeded straight line of steps on a pool of values that starts from x (6
# numbers): elementwise rule-table ufuncs (operands kept in their domains by the step's
# form), sums and means (whole, or along an axis), max, slices, gathers, reshapes,
# transposes, products with constant matrices and of a matrix with its transpose, where,
# maximum, minimum, abs, clip, and updates in place (a slice +=, a ufunc's out=, a write
# through a view of a reshape, a write through a transpose). The scalar program is
# s (1 + s / 10), s the weighted sum of every value; the vector program is the last value,
# raveled. Each runs on NumPy arrays (cyad, both engines) and on jax.numpy (functionally:
# an update in place is .at[].set there), the reference.

PROGRAM_COUNT = 50
PROGRAM_SIZE = 6
UNARY = {
    "sin": lambda xp, a: xp.sin(a),
    "cos": lambda xp, a: xp.cos(a),
    "tanh": lambda xp, a: xp.tanh(a),
    "arctan": lambda xp, a: xp.arctan(a),
    "exp": lambda xp, a: xp.exp(0.5 * a),
    "sqrt": lambda xp, a: xp.sqrt(1.0 + a * a),
    "log": lambda xp, a: xp.log(1.0 + a * a),
    "square": lambda xp, a: xp.square(a),
    "reciprocal": lambda xp, a: xp.reciprocal(1.0 + a * a),
    "negative": lambda xp, a: -a,
}
BINARY = {
    "add": lambda xp, a, b: a + b,
    "subtract": lambda xp, a, b: a - b,
    "multiply": lambda xp, a, b: a * b,
    "divide": lambda xp, a, b: a / (1.5 + b * b),
    "power": lambda xp, a, b: (1.0 + a * a) ** (0.5 * xp.tanh(b)),
    "arctan2": lambda xp, a, b: xp.arctan2(a, 1.5 + b * b),
}
SLICES = {1: [np.s_[1:], np.s_[::-1], np.s_[::2], np.s_[:-1]],
          2: [np.s_[:, 1:], np.s_[::-1], np.s_[1:], np.s_[:, ::-1]]}


def _update_slice(xp, a, b):
    if xp is not np:
        return a.at[1:].add(b[:-1] ** 2)
    c = a * 1.0
    c[1:] += b[:-1] ** 2
    return c


def _update_out(xp, a, b):
    if xp is not np:
        return a * b - a
    c = a * 1.0
    np.multiply(c, b, out=c)
    c -= a
    return c


def _update_view(xp, a):
    if xp is not np:
        flat = a.reshape(-1)
        return flat.at[::2].set(xp.sin(flat[::2]) * 2.0).reshape(a.shape)
    c = a * 1.0
    v = c.reshape(-1)[::2]
    v[...] = np.sin(v) * 2.0
    return c


def _update_transposed(xp, a):
    if xp is not np:
        return a.at[:, 0].set(a[:, 0] * (1.5 + a[:, -1] ** 2))
    c = a * 1.0
    t = c.T
    t[0] = t[0] * (1.5 + t[-1] ** 2)
    return c


def _apply(xp, step, pool):
    kind, inputs, params = step
    a = pool[inputs[0]]
    b = pool[inputs[1]] if len(inputs) > 1 else None
    if kind == "unary":
        return UNARY[params["name"]](xp, a)
    if kind == "binary":
        return BINARY[params["name"]](xp, a, b)
    if kind in ("sum", "mean"):
        return getattr(xp, kind)(a, axis=params["axis"])
    if kind == "max":
        return xp.max(a)
    if kind == "slice":
        return a[params["key"]]
    if kind == "gather":
        return a[params["index"]]
    if kind == "reshape":
        return a.reshape(params["shape"])
    if kind == "transpose":
        return a.T
    if kind == "matmul":
        return params["matrix"] @ a if a.ndim == 1 else a @ params["matrix"]
    if kind == "gram":
        return a @ a.T
    if kind == "where":
        return xp.where(a > b, a, b * b)
    if kind == "maximum":
        return getattr(xp, params["name"])(a, params["bound"])
    if kind == "abs":
        return xp.abs(a) * a
    if kind == "clip":
        return xp.clip(a, *params["bounds"])
    if kind == "update_slice":
        return _update_slice(xp, a, b)
    if kind == "update_out":
        return _update_out(xp, a, b)
    if kind == "update_view":
        return _update_view(xp, a)
    assert kind == "update_transposed"
    return _update_transposed(xp, a)


def _run_program(program, xp, x):
    pool = [x]
    for step in program["steps"]:
        pool.append(_apply(xp, step, pool))
    return pool


def _scalar_program(program):
    def f(x, xp=np):
        pool = _run_program(program, xp, x)
        s = sum(xp.sum(np.asarray(w, x.dtype) * v) for w, v in zip(program["weights"], pool))
        return s * (1.0 + 0.1 * s)
    return f


def _vector_program(program):
    def f(x, xp=np):
        return xp.reshape(_run_program(program, xp, x)[-1], -1)
    return f


def _apart(values, at, gap=0.05):
    return np.min(np.abs(np.asarray(values) - at)) >= gap


def _random_step(rng, pool):
    """A step on the pool's values (None where the drawn one does not fit them)."""
    i = int(rng.integers(len(pool)))
    a = pool[i]
    same = [j for j, v in enumerate(pool) if np.shape(v) == np.shape(a) or np.ndim(v) == 0]
    kind = str(rng.choice(["unary", "unary", "binary", "binary", "sum", "mean", "max", "slice",
                           "gather", "reshape", "transpose", "matmul", "gram", "where",
                           "maximum", "abs", "clip", "update_slice", "update_out",
                           "update_view", "update_transposed"]))
    j = int(rng.choice(same))
    if kind == "unary":
        return kind, (i,), {"name": str(rng.choice(list(UNARY)))}
    if kind == "binary":
        return kind, (i, j), {"name": str(rng.choice(list(BINARY)))}
    if np.ndim(a) == 0:
        return None
    if kind in ("sum", "mean"):
        return kind, (i,), {"axis": None if a.ndim == 1 or rng.uniform() < 0.4
                            else int(rng.integers(2))}
    if kind == "max":
        top = np.sort(a.ravel())
        return (kind, (i,), {}) if a.size == 1 or top[-1] - top[-2] >= 0.05 else None
    if kind == "slice":
        key = SLICES[a.ndim][rng.integers(4)]
        return (kind, (i,), {"key": key}) if a[key].size else None
    if kind == "gather":
        return kind, (i,), {"index": rng.integers(0, len(a), int(rng.integers(1, 7)))}
    if kind == "reshape":
        shapes = [s for s in [(a.size,), (2, a.size // 2), (a.size // 2, 2)]
                  if np.prod(s) == a.size and s != a.shape]
        return (kind, (i,), {"shape": shapes[rng.integers(len(shapes))]}) if shapes else None
    if kind in ("transpose", "gram", "update_transposed"):
        return (kind, (i,), {}) if a.ndim == 2 else None
    if kind == "matmul":
        columns = a.shape[-1]
        rows = PROGRAM_SIZE if a.ndim == 1 else columns
        matrix = exact_in_float32(rng.standard_normal((rows, columns)) / np.sqrt(columns))
        return kind, (i,), {"matrix": matrix}
    if kind in ("where", "update_slice", "update_out"):
        b = pool[j]
        if np.shape(b) != a.shape or (kind == "where" and not _apart(a, b)):
            return None
        if kind == "update_slice" and (a.ndim != 1 or len(a) < 2):
            return None     # (an empty update: see test_empty_selections)
        return kind, (i, j), {}
    if kind == "maximum":
        bound = exact_in_float32(rng.uniform(np.min(a), np.max(a)))
        name = str(rng.choice(["maximum", "minimum"]))
        return (kind, (i,), {"name": name, "bound": bound}) if _apart(a, bound) else None
    if kind == "abs":
        return (kind, (i,), {}) if _apart(a, 0.0) else None
    if kind == "clip":
        low, high = np.sort(exact_in_float32(rng.uniform(np.min(a), np.max(a), 2)))
        return (kind, (i,), {"bounds": (low, high)}) if _apart(a, low) and _apart(a, high) \
            and high - low > 0.1 else None
    return kind, (i,), {}     # update_view


def _random_program(seed):
    rng = seeded(f"tape-program-{seed}")
    point = exact_in_float32(rng.uniform(-1.5, 1.5, PROGRAM_SIZE))
    program = {"name": f"tape-program-{seed}", "point": point, "steps": []}
    pool = [point]
    while len(program["steps"]) < 8:
        step = _random_step(rng, pool)
        if step is None:
            continue
        value = _apply(np, step, pool)
        if np.size(value) == 0 or np.max(np.abs(value)) > 20.0:
            continue
        program["steps"].append(step)
        pool.append(value)
    program["weights"] = [exact_in_float32(rng.standard_normal(np.shape(v))) for v in pool]
    program["direction"] = exact_in_float32(rng.standard_normal(PROGRAM_SIZE))
    return program


PROGRAMS = [_random_program(seed) for seed in range(PROGRAM_COUNT)]
_PROGRAM_REFERENCES = {}


def _program_reference(program):
    """The scalar program's value, gradient and Hessian and the vector program's Jacobian
    (JAX for all programs at once, else central differences)."""
    if not _PROGRAM_REFERENCES:
        found = references([(lambda xp, x, p=p: [_scalar_program(p)(x, xp),
                                                  _vector_program(p)(x, xp)], p["point"])
                            for p in PROGRAMS])
        _PROGRAM_REFERENCES.update((p["name"], result) for p, result in zip(PROGRAMS, found))
    return _PROGRAM_REFERENCES[program["name"]]


def _on_both_engines(program, dtype):
    """Each operator's result at the program's point: the tape's (prepared at a nearby point
    first, then called with out=) and the dual engine's."""
    f, g = _scalar_program(program), _vector_program(program)
    x = program["point"].astype(dtype)
    v = program["direction"].astype(dtype)
    nearby = (program["point"] + 0.01 * program["direction"]).astype(dtype)

    def along(t):
        return f(x + t * v)

    calls = {"gradient": (f, x, ()), "jacobian": (g, x, ()), "hvp": (f, x, (v,)),
             "hessian": (f, x, ()), "second_derivative": (along, dtype(0.0), ())}
    tape, dual = {}, {}
    for name, (function, point, args) in calls.items():
        prepare, run = getattr(cyad, f"prepare_{name}"), getattr(cyad, name)
        start = dtype(0.01) if name == "second_derivative" else nearby
        prep = prepare(function, start, *args, engine="tape")
        out = np.full(np.shape(run(function, start, *args, prep=prep)), np.nan, dtype)
        assert run(function, point, *args, prep=prep, out=out) is out
        tape[name] = out
        dual[name] = run(function, point, *args, engine="dual")
    return tape, dual


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p["name"])
def test_random_programs_agree_with_the_dual_engine_and_jax(program, dtype):
    tape, dual = _on_both_engines(program, dtype)
    (scalar, vector) = _program_reference(program)
    v = program["direction"]
    expected = {"gradient": scalar.first, "jacobian": vector.first, "hvp": scalar.second @ v,
                "hessian": scalar.second, "second_derivative": v @ scalar.second @ v}
    for name, result in tape.items():
        assert result.dtype == dtype, name
        assert_matches(result, dual[name], **SAME_TOLERANCE[dtype], what=f"{name}: dual")
        assert_matches(result, expected[name], **loosest(scalar.tolerance,
                                                         REFERENCE_TOLERANCE[dtype]),
                       what=f"{name}: reference")
