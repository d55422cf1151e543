"""The operators on f(x, *args): several arguments, containers of arrays, auxiliary outputs.

Design. The engines differentiate a function of one array. A call whose f takes more (extra
positional arguments, ``argnums=``, ``has_aux=True``, or x a container) is answered by the
same operators on one flat problem (`Problem`):

- the differentiated arguments (x, or those ``argnums`` names) are a pytree (optree: tuples,
  lists, dicts, namedtuples, None as an empty node, and what a user registers with optree);
  its leaves are one flat vector, in the float dtype they promote to (float32 when all are
  float32, else float64), or the leaf itself when there is one (no copy, no reshape);
- the other arguments' leaves that are floating-point arrays or numbers are inputs of every
  call, set on a `Bound` (cyad/_arguments/bound.pyx): the tape engine copies them into its
  tape's inputs as it copies x, so new values need no new recording; the rest (ints,
  strings, objects) are static: compared with the prep's at every call, a change prepares
  anew (as JAX's static arguments retrace);
- f's value, when it is a container, is its leaves raveled into one vector; results are read
  back into the structures JAX gives them: a gradient, a pullback and a Hessian-vector product
  take x's structure, a pushforward f's, a Jacobian f's with x's inside each of its leaves
  (each block shaped f's leaf + x's leaf), a Hessian x's inside x's; ``flat=True`` gives the
  one matrix over the raveled leaves instead;
- with ``has_aux=True`` f returns (value, aux): aux comes from one evaluation of f on the
  plain arguments per call (the engines' evaluations carry derivatives, and a tape does not
  evaluate f at all), returned as JAX's has_aux does: (result, aux), and for value_and_*
  ((value, aux), result).

Lists or tuples of numbers alone (nested too) stay an array_like x, as NumPy reads them;
one holding arrays or containers is a container. A prep of such a call (`ArgumentsPrep`)
holds the flat problem's prep and checks each call's structures against its own, naming
what differs. Out of reach of this layer: complex differentiated arguments (refused; complex
arrays among the other arguments are static), tuples of tangents as batches when x is a
container. Flattening and reading back allocate Python objects: the operators first try a
prep's compiled path (cyad/_arguments/prepared.pyx, which allocates nothing: a call of one
array x whose value is one array, SciPy's forms, and a gradient, hvp, pullback, pushforward,
Jacobian or flat Hessian of x a structure of dicts, tuples, lists and namedtuples with out=),
and come here where it declines.
"""
import threading

import numpy as np
import optree

from cyad._arguments.bound import Bound
from cyad._arguments.cache import Cache, plain
from cyad._arguments.prepared import PreparedCall
from cyad._core import _BUSY
from cyad._primitives._table import is_engine_array

WITH_VALUE, WITH_FIRST = 1, 2      # as cyad/_core.pxd's

_TANGENT_OF = {"pushforward": "x", "hvp": "x", "pullback": "f"}


def _prep_type():
    from cyad._core import Prep
    return Prep


def _operators():
    from cyad import _operators as ops     # (compiled; it imports this module lazily)
    return ops


_NUMBERS = (int, float, complex, np.number)


def is_container(x):
    """Whether x is a pytree node for the operators: not an array, a number, nor lists or
    tuples of numbers (an array_like, as NumPy reads it)."""
    if type(x) in (list, tuple):
        return len(x) == 0 or not all(isinstance(item, _NUMBERS) or (
            type(item) in (list, tuple) and not is_container(item)) for item in x)
    return not optree.treespec_is_leaf(optree.tree_structure(x, none_is_leaf=False)) \
        and not isinstance(x, np.ndarray)


def _flatten(tree):
    return optree.tree_flatten(tree, none_is_leaf=False)


