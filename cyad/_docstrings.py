"""Docstring fragments shared by the operators (cyad/_operators.pyx), written once.

In the style of scipy's ``_lib/doccer.py``: a docstring names a fragment on a line of
its own, ``%(name)s`` at the indentation the fragment takes, and `fill` substitutes
every fragment there, each line indented alike. A fragment may hold ``{key}`` fields,
filled from `fill`'s keywords (the operator's own names: its prepare function, its
family's operators).
"""
import re

FRAGMENTS = {
    # -- parameters
    "f": """\
f : callable or FunctionWrapper
    ``f(x)`` returning an array or a number, or ``f(y, x)`` writing its output into
    y when ``y=`` is given. A C function goes through `FunctionWrapper`.""",
    "f_scalar": """\
f : callable or FunctionWrapper
    Scalar-valued: ``f(x)`` returning a number or a 0-d array, or ``f(y, x)`` writing
    into a 0-d y when ``y=`` is given.""",
    "x_prepared": """\
x : array_like
    An input of the shape and dtype the prepared calls take.""",
    "x_scalar_prepared": """\
x : float or 0-d ndarray
    A scalar input of the dtype the prepared calls take.""",
    "x_at": """\
x : array_like
    Where to differentiate. float64 and float32 are kept, complex128 and complex64 too
    (JAX's conventions: docs guide/complex); integers and bools become float64.""",
    "arguments": """\
*args
    f's further arguments, ``f(x, *args)``: arrays, numbers, containers of them (tuples,
    lists, dicts, namedtuples) and other objects. The floating-point arrays and numbers
    among them are inputs of each call: a prep takes new values without recording f anew.
argnums : int or tuple of int, optional
    Which of ``(x, *args)`` are differentiated (default 0, x); a tuple gives a tuple of
    results, as ``jax.grad``'s argnums.
has_aux : bool, optional
    f returns ``(value, aux)``: aux comes back beside the result, not differentiated.""",
    "flat": """\
flat : bool, optional
    For a container x or f's value: one matrix over their raveled leaves, not the nested
    structure of blocks JAX gives.""",
    "y": """\
y : ndarray, optional
    The output buffer of a two-argument f; afterwards it holds f's value.""",
    "prep": """\
prep : Prep, optional
    From `{prepare}`, for repeated calls at inputs of the same shapes,
    dtype and function form.""",
    "out_result": """\
out : ndarray, optional
    Buffer of exactly the result's shape and dtype, written in place and returned.""",
    "chunk_tangents": """\
chunk : int, optional
    Tangents carried by one evaluation of f (default: `default_chunk`).""",
    "chunk_inputs": """\
chunk : int, optional
    Input directions carried by one evaluation of f (default: `default_chunk`).""",
    "chunk_pullback": """\
chunk : int, optional
    Basis directions of x carried by one evaluation of f on engine="dual" (default:
    `default_chunk`); cotangents carried by one reverse sweep on engine="tape" (default:
    as many as keep an adjoint within 1024 numbers).""",
    "chunk_one": """\
chunk : int, optional
    Accepted for uniformity; a {what} has one direction.""",
    "chunk_hvp": """\
chunk : int, optional
    Basis directions carried by one evaluation of f (all tangents go together).""",
    "chunk_hessian": """\
chunk : int, optional
    Directions carried by one evaluation of f at each of the two levels.""",
    "engine": """\
engine : str, optional
    The engine that computes the derivatives: ``"dual"`` (forward mode on dual numbers)
    or ``"tape"`` (f traced once, its derivative tape replayed); another name raises
    ValueError. With ``prep=``, it must be the prep's. None (default):
    {default}.""",
    "workers": """\
workers : int or map-like, optional
    Run a call in this many parts at once, each a share of the chunks of directions on
    a prep of its own, on cyad's threads without the GIL (a C function; a tape, but for
    a gradient's one reverse sweep), every result bit for bit the serial one. Ctrl-C
    stops the parts at their next chunk. A Python f on engine="dual" holds the GIL for
    every evaluation: it runs serially. A map-like ``map(func, iterable)``
    (``ThreadPoolExecutor().map``, ``multiprocessing.Pool().map``, a Dask client's
    ``get_executor().map``) runs the parts as tasks, one per CPU, f shipped with
    cloudpickle.""",
    "engine_prepare": """\
engine : str, optional
    The engine the prep runs on: ``"dual"`` or ``"tape"``; another name raises
    ValueError (``prep.why_engine`` says which runs and why). None (default):
    {default}.""",
    "holomorphic": """\
holomorphic : bool, optional
    For a holomorphic f of complex x with complex values: the complex derivatives
    (f'(z), df_i/dz_j, f''(z)), as JAX's ``holomorphic=True``. Default False: a real f
    of complex x is differentiated by JAX's conventions (docs: guide/complex).""",
    # -- results
    "returns_prep": """\
Prep
    Pass it as ``prep=`` to `{operator}` and `{value_operator}`.""",
    # -- errors
    "raises_value": """\
ValueError
    If x is empty, ``chunk`` is not a positive integer, or ``prep``, ``y`` or ``out``
    does not fit the call (the message says what differs).""",
    "raises_type": """\
TypeError
    If f is neither a callable nor a C function of cyad's signature, f drops a
    derivative (turns a `Dual` into a float or a plain ndarray, or calls a NumPy
    function cyad has no rule for), or JAX refuses the call too (complex values of f
    where a real f is taken, complex x and values without ``holomorphic=True``).""",
    "raises_prepare_type": """\
TypeError
    If x is neither real nor complex, or f is neither a callable nor a C function of cyad's
    signature (with the {order} function x's dtype needs).""",
    "raises_call": """\
RuntimeError
    If ``prep`` is in use by another call (from another thread, or from inside f).
FunctionError
    If a C function returns a nonzero status.""",
}

_PLACEHOLDER = re.compile(r"^([ \t]*)%\((\w+)\)s[ \t]*$", re.M)


def fill(func, **names):
    """Substitute the fragments named in func's docstring (their {key} fields from
    `names`); returns func."""
    def substitute(match):
        indent, name = match.groups()
        text = FRAGMENTS[name].format(**names) if names else FRAGMENTS[name]
        return "\n".join(indent + line if line else line for line in text.split("\n"))

    func.__doc__ = _PLACEHOLDER.sub(substitute, func.__doc__)
    return func
