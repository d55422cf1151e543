from cyad._tape.engine cimport captured_array
from cyad._tape.replay cimport tape_replay

# The most derived programs (first-order widths, second-order (outer, inner) pairs) one
# record keeps, and the most arenas of one program (its concurrent calls).
cdef enum:
    MAX_PROGRAMS = 32
    MAX_ARENAS = 64


# One arena of a program: a Replay of its own, claimed by one call at a time.
ctypedef struct tape_arena:
    const tape_replay* replay
    int busy


# A derivative tape of the record for one layout of lanes: jvp of f for `width` lanes
# (order 1), or jvp of (jvp of f) for `outer` and `inner` directions (order 2). Places
# are offsets in elements of an arena (all of a program's arenas share them); -1: absent.
ctypedef struct tape_program:
    void* owner                # the TapeProgram (borrowed: it owns this struct)
    int order
    Py_ssize_t width, outer, inner
    Py_ssize_t x_at, y_at      # x; y's incoming values (f(y, x))
    Py_ssize_t a_at            # the tangent input of x: width (order 2: outer) x n_x
    Py_ssize_t b_at, c_at      # order 2: x's inner tangents (inner x n_x), a's (inner
    #                            x outer x n_x)
    Py_ssize_t value_at, da_at, db_at, dc_at   # f's value and the outputs' lanes alike
    Py_ssize_t* leaf_at        # the places of f's other arguments' arrays (inputs too)
    tape_arena arenas[MAX_ARENAS]
    Py_ssize_t n_arenas        # published by an atomic store once an arena is set up


# One record of f: what a call checks, and the programs derived from it so far.
ctypedef struct tape_record:
    tape_program* programs[MAX_PROGRAMS]
    Py_ssize_t n_programs      # published like n_arenas
    captured_array* captured   # the arrays the tape took as constants (C-contiguous)
    Py_ssize_t n_captured
    bint strided_captured      # also captured arrays not C-contiguous (checked with the GIL)


# The context of a recorded function's C functions.
ctypedef struct tape_function:
    void* owner                # the TapeFunction (borrowed: it owns this struct)
    tape_record* current       # the record calls run on (swapped by a new record)
    Py_ssize_t calls           # calls in flight
    Py_ssize_t n_x, n_y
    bint two_argument
    bint single                # float32
    Py_ssize_t n_leaves        # f's other arguments' arrays (a Bound's), copied in per call
    const void** leaf_from     # from the Bound's table of their memory
    Py_ssize_t* leaf_bytes


cdef class TapeProgram:
    cdef tape_program state
    cdef object derived                # the DerivativeTape
    cdef list replays                  # the Replay of each arena


cdef class TapeRecord:
    cdef tape_record state
    cdef readonly object tape          # f's tape (its output set)
    cdef readonly list values          # the inputs' values when recorded (x; y)
    cdef list captured                 # (array, its copy when recorded) pairs
    cdef list programs                 # the TapeProgram of each entry of state.programs

    cdef bint strided_changed(self)


cdef class TapeFunction:
    cdef tape_function state
    cdef readonly object f
    cdef readonly object bound         # f of x with its other arguments (a Bound), or None
    cdef object arguments              # their holder (cyad/_arguments/operators.py)
    cdef readonly object dtype
    cdef readonly tuple x_shape
    cdef readonly tuple out_shape
    cdef readonly bint two_argument
    cdef readonly int records          # records of f after failed guards, the first included
    cdef TapeRecord record
    cdef list retired                  # records replaced while calls may still run on them
    cdef object lock                   # serialises records, derivations and new arenas
    cdef dict errors                   # thread id -> the exception its last call raised

    cdef _record(self, object x, object y)
    cdef int record_again(self, tape_record* seen, tape_program* ran, const void* x,
                          const void* y, int failed) except -1
    cdef tape_program* program(self, int order, Py_ssize_t width, Py_ssize_t outer,
                               Py_ssize_t inner) except NULL
    cdef const tape_replay* new_arena(self, tape_program* program) except NULL
