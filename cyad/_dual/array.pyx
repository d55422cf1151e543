"""Dual arrays: what a Python callable receives while cyad differentiates it.

A `Dual` holds a values array of shape S and a partials array of shape S + (width,)
of the same dtype (float64 or float32). It behaves like an ndarray: arithmetic,
broadcasting, indexing and assignment, NumPy ufuncs through `__array_ufunc__`
(each one a rule of `_rules/rules.pxd` run by the chunk loops of `_dual/kernels.pyx`; their
methods reduce, accumulate, outer and at in `_primitives/ufunc_methods.py`) and
NumPy functions through `__array_function__` (`_dual/functions.py`).

Every dual carries the `Tag` of its differentiation: a first-order one, or the nested tag
of a second-order one (hessian, hvp, second_derivative), whose lanes hold the partials
along its outer directions, its inner ones and the second derivatives across them (the
second-order layout of cyad/_dual/layout.pxd); the elementwise rules add their
second-derivative terms from the rule table's second column. Duals of two
differentiations never meet: a differentiation inside another traces its f and derives a
program (cyad/_nested.py), which the dual engine evaluates on its duals; a dual of a
finished call meeting a live one is refused.

In-place operations (operators, out=) read their operands as they were before the
result is written, whatever the overlap, as NumPy's do: the kernels allow an output
that is an operand's very memory, and any other overlap is computed apart, then copied.
NumPy's floating-point warnings (and np.errstate) apply to the values, as in NumPy.

Nothing here ever drops a derivative silently: converting a dual to a float or
a plain ndarray raises TypeError, and so does any NumPy function or ufunc cyad
does not know.
"""
import operator

import numpy as np

cimport numpy as cnp
from cpython.float cimport PyFloat_CheckExact
from cpython.long cimport PyLong_CheckExact
from cpython.complex cimport PyComplex_Check
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.math cimport isinf
from libc.string cimport memcpy, memmove

from cyad._fused cimport real
from cyad._dual.kernels cimport unary_chunks, binary_chunks, unary_nested, binary_nested
from cyad._dual.layout cimport second_order_width
from cyad._array_methods cimport defers_to
from cyad._rules.rules cimport UnaryOp, BinaryOp
from cyad import _hints
from cyad._rules import table as _rule_table
from cyad._stacked import stacked

cnp.import_array()

cdef extern from "Python.h":
    ctypedef struct PySequenceMethods:
        void* sq_item
    ctypedef struct _TypeSlots "PyTypeObject":
        PySequenceMethods* tp_as_sequence

_CONVERSION_HINT = _hints.conversion_hint("dual arrays")

_MIXED = ("cyad: dual arrays of two differentiations met: a dual array is valid only inside "
          "the call that made it")


# -- tags: which differentiation a dual belongs to ---------------------------------

cdef extern from *:
    """
    /* differentiations of Python callables running in this thread (dual engines running
       f, tapes recording it), one inside another */
    static _Thread_local int cyad_nesting_depth = 0;
    """
    int cyad_nesting_depth


cdef class Tag:
    """Marks the dual arrays of one differentiation: first order, or the nested tag of a
    second-order one (its outer and inner directions)."""

    def __init__(self, Py_ssize_t width):
        self.width = width

    @property
    def is_nested(self):
        return self.outer is not None

    def __repr__(self):
        if self.outer is None:
            return f"<cyad.Tag of {self.width} lanes>"
        return f"<cyad.Tag nesting {self.inner!r} in {self.outer!r}>"


cdef Tag nested_tag(Tag outer, Tag inner):
    """The tag of second-order duals: `inner`'s directions inside `outer`'s."""
    cdef Tag t = inner.nested
    if t is not None and t.outer is outer:
        return t
    t = Tag.__new__(Tag)
    t.width = second_order_width(outer.width, inner.width)
    t.outer = outer
    t.inner = inner
    inner.nested = t
    return t


cpdef void enter() noexcept:
    """A differentiation of a Python callable starts running f (a dual engine evaluating it,
    a tape recording it): a cyad operator f calls nests (`differentiating`)."""
    global cyad_nesting_depth
    cyad_nesting_depth += 1


cpdef void leave() noexcept:
    global cyad_nesting_depth
    cyad_nesting_depth -= 1


cdef bint differentiating() noexcept:
    """Whether this thread runs inside a differentiation of a Python callable (inside its f)."""
    return cyad_nesting_depth > 0


def make_nested_tag(Tag outer, Tag inner):
    """The tag of second-order duals: `inner`'s directions inside `outer`'s (for code that
    builds such duals by hand: the layout's tests)."""
    return nested_tag(outer, inner)


def tagged_dual(cnp.ndarray values, cnp.ndarray partials, Tag tag):
    """A dual of `tag` (partials: values.shape + (tag.width,))."""
    return new_dual(values, partials, tag.width, tag)


def mixed_differentiations():
    """The error of duals of two differentiations that met (one of them stale)."""
    return TypeError(_MIXED)


cdef Dual new_dual(cnp.ndarray values, cnp.ndarray partials, Py_ssize_t width, Tag tag):
    cdef Dual d = Dual.__new__(Dual)
    d.values = values
    d.partials = partials
    d.width = width
    d.tag = tag
    return d


def make_dual(values, partials, Dual like):
    """A dual with `like`'s tag and width from a values and a partials array."""
    return new_dual(values, partials, like.width, like.tag)


def primal(x):
    """The values of a dual, or of another engine's array (a tape's tracer: reading them is
    recorded, `__cyad_value__`); anything else unchanged."""
    if isinstance(x, Dual):
        return (<Dual>x).values
    read = getattr(type(x), "__cyad_value__", None)
    return x if read is None else read(x)


def float_dtype(dtype):
    """The dtype a dual result is computed in: float32 stays, other reals become float64."""
    if dtype == np.float32:
        return np.dtype(np.float32)
    if dtype.kind in "biuf" and dtype.itemsize <= 8:
        return np.dtype(np.float64)
    raise TypeError(f"cyad: dual arrays hold float64 or float32, not {dtype}")


cdef Dual _common_dual(object a, object b):
    # the dual operand of a binary operation (both belong to one differentiation)
    return <Dual>a if isinstance(a, Dual) else <Dual>b


# -- floating-point warnings -----------------------------------------------------------
# The kernels compute in C, where NumPy's checks of the floating-point status do not run.
# When a kernel raises a status flag, the operation computes its values once more with
# NumPy's own ufunc on the same operands, so that NumPy warns (or raises) exactly as it
# would in plain NumPy code, under the caller's np.errstate; a flag raised only by a
# derivative (sqrt at 0) leaves no trace.

