"""Prepared state and the one pushforward engine behind every operator.

A `Prep` is made once per call signature (operator family, shapes, dtype,
one- or two-argument form, chunk width). It owns the dual buffers handed to f.
Each operator call then:

1. checks the arguments against the signature with C-level comparisons and
   copies x into the dual input (no memoryview acquisition, no allocation),
2. for every chunk of directions: seeds the input partials (tangents for a
   pushforward, basis vectors for a gradient or Jacobian), calls f once, and
   copies the output partials into the caller's arrays,
3. in the two-argument form, writes the primal output into y.

derivative is the pushforward of a scalar with tangent 1; gradient is the
Jacobian of a scalar-valued function. Every output array is checked for exact
shape, dtype and C order and written in place.
"""
import numpy as np

cimport numpy as cnp
from cpython.float cimport PyFloat_Check, PyFloat_AS_DOUBLE
from cpython.long cimport PyLong_Check
from libc.string cimport memcpy, memset

from cyad._fused cimport real
from cyad._kernels cimport lane_count
from cyad._dual cimport Dual, new_dual
from cyad._dual import Dual as _DualType

cnp.import_array()

_FAMILY_NAMES = {PUSHFORWARD: "pushforward", DERIVATIVE: "derivative",
                 GRADIENT: "gradient", JACOBIAN: "jacobian"}

# Widest chunk the default heuristic picks: a Python callable pays a large fixed
# cost per call (interpreter dispatch for every NumPy operation it makes), so it
# is called as few times as possible, up to partial buffers of this many numbers
# per intermediate array (512 KiB in float64: the per-operation work stays in cache).
DEFAULT_PARTIALS_BUDGET = 65536


def default_chunk(Py_ssize_t directions, Py_ssize_t n_x):
    """Directions per evaluation when the caller gives no `chunk`.

    All directions at once (vector mode) while the input partials stay within
    DEFAULT_PARTIALS_BUDGET numbers; beyond that, the widest multiple of 8 that does.
    """
    if directions * max(n_x, 1) <= DEFAULT_PARTIALS_BUDGET:
        return max(directions, 1)
    return max(8, DEFAULT_PARTIALS_BUDGET // max(n_x, 1) // 8 * 8)


# -- seeding and extraction: raw pointer loops -------------------------------------

cdef void put_lane(const real* src, Py_ssize_t n, real* partials, Py_ssize_t width,
                   Py_ssize_t lane) noexcept nogil:
    # partials[i, lane] = src[i]
    cdef Py_ssize_t i
    for i in range(n):
        partials[i * width + lane] = src[i]


cdef void get_lane(const real* partials, Py_ssize_t n, Py_ssize_t width, Py_ssize_t lane,
                   real* dst) noexcept nogil:
    # dst[i] = partials[i, lane]
    cdef Py_ssize_t i
    for i in range(n):
        dst[i] = partials[i * width + lane]


cdef void put_basis(real* partials, Py_ssize_t n, Py_ssize_t width, Py_ssize_t start,
                    Py_ssize_t count) noexcept nogil:
    # partials = 0, then lane k of row start + k is 1
    cdef Py_ssize_t k
    memset(partials, 0, n * width * sizeof(real))
    for k in range(count):
        partials[(start + k) * width + k] = 1


cdef void get_columns(const real* partials, Py_ssize_t n, Py_ssize_t width, Py_ssize_t count,
                      real* dst, Py_ssize_t columns, Py_ssize_t start) noexcept nogil:
    # dst[i, start + k] = partials[i, k] for an n x columns row-major dst
    cdef Py_ssize_t i, k
    for i in range(n):
        for k in range(count):
            dst[i * columns + start + k] = partials[i * width + k]


# -- argument checks --------------------------------------------------------------

cdef inline bint _same_dims(cnp.ndarray a, int ndim, cnp.npy_intp* dims):
    cdef int i
    if cnp.PyArray_NDIM(a) != ndim:
        return False
    for i in range(ndim):
        if cnp.PyArray_DIMS(a)[i] != dims[i]:
            return False
    return True


cdef inline bint _is_exact(object a, int typenum, int ndim, cnp.npy_intp* dims):
    # an ndarray we may read or write in place with raw pointers
    return (cnp.PyArray_Check(a) and cnp.PyArray_TYPE(<cnp.ndarray>a) == typenum
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a)
            and _same_dims(<cnp.ndarray>a, ndim, dims))


