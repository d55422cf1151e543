"""Tracing: f runs once on tracer arrays, which record its operations on a Tape.

A `Tracer` stands for one Var of a `Recording`'s tape (cyad/_tape/program.py), and has a
value: whatever reads one (a guard on f's control flow, a table entry's impl) gets
real numbers, computed in NumPy (`cyad._tape.program.evaluate`) when first read, from the
values of the instructions it depends on. Nothing else is evaluated while
recording: the compiled replay computes the values of f and of its derivatives (most
tapes are never evaluated in NumPy at all). Those values are computed in silence: the
replay warns as NumPy would (cyad._tape.program.warn_as_numpy), on the record's first call as
on any other, so a tape records the np.errstate settings f makes around each
instruction (`Tape.errstates`). Tracers interpret the same tables as
the dual arrays: NumPy ufuncs of the rule table (cyad/_rules/table.py) become unary and
binary instructions (their methods reduce, accumulate, outer and at are written with
them: cyad/_primitives/ufunc_methods.py); NumPy functions go through the primitive table
(cyad/_primitives):

- a composition runs as it is, on tracers;
- a constant (shape queries, rounding) runs on the values: a static result (a shape)
  is returned as it is, a value-dependent array becomes a "python" instruction;
- a linear entry that only selects elements (reshape, transpose, indexing, concatenate,
  flip, where with a fixed condition, ...) becomes gathers, found by running its impl on
  element codes once; np.sum (without initial=) becomes sum_inner; any other is a
  "python" instruction whose derivatives are the entry's impl and transpose;
- a primitive becomes a "python" instruction (matmul: a matmul instruction) whose
  derivatives are the entry's jvp and vjp (cyad/_tape/transform.py).

What depends on x's values is never frozen silently. Masks of `where`, maximum,
minimum, abs and clip are instructions, recomputed on every replay. Anything else that
reads a traced value - `bool()` of a comparison (Python `if` and `while`), `int()` and
`.astype()` to an integer dtype, `float()` or `.item()` of a bool, an index made of traced
values (a boolean mask, np.piecewise's conditions), the orders and positions of argsort,
argpartition, argmax and their kin, a table rule's `primal()` - records a guard: the
replay checks that the value is what it was when f was traced, and the tape is recorded
anew when it is not. `float()`, `complex()`, `.item()` and `.tolist()` of a float value
are refused (TypeError), as on the dual engine: the Python number would carry on without
its derivative. `round()`, `math.floor()`, `math.ceil()` and `math.trunc()` give guarded
ints, as `int()`. An ndarray method tracers lack raises an AttributeError naming it
(`cyad._hints` holds the texts).

A tape freezes what f reads that is not x: arrays f closes over and Python state are
captured as constants when f is traced (`Recording.captured` lists the arrays, which the
engine compares with copies on every call; cyad/_tape/engine.pyx says what it checks).

Nested differentiation (cyad/_nested.py): a cyad operator called inside f records its own
f on a recording of its own, `nested`, a level above every recording made before it. An
array of a differentiation around it that this f reads - a dual array, a tracer of an
earlier recording - becomes an input of the nested recording (`free`), not a constant:
the derivative program derived from it is evaluated on those very arrays, so that the
differentiations around it differentiate it too. An operation on tracers of several
recordings is recorded on the latest (the others' tracers lifted into it); one on an
earlier recording's tracers alone is that recording's. A top-level recording meets no
such array but by a stale one (a dual of a finished call), refused.

Writes: `y[key] = v`, in-place operators and `out=` give the written array a new Var
(tapes are written once). Views behave as NumPy's: a tracer made by basic indexing,
transpose, flip, broadcast_to or a reshape that NumPy makes without a copy (asked of
NumPy, on a stand-in laid out as the tracer is in its base: a transposed array raveled
is a copy) remembers where its elements lie in that array, so a write into the view
writes into the array, and a view of an array written since reads the new values.
"""
import functools
import itertools
import math
import operator

import numpy as np

from cyad import _hints
from cyad._rules import table as _rule_table
from cyad._array_methods import ArrayMethods
from cyad import _complex
from cyad._dual.array import Dual, enter, leave
from cyad._primitives import NAMED, TABLE, ufunc_methods
from cyad._primitives._table import entry_of
from cyad._stacked import stacked
from cyad._tape.program import COMPARISONS, Instr, Tape, Var, evaluate
from cyad._wrapper import constant_result

_UNARY = _rule_table.UfuncOps(_rule_table.UNARY_RULES)
_BINARY = _rule_table.UfuncOps(_rule_table.BINARY_RULES)
_OP = {rule.name: op for op, rule in enumerate(_rule_table.BINARY_RULES)}
_POWER = _BINARY[np.power]
_SQUARE = _UNARY[np.square]
_STALE = ("an array of another differentiation met this one: a dual or traced array is valid "
          "only inside the call that made it, and a function differentiated inside another "
          "cannot write into an array of the differentiation around it (return the value "
          "instead)")
# the levels of recordings: a later one is a differentiation inside the earlier ones
_LEVELS = itertools.count(1)

# the linear entries whose result NumPy may give as a view of their operand
_VIEWS = {"reshape", "transpose", "broadcast_to", "flip"}

