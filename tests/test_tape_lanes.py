"""What keeps the tape's lanes cheap, and the numbers the same.

The derivative tapes' exact folds (cyad/_tape/transform.py, `_fold_copies`): the gathers
that assignments to slices leave, the products by a gradient's cotangent of ones, and the
tangent of the value that forward over reverse does not want. Fewer instructions, the same
numbers: bit for bit against the unfolded tapes (random programs, in place and not), and
against JAX in float64 and float32.

Held seeds (cyad/_tape/engine.pyx): a call with the tangents of the last call (a sparse
Jacobian's or Hessian's seeds) runs neither the seeding nor the seeds' own instructions
again; tangents changed in place, in a bit, or a guard failing between calls are seen."""
import functools

import numpy as np
import pytest
from derivative_references import jax
from test_pullback import SOME_PROGRAMS, vector_program

import cyad
import cyad._tape.transform as transform

if jax is not None:
    import jax.numpy as jnp

pytestmark = [pytest.mark.skipif(jax is None, reason="JAX gives the reference"),
              pytest.mark.xdist_group("test_tape_lanes")]


def broyden(x):
    y = (3.0 - 2.0 * x) * x + 1.0
    y[1:] -= x[:-1]
    y[:-1] -= 2.0 * x[1:]
    return y


def broyden_jax(x):
    y = (3.0 - 2.0 * x) * x + 1.0
    y = y.at[1:].add(-x[:-1])
    return y.at[:-1].add(-2.0 * x[1:])


def slices(x):
    # assignments and augmented assignments to slices, strided and reversed, that read
    # what earlier ones wrote
    y = np.sin(x) * x
    y[1:] += 2.0 * y[:-1]
    y[::2] -= x[::2] ** 2
    y[2:5] = np.cos(x[2:5])
    y[::-3] *= x[1::3][: y[::-3].size] + 1.0
    return np.concatenate([y[1:] * y[:-1], x[:3], np.zeros(2)])


def slices_jax(x):
    y = jnp.sin(x) * x
    y = y.at[1:].add(2.0 * y[:-1])
    y = y.at[::2].add(-x[::2] ** 2)
    y = y.at[2:5].set(jnp.cos(x[2:5]))
    y = y.at[::-3].multiply(x[1::3][: y[::-3].size] + 1.0)
    return jnp.concatenate([y[1:] * y[:-1], x[:3], jnp.zeros(2)])


PROGRAMS = {"broyden": (broyden, broyden_jax), "slices": (slices, slices_jax)}
TOLERANCE = {np.float64: dict(rtol=1e-12, atol=1e-12), np.float32: dict(rtol=2e-4, atol=2e-4)}


def _scalar(f):
    return lambda x: np.sum(f(x) ** 2 * np.cos(x[0]))


def _scalar_jax(f):
    return lambda x: jnp.sum(f(x) ** 2 * jnp.cos(x[0]))


def _unfolded(monkeypatch):
    monkeypatch.setattr(transform, "_fold_copies", lambda tape, outputs: None)


def _count(prep, kind):
    return sum(instr.kind == kind for instr in prep.engine_state.tape.instrs)


def _directions(n, k, dtype):
    rng = np.random.default_rng(n + k)
    return tuple(rng.uniform(-1.0, 1.0, n).astype(dtype) for _ in range(k))


def _point(dtype):
    return np.linspace(-1.0, 1.5, 11).astype(dtype)


