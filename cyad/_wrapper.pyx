"""FunctionWrapper: any callable behind cyad's dual-level C signatures.

The outer routines of cyad (seeding, chunk loops, extraction) are compiled once
and reach the user's function through a `cyad_function`: a function pointer per
dtype and order, and a context pointer. A FunctionWrapper fills that struct from
whatever the user has - a PyCapsule (a Cython `cdef` function from a module's
`__pyx_capi__`, or any capsule named by its signature), a `scipy.LowLevelCallable`,
a ctypes or cffi function pointer, a numba `cfunc` - and keeps alive whatever owns
the function and its context. It holds any of the four C functions: first and
second order (signatures in cyad/_wrapper.pxd), each in float64 and float32. A
Python callable is wrapped too: a prep binds it to its dual arrays through
`PythonFunction`, whose trampolines have the same signatures, so it runs through
the very same routines.
"""
import ctypes

import numpy as np

cimport numpy as cnp
from cpython.pycapsule cimport (PyCapsule_CheckExact, PyCapsule_GetContext, PyCapsule_GetName,
                                PyCapsule_GetPointer)
from libc.string cimport memcpy, memset

from cyad._dual.array cimport Dual, enter, leave
from cyad._stacked import stacked
from cyad._hints import returned_under_y

cnp.import_array()

F64_SIGNATURE = ("int (double const *, double const *, double *, double *, "
                 "Py_ssize_t, Py_ssize_t, Py_ssize_t, void *)")
F32_SIGNATURE = ("int (float const *, float const *, float *, float *, "
                 "Py_ssize_t, Py_ssize_t, Py_ssize_t, void *)")
SECOND_F64_SIGNATURE = ("int (double const *, double const *, double *, double *, "
                        "Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, void *)")
SECOND_F32_SIGNATURE = ("int (float const *, float const *, float *, float *, "
                        "Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, void *)")

# the status a trampoline returns when the Python callable raised (the exception is kept)
cdef enum:
    PYTHON_ERROR = -1


class FunctionError(RuntimeError):
    """A C-level function reported failure: `status` is the nonzero int it returned.

    Parameters
    ----------
    status : int
        The status the function returned.

    Attributes
    ----------
    status : int
        The status the function returned.

    Examples
    --------
    A C function of cyad's signature, here a ctypes callback, that always fails:

    >>> import ctypes
    >>> p = ctypes.POINTER(ctypes.c_double)
    >>> @ctypes.CFUNCTYPE(ctypes.c_int, p, p, p, p, ctypes.c_ssize_t, ctypes.c_ssize_t,
    ...                   ctypes.c_ssize_t, ctypes.c_void_p)
    ... def fails(x, dx, y, dy, n_x, n_y, width, context):
    ...     return 7
    >>> try:
    ...     cyad.gradient(cyad.FunctionWrapper(fails, out_shape=()), np.zeros(2))
    ... except cyad.FunctionError as error:
    ...     print(error.status)
    7
    """

    def __init__(self, status):
        super().__init__(f"cyad: the differentiated C function returned status {status}")
        self.status = status


def _normalise(signature):
    """A C signature with spacing, `const` and the spelling of the size type ironed out."""
    sizes = {"Py_ssize_t", "ssize_t", "intptr_t"}
    if ctypes.sizeof(ctypes.c_long) == ctypes.sizeof(ctypes.c_ssize_t):
        sizes.add("long")
    head, _, params = signature.partition("(")
    parts = []
    for part in [head] + params.rstrip(") ").split(","):
        words = part.replace("*", " * ").split()
        words = ["ssize" if w in sizes else w for w in words if w != "const"]
        parts.append(" ".join(words))
    return parts


_F64 = _normalise(F64_SIGNATURE)
_F32 = _normalise(F32_SIGNATURE)
_SECOND_F64 = _normalise(SECOND_F64_SIGNATURE)
_SECOND_F32 = _normalise(SECOND_F32_SIGNATURE)


def _signature_error(got):
    return TypeError(f"cyad: a function of signature {got!r} cannot be differentiated; "
                     f"the accepted signatures are\n  {F64_SIGNATURE}\n  {F32_SIGNATURE}\n"
                     f"  {SECOND_F64_SIGNATURE}  (second order)\n"
                     f"  {SECOND_F32_SIGNATURE}  (second order)")