class Tree:
    """A structure of arrays as one vector: its spec, and each leaf's shape and place."""

    def __init__(self, tree, name, dtype=None):
        leaves, self.spec = _flatten(tree)
        self.name = name
        self.shapes = [tuple(np.shape(leaf)) for leaf in leaves]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.offsets = list(np.cumsum([0] + self.sizes[:-1]))
        self.size = sum(self.sizes)
        self.single = self.spec.num_leaves == 1 and optree.treespec_is_leaf(self.spec)
        self.dtype = dtype if dtype is not None else _float_dtype(leaves, name)

    def leaves(self, tree, what):
        """tree's leaves, its structure checked against this one's."""
        leaves, spec = _flatten(tree)
        if spec != self.spec:
            raise ValueError(f"cyad: {what} has structure {spec}, but {self.spec} was "
                             f"expected ({self.name})")
        for leaf, shape, k in zip(leaves, self.shapes, range(len(leaves))):
            if tuple(np.shape(leaf)) != shape:
                raise ValueError(f"cyad: leaf {k} of {what} has shape {np.shape(leaf)}, "
                                 f"but {shape} was expected ({self.name})")
        return leaves

    def flat(self, tree, what):
        """tree's leaves as one vector (the leaf itself for a single one)."""
        leaves = self.leaves(tree, what)
        if self.single:
            return leaves[0]
        if any(is_engine_array(leaf) for leaf in leaves):   # (inside a differentiation)
            return np.concatenate([np.ravel(leaf) for leaf in leaves])
        out = np.empty(self.size, self.dtype)
        self.fill(out, leaves)
        return out

    def fill(self, out, leaves):
        for leaf, o, s in zip(leaves, self.offsets, self.sizes):
            out[o:o + s] = np.ravel(leaf)

    def views(self, flat):
        """Each leaf's numbers in a vector, as a view shaped like the leaf."""
        return [flat[o:o + s].reshape(shape)
                for o, s, shape in zip(self.offsets, self.sizes, self.shapes)]

    def unflat(self, flat):
        """The structure whose leaves are views of flat's numbers."""
        if self.single:
            return flat
        return self.spec.unflatten(self.views(flat))

    def outer(self, inner, matrix):
        """A matrix over (this tree's numbers, inner's numbers) as this structure of inner
        structures of blocks, each shaped (this leaf) + (inner leaf)."""
        if self.single and inner.single:
            return matrix
        rows = matrix.reshape(self.size, inner.size)
        blocks = []
        for o, s, shape in zip(self.offsets, self.sizes, self.shapes):
            blocks.append(inner.spec.unflatten([
                rows[o:o + s, io:io + si].reshape(shape + ishape)
                for io, si, ishape in zip(inner.offsets, inner.sizes, inner.shapes)]))
        return self.spec.unflatten(blocks)


def _float_dtype(leaves, name):
    kinds = [np.result_type(leaf) if not is_engine_array(leaf) else np.dtype(leaf.dtype)
             for leaf in leaves]
    if not kinds:
        raise ValueError(f"cyad: {name} holds no array or number to differentiate")
    for dtype in kinds:
        if dtype.kind == "c":
            raise TypeError(f"cyad: {name} holds complex leaves: complex inputs are "
                            "differentiated as one array x, without other arguments")
        if dtype.kind not in "fiub":
            raise TypeError(f"cyad: {name} holds a leaf of dtype {dtype}, which cannot be "
                            "differentiated")
    return np.dtype(np.float32) if all(d == np.float32 for d in kinds) \
        else np.dtype(np.float64)


_INPUT_TYPES = (np.ndarray, np.floating, float)


def _dynamic(leaf):
    # a leaf of the other arguments that is an input of every call (not static)
    return isinstance(leaf, _INPUT_TYPES) and np.result_type(leaf).kind == "f"


def _same(a, b):
    # a static leaf unchanged since the prep: the same object, or equal by value
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
                and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b))
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def _selected(argnums, count):
    """argnums as a tuple of positions (negative ones counted from the end), and whether
    it was one int."""
    one = isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool)
    positions = (argnums,) if one else argnums
    if not isinstance(positions, tuple) or not positions or not all(
            isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in positions):
        raise TypeError(f"cyad: argnums= takes an int or a non-empty tuple of ints, not "
                        f"{argnums!r}")
    normal = []
    for i in positions:
        if not -count <= i < count:
            raise ValueError(f"cyad: argnums={argnums!r} names argument {i}, but f is given "
                             f"{count} positional arguments")
        normal.append(int(i) % count)
    if len(set(normal)) != len(normal):
        raise ValueError(f"cyad: argnums={argnums!r} names an argument twice")
    return tuple(normal), one