@functools.cache
def _jax_references(name, dtype):
    """JAX's derivatives of PROGRAMS[name] at _point(dtype) in float64, as one compiled
    function, once: the Jacobian of f, the gradient and Hessian of _scalar_jax(f), and the
    second derivative of s -> f(x s) at 0.7."""
    _, f_jax = PROGRAMS[name]
    g_jax = _scalar_jax(f_jax)

    def references(x):
        second = jax.jacfwd(jax.jacfwd(lambda s: f_jax(x * s)))(0.7)
        return jax.jacfwd(f_jax)(x), jax.grad(g_jax)(x), jax.hessian(g_jax)(x), second

    return jax.jit(references)(jnp.asarray(_point(dtype), jnp.float64))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_first_order_of_slice_assignments_against_jax(name, dtype):
    f, _ = PROGRAMS[name]
    x = _point(dtype)
    jac, gradient, _, _ = (np.asarray(r) for r in _jax_references(name, dtype))
    tangents = _directions(x.size, 3, dtype)
    prep = cyad.prepare_pushforward(f, x, tangents, engine="tape")
    outs = tuple(np.full(jac.shape[0], np.nan, dtype) for _ in tangents)
    cyad.pushforward(f, x, tangents, prep=prep, out=outs)
    for t, out in zip(tangents, outs, strict=True):
        np.testing.assert_allclose(out, jac @ t.astype(np.float64), **TOLERANCE[dtype])
    np.testing.assert_allclose(cyad.jacobian(f, x, engine="tape"), jac, **TOLERANCE[dtype])
    g = _scalar(f)
    np.testing.assert_allclose(cyad.gradient(g, x, engine="tape"), gradient, **TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_second_order_of_slice_assignments_against_jax(name, dtype):
    f, _ = PROGRAMS[name]
    g = _scalar(f)
    x = _point(dtype)
    _, gradient, hessian, expected = (np.asarray(r) for r in _jax_references(name, dtype))
    tolerance = dict(TOLERANCE[dtype])
    if dtype == np.float32:
        tolerance["atol"] = 2e-4 * np.abs(hessian).max()
    directions = _directions(x.size, 3, dtype)
    prep = cyad.prepare_hvp(g, x, directions, engine="tape")
    first, products = cyad.gradient_and_hvp(g, x, directions, prep=prep)
    np.testing.assert_allclose(first, gradient, **TOLERANCE[dtype])
    for v, product in zip(directions, products, strict=True):
        np.testing.assert_allclose(product, hessian @ v.astype(np.float64), **tolerance)
    np.testing.assert_allclose(cyad.hessian(g, x, engine="tape"), hessian, **tolerance)
    # a scalar function's second derivative: forward over forward
    h = lambda s: f(x * s)   # noqa: E731
    s = np.asarray(0.7, dtype)
    tolerance = dict(TOLERANCE[dtype], atol=TOLERANCE[dtype]["atol"] * np.abs(expected).max())
    np.testing.assert_allclose(cyad.second_derivative(h, s, engine="tape"), expected,
                               **tolerance)


FAMILIES = ["pushforward", "jacobian", "gradient", "hvp", "hessian"]


def _results(family, f, x):
    """The prepared result of `family` (f vector-valued; its squared sum for the
    second-order ones and the gradient) at a point other than x, and the tape's prep."""
    other = x * 0.9 + 0.01
    if family in ("pushforward", "jacobian"):
        args = (_directions(x.size, 3, x.dtype),) if family == "pushforward" else ()
    else:
        f = _scalar(f)
        args = (_directions(x.size, 3, x.dtype),) if family == "hvp" else ()
    prep = getattr(cyad, f"prepare_{family}")(f, x, *args, engine="tape")
    result = getattr(cyad, family)(f, other, *args, prep=prep)
    return np.asarray(result), prep


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("in_place", [False, True], ids=["out-of-place", "in-place"])
@pytest.mark.parametrize("program", SOME_PROGRAMS[::2], ids=lambda p: p.name)
def test_folds_change_no_number(program, in_place, family, monkeypatch):
    # random programs: the folded tapes give what the unfolded ones do, bit for bit
    # (signs of zero included), with no more instructions
    f = vector_program(program, np, in_place)
    folded, prep = _results(family, f, program.point)
    fewer = len(prep.engine_state.tape.instrs)
    _unfolded(monkeypatch)
    unfolded, prep = _results(family, f, program.point)
    np.testing.assert_array_equal(folded, unfolded)
    assert np.array_equal(np.signbit(folded), np.signbit(unfolded))
    assert fewer <= len(prep.engine_state.tape.instrs)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("family", FAMILIES)
def test_slice_assignments_fold_to_fewer_gathers(family, dtype, monkeypatch):
    # (Broyden's augmented slices are recorded without a view written back: nothing of
    # them is left to fold, and the next test counts its gathers)
    f, _ = PROGRAMS["slices"]
    x = np.linspace(-1.0, 1.5, 11).astype(dtype)
    folded, prep = _results(family, f, x)
    gathers = _count(prep, "gather")
    _unfolded(monkeypatch)
    unfolded, prep = _results(family, f, x)
    # (an add of zeros turns -0.0 to 0.0, a gather keeps it: compared as numbers)
    np.testing.assert_array_equal(folded, unfolded)
    assert gathers < _count(prep, "gather")


def test_broydens_tangents_need_a_gather_per_slice_read_and_write():
    # y[1:] -= x[:-1] and y[:-1] -= 2 x[1:]: per assignment, the slices of y and x read
    # and the two gathers of the result; the slice written back is the same numbers
    x = np.linspace(-1.0, 1.5, 10)
    prep = cyad.prepare_pushforward(broyden, x, _directions(10, 3, np.float64), engine="tape")
    cyad.pushforward(broyden, x, _directions(10, 3, np.float64), prep=prep)
    assert _count(prep, "gather") == 2 * 2 * 4


def test_a_gradient_multiplies_by_no_ones(monkeypatch):
    from rosenbrock import rosenbrock, rosenbrock_gradient
    x = np.linspace(-1.0, 1.5, 12)
    prep = cyad.prepare_gradient(rosenbrock, x, engine="tape")
    gradient = cyad.gradient(rosenbrock, x, prep=prep)
    np.testing.assert_allclose(gradient, rosenbrock_gradient(x), rtol=1e-13, atol=1e-12)
    scales = _count(prep, "scale")
    _unfolded(monkeypatch)
    prep = cyad.prepare_gradient(rosenbrock, x, engine="tape")
    np.testing.assert_array_equal(cyad.gradient(rosenbrock, x, prep=prep), gradient)
    assert scales < _count(prep, "scale")


@pytest.mark.parametrize("family", ["hvp", "hessian"])
def test_forward_over_reverse_leaves_out_the_values_tangent(family):
    # the tangent of f's value would be the only sum of the tangents' lanes
    from rosenbrock import rosenbrock, rosenbrock_hessian
    x = np.linspace(-1.0, 1.5, 12)
    args = (_directions(12, 3, np.float64),) if family == "hvp" else ()
    prep = getattr(cyad, f"prepare_{family}")(rosenbrock, x, *args, engine="tape")
    result = getattr(cyad, family)(rosenbrock, x, *args, prep=prep)
    expected = (rosenbrock_hessian(x) if family == "hessian"
                else [rosenbrock_hessian(x) @ v for v in args[0]])
    np.testing.assert_allclose(result, expected, rtol=1e-13, atol=1e-11)
    # the value's sum alone; the outputs: value, gradient, its tangents
    assert _count(prep, "sum_inner") == 1
    assert len(prep.engine_state.tape.outputs) == 3


# -- held seeds ----------------------------------------------------------------------------------

def _fresh(family, f, x, directions):
    return getattr(cyad, family)(f, x, directions, engine="tape")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("family", ["pushforward", "hvp", "pullback"])
def test_held_seeds_give_the_numbers_of_fresh_ones(family, dtype):
    f = broyden if family != "hvp" else _scalar(slices)
    x = np.linspace(-1.0, 1.5, 11).astype(dtype)
    directions = list(_directions(x.size, 3, dtype))
    prep = getattr(cyad, f"prepare_{family}")(f, x, tuple(directions), engine="tape")
    points = [x, x * 0.9, x * 0.9 + 0.1, x]
    for step, point in enumerate(points):
        if step == 2:       # a tangent changed in place, in one element
            directions[1][4] += 0.5
        if step == 3:       # and in a bit: a zero's sign; then other arrays, equal
            directions[2][:] = 0.0
            getattr(cyad, family)(f, point, tuple(directions), prep=prep)
            directions[2][:] = -0.0
            directions = [d.copy() for d in directions]
        result = getattr(cyad, family)(f, point, tuple(directions), prep=prep)
        again = getattr(cyad, family)(f, point, tuple(directions), prep=prep)
        fresh = _fresh(family, f, point, tuple(directions))
        for r in (result, again):
            np.testing.assert_array_equal(r, fresh)
            assert np.array_equal(np.signbit(r), np.signbit(fresh))
    if family == "pushforward":   # (against JAX: the tangents in use at the end)
        jac = np.asarray(_jax_references("broyden", dtype)[0])
        for d, r in zip(directions, result, strict=True):
            np.testing.assert_allclose(r, jac @ d.astype(np.float64), **TOLERANCE[dtype])


def test_held_seeds_follow_a_failed_guard():
    # a branch on x's values: the tape is recorded anew between two calls with the same
    # tangents
    def f(x):
        y = x * x if x[0] > 0 else np.sin(x)
        y[1:] += x[:-1]
        return y

    def f_jax(x):
        y = x * x if x[0] > 0 else jnp.sin(x)
        return y.at[1:].add(x[:-1])

    directions = _directions(6, 2, np.float64)
    x = np.linspace(0.5, 1.5, 6)
    prep = cyad.prepare_pushforward(f, x, directions, engine="tape")
    for point in (x, x, -x, -x, x):
        jac = np.asarray(jax.jacfwd(f_jax)(jnp.asarray(point)))
        for d, r in zip(directions, cyad.pushforward(f, point, directions, prep=prep),
                        strict=True):
            np.testing.assert_allclose(r, jac @ d, rtol=1e-13, atol=1e-13)
    assert prep.engine_state.records == 3


def test_a_sparse_jacobian_and_hessian_call_after_call():
    # the sparse operators' seeds are held from the second call on
    from rosenbrock import rosenbrock, rosenbrock_hessian
    x = np.linspace(-1.0, 1.5, 40)
    prep = cyad.prepare_sparse_jacobian(broyden, x, coloring="column", engine="tape")
    hessian_prep = cyad.prepare_sparse_hessian(rosenbrock, x)
    out, hessian_out = prep.new_result(), hessian_prep.new_result()
    points = (x, x * 0.8, x + 0.3)
    jacobians = jax.jit(lambda *points: [jax.jacfwd(broyden_jax)(p) for p in points])(*points)
    for point, jac in zip(points, jacobians):
        jac = np.asarray(jac)
        cyad.sparse_jacobian(broyden, point, prep=prep, out=out)
        np.testing.assert_allclose(out.toarray(), jac, rtol=1e-13, atol=1e-13)
        cyad.sparse_hessian(rosenbrock, point, prep=hessian_prep, out=hessian_out)
        np.testing.assert_allclose(hessian_out.toarray(), rosenbrock_hessian(point),
                                   rtol=1e-13, atol=1e-11)