cdef class FunctionWrapper:
    """A function to differentiate, behind cyad's dual-level C signature.

    Parameters
    ----------
    *functions
        A Python callable, or up to four C-level functions of cyad's signatures,
        at most one of each: first order float64 and float32, second order
        float64 and float32 (any subset). Each is a PyCapsule whose name is the
        signature (as in a Cython module's ``__pyx_capi__``), a
        ``scipy.LowLevelCallable``, a ctypes or cffi function pointer or a numba
        ``cfunc``; its signature says which of the four it is.
    user_data : optional
        The context pointer passed to a C function: a PyCapsule, a ctypes
        pointer or an int address. A capsule or LowLevelCallable brings its own.
    out_shape : tuple of int, optional
        The output shape of a C function, needed to call it in the
        one-argument form (in the two-argument form ``y`` gives it).

    Attributes
    ----------
    kind : str
        What the functions are: "python", "capsule", "LowLevelCallable", "ctypes",
        "cffi", "numba", "cython" (made by ``cyad.wrap`` in Cython) or "tape"
        (made by `cyad.record`).
    callable : callable or None
        The Python callable, when it is one.
    tape : TapeFunction or None
        What a wrapper of kind "tape" replays: f's recorded tape (`cyad.record`).
    out_shape : tuple of int or None
        A C function's declared output shape.
    supports_float64, supports_float32 : bool
        Whether it has a first-order function of that dtype (a Python callable has all).
    supports_second_order_float64, supports_second_order_float32 : bool
        Whether it has a second-order function of that dtype.

    Raises
    ------
    TypeError
        If no function is given, a function is not of cyad's signatures (the message
        lists them), two functions of one kind or different contexts are given, or
        ``out_shape`` is given with a Python callable.

    Notes
    -----
    The signature (float64; float32 likewise)::

        int f(const double* x, const double* dx, double* y, double* dy,
              Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width, void* context)

    ``dx`` is ``n_x x width`` and ``dy`` is ``n_y x width``, row-major. On entry
    ``y`` holds the output's current values and ``dy`` is zero; f writes both
    and returns 0, or a nonzero status that cyad raises as `FunctionError`.

    The second-order signature (hessian, hvp, second_derivative) replaces
    ``width`` by ``Py_ssize_t outer, Py_ssize_t inner``: every element of the
    buffers is a nested dual over `outer` and `inner` directions, in a row of
    ``second_order_width(outer, inner)`` lanes (layout in cyad/_dual/layout.pxd;
    cyad calls C functions with ``outer == 1``). All the functions of one
    wrapper share its context.

    Examples
    --------
    A function of the float64 signature, written as a ctypes callback (a compiled
    function - Cython, C through ctypes or cffi, numba - is wrapped the same way):
    y = 2 x, so dy = 2 dx in every lane.

    >>> import ctypes
    >>> p = ctypes.POINTER(ctypes.c_double)
    >>> @ctypes.CFUNCTYPE(ctypes.c_int, p, p, p, p, ctypes.c_ssize_t, ctypes.c_ssize_t,
    ...                   ctypes.c_ssize_t, ctypes.c_void_p)
    ... def double(x, dx, y, dy, n_x, n_y, width, context):
    ...     for i in range(n_x):
    ...         y[i] = 2.0 * x[i]
    ...         for k in range(width):
    ...             dy[i * width + k] = 2.0 * dx[i * width + k]
    ...     return 0
    >>> f = cyad.FunctionWrapper(double, out_shape=2)
    >>> f.kind, f.supports_float64, f.supports_float32
    ('ctypes', True, False)
    >>> cyad.jacobian(f, np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 2.]])

    A Python callable can be wrapped too; it runs on `Dual` arrays:

    >>> cyad.derivative(cyad.FunctionWrapper(np.sin), 0.0)
    1.0
    """

    def __init__(self, *functions, user_data=None, out_shape=None):
        if not functions:
            raise TypeError("cyad: FunctionWrapper needs a function")
        self.owner = []
        self.callable = None
        self.out_shape = None
        if len(functions) == 1 and isinstance(functions[0], FunctionWrapper):
            self._copy(functions[0])
        elif len(functions) == 1 and is_python_function(functions[0]):
            self.callable = functions[0]
            self.kind = "python"
        else:
            for f in functions:
                self._add(f, user_data)
        if out_shape is not None:
            self.out_shape = _shape(out_shape)
        if self.callable is not None and out_shape is not None:
            raise TypeError("cyad: out_shape is for C functions; a Python callable's output "
                            "shape is learned from its result")

    cdef _copy(self, FunctionWrapper other):
        self.function = other.function
        self.callable = other.callable
        self.kind = other.kind
        self.owner = other.owner
        self.out_shape = other.out_shape
        self.tape = other.tape

    cdef _add(self, object f, object user_data):
        """Take the function pointer (and context) of one C-level function."""
        cdef void* pointer
        cdef void* context = _address(user_data)
        kind, signature, address, owner = _c_function(f)
        if context == NULL and kind in ("capsule", "LowLevelCallable"):
            context = _capsule_context(owner)
        pointer = <void*><size_t>address
        normal = _normalise(signature)
        if normal == _F64:
            if self.function.f64 != NULL:
                raise TypeError("cyad: two float64 functions given")
            self.function.f64 = <cyad_f64>pointer
        elif normal == _F32:
            if self.function.f32 != NULL:
                raise TypeError("cyad: two float32 functions given")
            self.function.f32 = <cyad_f32>pointer
        elif normal == _SECOND_F64:
            if self.function.second_f64 != NULL:
                raise TypeError("cyad: two second-order float64 functions given")
            self.function.second_f64 = <cyad2_f64>pointer
        elif normal == _SECOND_F32:
            if self.function.second_f32 != NULL:
                raise TypeError("cyad: two second-order float32 functions given")
            self.function.second_f32 = <cyad2_f32>pointer
        else:
            raise _signature_error(signature)
        if context != NULL:
            if self.function.context != NULL and self.function.context != context:
                raise TypeError("cyad: the functions of one wrapper have different contexts")
            self.function.context = context
        self.kind = kind
        self.owner.extend([f, owner, user_data])

    @property
    def supports_float64(self):
        return self.callable is not None or self.function.f64 != NULL

    @property
    def supports_float32(self):
        return self.callable is not None or self.function.f32 != NULL

    @property
    def supports_second_order_float64(self):
        return self.callable is not None or self.function.second_f64 != NULL

    @property
    def supports_second_order_float32(self):
        return self.callable is not None or self.function.second_f32 != NULL

    def __repr__(self):
        forms = [name for name, ok in (("float64", self.supports_float64),
                                       ("float32", self.supports_float32),
                                       ("second-order float64", self.supports_second_order_float64),
                                       ("second-order float32", self.supports_second_order_float32))
                 if ok]
        return f"<cyad.FunctionWrapper of a {self.kind} function for {'/'.join(forms)}>"


