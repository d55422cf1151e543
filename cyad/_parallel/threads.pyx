"""cyad's threads: one pool of POSIX threads (cyad/_parallel/pool.h) for every parallel piece.

Two kinds of work share it, both without the GIL and both computing, part by part, what a
serial run computes, so that a result never depends on the number of threads:

- a tape's replay (cyad/_tape/replay.pyx) splits an elementwise run over many elements,
  and a long sum, into parts (`run_parallel`, the caller taking parts too), on
  `set_threads()` threads, and only above a size where a part outweighs waking a thread;
- ``workers=k`` on an operator's prep runs k chunks of directions at once, each on a prep
  of its own (`run_watched`: the caller waits, watching for Ctrl-C, which stops the parts
  at their next chunk).

The pool serves one job at a time: a job started while another runs, or from inside a
part, runs in its caller, serially.
"""
import os

from libc.string cimport memcmp, memcpy

cdef extern from "Python.h":
    # (not cpython.exc's, which raises at once: a watcher first stops its job's parts)
    int PyErr_CheckSignals()

cdef extern from "pool.h" nogil:
    ctypedef void (*cyad_task)(void* context, Py_ssize_t part) noexcept nogil
    ctypedef struct cyad_job:
        cyad_task task
        void* context
        Py_ssize_t parts
    int cyad_pool_start(cyad_job* job, int helpers)
    int cyad_pool_wait(cyad_job* job, long milliseconds)
    void cyad_pool_run(cyad_job* job, int helpers)
    int cyad_pool_thread       # (thread-local) 1 in the pool's threads

# how often a caller waiting for a watched job looks for signals
cdef long WATCH_MS = 20


def _available_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:     # (not on every platform)
        return os.cpu_count() or 1


cdef int _replay_threads = _available_cpus()


cdef int replay_threads() noexcept nogil:
    return _replay_threads


cdef bint in_pool_thread() noexcept nogil:
    return cyad_pool_thread


def set_threads(threads=None):
    """Set the threads a tape's replay splits large elementwise work and sums across.

    Parameters
    ----------
    threads : int, optional
        A positive count; None: every CPU this process may run on (the default).

    Returns
    -------
    int
        The former count.

    Raises
    ------
    ValueError
        If threads is not a positive integer.

    Notes
    -----
    Only runs of elementwise instructions over at least 65 536 elements (PARALLEL_FROM),
    and sums of at least that many numbers, are split; every part is what a serial run
    computes (a long sum is one of fixed pieces, added in order, on any number of
    threads), so that the results do not depend on the count. A replay running on one of
    cyad's threads (a part of ``workers=``), or while another replay holds them, runs
    serially.

    Examples
    --------
    >>> former = cyad.set_threads(1)
    >>> cyad.get_threads()
    1
    >>> _ = cyad.set_threads(former)
    """
    global _replay_threads
    if threads is None:
        threads = _available_cpus()
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"cyad: set_threads takes a positive int or None, not {threads!r}")
    former = _replay_threads
    _replay_threads = threads
    return former


def get_threads():
    """The threads a tape's replay splits large work across (see `set_threads`).

    Returns
    -------
    int
        The count.

    Examples
    --------
    >>> cyad.get_threads() >= 1
    True
    """
    return _replay_threads


cdef void run_parallel(parallel_task task, void* context, Py_ssize_t parts,
                       int threads) noexcept nogil:
    cdef cyad_job job
    job.task = task
    job.context = context
    job.parts = parts
    cyad_pool_run(&job, threads - 1 if threads - 1 < parts - 1 else <int>(parts - 1))


cdef int run_watched(parallel_task task, void* context, Py_ssize_t parts, int threads,
                     int* cancel) except -1:
    cdef cyad_job job
    cdef bint started
    job.task = task
    job.context = context
    job.parts = parts
    with nogil:
        started = cyad_pool_start(&job, threads if threads < parts else <int>parts)
        if not started:
            cyad_pool_run(&job, 0)
            return 0
    while True:
        with nogil:
            if cyad_pool_wait(&job, WATCH_MS):
                return 0
        if PyErr_CheckSignals() < 0:
            cancel[0] = 1
            with nogil:
                cyad_pool_wait(&job, -1)
            return -1


# -- copies and comparisons of large buffers ---------------------------------------------

# bytes below which a copy or a comparison stays on the caller's thread, and the pieces
# one is split into (each a multiple of 64 bytes, a cache line)
cdef Py_ssize_t SPLIT_BYTES = 1 << 19

ctypedef struct bytes_job:
    char* dst
    const char* a
    const char* b
    Py_ssize_t nbytes, piece
    int differ


cdef void copy_task(void* context, Py_ssize_t part) noexcept nogil:
    cdef bytes_job* job = <bytes_job*>context
    cdef Py_ssize_t start = part * job.piece
    cdef Py_ssize_t count = job.nbytes - start if job.nbytes - start < job.piece else job.piece
    memcpy(job.dst + start, job.a + start, count)


cdef void compare_task(void* context, Py_ssize_t part) noexcept nogil:
    cdef bytes_job* job = <bytes_job*>context
    cdef Py_ssize_t start = part * job.piece
    cdef Py_ssize_t count = job.nbytes - start if job.nbytes - start < job.piece else job.piece
    if memcmp(job.a + start, job.b + start, count) != 0:
        job.differ = 1     # (any part's 1: a benign race on one int)


cdef Py_ssize_t split_bytes(bytes_job* job, Py_ssize_t nbytes, int threads) noexcept nogil:
    # the parts of a job over nbytes: one per thread, in whole cache lines
    job.nbytes = nbytes
    job.piece = ((nbytes + threads - 1) // threads + 63) // 64 * 64
    return (nbytes + job.piece - 1) // job.piece


cdef void copy_bytes(void* dst, const void* src, Py_ssize_t nbytes, int threads) noexcept nogil:
    cdef bytes_job job
    cdef Py_ssize_t parts
    if threads < 2 or nbytes < SPLIT_BYTES:
        memcpy(dst, src, nbytes)
        return
    job.dst = <char*>dst
    job.a = <const char*>src
    parts = split_bytes(&job, nbytes, threads)
    run_parallel(copy_task, &job, parts, threads)


cdef bint same_bytes(const void* a, const void* b, Py_ssize_t nbytes, int threads) noexcept nogil:
    cdef bytes_job job
    cdef Py_ssize_t parts
    if threads < 2 or nbytes < SPLIT_BYTES:
        return memcmp(a, b, nbytes) == 0
    job.a = <const char*>a
    job.b = <const char*>b
    job.differ = 0
    parts = split_bytes(&job, nbytes, threads)
    run_parallel(compare_task, &job, parts, threads)
    return not job.differ
