"""The rules of the primitive table on plain arrays, without any engine.

The transpose of every linear entry and the VJP of every primitive are checked
against the forward rule by the adjoint identity <f'(x) t, w> == <t, f'(x)^T w>
for random t and w (float64): a reverse engine inherits checked rules. Each case
is a call of the NumPy function; `test_every_rule_has_an_adjoint_case` holds every
linear entry and primitive of the table to one.
"""
import numpy as np
import pytest

from cyad._primitives import TABLE
from cyad._primitives._table import entry_of
from cyad._primitives.decompositions import _eig_core, _eigvals_core

RNG = np.random.default_rng(20260)


def r(*shape):
    return RNG.standard_normal(shape)


def spd(n, stack=()):
    a = r(*stack, n, n)
    return a @ np.swapaxes(a, -1, -2) + np.diag(np.arange(1.0, n + 1))


# (id, NumPy function, arguments, keyword arguments): the operands are the float arrays
CASES = [
    ("sum", np.sum, (r(3, 4, 2),), {"axis": (0, 2)}),
    ("sum-keepdims", np.sum, (r(3, 4),), {"axis": -1, "keepdims": True}),
    ("sum-initial-where", np.sum, (r(3, 4),), {"axis": 0, "initial": np.array(0.5),
                                               "where": r(4) > 0}),
    ("cumsum", np.cumsum, (r(3, 4),), {"axis": 1}),
    ("cumsum-flat", np.cumsum, (r(3, 4),), {}),
    ("diff", np.diff, (r(3, 5),), {"n": 2, "axis": 1}),
    ("diff-prepend-append", np.diff, (r(3, 5),), {"axis": 0, "prepend": 0.5,
                                                  "append": r(2, 5)}),
    ("trace", np.trace, (r(3, 4, 4),), {"offset": 1, "axis1": 1, "axis2": 2}),
    ("trace-below", np.trace, (r(4, 3),), {"offset": -1}),
    ("where", np.where, (r(3, 4) > 0, r(3, 4), r(4)), {}),
    ("take-along-axis", np.take_along_axis, (r(3, 4), np.array([[0, 0, 3], [1, 2, 1],
                                                                [3, 3, 3]])), {"axis": 1}),
    ("diag-vector", np.diag, (r(4),), {"k": 1}),
    ("diag-matrix", np.diag, (r(3, 5),), {"k": -1}),
    ("concatenate", np.concatenate, ([r(2, 3), r(4, 3)],), {}),
    ("concatenate-flat", np.concatenate, ([r(2, 3), r(4)],), {"axis": None}),
    ("stack", np.stack, ([r(2, 3), r(2, 3)],), {"axis": -1}),
    ("reshape", np.reshape, (r(3, 4), (2, -1)), {"order": "F"}),
    ("transpose", np.transpose, (r(2, 3, 4), (2, 0, 1)), {}),
    ("flip", np.flip, (r(2, 3, 4),), {"axis": (0, 2)}),
    ("broadcast-to", np.broadcast_to, (r(3, 1), (2, 3, 4)), {}),
    ("copy", np.copy, (r(3, 4),), {}),
    ("prod", np.prod, (r(3, 4, 2),), {"axis": (0, 2)}),
    ("prod-with-a-zero", np.prod, (np.array([[1.5, 0.0, 2.0], [0.5, 3.0, -1.0]]),), {"axis": 1}),
    ("prod-initial", np.prod, (r(3, 4),), {"axis": 1, "initial": np.array(1.5)}),
    ("max", np.max, (r(3, 4),), {"axis": 0}),
    ("amax", np.amax, (r(3, 4),), {}),
    ("min", np.min, (r(3, 4),), {"axis": 1, "keepdims": True}),
    ("amin", np.amin, (np.array([1.0, -2.0, 3.0, -2.0]),), {}),   # a tie
    ("max-initial", np.max, (np.array([[1.0, 2.0], [0.5, -1.0]]),), {"axis": 1,
                                                                      "initial": 0.5}),  # a tie
    ("min-initial-where", np.min, (r(3, 4),), {"axis": 0, "initial": 0.25,
                                               "where": r(3, 1) > 0}),
    ("matmul", np.matmul, (r(2, 3, 4), r(4, 5)), {}),
    ("matmul-vectors", np.matmul, (r(4), r(3, 4, 2)), {}),
    ("matmul-matrix-vector", np.matmul, (r(3, 4), r(4)), {}),
    ("tensordot", np.tensordot, (r(3, 4, 5), r(5, 4, 2)), {"axes": ([1, 2], [1, 0])}),
    ("tensordot-int", np.tensordot, (r(3, 4, 5), r(4, 5, 2)), {}),
    ("einsum", np.einsum, ("ij,jk->ik", r(3, 4), r(4, 2)), {}),
    ("einsum-implicit", np.einsum, ("ij,kj", r(3, 4), r(2, 4)), {"optimize": True}),
    ("einsum-ellipsis", np.einsum, ("...ij,...jk->...ik", r(2, 3, 4), r(4, 2)), {}),
    ("einsum-summed-alone", np.einsum, ("ij,j->", r(3, 4), r(4)), {}),
    ("einsum-diagonal", np.einsum, ("ii->i", r(3, 3)), {}),
    ("einsum-diagonal-product", np.einsum, ("iij,j->i", r(3, 3, 4), r(4)), {}),
    ("einsum-diagonal-trace", np.einsum, ("jii,kk->j", r(2, 3, 3), r(4, 4)), {}),
    ("einsum-ellipsis-diagonal", np.einsum, ("...ii->...i", r(2, 3, 3)), {}),
    ("einsum-ellipsis-middle", np.einsum, ("j...k,lj...->lk...", r(2, 2), r(2, 2, 2)), {}),
    ("einsum-ellipsis-end", np.einsum, ("jk...,lj...->lk...", r(3, 2), r(2, 3, 4)), {}),
    ("einsum-ellipsis-output-first", np.einsum, ("i...j,j...->...i", r(3, 2, 4, 5),
                                                 r(5, 4)), {}),
    ("einsum-ellipsis-implicit", np.einsum, ("a...b,b", r(2, 3, 4), r(4)), {}),
    ("einsum-ellipsis-size-one", np.einsum, ("...i,...i->...", r(3, 1, 4), r(5, 4)), {}),
    ("einsum-broadcast-letter", np.einsum, ("ij,jk->ik", r(3, 1), r(4, 2)), {}),
    ("einsum-repeat-after-ellipsis", np.einsum, ("i...i,...->i...", r(3, 2, 3), r(2)), {}),
    ("einsum-sublists", np.einsum, (r(3, 4), [0, 1], r(4, 2), [1, 30], [30, 0]), {}),
    ("einsum-sublists-ellipsis", np.einsum, (r(2, 3, 4), [Ellipsis, 1], r(4), [1]), {}),
    ("det", np.linalg.det, (r(2, 3, 3) + 3 * np.eye(3),), {}),
    ("slogdet", np.linalg.slogdet, (r(3, 3) + 3 * np.eye(3),), {}),
    ("inv", np.linalg.inv, (r(3, 3) + 3 * np.eye(3),), {}),
    ("solve-vector", np.linalg.solve, (r(3, 3) + 3 * np.eye(3), r(3)), {}),
    ("solve-matrix", np.linalg.solve, (r(2, 3, 3) + 3 * np.eye(3), r(3, 2)), {}),
    ("cholesky", np.linalg.cholesky, (spd(3) + np.triu(r(3, 3), 1),), {}),  # upper half unread
    ("eigh", np.linalg.eigh, (spd(3),), {}),
    ("eigh-upper", np.linalg.eigh, (spd(3) + np.tril(r(3, 3), -1),), {"UPLO": "U"}),
    ("eigvalsh", np.linalg.eigvalsh, (spd(3, (2,)),), {}),
    # decompositions and least squares
    ("qr-tall", np.linalg.qr, (r(2, 4, 3),), {}),
    ("qr-wide", np.linalg.qr, (r(3, 5) + np.eye(3, 5),), {}),
    ("qr-r", np.linalg.qr, (r(4, 3),), {"mode": "r"}),
    ("qr-complete-square", np.linalg.qr, (r(3, 3),), {"mode": "complete"}),
    ("svd-tall", np.linalg.svd, (r(2, 4, 3),), {"full_matrices": False}),
    ("svd-wide", np.linalg.svd, (r(3, 5),), {"full_matrices": False}),
    ("svd-values", np.linalg.svd, (r(4, 3),), {"compute_uv": False}),
    ("svdvals", np.linalg.svdvals, (r(3, 5),), {}),
    # (np.linalg.eig and eigvals: compositions of these and of cyad._complex.linalg's)
    ("eig", _eig_core, (np.diag([1.0, 2.5, 4.0]) + 0.2 * r(3, 3),), {}),
    ("eigvals", _eigvals_core, (np.diag([1.0, 2.5, 4.0]) + 0.2 * r(2, 3, 3),), {}),
    ("pinv-tall", np.linalg.pinv, (r(2, 4, 3),), {}),
    ("pinv-wide", np.linalg.pinv, (r(3, 5),), {}),
    ("pinv-hermitian", np.linalg.pinv, (spd(3) + np.triu(r(3, 3), 1),), {"hermitian": True}),
    ("lstsq-tall", np.linalg.lstsq, (r(5, 3), r(5, 2)), {}),
    ("lstsq-vector", np.linalg.lstsq, (r(5, 3), r(5)), {}),
    ("lstsq-wide", np.linalg.lstsq, (r(3, 5), r(3)), {}),
    # shapes
    ("take", np.take, (r(3, 4, 2), np.array([[3, 0], [3, -1]])), {"axis": 1}),
    ("take-flat-wrap", np.take, (r(3, 4), np.array([13, -2, 0, 13])), {"mode": "wrap"}),
]


