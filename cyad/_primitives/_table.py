"""The kinds of table entries, the table itself, and helpers the entries share.

An entry describes one NumPy function for every engine. It is one of

- ``Composition``: ``impl`` has NumPy's signature and calls other NumPy functions
  on its arguments, whatever their array type; it holds no derivative code.
- ``Constant``: ``impl`` runs on the values alone (shape queries, rounding, positions
  and orders such as argsort): the result carries no derivative. ``reads_values`` is
  False for the shape queries, whose result does not depend on the values (an engine
  that records f may keep it as it is; it must check any other on every replay).
- ``Linear``: linear in its operands. ``bind(*args, **kwargs)`` (NumPy's names)
  splits a call into the array operands and static parameters, normalised against
  the operands' shapes (non-negative axes, resolved shapes); ``impl(*operands,
  extra=0, **params)`` computes the result of operands that may carry ``extra``
  trailing axes beyond the values' (the lanes of a tangent: an engine pushes
  tangents through ``impl`` itself; it runs on plain ndarrays);
  ``transpose(cotangent, shapes, **params)`` gives one cotangent per operand (its
  adjoint, for reverse mode).
- ``Primitive``: ``bind`` and ``impl`` as for a linear entry (``impl`` takes no
  ``extra``); ``jvp(primals, tangents, **params)`` returns ``(out, tangent_out)``,
  where every tangent has a LEADING axis of lanes (None for a constant operand or
  a zero tangent) and the rule is written in NumPy operations that are themselves in
  the table, so that it runs on an engine's arrays and composes to any order;
  ``vjp(primals, cotangent, **params)`` returns one cotangent per operand. A
  function of several outputs takes and returns tuples of them.

Engines walk ``TABLE`` (NumPy function -> entry); ``entry.kind`` names the kind. A
custom function (`cyad._primitives.custom`) carries a primitive entry of its own,
outside the table: an engine finds an entry with `entry_of`.
``NAMED`` holds the entries of other modules' ufuncs by their public names
("scipy.special.betainc"): cyad does not import SciPy, so an engine looks such a ufunc
up by name (`cyad._rules.table.ufunc_name`) when one reaches it.
"""
import numpy as np

try:
    from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import normalize_axis_index
    from numpy.core.numeric import normalize_axis_tuple

TABLE = {}
NAMED = {}


class Entry:
    """One NumPy function's description; the subclasses name the kind."""

    kind = None

    def __init__(self, name, namespace):
        self.name = name
        for field in self.fields:
            setattr(self, field, namespace[field])
        # a restriction users should know of, shown in the documentation's table
        self.note = namespace.get("note", "")

    def __repr__(self):
        return f"<{self.kind} {self.name}>"


class Composition(Entry):
    kind = "composition"
    fields = ("impl",)


class Constant(Entry):
    kind = "constant"
    fields = ("impl",)
    reads_values = True


class Linear(Entry):
    kind = "linear"
    fields = ("bind", "impl", "transpose")


class Primitive(Entry):
    kind = "primitive"
    fields = ("bind", "impl", "jvp", "vjp")


def _register(kind, numpy_functions):
    def register(definition):
        # a function is an impl alone; a class holds bind/impl/jvp/... as plain functions
        namespace = vars(definition) if isinstance(definition, type) else {"impl": definition}
        entry = kind(definition.__name__.strip("_"), namespace)
        for f in numpy_functions:
            if f is None:   # a function this NumPy lacks (`numpy_function`)
                continue
            if f in TABLE:
                raise ValueError(f"{f} is in the table twice")
            TABLE[f] = entry
        return definition   # the module keeps what it defined; the table holds the entry
    return register


def composition(*numpy_functions):
    return _register(Composition, numpy_functions)


def constant(*numpy_functions):
    return _register(Constant, numpy_functions)


def shape_query(*numpy_functions):
    """A constant whose result depends on the operands' shapes alone."""
    register = _register(Constant, numpy_functions)

    def registered(definition):
        register(definition)
        TABLE[numpy_functions[0]].reads_values = False
        return definition
    return registered


def linear(*numpy_functions):
    return _register(Linear, numpy_functions)


def primitive(*numpy_functions):
    return _register(Primitive, numpy_functions)


def named_primitive(name):
    """A primitive of another module's ufunc, by its public name (see NAMED)."""
    def register(definition):
        NAMED[name] = Primitive(name.rpartition(".")[2], vars(definition))
        return definition
    return register


# -- helpers ----------------------------------------------------------------------

def numpy_function(name):
    """NumPy's function of a dotted name ("linalg.svdvals"), None where this NumPy lacks it
    (the NumPy 2 names on NumPy 1.x): the table leaves it out."""
    value = np
    for part in name.split("."):
        value = getattr(value, part, None)
    return value


def axes_of(axis, ndim):
    """`axis` of a NumPy call (None: all) as a tuple of non-negative axes."""
    return tuple(range(ndim)) if axis is None else normalize_axis_tuple(axis, ndim)


def axis_of(axis, ndim):
    return normalize_axis_index(axis, ndim)


def entry_of(function):
    """The table entry of a NumPy function, or the entry a custom function carries
    (`cyad.custom_derivative`); None for any other function."""
    entry = TABLE.get(function)
    return entry if entry is not None else getattr(function, "__cyad_entry__", None)


def is_engine_array(x):
    """Whether x is an engine's array (a dual array, a tracer): an object that takes NumPy
    functions itself, other than a plain ndarray."""
    return hasattr(type(x), "__array_function__") and not isinstance(x, np.ndarray)


def as_operand(x):
    """x as an operand of cyad's compositions: an engine's array as it is, a constant as an
    ndarray."""
    return x if is_engine_array(x) else np.asarray(x)


def float_dtype_of(*arrays):
    """The float dtype of a result of `arrays` (their floats promoted; float64 if none)."""
    dtypes = [x.dtype for x in arrays if hasattr(x, "dtype") and x.dtype.kind == "f"]
    return np.result_type(*dtypes) if dtypes else np.dtype(np.float64)


def shape_of(x):
    return x.shape if hasattr(x, "shape") else np.shape(x)


def ndim_of(x):
    return x.ndim if hasattr(x, "ndim") else np.ndim(x)


def trailing(x, extra):
    """The shape of x's `extra` trailing axes (the lanes of a tangent)."""
    return x.shape[x.ndim - extra:] if extra else ()


def unbroadcast(ct, shape):
    """The cotangent of an operand of `shape` broadcast to ct's shape: ct summed back."""
    lead = ct.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                      if n == 1 and ct.shape[lead + i] != 1)
    if axes:
        ct = np.sum(ct, axis=axes, keepdims=True)
    return np.reshape(ct, shape)


def lanes_padded(t, ndim):
    """A tangent (lanes leading) with unit axes after the lanes, up to `ndim` value axes,
    so that it broadcasts against operands of `ndim` axes."""
    k = ndim - (t.ndim - 1)
    return t if k <= 0 else np.reshape(t, t.shape[:1] + (1,) * k + t.shape[1:])


def matrix_transpose(a):
    return np.swapaxes(a, -1, -2)