cdef FunctionWrapper wrap(cyad_f64 f64, cyad_f32 f32, void* context, object out_shape=None,
                          object owner=None, cyad2_f64 second_f64=NULL,
                          cyad2_f32 second_f32=NULL):
    """A FunctionWrapper of C functions of cyad's signatures (at least one non-NULL).

    For Cython code that has the functions themselves: first order in float64
    and float32, and optionally second order (`second_f64`, `second_f32`). All
    share `context`; `owner` is kept alive with the wrapper (for example
    whatever `context` points into).
    """
    cdef FunctionWrapper w = FunctionWrapper.__new__(FunctionWrapper)
    if f64 == NULL and f32 == NULL and second_f64 == NULL and second_f32 == NULL:
        raise TypeError("cyad: wrap needs at least one function")
    w.function.f64 = f64
    w.function.f32 = f32
    w.function.second_f64 = second_f64
    w.function.second_f32 = second_f32
    w.function.context = context
    w.kind = "cython"
    w.owner = [owner]
    w.callable = None
    w.out_shape = _shape(out_shape)
    return w


cdef object _shape(object out_shape):
    if out_shape is None:
        return None
    if isinstance(out_shape, (int, np.integer)):
        return (int(out_shape),)
    return tuple(int(n) for n in out_shape)


cpdef bint is_python_function(object f):
    """Whether f is, or wraps, a Python callable (as opposed to a C function)."""
    if isinstance(f, FunctionWrapper):
        return (<FunctionWrapper>f).callable is not None
    return callable(f) and not is_c_function(f)


cpdef bint is_c_function(object f):
    """Whether f is one of the C-level function objects FunctionWrapper takes."""
    return (PyCapsule_CheckExact(f) or isinstance(f, ctypes._CFuncPtr)
            or type(f).__module__ == "_cffi_backend" or type(f).__name__ == "LowLevelCallable"
            or isinstance(getattr(f, "ctypes", None), ctypes._CFuncPtr))


