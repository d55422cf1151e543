"""A prep's calls of f(x, *args), in compiled code that allocates nothing.

cyad/_arguments/operators.py answers every call of f(x, *args) by flattening its structures
with optree, which allocates Python objects. Two forms of prepared calls take this path
instead, where the arguments' structures are dicts, tuples, lists, namedtuples and None
(`Walk`):

- any operator's call whose x is one array and f's value one array (SciPy's
  ``fun(x, *args)``, ``fun(t, y, *args)``), its tangent, y and out= handed to the prep as
  they are;
- x a structure and f's value one array: a gradient (and value_and_gradient), an hvp and a
  pullback with ``out=`` of x's structure, a Jacobian with ``out=`` of x's structure of
  blocks (f's shape + the leaf's), and with ``out=`` one array a pushforward and, with
  ``flat=True``, a Jacobian and a Hessian; the tangents of hvp and pushforward of x's
  structure.

Each node and leaf is found again in the call's arguments by the place it had when the prep
was made (a dict's key, a sequence's index), the nodes' types and lengths checked on the
way; x's leaves (and a tangent's) are copied into the flat x (tangent), the other arguments'
input leaves handed to the Bound by their memory (a Python float's number copied), the
static ones compared by identity, and x-like results copied from the flat result into out's
leaves. Anything else
(another form, a leaf that must be converted, a static leaf that is not the same object, a
nested differentiation) returns None: the Python layer answers, as it would have.
"""
import numpy as np
import optree

cimport numpy as cnp
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.object cimport PyObject, PyTypeObject, Py_TYPE
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from cyad._arguments.bound cimport Bound, LeafSource
from cyad._core cimport (Prep, WITH_VALUE, Family, GRADIENT, DERIVATIVE, HVP, PULLBACK,
                         PUSHFORWARD, JACOBIAN, HESSIAN)
from cyad._dual.array cimport differentiating

cnp.import_array()

cdef extern from "Python.h":
    PyObject* PyDict_GetItemWithError(object d, object key) except? NULL
    Py_ssize_t PyDict_GET_SIZE(object d)
    Py_ssize_t PyTuple_GET_SIZE(object t)
    PyObject* PyTuple_GET_ITEM(object t, Py_ssize_t i)
    Py_ssize_t PyList_GET_SIZE(object l)
    PyObject* PyList_GET_ITEM(object l, Py_ssize_t i)

cdef class Walk:
    """The items (nodes and leaves, depth first, leaves in optree's order) of the
    structures given as roots, found again in a call's roots of the same form."""

    def __init__(self, tuple roots):
        self.keys, self.types = [], []
        items, leaves = [], []
        self.supported = True
        for number, root in enumerate(roots):
            self._add(root, -1, ROOT, None, number, items, leaves)
        self.count, self.n_leaves = len(items), len(leaves)
        self.items = <Item*>malloc(max(self.count, 1) * sizeof(Item))
        self.leaf_items = <Py_ssize_t*>malloc(max(self.n_leaves, 1) * sizeof(Py_ssize_t))
        self.found = <PyObject**>malloc(max(self.count, 1) * sizeof(PyObject*))
        if self.items == NULL or self.leaf_items == NULL or self.found == NULL:
            raise MemoryError()
        for k, (parent, how, key, index, node, kind, length) in enumerate(items):
            self.items[k].parent, self.items[k].how = parent, how
            self.items[k].key, self.items[k].index = <PyObject*>key, index
            self.items[k].node, self.items[k].type = node, <PyTypeObject*>kind
            self.items[k].length = length
        for k, i in enumerate(leaves):
            self.leaf_items[k] = i

    def __dealloc__(self):
        free(self.items)
        free(self.leaf_items)
        free(self.found)

    cdef _add(self, obj, Py_ssize_t parent, How how, key, Py_ssize_t index, list items,
              list leaves):
        # obj's item, then its children's (depth first, in optree's order of children)
        cdef Py_ssize_t me = len(items)
        cdef Node node
        self.keys.append(key)
        self.types.append(type(obj))
        if optree.treespec_is_leaf(optree.tree_structure(obj, none_is_leaf=False)):
            items.append((parent, how, key, index, LEAF, type(obj), 0))
            leaves.append(me)
            return
        children, _, entries, _ = optree.tree_flatten_one_level(obj, none_is_leaf=False)
        if type(obj) is dict:
            node, child_how = DICT, KEY
        elif isinstance(obj, tuple) and (type(obj) is tuple or hasattr(obj, "_fields")):
            node, child_how = TUPLE, TUPLE_ITEM
        elif type(obj) is list:
            node, child_how = LIST, LIST_ITEM
        else:                  # None; another node (registered, OrderedDict, deque, ...)
            self.supported = self.supported and obj is None
            node, child_how = NONE, TUPLE_ITEM
        items.append((parent, how, key, index, node, type(obj), len(children)))
        for child, entry in zip(children, entries):
            if child_how == KEY:
                self._add(child, me, KEY, entry, 0, items, leaves)
            else:
                self._add(child, me, child_how, None, entry, items, leaves)

    cdef bint find(self, object first, tuple rest) except -1:
        """The call's objects of every item (roots: first, then rest's items): False where
        the form differs."""
        cdef Py_ssize_t i
        cdef Item* item
        cdef PyObject* parent
        cdef PyObject* obj
        for i in range(self.count):
            item = &self.items[i]
            if item.how == ROOT:
                if item.index == 0:
                    obj = <PyObject*>first
                elif item.index - 1 < PyTuple_GET_SIZE(rest):
                    obj = PyTuple_GET_ITEM(rest, item.index - 1)
                else:
                    return False
            else:
                parent = self.found[item.parent]
                if item.how == KEY:
                    obj = PyDict_GetItemWithError(<object>parent, <object>item.key)
                    if obj == NULL:
                        return False
                elif item.how == TUPLE_ITEM:
                    obj = PyTuple_GET_ITEM(<object>parent, item.index)
                else:
                    obj = PyList_GET_ITEM(<object>parent, item.index)
            if item.node != LEAF:
                if Py_TYPE(<object>obj) != item.type:
                    return False
                if item.node == DICT:
                    if PyDict_GET_SIZE(<object>obj) != item.length:
                        return False
                elif item.node == TUPLE:
                    if PyTuple_GET_SIZE(<object>obj) != item.length:
                        return False
                elif item.node == LIST:
                    if PyList_GET_SIZE(<object>obj) != item.length:
                        return False
            self.found[i] = obj
        return True

    cdef PyObject* leaf(self, Py_ssize_t k) noexcept:
        return self.found[self.leaf_items[k]]


