"""The rule table's columns over whole arrays, for Python: what a tape records computes.

While f is traced (cyad/_tape/trace.py), a recorded instruction whose value is read
(by a guard of f's control flow, or a derivative rule of the primitive table) is
evaluated on the values, so that they see real numbers. The derivative kinds of a tape
(unary_d, binary_da, ...) have no NumPy ufunc: these evaluate them with the generated
rule code, in double precision (the result is cast to the operands' dtype).
"""
import numpy as np

cimport numpy as cnp
from cyad._rules.rules cimport unary_rule, unary_second, binary_rule, binary_second

cnp.import_array()

# what each derivative kind computes: the column of the rule
UNARY_COLUMNS = {"unary": 0, "unary_d": 1, "unary_d2": 2}
BINARY_COLUMNS = {"binary": 0, "binary_da": 1, "binary_db": 2, "binary_daa": 3,
                  "binary_dab": 4, "binary_dbb": 5}


def unary_column(str kind, int op, a):
    """Column `kind` (UNARY_COLUMNS) of unary rule `op` at every element of `a`."""
    cdef int column = UNARY_COLUMNS[kind]
    cdef cnp.ndarray[double, ndim=1] x = np.ascontiguousarray(a, np.float64).reshape(-1)
    cdef cnp.ndarray[double, ndim=1] out = np.empty_like(x)
    cdef Py_ssize_t i
    cdef double v, d
    for i in range(x.shape[0]):
        v = unary_rule(op, x[i], &d)
        out[i] = v if column == 0 else d if column == 1 else unary_second(op, x[i], v, d)
    return out.reshape(np.shape(a)).astype(np.result_type(a), copy=False)


def binary_column(str kind, int op, a, b):
    """Column `kind` (BINARY_COLUMNS) of binary rule `op` at a and b, broadcast."""
    cdef int column = BINARY_COLUMNS[kind]
    av, bv = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    cdef cnp.ndarray[double, ndim=1] x = np.ascontiguousarray(av).reshape(-1)
    cdef cnp.ndarray[double, ndim=1] y = np.ascontiguousarray(bv).reshape(-1)
    cdef cnp.ndarray[double, ndim=1] out = np.empty_like(x)
    cdef double partials[6]
    cdef Py_ssize_t i
    for i in range(x.shape[0]):
        partials[0] = binary_rule(op, x[i], y[i], &partials[1], &partials[2])
        if column > 2:
            binary_second(op, x[i], y[i], partials[0], partials[1], partials[2],
                          &partials[3], &partials[4], &partials[5])
        out[i] = partials[column]
    return out.reshape(av.shape).astype(np.result_type(a, b), copy=False)
