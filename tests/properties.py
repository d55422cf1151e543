"""Checks of derivatives that need no reference: what must hold between cyad's own answers.

`check(f, x, dtype)` differentiates f (a function of a flat x) on every engine and holds
the answers to each other:

- the adjoint identity <w, J v> == <J^T w, v>, a pushforward against a pullback, on each
  engine (a reverse rule against its forward rule);
- the engines agree (where a derivative is not finite, in that: an infinity or a NaN):
  Jacobians (forward lanes or reverse rows, as each engine picks),
  pushforwards, pullbacks, and the Hessians and hvps of the scalar w . f;
- second order is consistent on each engine: the Hessian is symmetric, an hvp is the
  Hessian times its tangent, and the second derivative along v (forward over forward) is
  v^T H v (on the tape, forward over reverse against forward over forward).

The generated checks (tests/test_properties.py) run it over every entry of the rule
table and of the primitive table, with generated arguments.
"""
import numpy as np
from scenarios import ENGINES

import cyad

TOLERANCES = {np.dtype(np.float64): dict(rtol=1e-9, atol=1e-11),
              np.dtype(np.float32): dict(rtol=2e-3, atol=2e-4)}


def _close(actual, expected, dtype, what):
    """Equal to the tolerance where finite; not finite in the same places (infinite or NaN:
    which one depends on the order of the operations that met an infinity)."""
    actual = np.asarray(actual, np.float64)
    expected = np.asarray(expected, np.float64)
    assert actual.shape == expected.shape, what
    tol = TOLERANCES[np.dtype(dtype)]
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(np.isfinite(actual), finite, err_msg=what + ": finite")
    scale = np.max(np.abs(expected[finite]), initial=1.0)
    np.testing.assert_allclose(actual[finite], expected[finite], rtol=tol["rtol"],
                               atol=tol["atol"] * scale, err_msg=what)


def _inner(a, b):
    return float(np.sum(np.asarray(a, np.float64) * np.asarray(b, np.float64)))


def _adjoint(lhs, rhs, dtype, what):
    if not (np.isfinite(lhs) and np.isfinite(rhs)):
        return
    tol = TOLERANCES[np.dtype(dtype)]
    assert abs(lhs - rhs) <= tol["rtol"] * 10 * max(abs(lhs), abs(rhs), 1.0), (what, lhs, rhs)


def check(f, x, dtype, second_order=True, rng=None):
    """f's derivatives at x (flat, cast to dtype) on every engine, held to each other (the
    module's docstring). f returns an array or a scalar of x's dtype."""
    rng = np.random.default_rng(0) if rng is None else rng
    x = np.asarray(x, dtype)
    value = np.asarray(f(x))
    v = rng.standard_normal(x.shape).astype(dtype)
    w = rng.standard_normal(value.shape).astype(dtype)
    answers = {}
    for engine in ENGINES:
        jacobian = np.asarray(cyad.jacobian(f, x, engine=engine)).reshape(value.size, x.size)
        forward = cyad.pushforward(f, x, v, engine=engine)
        backward = cyad.pullback(f, x, w, engine=engine)
        what = f"{engine}: "
        _adjoint(_inner(w, forward), _inner(backward, v), dtype, what + "adjoint identity")
        _close(np.ravel(forward), jacobian @ v.astype(np.float64), dtype, what + "J v")
        _close(np.ravel(backward), w.ravel().astype(np.float64) @ jacobian, dtype,
               what + "w J")
        answers[engine] = [jacobian, forward, backward]
        if second_order:
            def scalar(x):
                return np.sum(w * f(x))

            hessian = cyad.hessian(scalar, x, engine=engine)
            hvp = cyad.hvp(scalar, x, v, engine=engine)
            along = cyad.second_derivative(lambda s: scalar(x + s * v), dtype(0.0),
                                           engine=engine)
            if np.all(np.isfinite(hessian)):
                _close(hessian, hessian.T, dtype, what + "symmetric Hessian")
                _close(hvp, hessian @ v.astype(np.float64), dtype, what + "hvp == H v")
                _close(along, v @ hessian.astype(np.float64) @ v, dtype,
                       what + "second derivative along v == v H v")
            answers[engine] += [hessian, hvp, along]
    first, *others = ENGINES
    names = ["jacobian", "pushforward", "pullback", "hessian", "hvp", "second derivative"]
    for other in others:
        for name, a, b in zip(names, answers[first], answers[other]):
            _close(b, a, dtype, f"{other} against {first}: {name}")
