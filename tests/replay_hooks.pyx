# Built against the installed cyad by tests/test_tape_replay.py: a replay run from C,
# as the tape engine runs it (cimporting the struct and the entry point, without the GIL).
from cyad._tape.replay cimport replay_run, tape_replay
from cyad._tape.lowering cimport Replay


cdef int raise_if_set(int status) except -1:
    # status -1: the exception a python instruction raised is set
    return status


def run_without_gil(Replay replay, Py_ssize_t start, Py_ssize_t stop):
    """replay_run's status (raising what a python instruction raised)."""
    cdef const tape_replay* state = &replay.state
    cdef int status
    with nogil:
        status = replay_run(state, start, stop)
    return raise_if_set(status)


def arena_sum(Replay replay, var):
    """The sum of a Var's slot, read through the struct's arena and the Var's offset."""
    cdef Py_ssize_t offset = replay.offset(var), i
    cdef double total = 0.0
    for i in range(var.size):
        if replay.state.single:
            total += (<const float*>replay.state.arena)[offset + i]
        else:
            total += (<const double*>replay.state.arena)[offset + i]
    return total