def _key(kind, args, shape, params):
    """What identifies a pure instruction's result (None: not shared, python and zeros)."""
    if kind in _UNSHARED:
        return None
    if len(params) == 1 and "op" in params:    # (most instructions: a rule)
        frozen = params["op"]
    else:
        frozen = tuple(sorted((name, _Index(value) if isinstance(value, np.ndarray)
                               else value) for name, value in params.items()))
    return kind, tuple([a.number for a in args]), tuple(shape), frozen


_UNSHARED = frozenset(("python", "zeros", "guard"))


class _Index:
    """An index array in a key: hashed by its shape and three entries, equal by content
    (hashing all of a long index would cost more than the instruction it shares)."""

    __slots__ = ("array", "hash")

    def __init__(self, array):
        self.array = array
        flat = array.reshape(-1)
        n = flat.size
        self.hash = hash((array.shape, int(flat[0]), int(flat[n // 2]), int(flat[-1]))
                         if n else array.shape)

    def __hash__(self):
        return self.hash

    def __eq__(self, other):
        return isinstance(other, _Index) and np.array_equal(self.array, other.array)


def _broadcast_shapes(shapes):
    """np.broadcast_shapes of a few short shapes, without making arrays; NumPy's error
    where they do not broadcast."""
    ndim = max(len(shape) for shape in shapes)
    result = [1] * ndim
    for shape in shapes:
        for axis, n in enumerate(shape, ndim - len(shape)):
            if n != 1 and result[axis] != n:
                if result[axis] != 1:
                    return np.broadcast_shapes(*shapes)
                result[axis] = n
    return tuple(result)


class _Values(dict):
    """Var -> its value (an ndarray), computed when first read: a Var missing here is
    evaluated from its writer's operands (`cyad._tape.program.evaluate`), those missing first."""

    __slots__ = ("writers",)

    def __init__(self):
        super().__init__()
        self.writers = {}   # Var -> the Instr that writes it

    def __missing__(self, var):
        pending = [var]
        while pending:
            instr = self.writers[pending[-1]]
            missing = [a for a in instr.args if a not in self]
            if missing:
                pending.extend(missing)
                continue
            pending.pop()
            # silent: a replay of the tape warns as NumPy would (cyad._tape.program.warn_as_numpy)
            with np.errstate(all="ignore"):
                outs = evaluate(instr, [self[a] for a in instr.args])
            for out, value in zip(instr.outs, outs):
                self[out] = value
            while pending and pending[-1] in self:   # (an operand read twice)
                pending.pop()
        return self[var]


class Recording:
    """A tape being recorded, and the value of each of its Vars (computed when read).
    `nested`: a nested differentiation's, whose f may read the arrays of those around it
    (its `free` inputs: the module's docstring)."""

    def __init__(self, dtype, nested=False):
        self.tape = Tape(dtype)
        self.level = next(_LEVELS)
        self.nested = nested
        self.free = []      # (array of an outer differentiation, its input Var)
        self._free_of = {}  # id(that array) -> its input Var
        self.values = _Values()
        self._consts = {}   # id(captured object), or a number's type and repr -> (the
        # object, its Var)
        self._known = {}    # an instruction's identity (_key) -> its output
        self.captured = []  # the ndarrays f's operations took as constants
        self._positions = {}    # size -> read-only arange(size), sliced for index maps
        self._errstate = np.geterr()   # the caller's: f's own np.errstate is recorded

    # -- Vars ------------------------------------------------------------------------
    def input(self, value):
        var = self.tape.input(np.shape(value))
        self.values[var] = np.array(value, self.tape.dtype)
        return Tracer(self, var)

    def lifted(self, array):
        """The input Var of an outer differentiation's array (a dual, an earlier recording's
        tracer) that a nested recording's f reads, made at its first read."""
        if not self.nested:   # (no differentiation around this one: one kept from before)
            raise TypeError("cyad: an array of an earlier differentiation met this one: a dual "
                            "or traced array is valid only inside the call that made it (one "
                            "kept in a global, a list or an attribute from an earlier call of "
                            "f?)." + _hints.users_line())
        var = self._free_of.get(id(array))
        if var is None:
            value = array.value if isinstance(array, Tracer) else array.values
            var = self.tape.input(np.shape(value))
            self.values[var] = np.array(value, self.tape.dtype)
            self._free_of[id(array)] = var
            self.free.append((array, var))
        return var

    def const(self, value):
        """The Var of a constant operand (captured once per object)."""
        if isinstance(value, Tracer):
            return value.node
        if isinstance(value, Dual):
            return self.lifted(value)
        number = type(value) in (int, float, bool)
        # (a Python number by its value: every 2.0 in f is one constant)
        key = (type(value), repr(value)) if number else id(value)
        if key in self._consts and (number or self._consts[key][0] is value):
            return self._consts[key][1]
        array = np.asarray(value)
        dtype = bool if array.dtype == bool else self.tape.dtype
        var = self.tape.const(array, dtype)
        self.values[var] = self.tape.consts[var]
        self._consts[key] = (value, var)
        if isinstance(value, np.ndarray):
            self.captured.append(value)
        return var

    def var_of(self, x):
        if type(x) is Var:    # (the transforms' operands)
            return x
        if isinstance(x, Tracer):
            if x.recording is not self:
                if x.recording.level > self.level:
                    raise TypeError("cyad: " + _STALE)
                return self.lifted(x)
            x.check()
            return x.node
        return self.const(x)

    def positions(self, shape):
        """The flat positions of an array of `shape` (read-only: index maps made by basic
        indexing are views of it, not arrays of their own)."""
        size = math.prod(shape)
        flat = self._positions.get(size)
        if flat is None:
            flat = self._positions[size] = np.arange(size, dtype=np.int64)
            flat.flags.writeable = False
        return flat.reshape(shape)

    # -- instructions ------------------------------------------------------------------
    def emit(self, kind, args, shape, dtype=None, **params):
        """Record an instruction of one output, return the output's Tracer.
        An instruction the tape computes already (the same kind, operands and params) is
        not recorded twice: its output is returned."""
        return Tracer(self, self.emit_var(kind, args, shape, dtype, **params))

    def emit_var(self, kind, args, shape, dtype=None, **params):
        """`emit`, returning the output's Var."""
        key = _key(kind, args, shape, params)
        if key is not None:
            known = self._known.get(key)
            if known is not None:
                return known
        out = self.tape.var(shape, dtype)
        self._record(Instr(kind, args, (out,), params))
        if key is not None:
            self._known[key] = out
        return out

    def emit_many(self, kind, args, shapes, **params):
        outs = tuple(self.tape.var(s) for s in shapes)
        return tuple(Tracer(self, v) for v in self._record(Instr(kind, args, outs, params)))

    def _record(self, instr):
        self.tape.instrs.append(instr)
        errstate = np.geterr()
        if errstate != self._errstate:
            self.tape.errstates[instr] = {k: v for k, v in errstate.items()
                                          if v != self._errstate[k]}
        writers = self.values.writers
        for var in instr.outs:
            writers[var] = instr
        return instr.outs

    def guard(self, var, where):
        """Freeze var's value: a guard instruction checks it on every replay."""
        value = self.values[var]
        self.tape.guard(var, value, where)
        return value

    # -- operations in tape form ---------------------------------------------------------
    def elementwise(self, kind, operands, dtype=None, **params):
        """An elementwise instruction on operands broadcast as NumPy does: an operand
        whose shape is not a suffix of the result's is first broadcast by a gather."""
        return Tracer(self, self.elementwise_var(kind, operands, dtype, **params))

    def elementwise_var(self, kind, operands, dtype=None, **params):
        """`elementwise`, returning the output's Var."""
        vars_ = [self.var_of(x) for x in operands]
        shapes = {v.shape for v in vars_}
        shapes.discard(())
        if len(shapes) > 1:
            shape = _broadcast_shapes(shapes)
            vars_ = [self.modular(v, shape) for v in vars_]
        else:   # (the operands' shapes are the same, or scalars)
            shape = shapes.pop() if shapes else ()
        return self.emit_var(kind, vars_, shape, dtype, **params)

    def modular(self, var, shape):
        """var as an operand of an elementwise instruction of `shape`: itself when its shape
        (without leading ones) ends `shape`, else its gather to `shape`."""
        core = var.shape
        while core and core[0] == 1:
            core = core[1:]
        if not core or tuple(shape[len(shape) - len(core):]) == core:
            return var
        return self.broadcast(var, shape).node

    def broadcast(self, var, shape):
        if var.shape == tuple(shape):
            return Tracer(self, var)
        index = np.broadcast_to(self.positions(var.shape), shape)
        return self.gather(var, index)

    def gather(self, var, index):
        """The elements of var at the flat positions `index` (-1: zero), shaped like it."""
        index = np.asarray(index, np.int64)
        flat = index.reshape(-1)
        if (var.size and flat.size == var.size and flat[0] == 0 and flat[-1] == var.size - 1
                and np.array_equal(flat, self.positions(var.shape).reshape(-1))):
            if index.shape == var.shape:
                return Tracer(self, var)
            return self.emit("copy", (var,), index.shape, var.dtype)
        return self.emit("gather", (var,), index.shape, var.dtype, index=flat)

    def reshape(self, var, shape):
        return Tracer(self, var) if var.shape == tuple(shape) else \
            self.emit("copy", (var,), shape, var.dtype)

    def sum(self, var, axes, keepdims):
        """np.sum over `axes`: the summed axes moved last (a gather if need be), then
        sum_inner."""
        axes = tuple(sorted(axes))
        kept = [i for i in range(len(var.shape)) if i not in axes]
        if kept + list(axes) != list(range(len(var.shape))):
            index = np.transpose(self.positions(var.shape), kept + list(axes))
            var = self.gather(var, index).node
        kept_shape = tuple(var.shape[:len(kept)])
        k = math.prod(var.shape[len(kept):])
        out = self.emit("sum_inner", (var,), kept_shape, k=k)
        if not keepdims:
            return out
        shape = list(kept_shape)
        for a in axes:
            shape.insert(a, 1)
        return self.reshape(out.node, tuple(shape))

    def matmul(self, a, b):
        """np.matmul as a matmul instruction: 1-d operands promoted, batch axes broadcast
        by gathers, the result reshaped back."""
        av, bv = self.var_of(a), self.var_of(b)
        if not av.shape or not bv.shape:
            raise ValueError("matmul: Input operand does not have enough dimensions")
        a2 = av.shape if len(av.shape) > 1 else (1,) + av.shape
        b2 = bv.shape if len(bv.shape) > 1 else bv.shape + (1,)
        m, k, n = a2[-2], a2[-1], b2[-1]
        if b2[-2] != k:
            raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 "
                             f"(size {b2[-2]} is different from {k})")
        batch = np.broadcast_shapes(a2[:-2], b2[:-2])
        operands = []
        for var, shape2, core in ((av, a2, (m, k)), (bv, b2, (k, n))):
            if shape2[:-2] != batch and len(shape2) > 2:
                var = self.broadcast(self.reshape(var, shape2).node, batch + core).node
            operands.append(var)
        out = self.emit("matmul", operands, batch + (m, n), m=m, k=k, n=n)
        shape = batch + ((m,) if len(av.shape) > 1 else ()) + ((n,) if len(bv.shape) > 1 else ())
        return self.reshape(out.node, shape)

    def python(self, entry, operands, params, where):
        """A table entry's impl on the values, as a python instruction."""
        vars_ = [self.var_of(x) for x in operands]
        function = functools.partial(entry.impl, **params)
        result = function(*[self.values[v] for v in vars_])
        if isinstance(result, tuple):
            outs = self.emit_many("python", vars_, [np.shape(r) for r in result],
                                  function=function, entry=entry, params=params, where=where)
        else:
            outs = self.emit("python", vars_, np.shape(result), function=function, entry=entry,
                             params=params, where=where)
        # the values are at hand: kept, as cyad._tape.program.evaluate would make them
        results = result if isinstance(result, tuple) else (result,)
        for out, value in zip(outs if isinstance(result, tuple) else (outs,), results):
            self.values[out.node] = np.asarray(value, out.dtype).reshape(out.shape)
        if not isinstance(result, tuple):
            return outs
        # an integer output (lstsq's rank) is a count, checked by a guard on every replay;
        # a named tuple (eigh's, svd's) keeps its type
        kept = []
        for out, value in zip(outs, result, strict=True):
            if isinstance(value, (int, np.integer)):
                self.guard(out.node, where)
                out = value
            kept.append(out)
        return type(result)(*kept) if hasattr(result, "_fields") else tuple(kept)


class Tracer(ArrayMethods):
    """A traced array: a Var of a Recording and the operations f applies to it."""

    __slots__ = ("recording", "node", "base", "index", "key", "views", "stale")
    __array_priority__ = 1000
    described_as = "traced arrays"

    def __init__(self, recording, node):
        self.recording = recording
        self.node = node
        self.base = None       # the array this one is a NumPy view of (never itself a view)
        self.index = None      # a view's elements: their flat positions in base
        self.views = []        # the views made of this one
        self.stale = False     # a view whose base was written since it last read it
        self.key = None        # a view by basic indexing of its base: that key

    def check(self):
        """Bring a view up to date with its base (NumPy's views see writes)."""
        if self.stale:
            self.stale = False
            self.node = self.recording.gather(self.base.node, self.index).node

    @property
    def value(self):
        self.check()
        return self.recording.values[self.node]

    def view(self, result, index, key=None):
        """`result`, whose elements are this array's at the flat positions `index`, as the
        view NumPy makes (a slice, reshape, transpose): it follows writes both ways. `key`:
        the basic index that made it, kept where this array is no view itself (a write
        through the view then slices rather than scatters)."""
        root = self if self.base is None else self.base
        if self.base is not None:
            index = self.index.reshape(-1)[index]
        view = Tracer(self.recording, result.node)
        view.base, view.index = root, np.asarray(index, np.int64)
        view.key = key if self.base is None else None
        root.views.append(view)
        return view

    def _write(self, var):
        """This array's elements are now those of `var` (broadcast to its shape)."""
        if self.base is not None:
            self.base._write_at(self.index, var, self.key)
            return
        if var.shape != self.node.shape:
            var = self.recording.broadcast(var, self.node.shape).node
        self._written(var)

    def _written(self, var):
        self.node = var
        for view in self.views:
            view.stale = True

    def _write_at(self, index, var, key=None):
        """Write var (broadcast to index's shape) at the flat positions `index`; the last
        write to a place wins, as in NumPy. `key`: the basic index of this array that
        `index` stands for, if any (the index maps are then made by slicing)."""
        rec = self.recording
        positions = np.asarray(index).reshape(-1)
        size = self.node.size
        var = rec.broadcast(var, np.shape(index)).node
        if var.dtype != rec.tape.dtype:
            var = rec.emit("copy", (var,), var.shape).node
        if positions.size == size and np.array_equal(positions, rec.positions((size,))):
            self._written(rec.reshape(var, self.node.shape).node)     # every element, in order
            return
        shape = self.node.shape    # (the written array keeps its shape)
        source = np.full(shape, -1, np.int64)
        unwritten = rec.positions(shape).copy()
        if key is not None:
            source[key] = rec.positions(np.shape(index))
            unwritten[key] = -1
        else:
            source.reshape(-1)[positions] = rec.positions((positions.size,))
            unwritten.reshape(-1)[positions] = -1
        kept = rec.gather(self.node, unwritten.reshape(shape))
        written = rec.gather(var, source.reshape(shape))
        self._written(rec.elementwise("binary", (kept, written), op=_OP["add"]).node)

    # -- what f may ask of an array -------------------------------------------------------
    @property
    def shape(self):
        return self.node.shape

    @property
    def ndim(self):
        return len(self.node.shape)

    @property
    def size(self):
        return self.node.size

    @property
    def dtype(self):
        return self.node.dtype


    def __repr__(self):
        return f"Tracer({self.node!r}, value={self.value!r})"

    __hash__ = None  # type: ignore[assignment]

    # -- values read by Python: guards ---------------------------------------------------
    def __cyad_value__(self, where="a derivative rule read the values"):
        self.check()
        return self.recording.guard(self.node, where)

    def _number(self, what):
        """A value f reads as a Python number: guarded, and refused where it is a float,
        as a Python float would carry on without its derivative (as the dual engine's
        does); a bool or an int is piecewise constant, its derivative 0 where it holds."""
        if self.dtype != bool:
            raise _hints.conversion_refused(
                f"a traced float value cannot become a Python number through {what}",
                _hints.conversion_hint("traced arrays") + " (A comparison or int() may steer "
                "control flow.)")
        return self.__cyad_value__(f"{what} of a traced value")

    # bool() and int() of a float value guard what Python gets (whether it is 0, its whole
    # part), not the value itself: the tape holds wherever they stay the same
    def __bool__(self):
        decided = self if self.dtype == bool else np.not_equal(self, 0)
        return bool(decided.__cyad_value__("bool() of a traced value (an if or while on it)"))

    def __float__(self):
        return float(self._number("float()"))

    def __int__(self):
        whole = self if self.dtype == bool else np.trunc(self)
        return int(whole.__cyad_value__("int() of a traced value"))

    def __index__(self):
        return operator.index(self.__cyad_value__("a traced value used as an index").item())

    def __complex__(self):
        return complex(self._number("complex()"))

    def __array__(self, dtype=None, copy=None):
        raise _hints.conversion_refused(
            "a traced array cannot become a plain ndarray", _hints.conversion_hint("traced arrays"))

    # -- NumPy protocols --------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if _complex.is_complex_among(inputs, kwargs):   # (in the parts: cyad._complex)
            return _complex.ufunc_call(ufunc, method, inputs, kwargs)
        if method != "__call__":   # reduce, accumulate, outer, at: in the primitive table's terms
            return ufunc_methods.call(ufunc, method, inputs, kwargs)
        out = kwargs.pop("out", None)
        options = {k: v for k, v in kwargs.items() if k not in ("casting", "order", "subok")}
        if options and ufunc not in TABLE:   # (a table ufunc's own parameters: vecdot's axis)
            raise TypeError(f"cyad: {_rule_table.ufunc_name(ufunc)} with these arguments is "
                            "not supported by engine='tape'")
        rec = latest(self.recording, inputs)
        result = ufunc_call(rec, ufunc, inputs, options)
        return result if out is None else _into(rec, out, result, _rule_table.ufunc_name(ufunc))

    def __array_function__(self, func, types, args, kwargs):
        if _complex.is_complex_among(args, kwargs):
            return _complex.function_call(func, args, kwargs)
        rec = latest(self.recording, args, kwargs.values())
        if kwargs.get("out") is None:
            return function_call(rec, func, args, kwargs)
        # out= of a NumPy function (np.sum, np.dot, np.cumsum, ...): its result written there
        kwargs = dict(kwargs)
        out = kwargs.pop("out")
        return _into(rec, out, function_call(rec, func, args, kwargs), _hints.function_name(func))

    # -- indexing ----------------------------------------------------------------------------
    def __getitem__(self, key):
        self.check()
        index, basic = _index_map(self, key)
        result = self.recording.gather(self.node, index)
        return self.view(result, index, key) if basic else result

    def __setitem__(self, key, value):
        self.check()
        index, basic = _index_map(self, key)
        root, positions = (self, index) if self.base is None else \
            (self.base, self.index.reshape(-1)[index])
        if isinstance(value, Tracer) and value.base is root and \
                value.index.shape == positions.shape and np.array_equal(value.index, positions):
            # y[k] -= v (y[k] made a view, its in-place operator wrote through it): the
            # view holds root's elements at these positions, so writing it back is nothing
            return
        root._write_at(positions, self.recording.var_of(
            stacked(value, "a value assigned to an array")),
            key if self.base is None and basic else None)

    # -- Python ints, piecewise constant: guarded, as int() is (arithmetic: ArrayMethods) ------
    def __round__(self, ndigits=None):
        if ndigits is None:
            return int(np.rint(self))
        return np.round(self, ndigits)

    def __floor__(self):
        return int(np.floor(self))

    def __ceil__(self):
        return int(np.ceil(self))

    def __trunc__(self):
        return int(self)

    # comparisons: boolean tracers (masks recomputed on every replay)
    def __lt__(self, other):
        return np.less(self, other)

    def __le__(self, other):
        return np.less_equal(self, other)

    def __gt__(self, other):
        return np.greater(self, other)

    def __ge__(self, other):
        return np.greater_equal(self, other)

    def __eq__(self, other):
        return np.equal(self, other)

    def __ne__(self, other):
        return np.not_equal(self, other)

    def __and__(self, other):
        return np.logical_and(self, other)

    def __or__(self, other):
        return np.logical_or(self, other)

    def __invert__(self):
        if self.dtype != bool:
            raise TypeError("cyad: ~ of a float array")
        return np.logical_not(self)

    # -- ndarray methods that read values (the rest: ArrayMethods) ------------------------------
    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """To a float dtype: the array (the tape computes in x's dtype). To an integer or
        bool dtype: the values converted (guarded: a constant, as int() is)."""
        dtype = np.dtype(dtype)
        if dtype.kind == "b":
            return np.not_equal(self, 0)
        if dtype.kind in "iu":
            whole = self if self.dtype == bool else np.trunc(self)
            return whole.__cyad_value__("astype() of a traced value to an integer "
                                        "type").astype(dtype)
        if dtype.kind == "c":
            return _complex.cast(self, dtype)
        if dtype not in (np.float32, np.float64):
            raise TypeError(f"cyad: traced arrays hold float64 or float32, not {dtype}")
        return np.copy(self) if copy else self

    def item(self):
        return self._number("item()").item()

    def tolist(self):
        return self._number("tolist()").tolist()


def latest(rec, *groups):
    """The latest recording among rec (None: no recording) and those of the tracers in
    `groups` (sequences of operands, and the lists and tuples among them): the one an
    operation is recorded on."""
    for group in groups:
        for a in group:
            if isinstance(a, Tracer):
                if rec is None or a.recording.level > rec.level:
                    rec = a.recording
            elif isinstance(a, (list, tuple)):
                rec = latest(rec, a)
    return rec


def _into(rec, out, result, name):
    """out= of a NumPy ufunc or function: the result written into the traced array out."""
    target = out[0] if isinstance(out, tuple) else out
    if not isinstance(target, Tracer):
        raise TypeError(f"cyad: {name} of traced arrays into a plain ndarray would lose the "
                        "derivative; write into a traced array")
    target._write(target.recording.var_of(result))
    return target


# -- ufuncs ------------------------------------------------------------------------------------

def ufunc_call(rec, ufunc, inputs, options=None):
    """A NumPy ufunc on traced operands: a rule-table or comparison instruction (its
    name, for messages and scipy.special's table entries, looked up only there); `options`
    are a primitive-table ufunc's own parameters (np.vecdot's axis=)."""
    if ufunc in COMPARISONS:
        if len(inputs) != COMPARISONS[ufunc]:
            raise TypeError(f"{_rule_table.ufunc_name(ufunc)} takes {COMPARISONS[ufunc]} operands")
        return rec.elementwise("compare", inputs, bool, ufunc=ufunc)
    op = _UNARY.get(ufunc)
    if op is None and _UNARY.refresh():     # scipy.special's, once SciPy is imported
        op = _UNARY.get(ufunc)
    if op is not None and len(inputs) == 1:
        return rec.elementwise("unary", inputs, op=op)
    op = _BINARY.get(ufunc)
    if op is None and _BINARY.refresh():
        op = _BINARY.get(ufunc)
    if op is not None and len(inputs) == 2:
        if op == _POWER:
            a, b = inputs
            if not _varies(b) and np.ndim(b) == 0 and b == 2:
                return rec.elementwise("unary", (a,), op=_SQUARE)   # NumPy's x**2 too
            if not _varies(b):
                op = _OP["power_const_exponent"]
            elif not _varies(a):
                op = _OP["power_const_base"]
        elif _rule_table.BINARY_RULES[op].differentiable == "b" and _varies(inputs[0]):
            raise TypeError(f"cyad: {_rule_table.ufunc_name(ufunc)} is differentiable in its "
                            "second argument only; its first must be a constant, not a traced "
                            "array")
        return rec.elementwise("binary", inputs, op=op)
    if ufunc in TABLE:   # a ufunc of the primitive table: np.matmul, np.vecdot, ...
        return function_call(rec, ufunc, inputs, options or {})
    name = _rule_table.ufunc_name(ufunc)
    if name in NAMED:    # scipy.special.betainc, ...
        return table_call(rec, NAMED[name], ufunc, inputs, {})
    raise TypeError(f"cyad: {name} is not supported by engine='tape' (its derivative is not "
                    "in cyad's rule table)." + _hints.users_line())


def _varies(x):
    # whether x carries a derivative: a tracer, or a dual of a differentiation around a
    # nested one (an input of its recording)
    return isinstance(x, (Tracer, Dual))


# -- NumPy functions ----------------------------------------------------------------------------

def function_call(rec, func, args, kwargs):
    """A NumPy function on traced operands, through the primitive table (a custom
    function through the entry it carries)."""
    special = _SPECIAL.get(func)
    if special is not None:
        return special(rec, *args, **kwargs)
    entry = entry_of(func)
    if entry is None:
        raise TypeError(f"cyad: {_hints.function_name(func)} is not supported by "
                        "engine='tape'; cyad.custom_derivative gives it rules of yours."
                        + _hints.users_line())
    return table_call(rec, entry, func, args, kwargs)


def table_call(rec, entry, func, args, kwargs):
    """func, an entry of the primitive table, on traced operands."""
    if entry.kind == "composition":
        return entry.impl(*args, **kwargs)
    if entry.kind == "constant":
        return _constant(rec, entry, args, kwargs)
    operands, params = entry.bind(*args, **kwargs)
    if entry.kind == "linear":
        if entry.name in _VIEWS and isinstance(operands[0], Tracer):
            index = _selection(entry, [rec.var_of(operands[0])], params)
            if index is not None:
                result = rec.gather(operands[0].node, index[0])
                if not _numpy_gives_a_view(entry, operands[0], params):
                    return result
                return operands[0].view(result, index[0])
        return _linear(rec, entry, operands, params)
    if entry.name == "matmul":
        return rec.matmul(*operands)
    return rec.python(entry, operands, params,
                      _hints.function_name(func) if func in TABLE else entry.name)


def _constant(rec, entry, args, kwargs):
    """A table function of the values alone. A shape query is static; rounding (a float
    result) is a python instruction without derivative; positions, orders and counts are
    read off the values and checked by a guard on every replay."""
    traced = [i for i, a in enumerate(args) if isinstance(a, Tracer)]
    values = [a.value if isinstance(a, Tracer) else a for a in args]
    result = entry.impl(*values, **kwargs)
    if not entry.reads_values or not traced:
        return result
    operands = [rec.var_of(args[i]) for i in traced]
    where = f"numpy.{entry.name} of traced values"

    def run(*traced_values):
        full = list(values)
        for i, v in zip(traced, traced_values):
            full[i] = v
        return entry.impl(*full, **kwargs)
    array = np.asarray(result)
    out = rec.emit("python", operands, array.shape, function=run, entry=entry, params={},
                   where=where)
    if array.dtype.kind == "f":
        return out
    rec.guard(out.node, where)
    return result


def _numpy_gives_a_view(entry, tracer, params):
    """Whether NumPy's entry.impl returns a view of the array `tracer` stands for: run on
    a stand-in whose elements lie in a buffer where the tracer's lie in its base (a view's
    positions there are affine in its indices, by NumPy's views)."""
    positions = tracer.index if tracer.base is not None else \
        np.arange(tracer.size).reshape(tracer.shape)
    if positions.size == 0:
        return True
    corner = positions[(0,) * positions.ndim]
    strides = [int(positions[(0,) * j + (1,) + (0,) * (positions.ndim - j - 1)] - corner)
               if n > 1 else 0 for j, n in enumerate(positions.shape)]
    buffer = np.zeros(max(int(positions.max()) + 1, 1), np.int8)
    stand_in = np.ndarray(positions.shape, np.int8, buffer, int(corner), strides)
    return np.shares_memory(entry.impl(stand_in, **params), buffer)


def _linear(rec, entry, operands, params):
    vars_ = [rec.var_of(x) for x in operands]
    if entry.name == "sum" and len(vars_) == 1:
        return rec.sum(vars_[0], params["axes"], params["keepdims"])
    named = getattr(entry, "recorded_as", None)
    if named is not None:   # (sums of products, scipy.sparse's: no selection looked for)
        return rec.python(entry, operands, params, named)
    selection = _selection(entry, vars_, params)
    if selection is None:
        return rec.python(entry, operands, params, f"numpy.{entry.name}")
    result = None
    for var, index in zip(vars_, selection):
        if np.any(index >= 0):
            part = rec.gather(var, index)
            result = part if result is None else \
                rec.elementwise("binary", (result, part), op=_OP["add"])
    if result is None:
        result = rec.emit("zeros", (), selection[0].shape)
    return result


def _selection(entry, vars_, params):
    """Where each element of the linear entry's result comes from, if it only selects
    (and zero-fills): one index array per operand (-1 where another operand or zero),
    else None. Found by running the entry twice on random codes, one per element: a
    selected element is its code, a filled one 0, anything else (a sum, a difference)
    neither, and both runs must agree."""
    if entry.name in _VIEWS:
        # these only move elements: run on the positions themselves, they give the index
        try:
            positions = np.arange(vars_[0].size).reshape(vars_[0].shape)
            return [np.asarray(entry.impl(positions, **params), np.int64)]
        except (TypeError, ValueError):
            return None
    sizes = [v.size for v in vars_]
    starts = np.cumsum([0] + sizes)
    total = int(starts[-1])
    found = None
    for seed in (1, 2):
        codes = np.random.default_rng(seed).uniform(1.0, 2.0, total)
        pieces = [codes[s0:s0 + v.size].reshape(v.shape) for s0, v in zip(starts, vars_)]
        try:
            result = np.asarray(entry.impl(*pieces, **params), np.float64)
        except (TypeError, ValueError):
            return None
        order = np.argsort(codes)
        ordered = codes[order]
        place = np.clip(np.searchsorted(ordered, result), 0, max(total - 1, 0))
        hit = ordered[place] == result if total else np.zeros(result.shape, bool)
        if np.any(~hit & (result != 0)):
            return None
        source = np.where(hit, order[place] if total else 0, -1)
        if found is not None and not np.array_equal(found, source):
            return None
        found = source
    return [np.where((found >= s0) & (found < s0 + s), found - s0, -1)
            for s0, s in zip(starts, sizes)]


def _where(rec, condition, x=None, y=None):
    """np.where: a select instruction for a traced condition (recomputed on every replay);
    for a fixed one, the table's linear entry."""
    if x is None and y is None:
        return np.nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    if isinstance(condition, Tracer):
        return rec.elementwise("select", (condition, x, y))
    operands, params = TABLE[np.where].bind(condition, x, y)
    return _linear(rec, TABLE[np.where], operands, params)


def _like(rec, make):
    def like(a, dtype=None, *args, shape=None, **kwargs):
        value = a.value if isinstance(a, Tracer) else a
        result = make(value, *args, dtype=dtype, shape=shape, **kwargs)
        if result.dtype.kind in "biu":
            return result
        if result.dtype.kind == "c":
            return _complex.from_values(result)
        return Tracer(rec, rec.const(result))
    return like


def _full_like(rec, a, fill_value, dtype=None, *, shape=None):
    value = a.value if isinstance(a, Tracer) else a
    template = np.zeros_like(value, dtype, shape=shape)
    if isinstance(fill_value, Tracer):
        filled = rec.broadcast(rec.var_of(fill_value), template.shape)
        # (of a complex dtype: a complex array, cyad._complex, the fill its real part)
        return _complex.cast(filled, template.dtype) if template.dtype.kind == "c" else filled
    if template.dtype.kind == "c":
        return _complex.from_values(np.full_like(template, fill_value))
    return Tracer(rec, rec.const(np.full_like(template, fill_value)))


def _copyto(rec, dst, src, casting="same_kind", where=True):
    if not isinstance(dst, Tracer):
        raise TypeError("cyad: numpy.copyto of a traced array into a plain ndarray would "
                        "lose the derivative; copy into a traced array (np.zeros_like(x))")
    if isinstance(where, bool) and where:
        dst[...] = src
    else:
        dst._write(rec.elementwise("select", (where, src, dst)).node)


def _zeros_like(rec, a, dtype=None, *, shape=None):
    return _like(rec, np.zeros_like)(a, dtype, shape=shape)


def _ones_like(rec, a, dtype=None, *, shape=None):
    return _like(rec, np.ones_like)(a, dtype, shape=shape)


def _empty_like(rec, a, dtype=None, *, shape=None):
    return _like(rec, np.zeros_like)(a, dtype, shape=shape)


_SPECIAL = {
    np.where: _where,
    np.zeros_like: _zeros_like,
    np.ones_like: _ones_like,
    np.empty_like: _empty_like,
    np.full_like: _full_like,
    np.copyto: _copyto,
}


# -- indexing ------------------------------------------------------------------------------------

def _index_map(tracer, key):
    """The flat positions of tracer[key], shaped like the result, and whether NumPy would
    give a view (basic indexing). A boolean mask or index made of traced values is read
    (and guarded)."""
    keys = key if isinstance(key, tuple) else (key,)
    basic = True
    plain = []
    for k in keys:
        if isinstance(k, Tracer):
            k = k.__cyad_value__("an index or mask made of traced values")
        if isinstance(k, (np.ndarray, list)):
            basic = False
        plain.append(k)
    index = tracer.recording.positions(tracer.node.shape)
    return np.asarray(index[tuple(plain) if isinstance(key, tuple) else plain[0]]), basic


# -- tracing f ------------------------------------------------------------------------------------

def trace(f, x, dtype, y=None, nested=False, leaves=()):
    """Record f at x (f(y, x) when y is given: y's incoming values are an input too), on a
    `nested` recording for a differentiation inside another (the module's docstring). While
    f runs, a cyad operator it calls nests (cyad._dual.array.differentiating). `leaves`: the
    arrays of f's other arguments (cyad/_arguments/bound.pyx), inputs after x and y, which
    f takes after them: f(x, *leaves), f(y, x, *leaves).

    Returns the Recording and the output tracer (f's result; for f(y, x), the tracer of
    y after f ran).
    """
    rec = Recording(dtype, nested)
    xt = rec.input(x)
    yt = None if y is None else rec.input(y)
    others = [rec.input(leaf) for leaf in leaves]
    enter()
    try:
        if y is None:
            result = stacked(f(xt, *others))
            if isinstance(result, Dual):   # an outer differentiation's array (a free input)
                result = Tracer(rec, rec.lifted(result))
            elif not isinstance(result, Tracer):
                result = constant_result(result)   # a constant: checked as the dual engine does
        else:
            returned = f(yt, xt, *others)
            if returned is not None and returned is not yt:
                raise _hints.returned_under_y(returned)
            result = yt
    except ValueError as error:
        # NumPy storing a traced number into a plain ndarray (buf[0] = x[0]) asks float()
        # of it, and reports the refusal as "setting an array element with a sequence"
        if isinstance(error.__cause__, TypeError) and str(error.__cause__).startswith("cyad:"):
            raise error.__cause__ from None
        raise
    finally:
        leave()
    return rec, result
