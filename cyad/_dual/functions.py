"""NumPy functions on dual arrays (the `__array_function__` table): the dual engine.

The functions and their derivatives are described once, for every engine, in the
primitive table (`cyad._primitives`); this module interprets it for dual arrays,
whose partials carry a trailing axis of `width` derivative lanes:

- a composition runs as it is: its NumPy calls come back here;
- a constant (shape queries, rounding) runs on the values; a float result becomes a
  dual of zero partials;
- a linear function runs its ``impl`` on the values and once more on the partials,
  the lanes as one extra trailing axis (constants contribute zero partials);
- a primitive runs its JVP rule on the values with the partials as tangents, the
  lanes moved in front (a view): the rule's operations broadcast over them. For duals
  of two differentiations (nested: a Hessian, or a derivative inside a derivative) a
  dual is a dual of duals: with lanes a (outer), b (inner) and c (across, as
  `cyad._dual.layout.NestedLanes` lays them out), its primal P = (values, b) and its tangent
  T = (a, c) are first-order duals of the inner differentiation, and the JVP rule run on them,
  through this same table, gives the result's values and b lanes (from f(P)) and its
  a and c lanes (from the tangent). So every primitive works at second order.

A custom function (`cyad.custom_derivative`) carries an entry of its own, outside the
table: `custom_function` makes its implementation on its first call on dual arrays.

Operands that are not dual arrays are constants (zero partials). Results take
NumPy's promotion of the values, as float64 or float32. Other modules' ufuncs of the
table (scipy.special.betainc: ``NAMED``) are in ``NAMED_FUNCTIONS`` by name, for the dual
arrays' `__array_ufunc__`. Array constructors shaped
like a dual (np.zeros_like, ...) and np.copyto, which make or write arrays of this
engine, are here too.
"""
import functools
import inspect
import sys

import numpy as np

from cyad import _complex
from cyad._hints import function_name
from cyad._dual.array import (Dual, Tag, float_dtype, make_dual, mixed_differentiations, primal,
                        tagged_dual)
from cyad._dual.layout import NestedLanes, padded_width
from cyad._primitives import NAMED, TABLE

HANDLED_FUNCTIONS = {}

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def implements(numpy_function, signature, into=HANDLED_FUNCTIONS):
    """Register `signature`'s implementation as `numpy_function` on dual arrays (in `into`).

    `signature` (the function called, or the entry's ``bind``) carries NumPy's names,
    in NumPy's positions, but only those supported: a call passing any other argument
    (other than at NumPy's default) raises TypeError naming the function and the
    argument. The duals among the arguments must be of one differentiation.

    Where NumPy's function has an ``out`` parameter, so does this one: the result is
    computed apart, then copied into ``out``, so ``out`` may share memory with any
    operand (as in NumPy).
    """
    def register(impl):
        parameters = inspect.signature(signature).parameters.values()
        accepted = frozenset(p.name for p in parameters)
        if any(p.kind is p.VAR_POSITIONAL for p in parameters):
            positional = sys.maxsize
        else:
            positional = sum(p.kind in _POSITIONAL for p in parameters)
        numpy_parameters = inspect.signature(numpy_function).parameters
        numpy_names = list(numpy_parameters)
        out_position = None
        if "out" in numpy_parameters and numpy_parameters["out"].kind in _POSITIONAL:
            out_position = numpy_names.index("out")

        @functools.wraps(signature)
        def checked(*args, **kwargs):
            out = None
            if out_position is not None and len(args) > out_position:
                # a positional out: the arguments behind it go by name
                behind = zip(numpy_names[out_position + 1:], args[out_position + 1:], strict=False)
                kwargs.update(behind)
                args, out = args[:out_position], args[out_position]
            elif "out" in kwargs:
                out = kwargs.pop("out")
            # one dual alone (np.sum(x), x.reshape(...)) belongs to one differentiation
            if (len(args) != 1 or type(args[0]) is not Dual) and len(_tags(args)) > 1:
                raise mixed_differentiations()
            if len(args) <= positional and accepted.issuperset(kwargs):
                result = impl(*args, **kwargs)
            else:
                args, kwargs = _supported_arguments(numpy_function, accepted, args, kwargs)
                result = impl(*args, **kwargs)
            return result if out is None else _into(out, result)

        into[numpy_function] = checked
        return impl
    return register