from cyad._fp_flags cimport clear_fp_flags, raised_fp_flags


# The ufunc of a rule, for those second computations: the first one the rule table lists
# for it; for x**y (and its variants) the operator, as NumPy's arrays compute it (x**2 as
# np.square, which names its warnings).
# (scipy.special's resolved when first needed: SciPy is imported by then)
_UFUNC_OF_UNARY = _rule_table.FirstUfuncs(_rule_table.UNARY_RULES)
_UFUNC_OF_BINARY = _rule_table.FirstUfuncs(_rule_table.BINARY_RULES)
for _op in (BinaryOp.POWER, BinaryOp.POWER_CONST_EXPONENT, BinaryOp.POWER_CONST_BASE):
    _UFUNC_OF_BINARY[_op] = operator.pow
del _op


# -- the elementwise operations -------------------------------------------------
# A result goes into a fresh dual, or into `out` (in-place operators, ufuncs with out=).
# The kernels (cyad._dual.kernels) read each element's inputs before writing its outputs, so
# `out` may be the very memory of an operand; any other overlap (a shifted or reversed
# view, an element of out broadcast as an operand) is computed into a fresh dual, then
# copied into out.

cdef inline bint _contiguous(Dual d):
    return cnp.PyArray_IS_C_CONTIGUOUS(d.values) and cnp.PyArray_IS_C_CONTIGUOUS(d.partials)


cdef inline bint _fits(Dual d, Dual like):
    # a contiguous dual of like's differentiation, dtype and shape
    return (d.tag is like.tag and _contiguous(d)
            and cnp.PyArray_TYPE(d.values) == cnp.PyArray_TYPE(like.values)
            and cnp.PyArray_SAMESHAPE(d.values, like.values))


cdef inline bint _disjoint(cnp.ndarray a, cnp.ndarray b):
    # the bytes of two C-contiguous arrays do not overlap
    cdef char* a0 = <char*>cnp.PyArray_DATA(a)
    cdef char* b0 = <char*>cnp.PyArray_DATA(b)
    return a0 + cnp.PyArray_NBYTES(a) <= b0 or b0 + cnp.PyArray_NBYTES(b) <= a0


cdef inline bint _readable_into(Dual x, Dual out):
    """Whether a kernel writing `out` may read x (both fitting one shape): x is out's very
    memory, or apart from it."""
    if cnp.PyArray_DATA(x.values) == cnp.PyArray_DATA(out.values):
        return cnp.PyArray_DATA(x.partials) == cnp.PyArray_DATA(out.partials)
    return _disjoint(x.values, out.values) and _disjoint(x.partials, out.partials)


cdef Dual _empty_like_result(tuple shape, object dtype, Dual like):
    values = np.empty(shape, dtype)
    return new_dual(values, np.empty(shape + (like.width,), dtype), like.width, like.tag)


cdef Dual _target(object out, tuple shape, object dtype, Dual like, tuple operands):
    """Where a result is computed: `out` itself when safe, else a fresh dual."""
    cdef Dual o
    if out is None:
        return _empty_like_result(shape, dtype, like)
    if not isinstance(out, Dual):
        raise TypeError("cyad: the result of an operation on dual arrays must go into a dual "
                        "array, not a plain ndarray (the derivative would be lost). "
                        + _CONVERSION_HINT)
    o = <Dual>out
    if (<object>o.values).shape != shape:
        raise ValueError(f"cyad: output of shape {(<object>o.values).shape} cannot hold a "
                         f"result of shape {shape}")
    if (o.tag is like.tag and o.values.dtype == dtype and _contiguous(o)
            and not _overlaps(o, operands)):
        return o
    return _empty_like_result(shape, dtype, like)


cdef bint _overlaps(Dual o, tuple operands):
    # memory shared with an operand (its values or partials), unless it is the very same
    # elements in the same layout
    for x in operands:
        if isinstance(x, Dual):
            if not (_same_layout((<Dual>x).values, o.values)
                    and _same_layout((<Dual>x).partials, o.partials)) and (
                    np.may_share_memory((<Dual>x).values, o.values)
                    or np.may_share_memory((<Dual>x).partials, o.partials)):
                return True
        elif isinstance(x, np.ndarray) and np.may_share_memory(x, o.values):
            return True
    return False


cdef bint _same_layout(cnp.ndarray a, cnp.ndarray b):
    cdef int i
    if cnp.PyArray_DATA(a) != cnp.PyArray_DATA(b) or not cnp.PyArray_SAMESHAPE(a, b):
        return False
    for i in range(cnp.PyArray_NDIM(a)):
        if cnp.PyArray_STRIDES(a)[i] != cnp.PyArray_STRIDES(b)[i]:
            return False
    return True


cdef object _finish(Dual result, object out):
    # copy into `out` when the result could not be computed there directly
    if out is None or result is out:
        return result
    out[...] = result
    return out


cdef Dual _new_like(Dual x, int typenum):
    """A fresh C-contiguous dual of x's shape, width and tag, in dtype `typenum`."""
    cdef cnp.npy_intp dims[65]
    cdef int i, nd = cnp.PyArray_NDIM(x.values)
    for i in range(nd):
        dims[i] = cnp.PyArray_DIMS(x.values)[i]
    dims[nd] = x.width
    return new_dual(cnp.PyArray_EMPTY(nd, dims, typenum, 0),
                    cnp.PyArray_EMPTY(nd + 1, dims, typenum, 0), x.width, x.tag)


# -- running a kernel -------------------------------------------------------------------

cdef extern from *:
    """
    /* A buffer per thread for the values of an operand that its own result overwrites,
       kept for the check of NumPy's warnings: grown on demand and kept up to 1 MiB, so
       in-place updates allocate nothing once warm (larger ones get a buffer per call). */
    #define CYAD_KEPT_SCRATCH (1 << 20)
    static _Thread_local char* cyad_scratch = NULL;
    static _Thread_local size_t cyad_scratch_size = 0;

    static char* cyad_scratch_acquire(size_t size) {
        char* grown;
        if (size > CYAD_KEPT_SCRATCH)
            return (char*)malloc(size);
        if (size > cyad_scratch_size) {
            grown = (char*)realloc(cyad_scratch, size);
            if (grown == NULL)
                return NULL;
            cyad_scratch = grown;
            cyad_scratch_size = size;
        }
        return cyad_scratch;
    }

    static void cyad_scratch_release(char* scratch) {
        if (scratch != cyad_scratch)
            free(scratch);
    }
    """
    char* cyad_scratch_acquire(size_t size) nogil
    void cyad_scratch_release(char* scratch) nogil


