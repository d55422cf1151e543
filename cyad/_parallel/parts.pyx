"""An operator's call in parts at once (workers=k): part j on the prep of part j (0: the
prep called, cyad/_core.pyx), each the chunks part_chunks gives it (cyad/_core.pxd), on the
pool of cyad/_parallel/threads.pyx.
"""
import numpy as np

cimport numpy as cnp
from libc.string cimport memcpy

from cyad._core cimport Prep
from cyad._parallel.threads cimport run_watched

cnp.import_array()


cdef void run_part(void* context, Py_ssize_t part) noexcept nogil:
    cdef part_call* c = (<part_call*>context) + part
    c.status = c.h.run(c.h, c.x, c.tangents, c.y, c.value, c.first, c.results)


cdef int run_parts(Prep prep, object x_array, const void* x, const void* const* tangents,
                   void* y, void* value, void* first) except? -1:
    """The call in parts at once, each on its prep (part 0 on `prep`): the status
    of the first part that failed, or 0 (the others' errors dropped). The caller
    waits without the GIL; Ctrl-C stops every part at its next chunk and raises
    KeyboardInterrupt. Allocates nothing once the parts have learnt f's output."""
    cdef Py_ssize_t k, failed = -1, begun = 0, parts = len(prep.part_preps) + 1
    cdef part_call* calls = <part_call*>prep.part_calls
    cdef Prep part
    cdef int cancel = 0
    try:
        for k in range(1, parts):
            part = <Prep>prep.part_preps[k - 1]
            part.bind(prep.engine_state.bound)
            part.begin()
            begun += 1
            if part.out_shape is None:
                part.engine_state.discover(part, x_array)
        if y != NULL and prep.part_ys is None:
            prep.part_ys = [np.empty(prep.out_shape, prep.dtype) for _ in range(1, parts)]
        for k in range(parts):
            part = prep if k == 0 else <Prep>prep.part_preps[k - 1]
            calls[k].h = part.handle
            calls[k].x = x
            calls[k].tangents = tangents
            calls[k].results = prep.outs
            # f's value, y's final values and a first-order result from part 0; the
            # others read y's incoming values from copies
            calls[k].y = y if k == 0 or y == NULL else \
                cnp.PyArray_DATA(<cnp.ndarray>prep.part_ys[k - 1])
            calls[k].value = value if k == 0 else NULL
            calls[k].first = first if k == 0 else NULL
            calls[k].status = 0
            if k > 0 and y != NULL:
                memcpy(calls[k].y, y, prep.handle.y_bytes)
            part.handle.part = <int>k
            part.handle.parts = <int>parts
            part.handle.cancel = &cancel
        run_watched(run_part, calls, parts, <int>parts, &cancel)
        for k in range(parts):
            if calls[k].status != 0:
                if failed < 0:
                    failed = k
                elif k > 0:    # an error not reported: dropped
                    (<Prep>prep.part_preps[k - 1]).engine_state.python_error()
        if failed > 0:   # its error is that part's prep's
            (<Prep>prep.part_preps[failed - 1]).raise_for(calls[failed].status)
        return calls[0].status
    finally:
        prep.handle.parts = 1
        prep.handle.cancel = NULL
        for k in range(begun):
            part = <Prep>prep.part_preps[k]
            part.handle.parts = 1
            part.handle.cancel = NULL
            part.engine_state.quiet()
            part.end()
