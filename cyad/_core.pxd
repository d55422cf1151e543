cimport numpy as cnp

from cyad._c_api cimport cyad_prep, cyad_entry_points, PREP_BUSY

# The operator families; a prep serves every operator of its family (pushforward and
# value_and_pushforward share one, and so on). Each has its Prep subclass. Append-only:
# compiled code outside cyad holds the values.
cpdef enum Family:
    PUSHFORWARD
    DERIVATIVE
    GRADIENT
    JACOBIAN
    SECOND_DERIVATIVE
    HVP
    HESSIAN
    PULLBACK

# The nogil entry points a prep answers (Prep.nogil_entries), in its dtype: the slots of
# its handle's table that hold its engine's functions (install_entry_points)
cdef enum:
    ENTRY_PUSHFORWARD = 1      # pushforward_nogil and value_and_pushforward_nogil
    ENTRY_GRADIENT = 2
    ENTRY_JACOBIAN = 4
    ENTRY_HVP = 8
    ENTRY_HESSIAN = 16
    ENTRY_PULLBACK = 32        # pullback_nogil and value_and_pullback_nogil

# What a call returns besides its main result (bits of Prep.call's `wanted`)
cdef enum:
    WITH_VALUE = 1             # f's value
    WITH_FIRST = 2             # the first-order result of a second-order operator

cdef struct prep_header

# An engine's whole call on raw buffers of the prep's dtype: x; the tangents, or a
# pullback's cotangents (NULL for none); y of the two-argument form (else NULL); f's
# value and the first-order result (NULL: not wanted); the results (one per tangent or
# cotangent of a batch). Returns a status.
ctypedef int (*run_call)(prep_header* h, const void* x, const void* const* tangents,
                         void* y, void* value, void* first, void** results) noexcept nogil

# The engine-neutral state of a prep, usable without the GIL: the first member of every
# engine's own struct, so that a handle is also a pointer to the engine's state. It
# starts with the public head of a handle (cyad_prep, cyad/_c_api.pxd: the table of nogil
# entry points), so that the handle a downstream module holds points to it.
cdef struct prep_header:
    cyad_prep head             # first: the nogil entry points (install_entry_points)
    int busy                   # 1 while a call runs on the prep: claimed atomically
    bint float32
    Py_ssize_t n_x, n_y
    Py_ssize_t x_bytes         # bytes of x
    Py_ssize_t y_bytes         # bytes of y, and of f's value
    Py_ssize_t tangent_bytes   # bytes of a tangent (x_bytes) or a cotangent (y_bytes)
    Py_ssize_t results         # results per call: one per tangent of a batch, else 1
    Py_ssize_t result_bytes    # bytes of one result
    Py_ssize_t first_bytes     # bytes of the first-order result (second order), else 0
    run_call run               # the engine's call for the prep's family and dtype
    void* spans                # per call: the output buffers by address (span records)
    Py_ssize_t overlapping[2]  # after OVERLAPPING_OUTPUTS: the two spans that meet
    void* scratch              # copies of inputs that overlap an output, made when needed
    Py_ssize_t scratch_bytes
    # workers= (see part_chunks): the part of a call this run computes, of `parts` (0 of
    # 1: all of it), and where a watcher asks it to stop at its next chunk (NULL: never)
    int part, parts
    const int* cancel


# -- a call in parts (workers=) ----------------------------------------------------------
#
# A prep made with workers=k runs a call as k parts at once, each on a prep of its own
# (the prep's own for part 0), each the chunks of directions that part_chunks gives it,
# in the order and the chunking of a serial run, so that every result is computed as a
# serial run computes it. Part 0 always has a chunk: it writes f's value and y.

# the status of a part stopped by its watcher (cyad/_parallel/threads.pyx, run_watched)
cdef enum:
    CANCELLED = -100


cdef inline bint cancelled(const prep_header* h) noexcept nogil:
    return h.cancel != NULL and h.cancel[0] != 0


cdef inline void part_chunks(const prep_header* h, Py_ssize_t chunks, bint triangular,
                             Py_ssize_t* first, Py_ssize_t* last) noexcept nogil:
    """The chunks [first, last) of a run's `chunks` that this run computes: all of them, or
    a part's contiguous share. `triangular`: chunk c costs chunks - c (a symmetric
    Hessian's rows), and the shares are of equal cost."""
    cdef Py_ssize_t parts = h.parts if h.parts < chunks else chunks, c, total, done
    if h.parts <= 1:
        first[0], last[0] = 0, chunks
        return
    if h.part >= parts:
        first[0], last[0] = 0, 0
        return
    if not triangular:
        first[0] = chunks * h.part // parts
        last[0] = chunks * (h.part + 1) // parts
        return
    # the first chunk at which the cost done reaches part / parts of the total, and the
    # next part's
    total = chunks * (chunks + 1) // 2
    first[0], last[0] = chunks, chunks
    done = 0
    for c in range(chunks):
        if first[0] == chunks and done * parts >= total * h.part:
            first[0] = c
        if done * parts >= total * (h.part + 1):
            last[0] = c
            break
        done += chunks - c