cdef Leaf* _leaves(list numbers, list shapes, list offsets, Py_ssize_t itemsize) except NULL:
    # a malloc'd table of leaves (freed by the owner)
    cdef Py_ssize_t k, i
    cdef Leaf* table = <Leaf*>malloc(max(len(numbers), 1) * sizeof(Leaf))
    if table == NULL:
        raise MemoryError()
    for k in range(len(numbers)):
        table[k].leaf = numbers[k]
        table[k].offset = offsets[k] * itemsize
        table[k].nbytes = int(np.prod(shapes[k])) * itemsize
        table[k].ndim = len(shapes[k])
        if table[k].ndim > 32:
            free(table)
            raise ValueError("cyad: an array of more than 32 dimensions")
        for i in range(table[k].ndim):
            table[k].dims[i] = shapes[k][i]
    return table


cdef inline bint _array_of(PyObject* obj, int typenum, const Leaf* leaf,
                           bint writable) noexcept:
    # an ndarray of this dtype and the leaf's shape, C-contiguous (writeable where asked)
    cdef Py_ssize_t i
    cdef cnp.ndarray a
    if not cnp.PyArray_Check(<object>obj):
        return False
    a = <cnp.ndarray>obj
    if (cnp.PyArray_TYPE(a) != typenum or not cnp.PyArray_ISNOTSWAPPED(a)
            or not cnp.PyArray_IS_C_CONTIGUOUS(a) or cnp.PyArray_NDIM(a) != leaf.ndim
            or (writable and not cnp.PyArray_ISWRITEABLE(a))):
        return False
    for i in range(leaf.ndim):
        if cnp.PyArray_DIMS(a)[i] != leaf.dims[i]:
            return False
    return True


