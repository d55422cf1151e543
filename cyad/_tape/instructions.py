"""The rules of every tape instruction kind, a kind's in one place: its meaning in NumPy, its
forward and reverse derivatives, its sparsity, and what its lowering checks.

A kind is a row of cyad/_tape/kind_table.py (its name, params, operands and meaning). Its
rules are an object of `RULES`, one class per kind or family of kinds (`kinds`: those it
serves), with
- `evaluate(instr, args)`: the values of instr's outputs (a tuple of ndarrays) from its
  args' values, the kind's meaning in NumPy (cyad/_tape/program.py's `evaluate`: tracing
  computes the values it reads with it, and the compiled replay must agree with it);
  `numpy_warns`: whether `warn_as_numpy` computes it with NumPy's floating-point warnings,
  by `numpy_values` (as f's NumPy call did: the ufunc of an elementwise rule);
- `jvp(tr, instr, args, tangents, lanes)`: the tangents of instr's outputs (lanes leading;
  None for a zero) from those of its args (None for a zero); `vjp(tr, instr, args, cts,
  wanted, lanes)`: the cotangents of the args `wanted` (None for a zero) from those of its
  outputs, `lanes` of them (None: one, no leading axis). Both record on `tr`, the
  transformation (cyad/_tape/transform.py's `_Transform`: `args` and the results are Vars
  of its recording `tr.rec`; `tr.partials` gives an elementwise rule's partials,
  `tr.times`, `tr.add`, `tr.sum_leading`, `tr.lift`, ... products, sums and broadcasts);
  a tape holding a kind without them cannot be differentiated;
- `dependencies(deps, instr, values)` and `second_order(analysis, instr, reached, pairs,
  pair_bands)`: what each element of instr's output depends on, and the pairs of the
  input's indices its second partials couple, for sparsity detection
  (cyad/_sparse/sparsity.py: `deps` and `analysis` are its `_Propagation`, which gives the
  dependency forms and the index sets; below);
- `lower(instr, args, out, fail)`: what lowering (cyad/_tape/lowering.pyx) checks of an
  instruction where the kind's row does not say enough, and the values of the code table's
  P0..P3 columns, in order, for its loop in cyad/_tape/replay.pyx (a failed check raises
  `fail(message)`). The lowering itself fills the operands' columns, the op of a rule
  kind, the code of a comparison, an index array's columns (gather, scatter_add: `scatters`
  says which side is indexed), a python instruction's callback and a guard's expected
  values.

Adding a kind: its row in cyad/_tape/kind_table.py, its rules here (a class, in `RULES`),
its loop in cyad/_tape/replay.pyx. The Recording method that emits it is part of recording
a NumPy function (cyad/_tape/trace.py).

Sparsity, by kind. A dependency, one per operand the output depends on, is None (output
element i on operand element i), an int64 array `source` (element i on element
source[i], none where it is negative), a boolean sparse matrix S (element i on the
elements j of S[i, j]), `deps.sums(k)` (sum_inner's groups of k) or "all" (every element
on every one):

    unary, binary      element i on operand element i % |a| (modular broadcasting), for
                       each operand whose first partial in the rule table
                       (cyad/_rules/table.py) is not identically "0.0" (floor, sign,
                       heaviside's x and the comparisons depend on nothing)
    scale, select      both values (select's condition is a mask: no dependency)
    copy, gather,      the index maps the tape holds; sum_inner: the union over the summed
    scatter_add,       axis; matmul: out[p, i, j] on a[p, i, t] and b[p, t, j] for every t,
    sum_inner, matmul  and only for the t where the other operand, a constant, is nonzero
    python             a table entry run by NumPy: all-to-all (every output element on
                       every element of every operand), but nothing for a constant
                       entry (np.round, np.sign: derivative zero); an entry's own
                       structure only where it declares it (`selections`: the products
                       by scipy.sparse's matrices; `coupled_axes`: a batch of transforms)
    compare, zeros     nothing; guard: no output

The derivative kinds (unary_d, binary_da, ...) depend on every operand. With the values
at x (`local=True`), unary, binary and select are pruned where the partial is zero at x
(`deps.local`).

Second-order pairs, at the reached elements of a nonlinear instruction: unary f with f'
and f'' not "0.0": the set squared; binary: a x a where d2/da2 is not "0.0", b x b
likewise, a x b where d2/dadb is not "0.0" (a * b: the cross term only; a * constant and
the linear rules: none); scale: the cross term; a derivative kind: every pair of its
operands; matmul of two variable operands: the cross terms, conservatively per inner
index t (the union over the reached rows and columns); a python primitive entry: the
union of its operands' sets, squared (a linear entry: none). The other kinds are linear.
"""
import numpy as np

