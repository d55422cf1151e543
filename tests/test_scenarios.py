"""Every operator on every shared scenario (tests/scenarios.py), for every function kind, engine
and dtype, unprepared and prepared with out=, against the scenarios' independent derivatives."""
import numpy as np
import pytest
from scenarios import DTYPES, ENGINES, TOLERANCE, TRACING_ENGINES, cases, cotangent, tangent

import cyad

CASES = [pytest.param(s, op, kind, id=f"{s.name}-{op.name}-{kind}") for s, op, kind in cases()]
BATCHED = [case for case in CASES if case.values[1].takes_tangent]


def _call(scenario, operator, kind, dtype, x, dx):
    """The operator's arguments (f, x[, dx]) and keywords (y=) for this kind of f."""
    f = scenario.function(kind)
    args = (f, x) if dx is None else (f, x, dx)
    kwargs = {}
    if kind.endswith("in_place"):
        # the two-argument forms add to y or overwrite it: start from zeros
        kwargs["y"] = np.zeros(np.shape(scenario.value(scenario.x)), dtype)
    return args, kwargs


def _expected(scenario, operator, x, dx):
    x = x.astype(np.float64)
    if isinstance(dx, tuple):
        results = [operator.expected(scenario, x, t.astype(np.float64)) for t in dx]
        if operator.name in ("pushforward", "pullback", "hvp"):
            return tuple(results)
        return (results[0][0], tuple(r[1] for r in results))   # value or gradient, then batch
    return operator.expected(scenario, x, None if dx is None else dx.astype(np.float64))


def _assert_matches(actual, expected, dtype):
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            _assert_matches(a, e, dtype)
        return
    if not isinstance(actual, float):    # scalar results come as Python floats
        assert actual.dtype == dtype
    actual = np.asarray(actual)
    assert actual.shape == np.shape(expected)
    np.testing.assert_allclose(actual, expected, **TOLERANCE[dtype])


def _empty_like(result, dtype):
    if isinstance(result, tuple):
        return tuple(_empty_like(r, dtype) for r in result)
    return np.full(np.shape(result), np.nan, dtype)


def _same_buffers(result, out):
    if isinstance(out, tuple):
        return all(_same_buffers(r, o) for r, o in zip(result, out))
    return result is out


def _tangents(scenario, operator, dtype, batched):
    if not operator.takes_tangent:
        return None
    make = cotangent if operator.cotangent else tangent
    if batched:
        return tuple(make(scenario, k).astype(dtype) for k in range(3))
    return make(scenario).astype(dtype)


def _run(scenario, operator, kind, engine, dtype, batched=False):
    run = getattr(cyad, operator.name)
    prepare = getattr(cyad, f"prepare_{operator.name}")
    x = scenario.x.astype(dtype)
    dx = _tangents(scenario, operator, dtype, batched)
    args, kwargs = _call(scenario, operator, kind, dtype, x, dx)
    if engine in TRACING_ENGINES and kind.startswith("c"):
        with pytest.raises(TypeError, match="traces Python callables"):
            run(*args, engine=engine, **kwargs)
        return

    # unprepared
    _assert_matches(run(*args, engine=engine, **kwargs),
                    _expected(scenario, operator, x, dx), dtype)

    # prepared with out=, twice: at x, then at another point with the same prep
    prep = prepare(*args, engine=engine, **kwargs)
    out = _empty_like(run(*args, prep=prep, engine=engine, **kwargs), dtype)
    for point in (x, (x * 1.1 + 0.05).astype(dtype)):
        args, kwargs = _call(scenario, operator, kind, dtype, point, dx)
        result = run(*args, prep=prep, out=out, engine=engine, **kwargs)
        assert _same_buffers(result, out) or np.ndim(result) == 0
        _assert_matches(result, _expected(scenario, operator, point, dx), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("scenario, operator, kind", CASES)
def test_operator(scenario, operator, kind, engine, dtype):
    _run(scenario, operator, kind, engine, dtype)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("scenario, operator, kind", BATCHED)
def test_batch_of_tangents(scenario, operator, kind, engine):
    _run(scenario, operator, kind, engine, np.float64, batched=True)
