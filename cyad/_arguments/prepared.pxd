from cpython.object cimport PyObject, PyTypeObject

cimport numpy as cnp

from cyad._arguments.bound cimport Bound, LeafSource
from cyad._core cimport Family, Prep

cdef enum How:    # how an item is reached from its parent
    ROOT          # the parent is the call: root number `index`
    KEY           # a dict's value at `key`
    TUPLE_ITEM    # a tuple's (a namedtuple's) item `index`
    LIST_ITEM     # a list's item `index`


cdef enum Node:   # what an item is
    LEAF
    DICT
    TUPLE         # a tuple or a namedtuple (its exact type is checked)
    LIST
    NONE


cdef struct Item:
    Py_ssize_t parent     # the item it is found in, or -1 (a root)
    How how
    PyObject* key         # (held by Walk.keys)
    Py_ssize_t index
    Node node
    PyTypeObject* type    # a node's exact type (held by Walk.types)
    Py_ssize_t length     # a node's length


cdef struct Leaf:          # a leaf checked and copied by a call
    Py_ssize_t leaf        # its number among the Walk's leaves
    Py_ssize_t offset      # its bytes' place in the flat x (the result)
    Py_ssize_t nbytes
    int ndim
    cnp.npy_intp dims[32]  # (NPY_MAXDIMS)


# the places of a structure's nodes and leaves, found again in a call's (prepared.pyx)
cdef class Walk:
    cdef Item* items
    cdef Py_ssize_t count
    cdef Py_ssize_t* leaf_items      # the item of each leaf, in optree's order
    cdef Py_ssize_t n_leaves
    cdef PyObject** found            # the call's objects of each item (borrowed)
    cdef list keys, types            # what the items point to, held
    cdef readonly bint supported     # every node is of a form a Walk follows

    cdef _add(self, obj, Py_ssize_t parent, How how, key, Py_ssize_t index, list items,
              list leaves)
    cdef bint find(self, object first, tuple rest) except -1
    cdef PyObject* leaf(self, Py_ssize_t k) noexcept


# a prep's calls of f(x, *args) that allocate nothing: any call of one array x and one
# array value; x a structure: gradient, hvp, pullback, pushforward, jacobian with out=
cdef class PreparedCall(LeafSource):
    cdef Family family
    cdef object f, argnums, lock
    cdef bint flat, two_argument, direct
    cdef Bound bound
    cdef Prep inner
    cdef Walk walk, out_walk, v_walk
    cdef readonly bint supported
    cdef int typenum
    cdef cnp.ndarray x, v, result, value
    cdef cnp.ndarray matrix        # a Jacobian read into x's structure of blocks: the flat one
    cdef Py_ssize_t rows           # its rows (f's elements), or 0
    cdef Leaf* blocks              # out's blocks (their shapes)
    cdef tuple pair
    cdef Leaf* xs              # x's leaves (their places in the flat x)
    cdef Leaf* outs            # out's and an x-like tangent's (in the flat result, tangent)
    cdef Leaf* inputs          # the other arguments' input leaves (the Bound's order)
    cdef Py_ssize_t n_x, n_inputs, n_statics
    cdef Py_ssize_t* static_leaves
    cdef double* numbers       # the Python floats among the inputs, as the Bound reads them
    cdef list statics          # the static leaves, compared by identity

    cdef object call(self, Family family, object f, object x, tuple args, object argnums,
                     bint flat, object v, object y, object out, int wanted)
    cdef bint _arguments(self, object x, tuple args) except -1
    cdef object _direct(self, object v, object y, object out, int wanted)
    cdef object _structured(self, object v, object out, int wanted)