from cyad._rules import table as _rule_table

_UNARY = _rule_table.UNARY_RULES
_BINARY = _rule_table.BINARY_RULES
_ZERO = "0.0"


def _modular(a, size):
    # a's elements repeated to `size` elements (modular broadcasting), flat
    a = np.ravel(a)
    return a if a.size == size else np.tile(a, size // a.size)


def _output(instr):
    # (shape, size, dtype) of instr's output; (None, 0, None) for none
    outs = instr.outs
    return (outs[0].shape, outs[0].size, outs[0].dtype) if outs else (None, 0, None)


def _one(instr, result):
    # `evaluate`'s tuple of instr's one output: result in the output's dtype and shape
    shape, _, dtype = _output(instr)
    return (np.asarray(result).astype(dtype, copy=False).reshape(shape),)


def _lanes_shape(shape, lanes):
    return tuple(shape) if lanes is None else (lanes,) + tuple(shape)


def _couple_operands(analysis, instr, reached, second, pairs, pair_bands):
    """Add the pairs of an elementwise instruction's operands whose second partial
    (`second`: (p, q) -> the rule table's expression; None: every pair) is not "0.0"."""
    size = instr.outs[0].size
    rows = [analysis.rows(var, size, reached[0]) for var in instr.args]
    if second is None:      # derivative instructions: conservatively nonlinear in everything
        second = {(p, q): "?" for p in range(len(rows)) for q in range(p, len(rows))}
    for (p, q), d2 in second.items():
        if d2 != _ZERO and rows[p] is not None and rows[q] is not None:
            analysis.couple(rows[p], rows[q], p == q, pairs, pair_bands)


class Rules:
    """A kind's rules (the module's docstring says what each is); the kinds of `kinds`."""

    kinds: tuple[str, ...] = ()
    numpy_warns = False

    def evaluate(self, instr, args):
        raise NotImplementedError

    def numpy_values(self, instr, args):
        """`evaluate` as f computed it with NumPy, warning as it did (where `numpy_warns`)."""
        return self.evaluate(instr, args)

    def jvp(self, tr, instr, args, tangents, lanes):
        raise NotImplementedError

    def vjp(self, tr, instr, args, cts, wanted, lanes):
        raise NotImplementedError

    def dependencies(self, deps, instr, values):
        raise NotImplementedError

    def second_order(self, analysis, instr, reached, pairs, pair_bands):
        """None: the kind is linear in its operands."""

    def lower(self, instr, args, out, fail):
        """No check and no param beyond the row's."""
        return ()


class Unary(Rules):
    """f(a) of a unary rule of the rule table (its op)."""

    kinds: tuple[str, ...] = ("unary",)
    numpy_warns = True

    def evaluate(self, instr, args):
        from cyad._rules.arrays import unary_column   # compiled; imported late

        return _one(instr, unary_column(instr.kind, instr.params["op"], args[0]))

    def numpy_values(self, instr, args):
        from cyad._dual.array import _UFUNC_OF_UNARY   # the dual engine's own

        return (_UFUNC_OF_UNARY[instr.params["op"]](*args),)

    def jvp(self, tr, instr, args, tangents, lanes):
        return [tr.times(tr.partials(instr, args, (True,))[0], tangents[0])]

    def vjp(self, tr, instr, args, cts, wanted, lanes):
        return [tr.times(tr.partials(instr, args, (True,))[0], cts[0])]

    def dependencies(self, deps, instr, values):
        if values is not None:
            return deps.local(instr, self.dependencies(deps, instr, None), values)
        return deps.elementwise(instr, [0] if _UNARY[instr.params["op"]].d != _ZERO else [])

    def second_order(self, analysis, instr, reached, pairs, pair_bands):
        rule = _UNARY[instr.params["op"]]
        if rule.d == _ZERO or rule.d2 == _ZERO:
            return
        rows = analysis.rows(instr.args[0], instr.outs[0].size, reached[0])
        if rows is not None:
            analysis.couple(rows, rows, True, pairs, pair_bands)


class _DerivativeColumn:
    """What a rule's derivative column shares, unary or binary: computed in silence, it
    depends on every operand, and is taken as nonlinear in every pair of them."""

    numpy_warns = False

    def dependencies(self, deps, instr, values):
        return deps.elementwise(instr, range(len(instr.args)))

    def second_order(self, analysis, instr, reached, pairs, pair_bands):
        _couple_operands(analysis, instr, reached, None, pairs, pair_bands)


class UnaryDerivative(_DerivativeColumn, Unary):
    """f'(a) and f''(a): the unary rule's derivative columns."""

    kinds = ("unary_d", "unary_d2")


class Binary(Rules):
    """g(a, b) of a binary rule of the rule table (its op), operands broadcast modularly."""

    kinds: tuple[str, ...] = ("binary",)
    numpy_warns = True

    def evaluate(self, instr, args):
        from cyad._rules.arrays import binary_column   # compiled; imported late

        size = _output(instr)[1]
        return _one(instr, binary_column(instr.kind, instr.params["op"],
                                         _modular(args[0], size), _modular(args[1], size)))

    def numpy_values(self, instr, args):
        from cyad._dual.array import _UFUNC_OF_BINARY   # the dual engine's own

        ufunc = _UFUNC_OF_BINARY[instr.params["op"]]
        return (ufunc(*_rule_table.numpy_operands(ufunc, *args)),)

    def jvp(self, tr, instr, args, tangents, lanes):
        shape = instr.outs[0].shape
        result = None
        for t, partial in zip(tangents, tr.partials(instr, args,
                                                    [t is not None for t in tangents])):
            if t is not None:
                result = tr.add(result, tr.times(partial, tr.lift(t, shape, lanes)))
        return [result]

    def vjp(self, tr, instr, args, cts, wanted, lanes):
        products = [None if partial is None else tr.times(partial, cts[0])
                    for partial in tr.partials(instr, args, wanted)]
        return [None if g is None else tr.sum_leading(g, a.size, a.shape, lanes)
                for a, g in zip(args, products)]

    def dependencies(self, deps, instr, values):
        if values is not None:
            return deps.local(instr, self.dependencies(deps, instr, None), values)
        rule = _BINARY[instr.params["op"]]
        return deps.elementwise(instr, [position for position, partial
                                        in enumerate((rule.da, rule.db)) if partial != _ZERO])

    def second_order(self, analysis, instr, reached, pairs, pair_bands):
        rule = _BINARY[instr.params["op"]]
        _couple_operands(analysis, instr, reached,
                         {(0, 0): rule.daa, (0, 1): rule.dab, (1, 1): rule.dbb},
                         pairs, pair_bands)


class BinaryPartial(_DerivativeColumn, Binary):
    """The binary rule's first and second partials."""

    kinds = ("binary_da", "binary_db", "binary_daa", "binary_dab", "binary_dbb")


class Scale(Rules):
    """a * b, but 0 where b is 0."""

    kinds = ("scale",)

    def evaluate(self, instr, args):
        size = _output(instr)[1]
        a, b = _modular(args[0], size), _modular(args[1], size)
        with np.errstate(invalid="ignore"):
            result = np.where(b == 0, 0, a * b)
        return _one(instr, result)

    def jvp(self, tr, instr, args, tangents, lanes):
        (a, b), (ta, tb) = args, tangents
        shape = instr.outs[0].shape
        result = None
        if ta is not None:
            result = tr.scale(tr.lift(ta, shape, lanes), b)
        if tb is not None:
            result = tr.add(result, tr.scale(a, tr.lift(tb, shape, lanes)))
        return [result]

    def vjp(self, tr, instr, args, cts, wanted, lanes):
        (a, b), g = args, cts[0]
        return [tr.sum_leading(tr.scale(g, b), a.size, a.shape, lanes) if wanted[0] else None,
                tr.sum_leading(tr.scale(a, g), b.size, b.shape, lanes) if wanted[1] else None]

    def dependencies(self, deps, instr, values):
        return deps.elementwise(instr, range(len(instr.args)))

    def second_order(self, analysis, instr, reached, pairs, pair_bands):
        _couple_operands(analysis, instr, reached, {(0, 0): _ZERO, (0, 1): "1.0", (1, 1): _ZERO},
                         pairs, pair_bands)


class _Constant(Rules):
    """A kind whose output does not vary with its operands: no derivative, no dependency."""

    def jvp(self, tr, instr, args, tangents, lanes):
        return [None] * len(instr.outs)

    def vjp(self, tr, instr, args, cts, wanted, lanes):
        return [None] * len(args)

    def dependencies(self, deps, instr, values):
        return []


class Compare(_Constant):
    """1.0 or 0.0: a NumPy comparison or logical ufunc (its param) of the operands."""

    kinds = ("compare",)

    def evaluate(self, instr, args):
        size = _output(instr)[1]
        ufunc = instr.params["ufunc"]
        return _one(instr, ufunc(*[_modular(a, size) for a in args]))


class Zeros(_Constant):
    """Zeros."""

    kinds = ("zeros",)

    def evaluate(self, instr, args):
        shape, _, dtype = _output(instr)
        return _one(instr, np.zeros(shape, dtype))


class Select(Rules):
    """a where c is not 0, else b; args (c, a, b)."""

    kinds = ("select",)

    def evaluate(self, instr, args):
        size = _output(instr)[1]
        c, a, b = (_modular(v, size) for v in args)
        return _one(instr, np.where(c != 0, a, b))

    def jvp(self, tr, instr, args, tangents, lanes):
        shape = instr.outs[0].shape
        ta, tb = (tr.zero() if t is None else tr.lift(t, shape, lanes) for t in tangents[1:])
        return [tr.rec.elementwise_var("select", (args[0], ta, tb))]

    def vjp(self, tr, instr, args, cts, wanted, lanes):
        c, a, b = args
        g, zero = cts[0], tr.zero()
        result = [None, None, None]
        if wanted[1]:
            result[1] = tr.sum_leading(tr.rec.elementwise_var("select", (c, g, zero)), a.size,
                                       a.shape, lanes)
        if wanted[2]:
            result[2] = tr.sum_leading(tr.rec.elementwise_var("select", (c, zero, g)), b.size,
                                       b.shape, lanes)
        return result

    def dependencies(self, deps, instr, values):
        if values is not None:
            return deps.local(instr, self.dependencies(deps, instr, None), values)
        return deps.elementwise(instr, [1, 2])


class Copy(Rules):
    """a, broadcast modularly (a reshape where the sizes are the same)."""

    kinds = ("copy",)

    def evaluate(self, instr, args):
        return _one(instr, _modular(args[0], _output(instr)[1]))

    def jvp(self, tr, instr, args, tangents, lanes):
        shape = instr.outs[0].shape
        if args[0].size == instr.outs[0].size:   # a reshape
            return [tr.rec.reshape(tangents[0], (lanes,) + shape).node]
        return [tr.lift(tangents[0], shape, lanes)]

    def vjp(self, tr, instr, args, cts, wanted, lanes):
        return [tr.sum_leading(cts[0], args[0].size, args[0].shape, lanes)]

    def dependencies(self, deps, instr, values):
        return deps.elementwise(instr, range(len(instr.args)))


class _RowByRow(Rules):
    """A linear kind that works row by row (gather, scatter_add, sum_inner): its tangents
    are the same instruction on the tangents, its cotangents its transpose on the
    cotangents, the lanes rows."""

    def jvp(self, tr, instr, args, tangents, lanes):
        shape = (lanes,) + instr.outs[0].shape
        return [tr.emit(instr.kind, (tangents[0],), shape, **instr.params)]


def _gather_source(instr):
    """A gather's source element of each output element (-1: none, a zero)."""
    out = instr.outs[0]
    index = instr.params["index"]
    if index.size == 0 or out.size == 0:
        return np.full(out.size, -1, np.int64)
    count = out.size // index.size
    if count == 1:
        return np.ascontiguousarray(index, np.int64)   # (negative: the gather writes a 0)
    r = instr.args[0].size // count
    source = (np.arange(count, dtype=np.int64)[:, None] * r + index[None, :]).ravel()
    return np.where(np.tile(index >= 0, count), source, -1)


class Gather(_RowByRow):
    """The operand's elements at its `index` in each row (-1: a zero)."""

    kinds = ("gather",)
    scatters = False    # (lowering: the index reads the operand)

    def evaluate(self, instr, args):
        shape, size, dtype = _output(instr)
        index = instr.params["index"]
        if index.size == 0:
            return _one(instr, np.zeros(shape, dtype))     # nothing selected
        rows = size // max(index.size, 1)
        a = np.reshape(args[0], (rows, -1))
        return _one(instr, np.where(index >= 0, a[:, np.maximum(index, 0)], 0) if a.size else
                    np.zeros((rows, index.size), dtype))

    def vjp(self, tr, instr, args, cts, wanted, lanes):
        return [tr.emit("scatter_add", (cts[0],), _lanes_shape(args[0].shape, lanes),
                        index=instr.params["index"])]

    def dependencies(self, deps, instr, values):
        return [(0, _gather_source(instr))]


class ScatterAdd(_RowByRow):
    """The transpose of gather: the operand's elements added at its `index` in each row."""

    kinds = ("scatter_add",)
    scatters = True     # (lowering: the index writes the output)

    def evaluate(self, instr, args):
        shape, size, dtype = _output(instr)
        index = instr.params["index"]
        if index.size == 0:
            return _one(instr, np.zeros(shape, dtype))     # nothing to add
        rows = args[0].size // max(index.size, 1)
        result = np.zeros((rows, size // max(rows, 1)), dtype)
        keep = index >= 0
        for r in range(rows):
            np.add.at(result[r], index[keep], np.ravel(args[0]).reshape(rows, -1)[r][keep])
        return _one(instr, result)

    def vjp(self, tr, instr, args, cts, wanted, lanes):
        return [tr.emit("gather", (cts[0],), _lanes_shape(args[0].shape, lanes),
                        index=instr.params["index"])]

    def dependencies(self, deps, instr, values):
        (a,), (out,) = instr.args, instr.outs
        flipped = type(instr)("gather", (out,), (a,), instr.params)    # its transpose
        source = _gather_source(flipped)
        kept = np.flatnonzero(source >= 0)
        return [(0, deps.selection(source[kept], kept, (out.size, a.size)))]


class SumInner(_RowByRow):
    """Sums of k consecutive elements."""

    kinds = ("sum_inner",)
    numpy_warns = True

    def evaluate(self, instr, args):
        _, size, dtype = _output(instr)
        k = instr.params["k"]
        return _one(instr, np.reshape(args[0], (-1, k)).sum(axis=1) if k else
                    np.zeros(size, dtype))

    def vjp(self, tr, instr, args, cts, wanted, lanes):
        k = instr.params["k"]
        index = np.repeat(np.arange(instr.outs[0].size, dtype=np.int64), k)
        return [tr.emit("gather", (cts[0],), _lanes_shape(args[0].shape, lanes), index=index)]

    def dependencies(self, deps, instr, values):
        return [(0, deps.sums(instr.params["k"]))]

    def lower(self, instr, args, out, fail):
        """P0 k."""
        a = args[0]
        k = int(instr.params["k"])
        if k < 0 or a.size != out.size * k:
            raise fail(f"{a.size} elements are not {out.size} sums of {k}")
        return (k,)


def _nonzero_mask(tape, var, count, shape, values):
    """Where a matmul operand can be nonzero: a constant's own nonzeros (any operand's,
    at x, given its `values`), else everywhere; as (count, *shape) (a single matrix
    repeated)."""
    value = tape.consts.get(var) if values is None else values[var]
    mask = np.ones(shape, bool) if value is None else np.reshape(value != 0, (-1,) + shape)
    return np.broadcast_to(mask, (count,) + shape)


class Matmul(Rules):
    """Products of (m, k) by (k, n) matrices."""

    kinds = ("matmul",)
    numpy_warns = True

    def evaluate(self, instr, args):
        params = instr.params
        m, k, n = params["m"], params["k"], params["n"]
        a = np.reshape(args[0], (args[0].size // (m * k) if m * k else 1, m, k))
        b = np.reshape(args[1], (args[1].size // (k * n) if k * n else 1, k, n))
        return _one(instr, np.matmul(a, b))

    def jvp(self, tr, instr, args, tangents, lanes):
        m, k, n = (instr.params[p] for p in "mkn")
        count = instr.outs[0].size // (m * n) if m * n else 0
        shape = (lanes,) + instr.outs[0].shape
        result = None
        (a, b), (ta, tb) = args, tangents
        if ta is not None:
            left = tr.matrices(ta, count, m, k, lanes)
            right = b if b.size == k * n else tr.matrices(tr.rec.broadcast(
                b, (lanes,) + b.shape).node, count, k, n, lanes)
            result = tr.emit("matmul", (left, right), shape, m=m, k=k, n=n)
        if tb is not None:
            left = a if a.size == m * k else tr.matrices(tr.rec.broadcast(
                a, (lanes,) + a.shape).node, count, m, k, lanes)
            right = tr.matrices(tb, count, k, n, lanes)
            result = tr.add(result, tr.emit("matmul", (left, right), shape, m=m, k=k, n=n))
        return [result]

    def vjp(self, tr, instr, args, cts, wanted, lanes):
        m, k, n = (instr.params[p] for p in "mkn")
        (a, b), g = args, cts[0]
        count = instr.outs[0].size // (m * n) if m * n else 0
        result = [None, None]

        def per_lane(matrices, rows, columns):
            # a primal operand's matrices, one set per lane unless there is a single one
            if lanes is None or matrices.size == rows * columns:
                return matrices
            return tr.matrices(tr.rec.broadcast(matrices, (lanes,) + matrices.shape).node,
                               count, rows, columns, lanes)

        products = _lanes_shape((count,), lanes)
        if wanted[0]:
            ga = tr.emit("matmul", (g, per_lane(tr.transposed(b, k, n), n, k)),
                         products + (m, k), m=m, k=n, n=k)
            result[0] = tr.sum_leading(ga, a.size, a.shape, lanes)
        if wanted[1]:
            gb = tr.emit("matmul", (per_lane(tr.transposed(a, m, k), k, m), g),
                         products + (k, n), m=k, k=m, n=n)
            result[1] = tr.sum_leading(gb, b.size, b.shape, lanes)
        return result

    def dependencies(self, deps, instr, values):
        """out[p, i, j] on a[p, i, t] where b[p, t, j] can be nonzero, and on b[p, t, j] where
        a[p, i, t] can be (the other operand a constant with zeros: its pattern)."""
        a, b = instr.args
        out = instr.outs[0]
        m, k, n = (instr.params[name] for name in "mkn")
        count = out.size // max(m * n, 1)
        a_count, b_count = a.size // max(m * k, 1), b.size // max(k * n, 1)
        # a: for every (p, t, j) where b can be nonzero, every i
        p, t, j = np.nonzero(_nonzero_mask(deps.tape, b, count, (k, n), values))
        i = np.arange(m)[:, None]
        rows = ((p * m + i) * n + j).ravel()
        columns = (((p if a_count > 1 else 0 * p) * m + i) * k + t).ravel()
        on_a = deps.selection(rows, columns, (out.size, a.size))
        # b: for every (p, i, t) where a can be nonzero, every j
        p, i, t = np.nonzero(_nonzero_mask(deps.tape, a, count, (m, k), values))
        j = np.arange(n)[:, None]
        rows = ((p * m + i) * n + j).ravel()
        columns = (((p if b_count > 1 else 0 * p) * k + t) * n + j).ravel()
        on_b = deps.selection(rows, columns, (out.size, b.size))
        return [(0, on_a), (1, on_b)]

    def second_order(self, analysis, instr, reached, pairs, pair_bands):
        """a[p, i, t] * b[p, t, j], both variable: per (p, t), the union over the reached
        rows i of a's sets times the union over the reached columns j of b's."""
        reached = analysis.mask(reached[0], instr.outs[0].size)
        a, b = instr.args
        sets_a, sets_b = analysis.sets.get(a), analysis.sets.get(b)
        if sets_a is None or sets_b is None:
            return
        sets_a, sets_b = analysis.explicit(sets_a), analysis.explicit(sets_b)
        m, k, n = (instr.params[name] for name in "mkn")
        count = instr.outs[0].size // max(m * n, 1)
        r = reached.reshape(count, m, n)
        # U_a[(p, t)] = union over i with a reached (p, i, j) of a[p, i, t]
        p, i = np.nonzero(r.any(axis=2))
        t = np.arange(k)[:, None]
        a_p = p if a.size // max(m * k, 1) > 1 else 0 * p
        union_a = analysis.selection((p * k + t).ravel(), ((a_p * m + i) * k + t).ravel(),
                                     (count * k, a.size)) @ analysis.as_matrix(sets_a)
        p, j = np.nonzero(r.any(axis=1))
        b_p = p if b.size // max(k * n, 1) > 1 else 0 * p
        union_b = analysis.selection((p * k + t).ravel(), ((b_p * k + t) * n + j).ravel(),
                                     (count * k, b.size)) @ analysis.as_matrix(sets_b)
        pairs.append(analysis.row_pairs(*analysis.of_matrix(union_a),
                                        *analysis.of_matrix(union_b), False))

    def lower(self, instr, args, out, fail):
        """P0 m, P1 k, P2 n."""
        params = instr.params
        a = args[0]
        m, k, n = int(params["m"]), int(params["k"]), int(params["n"])
        if min(m, k, n) < 0:
            raise fail(f"a matrix of {m, k, n}")
        batch = out.size // (m * n) if m * n else 0
        b = args[1]
        if out.size != batch * m * n or a.size not in (m * k, batch * m * k) \
                or b.size not in (k * n, batch * k * n):
            raise fail(f"{a.size} and {b.size} elements are not (m, k) = {m, k} and "
                       f"(k, n) = {k, n} matrices for {out.size} elements of output")
        return m, k, n


class Python(Rules):
    """A primitive-table entry's impl run by NumPy (`function`); its derivatives are the
    entry's (`jvp` and `vjp` of a primitive, `impl` and `transpose` of a linear entry), run
    on tracers."""

    kinds = ("python",)

    def evaluate(self, instr, args):
        result = instr.params["function"](*args)
        results = result if isinstance(result, tuple) else (result,)
        return tuple(np.asarray(r, o.dtype).reshape(o.shape)
                     for r, o in zip(results, instr.outs))

    def jvp(self, tr, instr, args, tangents, lanes):
        entry, params = instr.params["entry"], instr.params["params"]
        if entry is None or entry.kind == "constant":
            return [None] * len(instr.outs)
        primals = [tr.t(a) for a in args]
        if entry.kind == "primitive":
            _, touts = entry.jvp(primals, [None if t is None else tr.t(t) for t in tangents],
                                 **params)
        else:   # linear: impl on the tangents, lanes moved last (the table's `extra` axis)
            moved = []
            for a, t in zip(args, tangents):
                if t is None:
                    t = tr.rec.emit("zeros", (), (lanes,) + a.shape).node
                moved.append(np.moveaxis(tr.t(t), 0, -1))
            touts = np.moveaxis(entry.impl(*moved, extra=1, **params), -1, 0)
        touts = touts if isinstance(touts, tuple) else (touts,)
        return [None if t is None else tr.rec.var_of(t) for t in touts]

    def vjp(self, tr, instr, args, cts, wanted, lanes):
        entry, params = instr.params["entry"], instr.params["params"]
        if entry is None or entry.kind == "constant":
            return [None] * len(args)
        primals = [tr.t(a) for a in args]
        cts = [tr.t(tr.rec.emit("zeros", (), _lanes_shape(v.shape, lanes)).node if c is None
                    else c) for v, c in zip(instr.outs, cts)]

        def pull(cts):
            g = tuple(cts) if len(cts) > 1 else cts[0]
            if entry.kind == "primitive":
                return entry.vjp(primals, g, **params)
            return entry.transpose(g, [a.shape for a in args], **params)

        if lanes is None:
            result = pull(cts)
        else:   # the table's rules take one cotangent: a pull per lane, the results stacked
            pulled = [pull([c[lane] for c in cts]) for lane in range(lanes)]
            result = [None if pulled[0][i] is None else
                      np.stack([np.reshape(p[i], a.shape) for p in pulled])
                      for i, a in enumerate(args)]
        return [None if r is None else tr.rec.var_of(r) for r in result]

    def dependencies(self, deps, instr, values):
        entry = instr.params["entry"]
        if entry.kind == "constant":
            return []
        # (an entry that names the operand elements each output element reads, as a product
        # by a constant scipy.sparse matrix: (rows, columns, shape) of a selection per operand)
        selections = getattr(entry, "selections", None)
        chosen = None if selections is None else selections(
            [var.shape for var in instr.args], instr.outs[0].shape, **instr.params["params"])
        if chosen is not None:
            return [(position, deps.selection(*selection))
                    for position, selection in enumerate(chosen)]
        # (an entry that maps along some axes, a batch of transforms along the others, as
        # the Fourier transforms' cores: every output on its own transform's elements)
        coupled = getattr(entry, "coupled_axes", None)
        batched = None if coupled is None else deps.batched(instr, coupled(
            **instr.params["params"]))
        return [(position, "all" if batched is None else batched)
                for position in range(len(instr.args))]

    def second_order(self, analysis, instr, reached, pairs, pair_bands):
        entry = instr.params["entry"]
        # (a primitive that is linear, as the Fourier transforms' cores, pairs nothing)
        if entry.kind == "primitive" and not getattr(entry, "linear", False):
            union = analysis.all_rows([analysis.sets.get(var) for var in instr.args], 1,
                                      analysis.n)
            if union is not None:
                pairs.append(analysis.row_pairs(*union, *union, True))


class Guard(Rules):
    """No output: a replay stops unless its operand equals `expected`. The transformations
    copy it, and derive nothing of it."""

    kinds = ("guard",)

    def evaluate(self, instr, args):
        return ()

    def dependencies(self, deps, instr, values):
        return []


# kind name -> its rules
RULES = {kind: rules
         for rules in (Unary(), UnaryDerivative(), Binary(), BinaryPartial(), Scale(),
                       Compare(), Select(), Copy(), Gather(), ScatterAdd(), SumInner(),
                       Matmul(), Zeros(), Python(), Guard())
         for kind in rules.kinds}
