cimport numpy as cnp
from cyad._dual cimport Dual, Tag
from cyad._fused cimport real
from cyad._wrapper cimport cyad_function, FunctionWrapper, PythonFunction

# What a prep was made for; a prep serves every operator of its family
# (pushforward and value_and_pushforward share one, and so on).
cpdef enum Family:
    PUSHFORWARD
    DERIVATIVE
    GRADIENT
    JACOBIAN
    SECOND_DERIVATIVE
    HVP
    HESSIAN

# Statuses of the engine besides 0 (success) and the function's own nonzero statuses.
cpdef enum:
    PYTHON_ERROR = -1          # the Python callable raised; the prep keeps the exception
    WRONG_CALL = -2            # an entry point of another dtype or family than the prep's
    PREP_BUSY = -3             # another call is running on the prep (another thread, or f)
    OVERLAPPING_OUTPUTS = -4   # two outputs share memory (f's value may only be y itself)
    NO_MEMORY = -5             # no memory for copies of the inputs that overlap an output


# Everything a prepared call runs on, usable without the GIL.
ctypedef struct cyad_prep:
    int family
    bint two_argument
    bint float32
    Py_ssize_t n_x, n_y
    Py_ssize_t directions      # tangents (pushforward) or basis directions (n_x)
    Py_ssize_t chunk           # directions per evaluation
    Py_ssize_t width           # lanes: chunk padded to 1, 2, 4, 8, 16 or a multiple of 8
    # second order: the directions above are the inner ones; the outer ones are the
    # hvp's tangents, the hessian's basis, or the second derivative's single tangent
    Py_ssize_t outer_directions
    Py_ssize_t outer_chunk     # outer directions per evaluation
    Py_ssize_t outer           # lanes of the outer and the inner partials
    Py_ssize_t inner           #   (width is then second_order_width(outer, inner))
    void* dx                   # input partials, n_x x width
    void* y                    # output values, n_y
    void* dy                   # output partials, n_y x width
    bint pending               # the first chunk was evaluated already: y and dy hold it
    cyad_function function
    # new fields go at the end, so that those above keep their offsets
    int busy                   # 1 while a call runs on the prep: claimed atomically
    void* spans                # per call: the output buffers by address (records of _core.pyx)
    Py_ssize_t overlapping[2]  # after OVERLAPPING_OUTPUTS: the two spans that meet
    void* scratch              # copies of inputs that overlap an output, allocated when needed
    Py_ssize_t scratch_bytes


cdef class Prep:
    cdef cyad_prep state
    cdef readonly Family family
    cdef readonly bint two_argument
    cdef readonly object dtype
    cdef readonly tuple x_shape
    cdef readonly object out_shape
    cdef readonly Dual input_dual
    cdef Dual y_dual
    cdef PythonFunction python         # the Python callable's binding, or None
    cdef FunctionWrapper wrapper       # the C function in use, or None
    cdef object bound                  # the f of the last call
    cdef Tag tag                       # marks the duals of this prep's differentiation
    cdef int typenum
    cdef int x_ndim, out_ndim, jacobian_ndim
    cdef cnp.npy_intp x_dims[64]
    cdef cnp.npy_intp out_dims[64]
    cdef tuple jacobian_shape          # out_shape + x_shape
    cdef cnp.npy_intp jacobian_dims[64]
    cdef cnp.ndarray scalar_x          # a Python-number x, as an array
    cdef cnp.ndarray scalar_t          # a Python-number tangent, as an array
    cdef void** tangents               # per call: the tangents' data
    cdef void** outs                   # per call: the outputs' data

    cdef _size_first_order(self, Py_ssize_t directions, object chunk, bint python)
    cdef _size_second_order(self, Py_ssize_t directions, object chunk, bint python)
    cdef _bind_kind(self, object f)
    cdef _use_wrapper(self, FunctionWrapper w)
    cdef check_form(self, Family family, object y)
    cdef bind(self, object f)
    cdef object input(self, object x)
    cdef object tangent(self, object t)
    cdef list point_to_tangents(self, tuple batch)
    cdef object batch_tangent(self, object t)
    cdef check_array(self, str name, object a)
    cdef check_y(self, object y)
    cdef check_out(self, object out, tuple shape, int ndim, cnp.npy_intp* dims, str what)
    cdef set_output(self, tuple shape)
    cdef discover(self, object x)
    cdef raise_for(self, int status)
    cdef object pushforward(self, object f, object x, object dx, object y, object out,
                            bint with_value)
    cdef object _pushforward(self, object x, object y, object out, bint with_value, bint batch,
                             Py_ssize_t given, object pair, object value_out)
    cdef int _run_pushforward(self, object x, object y, object value)
    cdef object jacobian(self, object f, object x, object y, object out, bint with_value)
    cdef object _jacobian(self, object x, object y, object out, bint with_value, object pair,
                          object value_out)
    cdef int _run_jacobian(self, object x, object y, object value, object out)
    cdef begin(self, bint nest)
    cdef end(self, bint nest)
    cdef object second(self, object f, object x, object v, object y, object out, int results)
    cdef object _second(self, object x, object y, object out, object value_out,
                        object first_out, object second_out, int results, bint batch,
                        Py_ssize_t count)
    cdef int _run_second(self, object x, object y, object value, object first)
    cdef tuple split(self, object out, int count)
    cdef object value_buffer(self, object value_out, object y, bint with_value)


# Raise the RuntimeError of a busy prep if `prep` is a Prep that a call is running on.
cdef int refuse_busy(object prep) except -1


# -- nogil entry points for Cython users ------------------------------------------------
# Prepare with the GIL (cyad.prepare_*), take `prep_state(prep)`, then call these from
# `with nogil:` on raw C-contiguous buffers of the prep's dtype and shapes. y is the
# two-argument form's in/out output (NULL in the one-argument form); value receives
# f's value and may be NULL. Outputs may overlap inputs (the inputs are read as they
# were when the call started) but not one another, f's value written to y itself
# aside. They return 0, the function's own nonzero status, or one of the statuses
# above (prep.raise_for_status raises what each reports); PREP_BUSY when the prep is
# in use by another call.

cdef cyad_prep* prep_state(Prep prep) except NULL

cdef int pushforward_nogil(cyad_prep* p, const real* x, const real* dx, real* y,
                           real* out) noexcept nogil
cdef int value_and_pushforward_nogil(cyad_prep* p, const real* x, const real* dx, real* y,
                                     real* value, real* out) noexcept nogil
cdef int gradient_nogil(cyad_prep* p, const real* x, real* y, real* value,
                        real* gradient) noexcept nogil
cdef int jacobian_nogil(cyad_prep* p, const real* x, real* y, real* value,
                        real* jacobian) noexcept nogil
cdef int hvp_nogil(cyad_prep* p, const real* x, const real* v, real* y, real* gradient,
                   real* out) noexcept nogil
cdef int hessian_nogil(cyad_prep* p, const real* x, real* y, real* value, real* gradient,
                       real* hessian) noexcept nogil
