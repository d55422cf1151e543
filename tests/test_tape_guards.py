"""engine="tape" follows what f reads off x's values: guards and recomputed masks.

The tape engine runs f once on tracer arrays and replays the recorded tape
(cyad/_tape/engine.pyx). Whatever f read off x's values must be checked on every replay
(cyad/_tape/trace.py): here each value-dependent construct is traced at one point and
replayed with a prep and out= at points where it holds and where it flips, against the
dual engine and against JAX (or an analytic formula). Constructs that are recomputed on
every replay (where, maximum, minimum, abs, clip) must flip without a new record; those
that are guarded must record f anew, once per failed guard, until RECORD_LIMIT records,
after which the prep refuses clearly and still serves points its tape holds for.

The helpers here (tolerances, `assert_close`, `prepared`) serve tests/test_tape.py too.
"""
import numpy as np
import pytest
from derivative_references import jax

import cyad
from cyad._tape.engine import RECORD_LIMIT

pytestmark = pytest.mark.xdist_group("test_tape_guards")

if jax is not None:
    import jax.numpy as jnp

DTYPES = [np.float64, np.float32]
TOLERANCE = {np.float64: dict(rtol=1e-12, atol=1e-12), np.float32: dict(rtol=2e-4, atol=2e-4)}
# against JAX in float64, a float32 result is as good as its inputs' rounding
REFERENCE_TOLERANCE = {np.float64: dict(rtol=1e-11, atol=1e-11),
                       np.float32: dict(rtol=2e-3, atol=2e-3)}


def assert_close(actual, expected, dtype, tolerance=TOLERANCE, what=""):
    expected = np.asarray(expected, np.float64)
    np.testing.assert_allclose(np.asarray(actual, np.float64), expected, **tolerance[dtype],
                               err_msg=what)


# -- guards ----------------------------------------------------------------------------------

KNOTS = np.array([-1.0, 0.0, 1.0, 2.0])
KNOT_VALUES = np.array([0.5, -1.0, 3.0, 2.0])
WEIGHTS = np.array([1.0, -2.0, 0.5, 3.0, -1.5])
COEFFICIENTS = np.array([2.0, -1.0, 0.5, 1.5, -3.0])


def _branch(x):
    if x[0] > 0:
        return np.sum(x ** 2) * x[1]
    return np.sum(np.sin(x))


def _loop(x):
    s = x[0]
    while s < 3.0:
        s = s * 1.5 + 1.0
    return s * np.sum(x ** 2)


def _loop_reference(xp, x, p):
    s = x[0]
    t = p[0]
    while t < 3.0:
        s, t = s * 1.5 + 1.0, t * 1.5 + 1.0
    return s * xp.sum(x ** 2)


def _int(x):
    k = int(x[0] * 2.0) % 5
    return x[k] ** 3 + np.sum(x) * k


def _float_of_a_comparison(x):
    return float(x[1] > 0) * np.sum(x ** 3) + np.sum(np.cos(x))


def _item_of_a_comparison(x):
    if (x[2] > x[3]).item():
        return np.sum(x[2:] ** 2)
    return np.sum(x * x[0])


def _mask(x):
    return np.sum(x[x > 0] ** 3) + np.sum(np.exp(x[x <= 0]))


def _sort(x):
    return np.sum(np.sort(x) ** 2 * WEIGHTS)


def _argsort(x):
    return np.sum(x[np.argsort(x)] * WEIGHTS * x)


def _argmax(x):
    return x[np.argmax(x)] ** 3 + x[np.argmin(x)] ** 2 * x[0]


def _searchsorted(x):
    return np.sum(COEFFICIENTS[np.searchsorted(KNOTS, x)] * x ** 2)


def _interp(x):
    return np.sum(np.interp(x, KNOTS, KNOT_VALUES) ** 2 * x)


def _where(x):
    return np.sum(np.where(x > 0, x ** 2, np.sin(x)) * x)


def _maximum_minimum(x):
    return np.sum(np.maximum(x, 0.1) ** 2 + np.minimum(x, 0.2) ** 3 + np.maximum(x, x[::-1]))


def _abs(x):
    return np.sum(np.abs(x) ** 3 + np.abs(x) * x)


def _clip(x):
    return np.sum(np.clip(x, -0.5, 1.0) ** 3 + x)


