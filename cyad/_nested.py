"""Operators called inside a function that cyad is differentiating: derivatives of any order.

Such a call (``derivative(lambda y: x * y, 1.0)`` inside f, x one of f's arrays) computes
its derivative as a program, JAX's way, so that the differentiations around it
differentiate that program in turn, to any depth and on any engine:

1. its f is traced at x's values on a `nested` recording (cyad/_tape/trace.py): a level
   above those around it, so that no two differentiations' perturbations mix; an array of
   a differentiation around it that f reads (a dual array, a tracer of an earlier
   recording) becomes an input of the recording, a `free` one;
2. the operator's derivative tape is derived from it (cyad/_tape/transform.py) with
   composed partials (cyad/_rules/derivatives.py): primal operations only, which
   differentiate again;
3. that program is evaluated on the arrays it was given, free ones included:
   - on tracers of a recording (a tape around it, or a nested call around it): its
     instructions are recorded there (inlined), so a tape records the inner derivative as
     instructions; a prepared tape replays it compiled;
   - on dual arrays (the dual engine around it): their partials are the tangents of a
     forward transform of the program (jvp; jvp of jvp for the second-order duals of
     hessian, hvp and second_derivative), evaluated in NumPy, the results duals again;
   - on plain arrays: evaluated in NumPy.

Every nested call traces its f anew (it allocates; `prep=` is for top-level calls), and
its engine= chooses nothing: the program is the same. The cost grows with the depth as
the derivative programs do (each level differentiates the one inside it).
"""
import numpy as np

from cyad import _hints
from cyad._core import input_dtype
from cyad._dual.array import Dual, mixed_differentiations, primal, tagged_dual
from cyad._dual.layout import NestedLanes
from cyad._tape import recipes as _tape_recipes
from cyad._tape.program import run, warn_as_numpy
from cyad._tape.trace import Tracer, latest, trace
from cyad._tape.transform import jvp
from cyad._wrapper import FunctionWrapper


def _python_callable(f):
    # the Python f of a FunctionWrapper: its callable, or the one cyad.record traced (a
    # recorded function nests as that f)
    if isinstance(f, FunctionWrapper):
        if f.tape is not None:
            return f.tape.of_x
        if f.callable is None:
            raise TypeError("cyad: a C function cannot be differentiated inside another "
                            "differentiation (cyad cannot see into it); differentiate it at "
                            "the top level, or give it a custom rule (cyad.custom_derivative)")
        return f.callable
    return f


def _engine(a):
    return isinstance(a, (Dual, Tracer))


def _dtype(x):
    return input_dtype(np.asarray(primal(x)) if not isinstance(x, Tracer) else x.value)


def _values(a, dtype):
    # a's numbers, a copy in dtype (f may write into its input)
    return np.array(a.value if isinstance(a, Tracer) else primal(a), dtype=dtype)