def _supported_arguments(numpy_function, accepted, args, kwargs):
    """The call's arguments (positional, by name), once the unsupported ones are found at
    NumPy's defaults; NumPy's *args (np.einsum's operands) stay positional."""
    signature = inspect.signature(numpy_function)
    positional, supported = (), {}
    for name, value in signature.bind(*args, **kwargs).arguments.items():
        parameter = signature.parameters[name]
        if parameter.kind is parameter.VAR_POSITIONAL:
            positional = value
            continue
        if name in accepted:
            if parameter.kind is parameter.VAR_KEYWORD:   # NumPy's **kwargs, passed on
                supported.update(value)
            else:
                supported[name] = value
            continue
        if parameter.kind is parameter.VAR_KEYWORD:
            name = next(iter(value))
        elif value is parameter.default:
            continue
        raise TypeError(f"cyad: {function_name(numpy_function)} does not support the "
                        f"argument {name!r} on dual arrays")
    return positional, supported


def _tags(args):
    # the tags of the duals among the arguments (and in a list or tuple argument)
    tags = set()
    for x in args:
        if isinstance(x, Dual):
            tags.add(x.tag)
        elif isinstance(x, (list, tuple)):
            tags.update(y.tag for y in x if isinstance(y, Dual))
    return tags


def _into(out, result):
    """`out=` of a function: the result copied into a dual `out`, or the result itself."""
    if out is None:
        return result
    if not isinstance(out, Dual):
        raise TypeError("cyad: out= of a NumPy function on dual arrays must be a dual array "
                        "(a plain ndarray would lose the derivative)")
    if out.shape != np.shape(primal(result)):
        raise ValueError(f"cyad: output of shape {out.shape} cannot hold a result of shape "
                         f"{np.shape(primal(result))}")
    out[...] = result
    return out


# -- operands -----------------------------------------------------------------------------

def _common(operands):
    """The dual among `operands` whose differentiation the result joins, and the result dtype."""
    like = next(x for x in operands if isinstance(x, Dual))
    values = [primal(x) if isinstance(x, (Dual, np.ndarray, np.generic, int, float))
              else np.asarray(x) for x in operands]
    return like, float_dtype(np.result_type(*values))


def _values(x, dtype):
    return x.values.astype(dtype, copy=False) if isinstance(x, Dual) else np.asarray(x, dtype)


def _constant(values, like):
    """Values as a dual of `like`'s differentiation with zero partials."""
    values = np.asarray(values)
    return make_dual(values, np.zeros(values.shape + (like.width,), values.dtype), like)


# -- the kinds of the table -----------------------------------------------------------------

def _constant_function(entry):
    def run(*args, **kwargs):
        like = next(x for x in args if isinstance(x, Dual))
        result = entry.impl(*[primal(x) for x in args], **kwargs)
        if isinstance(result, (np.ndarray, np.floating)) and result.dtype.kind == "f":
            return _constant(result.astype(float_dtype(result.dtype), copy=False), like)
        return result

    return run


def _linear_function(entry):
    bind, impl = entry.bind, entry.impl

    def run(*args, **kwargs):
        operands, params = bind(*args, **kwargs)
        if len(operands) == 1 and type(operands[0]) is Dual:   # the common case
            x = operands[0]
            values = impl(x.values, **params)
            if type(values) is not np.ndarray:   # a NumPy scalar of a full reduction
                values = np.asarray(values)
            return make_dual(values, impl(x.partials, extra=1, **params), x)
        if not any(isinstance(x, Dual) for x in operands):   # only out= is dual
            return impl(*operands, **params)
        like, dtype = _common(operands)
        values = [_values(x, dtype) for x in operands]
        # a constant's partials: zeros, a broadcast view (nothing allocated)
        zero = np.zeros((), dtype)
        partials = [x.partials.astype(dtype, copy=False) if isinstance(x, Dual)
                    else np.broadcast_to(zero, v.shape + (like.width,))
                    for x, v in zip(operands, values, strict=True)]
        return make_dual(np.asarray(impl(*values, **params)),
                         impl(*partials, extra=1, **params), like)

    return run


