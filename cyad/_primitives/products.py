"""Products: np.matmul, np.tensordot and np.einsum, bilinear (multilinear) primitives.

The tangent of a product is the sum, over its operands, of the product with that
operand replaced by its tangent; the lanes of the tangent lead, so each rule says
where that axis goes (matmul broadcasts it, tensordot and einsum name it).
np.dot, np.inner, np.outer and np.kron are compositions of these and of multiply.
"""
import math

import numpy as np

from cyad._primitives._table import (
    lanes_padded,
    matrix_transpose,
    ndim_of,
    primitive,
    shape_of,
    unbroadcast,
)


def _as_matrices(a, b):
    # 1-d operands as np.matmul promotes them: a row (1, k) and a column (k, 1)
    return (a[None, :] if ndim_of(a) == 1 else a), (b[:, None] if ndim_of(b) == 1 else b)


def _sum_of(t, u):
    return u if t is None else t if u is None else t + u


def _lanes_times(ta, b):
    """ta @ b for every lane of ta (lanes leading)."""
    if ndim_of(b) == 2:   # the lanes' rows are rows of one product
        if ta.ndim == 2:
            return np.matmul(ta, b)
        rows = math.prod(ta.shape[:-1])   # (not -1: ta may be empty)
        return np.matmul(ta.reshape(rows, b.shape[0]), b).reshape(ta.shape[:-1] + b.shape[1:])
    row, column = ta.ndim == 2, ndim_of(b) == 1
    ta = ta[:, None, :] if row else ta
    b = b[:, None] if column else b
    t = np.matmul(lanes_padded(ta, max(ta.ndim - 1, b.ndim)), b)
    t = t[..., 0, :] if row else t
    return t[..., 0] if column else t


def _times_lanes(a, tb):
    """a @ tb for every lane of tb (lanes leading)."""
    if ndim_of(a) == 2:   # the lanes are columns of one product
        if tb.ndim == 2:   # b a vector
            return np.matmul(tb, matrix_transpose(a))
        columns = np.moveaxis(tb, -2, 0)
        t = np.matmul(a, np.reshape(columns, (a.shape[1], math.prod(columns.shape[1:]))))
        return np.moveaxis(np.reshape(t, (a.shape[0],) + columns.shape[1:]), 0, -2)
    row, column = ndim_of(a) == 1, tb.ndim == 2
    a = a[None, :] if row else a
    tb = tb[..., None] if column else tb
    t = np.matmul(a, lanes_padded(tb, max(a.ndim, tb.ndim - 1)))
    t = t[..., 0, :] if row else t
    return t[..., 0] if column else t


@primitive(np.matmul)
class _matmul:
    def bind(x1, x2):
        return (x1, x2), {}

    def impl(a, b):
        return np.matmul(a, b)

    def jvp(primals, tangents):
        (a, b), (ta, tb) = primals, tangents
        out = np.matmul(a, b)
        return out, _sum_of(None if ta is None else _lanes_times(ta, b),
                            None if tb is None else _times_lanes(a, tb))

    def vjp(primals, ct):
        a, b = primals
        am, bm = _as_matrices(a, b)
        if ndim_of(a) == 1:
            ct = ct[..., None, :]
        if ndim_of(b) == 1:
            ct = ct[..., None]
        return (unbroadcast(np.matmul(ct, matrix_transpose(bm)), am.shape).reshape(a.shape),
                unbroadcast(np.matmul(matrix_transpose(am), ct), bm.shape).reshape(b.shape))


def _tensordot_axes(axes, a_ndim, b_ndim):
    if isinstance(axes, (int, np.integer)):
        return tuple(range(a_ndim - axes, a_ndim)), tuple(range(axes))
    a_axes, b_axes = axes
    a_axes = (a_axes,) if isinstance(a_axes, (int, np.integer)) else tuple(a_axes)
    b_axes = (b_axes,) if isinstance(b_axes, (int, np.integer)) else tuple(b_axes)
    return tuple(i % a_ndim for i in a_axes), tuple(i % b_ndim for i in b_axes)


