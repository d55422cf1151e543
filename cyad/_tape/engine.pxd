from cpython.ref cimport PyObject

from cyad._core cimport prep_header, Engine, Prep
from cyad._tape.replay cimport tape_replay
from cyad._tape.lowering cimport Replay
from cyad._arguments.bound cimport Bound

# An array a tape captured as a constant, and a copy of it as it was then
ctypedef struct captured_array:
    const void* data           # the array's memory (C-contiguous)
    const void* copy
    Py_ssize_t nbytes


# The tape engine's state of a prep, usable without the GIL. Places are offsets in
# elements of the replay's arena; -1: absent.
ctypedef struct tape_prep:
    prep_header base           # first: a handle is a pointer to this struct
    PyObject* engine           # the TapeEngine (borrowed: it owns this struct)
    const tape_replay* program  # its replay's state; NULL until f is recorded
    Py_ssize_t split           # instructions [0, split) need no seed: once per call
    Py_ssize_t seeded_split    # [split, seeded_split) need the seeds alone
    bint runs_whole            # every call replays the whole program in one run (its
    # blocked runs may cross the split): a gradient, or one chunk of seeds of a forward
    # family with no instruction reading the seeds alone
    bint seeds_held            # the tangent input holds the last call's tangents (one
    # chunk of them) and [split, seeded_split) ran on them: a call with the same skips both
    void* cache                # their results per chunk (basis seeds), or NULL
    Py_ssize_t* cache_spans    # (offset, size) of each cached Var in the arena
    Py_ssize_t n_cache_spans
    Py_ssize_t cache_size      # numbers per chunk
    Py_ssize_t basis_start     # the basis directions in the tangent inputs (-1: none yet)
    Py_ssize_t basis_count
    int family
    Py_ssize_t item            # bytes per number
    Py_ssize_t directions      # tangents, or basis directions
    Py_ssize_t lanes           # directions per replay of the derivative part
    Py_ssize_t seed_size       # numbers per lane of the seeds (n_x; n_y for cotangents)
    bint reverse               # a Jacobian by rows: a cotangent per output
    Py_ssize_t x_at, y_at      # x; y's incoming values (f(y, x))
    Py_ssize_t n_leaves        # the arrays of f's other arguments (a Bound's), inputs too:
    Py_ssize_t* leaf_at        # their places,
    const void** leaf_from     # their memory in this call (the Bound's own table)
    Py_ssize_t* leaf_bytes     # and their sizes
    Py_ssize_t t_at, t2_at     # the tangent (cotangent) input(s) of lanes x seed_size
    Py_ssize_t value_at        # f's value
    Py_ssize_t first_at, first_size    # a second-order family's first-order result
    Py_ssize_t result_at, result_size  # the results (lanes of them, or the gradient)
    captured_array* captured   # what the tape took from f's arrays, checked every call
    Py_ssize_t n_captured
    bint strided_captured      # also captured arrays not C-contiguous (checked with the GIL)
    bint check_state           # compare f's Python state before every call (a default tape)
    prep_header* delegate      # the dual engine's prep that answers instead, or NULL
    prep_header* forward       # the dual engine's prep that answers a call whose reverse
    # sweep gave a number that is not finite (made at the first), or NULL
    bint not_finite            # the last run's reverse results hold such a number
    Py_ssize_t forward_calls   # the calls `forward` answered
    int value_flags            # the floating-point flags the last run's value part raised
    int casts_warn             # nonzero when f's tape holds numbers that overflowed a cast
    # (NumPy warns of them on every call)


# the status of a call that found a captured array changed (above any guard's)
cdef enum:
    CAPTURED_CHANGED = 1 << 30


# The exception a replay left set (a python instruction raised), cleared; None if none.
cdef object take_raised()
# the copies of the arrays a tape captured: (array, copy) pairs, the contiguous ones in a
# malloc'd table for memcmp without the GIL; and the check of the others
cdef list capture(list arrays, captured_array** table, Py_ssize_t* count, bint* strided)
cdef bint captured_strided_changed(list pairs)


cdef class TapeEngine(Engine):
    cdef tape_prep state
    cdef Replay replay
    cdef object dtype
    cdef tuple x_shape
    cdef object out_shape
    cdef bint two_argument
    cdef int recorded                  # records of f so far (the first, failed guards')
    cdef readonly int traces           # times f was traced (state changes too)
    cdef object error                  # the exception f raised while recorded
    cdef list captured                 # (array, its copy when captured) pairs
    cdef object cache                  # the seeds' results per chunk (state.cache)
    cdef readonly object python_state  # what f reads of Python state (a default tape)
    cdef int state_streak              # calls in a row that found it changed
    cdef bint state_recorded           # the last comparison found it changed
    cdef str state_changed_at          # where it found it changed last
    cdef set warned                    # what this prep has warned of (once each)
    cdef Prep delegate                 # the dual engine's prep answering instead, or None
    cdef readonly str handed_over      # why it answers instead (what the tape could not do)
    cdef Prep forward                  # the dual engine's prep answering calls whose
    # reverse sweep gave a number that is not finite (state.forward), or None
    cdef bint chunk_given              # the prep's chunk was given (not a default)
    cdef object primal                 # f's tape as recorded (NumPy warns from it)
    cdef Bound arguments               # f's other arguments (f a Bound), or None
    cdef Py_ssize_t checks             # calls whose values NumPy computed again

    cdef _check_python(self, object f)
    cdef record_at(self, const void* x, void* y, int failed)
    cdef _record_at(self, const void* x, void* y, int failed)
    cdef _hand_to_dual(self, const void* x)
    cdef Prep _dual_prep(self)
    cdef _capture(self, list arrays)
    cdef bint strided_changed(self)
    cdef _derive(self, tape, list values, list names)
    cdef _place_leaves(self, list inputs)
    cdef _cache_seeded(self, derived, list values)
    cdef bint _by_rows(self, tape)
    cdef _reverse_lanes(self)
    cdef object _slot(self, Py_ssize_t offset, tuple shape)