# name: f, whether a flip records f anew, and f in jax.numpy given the point's values p
# (the Python decisions taken on p, the arithmetic on x)
GUARDED, RECOMPUTED = True, False
CONSTRUCTS = {
    "if": (_branch, GUARDED,
           lambda xp, x, p: xp.sum(x ** 2) * x[1] if p[0] > 0 else xp.sum(xp.sin(x))),
    "while": (_loop, GUARDED, _loop_reference),
    "int()": (_int, GUARDED, lambda xp, x, p: x[int(p[0] * 2.0) % 5] ** 3
              + xp.sum(x) * (int(p[0] * 2.0) % 5)),
    "float() of a comparison": (_float_of_a_comparison, GUARDED, lambda xp, x, p: float(
        p[1] > 0) * xp.sum(x ** 3) + xp.sum(xp.cos(x))),
    ".item() of a comparison": (_item_of_a_comparison, GUARDED, lambda xp, x, p: xp.sum(
        x[2:] ** 2) if p[2] > p[3] else xp.sum(x * x[0])),
    "boolean mask": (_mask, GUARDED, lambda xp, x, p: xp.sum(x[p > 0] ** 3)
                     + xp.sum(xp.exp(x[p <= 0]))),
    "sort": (_sort, GUARDED, lambda xp, x, p: xp.sum(xp.sort(x) ** 2 * WEIGHTS)),
    "argsort": (_argsort, GUARDED, lambda xp, x, p: xp.sum(x[np.argsort(p)] * WEIGHTS * x)),
    "argmax, argmin": (_argmax, GUARDED, lambda xp, x, p: x[np.argmax(p)] ** 3
                       + x[np.argmin(p)] ** 2 * x[0]),
    "searchsorted": (_searchsorted, GUARDED, lambda xp, x, p: xp.sum(
        COEFFICIENTS[np.searchsorted(KNOTS, p)] * x ** 2)),
    "interp": (_interp, GUARDED, lambda xp, x, p: xp.sum(xp.interp(x, KNOTS, KNOT_VALUES) ** 2
                                                         * x)),
    "where": (_where, RECOMPUTED, lambda xp, x, p: xp.sum(xp.where(x > 0, x ** 2, xp.sin(x))
                                                          * x)),
    "maximum, minimum": (_maximum_minimum, RECOMPUTED, lambda xp, x, p: xp.sum(
        xp.maximum(x, 0.1) ** 2 + xp.minimum(x, 0.2) ** 3 + xp.maximum(x, x[::-1]))),
    "abs": (_abs, RECOMPUTED, lambda xp, x, p: xp.sum(xp.abs(x) ** 3 + xp.abs(x) * x)),
    "clip": (_clip, RECOMPUTED, lambda xp, x, p: xp.sum(xp.clip(x, -0.5, 1.0) ** 3 + x)),
}

# the dual engine refuses int() of a dual number (the tape guards it: piecewise constant)
DUAL_REFUSES = {"int()"}

# traced at TRACED; STABLE takes every decision as TRACED does; FLIPPED flips every one
# (a branch, a loop count, an order, a mask, a knot interval, a clip bound); no point is
# near a decision's boundary, so the derivatives are those of a smooth function there
TRACED = np.array([0.625, -1.25, 2.125, 0.375, -0.4375])
STABLE = np.array([0.6875, -1.375, 2.25, 0.4375, -0.5])
FLIPPED = np.array([-0.75, 1.3125, 0.25, 2.875, 0.8125])
DIRECTION = np.array([1.0, -0.5, 0.25, 2.0, -1.0])


_REFERENCES = {}


def _reference(reference, family, point):
    """The family's derivative of reference at point, by JAX (float64), or None without JAX:
    all families at once, one compiled function for each reference and point (the families
    and dtypes share it)."""
    if jax is None:
        return None
    p = np.asarray(point, np.float64)
    key = (reference, p.tobytes())
    if key not in _REFERENCES:
        def f(x):
            return reference(jnp, x, p)

        def derivatives(x):
            hessian = jax.hessian(f)(x)
            return {"gradient": jax.grad(f)(x), "jacobian": jax.jacobian(lambda x: f(x) * x)(x),
                    "hvp": hessian @ DIRECTION, "hessian": hessian}
        _REFERENCES[key] = {name: np.asarray(a) for name, a in jax.jit(derivatives)(p).items()}
    return _REFERENCES[key][family]


def prepared(family, f, x, dtype):
    """A tape prep of the family for the scalar f at x (for "jacobian", of f(x) * x), and
    two functions of a point: call (the prep, with out=) and dual (engine="dual")."""
    prepare, run = getattr(cyad, f"prepare_{family}"), getattr(cyad, family)
    args = (DIRECTION[:x.size].astype(dtype),) if family == "hvp" else ()
    out_shape = x.shape * (2 if family in ("hessian", "jacobian") else 1)
    if family == "jacobian":
        f = _times_x(f)
    prep = prepare(f, x.astype(dtype), *args, engine="tape")
    out = np.full(out_shape, np.nan, dtype)

    def call(point):
        result = run(f, point.astype(dtype), *args, prep=prep, out=out)
        assert result is out
        return out.copy()

    def dual(point):
        return run(f, point.astype(dtype), *args, engine="dual")

    return prep, call, dual


def _times_x(f):
    return lambda x: f(x) * x


