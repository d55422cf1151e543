"""A tape: the program a traced function records, in instructions over flat buffers.

The tape engine runs f once on tracer arrays (cyad/_tape/trace.py), which append one
instruction per array operation to a `Tape`; program transformations
(cyad/_tape/transform.py) append the instructions of its derivatives (forward lanes,
the reverse sweep, forward over reverse) to tapes of the same kinds; cyad/_tape/lowering.pyx
lowers a tape to buffers allocated once and cyad/_tape/replay.pyx replays it in compiled code.

A `Var` is one array of the program: a shape and a dtype (the prep's float dtype, or
bool for comparisons, stored as 0/1 in a float buffer), C-contiguous, written once.
An `Instr` reads its `args` (Vars) and writes its `outs`; `params` holds its static
parameters. Broadcasting is modular: an operand of an elementwise instruction whose
size is smaller than the output's is read at i % size (its shape is a suffix of the
output's, after leading ones: scalars, and values under leading lanes); any other
broadcast is made explicit by a gather.

The kinds, their params and their meanings are rows of cyad/_tape/kind_table.py; their
meaning in NumPy is their rules' (cyad/_tape/instructions.py), which `evaluate` below
runs.

A tape's inputs are Vars without a writer; its constants (`consts`) are Vars whose
values were captured when f ran (arrays f closed over, Python numbers): a tape
freezes them.
"""
import math

import numpy as np

from cyad._tape.instructions import RULES

# the NumPy ufuncs of kind compare: their name is the instruction's param
COMPARISONS = {
    np.less: 2, np.less_equal: 2, np.greater: 2, np.greater_equal: 2, np.equal: 2,
    np.not_equal: 2, np.logical_and: 2, np.logical_or: 2, np.logical_xor: 2,
    np.logical_not: 1, np.isnan: 1, np.isinf: 1, np.isfinite: 1, np.signbit: 1,
}


class Var:
    """One array of a tape: shape and dtype, written once (or an input, or a constant)."""

    __slots__ = ("shape", "dtype", "size", "number")

    def __init__(self, shape, dtype, number):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.size = math.prod(self.shape)
        self.number = number   # its place in the tape's vars

    def __repr__(self):
        return f"v{self.number}{list(self.shape)}{'b' if self.dtype == bool else ''}"


class Instr:
    """One instruction: `kind` (a name of cyad/_tape/kind_table.py) reads `args` and
    writes `outs`, with `params`."""

    __slots__ = ("kind", "args", "outs", "params")

    def __init__(self, kind, args, outs, params):
        self.kind = kind
        self.args = tuple(args)
        self.outs = tuple(outs)
        self.params = params

    def __repr__(self):
        shown = {k: v for k, v in self.params.items() if k not in ("index", "expected")}
        return f"{self.outs} = {self.kind}{shown or ''}{self.args}"


class Tape:
    """A program of Instrs over Vars: its inputs, outputs, constants and instructions."""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)   # the float dtype of its real Vars
        self.vars = []
        self.inputs = []
        self.outputs = []
        self.consts = {}               # Var -> captured ndarray of its shape
        self.instrs = []
        self.errstates = {}            # Instr -> the np.errstate f set around it (only the
        # settings that differ from those of f's caller: see warn_as_numpy)
        self.casts = {}                # constant Var -> the number it overflowed casting

    def var(self, shape, dtype=None):
        v = Var(shape, self.dtype if dtype is None else dtype, len(self.vars))
        self.vars.append(v)
        return v

    def input(self, shape):
        v = self.var(shape)
        self.inputs.append(v)
        return v

    def const(self, value, dtype=None):
        dtype = self.dtype if dtype is None else dtype
        array = np.asarray(value)
        if array.dtype.kind == "c":   # (a cast would drop the imaginary part: cyad._complex)
            raise TypeError("cyad: a complex constant reached a real operation of the tape")
        overflows = False
        if array.dtype != dtype:
            try:
                with np.errstate(all="raise"):
                    array = np.asarray(value, dtype=dtype)
            except FloatingPointError:   # a number the dtype cannot hold (1e300 in float32)
                with np.errstate(all="ignore"):
                    array = np.asarray(value, dtype=dtype)
                overflows = True
        v = self.var(array.shape, array.dtype)
        self.consts[v] = array
        if overflows:   # NumPy warns of it where f computes with it: every call
            self.casts[v] = value
        return v

    def emit(self, kind, args, shape, dtype=None, **params):
        """Append an instruction of one output of `shape`; return that output."""
        out = self.var(shape, dtype)
        self.instrs.append(Instr(kind, args, (out,), params))
        return out

    def emit_many(self, kind, args, shapes, **params):
        outs = tuple(self.var(s) for s in shapes)
        self.instrs.append(Instr(kind, args, outs, params))
        return outs

    def guard(self, a, expected, where):
        self.instrs.append(Instr("guard", (a,), (), {"expected": np.array(expected),
                                                     "where": where}))

    def __repr__(self):
        lines = [f"Tape({self.dtype}) inputs {self.inputs} -> outputs {self.outputs}"]
        lines += [f"  {v} = const" for v in self.consts]
        lines += [f"  {instr}" for instr in self.instrs]
        return "\n".join(lines)


