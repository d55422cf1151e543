"""First-order operators called inside a function that cyad is differentiating.

Such a call (``derivative(lambda x: x * derivative(lambda y: x + y, 1.0), 1.0)``)
must keep its perturbations apart from those of the differentiation around it. It
gets a tag of its own, ranked inside the running one (`cyad._dual.Tag`), and seeds
its directions on that tag: where they meet duals of the outer differentiation - in
x, in the tangents, or captured by f - the elementwise rules build nested duals,
whose lanes keep both sets of partials and the second derivatives across them. The
results are then duals of the outer differentiation (or plain arrays when nothing
outer was involved), which the outer differentiation goes on differentiating.

The seeds go into the lanes, and the results come out of them, through the loops the
prepared engine seeds and extracts with (cyad._layout): the first-order layout, or the
nested one whose a lanes carry the outer differentiation. This path evaluates f once
with all directions and allocates its buffers per call: nesting is for correctness,
the prepared operators are for speed. A FunctionWrapper of a Python callable nests as
that callable, and so does a function cyad.record recorded (its Python f).
"""
import numpy as np

from cyad._dual import Dual, Tag, _enter, _leave, make_nested_tag, primal, tagged_dual
from cyad._layout import (NestedLanes, padded_width, read_columns, seed_basis, seed_columns,
                          seed_lanes)
from cyad._prep import input_dtype
from cyad._stacked import stacked
from cyad._wrapper import FunctionWrapper, constant_result

_NESTING_ERROR = ("cyad: only two levels of differentiation nest (a derivative of a "
                  "derivative); this call would be a third")


def _python_callable(f):
    # the Python f of a FunctionWrapper: its callable, or the one cyad.record traced (a
    # recorded function nests as that f, on dual arrays)
    if isinstance(f, FunctionWrapper):
        return f.callable if f.tape is None else f.tape.f
    return f


def _dtype(x):
    # the dtype cyad differentiates in, as for a prep (x may be a dual)
    return input_dtype(primal(x))


def _outer_tag(*arrays):
    """The tag of the outer differentiation among the duals given, or None."""
    outer = None
    for a in arrays:
        if isinstance(a, Dual):
            if a.tag.is_nested or (outer is not None and a.tag is not outer):
                raise TypeError(_NESTING_ERROR)
            outer = a.tag
    return outer


def _values(a, dtype):
    return np.asarray(primal(a), dtype=dtype)


def _own_values(a, dtype):
    # a copy: f may write into its input, which must not change the caller's array (or,
    # for a dual of the outer differentiation, its values without its partials)
    return np.array(primal(a), dtype=dtype)


def _evaluate(f, x, tangents, tangent_partials, y):
    """f at x seeded along `tangents` (arrays shaped like x; None: x's basis directions) on a
    new tag ranked inside the running ones.

    tangent_partials: the tangents that are duals of the outer differentiation (a list
    with None for the others) or None. Returns (value, derivatives,
    derivative_partials, outer tag): the value as an array or a dual of the outer
    differentiation, the derivatives along the tangents (shape + (k,)) and, with an
    outer differentiation, their partials (shape + (k, W1)).
    """
    dtype = _dtype(x)
    xv = _own_values(x, dtype)
    k = xv.size if tangents is None else len(tangents)
    inner = Tag(padded_width(k))
    outer = _outer_tag(x, y, *(tangent_partials or ()))
    _enter(inner)
    try:
        if outer is None:
            tag, lanes = inner, None
            first = 0
        else:
            tag = make_nested_tag(outer, inner)
            lanes = _lanes(tag)
            first = lanes.b_lane(0)
        partials = np.zeros(xv.shape + (tag.width,), dtype)
        if tangents is None:
            seed_basis(partials, first)
        else:
            seed_lanes(partials, first, tangents)
        if lanes is not None:
            if isinstance(x, Dual):
                seed_columns(partials, lanes.a.start, _own_partials(x, dtype))
            for j, t in enumerate(tangent_partials or ()):
                if t is not None:
                    seed_columns(partials, lanes.c_lane(j), _own_partials(t, dtype))
        x_in = tagged_dual(xv, partials, tag)
        f = _python_callable(f)
        if y is None:
            r = stacked(f(x_in))
        else:
            r = _output_dual(y, x_in.tag, dtype)
            f(r, x_in)
            _write_back(r, y)
    finally:
        _leave(inner)
    return _split(r, inner, k)


def _own_partials(d, dtype):
    # d's partials, C-contiguous in dtype (the seeding loops read raw memory)
    return np.ascontiguousarray(d.partials, dtype=dtype)


def _lanes(tag):
    # the layout of a nested tag's duals
    return NestedLanes(tag.outer.width, tag.inner.width)


def _outer_partials(r):
    # the a lanes of a nested dual: its partials along the outer differentiation
    return read_columns(np.ascontiguousarray(r.partials), _lanes(r.tag).a.start,
                        r.tag.outer.width)


def _output_dual(y, tag, dtype):
    # the two-argument form's output, as a dual of the tag f runs on (a dual y of the
    # outer differentiation brings its partials into the a lanes)
    values = _own_values(y, dtype)
    partials = np.zeros(values.shape + (tag.width,), dtype)
    if isinstance(y, Dual):
        if y.tag is not tag.outer:
            raise TypeError(_NESTING_ERROR)
        seed_columns(partials, _lanes(tag).a.start, _own_partials(y, dtype))
    return tagged_dual(values, partials, tag)


def _write_back(r, y):
    # f's value into the caller's y (a dual of the outer differentiation keeps its partials)
    if isinstance(y, Dual):
        y.values[...] = r.values
        y.partials[...] = _outer_partials(r)
        return
    if r.tag.is_nested and np.any(_outer_partials(r)):
        raise TypeError("cyad: f's value depends on the outer differentiation, so y must be "
                        "a dual array of it, not a plain ndarray")
    y[...] = r.values


