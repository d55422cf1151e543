from cyad._dual.array cimport Dual, Tag
from cyad._core cimport prep_header, Engine, Prep
from cyad._wrapper cimport cyad_function, FunctionWrapper, PythonFunction

# The dual engine's state of a prep, usable without the GIL.
ctypedef struct dual_prep:
    prep_header base           # first: a handle is a pointer to this struct
    Py_ssize_t directions      # tangents (pushforward) or basis directions (n_x)
    Py_ssize_t chunk           # directions per evaluation
    Py_ssize_t width           # lanes: chunk padded to 1, 2, 4, 8, 16 or a multiple of 8
    # second order: the directions above are the inner ones; the outer ones are the
    # hvp's tangents, the hessian's basis, or the second derivative's single tangent
    Py_ssize_t outer_directions
    Py_ssize_t outer_chunk     # outer directions per evaluation
    Py_ssize_t outer           # lanes of the outer and the inner partials
    Py_ssize_t inner           # (width is then second_order_width(outer, inner))
    void* dx                   # input partials, n_x x width
    void* y                    # output values, n_y
    void* dy                   # output partials, n_y x width
    bint pending               # the first chunk was evaluated already: y and dy hold it
    cyad_function function


cdef class DualEngine(Engine):
    cdef dual_prep state
    cdef readonly Dual input_dual
    cdef Dual y_dual
    cdef PythonFunction python         # the Python callable's binding, or None
    cdef FunctionWrapper wrapper       # the C function in use, or None
    cdef Tag tag                       # marks the duals of this prep's differentiation
    cdef bint second_order
    cdef bint symmetric
    cdef object dtype

    cdef _size_first_order(self, Py_ssize_t directions, object chunk, bint python)
    cdef _size_second_order(self, Py_ssize_t directions, object chunk, bint python,
                            bint outer_basis)
    cdef _use_wrapper(self, FunctionWrapper w)
    cdef object _call_f(self)
    cdef _warn_if_long(self, Prep prep, double seconds)