cdef enum:
    # kernels of at least this many lanes let other threads run meanwhile (for fewer,
    # releasing and taking the GIL back costs more than it gives)
    RELEASE_GIL_LANES = 4096


cdef int _run(int op, bint is_binary, Tag tag, Py_ssize_t width, Py_ssize_t n, int typenum,
              const char* av, Py_ssize_t a_step, const char* ap, object a_value,
              const char* bv, Py_ssize_t b_step, const char* bp, object b_value,
              char* yv, char* yp, bint raised) except -1:
    """y = op(a) or op(a, b) over n elements of C-contiguous buffers, then NumPy's warnings.

    Steps and NULL partials as in cyad._dual.kernels; a_value and b_value are the operands as
    NumPy takes them (arrays or numbers), for the warnings (`raised`: a flag raised already,
    converting an operand). y may be an operand's very memory (see _run_over_operand).
    """
    cdef Py_ssize_t outer = 0, inner = 0
    if n == 0:      # nothing to compute, nor to warn about (and no scratch of 0 bytes)
        return 0
    if tag.outer is not None:
        outer, inner = tag.outer.width, tag.inner.width
    if av == yv or (is_binary and bv == yv):
        return _run_over_operand(op, is_binary, outer, inner, width, n, typenum, av, a_step, ap,
                                 a_value, bv, b_step, bp, b_value, yv, yp, raised)
    if _compute(op, is_binary, outer, inner, width, n, typenum, av, a_step, ap, bv, b_step, bp,
                yv, yp) or raised:
        _numpy_warnings(op, is_binary, a_value, b_value)
    return 0


cdef int _run_over_operand(int op, bint is_binary, Py_ssize_t outer, Py_ssize_t inner,
                           Py_ssize_t width, Py_ssize_t n, int typenum,
                           const char* av, Py_ssize_t a_step, const char* ap, object a_value,
                           const char* bv, Py_ssize_t b_step, const char* bp, object b_value,
                           char* yv, char* yp, bint raised) except -1:
    # _run where y is an operand's memory: the operand's values are kept, for the
    # warnings, before the kernel overwrites them
    cdef Py_ssize_t nbytes = n * (8 if typenum == cnp.NPY_FLOAT64 else 4)
    cdef object kept = None
    cdef char* saved = cyad_scratch_acquire(nbytes)
    if saved == NULL:
        raise MemoryError()
    memcpy(saved, yv, nbytes)
    try:
        raised = _compute(op, is_binary, outer, inner, width, n, typenum, av, a_step, ap,
                          bv, b_step, bp, yv, yp) or raised
        if raised:
            kept = PyBytes_FromStringAndSize(saved, nbytes)
    finally:
        # before anything that may run Python code, which may update duals in place too
        cyad_scratch_release(saved)
    if raised:
        if av == yv:
            a_value = _kept_array(kept, typenum, a_value)
        if is_binary and bv == yv:
            b_value = _kept_array(kept, typenum, b_value)
        _numpy_warnings(op, is_binary, a_value, b_value)
    return 0


cdef bint _compute(int op, bint is_binary, Py_ssize_t outer, Py_ssize_t inner, Py_ssize_t width,
                   Py_ssize_t n, int typenum, const char* av, Py_ssize_t a_step, const char* ap,
                   const char* bv, Py_ssize_t b_step, const char* bp,
                   char* yv, char* yp) noexcept:
    # the kernel, and whether it raised a floating-point flag
    cdef bint raised
    if n * width < RELEASE_GIL_LANES:
        return _flagged_kernel(op, is_binary, outer, inner, width, n, typenum, av, a_step, ap,
                               bv, b_step, bp, yv, yp)
    with nogil:
        raised = _flagged_kernel(op, is_binary, outer, inner, width, n, typenum, av, a_step, ap,
                                 bv, b_step, bp, yv, yp)
    return raised


cdef bint _flagged_kernel(int op, bint is_binary, Py_ssize_t outer, Py_ssize_t inner,
                          Py_ssize_t width, Py_ssize_t n, int typenum, const char* av,
                          Py_ssize_t a_step, const char* ap, const char* bv, Py_ssize_t b_step,
                          const char* bp, char* yv, char* yp) noexcept nogil:
    clear_fp_flags()
    if typenum == cnp.NPY_FLOAT64:
        _kernel(<double*>NULL, op, is_binary, outer, inner, width, n, av, a_step, ap,
                bv, b_step, bp, yv, yp)
    else:
        _kernel(<float*>NULL, op, is_binary, outer, inner, width, n, av, a_step, ap,
                bv, b_step, bp, yv, yp)
    return raised_fp_flags() != 0


cdef inline void _kernel(real* kind, int op, bint is_binary, Py_ssize_t outer, Py_ssize_t inner,
                         Py_ssize_t width, Py_ssize_t n, const char* av, Py_ssize_t a_step,
                         const char* ap, const char* bv, Py_ssize_t b_step, const char* bp,
                         char* yv, char* yp) noexcept nogil:
    # the first-order kernel, or the nested one of duals of a nested tag (outer > 0)
    if is_binary and outer:
        binary_nested(op, outer, inner, width, n, <const real*>av, a_step, <const real*>ap,
                      <const real*>bv, b_step, <const real*>bp, <real*>yv, <real*>yp)
    elif is_binary:
        binary_chunks(op, width, n, <const real*>av, a_step, <const real*>ap,
                      <const real*>bv, b_step, <const real*>bp, <real*>yv, <real*>yp)
    elif outer:
        unary_nested(op, outer, inner, width, n, <const real*>av, <const real*>ap,
                     <real*>yv, <real*>yp)
    else:
        unary_chunks(op, width, n, <const real*>av, <const real*>ap, <real*>yv, <real*>yp)


cdef object _kept_array(bytes kept, int typenum, object like):
    # the kept values of an operand, as an array shaped like it
    values = np.frombuffer(kept, np.float64 if typenum == cnp.NPY_FLOAT64 else np.float32)
    return values.reshape(np.shape(like))


cdef int _numpy_warnings(int op, bint is_binary, object a_value, object b_value) except -1:
    # the values once more through NumPy, for its warnings alone
    if is_binary:
        ufunc = _UFUNC_OF_BINARY[op]
        ufunc(*_rule_table.numpy_operands(ufunc, a_value, b_value))
    else:
        _UFUNC_OF_UNARY[op](a_value)
    return 0


# -- unary and binary operations ----------------------------------------------------------