FAMILIES = ["gradient", "hvp", "hessian"]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("family", FAMILIES + ["jacobian"])
@pytest.mark.parametrize("construct", list(CONSTRUCTS))
def test_a_construct_read_off_the_values_is_replayed_right_where_it_flips(construct, family,
                                                                         dtype):
    f, guarded, reference = CONSTRUCTS[construct]
    prep, call, dual = prepared(family, f, TRACED, dtype)
    records = 1
    # traced, stable, flipped, and back: a guarded construct records at each flip
    for point, flips in ((TRACED, False), (STABLE, False), (FLIPPED, True), (TRACED, True)):
        got = call(point)
        records += flips and guarded
        assert prep.engine_state.records == records, point
        if construct not in DUAL_REFUSES:
            assert_close(got, dual(point), dtype, what=f"against the dual engine at {point}")
        expected = _reference(reference, family, point)
        if expected is not None:
            assert_close(got, expected, dtype, REFERENCE_TOLERANCE, f"against JAX at {point}")


def test_the_constructs_flip_between_the_points():
    # each construct's decisions differ at FLIPPED and agree at STABLE (else the test above
    # would not test a flip): Python's decisions, checked on plain arrays
    decisions = {
        "if": lambda p: p[0] > 0,
        "while": lambda p: _loop_count(p[0]),
        "int()": lambda p: int(p[0] * 2.0) % 5,
        "float() of a comparison": lambda p: p[1] > 0,
        ".item() of a comparison": lambda p: p[2] > p[3],
        "boolean mask": lambda p: tuple(p > 0),
        "sort": lambda p: tuple(np.argsort(p)),
        "argsort": lambda p: tuple(np.argsort(p)),
        "argmax, argmin": lambda p: (np.argmax(p), np.argmin(p)),
        "searchsorted": lambda p: tuple(np.searchsorted(KNOTS, p)),
        "interp": lambda p: tuple(np.searchsorted(KNOTS, p)),
        "where": lambda p: tuple(p > 0),
        "maximum, minimum": lambda p: (tuple(p > 0.1), tuple(p < 0.2), tuple(p > p[::-1])),
        "abs": lambda p: tuple(p > 0),
        "clip": lambda p: (tuple(p < -0.5), tuple(p > 1.0)),
    }
    assert set(decisions) == set(CONSTRUCTS)
    for name, decide in decisions.items():
        assert decide(STABLE) == decide(TRACED), name
        assert decide(FLIPPED) != decide(TRACED), name


def _loop_count(s):
    count = 0
    while s < 3.0:
        s, count = s * 1.5 + 1.0, count + 1
    return count


STEPS = np.arange(20.0)


def _steered(x):
    return x[1] ** 2 * np.searchsorted(STEPS, x[0])


@pytest.mark.parametrize("family", FAMILIES)
def test_after_record_limit_records_a_failing_guard_is_an_error(family):
    x = np.array([0.5, 2.0])
    prep, call, dual = prepared(family, _steered, x, np.float64)
    for records in range(1, RECORD_LIMIT + 1):
        point = np.array([records - 0.5, 2.0 + records])   # a step further each call
        assert_close(call(point), dual(point), np.float64)
        assert prep.engine_state.records == records
    last = point

    # a new record would be the ninth: refused, naming what f read, and nothing written
    out = np.full(x.shape * (2 if family == "hessian" else 1), np.nan)
    args = (DIRECTION[:2],) if family == "hvp" else ()
    with pytest.raises(RuntimeError, match=r"numpy.searchsorted of traced values.*"
                                           "engine='dual'"):
        getattr(cyad, family)(_steered, np.array([RECORD_LIMIT + 0.5, 1.0]), *args,
                              prep=prep, out=out)
    assert np.isnan(out).all()
    assert prep.engine_state.records == RECORD_LIMIT

    # the prep still serves points its last tape holds for
    for point in (last, last + np.array([0.25, -1.0])):
        assert_close(call(point), dual(point), np.float64)
    assert prep.engine_state.records == RECORD_LIMIT


def test_a_guard_of_a_two_argument_f_records_at_the_call_s_y():
    # f(y, x) branches on y's incoming values: a flip of y is a flip of the tape's input
    def f(y, x):
        if y[0] > 0:
            y[...] = y * np.sin(x)
        else:
            y[...] = x ** 2 - y

    x = np.array([0.3, -0.7, 1.1])
    y = np.array([1.0, 2.0, -1.0])
    prep = cyad.prepare_jacobian(f, x, y=y.copy(), engine="tape")
    out = np.zeros((3, 3))
    for start, records in ((y, 1), (-y, 2), (y, 3)):
        y_tape, y_dual = start.copy(), start.copy()
        cyad.jacobian(f, x, y=y_tape, prep=prep, out=out)
        expected = cyad.jacobian(f, x, y=y_dual, engine="dual")
        assert_close(out, expected, np.float64)
        assert_close(y_tape, y_dual, np.float64)
        analytic = np.diag(start * np.cos(x)) if start[0] > 0 else np.diag(2 * x)
        assert_close(out, analytic, np.float64)
        assert prep.engine_state.records == records