def _split(r, inner, k):
    if not isinstance(r, Dual):
        c = constant_result(r)
        return c, np.zeros(c.shape + (k,), c.dtype), None, None
    shape = r.shape
    tag = r.tag
    partials = np.ascontiguousarray(r.partials)
    if tag is inner:
        return r.values, read_columns(partials, 0, k), None, None
    if tag.is_nested and tag.inner is inner:
        outer = tag.outer
        lanes = _lanes(tag)
        value = tagged_dual(r.values, _outer_partials(r), outer)
        cross = read_columns(partials, lanes.c_lane(0), k * outer.width)
        return (value, read_columns(partials, lanes.b_lane(0), k),
                cross.reshape(shape + (k, outer.width)), outer)
    if not tag.is_nested and tag.running and tag.level < inner.level:
        # f's result involves only the outer differentiation: zero derivative here
        zeros = np.zeros(shape + (k,), r.dtype)
        return r, zeros, np.zeros(shape + (k, tag.width), r.dtype), tag
    raise TypeError(_NESTING_ERROR)


def _result(values, partials, outer):
    values = np.array(values, order="C")
    if outer is None:
        return float(values) if values.ndim == 0 else values
    return tagged_dual(values, np.array(partials, order="C"), outer)


def _value(value, outer):
    # f's value as the caller gets it: an array (a float if 0-d) or a dual of `outer`
    if outer is None:
        return _result(value, None, None)
    return _result(value.values, value.partials, outer)


def _deliver(result, out):
    """The result, written into `out` when one is given."""
    if out is None:
        return result
    if isinstance(out, Dual):
        out[...] = result
    elif isinstance(result, Dual):
        raise TypeError("cyad: this result depends on the outer differentiation: out= must be "
                        "a dual array of it, not a plain ndarray")
    else:
        np.copyto(out, result)
    return out


def pushforward(f, x, dx, y, out, with_value, scalar_input=False):
    """J(x) @ dx (a tangent or a tuple of them), and f(x) if with_value."""
    if scalar_input and np.ndim(primal(x)) != 0:
        raise ValueError(f"cyad: derivative takes a scalar x, not an array of shape {np.shape(x)}")
    batch = isinstance(dx, tuple)
    tangents = dx if batch else (dx,)
    dtype = _dtype(x)
    shape = np.shape(primal(x))
    for t in tangents:
        if np.shape(primal(t)) != shape:
            raise ValueError(f"cyad: a tangent has shape {np.shape(t)}, but x has shape {shape}")
    seeds = tuple(np.ascontiguousarray(np.broadcast_to(_values(t, dtype), shape))
                  for t in tangents)
    _outer_tag(x, *tangents)   # (one outer differentiation at most)
    seed_partials = None
    if any(isinstance(t, Dual) for t in tangents):
        seed_partials = [t if isinstance(t, Dual) else None for t in tangents]
    value, d, dp, outer = _evaluate(f, x, seeds, seed_partials, y)
    results = tuple(_result(d[..., i], None if dp is None else dp[..., i, :], outer)
                    for i in range(len(tangents)))
    if with_value:
        value_out, out = (None, None) if out is None else out
        value = _deliver(_value(value, outer), value_out)
    if out is not None:
        outs = out if batch else (out,)
        results = tuple(_deliver(r, o) for r, o in zip(results, outs, strict=False))
    results = results if batch else results[0]
    return (value, results) if with_value else results


def jacobian(f, x, y, out, with_value, scalar_output):
    """The Jacobian of f at x (its gradient if scalar_output), and f(x) if with_value."""
    dtype = _dtype(x)
    xv = _values(x, dtype)
    value, d, dp, outer = _evaluate(f, x, None, None, y)
    out_shape = d.shape[:-1]
    if scalar_output and out_shape != ():
        raise ValueError(f"cyad: gradient needs a scalar-valued f, but f returns shape "
                         f"{out_shape}; use jacobian")
    result = _result(d.reshape(out_shape + xv.shape),
                     None if dp is None else dp.reshape(out_shape + xv.shape + dp.shape[-1:]),
                     outer)
    if with_value:
        value_out, out = (None, None) if out is None else out
        value = _deliver(_value(value, outer), value_out)
        return value, _deliver(result, out)
    return _deliver(result, out)


def pullback(f, x, dy, y, out, with_value):
    """dy @ J(x) (a cotangent or a tuple of them), and f(x) if with_value: the Jacobian of
    one evaluation, contracted with each cotangent (which may be a dual of the outer
    differentiation, as J may)."""
    batch = isinstance(dy, tuple)
    cotangents = dy if batch else (dy,)
    dtype = _dtype(x)
    value, jac = jacobian(f, x, y, None, True, False)
    out_ndim = np.ndim(jac) - np.ndim(primal(x))
    out_shape = np.shape(jac)[:out_ndim]
    results = []
    for c in cotangents:
        if np.shape(c) != out_shape:
            raise ValueError(f"cyad: a cotangent has shape {np.shape(c)}, but f's output has "
                             f"shape {out_shape}")
        c = c if isinstance(c, Dual) else _values(c, dtype)
        r = c * jac if out_ndim == 0 else np.tensordot(c, jac, axes=out_ndim)
        results.append(float(r) if not isinstance(r, Dual) and np.ndim(r) == 0 else r)
    if with_value:
        value_out, out = (None, None) if out is None else out
        value = _deliver(value, value_out)
    if out is not None:
        outs = out if batch else (out,)
        results = [_deliver(r, o) for r, o in zip(results, outs, strict=False)]
    results = tuple(results) if batch else results[0]
    return (value, results) if with_value else results