def _c_function(f):
    """(kind, signature, address, owner) of a C-level function object."""
    if PyCapsule_CheckExact(f):
        return "capsule", _capsule_name(f), _capsule_pointer(f), f
    if type(f).__name__ == "LowLevelCallable":
        capsule = tuple.__getitem__(f, 0)  # the capsule it made; `.function` is what it was given
        return "LowLevelCallable", _capsule_name(capsule), _capsule_pointer(capsule), capsule
    if isinstance(f, ctypes._CFuncPtr):
        return "ctypes", _ctypes_signature(f), ctypes.cast(f, ctypes.c_void_p).value, f
    if type(f).__module__ == "_cffi_backend":
        import cffi
        ffi = cffi.FFI()
        signature = ffi.getctype(ffi.typeof(f)).replace("(*)", " ")
        return "cffi", signature, int(ffi.cast("uintptr_t", f)), f
    if hasattr(f, "ctypes") and isinstance(f.ctypes, ctypes._CFuncPtr):  # a numba cfunc
        return "numba", _ctypes_signature(f.ctypes), ctypes.cast(f.ctypes, ctypes.c_void_p).value, f
    raise TypeError(f"cyad: cannot differentiate a {type(f).__name__}; pass a Python callable or "
                    "a C function of cyad's signature (PyCapsule, scipy.LowLevelCallable, ctypes, "
                    "cffi or numba cfunc)")


cdef str _capsule_name(object capsule):
    cdef const char* name = PyCapsule_GetName(capsule)
    if name == NULL:
        raise _signature_error(None)
    return name.decode()


cdef size_t _capsule_pointer(object capsule) except? 0:
    return <size_t>PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule))


cdef void* _capsule_context(object capsule) except? NULL:
    return PyCapsule_GetContext(capsule)


_CTYPES_NAMES = {
    ctypes.c_int: "int", ctypes.c_double: "double", ctypes.c_float: "float",
    ctypes.c_ssize_t: "Py_ssize_t", ctypes.c_void_p: "void *",
    ctypes.POINTER(ctypes.c_double): "double *", ctypes.POINTER(ctypes.c_float): "float *",
}


def _ctypes_signature(f):
    names = [_CTYPES_NAMES.get(t, getattr(t, "__name__", str(t))) for t in f.argtypes or ()]
    result = _CTYPES_NAMES.get(f.restype, getattr(f.restype, '__name__', 'void'))
    return f"{result} ({', '.join(names)})"


cdef void* _address(object user_data) except? NULL:
    if user_data is None:
        return NULL
    if PyCapsule_CheckExact(user_data):
        return PyCapsule_GetPointer(user_data, PyCapsule_GetName(user_data))
    if isinstance(user_data, int):
        return <void*><size_t>user_data
    return <void*><size_t>ctypes.cast(user_data, ctypes.c_void_p).value


# -- Python callables behind the C signature -------------------------------------------

