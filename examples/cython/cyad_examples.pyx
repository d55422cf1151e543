"""Exact derivatives of compiled functions, with no Python in the loop.

Rosenbrock's function and Robertson's stiff chemical kinetics are written once,
generically, on cyad's dual elements (cyad.dual): the same code runs for every
lane count and dtype, and the rule table supplies every derivative. Each has a
function of cyad's dual-level signature that dispatches on the lane width;
Rosenbrock's body also runs on the second-order elements, behind functions of
the second-order signature (Hessians, Hessian-vector products).

The def functions prepare once with the GIL and then compute gradients,
Jacobians, vector-Jacobian products and Hessians inside `with nogil:` through
cyad's entry points. A Python function runs there too, once recorded
(cyad.record): its tape is a C function of the same signature.
"""
import numpy as np

from cyad import prepare_gradient, prepare_hessian, prepare_jacobian, prepare_pullback, record

cimport cyad
from cyad.dual cimport *


# -- Rosenbrock: f(x) = sum_i 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2 ---------------------

cdef int rosenbrock_lanes(any_dual* tag, const real* x, const real* dx, real* y, real* dy,
                          Py_ssize_t n, Py_ssize_t width, Py_ssize_t lane0) noexcept nogil:
    cdef any_dual xi, xn, total
    cdef Py_ssize_t i
    constant(&total, 0.0)
    load(&xi, x, dx, 0, width, lane0)
    for i in range(1, n):
        load(&xn, x, dx, i, width, lane0)
        total = add(total, add(mul_c(square(sub(xn, square(xi))), 100.0), square(c_sub(1.0, xi))))
        xi = xn
    store(total, y, dy, 0, width, lane0)
    return 0


cdef int rosenbrock(const double* x, const double* dx, double* y, double* dy,
                    Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                    void* context) noexcept nogil:
    cdef Py_ssize_t lane0
    cdef int status = 0
    if width == 1:
        return rosenbrock_lanes(<dual1*>NULL, x, dx, y, dy, n_x, width, 0)
    if width == 2:
        return rosenbrock_lanes(<dual2*>NULL, x, dx, y, dy, n_x, width, 0)
    if width == 4:
        return rosenbrock_lanes(<dual4*>NULL, x, dx, y, dy, n_x, width, 0)
    if width == 8:
        return rosenbrock_lanes(<dual8*>NULL, x, dx, y, dy, n_x, width, 0)
    if width == 16:
        return rosenbrock_lanes(<dual16*>NULL, x, dx, y, dy, n_x, width, 0)
    for lane0 in range(0, width, 8):  # wider chunks: blocks of 8 lanes
        status = rosenbrock_lanes(<dual8*>NULL, x, dx, y, dy, n_x, width, lane0)
        if status:
            break
    return status


# The same body on second-order elements: `inner` takes the place of the width.
cdef int rosenbrock_second(const double* x, const double* dx, double* y, double* dy,
                           Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t outer, Py_ssize_t inner,
                           void* context) noexcept nogil:
    cdef Py_ssize_t lane0
    cdef int status = 0
    if outer != 1:
        return 1  # the elements read rows of one outer direction, as cyad passes them
    if inner == 1:
        return rosenbrock_lanes(<hdual1*>NULL, x, dx, y, dy, n_x, inner, 0)
    if inner == 2:
        return rosenbrock_lanes(<hdual2*>NULL, x, dx, y, dy, n_x, inner, 0)
    if inner == 4:
        return rosenbrock_lanes(<hdual4*>NULL, x, dx, y, dy, n_x, inner, 0)
    if inner == 8:
        return rosenbrock_lanes(<hdual8*>NULL, x, dx, y, dy, n_x, inner, 0)
    # more inner directions: blocks of 8 (hdual8 copies fit in vector registers; a 272-byte
    # hdual16 is copied with `rep movs`: Rosenbrock at inner 16 took 5x longer as one hdual16)
    for lane0 in range(0, inner, 8):
        status = rosenbrock_lanes(<hdual8*>NULL, x, dx, y, dy, n_x, inner, lane0)
        if status:
            break
    return status