class _Recorded:
    """f traced at x (and y) on a nested recording: its tape, whose output is f's value, and
    the arrays its inputs stand for (x, y, then the free ones)."""

    def __init__(self, f, x, y):
        self.dtype = _dtype(x)
        self.two_argument = y is not None
        self.x_shape = np.shape(primal(x)) if not isinstance(x, Tracer) else x.shape
        yv = None if y is None else _values(y, self.dtype)
        rec, result = trace(_python_callable(f), _values(x, self.dtype), self.dtype, yv,
                            nested=True)
        out = rec.var_of(result)
        if out.dtype == bool:
            raise TypeError("cyad: f returned booleans, which carry no derivative")
        self.tape = rec.tape
        self.tape.outputs = [out]
        self.captured = rec.captured
        self.arguments = [x] + ([] if y is None else [y]) + [a for a, _ in rec.free]
        self.values = [rec.values[v] for v in self.tape.inputs]
        self.names = [f"input{i}" for i in range(len(self.values))]

    @property
    def out_shape(self):
        return self.tape.outputs[0].shape

    def forward(self, lanes, tangents):
        """f's value and its tangents along `lanes` directions of x (tangents: an array or
        engine array of shape (lanes,) + x's shape)."""
        derived = _tape_recipes.forward(self.tape, self.values, self.names, lanes,
                                        composed=True)
        return self.evaluate(derived.tape, [tangents])

    def reverse(self, lanes=None, cotangents=None):
        """f's value and the cotangent of x: of f's scalar value (lanes None), or of each of
        `lanes` cotangents (shape (lanes,) + f's shape)."""
        if lanes is None:
            derived = _tape_recipes.gradient(self.tape, self.values, self.names,
                                             composed=True)
            return self.evaluate(derived.tape, [])
        derived = _tape_recipes.reverse(self.tape, self.values, self.names, lanes,
                                        composed=True)
        return self.evaluate(derived.tape, [cotangents])

    def forward_over_reverse(self, lanes, tangents):
        """f's value, its gradient and the hvps along `lanes` tangents of x."""
        derived = _tape_recipes.forward_over_reverse(self.tape, self.values, self.names,
                                                     lanes, composed=True)
        return self.evaluate(derived.tape, [tangents])

    def forward_over_forward(self):
        """f's value, its first and its second derivative along x (a scalar)."""
        ones = np.ones((1,) + self.x_shape, self.dtype)
        derived = _tape_recipes.forward_over_forward(self.tape, self.values, self.names,
                                                     composed=True)
        return self.evaluate(derived.tape, [ones, ones])

    def evaluate(self, tape, extra):
        """tape's outputs at the recorded arrays followed by `extra` (its further inputs):
        recorded on the latest recording among tracers, duals of the differentiation around,
        or plain arrays (the module's docstring)."""
        arguments = self.arguments + list(extra)
        recording = latest(None, arguments)
        if recording is not None:
            return _inline(tape, arguments, recording, self.captured)
        warn_as_numpy(self.tape, self.values)   # (f's values: NumPy's warnings, as in f)
        values = [_values(a, tape.dtype) for a in arguments]
        duals = [i for i, a in enumerate(arguments) if isinstance(a, Dual)]
        if duals:
            return _on_duals(tape, values, [arguments[i] for i in duals], duals)
        return run(tape, values)


def _inline(tape, arguments, rec, captured):
    """tape's instructions recorded on rec, its inputs the arguments (a dual among them
    lifted into rec, a nested recording), its constants rec's; its outputs as tracers.
    The instructions of f's value keep the np.errstate f gave them, the derivatives' are
    silent (rec's tape warns as NumPy would: a derivative warns nothing)."""
    var = {}
    for v, a in zip(tape.inputs, arguments):
        var[v] = rec.var_of(a) if _engine(a) else _constant(rec, np.asarray(a), v)
    for v, value in tape.consts.items():
        var[v] = _constant(rec, value, v)
        if v in tape.casts:
            rec.tape.casts[var[v]] = tape.casts[v]
    rec.captured.extend(captured)     # (the arrays the inner f closes over, compared by a tape)
    value = _writers_of(tape, tape.outputs[0])
    for instr in tape.instrs:
        args = [var[a] for a in instr.args]
        errstate = tape.errstates.get(instr, {}) if instr in value else {"all": "ignore"}
        with np.errstate(**errstate):
            if instr.kind == "guard":
                rec.tape.guard(args[0], instr.params["expected"], instr.params["where"])
            elif len(instr.outs) == 1:
                out = instr.outs[0]
                var[out] = rec.emit_var(instr.kind, args, out.shape, _kind_of(out),
                                        **instr.params)
            else:
                for old, new in zip(instr.outs, rec.emit_many(instr.kind, args,
                                                              [v.shape for v in instr.outs],
                                                              **instr.params)):
                    var[old] = new.node
    return [Tracer(rec, var[v]) for v in tape.outputs]


def _writers_of(tape, output):
    """The instructions that `output` depends on."""
    writer = {v: instr for instr in tape.instrs for v in instr.outs}
    needed, pending = set(), [output]
    while pending:
        instr = writer.get(pending.pop())
        if instr is not None and instr not in needed:
            needed.add(instr)
            pending.extend(instr.args)
    return needed


def _kind_of(v):
    # a Var's dtype on another recording: bool stays, a number takes that tape's dtype
    return bool if v.dtype == bool else None


def _constant(rec, value, v):
    new = rec.tape.const(value, _kind_of(v) or rec.tape.dtype)
    rec.values[new] = rec.tape.consts[new]
    return new