def _primitive_function(entry):
    bind, jvp = entry.bind, entry.jvp

    def run(*args, **kwargs):
        operands, params = bind(*args, **kwargs)
        if not any(isinstance(x, Dual) for x in operands):   # only out= is dual
            return entry.impl(*operands, **params)
        like, dtype = _common(operands)
        if like.tag.is_nested:
            return _nested_jvp(jvp, operands, params, like, dtype)
        primals = [_values(x, dtype) for x in operands]
        # the lanes in front, as the rules take them (contiguous: BLAS takes them as they are)
        tangents = [np.ascontiguousarray(_lanes_first(x.partials.astype(dtype, copy=False)))
                    if isinstance(x, Dual) else None for x in operands]
        out, tangent = jvp(primals, tangents, **params)
        return _outputs(out, tangent, lambda v, t: _first_order(v, t, like))

    return run


def _outputs(out, tangent, make):
    """The dual results of a rule's output(s) and tangent(s) (tuples for several outputs);
    an integer output (lstsq's rank) is a count, returned as it is."""
    if isinstance(out, tuple):
        results = [v if _is_count(v) else make(v, t) for v, t in zip(out, tangent, strict=True)]
        return type(out)(*results) if hasattr(out, "_fields") else tuple(results)
    return make(out, tangent)


def _is_count(value):
    return isinstance(value, (int, np.integer)) or (
        isinstance(value, np.ndarray) and value.dtype.kind in "iu")


def _lanes_first(partials):
    """A view of partials with the lanes as the first axis (np.moveaxis, without its checks)."""
    ndim = partials.ndim
    return partials.transpose((ndim - 1,) + tuple(range(ndim - 1)))


def _first_order(values, tangent, like):
    values = np.asarray(values)
    if tangent is None:
        return make_dual(values, np.zeros(values.shape + (like.width,), values.dtype), like)
    partials = np.empty(values.shape + (like.width,), values.dtype)
    _lanes_first(partials)[...] = tangent   # (broadcast, where the rule's tangent is smaller)
    return make_dual(values, partials, like)


def _nested_jvp(jvp, operands, params, like, dtype):
    """A primitive on nested duals: its JVP rule on first-order duals of the inner tag."""
    tag = like.tag
    layout = NestedLanes(tag.outer.width, tag.inner.width)
    inner = layout.inner
    # the rule's duals: the inner lanes, padded to a width the kernels take
    lanes = padded_width(inner)
    rule_tag = Tag(lanes)
    primals, tangents = [], []
    for x in operands:
        if not isinstance(x, Dual):
            primals.append(_values(x, dtype))
            tangents.append(None)
            continue
        v, p = x.values.astype(dtype, copy=False), x.partials.astype(dtype, copy=False)
        a, b_lanes, c_lanes = layout.split(p)
        b = np.zeros(v.shape + (lanes,), dtype)
        b[..., :inner] = b_lanes
        c = np.zeros((layout.outer,) + v.shape + (lanes,), dtype)
        c[..., :inner] = np.moveaxis(c_lanes, -1, 0)
        primals.append(tagged_dual(v, b, rule_tag))
        tangents.append(tagged_dual(np.ascontiguousarray(np.moveaxis(a, -1, 0)), c, rule_tag))
    out, tangent = jvp(primals, tangents, **params)
    return _outputs(out, tangent, lambda v, t: _second_order(v, t, like, dtype))


def _second_order(value, tangent, like, dtype):
    # the nested dual of the rule's inner duals: values and b lanes from the value, a and c
    # lanes from the tangent
    tag = like.tag
    layout = NestedLanes(tag.outer.width, tag.inner.width)
    inner = layout.inner
    values = np.asarray(primal(value), dtype)
    partials = np.zeros(values.shape + (like.width,), dtype)
    a, b, c = layout.split(partials)
    if isinstance(value, Dual):
        b[...] = value.partials[..., :inner]
    if tangent is not None:
        shape = (layout.outer,) + values.shape
        a[...] = np.moveaxis(np.broadcast_to(primal(tangent), shape), 0, -1)
        if isinstance(tangent, Dual):
            c[...] = np.moveaxis(np.broadcast_to(tangent.partials[..., :inner], shape + (inner,)),
                                 0, -1)
    return make_dual(values, partials, like)