def _inner(a, b):
    return float(np.sum(np.asarray(a) * np.asarray(b)))


def _random_like(x):
    return r(*np.shape(x))


def _outputs(out):
    return out if isinstance(out, tuple) else (out,)


@pytest.mark.parametrize("function, args, kwargs",
                         [pytest.param(f, a, k, id=name) for name, f, a, k in CASES])
def test_adjoint_identity(function, args, kwargs):
    entry = entry_of(function)
    operands, params = entry.bind(*args, **kwargs)
    operands = [np.asarray(x, np.float64) for x in operands]
    t = [_random_like(x) for x in operands]
    shapes = [x.shape for x in operands]
    if entry.kind == "linear":
        out = entry.impl(*operands, **params)
        w = _random_like(out)
        forward = entry.impl(*t, **params)
        backward = entry.transpose(w, shapes, **params)
        lhs = _inner(forward, w)
    else:
        out = entry.impl(*operands, **params)
        # the JVP rule takes tangents with a leading axis of lanes: one lane here
        value, forward = entry.jvp(operands, [x[None] for x in t], **params)
        for a, b in zip(_outputs(value), _outputs(out), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)
        w = tuple(_random_like(o) for o in _outputs(out))
        lhs = sum(_inner(f[0], wi) for f, wi in zip(_outputs(forward), w, strict=True)
                  if f is not None)
        backward = entry.vjp(operands, w if isinstance(out, tuple) else w[0], **params)
    assert len(backward) == len(operands)
    rhs = sum(_inner(ti, bi) for ti, bi in zip(t, backward, strict=True))
    assert lhs == pytest.approx(rhs, rel=1e-12, abs=1e-12 * max(1.0, abs(lhs)))


def test_every_rule_has_an_adjoint_case():
    covered = {f for _, f, _, _ in CASES}
    missing = [f.__name__ for f, entry in TABLE.items()
               if entry.kind in ("linear", "primitive") and f not in covered]
    assert not missing


def test_the_table_says_what_each_entry_is():
    for function, entry in TABLE.items():
        assert entry.kind in ("composition", "constant", "linear", "primitive"), function
        fields = {"composition": ("impl",), "constant": ("impl",),
                  "linear": ("bind", "impl", "transpose"),
                  "primitive": ("bind", "impl", "jvp", "vjp")}[entry.kind]
        assert all(callable(getattr(entry, name)) for name in fields), function


def test_einsum_summing_broadcast_axes_alone_is_numpys_error():
    with pytest.raises(ValueError, match="no '...' ellipsis") as numpy_error:
        np.einsum("...ij->ij", r(2, 3, 4))
    with pytest.raises(ValueError, match=numpy_error.value.args[0][:40]):
        TABLE[np.einsum].bind("...ij->ij", r(2, 3, 4))