class Problem:
    """f(*arguments) as a function of one flat x: the differentiated arguments' `Tree`, the
    other arguments' leaves (inputs or static), f's value's `Tree` (learned from one
    evaluation of f on the plain arguments)."""

    def __init__(self, f, arguments, argnums, has_aux, two_argument):
        self.f, self.has_aux, self.two_argument = f, has_aux, two_argument
        self.count = len(arguments)
        self.positions, self.one = _selected(argnums, self.count)
        selected = self.selected(arguments)
        self.x = Tree(selected, "the differentiated arguments")
        # the places of x's leaves and the others' among all the arguments' leaves
        everything, self.spec = _flatten(tuple(arguments))
        starts = np.cumsum([0] + [_flatten(a)[1].num_leaves for a in arguments])
        self.x_index = [k for i in self.positions for k in range(starts[i], starts[i + 1])]
        self.others_index = [k for i in range(self.count) if i not in self.positions
                             for k in range(starts[i], starts[i + 1])]
        self.others_spec = _flatten(self.others(arguments))[1]
        self.static = {k: everything[k] for k in self.others_index
                       if not _dynamic(everything[k])}   # leaf number -> its value
        self.caches = any(isinstance(v, Cache) for v in self.static.values())
        self.dynamic_index = [k for k in self.others_index if k not in self.static]
        # (the input leaves are the Bound's alone: a default tape compares what this
        # object holds, as Python state f reads)
        self.plain = not any(is_engine_array(everything[k]) for k in self.others_index)
        self.value = None
        if not two_argument:
            value = self.plain_call(arguments)[0]
            self.value = Tree(value, "f's value", self.x.dtype)

    # -- arguments --------------------------------------------------------------------
    def input_leaves(self, arguments):
        """The other arguments' leaves that are inputs of this call."""
        everything = _flatten(tuple(arguments))[0]
        return tuple(everything[k] for k in self.dynamic_index)

    def selected(self, arguments):
        if self.one:
            return arguments[self.positions[0]]
        return tuple(arguments[i] for i in self.positions)

    def others(self, arguments):
        return tuple(a for i, a in enumerate(arguments) if i not in self.positions)

    def fits(self, leaves, spec):
        """Whether all the arguments' leaves of a call (and their structure) fit this
        problem: the same structure, x's leaves of its shapes, the static leaves unchanged,
        arrays or floats where the inputs were (the Bound checks their shapes)."""
        if spec != self.spec:
            return False
        for k, shape in zip(self.x_index, self.x.shapes):
            leaf = leaves[k]
            if (leaf.shape if type(leaf) is np.ndarray else np.shape(leaf)) != shape:
                return False
        for k, static in self.static.items():
            if leaves[k] is not static and not _same(leaves[k], static):
                return False
        for k in self.dynamic_index:
            if not isinstance(leaves[k], _INPUT_TYPES):
                return False
        return True

    def arguments(self, x, leaves):
        """f's arguments: x's structure from the flat x, the others from the leaves."""
        selected = self.x.unflat(x) if not self.x.single else x
        inputs = iter(leaves)
        merged = [self.static[k] if k in self.static else next(inputs)
                  for k in self.others_index]
        if self.caches:     # scratch arrays of the engine's kind (cyad/_arguments/cache.py)
            merged = [m.scratch(x) if isinstance(m, Cache) else m for m in merged]
        rest = iter(optree.tree_unflatten(self.others_spec, merged))
        chosen = dict(zip(self.positions, (selected,) if self.one else selected))
        return [chosen[i] if i in chosen else next(rest) for i in range(self.count)]

    # -- f ----------------------------------------------------------------------------
    def function(self, *xs):
        """f of the flat x (after y in the two-argument form) and the input leaves."""
        if self.two_argument:
            y, x, leaves = xs[0], xs[1], xs[2:]
            return self.f(y, *self.arguments(x, leaves))
        x, leaves = xs[0], xs[1:]
        value = self.f(*self.arguments(x, leaves))
        if self.has_aux:
            value = _pair(value)[0]
        if self.value is None or self.value.single:
            return value
        leaves = self.value.leaves(value, "f's value")
        return np.concatenate([np.ravel(leaf) for leaf in leaves])

    def plain_call(self, arguments, y=None):
        """f on the plain arguments: (value, aux); aux None without has_aux."""
        if self.caches:
            engine_x = [leaf for leaf in _flatten(self.selected(arguments))[0]
                        if is_engine_array(leaf)]
            arguments = plain(arguments, engine_x[0] if engine_x else None)
        value = self.f(y, *arguments) if self.two_argument else self.f(*arguments)
        if self.has_aux:
            return _pair(value)
        return value, None


