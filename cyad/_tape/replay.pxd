# The compiled replay of a tape (cyad/_tape/lowering.pyx and cyad/_tape/replay.pyx have the
# design): the code table's layout, the state a replay runs on without the GIL, and its
# entry point.

from libc.stdint cimport int64_t
from cpython.ref cimport PyObject

# An instruction's kind (the code in column KIND of its row): generated from its table
from cyad._tape.kinds cimport *

# The columns of a row of the code table. Offsets are in elements of the arena; an
# absent operand has offset and size 0. P0..P3 by kind:
#   gather, scatter_add   P0 the first of its indices in the index array, P1 their count
#                         m, P2 PROGRESSION when they are an arithmetic progression (of
#                         step P3), PADDED when they are one between runs of -1 (the
#                         index array then holds, after the m indices, the number of
#                         leading -1 and the progression's length), else 0; a gather
#                         ALIASED: its output is a stretch of its operand's slot (the
#                         slot of a slice such as x[1:]), nothing to do
#   python                P0 its callback's position in the callback list
#   unary, unary_d(2)     P0 1 + the position of NumPy's loop for its column in
#                         ufunc_loops, 0 for the rule's own loop; P1 1 when the
#                         column is 1 / (u * u) of the loop's u (RECIPROCAL_SQUARED);
#                         P2 1 + the shift of a sin or cos column (SINE_SHIFTS) run by
#                         cyad/_tape/vector_sine.h, 0 for the other columns; P3 1 when
#                         the next instruction is such a column of the same operand,
#                         computed in the same pass where both run
#   guard                 (A its operand, B the expected values, both of A_SIZE)
#   any other kind        the params its rules' `lower` gives, in order (sum_inner,
#                         matmul: cyad/_tape/instructions.py says which); a sum_inner
#                         in a blocked run: P1 its blocks' first sum in `partials`, P2
#                         their count
# LOCAL: bits (LOCAL_OUT, LOCAL_A, LOCAL_B, LOCAL_C) of the Vars an instruction of a blocked
# run writes and reads in its run's scratch, a block of them at a time: their offsets are
# within a part's scratch, not the arena's slots (such an instruction runs in its run only)
# (anonymous: plain int constants, to index a row with)
cdef enum:
    KIND
    OP               # the rule (unary, binary kinds) or the comparison (compare)
    OUT
    OUT_SIZE
    A
    A_SIZE
    B
    B_SIZE
    C
    C_SIZE
    P0
    P1
    P2
    P3
    LOCAL
    CODE_WIDTH

# the bits of column LOCAL
cdef enum:
    LOCAL_OUT = 1
    LOCAL_A = 2
    LOCAL_B = 4
    LOCAL_C = 8

# the columns of a row of the blocked runs' table (tape_replay.runs)
cdef enum:
    RUN_COLUMNS = 4

# How a gather's or scatter's indices run (column P2)
cdef enum IndexRun:
    SCATTERED = 0
    PROGRESSION = 1
    PADDED = 2
    ALIASED = 3

# The comparisons of kind compare: the code in column OP
cdef enum Comparison:
    LESS
    LESS_EQUAL
    GREATER
    GREATER_EQUAL
    EQUAL
    NOT_EQUAL
    LOGICAL_AND
    LOGICAL_OR
    LOGICAL_XOR
    LOGICAL_NOT
    ISNAN
    ISINF
    ISFINITE
    SIGNBIT


# A NumPy ufunc's inner loop for one dtype (private NumPy API: ufunc._get_strided_loop),
# callable without the GIL: loop(context, [input, output], [n], [stride, stride], auxdata)
ctypedef int (*strided_loop)(void* context, char* const* data, const Py_ssize_t* dimensions,
                             const Py_ssize_t* strides, void* auxdata) noexcept nogil

cdef struct ufunc_loop:
    strided_loop loop
    void* context
    void* auxdata


# A lowered tape, for running without the GIL. Everything it points to belongs to its
# Replay, which keeps it alive and unchanged.
cdef struct tape_replay:
    const int64_t* code        # n_instr rows of CODE_WIDTH columns
    Py_ssize_t n_instr
    void* arena                # every Var's slot: double*, or float* when single
    Py_ssize_t arena_size      # in elements
    bint single                # float32
    const int64_t* indices     # the gather and scatter indices of all instructions
    PyObject* callbacks        # a list: the python instructions' callbacks, no arguments
    const ufunc_loop* ufunc_loops  # NumPy's loops of unary columns (P0 - 1 of a row)
    # n_instr rows (end, period, block, local): the blocked run of elementwise instructions
    # from each one on, end 0 for none, local 1 when it holds Vars in the scratch
    # (cyad/_tape/lowering.pyx, _blocked_runs)
    const int64_t* runs
    # the scratch of blocked runs: `scratch_parts` stretches of `scratch_size` elements from
    # `scratch` on in the arena, one per part of a run split across threads (a run holding
    # Vars there splits in at most that many parts)
    Py_ssize_t scratch
    Py_ssize_t scratch_size
    Py_ssize_t scratch_parts
    # the sums of the blocks of every sum in a blocked run, added in order once it ran
    # (its row: P1 where its blocks' start here, P2 how many)
    double* partials


# A replay's caller clears the floating-point status flags (cyad._fp_flags) before the
# value part of a tape and tests them after it; a python instruction leaves them as it
# found them (NumPy reported its own).
from cyad._fp_flags cimport clear_fp_flags, numpy_fp_flags, raised_fp_flags


# Runs instructions [start, stop): 0 when all ran; s > 0 when the guard at instruction
# s - 1 failed (the instructions before it ran, no later one did); -1 when a python
# instruction raised (its exception is set: the caller raises it once it holds the GIL).
cdef int replay_run(const tape_replay* replay, Py_ssize_t start, Py_ssize_t stop) noexcept nogil
