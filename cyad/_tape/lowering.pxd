# A tape lowered for the compiled replay (cyad/_tape/lowering.pyx): the state its runs read.

from cyad._tape.replay cimport tape_replay


cdef class Replay:
    cdef tape_replay state
    cdef readonly object tape
    cdef readonly object arena         # ndarray of the tape's dtype
    cdef object _code                  # ndarray, n_instr x CODE_WIDTH int64
    cdef object _indices               # ndarray of int64
    cdef list _callbacks
    cdef list _views                   # Var number -> its slot, shaped
    cdef object _offsets               # ndarray: Var number -> offset in the arena
    cdef object _ufunc_loops           # ndarray of bytes: the ufunc_loop structs
    cdef list _ufunc_capsules          # NumPy's call infos, owning the loops' contexts
    cdef object _runs                  # ndarray, n_instr x RUN_COLUMNS int64 (state.runs)
    cdef object _partials              # ndarray of float64: blocks' sums (state.partials)
    cdef frozenset _local              # the numbers of the Vars in a run's scratch
