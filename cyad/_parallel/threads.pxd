# cyad's threads (cyad/_parallel/threads.pyx): the one pool every module runs its parallel work on.

# A part of a job: task(context, part) for part in range(parts), in any order, on any
# thread, without the GIL.
ctypedef void (*parallel_task)(void* context, Py_ssize_t part) noexcept nogil

# The threads a tape's replay splits large elementwise work and sums across
# (cyad.set_threads), read without the GIL.
cdef int replay_threads() noexcept nogil

# Whether the calling thread is one of the pool's (it runs a part of some job).
cdef bint in_pool_thread() noexcept nogil

# Every part of a job on the caller and up to threads - 1 of the pool's threads; returns
# when all have run (on the caller alone where the pool runs another job, or the caller
# is one of the pool's threads).
cdef void run_parallel(parallel_task task, void* context, Py_ssize_t parts,
                       int threads) noexcept nogil

# Every part of a job on up to `threads` of the pool's threads while the caller, holding
# the GIL, waits for them and watches for signals: on one (Ctrl-C), `cancel[0]` is set,
# which the parts read to stop early, and once they have all returned, -1 with the
# signal's exception set. Where the pool runs another job the caller runs the parts.
cdef int run_watched(parallel_task task, void* context, Py_ssize_t parts, int threads,
                     int* cancel) except -1

# memcpy(dst, src, nbytes) and memcmp(a, b, nbytes) == 0, split across `threads` threads
# where nbytes is large (a replay's inputs and results at large sizes)
cdef void copy_bytes(void* dst, const void* src, Py_ssize_t nbytes, int threads) noexcept nogil
cdef bint same_bytes(const void* a, const void* b, Py_ssize_t nbytes, int threads) noexcept nogil