def _on_duals(tape, values, duals, positions):
    """tape's outputs, as duals, at the values of its inputs, those at `positions` the
    `duals` (of one differentiation): their partials are the lanes of a forward transform
    of the tape (of two, for the second-order duals of a nested tag)."""
    tag = duals[0].tag
    if any(d.tag is not tag for d in duals):
        raise mixed_differentiations()
    names = [f"input{i}" for i in range(len(values))]
    n = len(tape.outputs)
    dtype = duals[0].dtype
    if not tag.is_nested:
        forward, _ = jvp(tape, values, tag.width, positions, names)
        tangents = [np.moveaxis(np.asarray(d.partials, tape.dtype), -1, 0) for d in duals]
        outs = run(forward.tape, values + tangents)
        return [tagged_dual(np.asarray(outs[k], dtype), np.moveaxis(outs[n + k], 0, -1)
                            .astype(dtype), tag) for k in range(n)]
    layout = NestedLanes(tag.outer.width, tag.inner.width)
    split = [layout.split(np.asarray(d.partials, tape.dtype)) for d in duals]
    inner, _ = jvp(tape, values, layout.inner, positions, names)
    b = [np.moveaxis(parts[1], -1, 0) for parts in split]
    outer_wrt = list(positions) + [len(values) + i for i in range(len(duals))]
    outer, _ = jvp(inner.tape, values + b, layout.outer, outer_wrt,
                   names + [f"inner{i}" for i in range(len(duals))])
    a = [np.moveaxis(parts[0], -1, 0) for parts in split]
    c = [np.moveaxis(parts[2], (-1, -2), (0, 1)) for parts in split]
    outs = run(outer.tape, values + b + a + c)
    results = []
    for k in range(n):
        value = np.asarray(outs[k], dtype)
        partials = np.zeros(value.shape + (tag.width,), dtype)
        pa, pb, pc = layout.split(partials)
        pb[...] = np.moveaxis(outs[n + k], 0, -1)          # the inner tangent
        pa[...] = np.moveaxis(outs[2 * n + k], 0, -1)      # the outer one
        pc[...] = np.moveaxis(outs[3 * n + k], (0, 1), (-1, -2))  # the cross terms
        results.append(tagged_dual(value, partials, tag))
    return results


# -- what a call returns ---------------------------------------------------------------------------

def _result(r):
    """A result as a caller gets it: an engine's array as it is, a plain one as an ndarray
    (a float when 0-d)."""
    if _engine(r):
        return r
    r = np.asarray(r)
    return float(r) if r.ndim == 0 else r


def _deliver(result, out):
    """The result, written into `out` when one is given."""
    if out is None:
        return result
    if _engine(out):
        out[...] = result
    elif _engine(result):
        raise TypeError("cyad: this result depends on the differentiation around this call: "
                        "out= must be an array of it (a dual or traced array), not a plain "
                        "ndarray")
    else:
        np.copyto(out, result)
    return out


def _write_back(value, y):
    # f's final y into the caller's y (the two-argument form)
    if _engine(value) and not _engine(y):
        raise TypeError("cyad: f's value depends on the differentiation around this call, so "
                        "y must be an array of it (a dual or traced array), not a plain "
                        "ndarray")
    y[...] = value


def _value(value, y, value_out):
    # f's value as the value_and_* forms give it: y itself in the two-argument form
    if y is not None:
        _write_back(value, y)
        return y
    return _deliver(_result(value), value_out)


def _batch(dx, shape, dtype, what, of):
    """A tangent (cotangent) or a tuple of them, checked against `shape` (that of `of`),
    stacked: the lanes of a derivative program's input."""
    batch = isinstance(dx, tuple)
    items = dx if batch else (dx,)
    for t in items:
        if np.shape(t) != shape:
            raise ValueError(f"cyad: a {what} has shape {np.shape(t)}, but {of} has shape "
                             f"{shape}")
    stacked = np.stack([t if _engine(t) else np.asarray(t, dtype) for t in items])
    return batch, len(items), stacked


def _split(results, batch, out):
    results = [_result(r) for r in results]
    if out is not None:
        results = [_deliver(r, o) for r, o in zip(results, out if batch else (out,))]
    return tuple(results) if batch else results[0]


def _basis(recorded):
    n = int(np.prod(recorded.x_shape))
    return n, np.eye(n, dtype=recorded.dtype).reshape((n,) + recorded.x_shape)