_ENGINE = {"composition": lambda entry: entry.impl, "constant": _constant_function,
           "linear": _linear_function, "primitive": _primitive_function}

for _function, _entry in TABLE.items():
    implements(_function, _entry.impl if _entry.kind in ("composition", "constant")
               else _entry.bind)(_ENGINE[_entry.kind](_entry))


def custom_function(function):
    """The dual engine's implementation of a custom function (`cyad.custom_derivative`),
    made on its first call and kept on the entry it carries; None for another function."""
    entry = getattr(function, "__cyad_entry__", None)
    if entry is None:
        return None
    handler = entry.engine_handlers.get("dual")
    if handler is None:
        made = {}
        implements(function, entry.impl if entry.kind == "constant" else entry.bind,
                   into=made)(_ENGINE[entry.kind](entry))
        handler = entry.engine_handlers["dual"] = made[function]
    return handler


def _named_function(entry):
    run = _ENGINE[entry.kind](entry)

    def call(*args, out=None):
        if len(_tags(args)) > 1:
            raise mixed_differentiations()
        return _into(out, run(*args))

    return call


# other modules' ufuncs of the table (scipy.special's), by name: the dual arrays'
# __array_ufunc__ looks them up
NAMED_FUNCTIONS = {_name: _named_function(_entry) for _name, _entry in NAMED.items()}


# -- arrays made or written by this engine ----------------------------------------------------

def _engine_function(numpy_function):
    def register(impl):
        return implements(numpy_function, impl)(impl)
    return register


@_engine_function(np.copyto)
def _copyto(dst, src, casting="same_kind", where=True):
    """dst[...] = src where `where` is true, both broadcast to dst's shape; src may
    overlap dst (it is read in full first, as in NumPy)."""
    if not isinstance(dst, Dual):
        raise TypeError("cyad: numpy.copyto of a dual array into a plain ndarray would lose "
                        "the derivative; copy into a dual array (np.zeros_like(x))")
    src_dtype = np.result_type(primal(src))
    if not np.can_cast(src_dtype, dst.dtype, casting):
        raise TypeError(f"Cannot cast array data from {src_dtype!r} to {dst.dtype!r} "
                        f"according to the rule {casting!r}")
    if where is True:
        dst[...] = src
        return
    mask = np.broadcast_to(np.asarray(primal(where), dtype=bool), dst.shape)
    dst[mask] = np.broadcast_to(src, dst.shape)[mask]


def _like_result(values, a, fill=None):
    """A *_like function's result: a dual of a's differentiation for a float dtype,
    the plain array for bool or integer (which carry no derivative)."""
    if values.dtype.kind in "biu" and not isinstance(fill, Dual):
        return values
    if values.dtype.kind == "c":   # a complex array (cyad._complex): a dual fill its real part
        if isinstance(fill, Dual):
            return _complex.cast(fill + np.zeros(values.shape, values.real.dtype), values.dtype)
        return _complex.from_values(values)
    if values.dtype not in (np.float32, np.float64):
        raise TypeError(f"cyad: dual arrays hold float64 or float32, not {values.dtype}")
    if not isinstance(fill, Dual):
        return _constant(values, a)
    if fill.tag is not a.tag:
        raise mixed_differentiations()
    partials = np.broadcast_to(fill.partials.astype(values.dtype, copy=False),
                               values.shape + (a.width,))
    return make_dual(values, partials.copy(), a)


@_engine_function(np.zeros_like)
def _zeros_like(a, dtype=None, *, shape=None):
    return _like_result(np.zeros_like(a.values, dtype, shape=shape), a)


@_engine_function(np.ones_like)
def _ones_like(a, dtype=None, *, shape=None):
    return _like_result(np.ones_like(a.values, dtype, shape=shape), a)


@_engine_function(np.empty_like)
def _empty_like(prototype, dtype=None, *, shape=None):
    return _like_result(np.empty_like(prototype.values, dtype, shape=shape), prototype)


@_engine_function(np.full_like)
def _full_like(a, fill_value, dtype=None, *, shape=None):
    values = np.full_like(a.values, primal(fill_value), dtype, shape=shape)
    return _like_result(values, a, fill_value)