cdef int rosenbrock_second_f32(const float* x, const float* dx, float* y, float* dy,
                               Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t outer,
                               Py_ssize_t inner, void* context) noexcept nogil:
    cdef Py_ssize_t lane0
    cdef int status = 0
    if outer != 1:
        return 1
    if inner == 1:
        return rosenbrock_lanes(<hdual1f*>NULL, x, dx, y, dy, n_x, inner, 0)
    if inner == 2:
        return rosenbrock_lanes(<hdual2f*>NULL, x, dx, y, dy, n_x, inner, 0)
    if inner == 4:
        return rosenbrock_lanes(<hdual4f*>NULL, x, dx, y, dy, n_x, inner, 0)
    if inner == 8:
        return rosenbrock_lanes(<hdual8f*>NULL, x, dx, y, dy, n_x, inner, 0)
    for lane0 in range(0, inner, 8):
        status = rosenbrock_lanes(<hdual8f*>NULL, x, dx, y, dy, n_x, inner, lane0)
        if status:
            break
    return status


# -- Robertson: the right-hand side of u' = f(u) -------------------------------------------

cdef int robertson_lanes(dual* tag, const real* x, const real* dx, real* y, real* dy,
                         Py_ssize_t width, Py_ssize_t lane0) noexcept nogil:
    cdef dual u0, u1, u2, a, b, c
    load(&u0, x, dx, 0, width, lane0)
    load(&u1, x, dx, 1, width, lane0)
    load(&u2, x, dx, 2, width, lane0)
    a = mul_c(u0, 0.04)
    b = mul_c(mul(u1, u2), 1e4)
    c = mul_c(square(u1), 3e7)
    store(sub(b, a), y, dy, 0, width, lane0)
    store(sub(sub(a, b), c), y, dy, 1, width, lane0)
    store(c, y, dy, 2, width, lane0)
    return 0


cdef int robertson(const double* x, const double* dx, double* y, double* dy,
                   Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                   void* context) noexcept nogil:
    # every width is 1, 2 or a multiple of 4: three inputs need no wider specialisation
    cdef Py_ssize_t lane0
    if width == 1:
        return robertson_lanes(<dual1*>NULL, x, dx, y, dy, width, 0)
    if width == 2:
        return robertson_lanes(<dual2*>NULL, x, dx, y, dy, width, 0)
    for lane0 in range(0, width, 4):
        robertson_lanes(<dual4*>NULL, x, dx, y, dy, width, lane0)
    return 0


cdef int robertson_f32(const float* x, const float* dx, float* y, float* dy,
                       Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                       void* context) noexcept nogil:
    cdef Py_ssize_t lane0
    if width == 1:
        return robertson_lanes(<dual1f*>NULL, x, dx, y, dy, width, 0)
    if width == 2:
        return robertson_lanes(<dual2f*>NULL, x, dx, y, dy, width, 0)
    for lane0 in range(0, width, 4):
        robertson_lanes(<dual4f*>NULL, x, dx, y, dy, width, lane0)
    return 0


# -- Python-facing functions: prepare with the GIL, compute without it ------------------------

def rosenbrock_function():
    """Rosenbrock as a cyad.FunctionWrapper of both orders (float64), for cyad's operators."""
    return cyad.wrap(rosenbrock, NULL, NULL, (), None, second_f64=rosenbrock_second)


def robertson_function():
    """Robertson's right-hand side (float64 and float32) as a cyad.FunctionWrapper."""
    return cyad.wrap(robertson, robertson_f32, NULL, (3,))


def rosenbrock_gradients(double[:, ::1] points, chunk=None):
    """The gradient of Rosenbrock at every row of `points`, computed in one nogil loop."""
    cdef Py_ssize_t k, m = points.shape[0]
    cdef double[:, ::1] gradients = np.empty_like(points)
    cdef int status = 0
    prep = prepare_gradient(rosenbrock_function(), np.asarray(points[0]), chunk=chunk)
    cdef cyad.cyad_prep* handle = cyad.prep_handle(prep)
    with nogil:
        for k in range(m):
            status = cyad.gradient_nogil(handle, &points[k, 0], <double*>NULL, <double*>NULL,
                                         &gradients[k, 0])
            if status:
                break
    cyad.raise_status(prep, status)
    return np.asarray(gradients)