cdef object unary(int op, Dual x, object out=None):
    cdef Dual y, xc
    cdef int typenum = cnp.PyArray_TYPE(x.values)
    if _contiguous(x):
        # the common cases, without any NumPy-level call
        if out is None:
            y = _new_like(x, typenum)
            _run_unary(op, x, y)
            return y
        if type(out) is Dual and _fits(<Dual>out, x) and _readable_into(x, <Dual>out):
            _run_unary(op, x, <Dual>out)
            return out
    shape = _result_shape((<object>x.values).shape, out)
    xb = x if shape == (<object>x.values).shape else _numpy(np.broadcast_to)(x, shape)
    xc = new_dual(np.ascontiguousarray(xb.values), np.ascontiguousarray(xb.partials), x.width,
                  x.tag)
    y = _target(out, shape, (<object>x.values).dtype, x, (x,))
    _run_unary(op, xc, y)
    return _finish(y, out)


cdef tuple _result_shape(tuple shape, object out):
    # the shape of an operation's result: its operands' broadcast into out's, as in NumPy
    if not isinstance(out, Dual) or (<Dual>out).shape == shape:
        return shape
    if np.broadcast_shapes(shape, (<Dual>out).shape) != (<Dual>out).shape:
        raise ValueError(f"cyad: output of shape {(<Dual>out).shape} cannot hold a result of "
                         f"shape {shape}")
    return (<Dual>out).shape


cdef int _run_unary(int op, Dual x, Dual y) except -1:
    return _run(op, False, y.tag, x.width, cnp.PyArray_SIZE(x.values), cnp.PyArray_TYPE(x.values),
                <char*>cnp.PyArray_DATA(x.values), 1, <char*>cnp.PyArray_DATA(x.partials), x.values,
                NULL, 0, NULL, None,
                <char*>cnp.PyArray_DATA(y.values), <char*>cnp.PyArray_DATA(y.partials), False)


cdef class _Operand:
    # one operand of a binary operation, laid out for the kernel:
    # step 0 broadcasts a single element, partials None marks a constant
    cdef cnp.ndarray values
    cdef object partials
    cdef Py_ssize_t step


cdef _Operand _operand(object x, tuple shape, object dtype, Py_ssize_t width):
    cdef _Operand o = _Operand.__new__(_Operand)
    if isinstance(x, Dual):
        v = (<Dual>x).values
        p = (<Dual>x).partials
    else:
        v = np.asarray(x)
        p = None
    if v.size == 1:
        o.step = 0
        o.values = np.ascontiguousarray(v.reshape(1), dtype=dtype)
        o.partials = None if p is None else np.ascontiguousarray(p.reshape(width), dtype=dtype)
    else:
        o.step = 1
        if v.shape != shape:
            v = np.broadcast_to(v, shape)
            p = None if p is None else np.broadcast_to(p, shape + (width,))
        o.values = np.ascontiguousarray(v, dtype=dtype)
        o.partials = None if p is None else np.ascontiguousarray(p, dtype=dtype)
    return o


cdef inline object _array_like(object x):
    # a list or tuple operand is an array; numbers stay Python numbers (weakly typed in NumPy)
    return np.asarray(x) if isinstance(x, (list, tuple)) else x


cdef inline char* _data_or_null(object a):
    return NULL if a is None else <char*>cnp.PyArray_DATA(<cnp.ndarray>a)


cdef inline bint _foreign(object x):
    # another engine's array (a tracer of a tape recording around this differentiation or
    # inside it): the operation is that engine's to record (it lifts the dual)
    return (type(x) is not Dual and not PyFloat_CheckExact(x) and not cnp.PyArray_CheckExact(x)
            and getattr(type(x), "__cyad_value__", None) is not None)


cdef inline bint _complex(object x):
    # a complex operand (a Python complex, a complex ndarray or scalar, a complex array of
    # cyad._complex): the operation is cyad._complex's, on the real and imaginary parts
    if type(x) is Dual or PyFloat_CheckExact(x):
        return False
    if PyComplex_Check(x):
        return True
    if cnp.PyArray_Check(x):
        return cnp.PyArray_ISCOMPLEX(<cnp.ndarray>x)
    return isinstance(x, np.complexfloating) or getattr(type(x), "__cyad_complex__", False)


cdef bint _complex_among(object values):
    # (a list or tuple operand's items too: np.concatenate's)
    for x in values:
        if type(x) is list or type(x) is tuple:
            for y in x:
                if _complex(y):
                    return True
        elif _complex(x):
            return True
    return False


_COMPLEX = None


def _complex_module():
    global _COMPLEX
    if _COMPLEX is None:
        import cyad._complex
        _COMPLEX = cyad._complex
    return _COMPLEX


cdef object _complex_binary(int op, object a, object b, object out):
    ufunc = np.power if op in (BinaryOp.POWER, BinaryOp.POWER_CONST_EXPONENT,
                               BinaryOp.POWER_CONST_BASE) else _UFUNC_OF_BINARY[op]
    return _complex_module().ufunc_call(ufunc, "__call__", (a, b),
                                        {} if out is None else {"out": out})


cdef object binary(int op, object a, object b, object out=None):
    cdef object result = _binary_fast(op, a, b, out)
    if result is not None:
        return result
    if _foreign(a) or _foreign(b):
        return NotImplemented
    if op == BinaryOp.MULTIPLY and (defers_to(a) or defers_to(b)):
        return NotImplemented   # (x * A of scipy.sparse's matrix API: its product)
    if _complex(a) or _complex(b) or (out is not None and _complex(out)):
        return _complex_binary(op, a, b, out)
    if isinstance(a, Dual) and isinstance(b, Dual) and (<Dual>a).tag is not (<Dual>b).tag:
        raise TypeError(_MIXED)
    cdef Dual like = _common_dual(a, b)
    a = _array_like(a)
    b = _array_like(b)
    cdef object dtype = float_dtype(np.result_type(primal(a), primal(b)))
    shape = _result_shape(np.broadcast_shapes(np.shape(primal(a)), np.shape(primal(b))), out)
    cdef _Operand oa = _operand(a, shape, dtype, like.width)
    cdef _Operand ob = _operand(b, shape, dtype, like.width)
    cdef Dual y = _target(out, shape, dtype, like, (a, b))
    _run(op, True, y.tag, like.width, cnp.PyArray_SIZE(y.values), cnp.PyArray_TYPE(y.values),
         <char*>cnp.PyArray_DATA(oa.values), oa.step, _data_or_null(oa.partials), primal(a),
         <char*>cnp.PyArray_DATA(ob.values), ob.step, _data_or_null(ob.partials), primal(b),
         <char*>cnp.PyArray_DATA(y.values), <char*>cnp.PyArray_DATA(y.partials), False)
    return _finish(y, out)