@primitive(np.tensordot)
class _tensordot:
    def bind(a, b, axes=2):
        a_axes, b_axes = _tensordot_axes(axes, ndim_of(a), ndim_of(b))
        return (a, b), {"a_axes": a_axes, "b_axes": b_axes}

    def impl(a, b, *, a_axes, b_axes):
        return np.tensordot(a, b, (a_axes, b_axes))

    def jvp(primals, tangents, *, a_axes, b_axes):
        (a, b), (ta, tb) = primals, tangents
        out = np.tensordot(a, b, (a_axes, b_axes))
        t = None
        if ta is not None:   # the lanes lead ta's free axes, so they lead the result
            t = np.tensordot(ta, b, ([i + 1 for i in a_axes], b_axes))
        if tb is not None:   # the lanes come after a's free axes: moved to the front
            u = np.tensordot(a, tb, (a_axes, [i + 1 for i in b_axes]))
            u = np.moveaxis(u, a.ndim - len(a_axes), 0)
            t = u if t is None else t + u
        return out, t

    def vjp(primals, ct, *, a_axes, b_axes):
        a, b = primals
        a_free = [i for i in range(a.ndim) if i not in a_axes]
        b_free = [i for i in range(b.ndim) if i not in b_axes]
        ct_b_free = list(range(len(a_free), ct.ndim))
        ga = np.tensordot(ct, b, (ct_b_free, b_free))
        # ga's axes: a's free ones, then the contracted ones in b's order
        ga_axes = a_free + [a_axes[b_axes.index(i)] for i in sorted(b_axes)]
        gb = np.tensordot(a, ct, (a_free, list(range(len(a_free)))))
        gb_axes = [b_axes[a_axes.index(i)] for i in sorted(a_axes)] + b_free
        return np.transpose(ga, np.argsort(ga_axes)), np.transpose(gb, np.argsort(gb_axes))


def _sublist_letter(label):
    # NumPy's letters for the integer labels of einsum's sublist form: 0-25 are A-Z, 26-51 a-z
    if label is Ellipsis:
        return "..."
    label = int(label)
    if not 0 <= label < 52:
        raise ValueError(f"einsum: subscript label {label} is not in [0, 52)")
    return chr(ord("A") + label) if label < 26 else chr(ord("a") + label - 26)


def _einsum_arguments(args):
    """(subscripts, operands) of either form of an einsum call: a string and the operands,
    or operand, sublist, operand, sublist, ... [, output sublist]."""
    if isinstance(args[0], str):
        return args[0], args[1:]
    if len(args) % 2 and not isinstance(args[-1], (list, tuple)):
        raise TypeError("cyad: numpy.einsum takes its subscripts as a string or as sublists "
                        "of integers after each operand")
    pairs = args[:len(args) - len(args) % 2]
    operands = pairs[0::2]
    inputs = ["".join(_sublist_letter(c) for c in s) for s in pairs[1::2]]
    subscripts = ",".join(inputs)
    if len(args) % 2:
        subscripts += "->" + "".join(_sublist_letter(c) for c in args[-1])
    return subscripts, operands


def _einsum_spec(subscripts, shapes):
    """The inputs' subscripts and the output's, explicit: NumPy's implicit output (the
    letters seen once, in alphabetical order, behind the broadcast axes) written out,
    and every "..." spelled as fresh letters, one per broadcast axis, aligned on the
    right as NumPy aligns them (an operand with fewer broadcast axes takes the last)."""
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    inputs = inputs.split(",")
    if len(inputs) != len(shapes):
        raise ValueError("more operands provided to einstein sum function than specified "
                         "in the subscripts string" if len(shapes) > len(inputs) else
                         "fewer operands provided to einstein sum function than specified "
                         "in the subscripts string")
    if not arrow:
        letters = "".join(inputs).replace("...", "")
        output = ("..." if any("..." in s for s in inputs) else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    broadcast = [len(shape) - len(s.replace("...", "")) for s, shape in zip(inputs, shapes)
                 if "..." in s]
    width = max(broadcast, default=0)
    if width and "..." not in output:
        raise ValueError("output has more dimensions than subscripts given in einstein sum, "
                         "but no '...' ellipsis provided to broadcast the extra dimensions.")
    used = set("".join(inputs) + output)
    fresh = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
             if c not in used]
    if width > len(fresh):
        raise ValueError("einsum: too many subscripts")
    axes = "".join(fresh[:width])

    def spelled(s, count):
        return s.replace("...", axes[width - count:]) if "..." in s else s

    inputs = tuple(spelled(s, len(shape) - len(s.replace("...", "")))
                   for s, shape in zip(inputs, shapes))
    return inputs, spelled(output, width)


