"""The compiled loop behind cyad.at_points: a prep per block of points, no GIL.

`run_rows` calls a prep's nogil entry point (cyad/_c_api.pxd) on every row of a block of
points, writing each row's results into rows of the stacked outputs, with the GIL
released for the whole block. `run_blocks` runs several blocks at once, each on a prep of
its own, on cyad's threads (cyad/_parallel/threads.pyx): they run in parallel where the preps'
engine runs without the GIL (a tape, a C function); a prep that calls a Python callable
takes the GIL for each evaluation, and the blocks take turns. Ctrl-C stops the blocks at
their next row.

Points with per-point arguments are rows of x and the arguments side by side (see
cyad/_parallel/points.py): the prep differentiates a `Bound` (cyad/_arguments/bound.pyx) of f in
x, and before each row the loop points the Bound's table of its arguments' memory at the
row's (`leaf_offsets`: their bytes' places in a row), which a tape copies in as inputs of
the call and the dual engine's evaluations read; the results are x's.

A block is one operation: a default tape compares f's Python state once, at the block's
start (`Engine.hold_state`, cyad/_tape/engine.pyx), not at every row with the GIL.
"""
cimport numpy as cnp

from cyad._c_api cimport (cyad_prep, prep_handle, raise_status, gradient_nogil,
                          jacobian_nogil, hessian_nogil, hvp_nogil)
from cyad._fused cimport real
from cyad._arguments.bound cimport Bound
from cyad._core cimport Prep
from cyad._parallel.threads cimport run_watched
from libc.stdlib cimport malloc, free

cnp.import_array()

# the operator families the loop runs (cyad/_parallel/points.py names them)
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


cdef int run_block(real* tag, cyad_prep* p, int family, char* z, Py_ssize_t z_step,
                   const void** leaf_data, const Py_ssize_t* leaf_offsets, Py_ssize_t n_leaves,
                   const char* v, Py_ssize_t v_step, char* value, Py_ssize_t value_step,
                   char* first, Py_ssize_t first_step, char* main, Py_ssize_t main_step,
                   Py_ssize_t count, Py_ssize_t* failed, const int* cancel) noexcept nogil:
    cdef Py_ssize_t i, j
    cdef int status = 0
    cdef char* row
    cdef real* val
    cdef real* fst
    cdef real* res
    for i in range(count):
        if cancel != NULL and cancel[0]:
            return 0       # (the watcher raises KeyboardInterrupt)
        row = z + i * z_step
        for j in range(n_leaves):       # the row's arguments, after its x
            leaf_data[j] = row + leaf_offsets[j]
        val = <real*>(value + i * value_step) if value != NULL else NULL
        fst = <real*>(first + i * first_step) if first != NULL else NULL
        res = <real*>(main + i * main_step)
        if family == GRADIENT:
            status = gradient_nogil(p, <const real*>row, <real*>NULL, val, res)
        elif family == JACOBIAN:
            status = jacobian_nogil(p, <const real*>row, <real*>NULL, val, res)
        elif family == HESSIAN:
            status = hessian_nogil(p, <const real*>row, <real*>NULL, val, fst, res)
        else:
            status = hvp_nogil(p, <const real*>row, <const real*>(v + i * v_step), <real*>NULL,
                               fst, res)
        if status:
            failed[0] = i
            return status
    return 0


cdef class _Leaves:
    """A Bound's table of argument memory, and the places of the arguments in a row."""

    cdef const void** data
    cdef Py_ssize_t* offsets
    cdef Py_ssize_t count

    def __cinit__(self, object bound, tuple offsets):
        cdef Py_ssize_t k
        self.count = 0 if bound is None else len(offsets)
        self.data = NULL if bound is None else (<Bound>bound).data
        self.offsets = <Py_ssize_t*>malloc(max(self.count, 1) * sizeof(Py_ssize_t))
        if self.offsets == NULL:
            raise MemoryError()
        for k in range(self.count):
            self.offsets[k] = offsets[k]

    def __dealloc__(self):
        free(self.offsets)


