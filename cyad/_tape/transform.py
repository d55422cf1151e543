"""Derivative tapes: forward lanes (jvp) and the reverse sweep (vjp) of a recorded tape.

Each transformation reads a tape instruction by instruction and records, on a new
Recording (cyad/_tape/trace.py), the instruction again (the primal) and the instructions
of its derivative: for forward mode the tangent of every output from the tangents of the
arguments, lanes leading (a tangent of a Var of shape S has shape (L,) + S); for reverse
mode, walking back, the cotangent of every argument from those of the outputs. The rules
per kind are the kind's `jvp` and `vjp` (cyad/_tape/instructions.py), recording through a
`_Transform`; a "python" instruction's come from its primitive-table entry (`jvp` and
`vjp` of a primitive, `impl` and `transpose` of a linear entry), run on tracers, so the
derivative tapes hold the same kinds as any tape and transform again: forward over
reverse is `jvp(vjp(tape))` (Hessian-vector products, Hessians as lanes of them), second
order forward is `jvp(jvp(tape))`. An elementwise rule's partials are the compiled
columns of the rule table, which stop at the second (unary_d2 and the binary second
partials have no derivative here); `composed` transforms write them as primal operations
instead (cyad/_rules/derivatives.py), whose results transform again to any order: the
derivative programs of nested differentiation (cyad/_nested.py).

The result tapes are pruned (instructions nothing needs are dropped, guards stay, the
Vars left are numbered anew; exactly, where fewer instructions give the same numbers:
gathers of gathers, and the pairs of gathers an assignment to a slice leaves, are folded
into one gather, products by a gradient's cotangent of ones dropped (`_fold_copies`),
the negatives of partials of -1 folded into an add or a scale by a constant
(`_fold_negatives`)) and ordered in three parts: the instructions that read no
derivative input (tangents, cotangents), then those that read derivative inputs alone,
then the rest. `split` and `seeded_split` tell where they start, so that a replay
computes the primal part once and the rest once per chunk of directions, and, for fixed
seeds, the middle part once per chunk for good (`cached`).

Only what the result needs is derived: reverse mode computes the cotangents of the Vars
that depend on the differentiated inputs alone, forward mode the partials of operands
that have a tangent, and the tangents of the outputs asked for (forward over reverse:
the gradient's, not the value's).
"""
import numpy as np

from cyad._rules import table as _rule_table
from cyad._rules.derivatives import partials as rule_partials
from cyad._tape.instructions import RULES
from cyad._tape.program import Instr
from cyad._tape.trace import _OP, Recording, Tracer

_NEGATIVE = next(op for op, rule in enumerate(_rule_table.UNARY_RULES) if rule.name == "negative")
_SUBTRACT = _OP["subtract"]


class DerivativeTape:
    """A derivative tape and what its inputs and outputs are."""

    def __init__(self, tape, inputs, outputs, split, seeded_split, cached):
        self.tape = tape
        self.inputs = inputs      # names of tape.inputs, in order ("x", "y", "tx", "ct", ...)
        self.outputs = outputs    # names of tape.outputs
        self.split = split        # instructions [0, split) need no derivative input;
        # [split, seeded_split) need the derivative inputs alone (no x): for fixed seeds
        # (basis directions) their results are the same on every call: `cached`, those
        # of them that later instructions or the outputs read
        self.seeded_split = seeded_split
        self.cached = cached