def _fresh_letter(inputs, output):
    used = set("".join(inputs) + output)
    return next(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba"
                if c not in used)


def _einsum_call(inputs, output, operands, optimize):
    return np.einsum(",".join(inputs) + "->" + output, *operands, optimize=optimize)


def _on_diagonals(g, letters, sizes):
    """The cotangent of an operand whose subscripts repeat letters, from g over each letter
    once (in order of first appearance): g's entries on the diagonals where the repeated
    letters' indices agree, zero elsewhere."""
    # g's axes are the letters' first occurrences, in order: a unit axis at each repeat
    shape = tuple(sizes[c] if letters.index(c) == p else 1 for p, c in enumerate(letters))
    grids = np.indices([sizes[c] for c in letters], sparse=True)
    mask = np.ones([sizes[c] for c in letters], bool)
    for p, c in enumerate(letters):
        mask &= grids[p] == grids[letters.index(c)]
    return np.reshape(g, shape) * np.asarray(mask, g.dtype)


def _to_sizes(g, shape):
    """g over an operand's letters, brought to the operand's `shape` where a letter's sizes
    differ by NumPy's broadcasting: summed where the operand's is 1 (others broadcast it),
    spread where g's is 1 (the operand broadcast against the others' 1)."""
    axes = tuple(i for i, (m, n) in enumerate(zip(shape_of(g), shape)) if n == 1 and m != 1)
    if axes:
        g = np.sum(g, axis=axes, keepdims=True)
    return g if shape_of(g) == tuple(shape) else np.broadcast_to(g, shape)


@primitive(np.einsum)
class _einsum:
    def bind(*operands, optimize=False):
        # NumPy's (*operands): the subscripts first, then the arrays, or each array
        # followed by its sublist; the subscripts made explicit (`_einsum_spec`)
        subscripts, operands = _einsum_arguments(operands)
        inputs, output = _einsum_spec(subscripts, [shape_of(x) for x in operands])
        return operands, {"inputs": inputs, "output": output, "optimize": optimize}

    def impl(*operands, inputs, output, optimize):
        return _einsum_call(inputs, output, operands, optimize)

    def jvp(primals, tangents, *, inputs, output, optimize):
        primals = tuple(primals)
        out = _einsum_call(inputs, output, primals, optimize)
        lane = _fresh_letter(inputs, output)
        t = None
        for i, ti in enumerate(tangents):
            if ti is None:
                continue
            spec = inputs[:i] + (lane + inputs[i],) + inputs[i + 1:]
            u = _einsum_call(spec, lane + output, primals[:i] + (ti,) + primals[i + 1:], optimize)
            t = u if t is None else t + u
        return out, t

    def vjp(primals, ct, *, inputs, output, optimize):
        # the product of the cotangent and the other operands, over this operand's letters
        # (each once); ones stand for the letters it alone has (summed over: their
        # cotangent is spread back). Repeated letters put it on their diagonals.
        cotangents = []
        for i, x in enumerate(primals):
            target = inputs[i]
            others = [(s, y) for j, (s, y) in enumerate(zip(inputs, primals, strict=True))
                      if j != i]
            seen = set(output + "".join(s for s, _ in others))
            sizes = dict(zip(target, shape_of(x), strict=True))
            unique = "".join(dict.fromkeys(target))
            alone = [(c, np.ones(sizes[c], ct.dtype)) for c in unique if c not in seen]
            spec = (output,) + tuple(s for s, _ in others) + tuple(c for c, _ in alone)
            g = _einsum_call(spec, unique,
                             (ct,) + tuple(y for _, y in others) + tuple(o for _, o in alone),
                             optimize)
            g = _to_sizes(g, tuple(sizes[c] for c in unique))
            if len(unique) != len(target):
                g = _on_diagonals(g, target, sizes)
            cotangents.append(g)
        return tuple(cotangents)