def run_rows(prep, bound, int family, cnp.ndarray z, object v, object value, object first,
             cnp.ndarray main, tuple leaf_offsets, Py_ssize_t start, Py_ssize_t stop):
    """Run the prep's entry point of `family` on rows start..stop of z (and of the tangents v
    for HVP), writing rows start..stop of value, first and main (value, first: None when not
    wanted). With per-point arguments, `bound` is the Bound the prep differentiates and
    `leaf_offsets` the byte offsets of its arguments in a row of z (after x); else None and
    (). Raises what the prep reports, with a note naming the point."""
    cdef cyad_prep* p = prep_handle(prep)
    cdef _Leaves leaves = _Leaves(bound, leaf_offsets)
    cdef Py_ssize_t failed = -1
    cdef int status = 0
    cdef char* zp = row_of(z, start)
    cdef const char* vp = row_of(v, start)
    cdef char* valp = row_of(value, start)
    cdef char* fp = row_of(first, start)
    cdef char* mp = row_of(main, start)
    cdef Py_ssize_t zs = z.strides[0], vs = 0 if v is None else (<cnp.ndarray>v).strides[0]
    cdef Py_ssize_t vals = 0 if value is None else (<cnp.ndarray>value).strides[0]
    cdef Py_ssize_t fss = 0 if first is None else (<cnp.ndarray>first).strides[0]
    cdef Py_ssize_t ms_ = main.strides[0]
    cdef bint single = z.dtype.num == cnp.NPY_FLOAT
    cdef bint held = (<Prep?>prep).engine_state.hold_state()
    try:
        with nogil:
            if single:
                status = run_block(<float*>NULL, p, family, zp, zs, leaves.data,
                                   leaves.offsets, leaves.count, vp, vs, valp, vals, fp, fss,
                                   mp, ms_, stop - start, &failed, NULL)
            else:
                status = run_block(<double*>NULL, p, family, zp, zs, leaves.data,
                                   leaves.offsets, leaves.count, vp, vs, valp, vals, fp, fss,
                                   mp, ms_, stop - start, &failed, NULL)
    finally:
        (<Prep>prep).engine_state.release_state(held)
    if status:
        try:
            raise_status(prep, status)
        except BaseException as e:
            e.add_note(f"cyad.at_points: at point {start + failed}")
            raise
    return None


# -- several blocks at once ---------------------------------------------------------------

ctypedef struct block_call:
    cyad_prep* p
    int family
    bint single
    char* z
    Py_ssize_t z_step
    const char* v
    Py_ssize_t v_step
    char* value
    Py_ssize_t value_step
    char* first
    Py_ssize_t first_step
    char* main
    Py_ssize_t main_step
    const void** leaf_data
    const Py_ssize_t* leaf_offsets
    Py_ssize_t n_leaves, count, failed
    const int* cancel
    int status


cdef void run_block_task(void* context, Py_ssize_t part) noexcept nogil:
    cdef block_call* c = (<block_call*>context) + part
    if c.single:
        c.status = run_block(<float*>NULL, c.p, c.family, c.z, c.z_step, c.leaf_data,
                             c.leaf_offsets, c.n_leaves, c.v, c.v_step, c.value, c.value_step,
                             c.first, c.first_step, c.main, c.main_step, c.count, &c.failed,
                             c.cancel)
    else:
        c.status = run_block(<double*>NULL, c.p, c.family, c.z, c.z_step, c.leaf_data,
                             c.leaf_offsets, c.n_leaves, c.v, c.v_step, c.value, c.value_step,
                             c.first, c.first_step, c.main, c.main_step, c.count, &c.failed,
                             c.cancel)


def run_blocks(list preps, list bounds, int family, cnp.ndarray z, object v, object value,
               object first, cnp.ndarray main, tuple leaf_offsets, list ranges):
    """`run_rows` of every block (start, stop) of `ranges` at once, block k on preps[k] (and
    its Bound bounds[k], or None), on cyad's threads. Raises what the first failing
    block's prep reports, with a note naming the point."""
    cdef Py_ssize_t k, blocks = len(ranges), start, stop
    cdef int cancel = 0
    cdef block_call* calls = <block_call*>malloc(blocks * sizeof(block_call))
    cdef list held = []
    cdef list leaves = [_Leaves(bound, leaf_offsets) for bound in bounds]
    if calls == NULL:
        raise MemoryError()
    try:
        for k in range(blocks):
            start, stop = ranges[k]
            calls[k].p = prep_handle(preps[k])
            calls[k].family = family
            calls[k].single = z.dtype.num == cnp.NPY_FLOAT
            calls[k].z = row_of(z, start)
            calls[k].z_step = z.strides[0]
            calls[k].v = row_of(v, start)
            calls[k].v_step = 0 if v is None else (<cnp.ndarray>v).strides[0]
            calls[k].value = row_of(value, start)
            calls[k].value_step = 0 if value is None else (<cnp.ndarray>value).strides[0]
            calls[k].first = row_of(first, start)
            calls[k].first_step = 0 if first is None else (<cnp.ndarray>first).strides[0]
            calls[k].main = row_of(main, start)
            calls[k].main_step = main.strides[0]
            calls[k].leaf_data = (<_Leaves>leaves[k]).data
            calls[k].leaf_offsets = (<_Leaves>leaves[k]).offsets
            calls[k].n_leaves = (<_Leaves>leaves[k]).count
            calls[k].count = stop - start
            calls[k].failed = -1
            calls[k].cancel = &cancel
            calls[k].status = 0
            held.append((<Prep?>preps[k]).engine_state.hold_state())
        run_watched(run_block_task, calls, blocks, <int>blocks, &cancel)
        for k in range(blocks):
            if calls[k].status:
                try:
                    raise_status(preps[k], calls[k].status)
                except BaseException as e:
                    e.add_note(f"cyad.at_points: at point {ranges[k][0] + calls[k].failed}")
                    raise
    finally:
        for k in range(len(held)):
            (<Prep>preps[k]).engine_state.release_state(held[k])
        free(calls)
    return None