# -- one call at a time ---------------------------------------------------------------
#
# A prep's buffers serve one call at a time. A call claims the prep by an atomic exchange
# of its busy flag and frees it by an atomic store, so that a second call - from another
# thread, or from inside the f that a call is evaluating - finds it claimed and is refused
# instead of overwriting the buffers the first one is using.
cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static CYTHON_INLINE int cyad_claim(int *busy) {
        return _InterlockedExchange((volatile long *)busy, 1) == 0;
    }
    static CYTHON_INLINE void cyad_release(int *busy) {
        _InterlockedExchange((volatile long *)busy, 0);
    }
    static CYTHON_INLINE int cyad_claimed(int *busy) { return *(volatile int *)busy != 0; }
    #else
    static CYTHON_INLINE int cyad_claim(int *busy) {
        return __atomic_exchange_n(busy, 1, __ATOMIC_ACQUIRE) == 0;
    }
    static CYTHON_INLINE void cyad_release(int *busy) {
        __atomic_store_n(busy, 0, __ATOMIC_RELEASE);
    }
    static CYTHON_INLINE int cyad_claimed(int *busy) {
        return __atomic_load_n(busy, __ATOMIC_RELAXED) != 0;
    }
    #endif
    """
    bint claim "cyad_claim" (int* busy) nogil        # 1 if it was free and is now the caller's
    void release "cyad_release" (int* busy) nogil
    bint claimed "cyad_claimed" (int* busy) nogil


# Raise the RuntimeError of a busy prep if `prep` is a Prep that a call is running on.
cdef int refuse_busy(object prep) except -1


cdef class Prep


# What an engine provides to a prep (cyad/_engines.py names them): the buffers and
# function binding behind the prep's handle, and its whole call on raw pointers.
cdef class Engine:
    cdef prep_header* handle           # the first member of the engine's own struct
    # the engine's nogil entry points, every slot filled: the prep installs in its handle
    # those it answers (install_entry_points)
    cdef const cyad_entry_points* entry_points
    cdef object bound                  # the f of the last call
    # chosen by default (no engine= named): it may hand a call it cannot serve to the
    # dual engine
    cdef bint chosen

    cdef setup(self, Prep prep, Py_ssize_t directions, object chunk, object f)
    cdef bind(self, object f)
    cdef discover(self, Prep prep, object x)
    cdef set_output(self, Prep prep, tuple shape)
    cdef finish(self)
    cdef object python_error(self)
    cdef object declared_out_shape(self)
    cdef bint splits(self, Prep prep)
    cdef quiet(self)
    cdef object handed_over_because(self)
    cdef str work(self)
    cdef Engine answering(self)
    cdef bint hold_state(self) except -1
    cdef void release_state(self, bint held) noexcept


cdef class Prep:
    cdef prep_header* handle           # the engine's state (engine.handle)
    cdef readonly Engine engine_state
    cdef readonly str engine_made      # the engine it was made on (`engine` says who answers)
    cdef readonly str engine_reason    # why that engine: named, or the default's reason
    cdef readonly Family family
    cdef readonly bint two_argument
    cdef readonly object dtype
    cdef readonly tuple x_shape
    cdef readonly object out_shape
    cdef readonly int order            # 1 or 2
    cdef bint with_tangents            # takes_tangents(), asked once
    cdef bint with_cotangents          # takes_cotangents(), asked once
    cdef bint without_gil              # a call runs its engine without the GIL (a C function)
    cdef int typenum
    cdef int x_ndim, out_ndim, result_ndim, first_ndim
    cdef cnp.npy_intp x_dims[64]
    cdef cnp.npy_intp out_dims[64]
    cdef tuple result_shape            # one result's (the Jacobian's, the Hessian's, ...)
    cdef cnp.npy_intp result_dims[64]
    cdef tuple first_shape             # the first-order result's of a second-order family
    cdef cnp.npy_intp first_dims[64]
    cdef cnp.ndarray scalar_x          # a Python-number x, as an array
    cdef cnp.ndarray scalar_t          # a Python-number tangent, as an array
    cdef void** tangents               # per call: the tangents' data
    cdef void** outs                   # per call: the results' data
    cdef readonly int workers          # workers=k: the parts a call runs in at once, or 1
    cdef readonly object workers_map   # workers=map: a map-like running parts as tasks
    cdef readonly object map_options   # and the chunk and engine given with it
    # once f's values proved complex: the complex prep answering its calls
    # (cyad/_complex/operators.py)
    cdef object complex_prep
    cdef list part_preps               # the preps of parts 1 ... k - 1 (workers=k), or None
    cdef list part_ys                  # their copies of y's incoming values (f(y, x))
    cdef void* part_calls              # a part_call per part (cyad/_parallel/parts.pxd)

    # the family's answers
    cdef bint takes_tangents(self)
    cdef bint takes_cotangents(self)
    cdef bint symmetric(self)
    cdef tuple shape_of_result(self, tuple out_shape)
    cdef tuple shape_of_first(self, tuple out_shape)
    cdef unsigned nogil_entries(self)
    cdef str result_name(self)
    cdef str first_name(self)
    cdef str out_name(self)
    cdef str batch_name(self)
    cdef str batch_item_name(self)
    cdef check_output_shape(self, tuple shape)

    cdef check_form(self, Family family, object y)
    cdef object call(self, object f, object x, object v, object y, object out, int wanted)
    cdef object results(self, object out, bint batch, Py_ssize_t count)
    cdef tuple batch_results(self, object out, Py_ssize_t count)
    cdef bind(self, object f)
    cdef object input(self, object x)
    cdef object tangent(self, object t)
    cdef list point_to_tangents(self, tuple batch)
    cdef object batch_tangent(self, object t)
    cdef object cotangent(self, object t, bint single)
    cdef object point_to_seeds(self, object v, bint batch)
    cdef check_array(self, str name, object a)
    cdef check_y(self, object y)
    cdef check_out(self, object out, tuple shape, int ndim, cnp.npy_intp* dims, str what)
    cdef set_output(self, tuple shape)
    cdef raise_for(self, int status)
    cdef begin(self)
    cdef end(self)
    cdef tuple split(self, object out, int count)
    cdef object value_buffer(self, object value_out, object y, bint with_value)