cdef class PreparedCall(LeafSource):
    """A prep's calls of f(x, *args) in one of the two forms of the module's docstring,
    compiled: its `call` holds the prep's lock (shared with the Python layer's calls) from
    its start."""

    def __init__(self, f, argnums, flat, Bound bound, Prep inner, problem, arguments, x_flat,
                 lock):
        cdef Py_ssize_t itemsize = x_flat.itemsize
        cdef Family family = inner.family
        self.family, self.f, self.argnums, self.flat = family, f, argnums, flat
        self.bound, self.inner, self.lock = bound, inner, lock
        self.two_argument = problem.two_argument
        # x one array and f's value one array: the prep's own arguments, as they are
        self.direct = problem.x.single and (problem.value is None or problem.value.single)
        self.walk = Walk(tuple(arguments))
        self.out_walk = Walk((problem.selected(arguments),))
        self.v_walk = Walk((problem.selected(arguments),))
        self.supported = self.walk.supported and (self.direct or (
            (family == GRADIENT or family == HVP or family == PULLBACK or family == PUSHFORWARD
             or family == JACOBIAN or (family == HESSIAN and flat))
            and not self.two_argument and self.out_walk.supported
            and (problem.value is None or problem.value.single)))
        self.typenum = cnp.PyArray_TYPE(<cnp.ndarray>x_flat)
        if not self.direct:     # (a direct call hands the prep the caller's arrays)
            self.x = np.empty_like(x_flat)
            self.v = np.empty_like(x_flat)
            self.result = np.empty_like(x_flat)
            self.value = np.zeros((), x_flat.dtype)
            self.pair = (self.value, self.result)
        self.n_x = len(problem.x_index)
        self.xs = _leaves(list(problem.x_index), list(problem.x.shapes),
                          list(problem.x.offsets), itemsize)
        # out's leaves: those of x's structure, in the same order
        self.outs = _leaves(list(range(self.n_x)), list(problem.x.shapes),
                            list(problem.x.offsets), itemsize)
        self.n_inputs = len(problem.dynamic_index)
        self.inputs = _leaves(list(problem.dynamic_index), list(bound.shapes),
                              [0] * self.n_inputs, bound.dtype.itemsize)
        self.numbers = <double*>malloc(max(self.n_inputs, 1) * sizeof(double))
        if self.numbers == NULL:
            raise MemoryError()
        self.statics = list(problem.static.values())
        self.n_statics = len(self.statics)
        self.static_leaves = <Py_ssize_t*>malloc(max(self.n_statics, 1) * sizeof(Py_ssize_t))
        if self.static_leaves == NULL:
            raise MemoryError()
        for k, number in enumerate(problem.static):
            self.static_leaves[k] = number
        # a Jacobian into x's structure of blocks: the flat one, then its columns' blocks
        self.rows = 0
        if family == JACOBIAN and not flat and not self.direct and self.supported:
            value_shape = tuple(problem.value.shapes[0])
            self.rows = problem.value.size
            self.matrix = np.empty((self.rows, x_flat.size), x_flat.dtype)
            self.blocks = _leaves(list(range(self.n_x)),
                                  [value_shape + tuple(s) for s in problem.x.shapes],
                                  list(problem.x.offsets), itemsize)

    def __dealloc__(self):
        free(self.blocks)
        free(self.xs)
        free(self.outs)
        free(self.inputs)
        free(self.static_leaves)
        free(self.numbers)

    cdef tuple current_leaves(self):
        return tuple([<object>self.walk.leaf(self.inputs[k].leaf)
                      for k in range(self.n_inputs)])

    cdef object call(self, Family family, object f, object x, tuple args, object argnums,
                     bint flat, object v, object y, object out, int wanted):
        """The call's result; None where the Python layer answers (the module's
        docstring)."""
        if (not self.supported or family != self.family or f is not self.f
                or flat != self.flat or (y is not None) != self.two_argument
                or differentiating()):
            return None
        if not (argnums is self.argnums or argnums == self.argnums):
            return None
        if not self.lock.acquire(False):
            return None             # (the Python layer says the prep is busy)
        try:
            if not self._arguments(x, args):
                return None
            if self.direct:
                return self._direct(v, y, out, wanted)
            return self._structured(v, out, wanted)
        finally:
            self.bound.source = None
            self.lock.release()

    cdef bint _arguments(self, object x, tuple args) except -1:
        # the call's arguments found and checked, the input leaves handed to the Bound
        cdef Py_ssize_t k
        cdef PyObject* leaf
        if not self.walk.find(x, args):
            return False
        for k in range(self.n_statics):
            if self.walk.leaf(self.static_leaves[k]) != <PyObject*>self.statics[k]:
                return False
        if not self.direct:
            for k in range(self.n_x):
                if not _array_of(self.walk.leaf(self.xs[k].leaf), self.typenum, &self.xs[k],
                                 False):
                    return False
        for k in range(self.n_inputs):
            leaf = self.walk.leaf(self.inputs[k].leaf)
            if self.inputs[k].ndim == 0 and PyFloat_CheckExact(<object>leaf):
                continue            # (a Python float: its number is copied below)
            if not _array_of(leaf, self.bound.typenum, &self.inputs[k], False):
                return False
        for k in range(self.n_inputs):
            leaf = self.walk.leaf(self.inputs[k].leaf)
            if cnp.PyArray_Check(<object>leaf):
                self.bound.data[k] = cnp.PyArray_DATA(<cnp.ndarray>leaf)
            else:                   # a Python float, in the prep's dtype
                if self.bound.typenum == cnp.NPY_FLOAT:
                    (<float*>(self.numbers + k))[0] = <float>PyFloat_AS_DOUBLE(<object>leaf)
                else:
                    self.numbers[k] = PyFloat_AS_DOUBLE(<object>leaf)
                self.bound.data[k] = &self.numbers[k]
        self.bound.source = self
        return True

    cdef object _direct(self, object v, object y, object out, int wanted):
        # x, the tangent, y and out as the prep takes them (it checks them)
        x = <object>self.walk.leaf(self.xs[0].leaf)
        return self.inner.call(self.bound, x, 1.0 if self.family == DERIVATIVE else v, y,
                               out, wanted)

    cdef object _structured(self, object v, object out, int wanted):
        # x a structure: its leaves copied into the flat x (an x-like tangent's into the
        # flat tangent); the result into out as it is (one array), into out's leaves (x's
        # structure), or from the flat Jacobian into out's blocks
        cdef Py_ssize_t k, r
        cdef object value_out = None, result_out, tangent = v
        cdef char* xp = <char*>cnp.PyArray_DATA(self.x)
        cdef char* vp = <char*>cnp.PyArray_DATA(self.v)
        cdef const char* rp = <const char*>cnp.PyArray_DATA(self.result)
        cdef const char* mp
        cdef char* block
        cdef bint one_array = self.family == PUSHFORWARD or (
            self.rows == 0 and (self.family == JACOBIAN or self.family == HESSIAN))
        if self.family == HVP or self.family == PUSHFORWARD:
            if not self.v_walk.find(v, ()):
                return None
            for k in range(self.n_x):
                if not _array_of(self.v_walk.leaf(k), self.typenum, &self.outs[k], False):
                    return None
            tangent = self.v
        # the output: out itself, or (value_out, out) for value_and_gradient
        if wanted == WITH_VALUE and self.family == GRADIENT:
            if type(out) is not tuple or PyTuple_GET_SIZE(out) != 2:
                return None
            value_out = <object>PyTuple_GET_ITEM(out, 0)
            if not (cnp.PyArray_Check(value_out)
                    and cnp.PyArray_TYPE(<cnp.ndarray>value_out) == self.typenum
                    and cnp.PyArray_NDIM(<cnp.ndarray>value_out) == 0
                    and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>value_out)):
                return None
            result_out = <object>PyTuple_GET_ITEM(out, 1)
        elif wanted == 0 and out is not None:
            result_out = out
        else:
            return None
        if not one_array:       # (one array: the prep checks it)
            if not self.out_walk.find(result_out, ()):
                return None
            for k in range(self.n_x):
                if not _array_of(self.out_walk.leaf(k), self.typenum,
                                 &self.blocks[k] if self.rows else &self.outs[k], True):
                    return None
        for k in range(self.n_x):
            memcpy(xp + self.xs[k].offset,
                   cnp.PyArray_DATA(<cnp.ndarray>self.walk.leaf(self.xs[k].leaf)),
                   self.xs[k].nbytes)
        if tangent is self.v:
            for k in range(self.n_x):
                memcpy(vp + self.outs[k].offset,
                       cnp.PyArray_DATA(<cnp.ndarray>self.v_walk.leaf(k)), self.outs[k].nbytes)
        if one_array:
            return self.inner.call(self.bound, self.x, tangent, None, out, 0)
        if self.rows:           # a Jacobian: each row's columns of leaf k into its block
            self.inner.call(self.bound, self.x, None, None, self.matrix, 0)
            mp = <const char*>cnp.PyArray_DATA(self.matrix)
            for k in range(self.n_x):
                block = <char*>cnp.PyArray_DATA(<cnp.ndarray>self.out_walk.leaf(k))
                for r in range(self.rows):
                    memcpy(block + r * self.outs[k].nbytes,
                           mp + r * cnp.PyArray_NBYTES(self.x) + self.outs[k].offset,
                           self.outs[k].nbytes)
            return out
        self.inner.call(self.bound, self.x, tangent, None,
                        self.pair if wanted == WITH_VALUE else self.result, wanted)
        for k in range(self.n_x):
            memcpy(cnp.PyArray_DATA(<cnp.ndarray>self.out_walk.leaf(k)),
                   rp + self.outs[k].offset, self.outs[k].nbytes)
        if wanted == WITH_VALUE:
            memcpy(cnp.PyArray_DATA(<cnp.ndarray>value_out), cnp.PyArray_DATA(self.value),
                   cnp.PyArray_NBYTES(self.value))
        return out