def _pair(value):
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError("cyad: has_aux=True: f must return a pair (value, aux), not "
                        f"{type(value).__name__}")
    return value[0], value[1]


class ArgumentsPrep:
    """A prep of f(x, *args): the flat problem's prep (`inner`), its Bound, and the
    structures each call is checked against."""

    def __init__(self, family, f, arguments, v, y, argnums, has_aux, flat, chunk, engine,
                 workers):
        self.family, self.f, self.flat_result = family, f, flat
        self.argnums, self.has_aux = argnums, has_aux
        self.chunk, self.engine_named, self.workers = chunk, engine, workers
        self._busy = threading.Lock()
        self.preparations = 0
        self._make(arguments, v, y)

    def _make(self, arguments, v, y):
        self.problem = problem = Problem(self.f, arguments, self.argnums, self.has_aux,
                                         y is not None)
        self.bound = Bound(problem.function, problem.input_leaves(arguments), problem.x.dtype)
        x = problem.x.flat(problem.selected(arguments), "x")
        # a container's leaves are copied into one vector, made once (a call at a time)
        self._x = x if not problem.x.single else None
        self._x_views = None if self._x is None else problem.x.views(self._x)
        self.inner = _operators().PREPARE[self.family](
            self.bound, x, *self._tangent(v), y=y, **_options(self.chunk, self.engine_named,
                                                              self.workers))
        self.preparations += 1
        # a gradient with out= of dicts, tuples, lists and arrays, and a call of one array
        # x and value: compiled, allocating nothing (cyad/_arguments/prepared.pyx), read by
        # the operators before this layer
        self.fast = None
        if not self.has_aux and isinstance(self.inner, _prep_type()):
            fast = PreparedCall(self.f, self.argnums, self.flat_result, self.bound, self.inner,
                                problem, arguments, np.asarray(x, problem.x.dtype), self._busy)
            self.fast = fast if fast.supported else None

    def _tangent(self, v):
        if self.family not in _TANGENT_OF:
            return ()
        return (_flat_tangent(self.problem, self.family, v),)

    @property
    def engine(self):
        """The engine that answers the flat problem's calls."""
        return self.inner.engine

    @property
    def records(self):
        """The times f was traced for this prep's tapes (0 on the dual engine)."""
        return getattr(self.inner.engine_state, "traces", 0)

    def call(self, wanted, f, arguments, v, y, out):
        if not self._busy.acquire(False):
            raise RuntimeError(_BUSY)
        try:
            leaves, spec = _flatten(arguments)
            problem = self.problem
            if f is not self.f and f != self.f:    # (a bound method is made at each access)
                self.f = f
                self._make(arguments, v, y)
            elif not problem.fits(leaves, spec) or not self.bound.set(
                    tuple([leaves[k] for k in problem.dynamic_index])):
                # x's structure must be the prep's; the others may change (anew)
                problem.x.leaves(problem.selected(arguments), "x")
                self._make(arguments, v, y)
            problem = self.problem
            if self._x is None:
                x = leaves[problem.x_index[0]]
            else:
                x = self._x
                for view, k in zip(self._x_views, problem.x_index):
                    np.copyto(view, leaves[k])
            return _answer(problem, self.family, wanted, self.bound, x, arguments, v, y, out,
                           self.flat_result, prep=self.inner)
        finally:
            self._busy.release()