class _Transform:
    """A new Recording in which an old tape's Vars are mapped to new ones. `composed`: the
    partials of elementwise rules are recorded as compositions of primal operations
    (cyad._rules.derivatives), so that the result differentiates to any order, rather than
    as the derivative kinds of the compiled columns (which stop at the second). The kinds'
    rules (cyad/_tape/instructions.py) record through its methods."""

    def __init__(self, tape, values, composed=False):
        self.old = tape
        self.composed = composed
        self.rec = Recording(tape.dtype)
        self.primal = {}
        self.numbers = {}   # a number -> its constant Var (so that products by it are shared)
        for var, value in zip(tape.inputs, values):
            self.primal[var] = self.rec.input(value).node
        for var, value in tape.consts.items():
            new = self.rec.tape.const(value, var.dtype)
            self.rec.values[new] = self.rec.tape.consts[new]
            self.primal[var] = new

    def replay_primal(self, instr):
        args = [self.primal[a] for a in instr.args]
        if len(instr.outs) == 1:   # shared with an instruction the same (forward over reverse
            out = instr.outs[0]    # derives f' that reverse mode computed already)
            self.primal[out] = self.rec.emit_var(instr.kind, args, out.shape, out.dtype,
                                                 **instr.params)
            return
        outs = tuple(self.rec.tape.var(v.shape, v.dtype) for v in instr.outs)
        self.rec._record(Instr(instr.kind, args, outs, instr.params))
        for old, new in zip(instr.outs, outs):
            self.primal[old] = new

    # helpers on new Vars
    def t(self, var):
        return Tracer(self.rec, var)

    def emit(self, kind, args, shape, **params):
        return self.rec.emit_var(kind, args, shape, **params)

    def add(self, a, b):
        if a is None:
            return b
        if b is None:
            return a
        return self.rec.elementwise_var("binary", (a, b), op=_OP["add"])

    def scale(self, partial, direction):
        return self.rec.elementwise_var("scale", (partial, direction))

    def times(self, partial, direction):
        """A partial (a number or a Var) times a direction; None for a zero partial."""
        if isinstance(partial, float):
            if partial == 0.0:
                return None
            if partial == 1.0:
                return direction
            if partial == -1.0:
                return self.rec.elementwise_var("unary", (direction,), op=_NEGATIVE)
            partial = self.number(partial)
        return self.scale(partial, direction)

    def zero(self):
        return self.number(0.0)

    def number(self, value):
        var = self.numbers.get(value)
        if var is None:
            var = self.numbers[value] = self.rec.const(np.asarray(value, self.rec.tape.dtype))
        return var

    def sum_leading(self, var, size, shape, lanes=None):
        """var summed down to `size` trailing elements (modular broadcasting's transpose),
        shaped `shape`; with `lanes`, per lane (var lanes leading, the result (lanes,) +
        shape)."""
        if lanes is None:
            if var.size == size:
                return self.rec.reshape(var, shape).node
            rows = var.size // size
            flat = self.rec.reshape(var, (rows, size)).node
            return self.rec.reshape(self.rec.sum(flat, (0,), False).node, shape).node
        shape = (lanes,) + tuple(shape)
        if var.size == lanes * size:
            return self.rec.reshape(var, shape).node
        rows = var.size // (lanes * size)
        flat = self.rec.reshape(var, (lanes, rows, size)).node
        return self.rec.reshape(self.rec.sum(flat, (1,), False).node, shape).node

    def lift(self, t, shape, lanes):
        """A tangent (lanes leading) broadcast to the tangent of a Var of `shape`."""
        want = (lanes,) + tuple(shape)
        if t.shape == want:
            return t
        inner = t.shape[1:]
        padded = self.rec.reshape(t, (lanes,) + (1,) * (len(shape) - len(inner)) + inner).node
        return self.rec.broadcast(padded, want).node

    def matrices(self, var, count, rows, columns, lanes=None):
        """var (a matrix or `count` of them; with `lanes`, a tangent) as count matrices
        (times lanes): for an operand of a matmul instruction of `count` products."""
        per = rows * columns
        if per == 0:   # empty matrices: nothing to broadcast
            return var
        have = var.size // per
        want = count * (lanes or 1)
        if have == want or have == 1:
            return var
        # a single matrix (per lane) used by every product: broadcast it
        shape = ((lanes,) if lanes else ()) + (have // (lanes or 1), rows, columns)
        target = ((lanes,) if lanes else ()) + (count, rows, columns)
        return self.rec.broadcast(self.rec.reshape(var, shape).node, target).node

    def transposed(self, var, rows, columns):
        """Each of var's (rows x columns) matrices transposed."""
        count = var.size // (rows * columns) if rows * columns else 0   # (empty: none to read)
        index = np.arange(var.size).reshape(count, rows, columns).transpose(0, 2, 1)
        return self.rec.gather(var, index).node

    def partials(self, instr, args, wanted):
        """The partial derivatives of an elementwise instruction in the operands `wanted` (a
        bool per operand; None for the others): each a number or a Var. A rule-table
        expression that is a number, an operand ("a", "b", "x") or the instruction's own
        output ("v": exp' is exp; "d") costs nothing; any other becomes the derivative
        instruction of the next kind (unary_d, binary_da, ...), or, composed, the primal
        operations of its composition."""
        op = instr.params["op"]
        if self.composed and instr.kind in ("unary", "binary"):
            return self._composed_partials(instr, args, wanted)
        forms = _FORMS.get((instr.kind, op))
        if forms is None:
            raise NotImplementedError("cyad: a third derivative is not supported by engine='tape'")
        names = {_OUTPUT_NAME[instr.kind]: self.primal[instr.outs[0]]}
        names.update(zip(("x",) if len(args) == 1 else ("a", "b"), args))
        partials = []
        for (how, what), want in zip(forms, wanted):
            if not want:
                partials.append(None)
            elif how == "name":
                partials.append(names[what])
            elif how == "number":
                partials.append(what)
            else:
                partials.append(self.emit(what, args, instr.outs[0].shape, op=op))
        return partials

    def _composed_partials(self, instr, args, wanted):
        """`partials` as compositions of primal operations, run on tracers of self.rec (a
        constant operand as its value: zeta's order is no variable)."""
        consts = self.rec.tape.consts
        operands = [consts[a] if a in consts else self.t(a) for a in args]
        operands.append(self.t(self.primal[instr.outs[0]]))
        partials = []
        for want, column in zip(wanted, rule_partials(instr.kind, instr.params["op"])):
            value = column(*operands) if want else None
            if value is None:
                partials.append(None)
            elif isinstance(value, Tracer) or np.ndim(value):   # (an array of constants too)
                partials.append(self.rec.var_of(value))
            else:   # (a number: a constant partial)
                partials.append(float(value))
        return partials


# -- the partials of the elementwise kinds, from the rule table ---------------------------------

# the rule-table columns that differentiate each elementwise kind, one per operand
_COLUMNS = {
    "unary": ("d",), "unary_d": ("d2",),
    "binary": ("da", "db"), "binary_da": ("daa", "dab"), "binary_db": ("dab", "dbb"),
}
# what the kind's output is called in those columns' expressions
_OUTPUT_NAME = {"unary": "v", "unary_d": "d", "binary": "v", "binary_da": "da",
                "binary_db": "db"}


def _form(expression, names, column):
    """How a rule-table expression of `column` is had: ("name", an operand's or the
    output's name), ("number", its value) or ("emit", the derivative kind computing it)."""
    if expression in names:
        return "name", expression
    try:
        return "number", float(expression)
    except (TypeError, ValueError):   # None: the value's expression computes it
        return "emit", {"d": "unary_d", "d2": "unary_d2"}.get(column, "binary_" + column)


# (kind, op) -> the form of each column of _COLUMNS[kind]
_FORMS = {
    (kind, op): tuple(_form(getattr(rule, column), names, column) for column in columns)
    for kind, columns in _COLUMNS.items()
    for rules, names in [((_rule_table.UNARY_RULES, ("x", _OUTPUT_NAME[kind]))
                          if kind.startswith("unary") else
                          (_rule_table.BINARY_RULES, ("a", "b", _OUTPUT_NAME[kind])))]
    for op, rule in enumerate(rules)
}


# -- forward: tangents, lanes leading ------------------------------------------------------------

def jvp(tape, values, lanes, wrt, names, seeded=(), tangents_of=None, composed=False):
    """The tape computing tape's outputs and their tangents along `lanes` directions of
    the inputs numbered in `wrt` (the tangent inputs follow the primal ones).

    `values` are the inputs' values at which to evaluate while recording; `names` the
    primal inputs' names ("t" + name for their tangents, and for the outputs'); `seeded`
    numbers the inputs that are themselves seeds (a tangent of the tape being
    differentiated): the instructions that read them belong to the derivative part.
    `tangents_of` numbers the outputs whose tangents are outputs too (None: all of them):
    forward over reverse wants the gradient's alone, and what only the value's tangent
    needs is pruned. `composed`: see `_Transform`.
    """
    tr = _Transform(tape, values, composed)
    tangent = {}
    for i in wrt:
        var = tape.inputs[i]
        tangent[var] = tr.rec.input(np.zeros((lanes,) + var.shape)).node
    for instr in tape.instrs:
        tangents = [tangent.get(a) for a in instr.args]
        args = [tr.primal[a] for a in instr.args]
        tr.replay_primal(instr)
        if instr.kind == "guard" or all(t is None for t in tangents):
            continue
        outs = RULES[instr.kind].jvp(tr, instr, args, tangents, lanes)
        for old, t in zip(instr.outs, outs):
            if t is not None:
                tangent[old] = t
    outputs = [tr.primal[v] for v in tape.outputs]
    chosen = range(len(tape.outputs)) if tangents_of is None else tangents_of
    for i in chosen:
        v = tape.outputs[i]
        t = tangent.get(v)
        if t is None or v.dtype == bool:
            t = tr.rec.emit("zeros", (), (lanes,) + v.shape).node
        outputs.append(t)
    inputs = list(names) + ["t" + names[i] for i in wrt]
    out_names = ["value"] + ["tangent"] * len(chosen) if len(tape.outputs) == 1 else \
        [f"value{i}" for i in range(len(tape.outputs))] + \
        [f"tangent{i}" for i in chosen]
    seeds = [tr.primal[tape.inputs[i]] for i in seeded] + tr.rec.tape.inputs[len(tape.inputs):]
    return _finish(tr.rec, outputs, inputs, out_names, seeds)


# -- reverse: cotangents ------------------------------------------------------------------------

def vjp(tape, values, wrt, names, lanes=None, unit=False, composed=False):
    """The tape computing tape's (single) output and the cotangents of the inputs numbered
    in `wrt` from a cotangent input "ct" of the output's shape; with `lanes`, from `lanes`
    cotangents at once: "ct" and the cotangents computed have a leading axis of lanes.
    `unit`: the cotangent is ones (a gradient), a constant rather than an input, so that
    the products by it fold away (`_fold_copies`). `composed`: see `_Transform`."""
    tr = _Transform(tape, values, composed)
    # the Vars that depend on the inputs in wrt: only theirs are cotangents worth having
    active = {tape.inputs[i] for i in wrt}
    for instr in tape.instrs:
        tr.replay_primal(instr)
        if not active.isdisjoint(instr.args):
            active.update(instr.outs)
    (y,) = tape.outputs
    lead = () if lanes is None else (lanes,)
    if unit:   # (a constant of its own: a seed of `_finish`)
        ct_input = tr.rec.tape.const(np.ones(y.shape, tr.rec.tape.dtype))
        tr.rec.values[ct_input] = tr.rec.tape.consts[ct_input]
    else:
        ct_input = tr.rec.input(np.zeros(lead + y.shape)).node
    cotangent = {y: ct_input}
    for instr in reversed(tape.instrs):
        cts = [cotangent.get(v) for v in instr.outs]
        if instr.kind == "guard" or all(c is None for c in cts):
            continue
        args = [tr.primal[a] for a in instr.args]
        wanted = [a in active and a.dtype != bool for a in instr.args]
        for old, c in zip(instr.args, RULES[instr.kind].vjp(tr, instr, args, cts, wanted,
                                                            lanes)):
            if c is not None and old in active and old.dtype != bool:
                cotangent[old] = tr.add(cotangent.get(old), c)
    outputs = [tr.primal[y]]
    for i in wrt:
        var = tape.inputs[i]
        c = cotangent.get(var)
        outputs.append(tr.rec.emit("zeros", (), lead + var.shape).node if c is None
                       else tr.rec.reshape(c, lead + var.shape).node)
    out_names = ["value"] + ["ct" + names[i] for i in wrt]
    return _finish(tr.rec, outputs, list(names) + ([] if unit else ["ct"]), out_names,
                   [ct_input])


# -- exact peepholes -----------------------------------------------------------------------------

def _fold_negatives(tape, keep):
    """Rewrite, in place, the negatives the transforms emit (a partial of -1) where an
    instruction can take the sign instead, at no change of rounding: an add reading a
    negative becomes a subtract (a + (-b) is a - b), a scale by a constant of a negative,
    or a negative of such a scale, a scale by the negated constant. Only a negative (or a
    scale) that nothing else reads (`keep`: the tape's outputs) is folded away."""
    readers = {}
    for instr in tape.instrs:
        for a in instr.args:
            readers[a] = readers.get(a, 0) + 1
    for v in keep:
        readers[v] = readers.get(v, 0) + 1
    writer = {instr.outs[0]: instr for instr in tape.instrs if len(instr.outs) == 1}

    def negated(var):
        # the operand of a negative writing var that only one instruction reads, or None
        instr = writer.get(var)
        if (instr is not None and instr.kind == "unary" and instr.params["op"] == _NEGATIVE
                and readers[var] == 1):
            return instr.args[0]
        return None

    def constant_of(instr):
        # (the constant operand's position, its value) of a scale by a constant, or None
        if instr is None or instr.kind != "scale":
            return None
        for i, a in enumerate(instr.args):
            if a in tape.consts:
                return i, tape.consts[a]
        return None

    def negative_constant(value, like):
        return tape.const(np.negative(value), like.dtype)

    for instr in tape.instrs:
        if instr.kind == "binary" and instr.params["op"] == _OP["add"]:
            a, b = instr.args
            if negated(b) is not None:
                instr.args, instr.params = (a, negated(b)), dict(instr.params, op=_SUBTRACT)
            elif negated(a) is not None:
                instr.args, instr.params = (b, negated(a)), dict(instr.params, op=_SUBTRACT)
        elif instr.kind == "scale" and constant_of(instr) is not None:
            i, value = constant_of(instr)
            other = instr.args[1 - i]
            if negated(other) is not None:
                args = list(instr.args)
                args[i], args[1 - i] = negative_constant(value, instr.args[i]), negated(other)
                instr.args = tuple(args)
        elif (instr.kind == "unary" and instr.params["op"] == _NEGATIVE
              and readers[instr.args[0]] == 1 and constant_of(writer.get(instr.args[0]))):
            scale = writer[instr.args[0]]
            i, value = constant_of(scale)
            args = list(scale.args)
            args[i] = negative_constant(value, scale.args[i])
            instr.kind, instr.args, instr.params = "scale", tuple(args), dict(scale.params)


def _gather_rows(instr):
    # a gather's rows: out[l*m + i] = a[l*r + index[i]] for l < rows (cyad/_tape/program.py)
    m = instr.params["index"].size
    return instr.outs[0].size // m if m else None


def _fold_copies(tape, outputs):
    """Rewrite, in place, the instructions that only move numbers about, each a pass over
    its array, where fewer do the same exactly.

    Gathers: an assignment to a slice (f's y[1:] -= v) is recorded as y's other elements
    gathered with zeros in the slice, plus v gathered into the slice, and an augmented
    assignment writes the slice back, the same numbers again. A gather of a gather (of
    as many rows) becomes one gather; an add of two gathers of one Var (as many rows)
    that never both take an element becomes one gather (x + 0 is x, but for -0.0, which
    the assignment itself keeps).
    Products by ones: the cotangent of a gradient is ones (vjp's `unit`); a scale of a
    by ones (gathered, broadcast) is a, exactly.
    An instruction left giving its operand back whole (the same shape) is dropped, its
    readers reading the operand; so is an output's, where the operand is none of the
    inputs, constants or outputs (`outputs` is updated). Pruning drops what is left
    unread."""
    writer = {}
    renamed = {}
    fixed = set(tape.inputs) | set(tape.consts) | set(outputs)
    ones = {v for v, value in tape.consts.items()
            if v.dtype != bool and np.all(np.asarray(value) == 1)}

    def gather_of(var):
        instr = writer.get(var)
        return instr if instr is not None and instr.kind == "gather" else None

    def rename(out, a):
        # out's readers read a instead: True where that may be
        if a.shape != out.shape or a.dtype != out.dtype or (out in outputs and a in fixed):
            return False
        if out in outputs:
            outputs[:] = [a if v is out else v for v in outputs]
            fixed.add(a)
        renamed[out] = a
        return True

    for instr in tape.instrs:
        instr.args = tuple(renamed.get(a, a) for a in instr.args)
        kind, args = instr.kind, instr.args
        if kind == "binary" and instr.params["op"] == _OP["add"] \
                and args[0].size == args[1].size == instr.outs[0].size:
            first, second = (gather_of(a) for a in args)
            if (first is not None and second is not None and first.args == second.args
                    and _gather_rows(first) == _gather_rows(second)):
                i, j = first.params["index"], second.params["index"]
                if not np.any((i >= 0) & (j >= 0)):
                    instr.kind, instr.args = "gather", first.args
                    instr.params = {"index": np.maximum(i, j)}
        if instr.kind == "gather":
            inner = gather_of(instr.args[0])
            rows = _gather_rows(instr)
            if inner is not None and rows is not None and _gather_rows(inner) == rows:
                index, within = inner.params["index"], instr.params["index"]
                instr.args = inner.args
                instr.params = {"index": np.where(within >= 0, index[np.maximum(within, 0)],
                                                  -1).astype(np.int64)}
            index = instr.params["index"]
            if instr.args[0] in ones and np.all(index >= 0):
                ones.add(instr.outs[0])
            if (instr.args[0].size == instr.outs[0].size
                    and np.array_equal(index, np.arange(index.size))
                    and rename(instr.outs[0], instr.args[0])):
                continue
        elif kind == "copy" and args[0] in ones:
            ones.add(instr.outs[0])
        elif kind == "scale" and args[1] in ones and rename(instr.outs[0], args[0]):
            continue
        for out in instr.outs:
            writer[out] = instr


# -- pruning and ordering ------------------------------------------------------------------------

def _prune(tape):
    """Drop the instructions that neither the outputs nor a guard need; return them, and
    the Vars read."""
    needed = set(tape.outputs)
    kept = []
    for instr in reversed(tape.instrs):
        if instr.kind == "guard" or not needed.isdisjoint(instr.outs):
            kept.append(instr)
            needed.update(instr.args)
    kept.reverse()
    tape.instrs = kept
    return kept, needed


def _finish(rec, outputs, input_names, output_names, seeds):
    """Prune rec's tape to what its outputs and guards need, and order it: the
    instructions that read no derivative input (the Vars `seeds`) first, then those that
    read only derivative inputs and constants, then the rest."""
    tape = rec.tape
    tape.outputs = list(outputs)
    # the parts, told before the folds: they make an instruction read what its operands
    # were computed from, and a product by a seed of ones (vjp's `unit`) that folds away
    # leaves its readers in the derivative part
    seeded = set(seeds)
    varying = {v for v in tape.inputs if v not in seeded}
    part = {}
    for instr in tape.instrs:
        reads_seeds = not seeded.isdisjoint(instr.args)
        reads_primal = not varying.isdisjoint(instr.args)
        if reads_seeds:
            seeded.update(instr.outs)
        if reads_primal:
            varying.update(instr.outs)
        part[instr] = 2 if reads_seeds and reads_primal else 1 if reads_seeds else 0
    _fold_copies(tape, tape.outputs)
    _prune(tape)    # (a Var that only pruned instructions read is read once)
    _fold_negatives(tape, tape.outputs)
    kept, needed = _prune(tape)
    first, seed_only, mixed = [], [], []
    for instr in kept:
        (first, seed_only, mixed)[part[instr]].append(instr)
    tape.instrs = first + seed_only + mixed
    tape.consts = {v: c for v, c in tape.consts.items() if v in needed}
    # the Vars left, numbered anew: a replay gives no slot to a pruned one
    live = needed.union(tape.inputs, *(instr.outs for instr in kept))
    tape.vars = [v for v in tape.vars if v in live]
    for number, v in enumerate(tape.vars):
        v.number = number
    read_later = {a for instr in mixed for a in instr.args} | set(tape.outputs)
    cached = [v for instr in seed_only for v in instr.outs if v in read_later]
    return DerivativeTape(tape, input_names, output_names, len(first),
                          len(first) + len(seed_only), cached), rec