def robertson_jacobians(double[:, ::1] states):
    """The Jacobian of Robertson's kinetics at every row of `states`, in one nogil loop."""
    cdef Py_ssize_t k, m = states.shape[0]
    cdef double[:, :, ::1] jacobians = np.empty((m, 3, 3))
    cdef int status = 0
    prep = prepare_jacobian(robertson_function(), np.asarray(states[0]))
    cdef cyad.cyad_prep* handle = cyad.prep_handle(prep)
    with nogil:
        for k in range(m):
            status = cyad.jacobian_nogil(handle, &states[k, 0], <double*>NULL, <double*>NULL,
                                         &jacobians[k, 0, 0])
            if status:
                break
    cyad.raise_status(prep, status)
    return np.asarray(jacobians)


def robertson_pullbacks(double[:, ::1] states, double[:, ::1] cotangents):
    """cotangents[k] @ J(states[k]) of Robertson's kinetics for every row, in one nogil
    loop."""
    cdef Py_ssize_t k, m = states.shape[0]
    cdef double[:, ::1] products = np.empty_like(states)
    cdef int status = 0
    prep = prepare_pullback(robertson_function(), np.asarray(states[0]),
                            np.asarray(cotangents[0]))
    cdef cyad.cyad_prep* handle = cyad.prep_handle(prep)
    with nogil:
        for k in range(m):
            status = cyad.pullback_nogil(handle, &states[k, 0], &cotangents[k, 0], <double*>NULL,
                                         &products[k, 0])
            if status:
                break
    cyad.raise_status(prep, status)
    return np.asarray(products)


def rosenbrock_hessians(double[:, ::1] points, chunk=None):
    """The Hessian of Rosenbrock at every row of `points`, computed in one nogil loop."""
    cdef Py_ssize_t k, m = points.shape[0], n = points.shape[1]
    cdef double[:, :, ::1] hessians = np.empty((m, n, n))
    cdef int status = 0
    prep = prepare_hessian(rosenbrock_function(), np.asarray(points[0]), chunk=chunk)
    cdef cyad.cyad_prep* handle = cyad.prep_handle(prep)
    with nogil:
        for k in range(m):
            status = cyad.hessian_nogil(handle, &points[k, 0], <double*>NULL, <double*>NULL,
                                        <double*>NULL, &hessians[k, 0, 0])
            if status:
                break
    cyad.raise_status(prep, status)
    return np.asarray(hessians)


# -- a Python function, recorded: its tape called from a nogil loop ----------------------------

def recorded_jacobians(f, double[:, ::1] points):
    """The Jacobian of a Python function f (NumPy operations, float64) at every row of
    `points`: f recorded once at the first row, then its tape replayed through its C
    function in one nogil loop, with the n basis directions of x as the lanes."""
    cdef Py_ssize_t k, m = points.shape[0], n = points.shape[1]
    wrapper = record(f, np.asarray(points[0]))
    cdef const cyad.cyad_function* function = cyad.function_of(wrapper)
    cdef Py_ssize_t n_y = int(np.prod(wrapper.out_shape))
    cdef double[::1] y = np.empty(n_y)
    cdef double[:, ::1] basis = np.eye(n)
    cdef double[:, :, ::1] jacobians = np.zeros((m, n_y, n))   # dy: zero on entry
    cdef int status = 0
    with nogil:
        for k in range(m):
            # dy, n_y x n lanes row-major, is the Jacobian's rows
            status = function.f64(&points[k, 0], &basis[0, 0], &y[0], &jacobians[k, 0, 0],
                                  n, n_y, n, function.context)
            if status:
                break
    cyad.raise_function_status(wrapper, status)
    return np.asarray(jacobians)
