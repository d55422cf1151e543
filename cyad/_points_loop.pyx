"""The compiled loop behind cyad.at_points: one prep, a block of points, no GIL.

`run_rows` calls a prep's nogil entry point (cyad/_api.pxd) on every row of a block of
points, writing each row's results into rows of the stacked outputs. The GIL is released
for the whole block, so threads that each own a prep and a block run in parallel where the
prep's engine runs without the GIL (a tape, a C function); a prep that calls a Python
callable takes the GIL for each evaluation, and the threads take turns.

Points with per-point arguments are differentiated as one vector z = (x, arguments) (see
cyad/_points.py): the entry point writes z-space results into scratch rows, of which the
loop keeps the first `kept` rows' first `n_x` columns (the derivatives with respect to x).
Without arguments the results go straight into the output rows.

A block is one operation: a default tape compares f's Python state once, at the block's
start (cyad/_tape_engine.pyx, `hold_python_state`), not at every row with the GIL.
"""
cimport numpy as cnp
from libc.string cimport memcpy

from cyad._api cimport (cyad_prep, prep_handle, raise_status, gradient_nogil, jacobian_nogil,
                        hessian_nogil, hvp_nogil)
from cyad._fused cimport real
from cyad._tape_engine cimport hold_python_state, release_python_state

cnp.import_array()

# the operator families the loop runs (cyad/_points.py names them)
cpdef enum:
    GRADIENT = 0
    JACOBIAN = 1
    HESSIAN = 2
    HVP = 3


cdef inline char* row_of(object a, Py_ssize_t i):
    # row i of a C-contiguous array with a leading axis of points, or NULL without one
    if a is None:
        return NULL
    return <char*>cnp.PyArray_DATA(a) + i * cnp.PyArray_STRIDES(a)[0]


cdef inline void keep(real* dst, const real* src, Py_ssize_t rows, Py_ssize_t width,
                      Py_ssize_t n_x) noexcept nogil:
    # dst (rows x n_x) = the first n_x columns of src (rows x width)
    cdef Py_ssize_t r
    for r in range(rows):
        memcpy(&dst[r * n_x], &src[r * width], n_x * sizeof(real))


cdef int run_block(real* tag, cyad_prep* p, int family, char* z, Py_ssize_t z_step,
                   const char* v, Py_ssize_t v_step, char* value, Py_ssize_t value_step,
                   char* first, Py_ssize_t first_step, char* main, Py_ssize_t main_step,
                   real* first_scratch, real* main_scratch, Py_ssize_t n_x, Py_ssize_t width,
                   Py_ssize_t kept, Py_ssize_t count, Py_ssize_t* failed) noexcept nogil:
    cdef Py_ssize_t i
    cdef int status = 0
    cdef real* x
    cdef real* val
    cdef real* fst
    cdef real* res
    for i in range(count):
        x = <real*>(z + i * z_step)
        val = <real*>(value + i * value_step) if value != NULL else NULL
        fst = <real*>(first + i * first_step) if first != NULL else NULL
        res = <real*>(main + i * main_step)
        if main_scratch != NULL:          # z-space results, of which the loop keeps x's part
            res = main_scratch
            if fst != NULL:
                fst = first_scratch
        if family == GRADIENT:
            status = gradient_nogil(p, <const real*>x, <real*>NULL, val, res)
        elif family == JACOBIAN:
            status = jacobian_nogil(p, <const real*>x, <real*>NULL, val, res)
        elif family == HESSIAN:
            status = hessian_nogil(p, <const real*>x, <real*>NULL, val, fst, res)
        else:
            status = hvp_nogil(p, <const real*>x, <const real*>(v + i * v_step), <real*>NULL,
                               fst, res)
        if status:
            failed[0] = i
            return status
        if main_scratch != NULL:
            keep(<real*>(main + i * main_step), main_scratch, kept, width, n_x)
            if first != NULL:
                keep(<real*>(first + i * first_step), first_scratch, 1, width, n_x)
    return 0


def run_rows(prep, int family, cnp.ndarray z, object v, object value, object first,
             cnp.ndarray main, object first_scratch, object main_scratch, Py_ssize_t n_x,
             Py_ssize_t kept, Py_ssize_t start, Py_ssize_t stop):
    """Run the prep's entry point of `family` on rows start..stop of z (and of the tangents v
    for HVP), writing rows start..stop of value, first and main (value, first: None when not
    wanted). With scratch arrays (z wider than x), the results land there and the first
    `kept` rows' first `n_x` columns go to main (the first row's to first). Raises what the
    prep reports, with a note naming the point."""
    cdef cyad_prep* p = prep_handle(prep)
    cdef Py_ssize_t failed = -1, width = z.shape[1] if z.ndim > 1 else 1
    cdef int status = 0
    cdef char* zp = row_of(z, start)
    cdef const char* vp = row_of(v, start)
    cdef char* valp = row_of(value, start)
    cdef char* fp = row_of(first, start)
    cdef char* mp = row_of(main, start)
    cdef char* fs = NULL if first_scratch is None else row_of(first_scratch, 0)
    cdef char* ms = NULL if main_scratch is None else row_of(main_scratch, 0)
    cdef Py_ssize_t zs = z.strides[0], vs = 0 if v is None else (<cnp.ndarray>v).strides[0]
    cdef Py_ssize_t vals = 0 if value is None else (<cnp.ndarray>value).strides[0]
    cdef Py_ssize_t fss = 0 if first is None else (<cnp.ndarray>first).strides[0]
    cdef Py_ssize_t ms_ = main.strides[0]
    cdef bint single = z.dtype.num == cnp.NPY_FLOAT
    cdef bint held = hold_python_state(prep)
    try:
        with nogil:
            if single:
                status = run_block(<float*>NULL, p, family, zp, zs, vp, vs, valp, vals, fp,
                                   fss, mp, ms_, <float*>fs, <float*>ms, n_x, width, kept,
                                   stop - start, &failed)
            else:
                status = run_block(<double*>NULL, p, family, zp, zs, vp, vs, valp, vals, fp,
                                   fss, mp, ms_, <double*>fs, <double*>ms, n_x, width, kept,
                                   stop - start, &failed)
    finally:
        release_python_state(prep, held)
    if status:
        try:
            raise_status(prep, status)
        except BaseException as e:
            e.add_note(f"cyad.at_points: at point {start + failed}")
            raise
    return None
