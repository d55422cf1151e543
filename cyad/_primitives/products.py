"""Products: np.matmul, np.tensordot and np.einsum, bilinear (multilinear) primitives.

The tangent of a product is the sum, over its operands, of the product with that
operand replaced by its tangent; the lanes of the tangent lead, so each rule says
where that axis goes (matmul broadcasts it, tensordot and einsum name it).
np.dot, np.inner, np.outer and np.kron are compositions of these and of multiply.
"""
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
        return np.matmul(ta.reshape(-1, b.shape[0]), b).reshape(ta.shape[:-1] + b.shape[1:])
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
        t = np.matmul(a, np.reshape(columns, (a.shape[1], -1)))
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


def _einsum_spec(subscripts, count):
    """The inputs' subscripts and the output's, explicit (NumPy's implicit output: the
    letters seen once, in alphabetical order, behind the broadcast axes)."""
    if not isinstance(subscripts, str):
        raise TypeError("cyad: numpy.einsum on dual arrays takes its subscripts as a string")
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    inputs = tuple(inputs.split(","))
    if len(inputs) != count:
        raise ValueError("more operands provided to einstein sum function than specified "
                         "in the subscripts string" if count > len(inputs) else
                         "fewer operands provided to einstein sum function than specified "
                         "in the subscripts string")
    if not arrow:
        letters = "".join(inputs).replace("...", "")
        output = ("..." if any("..." in s for s in inputs) else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    return inputs, output


def _fresh_letter(inputs, output):
    used = set("".join(inputs) + output)
    return next(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba"
                if c not in used)


def _einsum_call(inputs, output, operands, optimize):
    return np.einsum(",".join(inputs) + "->" + output, *operands, optimize=optimize)


def _letter_sizes(subscripts, shape):
    # the size of every letter of one operand (after its broadcast axes, if any)
    before, _, after = subscripts.partition("...")
    sizes = dict(zip(before, shape, strict=False))
    sizes.update(zip(after, shape[len(shape) - len(after):], strict=True) if after else ())
    return sizes


def _on_diagonals(g, letters, sizes):
    """The cotangent of an operand whose subscripts repeat letters (`letters`, no "..."), from
    g over each letter once (in order of first appearance): g's entries on the diagonals
    where the repeated letters' indices agree, zero elsewhere."""
    # g's axes are the letters' first occurrences, in order: a unit axis at each repeat
    shape = tuple(sizes[c] if letters.index(c) == p else 1 for p, c in enumerate(letters))
    grids = np.indices([sizes[c] for c in letters], sparse=True)
    mask = np.ones([sizes[c] for c in letters], bool)
    for p, c in enumerate(letters):
        mask &= grids[p] == grids[letters.index(c)]
    lead = ndim_of(g) - len(set(letters))   # g's broadcast axes lead
    return np.reshape(g, shape_of(g)[:lead] + shape) * np.asarray(mask, g.dtype)


@primitive(np.einsum)
class _einsum:
    def bind(*operands, optimize=False):
        # NumPy's (*operands): the subscripts first, then the arrays
        subscripts, operands = operands[0], operands[1:]
        inputs, output = _einsum_spec(subscripts, len(operands))
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
        cotangents = []
        for i, x in enumerate(primals):
            target = inputs[i]
            letters = target.replace("...", "")
            repeats = len(set(letters)) != len(letters)
            if ("..." in target and "..." not in output) or (
                    repeats and "..." in target and not target.startswith("...")):
                raise NotImplementedError(
                    f"cyad: the transpose of numpy.einsum in an operand {target!r} that sums its "
                    "broadcast axes alone, or repeats a letter after them")
            others = [(s, y) for j, (s, y) in enumerate(zip(inputs, primals, strict=True))
                      if j != i]
            seen = set(output + "".join(s for s, _ in others))
            sizes = _letter_sizes(target, shape_of(x))
            # a letter of this operand alone was summed over: its cotangent is spread back
            alone = [(c, np.ones(sizes[c], ct.dtype)) for c in letters if c not in seen]
            spec = (output,) + tuple(s for s, _ in others) + tuple(c for c, _ in alone)
            unique = "".join(dict.fromkeys(letters))
            g = _einsum_call(spec, target.replace(letters, unique),
                             (ct,) + tuple(y for _, y in others) + tuple(o for _, o in alone),
                             optimize)
            if repeats:
                g = _on_diagonals(g, letters, sizes)
            cotangents.append(unbroadcast(g, shape_of(x)))
        return tuple(cotangents)