cdef class PythonFunction:
    """A Python callable bound to a prep's dual arrays, callable through cyad's signature.

    The trampolines below take the GIL, copy any buffer that is not the dual
    arrays' own into them, call the callable and copy the result out. An
    exception raised by the callable is kept in `error` and reported as
    PYTHON_ERROR; the caller re-raises it.
    """

    def __init__(self, object f, bint two_argument, Dual x_dual):
        self.f = f
        self.two_argument = two_argument
        self.x_dual = x_dual
        self.y_dual = None
        self.error = None

    cdef int run(self, const char* x, const char* dx, char* y, char* dy) noexcept:
        """Evaluate on the given buffers (NULL y: the one-argument form learns the output)."""
        cdef Dual xd = self.x_dual, yd = self.y_dual
        enter()    # (a cyad operator f calls nests)
        try:
            _copy_in(xd.values, x)
            _copy_in(xd.partials, dx)
            if self.two_argument:
                _copy_in(yd.values, y)
                memset(cnp.PyArray_DATA(yd.partials), 0, cnp.PyArray_NBYTES(yd.partials))
                r = self.f(yd, xd)
                if r is not None and r is not yd:
                    raise returned_under_y(r)
            else:
                r = self.f(xd)
                if isinstance(r, (list, tuple)):    # (calling `stacked` on every result allocates)
                    r = stacked(r)
                self.store(r)
            _copy_out(yd.values, y)
            _copy_out(yd.partials, dy)
            return 0
        except BaseException as error:
            self.error = error
            return PYTHON_ERROR
        finally:
            leave()

    cdef store(self, object r):
        """Put a one-argument f's result into y_dual (checked against it)."""
        cdef Dual d, yd = self.y_dual
        if isinstance(r, Dual):
            d = <Dual>r
            if d.tag is not yd.tag:
                raise TypeError("cyad: f returned a dual array of another differentiation")
            if not cnp.PyArray_SAMESHAPE(d.values, yd.values):
                raise _changed_output(r.shape, yd)
            if (cnp.PyArray_TYPE(d.values) == cnp.PyArray_TYPE(yd.values)
                    and cnp.PyArray_IS_C_CONTIGUOUS(d.values)
                    and cnp.PyArray_IS_C_CONTIGUOUS(d.partials)):
                memcpy(cnp.PyArray_DATA(yd.values), cnp.PyArray_DATA(d.values),
                       cnp.PyArray_NBYTES(yd.values))
                memcpy(cnp.PyArray_DATA(yd.partials), cnp.PyArray_DATA(d.partials),
                       cnp.PyArray_NBYTES(yd.partials))
            else:
                # another layout, or a dtype f promoted to: cast to the prep's dtype
                yd.values[...] = d.values
                yd.partials[...] = d.partials
            return
        if (cnp.PyArray_NDIM(yd.values) == 0 and isinstance(r, (float, int))
                and not isinstance(r, bool)):
            (<object>yd.values)[()] = r
        else:
            c = constant_result(r)
            if c.shape != (<object>yd.values).shape:
                raise _changed_output(c.shape, yd)
            yd.values[...] = c
        memset(cnp.PyArray_DATA(yd.partials), 0, cnp.PyArray_NBYTES(yd.partials))


class ComplexValues(TypeError):
    """f returned complex values where a real call expected real ones: the operators answer
    the call as a complex one (cyad/_complex/operators.py)."""


def constant_result(r):
    """A constant returned by f as an ndarray (zero derivative), or TypeError
    (ComplexValues for complex values)."""
    if isinstance(r, complex) or getattr(type(r), "__cyad_complex__", False) or (
            isinstance(r, (np.ndarray, np.generic)) and r.dtype.kind == "c"):
        raise ComplexValues("cyad: f returned complex values where real ones were expected "
                            "(into a real y, or from a C function)")
    if isinstance(r, (float, int, np.ndarray, np.generic)) and not isinstance(r, (bool, complex)):
        c = np.asarray(r)
        if c.dtype.kind in "biuf":
            return c
        raise TypeError(f"cyad: f returned an array of dtype {c.dtype}")
    raise TypeError("cyad: f must return a dual array (the result of NumPy operations on "
                    f"its input), an ndarray or a number, not {type(r).__name__}")


cdef object _changed_output(shape, Dual expected):
    return ValueError(f"cyad: f returned shape {shape}, but this prep was made for shape "
                      f"{(<object>expected.values).shape}")


cdef inline void _copy_in(cnp.ndarray a, const char* src) noexcept:
    if src != <char*>cnp.PyArray_DATA(a):
        memcpy(cnp.PyArray_DATA(a), src, cnp.PyArray_NBYTES(a))


cdef inline void _copy_out(cnp.ndarray a, char* dst) noexcept:
    if dst != <char*>cnp.PyArray_DATA(a):
        memcpy(dst, cnp.PyArray_DATA(a), cnp.PyArray_NBYTES(a))


cdef int python_f64(const double* x, const double* dx, double* y, double* dy,
                    Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                    void* context) noexcept nogil:
    with gil:
        return (<PythonFunction>context).run(<const char*>x, <const char*>dx, <char*>y, <char*>dy)


cdef int python_f32(const float* x, const float* dx, float* y, float* dy,
                    Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                    void* context) noexcept nogil:
    with gil:
        return (<PythonFunction>context).run(<const char*>x, <const char*>dx, <char*>y, <char*>dy)


cdef int python2_f64(const double* x, const double* dx, double* y, double* dy,
                     Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t outer, Py_ssize_t inner,
                     void* context) noexcept nogil:
    with gil:
        return (<PythonFunction>context).run(<const char*>x, <const char*>dx, <char*>y, <char*>dy)


cdef int python2_f32(const float* x, const float* dx, float* y, float* dy,
                     Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t outer, Py_ssize_t inner,
                     void* context) noexcept nogil:
    with gil:
        return (<PythonFunction>context).run(<const char*>x, <const char*>dx, <char*>y, <char*>dy)