def pushforward(f, x, dx, y, out, with_value, scalar_input=False):
    """J(x) @ dx (a tangent or a tuple of them), and f(x) if with_value."""
    recorded = _Recorded(f, x, y)
    if scalar_input and recorded.x_shape != ():
        raise ValueError(f"cyad: derivative takes a scalar x, not an array of shape "
                         f"{recorded.x_shape}")
    batch, k, tangents = _batch(dx, recorded.x_shape, recorded.dtype, "tangent", "x")
    value, derivatives = recorded.forward(k, tangents)
    value_out, out = out if with_value and out is not None else (None, out)
    results = _split([derivatives[i] for i in range(k)], batch, out)
    if with_value:
        return _value(value, y, value_out), results
    if y is not None:
        _write_back(value, y)
    return results


def jacobian(f, x, y, out, with_value, scalar_output):
    """The Jacobian of f at x (its gradient, by reverse mode, if scalar_output), and f(x) if
    with_value."""
    recorded = _Recorded(f, x, y)
    if scalar_output:
        if recorded.out_shape != ():
            raise _hints.not_scalar("gradient", recorded.out_shape, y is not None,
                                    "; use jacobian")
        value, result = recorded.reverse()
    else:
        n, basis = _basis(recorded)
        value, columns = recorded.forward(n, basis)
        result = np.reshape(np.moveaxis(columns, 0, -1), recorded.out_shape + recorded.x_shape)
    value_out, out = out if with_value and out is not None else (None, out)
    result = _deliver(_result(result), out)
    if with_value:
        return _value(value, y, value_out), result
    if y is not None:
        _write_back(value, y)
    return result


def pullback(f, x, dy, y, out, with_value):
    """dy @ J(x) (a cotangent or a tuple of them), and f(x) if with_value."""
    recorded = _Recorded(f, x, y)
    batch, k, cotangents = _batch(dy, recorded.out_shape, recorded.dtype, "cotangent",
                                    "f's output")
    value, pulled = recorded.reverse(k, cotangents)
    value_out, out = out if with_value and out is not None else (None, out)
    results = _split([pulled[i] for i in range(k)], batch, out)
    if with_value:
        return _value(value, y, value_out), results
    if y is not None:
        _write_back(value, y)
    return results


def _scalar(recorded, name):
    if recorded.out_shape != ():
        raise _hints.not_scalar(name, recorded.out_shape, recorded.two_argument)


def hvp(f, x, v, y, out, with_gradient):
    """H(x) @ v (a tangent or a tuple of them), and the gradient first if with_gradient."""
    recorded = _Recorded(f, x, y)
    _scalar(recorded, "hvp")
    batch, k, tangents = _batch(v, recorded.x_shape, recorded.dtype, "tangent", "x")
    value, gradient, products = recorded.forward_over_reverse(k, tangents)
    if y is not None:
        _write_back(value, y)
    gradient_out, out = out if with_gradient and out is not None else (None, out)
    results = _split([products[i] for i in range(k)], batch, out)
    return (_deliver(_result(gradient), gradient_out), results) if with_gradient else results


def hessian(f, x, y, out, with_value):
    """The Hessian of a scalar-valued f, and its value and gradient first if with_value."""
    recorded = _Recorded(f, x, y)
    _scalar(recorded, "hessian")
    n, basis = _basis(recorded)
    value, gradient, rows = recorded.forward_over_reverse(n, basis)
    result = _result(np.reshape(rows, recorded.x_shape + recorded.x_shape))
    if not with_value:
        if y is not None:
            _write_back(value, y)
        return _deliver(result, out)
    value_out, gradient_out, out = (None, None, None) if out is None else out
    return (_value(value, y, value_out), _deliver(_result(gradient), gradient_out),
            _deliver(result, out))


def second_derivative(f, x, y, out, with_value):
    """d2f/dx2 at a scalar x, and f(x) and df/dx first if with_value."""
    recorded = _Recorded(f, x, y)
    if recorded.x_shape != ():
        raise ValueError(f"cyad: second_derivative takes a scalar x, not an array of shape "
                         f"{recorded.x_shape}")
    value, first, second = recorded.forward_over_forward()
    result = _result(second[0, 0])
    if not with_value:
        if y is not None:
            _write_back(value, y)
        return _deliver(result, out)
    value_out, first_out, out = (None, None, None) if out is None else out
    return (_value(value, y, value_out), _deliver(_result(first[0]), first_out),
            _deliver(result, out))