def frozen(tape):
    """Tape's structure as it is now, for `same_structure`: its instructions (a record
    never changes them) and its constants' zero masks (a captured constant is f's own
    array, which f may change in place later)."""
    copy = Tape(tape.dtype)
    copy.vars, copy.inputs, copy.outputs = tape.vars, tape.inputs, list(tape.outputs)
    copy.instrs = tape.instrs
    copy.consts = {v: np.asarray(value) != 0 for v, value in tape.consts.items()}
    return copy


def same_structure(a, b):
    """Whether tapes a and b record one program but for their numbers: the same
    instructions on the same Vars and shapes, the same index maps and parameters, and
    constants of the same shapes, zero in the same places. A sparsity pattern read off
    one holds for the other (cyad/_sparse/sparsity.py reads constants only for their zeros);
    guards may expect other values."""
    if (len(a.instrs) != len(b.instrs) or len(a.vars) != len(b.vars)
            or [v.number for v in a.inputs] != [v.number for v in b.inputs]
            or [v.number for v in a.outputs] != [v.number for v in b.outputs]
            or any(v.shape != w.shape or v.dtype != w.dtype for v, w in zip(a.vars, b.vars))
            or {v.number for v in a.consts} != {v.number for v in b.consts}):
        return False
    b_consts = {v.number: value for v, value in b.consts.items()}
    for v, value in a.consts.items():
        if not np.array_equal(value != 0, b_consts[v.number] != 0):
            return False
    for x, y in zip(a.instrs, b.instrs):
        if (x.kind != y.kind or [v.number for v in x.args] != [v.number for v in y.args]
                or [v.number for v in x.outs] != [v.number for v in y.outs]):
            return False
        if x.kind != "guard" and not _same_params(x.params, y.params):
            return False
    return True


def _same_params(p, q):
    if p.keys() != q.keys():
        return False
    for key, value in p.items():
        other = q[key]
        if key == "where" or value is other:
            continue
        if isinstance(value, np.ndarray) or isinstance(other, np.ndarray):
            if not (isinstance(value, np.ndarray) and isinstance(other, np.ndarray)
                    and value.dtype == other.dtype and np.array_equal(value, other)):
                return False
        elif isinstance(value, dict) and isinstance(other, dict):
            if not _same_params(value, other):
                return False
        else:
            try:
                if not bool(value == other):
                    return False
            except (TypeError, ValueError):     # no plain equality: taken as different
                return False
    return True


# -- what each kind computes, in NumPy ----------------------------------------------------------

def evaluate(instr, args):
    """The values of `instr`'s outputs (a tuple of ndarrays) from its args' values: the
    meaning of every kind, in NumPy (its rules' `evaluate`, cyad/_tape/instructions.py).
    Tracing runs it where a value is read (a guard, a table rule's impl), on the
    instructions that value depends on, so that f and the table's rules see real numbers;
    the compiled replay must agree with it."""
    rules = RULES.get(instr.kind)
    if rules is None:
        raise ValueError(f"unknown instruction kind {instr.kind!r}")
    return rules.evaluate(instr, args)


def run(tape, inputs):
    """The values of tape's outputs at `inputs` (the values of tape.inputs), computed by
    NumPy (`evaluate`), in silence; guards are not checked (a derivative program is run at
    the point it was derived at: cyad._nested)."""
    values = dict(tape.consts)
    values.update(zip(tape.inputs, inputs))
    with np.errstate(all="ignore"):
        for instr in tape.instrs:
            if instr.kind != "guard":
                values.update(zip(instr.outs, evaluate(instr, [values[a] for a in instr.args])))
    return [values[v] for v in tape.outputs]


# -- NumPy's floating-point warnings -------------------------------------------------------------

def warn_as_numpy(tape, inputs):
    """f's values computed by NumPy from its tape at `inputs` (the values of
    tape.inputs), for NumPy's floating-point warnings alone: the same warnings (category,
    message) as f gives, or FloatingPointError, under the caller's np.errstate and,
    around each instruction, the settings f gave np.errstate there (tape.errstates).

    The compiled replay runs this when its value part raised a floating-point flag, or
    on every call of a tape with `casts` (they raise no flag in the replay). A python
    instruction is computed in silence: the replay ran it in NumPy already (it
    warned then)."""
    for var, value in tape.casts.items():
        np.asarray(value, var.dtype)
    values = dict(tape.consts)
    values.update(zip(tape.inputs, inputs))
    for instr in tape.instrs:
        if instr.kind == "guard":
            continue
        args = [values[a] for a in instr.args]
        rules = RULES.get(instr.kind)
        if rules is None or not rules.numpy_warns:
            with np.errstate(all="ignore"):
                outs = evaluate(instr, args)
        else:   # (its values as NumPy computes them in f, warning as it does)
            with np.errstate(**tape.errstates.get(instr, {})):
                outs = rules.numpy_values(instr, args)
        for var, value in zip(instr.outs, outs):
            values[var] = np.broadcast_to(np.asarray(value, var.dtype), var.shape)