cdef object _binary_fast(int op, object a, object b, object out):
    """The common cases without any NumPy-level call, or None.

    Two contiguous duals of one differentiation, shape and dtype; or a contiguous dual
    and a Python float or int (which, like in NumPy, takes the dual's dtype). The result
    goes into a new dual, or into `out` when it is such a dual too and every operand is
    either out itself or apart from it.
    """
    cdef Dual d = None, y
    if type(a) is Dual:
        d = <Dual>a
        if type(b) is Dual:
            if not _fits(<Dual>b, d):
                return None
        elif not (PyFloat_CheckExact(b) or PyLong_CheckExact(b)):
            return None
    elif type(b) is Dual and (PyFloat_CheckExact(a) or PyLong_CheckExact(a)):
        d = <Dual>b
    if d is None or not _contiguous(d):
        return None
    if out is None:
        y = _new_like(d, cnp.PyArray_TYPE(d.values))
    elif (type(out) is Dual and _fits(<Dual>out, d)
            and (type(a) is not Dual or _readable_into(<Dual>a, <Dual>out))
            and (type(b) is not Dual or _readable_into(<Dual>b, <Dual>out))):
        y = <Dual>out
    else:
        return None
    if cnp.PyArray_TYPE(d.values) == cnp.NPY_FLOAT64:
        _binary_fast_typed(<double*>NULL, op, a, b, y)
    else:
        _binary_fast_typed(<float*>NULL, op, a, b, y)
    return y


cdef int _binary_fast_typed(real* kind, int op, object a, object b, Dual y) except -1:
    cdef real a_scalar = 0, b_scalar = 0
    cdef const real* av = &a_scalar
    cdef const real* bv = &b_scalar
    cdef const real* ap = NULL
    cdef const real* bp = NULL
    cdef Py_ssize_t a_step = 0, b_step = 0
    cdef object a_value = a, b_value = b
    cdef bint cast_overflow = False   # a number beyond float32's range (NumPy warns of it)
    if type(a) is Dual:
        av = <real*>cnp.PyArray_DATA((<Dual>a).values)
        ap = <real*>cnp.PyArray_DATA((<Dual>a).partials)
        a_step = 1
        a_value = (<Dual>a).values
    else:
        a_scalar = <real><double>a
        cast_overflow = real is float and isinf(a_scalar) and not isinf(<double>a)
    if type(b) is Dual:
        bv = <real*>cnp.PyArray_DATA((<Dual>b).values)
        bp = <real*>cnp.PyArray_DATA((<Dual>b).partials)
        b_step = 1
        b_value = (<Dual>b).values
    else:
        b_scalar = <real><double>b
        cast_overflow = real is float and isinf(b_scalar) and not isinf(<double>b)
    return _run(op, True, y.tag, y.width, cnp.PyArray_SIZE(y.values), cnp.PyArray_TYPE(y.values),
                <const char*>av, a_step, <const char*>ap, a_value,
                <const char*>bv, b_step, <const char*>bp, b_value,
                <char*>cnp.PyArray_DATA(y.values), <char*>cnp.PyArray_DATA(y.partials),
                cast_overflow)


# A product this small runs as a plain loop; a larger one goes to BLAS through NumPy.
cdef enum:
    SMALL_PRODUCT = 4096


cdef object matmul(object a, object b):
    """a @ b; a constant matrix times a dual vector (A @ x) without any NumPy-level call."""
    cdef Dual d
    if (type(b) is Dual and cnp.PyArray_CheckExact(a) and cnp.PyArray_NDIM(<cnp.ndarray>a) == 2
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a)):
        d = <Dual>b
        if (cnp.PyArray_NDIM(d.values) == 1 and _contiguous(d)
                and cnp.PyArray_TYPE(d.values) == cnp.PyArray_TYPE(<cnp.ndarray>a)
                and cnp.PyArray_DIMS(<cnp.ndarray>a)[1] == cnp.PyArray_DIMS(d.values)[0]):
            return _matrix_times_dual(<cnp.ndarray>a, d)
    if _foreign(a) or _foreign(b) or defers_to(a) or defers_to(b):
        return NotImplemented   # (defers_to: a scipy.sparse matrix's product is its own)
    if _complex(a) or _complex(b):
        return _complex_module().function_call(np.matmul, (a, b), {})
    return _handled_functions()[np.matmul](a, b)


cdef Dual _matrix_times_dual(cnp.ndarray a, Dual b):
    # values A @ v and partials A @ P (P: k x width), in b's dtype
    cdef cnp.npy_intp m = cnp.PyArray_DIMS(a)[0], k = cnp.PyArray_DIMS(a)[1]
    cdef cnp.npy_intp dims[2]
    cdef int typenum = cnp.PyArray_TYPE(a)
    dims[0] = m
    dims[1] = b.width
    cdef Dual y = new_dual(cnp.PyArray_EMPTY(1, dims, typenum, 0),
                           cnp.PyArray_EMPTY(2, dims, typenum, 0), b.width, b.tag)
    if m * k * (b.width + 1) > SMALL_PRODUCT:
        np.dot(a, b.values, out=y.values)
        np.dot(a, b.partials, out=y.partials)
        return y
    clear_fp_flags()
    if typenum == cnp.NPY_FLOAT64:
        _small_product(<double*>cnp.PyArray_DATA(a), m, k, <double*>cnp.PyArray_DATA(b.values),
                       <double*>cnp.PyArray_DATA(b.partials), b.width,
                       <double*>cnp.PyArray_DATA(y.values), <double*>cnp.PyArray_DATA(y.partials))
    else:
        _small_product(<float*>cnp.PyArray_DATA(a), m, k, <float*>cnp.PyArray_DATA(b.values),
                       <float*>cnp.PyArray_DATA(b.partials), b.width,
                       <float*>cnp.PyArray_DATA(y.values), <float*>cnp.PyArray_DATA(y.partials))
    if raised_fp_flags():
        np.matmul(a, b.values)   # NumPy's warnings, if its values raise them
    return y


cdef void _small_product(const real* a, Py_ssize_t m, Py_ssize_t k, const real* v,
                         const real* p, Py_ssize_t width, real* yv, real* yp) noexcept nogil:
    # yv = A v, yp = A P, row by row
    cdef Py_ssize_t i, j, w
    cdef real s, aij
    for i in range(m):
        s = 0
        for w in range(width):
            yp[i * width + w] = 0
        for j in range(k):
            aij = a[i * k + j]
            s = s + aij * v[j]
            for w in range(width):
                yp[i * width + w] += aij * p[j * width + w]
        yv[i] = s


