"""The tape's reverse sweep over lanes of cotangents: pullback batches in chunks and
Jacobians by rows, against JAX (random programs, float64 and float32, batches that
chunks do not divide, the f(y, x) form, outputs aliasing inputs)."""
import functools

import numpy as np
import pytest
from derivative_references import jax
from test_pullback import SOME_PROGRAMS, TOLERANCE, jax_jacobian, vector_program

import cyad

if jax is not None:
    import jax.numpy as jnp

pytestmark = [pytest.mark.skipif(jax is None, reason="JAX gives the reference"),
              pytest.mark.xdist_group("test_tape_reverse_lanes")]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("batch", "chunk"), [(1, None), (3, 2), (8, None), (8, 3),
                                              (17, 5), (17, None)])
@pytest.mark.parametrize("program", SOME_PROGRAMS[::4], ids=lambda p: p.name)
def test_batches_of_cotangents_in_chunks(program, batch, chunk, dtype):
    x = program.point.astype(dtype)
    jac = jax_jacobian(program, x.astype(np.float64))
    rng = np.random.default_rng(batch)
    dys = tuple(rng.uniform(-1.0, 1.0, jac.shape[0]).astype(dtype) for _ in range(batch))
    f = vector_program(program, np)
    prep = cyad.prepare_pullback(f, x, dys if batch > 1 else dys[0], chunk=chunk,
                                 engine="tape")
    assert prep.evaluations == -(-batch // prep.chunk)
    if chunk is not None:
        assert prep.chunk == min(chunk, batch)
    outs = tuple(np.full(x.shape, np.nan, dtype) for _ in range(batch))
    cyad.pullback(f, x, dys if batch > 1 else dys[0], prep=prep,
                  out=outs if batch > 1 else outs[0])
    for dy, out in zip(dys, outs, strict=True):
        assert out.dtype == dtype
        expected = dy.astype(np.float64) @ jac
        if dtype == np.float64:
            np.testing.assert_allclose(out, expected, **TOLERANCE[dtype])
        else:
            scale = np.abs(dy.astype(np.float64)) @ np.abs(jac)
            assert np.all(np.abs(out - expected) <= 1e-3 * scale + 1e-4)


def _rows_function(n_y, python):
    # n_y outputs of 40 inputs through a matmul, a gather, a broadcast, a reduction and
    # (python) a cumsum, a python instruction: each kind's reverse rule with lanes
    a = np.random.default_rng(n_y).standard_normal((n_y, 40)) / 6.0

    def f(x):
        xp = jnp if isinstance(x, jax.Array) else np
        u = xp.tanh(a @ x) * xp.sum(x[::3] ** 2)
        v = xp.cumsum(xp.sin(x)) if python else xp.sin(x)[::-1] * x[0]
        return u + v[-n_y:] * xp.exp(u[:1]) + (x[:n_y] * x[-n_y:]).reshape(n_y)
    return f


@functools.cache
def _rows_jacobian(n_y, python):
    """JAX's Jacobian of _rows_function(n_y, python), compiled as one."""
    return jax.jit(jax.jacrev(_rows_function(n_y, python)))


_ROWS_REFERENCES = {}


def _rows_reference(n_y, python, x):
    """JAX's Jacobian of _rows_function(n_y, python) at x, computed once (the chunks and
    dtypes share it)."""
    key = (n_y, python, x.tobytes())
    if key not in _ROWS_REFERENCES:
        _ROWS_REFERENCES[key] = np.asarray(_rows_jacobian(n_y, python)(jnp.asarray(x)))
    return _ROWS_REFERENCES[key]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("chunk", [None, 1, 3])
@pytest.mark.parametrize(("n_y", "python"), [(1, True), (4, True), (5, True), (20, True),
                                             (4, False), (20, False), (21, False),
                                             (40, False)])
def test_jacobians_by_rows_and_by_columns(n_y, python, chunk, dtype):
    f = _rows_function(n_y, python)
    x = np.linspace(-1.0, 1.2, 40)
    expected = _rows_reference(n_y, python, x)
    prep = cyad.prepare_jacobian(f, x.astype(dtype), chunk=chunk, engine="tape")
    out = np.full((n_y, 40), np.nan, dtype)
    assert cyad.jacobian(f, x.astype(dtype), prep=prep, out=out) is out
    by_rows = 40 >= (cyad._tape.engine.BY_ROWS_PYTHON if python
                     else cyad._tape.engine.BY_ROWS) * n_y
    swept = n_y if by_rows else 40
    assert prep.evaluations == -(-swept // prep.chunk)
    tolerance = TOLERANCE[dtype] if dtype == np.float64 else dict(rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(out, expected, **tolerance)
    # a second call, at another point: the rows' cached seeds are reused
    other = x[::-1] * 0.7
    np.testing.assert_allclose(cyad.jacobian(f, other.astype(dtype), prep=prep),
                               _rows_reference(n_y, python, other), **tolerance)


def _squares_into(y, x):
    y[...] = x[::-1] ** 2 * x[0]


@pytest.mark.parametrize("chunk", [None, 2])
def test_a_batch_in_the_two_argument_form_with_outputs_aliasing_inputs(chunk):
    x = np.array([1.0, 2.0, 3.0])
    jac = np.eye(3)[::-1] * 2 * x * x[0]
    jac[:, 0] += x[::-1] ** 2
    dys = tuple(np.random.default_rng(k).standard_normal(3) for k in range(5))
    y = np.zeros(3)
    prep = cyad.prepare_pullback(_squares_into, x, dys, y=y, chunk=chunk, engine="tape")
    for _ in range(2):
        xs, cts = x.copy(), [dy.copy() for dy in dys]
        outs = (cts[1], xs, cts[0], cts[4], cts[3])   # cotangents and x overwritten
        cyad.pullback(_squares_into, xs, tuple(cts), y=y, prep=prep, out=outs)
        for dy, out in zip(dys, outs, strict=True):
            np.testing.assert_allclose(out, dy @ jac, rtol=1e-14)
        np.testing.assert_allclose(y, x[::-1] ** 2 * x[0])


def test_a_nested_derivative_of_a_batched_pullback():
    # d/dt of a batch of pullbacks at t x (the tape inside, the dual engine outside)
    x = np.array([0.3, 0.7, 1.1])
    dys = (np.array([1.0, -2.0, 0.5]), np.array([0.5, 0.5, -1.0]), np.ones(3))

    def g(t):
        return np.concatenate(cyad.pullback(np.sin, t * x, dys, chunk=2))

    t = 0.8
    expected = np.concatenate([-dy * np.sin(t * x) * x for dy in dys])
    np.testing.assert_allclose(cyad.derivative(g, t), expected, rtol=1e-14)


def test_a_chunked_batch_allocates_nothing(allocations_per_call):
    x = np.linspace(0.1, 1.0, 20)
    dys = tuple(np.linspace(-1.0, 1.0, 20) * k for k in range(5))
    f = lambda x: np.sin(x) * x  # noqa: E731
    prep = cyad.prepare_pullback(f, x, dys, chunk=2, engine="tape")
    outs = tuple(np.zeros(20) for _ in dys)
    assert allocations_per_call(lambda: cyad.pullback(f, x, dys, prep=prep, out=outs)) == 0
    for dy, out in zip(dys, outs, strict=True):
        np.testing.assert_allclose(out, dy * (np.cos(x) * x + np.sin(x)), rtol=1e-14)


@pytest.mark.parametrize("family", ["jacobian", "hessian"])
def test_cached_seeds_that_read_a_transposed_constant(family):
    # the reverse sweep of A @ u reads A transposed, computed from the constant alone:
    # the seeds' own instructions that read it are cached when f is recorded
    a = np.random.default_rng(2).standard_normal((3, 12))
    x = np.linspace(-1.0, 1.0, 12)
    if family == "jacobian":
        def f(x):
            return a @ (x * x) + a[:, :4] @ x[4:8]
    else:
        def f(x):
            return (x * x) @ (a.T @ (a @ x)) + x @ a.T[:, 0]
    operator = getattr(cyad, family)
    prep = getattr(cyad, f"prepare_{family}")(f, x, engine="tape")
    for point in (x, x[::-1] * 0.5):
        result = operator(f, point, prep=prep)
        if family == "jacobian":
            expected = 2 * a * point
            expected[:, 4:8] += a[:, :4]
        else:
            m = a.T @ a
            expected = 2 * np.diag(m @ point) + 2 * m * point + 2 * (m * point).T
        np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-12)


# -- negatives folded into the derivative tapes ------------------------------------------------

def _negatives(prep):
    from cyad._tape.transform import _NEGATIVE
    return sum(instr.kind == "unary" and instr.params["op"] == _NEGATIVE
               for instr in prep.engine_state.tape.instrs)


@pytest.mark.parametrize("family", ["gradient", "hvp", "hessian", "pullback"])
@pytest.mark.parametrize("program", SOME_PROGRAMS[::3], ids=lambda p: p.name)
def test_folded_negatives_change_no_rounding(program, family, monkeypatch):
    # the same results, bit for bit, as the tapes without the folds; fewer negatives
    import cyad._tape.transform as transform
    x = program.point
    v = np.linspace(-1.0, 1.0, x.size).reshape(x.shape)
    f = vector_program(program, np)
    g = (lambda x: np.sum(f(x) ** 2)) if family != "pullback" else f
    args = {"hvp": (v,), "pullback": (np.linspace(0.5, -1.5, f(x).size),)}.get(family, ())

    def run():
        prep = getattr(cyad, f"prepare_{family}")(g, x, *args, engine="tape")
        return getattr(cyad, family)(g, x * 0.9, *args, prep=prep), _negatives(prep)

    folded, fewer = run()
    monkeypatch.setattr(transform, "_fold_negatives", lambda tape, keep: None)
    unfolded, more = run()
    np.testing.assert_array_equal(folded, unfolded)
    assert fewer <= more


def test_rosenbrocks_hessian_tape_loses_negatives(monkeypatch):
    import cyad._tape.transform as transform
    from rosenbrock import rosenbrock, rosenbrock_hessian
    x = np.linspace(-1.0, 1.0, 30)
    counts = []
    for _ in range(2):
        prep = cyad.prepare_hessian(rosenbrock, x, engine="tape")
        np.testing.assert_allclose(cyad.hessian(rosenbrock, x, prep=prep),
                                   rosenbrock_hessian(x), rtol=1e-13, atol=1e-12)
        counts.append(_negatives(prep))
        monkeypatch.setattr(transform, "_fold_negatives", lambda tape, keep: None)
    assert counts[0] < counts[1]