def input_dtype(x):
    """The dtype cyad differentiates x in: float64/float32 kept, ints and bools to float64."""
    dtype = np.asarray(x).dtype if not isinstance(x, np.ndarray) else x.dtype
    if dtype == np.float64 or dtype == np.float32:
        return dtype
    if dtype.kind in "biu":
        return np.dtype(np.float64)
    if dtype.kind == "c":
        raise TypeError("cyad: complex inputs are not supported (differentiate the real and "
                        "imaginary parts as separate real inputs)")
    raise TypeError(f"cyad: cannot differentiate with respect to an input of dtype {dtype}; "
                    "use float64 or float32")


cdef class Prep:
    """Prepared state of one operator family for one call signature.

    Made by the `prepare_*` functions and passed back with `prep=`. It may be
    reused with other values of the same shapes, dtype and function form; it is
    owned by one thread at a time.
    """

    def __init__(self, Family family, f, x, Py_ssize_t directions, y=None, chunk=None):
        cdef int i
        self.family = family
        self.two_argument = y is not None
        self.dtype = input_dtype(x)
        self.x_shape = np.shape(x)
        if len(self.x_shape) > 32:
            raise ValueError("cyad: inputs of more than 32 dimensions are not supported")
        self.x_ndim = len(self.x_shape)
        for i in range(self.x_ndim):
            self.x_dims[i] = self.x_shape[i]
        self.x_typenum = self.dtype.num
        self.n_x = int(np.prod(self.x_shape))
        self.x_bytes = self.n_x * self.dtype.itemsize
        self.directions = directions
        if chunk is None:
            chunk = default_chunk(directions, self.n_x)
        elif not isinstance(chunk, (int, np.integer)) or chunk < 1:
            raise ValueError(f"cyad: chunk must be a positive integer, not {chunk!r}")
        self.chunk = max(1, min(int(chunk), directions))
        self.width = lane_count(self.chunk)
        self.evaluations = (directions + self.chunk - 1) // self.chunk if directions else 1
        self.tag = object()
        self.input_dual = new_dual(np.zeros(self.x_shape, self.dtype),
                                   np.zeros(self.x_shape + (self.width,), self.dtype),
                                   self.width, self.tag)
        self.out_shape = None
        self.y_dual = None
        if self.two_argument:
            self._set_output(np.shape(y), _output_dtype(y))
            self.y_dual = new_dual(np.zeros(self.out_shape, self.out_dtype),
                                   np.zeros(self.out_shape + (self.width,), self.out_dtype),
                                   self.width, self.tag)

    def __repr__(self):
        form = "f(y, x)" if self.two_argument else "f(x)"
        return (f"<cyad prep for {_FAMILY_NAMES[self.family]} of {form}: x {self.x_shape} {self.dtype}, "
                f"{self.directions} directions in chunks of {self.chunk} ({self.width} lanes), "
                f"{self.evaluations} evaluation(s) per call>")

    cdef _set_output(self, tuple shape, object dtype):
        cdef int i
        self.out_shape = shape
        self.out_dtype = dtype
        self.out_typenum = dtype.num
        self.n_out = int(np.prod(shape))
        self.out_bytes = self.n_out * dtype.itemsize
        if len(shape) > 32:
            raise ValueError("cyad: outputs of more than 32 dimensions are not supported")
        self.out_ndim = len(shape)
        self._constant = np.zeros(shape, dtype)
        for i in range(self.out_ndim):
            self.out_dims[i] = shape[i]

    # -- checks and loading --------------------------------------------------------

    cdef check_form(self, Family family, object y):
        """Raise ValueError unless this prep serves `family` in the form the call uses."""
        if family != self.family:
            raise ValueError(f"cyad: this prep was made for {_FAMILY_NAMES[self.family]}, "
                             f"not {_FAMILY_NAMES[family]}")
        if (y is not None) != self.two_argument:
            made = "f(y, x) with y=" if self.two_argument else "f(x) without y="
            raise ValueError(f"cyad: this prep was made for {made}; the call differs")

    cdef object load_x(self, object x):
        """Copy x into the dual input's values (before every evaluation: f may change its input)."""
        cdef cnp.ndarray v = self.input_dual.values
        if _is_exact(x, self.x_typenum, self.x_ndim, self.x_dims):
            memcpy(cnp.PyArray_DATA(v), cnp.PyArray_DATA(<cnp.ndarray>x), self.x_bytes)
            return None
        if self.x_ndim == 0 and (PyFloat_Check(x) or PyLong_Check(x)):
            if self.x_typenum == cnp.NPY_FLOAT64:
                (<double*>cnp.PyArray_DATA(v))[0] = <double>x
            else:
                (<float*>cnp.PyArray_DATA(v))[0] = <float><double>x
            return None
        self._check_array("x", x, self.x_shape, self.dtype)
        v[...] = x
        return None

    cdef _check_array(self, str name, object a, tuple shape, object dtype):
        # the slow path of an argument check: convertible, of the right shape and dtype
        if isinstance(a, _DualType):
            raise TypeError(f"cyad: {name} is a dual array: nested differentiation is not "
                            "supported yet")
        got_shape = np.shape(a)
        if got_shape != shape:
            raise ValueError(f"cyad: {name} has shape {got_shape}, but this prep was made for "
                             f"shape {shape}")
        got = input_dtype(a)
        if got != dtype:
            raise ValueError(f"cyad: {name} has dtype {np.asarray(a).dtype}, but this prep was made "
                             f"for {dtype}")

    cdef object check_y(self, object y):
        """y of the two-argument form: an ndarray of the recorded shape and dtype, written in place."""
        if not (_is_exact(y, self.out_typenum, self.out_ndim, self.out_dims)
                and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>y)):
            if not isinstance(y, np.ndarray):
                raise TypeError(f"cyad: y must be a NumPy array, not {type(y).__name__}")
            if y.shape != self.out_shape or y.dtype != self.out_dtype:
                raise ValueError(f"cyad: y has shape {y.shape} and dtype {y.dtype}, but this prep "
                                 f"was made for shape {self.out_shape} and dtype {self.out_dtype}")
            raise ValueError("cyad: y must be a writeable C-contiguous array")
        return None

    cdef object check_out(self, object out, tuple shape, str what):
        """An output buffer: exactly `shape`, the output dtype, C-contiguous and writeable."""
        cdef cnp.npy_intp dims[64]
        cdef int i
        if shape is self.out_shape:
            if (_is_exact(out, self.out_typenum, self.out_ndim, self.out_dims)
                    and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>out)):
                return None
        elif len(shape) <= 64:
            for i in range(len(shape)):
                dims[i] = shape[i]
            if (_is_exact(out, self.out_typenum, len(shape), dims)
                    and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>out)):
                return None
        if not isinstance(out, np.ndarray):
            raise TypeError(f"cyad: {what} must be a NumPy array, not {type(out).__name__}")
        if out.shape != shape or out.dtype != self.out_dtype:
            raise ValueError(f"cyad: {what} has shape {out.shape} and dtype {out.dtype}; it must "
                             f"have shape {shape} and dtype {self.out_dtype}")
        raise ValueError(f"cyad: {what} must be a writeable C-contiguous array")

    # -- one evaluation ------------------------------------------------------------

    cdef object evaluate(self, object f, object y):
        """Call f on the seeded dual input; return the output dual (or a constant)."""
        cdef Dual yd = self.y_dual
        if self.two_argument:
            memcpy(cnp.PyArray_DATA(yd.values), cnp.PyArray_DATA(<cnp.ndarray>y), self.out_bytes)
            memset(cnp.PyArray_DATA(yd.partials), 0, self.out_bytes * self.width)
            f(yd, self.input_dual)
            return yd
        return self._output(f(self.input_dual))

    cdef object _output(self, object r):
        """f's return value as a contiguous dual, or a constant ndarray; shapes checked."""
        cdef Dual d
        if isinstance(r, Dual):
            d = <Dual>r
            if d.tag is not self.tag:
                raise TypeError("cyad: f returned a dual array of another differentiation "
                                "(nested differentiation is not supported yet)")
            if self.out_shape is None:
                self._set_output((<object>d.values).shape, (<object>d.values).dtype)
            if not (cnp.PyArray_TYPE(d.values) == self.out_typenum
                    and _same_dims(d.values, self.out_ndim, self.out_dims)):
                raise ValueError(f"cyad: f returned shape {(<object>d.values).shape} and dtype "
                                 f"{(<object>d.values).dtype}, but this prep was made for shape "
                                 f"{self.out_shape} and dtype {self.out_dtype}")
            if not (cnp.PyArray_IS_C_CONTIGUOUS(d.values) and cnp.PyArray_IS_C_CONTIGUOUS(d.partials)):
                d = new_dual(np.asarray(d.values, order="C"), np.asarray(d.partials, order="C"),
                             d.width, d.tag)
            return d
        if self.out_shape is not None and self.out_ndim == 0 and (PyFloat_Check(r) or PyLong_Check(r)):
            # a scalar constant, written into a buffer of the prep's (no allocation)
            self._constant[()] = r
            return self._constant
        if isinstance(r, (float, int, np.ndarray, np.generic)) and not isinstance(r, (bool, complex)):
            c = np.asarray(r)
            if c.dtype.kind not in "biuf":
                raise TypeError(f"cyad: f returned an array of dtype {c.dtype}")
            if self.out_shape is None:
                self._set_output(c.shape, _output_dtype_from(c.dtype, self.dtype))
            if c.shape != self.out_shape:
                raise ValueError(f"cyad: f returned shape {c.shape}, but this prep was made for "
                                 f"shape {self.out_shape}")
            return np.asarray(c, dtype=self.out_dtype, order="C")
        raise TypeError("cyad: f must return a dual array (the result of NumPy operations on "
                        f"its input), an ndarray or a number, not {type(r).__name__}")

    # -- pushforward family ------------------------------------------------------------

    cdef object pushforward(self, object f, object x, object dx, object y, object out,
                            bint with_value):
        # dx: one tangent, or a tuple of them (a batch)
        cdef bint batch = isinstance(dx, tuple)
        cdef Py_ssize_t given = len(<tuple>dx) if batch else 1
        cdef Py_ssize_t start, count, k
        cdef object value_out = None, pair = None
        cdef object r
        if given != self.directions:
            raise ValueError(f"cyad: {given} tangent(s) given, but this prep was made for "
                             f"{self.directions}")
        if self.two_argument:
            self.check_y(y)
        if batch:
            dx = tuple([self._tangent(t) for t in <tuple>dx])
        else:
            dx = self._tangent(dx)
        if with_value and out is not None:
            pair = out
            value_out, out = self._split_value_out(out)
        start = 0
        while start < self.directions:
            count = min(self.chunk, self.directions - start)
            self.load_x(x)
            if count < self.width:
                memset(cnp.PyArray_DATA(self.input_dual.partials), 0, self.x_bytes * self.width)
            for k in range(count):
                self._seed_lane((<tuple>dx)[start + k] if batch else dx, k)
            r = self.evaluate(f, y)
            if start == 0:
                out = self._tangent_outputs(out, batch)
                if with_value:
                    value_out = self._write_value(r, value_out, y)
            for k in range(count):
                self._extract_lane(r, k, (<tuple>out)[start + k] if batch else out)
            start += count
        if self.two_argument:
            memcpy(cnp.PyArray_DATA(<cnp.ndarray>y), cnp.PyArray_DATA(self.y_dual.values),
                   self.out_bytes)
        if with_value:
            return pair if pair is not None else (value_out, out)
        return out

    cdef object _tangent(self, object t):
        """A tangent as a contiguous array of x's shape and dtype (or a number for scalar x)."""
        if _is_exact(t, self.x_typenum, self.x_ndim, self.x_dims):
            return t
        if self.x_ndim == 0 and (PyFloat_Check(t) or PyLong_Check(t)):
            return t
        if isinstance(t, _DualType):
            raise TypeError("cyad: a tangent is a dual array: nested differentiation is not "
                            "supported yet")
        if np.shape(t) != self.x_shape:
            raise ValueError(f"cyad: a tangent has shape {np.shape(t)}, but x has shape "
                             f"{self.x_shape}")
        return np.asarray(t, dtype=self.dtype, order="C")

    cdef _seed_lane(self, object t, Py_ssize_t lane):
        """Lane `lane` of the input partials = the tangent t."""
        cdef cnp.ndarray p = self.input_dual.partials
        if not cnp.PyArray_Check(t):
            if self.x_typenum == cnp.NPY_FLOAT64:
                (<double*>cnp.PyArray_DATA(p))[lane] = <double>t
            else:
                (<float*>cnp.PyArray_DATA(p))[lane] = <float><double>t
        elif self.width == 1:
            memcpy(cnp.PyArray_DATA(p), cnp.PyArray_DATA(<cnp.ndarray>t), self.x_bytes)
        elif self.x_typenum == cnp.NPY_FLOAT64:
            put_lane(<double*>cnp.PyArray_DATA(<cnp.ndarray>t), self.n_x,
                     <double*>cnp.PyArray_DATA(p), self.width, lane)
        else:
            put_lane(<float*>cnp.PyArray_DATA(<cnp.ndarray>t), self.n_x,
                     <float*>cnp.PyArray_DATA(p), self.width, lane)

    cdef object _tangent_outputs(self, object out, bint batch):
        # the arrays receiving J.dx: given (checked) or new
        cdef Py_ssize_t k
        if out is None:
            if batch:
                return tuple([np.empty(self.out_shape, self.out_dtype)
                              for k in range(self.directions)])
            return np.empty(self.out_shape, self.out_dtype)
        if batch:
            if not isinstance(out, tuple) or len(<tuple>out) != self.directions:
                raise TypeError(f"cyad: out= must be a tuple of {self.directions} arrays, one per "
                                "tangent")
            for k in range(self.directions):
                self.check_out((<tuple>out)[k], self.out_shape, "out")
        else:
            self.check_out(out, self.out_shape, "out")
        return out

    cdef _extract_lane(self, object r, Py_ssize_t lane, object dst):
        cdef Dual d
        cdef cnp.ndarray a = <cnp.ndarray>dst
        if not isinstance(r, Dual):
            memset(cnp.PyArray_DATA(a), 0, self.out_bytes)
            return
        d = <Dual>r
        if self.width == 1:
            memcpy(cnp.PyArray_DATA(a), cnp.PyArray_DATA(d.partials), self.out_bytes)
        elif self.out_typenum == cnp.NPY_FLOAT64:
            get_lane(<double*>cnp.PyArray_DATA(d.partials), self.n_out, self.width, lane,
                     <double*>cnp.PyArray_DATA(a))
        else:
            get_lane(<float*>cnp.PyArray_DATA(d.partials), self.n_out, self.width, lane,
                     <float*>cnp.PyArray_DATA(a))

    # -- values ------------------------------------------------------------------------

    cdef tuple _split_value_out(self, object out):
        if not isinstance(out, tuple) or len(<tuple>out) != 2:
            raise TypeError("cyad: out= of a value_and_* operator is a pair "
                            "(value_out, result_out)")
        return <tuple>out

    cdef object _write_value(self, object r, object value_out, object y):
        """The primal output: into value_out when given, else a new array (a float for 0-d)."""
        src = (<Dual>r).values if isinstance(r, Dual) else r
        if value_out is None:
            if self.two_argument:
                return y
            if self.n_out == 1 and not self.out_shape:
                return float(src[()])
            return src.copy()
        self.check_out(value_out, self.out_shape, "the value output")
        if value_out is not y:
            memcpy(cnp.PyArray_DATA(<cnp.ndarray>value_out), cnp.PyArray_DATA(<cnp.ndarray>src),
                   self.out_bytes)
        return value_out

    # -- Jacobian family (gradient is the Jacobian of a scalar) -----------------------

    cdef object jacobian(self, object f, object x, object y, object out, bint with_value):
        cdef Py_ssize_t evaluation, start, count
        cdef object value_out = None, pair = None
        cdef object r
        if self.two_argument:
            self.check_y(y)
        if with_value and out is not None:
            pair = out
            value_out, out = self._split_value_out(out)
        for evaluation in range(self.evaluations):
            start = evaluation * self.chunk
            count = min(self.chunk, self.directions - start)
            self.load_x(x)
            self._seed_basis(start, count)
            r = self.evaluate(f, y)
            if evaluation == 0:
                if self.family == GRADIENT and self.out_shape != ():
                    raise ValueError(f"cyad: gradient needs a scalar-valued f, but f returned shape "
                                     f"{self.out_shape}; use jacobian")
                out = self._jacobian_output(out)
                if with_value:
                    value_out = self._write_value(r, value_out, y)
            self._extract_columns(r, start, count, out)
        if self.two_argument:
            memcpy(cnp.PyArray_DATA(<cnp.ndarray>y), cnp.PyArray_DATA(self.y_dual.values),
                   self.out_bytes)
        if with_value:
            return pair if pair is not None else (value_out, out)
        return out

    cdef _seed_basis(self, Py_ssize_t start, Py_ssize_t count):
        cdef cnp.ndarray p = self.input_dual.partials
        if self.x_typenum == cnp.NPY_FLOAT64:
            put_basis(<double*>cnp.PyArray_DATA(p), self.n_x, self.width, start, count)
        else:
            put_basis(<float*>cnp.PyArray_DATA(p), self.n_x, self.width, start, count)

    cdef object _jacobian_output(self, object out):
        shape = self.out_shape + self.x_shape
        if out is None:
            return np.empty(shape, self.out_dtype)
        self.check_out(out, shape, "out")
        return out

    cdef _extract_columns(self, object r, Py_ssize_t start, Py_ssize_t count, object out):
        cdef Dual d
        cdef cnp.ndarray a = <cnp.ndarray>out
        if not isinstance(r, Dual):
            if start == 0:
                memset(cnp.PyArray_DATA(a), 0, cnp.PyArray_NBYTES(a))
            return
        d = <Dual>r
        if self.out_typenum == cnp.NPY_FLOAT64:
            get_columns(<double*>cnp.PyArray_DATA(d.partials), self.n_out, self.width, count,
                        <double*>cnp.PyArray_DATA(a), self.n_x, start)
        else:
            get_columns(<float*>cnp.PyArray_DATA(d.partials), self.n_out, self.width, count,
                        <float*>cnp.PyArray_DATA(a), self.n_x, start)


cdef object _output_dtype(object y):
    if not isinstance(y, np.ndarray):
        raise TypeError(f"cyad: y must be a NumPy array, not {type(y).__name__}")
    if y.dtype != np.float64 and y.dtype != np.float32:
        raise TypeError(f"cyad: y must hold float64 or float32, not {y.dtype}")
    return y.dtype


cdef object _output_dtype_from(object dtype, object x_dtype):
    # a constant output takes x's dtype, or float64 when it is wider
    return np.dtype(np.float64) if dtype == np.float64 else x_dtype