cdef object _float64(object x):
    # an operand of float_power, which computes in float64 whatever its inputs
    cdef Dual d
    if not isinstance(x, Dual):
        return np.asarray(x, dtype=np.float64)
    d = <Dual>x
    return new_dual(d.values.astype(np.float64, copy=False),
                    d.partials.astype(np.float64, copy=False), d.width, d.tag)


cdef object power(object a, object b, object out=None):
    if isinstance(a, Dual) and isinstance(b, Dual):
        return binary(BinaryOp.POWER, a, b, out)
    if isinstance(a, Dual):
        return binary(BinaryOp.POWER_CONST_EXPONENT, a, b, out)
    return binary(BinaryOp.POWER_CONST_BASE, a, b, out)


# -- the sum of all elements --------------------------------------------------------
# Objective functions end in np.sum: compiled, it costs a fraction of NumPy's reduce
# machinery (two reductions, ~3 us each here, for the values and the partials).

_np_sum = np.sum


cdef Dual sum_all(Dual d):
    """np.sum(d) of a C-contiguous dual: the values summed as NumPy sums them (pairwise,
    so with np.sum's rounding), the partials row by row (as np.add.reduce over axis 0)."""
    cdef cnp.npy_intp width = d.width
    cdef int typenum = cnp.PyArray_TYPE(d.values)
    cdef Dual y = new_dual(cnp.PyArray_EMPTY(0, NULL, typenum, 0),
                           cnp.PyArray_EMPTY(1, &width, typenum, 0), d.width, d.tag)
    clear_fp_flags()
    if typenum == cnp.NPY_FLOAT64:
        _sum_all(<double*>cnp.PyArray_DATA(d.values), <double*>cnp.PyArray_DATA(d.partials),
                 cnp.PyArray_SIZE(d.values), width, <double*>cnp.PyArray_DATA(y.values),
                 <double*>cnp.PyArray_DATA(y.partials))
    else:
        _sum_all(<float*>cnp.PyArray_DATA(d.values), <float*>cnp.PyArray_DATA(d.partials),
                 cnp.PyArray_SIZE(d.values), width, <float*>cnp.PyArray_DATA(y.values),
                 <float*>cnp.PyArray_DATA(y.partials))
    if raised_fp_flags():
        np.add.reduce(d.values, axis=None)   # NumPy's warnings, if its values raise them
    return y


cdef void _sum_all(const real* v, const real* p, Py_ssize_t n, Py_ssize_t width,
                   real* total, real* partials) noexcept nogil:
    cdef Py_ssize_t i, k
    total[0] = 0
    total[0] += _pairwise_sum(v, n)
    for k in range(width):
        partials[k] = 0
    for i in range(n):
        for k in range(width):
            partials[k] += p[i * width + k]