class ArgumentsChanged(ValueError):
    """A call's other arguments no longer fit a sparse prep (made for their pattern)."""


class Arguments:
    """f(x, *args) as a Bound, for an operator of one array x (the sparse operators): the
    other arguments' input leaves set at every call (`bound_to`), static ones checked."""

    def __init__(self, f, x, args, two_argument):
        arguments = (x,) + tuple(args)
        self.problem = Problem(f, arguments, 0, False, two_argument)
        if not self.problem.x.single:
            raise TypeError("cyad: the sparse operators differentiate one array x (a "
                            "container of arrays is for the dense operators)")
        self.bound = Bound(self.problem.function, self.problem.input_leaves(arguments),
                           self.problem.x.dtype)

    def bound_to(self, x, args):
        """The Bound, its leaves this call's; ValueError where x's shape is not the prep's,
        ArgumentsChanged where the other arguments no longer fit it (a static one changed,
        a structure or a shape)."""
        leaves, spec = _flatten((x,) + tuple(args))
        if not self.problem.fits(leaves, spec) or not self.bound.set(
                tuple([leaves[k] for k in self.problem.dynamic_index])):
            self.problem.x.leaves(x, "x")     # (x's shape: a ValueError naming it)
            raise ArgumentsChanged("cyad: the arguments differ from the prep's in structure, "
                                   "shape or a static value (an int, a string, an object): "
                                   "the pattern and coloring were made for those; prepare "
                                   "anew")
        return self.bound


def _options(chunk, engine, workers):
    # the operators' options (derivative and second_derivative take no workers=)
    options = dict(chunk=chunk, engine=engine)
    if workers is not None:
        options["workers"] = workers
    return options


def _flat_tangent(problem, family, v):
    """A tangent (cotangent) as the flat problem's: a container flattened; for a single
    leaf as given (a tuple of them a batch, as the operators take it)."""
    tree = problem.x if _TANGENT_OF[family] == "x" else problem.value
    if tree is None or tree.single:
        return v
    return tree.flat(v, "the tangent" if family != "pullback" else "the cotangent")


def _answer(problem, family, wanted, function, x, arguments, v, y, out, flat, **options):
    """The call on the flat problem (`function` of the flat x; `options`: the prep, or
    chunk, engine and workers), its results read back into f's structures."""
    operator = _operators().OPERATORS[family][wanted]
    tangent = (_flat_tangent(problem, family, v),) if family in _TANGENT_OF else ()
    direct = problem.x.single and (problem.value is None or problem.value.single)
    r = operator(function, x, *tangent, y=y, out=out if direct else None, **options)
    if not direct:
        r = _read_back(problem, family, wanted, r, flat)
        if out is not None:
            _copy_into(out, r)
            r = out
    if problem.has_aux:
        aux = problem.plain_call(arguments, y)[1]
        if wanted & WITH_VALUE:
            return ((r[0], aux),) + tuple(r[1:])
        return r, aux
    return r


def _array(value):
    # a result as an array: an engine's array as it is (a nested differentiation's)
    return value if is_engine_array(value) else np.asarray(value)


def _read_back(problem, family, wanted, r, flat_result):
    """The flat problem's results in f's structures (see the module's docstring)."""
    xt, ft = problem.x, problem.value
    results = list(r) if wanted else [r]
    read = []
    parts = _parts(family, wanted)
    for part, value in zip(parts, results):
        if part == "value":
            read.append(ft.unflat(_array(value)) if ft is not None else value)
        elif part == "x-like":
            read.append(_each(value, xt.unflat))
        elif part == "f-like":
            read.append(_each(value, ft.unflat))
        elif part == "jacobian":
            read.append(value if flat_result else ft.outer(xt, _array(value)))
        else:   # hessian
            read.append(value if flat_result else xt.outer(xt, _array(value)))
    return tuple(read) if wanted else read[0]


def _each(value, unflat):
    # a batch (tuple) of results read back one by one
    if isinstance(value, tuple):
        return tuple(unflat(_array(v)) for v in value)
    return unflat(_array(value)) if np.ndim(value) else value


# what each family's result is like, and its first-order result's (second order)
_MAIN = {"pushforward": "f-like", "derivative": "f-like", "second_derivative": "f-like",
         "gradient": "x-like", "pullback": "x-like", "hvp": "x-like",
         "jacobian": "jacobian", "hessian": "hessian"}
_FIRST = {"second_derivative": "f-like", "hvp": "x-like", "hessian": "x-like"}


def _parts(family, wanted):
    # what each result of a family's call is, in order
    parts = []
    if wanted & WITH_VALUE:
        parts.append("value")
    if wanted & WITH_FIRST:
        parts.append(_FIRST[family])
    return parts + [_MAIN[family]]


def _copy_into(out, r):
    """Results written into out=, a structure like them."""
    out_leaves, out_spec = _flatten(out)
    r_leaves, r_spec = _flatten(r)
    if out_spec != r_spec:
        raise ValueError(f"cyad: out= has structure {out_spec}, but the result's is {r_spec}")
    for k, (o, a) in enumerate(zip(out_leaves, r_leaves)):
        if not isinstance(o, np.ndarray) or o.shape != np.shape(a):
            raise ValueError(f"cyad: leaf {k} of out= is not an ndarray of shape "
                             f"{np.shape(a)}")
        o[...] = a


def takes(x, args, argnums, has_aux, flat, prep):
    """Whether a call is this layer's: other arguments, argnums, has_aux, flat=, a
    container x, or one of its preps."""
    return (bool(args) or argnums != 0 or has_aux or flat or isinstance(prep, ArgumentsPrep)
            or is_container(x))


def call(family, wanted, f, x, args, v, y, prep, out, argnums, has_aux, flat, chunk, engine,
         workers):
    """An operator's call on f(x, *args)."""
    arguments = (x,) + tuple(args)
    if prep is not None:
        if not isinstance(prep, ArgumentsPrep):
            raise ValueError("cyad: this prep was made for f of one array x; a call with "
                             "other arguments, argnums=, has_aux= or a container x takes a "
                             "prep made with them")
        _check_form(prep, family, argnums, has_aux, flat)
        return prep.call(wanted, f, arguments, v, y, out)
    problem = Problem(f, arguments, argnums, has_aux, y is not None)
    options = _options(chunk, engine, workers)
    x = problem.x.flat(problem.selected(arguments), "x")
    if not problem.plain:
        # other arguments that are arrays of a differentiation around this call: f closes
        # over them (a nested differentiation reads them as its free inputs)
        leaves = problem.input_leaves(arguments)

        def closed_over(*xs):
            return problem.function(*xs, *leaves)

        return _answer(problem, family, wanted, closed_over, x, arguments, v, y, out, flat,
                       **options)
    bound = Bound(problem.function, problem.input_leaves(arguments), problem.x.dtype)
    return _answer(problem, family, wanted, bound, x, arguments, v, y, out, flat, **options)


def prepare(family, f, x, args, v, y, argnums, has_aux, flat, chunk, engine, workers):
    """A prepare_* function's prep of f(x, *args)."""
    return ArgumentsPrep(family, f, (x,) + tuple(args), v, y, argnums, has_aux, flat, chunk,
                         engine, workers)


def _check_form(prep, family, argnums, has_aux, flat):
    if prep.family != family:
        raise ValueError(f"cyad: this prep was made for {prep.family}, not {family}")
    if argnums != prep.argnums or has_aux != prep.has_aux or flat != prep.flat_result:
        raise ValueError(f"cyad: argnums={argnums!r}, has_aux={has_aux}, flat={flat} differ "
                         f"from the prep's (argnums={prep.argnums!r}, "
                         f"has_aux={prep.has_aux}, flat={prep.flat_result})")