cdef real _pairwise_sum(const real* a, Py_ssize_t n) noexcept nogil:
    # NumPy's pairwise summation (numpy/_core/src/umath/loops_utils.h), step for step
    cdef Py_ssize_t i, half
    cdef real res
    cdef real r[8]
    if n < 8:
        res = 0
        for i in range(n):
            res += a[i]
        return res
    if n <= 128:
        for i in range(8):
            r[i] = a[i]
        i = 8
        while i < n - n % 8:
            r[0] += a[i]
            r[1] += a[i + 1]
            r[2] += a[i + 2]
            r[3] += a[i + 3]
            r[4] += a[i + 4]
            r[5] += a[i + 5]
            r[6] += a[i + 6]
            r[7] += a[i + 7]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        while i < n:
            res += a[i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return _pairwise_sum(a, half) + _pairwise_sum(a + half, n - half)


# -- ufunc table ----------------------------------------------------------------

# Every ufunc of the rule table (cyad._rules.table) to its rule's op: its position in the
# table, as in the generated UnaryOp and BinaryOp (scipy.special's join once SciPy is
# imported: `_refresh_ufuncs`). np.power and np.float_power go through `power`, which picks
# the rule or a variant of it by the operand that is constant.
_UNARY_UFUNCS = _rule_table.UfuncOps(_rule_table.UNARY_RULES)
_BINARY_UFUNCS = _rule_table.UfuncOps(_rule_table.BINARY_RULES, skip=(BinaryOp.POWER,))
# the binary rules differentiable in their second operand only, by op
_ONLY_IN_B = {op: rule for op, rule in enumerate(_rule_table.BINARY_RULES)
              if rule.differentiable == "b"}


cdef bint _refresh_ufuncs():
    # whether ufuncs of a module imported since joined the maps
    return _UNARY_UFUNCS.refresh() | _BINARY_UFUNCS.refresh()


cdef object _ufunc_binary(int op, object ufunc, object a, object b, object out):
    if op in _ONLY_IN_B and isinstance(a, Dual):
        raise TypeError(f"cyad: {_rule_table.ufunc_name(ufunc)} is differentiable in its "
                        "second argument only; its first must be a constant, not a dual array")
    return binary(op, a, b, out)


# ufuncs whose result carries no derivative: they read the values only
_VALUE_UFUNCS = {
    np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal,
    np.isnan, np.isinf, np.isfinite, np.signbit, np.logical_and, np.logical_or,
    np.logical_not, np.logical_xor,
}

_HANDLED_FUNCTIONS = None


def _handled_functions():
    global _HANDLED_FUNCTIONS
    if _HANDLED_FUNCTIONS is None:
        from cyad._dual.functions import HANDLED_FUNCTIONS
        _HANDLED_FUNCTIONS = HANDLED_FUNCTIONS
    return _HANDLED_FUNCTIONS


def _custom_function(func):
    # a custom function (cyad.custom_derivative) carries its own entry
    from cyad._dual.functions import custom_function
    return custom_function(func)


def _named_functions():
    from cyad._dual.functions import NAMED_FUNCTIONS
    return NAMED_FUNCTIONS


cdef object _numpy(object func):
    # cyad's implementation of a NumPy function, without NumPy's dispatch in between
    return _handled_functions()[func]


def _as_dual_out(out):
    # ufunc `out=` arrives as a tuple of one array
    if out is None:
        return None
    if isinstance(out, tuple):
        if len(out) != 1:
            raise TypeError("cyad: ufuncs on dual arrays take one output")
        out = out[0]
    return out


cdef class Dual(ArrayMethods):
    """A dual array: NumPy-like values carrying `width` directional derivatives.

    cyad creates these and passes them to the function it differentiates; user
    code treats them as ndarrays. `values` and `partials` give read access to
    the numbers; converting a dual to float or ndarray raises TypeError because
    it would drop the derivative.

    Attributes
    ----------
    values : ndarray
        The values (float64 or float32), of the dual's shape.
    partials : ndarray
        The directional derivatives, of shape ``values.shape + (width,)``.
    width : int
        Lanes of the partials: the directions of one evaluation, padded to 1, 2, 4, 8,
        16 or a multiple of 8.
    tag : Tag
        The differentiation the dual belongs to.
    shape, ndim, size, dtype : tuple of int, int, int, numpy.dtype
        Those of `values`.
    T : Dual
        The transpose.

    Raises
    ------
    TypeError
        From ``float()``, ``int()``, ``round()`` (without digits), ``.item()``,
        ``.tolist()``, ``np.asarray()``, assignment into a plain ndarray, and NumPy
        functions or ufuncs without a derivative rule (named by their public path).
    AttributeError
        From an ndarray method dual arrays lack, naming it.

    Examples
    --------
    >>> def f(x):
    ...     print(type(x).__name__, x.shape, x.width)
    ...     return np.sum(x ** 2)
    >>> cyad.gradient(f, np.array([1.0, 2.0]))
    Dual (2,) 2
    array([2., 4.])
    >>> cyad.derivative(lambda x: float(x), 1.0)
    Traceback (most recent call last):
        ...
    TypeError: cyad: a dual number cannot become a float: that would drop its derivative. ...
    """

    described_as = "dual arrays"

    # -- array protocol ----------------------------------------------------
    __hash__ = None

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        cdef object op, out = None
        if method == "__call__" and (not kwargs or (len(kwargs) == 1 and "out" in kwargs)):
            # the common calls, straight to the rule
            if kwargs:
                out = _as_dual_out(kwargs["out"])
                if _foreign(out):
                    return NotImplemented
                if _complex(out):
                    return _complex_module().ufunc_call(ufunc, method, inputs, kwargs)
            op = _UNARY_UFUNCS.get(ufunc)
            if op is not None and isinstance(inputs[0], Dual):
                return unary(op, <Dual>inputs[0], out)
            op = _BINARY_UFUNCS.get(ufunc)
            if op is not None and (isinstance(inputs[0], Dual) or isinstance(inputs[1], Dual)):
                return _ufunc_binary(op, ufunc, inputs[0], inputs[1], out)
            if ufunc is np.matmul and out is None:
                return matmul(inputs[0], inputs[1])
        if any([_foreign(x) for x in inputs]) or _foreign(_as_dual_out(kwargs.get("out"))):
            return NotImplemented
        if _complex_among(inputs) or (kwargs and _complex_among(kwargs.values())):
            return _complex_module().ufunc_call(ufunc, method, inputs, kwargs)
        if _refresh_ufuncs():
            return self.__array_ufunc__(ufunc, method, *inputs, **kwargs)
        if method != "__call__":   # reduce, accumulate, outer, at: in the primitive table's terms
            from cyad._primitives import ufunc_methods
            return ufunc_methods.call(ufunc, method, inputs, kwargs)
        out = _as_dual_out(kwargs.pop("out", None))
        name = _rule_table.ufunc_name(ufunc)
        # a ufunc of the primitive table (np.matmul, np.vecdot, ..., scipy.special.betainc),
        # with its own parameters (np.vecdot's axis=)
        impl = _handled_functions().get(ufunc) or _named_functions().get(name)
        if impl is not None:
            options = {k: v for k, v in kwargs.items() if k not in ("casting", "order", "subok")}
            return impl(*inputs, out=out, **options)
        if kwargs.get("where", True) is not True or (
                set(kwargs) - {"where", "casting", "order", "subok"}):
            raise TypeError(f"cyad: {name} with these arguments is not supported on dual arrays")
        if ufunc in _VALUE_UFUNCS:
            if isinstance(out, Dual):
                raise TypeError(f"cyad: {name} returns booleans, not a dual array")
            return ufunc(*[primal(x) for x in inputs], **({} if out is None else {"out": out}))
        if not any(isinstance(x, Dual) for x in inputs):
            # only `out` is dual: a constant result
            (<Dual>out)[...] = ufunc(*inputs)
            return out
        if ufunc in _UNARY_UFUNCS:
            return unary(_UNARY_UFUNCS[ufunc], inputs[0], out)
        if ufunc in _BINARY_UFUNCS:
            return _ufunc_binary(_BINARY_UFUNCS[ufunc], ufunc, inputs[0], inputs[1], out)
        if ufunc is np.power:
            return power(inputs[0], inputs[1], out)
        if ufunc is np.float_power:
            return power(_float64(inputs[0]), _float64(inputs[1]), out)
        raise TypeError(f"cyad: {name} is not supported on dual arrays (its derivative is not "
                        "in cyad's rule table)." + _hints.users_line())

    def __array_function__(self, func, types, args, kwargs):
        if (func is _np_sum and not kwargs and len(args) == 1 and args[0] is self
                and _contiguous(self)):
            return sum_all(self)
        for t in types:
            if t is not Dual and getattr(t, "__cyad_value__", None) is not None:
                return NotImplemented   # (a tracer's engine records it: `_foreign`)
        if _complex_among(args) or (kwargs and _complex_among(kwargs.values())):
            return _complex_module().function_call(func, args, kwargs)
        impl = _handled_functions().get(func)
        if impl is None:
            impl = _custom_function(func)
        if impl is None:
            raise TypeError(f"cyad: {_hints.function_name(func)} is not supported on dual "
                            "arrays; cyad.custom_derivative gives it rules of yours."
                            + _hints.users_line())
        return impl(*args, **kwargs)

    def __array__(self, dtype=None, copy=None):
        raise _hints.conversion_refused("a dual array cannot become a plain ndarray",
                                        _CONVERSION_HINT)

    def __float__(self):
        raise _hints.conversion_refused("a dual number cannot become a float", _CONVERSION_HINT)

    def __int__(self):
        raise _hints.conversion_refused("a dual number cannot become an int", _CONVERSION_HINT)

    def __complex__(self):
        raise _hints.conversion_refused("a dual number cannot become a complex",
                                        _CONVERSION_HINT)

    def __index__(self):
        raise TypeError("cyad: a dual number cannot be used as an index")

    def __bool__(self):
        return bool(self.values)

    # -- shape ------------------------------------------------------------------
    @property
    def shape(self):
        return (<object>self.values).shape

    @property
    def ndim(self):
        return (<object>self.values).ndim

    @property
    def size(self):
        return (<object>self.values).size

    @property
    def dtype(self):
        return (<object>self.values).dtype

    def __repr__(self):
        return f"Dual(values={self.values!r}, partials of width {self.width})"

    # -- indexing -----------------------------------------------------------------
    def __getitem__(self, key):
        vkey, pkey = _keys(key)
        return new_dual(self.values[vkey], self.partials[pkey], self.width, self.tag)

    def __setitem__(self, key, value):
        cdef Dual v
        if key is Ellipsis and type(value) is Dual:
            v = <Dual>value
            if _fits(v, self) and _contiguous(self):
                # the common `y[...] = x`: two copies, no Python-level work
                # (memmove: x may be an overlapping view of y, like x = y[:-1] into y[1:])
                if v is not self:
                    memmove(cnp.PyArray_DATA(self.values), cnp.PyArray_DATA(v.values),
                            cnp.PyArray_NBYTES(self.values))
                    memmove(cnp.PyArray_DATA(self.partials), cnp.PyArray_DATA(v.partials),
                            cnp.PyArray_NBYTES(self.partials))
                return
        vkey, pkey = _keys(key)
        if isinstance(value, (list, tuple)):
            value = stacked(value, "a value assigned to a dual array")
        if isinstance(value, Dual):
            v = <Dual>value
            if v.tag is not self.tag:
                raise TypeError(_MIXED)
            self.values[vkey] = v.values
            self.partials[pkey] = v.partials
        elif _foreign(value):
            raise TypeError("cyad: a function differentiated inside another cannot write into "
                            "an array of the differentiation around it; return the value "
                            "instead")
        elif _complex(value):
            raise TypeError("cyad: a complex value cannot be written into a real array (NumPy "
                            "would drop its imaginary part); write np.real of it")
        else:
            self.values[vkey] = value
            self.partials[pkey] = 0

    # -- arithmetic straight to the rule table (the other operators: ArrayMethods) -------
    def __add__(self, other):
        return binary(BinaryOp.ADD, self, other)

    def __radd__(self, other):
        return binary(BinaryOp.ADD, other, self)

    def __iadd__(self, other):
        return binary(BinaryOp.ADD, self, other, self)

    def __sub__(self, other):
        return binary(BinaryOp.SUBTRACT, self, other)

    def __rsub__(self, other):
        return binary(BinaryOp.SUBTRACT, other, self)

    def __isub__(self, other):
        return binary(BinaryOp.SUBTRACT, self, other, self)

    def __mul__(self, other):
        return binary(BinaryOp.MULTIPLY, self, other)

    def __rmul__(self, other):
        return binary(BinaryOp.MULTIPLY, other, self)

    def __imul__(self, other):
        return binary(BinaryOp.MULTIPLY, self, other, self)

    def __truediv__(self, other):
        return binary(BinaryOp.DIVIDE, self, other)

    def __rtruediv__(self, other):
        return binary(BinaryOp.DIVIDE, other, self)

    def __itruediv__(self, other):
        return binary(BinaryOp.DIVIDE, self, other, self)

    def __pow__(self, other, mod):
        if mod is not None:
            raise TypeError("cyad: pow() with a modulus is not supported on dual arrays")
        return power(self, other)

    def __rpow__(self, other, mod):
        return power(other, self)

    def __ipow__(self, other):
        return power(self, other, self)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __neg__(self):
        return unary(UnaryOp.NEGATIVE, self)

    def __pos__(self):
        return unary(UnaryOp.POSITIVE, self)

    def __abs__(self):
        return unary(UnaryOp.ABSOLUTE, self)

    def __round__(self, ndigits=None):
        if ndigits is None:
            raise _hints.integer_refused("round", "a dual array")
        return _numpy(np.round)(self, ndigits)

    def __floor__(self):
        raise _hints.integer_refused("math.floor", "a dual array")

    def __ceil__(self):
        raise _hints.integer_refused("math.ceil", "a dual array")

    def __trunc__(self):
        raise _hints.integer_refused("math.trunc", "a dual array")

    # -- comparisons read the values, so control flow works --------------------------
    def __lt__(self, other):
        return self.values < primal(other)

    def __le__(self, other):
        return self.values <= primal(other)

    def __gt__(self, other):
        return self.values > primal(other)

    def __ge__(self, other):
        return self.values >= primal(other)

    def __eq__(self, other):
        return self.values == primal(other)

    def __ne__(self, other):
        return self.values != primal(other)

    # -- ndarray methods without NumPy's dispatch (the rest: ArrayMethods) ------------
    def copy(self):
        return new_dual(self.values.copy(), self.partials.copy(), self.width, self.tag)

    def sum(self, axis=None, keepdims=False, initial=None, where=True):
        if axis is None and not keepdims and initial is None and where is True and \
                _contiguous(self):
            return sum_all(self)
        return _numpy(np.sum)(self, axis=axis, keepdims=keepdims, initial=initial, where=where)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """To float32 or float64: the dual in that precision. To an integer or bool
        dtype: the values converted, a plain array (a constant: it reads the values)."""
        dtype = np.dtype(dtype)
        if dtype.kind in "biu":
            return self.values.astype(dtype, order, casting)
        if dtype.kind == "c":
            return _complex_module().cast(self, dtype)
        if dtype not in (np.float32, np.float64):
            raise TypeError(f"cyad: dual arrays hold float64 or float32, not {dtype}")
        if dtype == self.values.dtype and not copy:
            return self
        return new_dual(self.values.astype(dtype, order, casting),
                        self.partials.astype(dtype, order, casting), self.width, self.tag)

    def item(self, *args):
        raise _hints.number_refused("item")

    def tolist(self):
        raise _hints.number_refused("tolist")


# Cython gives a class with __getitem__ the sequence item slot too, and NumPy takes an
# object with that slot for a sequence when it cannot make it a float: `buf[0] = x[0]`
# would raise "ValueError: setting an array element with a sequence" in place of the
# TypeError (and hint) of __float__. Indexing uses the mapping slot; the item slot goes.
(<_TypeSlots*><void*>Dual).tp_as_sequence.sq_item = NULL


cdef tuple _keys(object key):
    """The index for the values and the one for the partials (one more, trailing, axis).

    The values index always holds an Ellipsis, so that even an integer index
    yields a 0-d array view rather than a NumPy scalar.
    """
    if not isinstance(key, tuple):
        key = (key,)
    for k in key:
        if isinstance(k, Dual):
            raise TypeError("cyad: a dual array cannot be used as an index")
    if not any(k is Ellipsis for k in key):
        key = key + (Ellipsis,)
    return key, key + (slice(None),)
