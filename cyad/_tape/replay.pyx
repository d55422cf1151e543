"""The compiled replay of a tape: a lowered tape (cyad/_tape/lowering.pyx) run without
the GIL.

Everything a run needs is in the `tape_replay` struct (the .pxd): `replay_run` runs
instructions [start, stop) from it without the GIL, taking the GIL only for a python
instruction. Its status: 0 when every instruction ran; s > 0 when the guard at
instruction s - 1 failed (the instructions before it ran, no later one did); -1 when a
python instruction raised, with the exception set for the caller to raise once it
holds the GIL. `Replay.run` returns the status, or raises that exception. A run leaves the
floating-point flags its instructions raised (a python instruction, whose NumPy
ufuncs clear them and report their own, restores them as it found them): the caller
tests them (cyad/_tape/engine.pyx).

The loops:
- Elementwise kinds (those cyad/_tape/kind_table.py marks so): an operand smaller than the
  output is read at i % size. The output's first S elements (S the largest operand's
  size) are computed in blocks as long as the smallest operand above one element, where
  every operand is either contiguous or a single number; the rest of the output
  repeats them (a few doubling memcpy). Each block picks its loop by which operands are
  single numbers, so no loop branches on the broadcast per element; add, subtract,
  multiply, divide and scale have loops of their own that the C compiler vectorises.
  The unary columns of NUMPY_LOOPS (exp, log, tanh, ... and the derivatives that are
  such a function: exp's, sinh's) run NumPy's own loops (`ufunc._get_strided_loop`,
  resolved here for the tape's dtype), its SIMD paths several times faster than libm's
  scalar calls. The other sin and cos columns (SINE_SHIFTS: all of them in float64, where
  NumPy calls libm) run cyad/_tape/vector_sine.h's vectorised loops, within 1 ulp of libm;
  two such columns of one operand in a row (sin's value and derivative) share one pass.
- Blocked runs: consecutive elementwise instructions over one output size of at least
  BLOCKED_BY blocks, whose operands are that size, a period of it or single numbers,
  with the slices, fills, pads and whole sums among them (_blocked_runs), run block by
  block: a block of each instruction in turn, so that what one writes the next reads
  from cache; a Var that lives within its run is a block of the part's scratch
  (column LOCAL), never written to memory. The same loops, the same numbers, but for a
  sum in a run: the sums of its blocks (eight accumulators each) kept in `partials`,
  added in order once the run ended.
  The other rules run through cyad/_rules/rules.pxd (in double, rounded once to
  float32), in loops that a dispatch generated from the rule table
  (cyad/_tape/replay_rules.pxi.tp) calls with the op a constant: inlined, each loop is
  specialised to its rule, with no chain of comparisons per element, and (the module
  is built without errno and FP traps, cyad/meson.build) without the libm call of the
  column the kind does not read (cos in sin's value).
- gather, scatter_add: a slice's gather (ALIASED) does nothing; an index array that is
  an arithmetic progression (detected here), or one between runs of -1 (a block that
  concatenate, pad or stack places among zeros), is a strided copy (step 1: memcpy)
  and a memset of the zeros; otherwise one index per element.
- sum_inner: eight accumulators in double (a full sum, k = |a|, is one such loop; a sum
  of at least PARALLEL_FROM numbers, pieces of such loops added in order).
- Threads (cyad.set_threads, cyad/_parallel/threads.pyx): an elementwise instruction or blocked
  run of at least PARALLEL_FROM elements whose operands are the output's size or single
  numbers, a long sum's pieces and the rows of many sums are split across the threads,
  each part computed by the loops of a serial run: the numbers do not depend on the count.
- matmul: i-k-j loops (the innermost over a row of b and of the output: vectorised,
  with an AVX2 copy chosen at load where gcc builds one);
  an output of few columns in tiles of 4 by 4 held in accumulators while k runs
  innermost (1.7x the i-k-j loops at 8 columns); a matrix times a vector as one dot
  product per row (eight accumulators in double). Not BLAS: OpenBLAS's gemm (SciPy's
  cython_blas) mallocs once per call, and a run allocates nothing. (At -march=x86-64,
  SSE2, the i-k-j loops run near the multiply and add units' peak: hence the AVX2 copy.)
- No output overlaps an operand: an instruction's outputs take their slots before its
  operands give theirs up.

Readings of the tape's specification (cyad/_tape/program.py):
- guard: a equals `expected` where both are the same number or both NaN (a value that
  was NaN when recorded stays valid while it is NaN); `expected` broadcasts to a's shape.
- scatter_add: a negative index adds nothing (the transpose of gather's zeros).
- python: function(*args), with the args' arena slots as read-only arrays (a bool Var
  as a bool array); one output, or a tuple of them, each converted to its Var's dtype
  and shape as cyad._tape.program.evaluate does (an error names `where`); `entry` and `params`
  are not read.
- zeros reads no operand (any args are ignored).
"""
from libc.math cimport isnan, isinf, isfinite, signbit
from libc.stdint cimport int64_t
from libc.string cimport memcpy, memset
from cpython.ref cimport PyObject

from cyad._fused cimport real
from cyad._rules.rules cimport BinaryOp, unary_rule, unary_second, binary_rule, binary_second
# (read by the generated dispatch, cyad/_tape/replay_rules.pxi.tp)
from cyad._rules.rules cimport UnaryOp  # no-cython-lint
from cyad._parallel.threads cimport replay_threads, run_parallel, copy_bytes

cdef extern from "vector_sine.h":
    # out[i] = sin(x[i] + shift * pi/2), and where out2 is not NULL, out2[i] = sin(x[i] +
    # shift2 * pi/2) in the same pass; cyad_sine_baseline set: the baseline copy only
    void cyad_sine_double(Py_ssize_t n, const double* x, double* out, double* out2,
                          int shift, int shift2) noexcept nogil
    void cyad_sine_float(Py_ssize_t n, const float* x, float* out, float* out2, int shift,
                         int shift2) noexcept nogil
    int cyad_sine_baseline

cdef extern from "<fenv.h>" nogil:
    ctypedef struct fexcept_t:
        pass
    int fegetexceptflag(fexcept_t* flags, int excepts)
    int fesetexceptflag(const fexcept_t* flags, int excepts)

cdef extern from "Python.h":
    # raw C API (no reference counting by Cython): used with the GIL taken in nogil code
    PyObject* PyObject_CallNoArgs(PyObject* callable)
    PyObject* PyList_GET_ITEM(PyObject* list, Py_ssize_t i)
    void Py_DECREF(PyObject* o)


# -- the run ---------------------------------------------------------------------------

cdef int replay_run(const tape_replay* replay, Py_ssize_t start, Py_ssize_t stop) noexcept nogil:
    if stop > replay.n_instr:
        stop = replay.n_instr
    if start < 0:
        start = 0
    if replay.single:
        return run_instructions(replay, <float*>replay.arena, start, stop)
    return run_instructions(replay, <double*>replay.arena, start, stop)


cdef int run_instructions(const tape_replay* replay, real* arena, Py_ssize_t start,
                          Py_ssize_t stop) noexcept nogil:
    cdef Py_ssize_t s, end, n, done = start    # instructions before `done` ran already
    cdef const int64_t* row
    cdef int64_t kind
    cdef int threads = replay_threads()
    for s in range(start, stop):
        if s < done:
            continue
        row = replay.code + s * CODE_WIDTH
        n = row[OUT_SIZE]
        end = replay.runs[RUN_COLUMNS * s]
        if end > s + 1:
            if end > stop:
                end = stop
            if end > s + 1:
                if threads > 1 and replay.runs[RUN_COLUMNS * s + 1] == n \
                        and n >= _PARALLEL_FROM:
                    split_elementwise(replay, s, end, replay.runs[RUN_COLUMNS * s + 2],
                                      threads, replay.runs[RUN_COLUMNS * s + 3])
                else:
                    run_blocked(replay, arena, s, end, replay.runs[RUN_COLUMNS * s + 1],
                                replay.runs[RUN_COLUMNS * s + 2])
                if replay.runs[RUN_COLUMNS * s + 3]:
                    finish_sums(replay, arena, s, end)
                done = end
                continue
        kind = row[KIND]
        if threads > 1 and is_elementwise(kind) and n >= _PARALLEL_FROM and full_or_single(row):
            # (parts of 64 elements' multiples: each starts on a 64-byte boundary as the
            # slot does, so that a SIMD loop treats every element as in the whole run)
            split_elementwise(replay, s, s + 1, ((n + threads - 1) // threads + 63) // 64 * 64,
                              threads, False)
        elif is_unary_column(kind) and row[P0]:
            numpy_unary(row, arena, replay.ufunc_loops + row[P0] - 1)
        elif is_unary_column(kind) and row[P2]:
            if row[P3] and s + 1 < stop:   # the next instruction as well
                sine(row, row + CODE_WIDTH, arena)
                done = s + 2
            else:
                sine(row, NULL, arena)
        elif is_elementwise(kind):
            elementwise(row, arena)
        elif kind == GATHER:
            gather(row, arena, replay.indices + row[P0], threads)
        elif kind == SCATTER_ADD:
            scatter_add(row, arena, replay.indices + row[P0], threads)
        elif kind == SUM_INNER:
            sum_inner(row, arena, threads)
        elif kind == MATMUL:
            matmul(row, arena)
        elif kind == ZEROS:
            memset(arena + row[OUT], 0, row[OUT_SIZE] * sizeof(real))
        elif kind == PYTHON:
            if call_python(replay.callbacks, row[P0]) < 0:
                return -1
        elif kind == GUARD:
            if not guard_holds(arena + row[A], arena + row[B], row[A_SIZE]):
                return <int>(s + 1)
    return 0


# where a part of a blocked run is: elements [base + j, base + j + count) of the output,
# j < period, its block's number in the run (a sum's partial), the part's scratch
ctypedef struct run_part:
    Py_ssize_t base, j, count, period, number, scratch


cdef void run_blocked(const tape_replay* replay, real* arena, Py_ssize_t first,
                      Py_ssize_t end, Py_ssize_t period, Py_ssize_t block) noexcept nogil:
    # instructions [first, end) of a blocked run (_blocked_runs), `block` elements of each
    # in turn, blocks within each stretch of `period` elements of the output; the scratch
    # of part 0
    cdef Py_ssize_t n = replay.code[first * CODE_WIDTH + OUT_SIZE], s
    cdef run_part where
    where.base = 0
    where.period = period
    where.number = 0
    where.scratch = replay.scratch
    while where.base < n:
        where.j = 0
        while where.j < period:
            where.count = period - where.j if period - where.j < block else block
            s = first
            while s < end:
                s += elementwise_part(replay, replay.code + s * CODE_WIDTH, s + 1 < end, arena,
                                      &where)
            where.j += where.count
            where.number += 1
        where.base += period


cdef void finish_sums(const tape_replay* replay, real* arena, Py_ssize_t first,
                      Py_ssize_t end) noexcept nogil:
    # the sums of blocked run [first, end): its blocks' sums, added in order
    cdef const int64_t* row
    cdef Py_ssize_t s, b
    cdef double total
    for s in range(first, end):
        row = replay.code + s * CODE_WIDTH
        if row[KIND] == SUM_INNER:
            total = 0.0
            for b in range(row[P2]):
                total += replay.partials[row[P1] + b]
            arena[row[OUT]] = <real>total


# -- large work split across threads (cyad/_parallel/threads.pyx) ---------------------------
#
# An elementwise instruction, or a blocked run whose operands are all of the output's size
# or single numbers, of at least PARALLEL_FROM elements, is split into units of elements
# (a blocked run's blocks; an instruction's share of the threads), contiguous ranges of
# units running on the threads: each element is computed by the loop that computes it in
# a serial run. A run holding Vars in its scratch splits in at most the replay's
# scratch_parts parts, each on a scratch of its own. A sum of at least PARALLEL_FROM
# numbers is always one of SUM_PIECES pieces at most, each summed as a short sum is and
# the pieces added in order; the pieces, or the rows of several sums, run on the threads.
# Below PARALLEL_FROM, waking a thread (some microseconds) costs about what a part would
# save.
PARALLEL_FROM = 65536
cdef Py_ssize_t _PARALLEL_FROM = PARALLEL_FROM
cdef enum:
    SUM_PIECE = 32768      # a long sum's pieces hold at least this many numbers
    SUM_PIECES = 32        # and are at most this many


cdef bint full_or_single(const int64_t* row) noexcept nogil:
    # every operand of the output's size, a single number or absent
    cdef int column
    for column in range(A_SIZE, C_SIZE + 1, 2):
        if row[column] > 1 and row[column] != row[OUT_SIZE]:
            return False
    return True


ctypedef struct elementwise_split:
    const tape_replay* replay
    Py_ssize_t first, end      # the instructions
    Py_ssize_t n, block, units, parts
    bint local                 # a run holding Vars in its scratch


cdef void elementwise_units(const elementwise_split* job, real* arena,
                            Py_ssize_t part) noexcept nogil:
    # the part's units: elements [u * block, (u + 1) * block) of every instruction in turn
    cdef Py_ssize_t u = job.units * part // job.parts
    cdef Py_ssize_t last = job.units * (part + 1) // job.parts, s
    cdef run_part where
    where.base = 0
    where.period = job.n
    where.scratch = job.replay.scratch + part * job.replay.scratch_size
    while u < last:
        where.j = u * job.block
        where.count = job.n - where.j if job.n - where.j < job.block else job.block
        where.number = u
        s = job.first
        while s < job.end:
            s += elementwise_part(job.replay, job.replay.code + s * CODE_WIDTH, s + 1 < job.end,
                                  arena, &where)
        u += 1


cdef void elementwise_task(void* context, Py_ssize_t part) noexcept nogil:
    cdef const elementwise_split* job = <const elementwise_split*>context
    if job.replay.single:
        elementwise_units(job, <float*>job.replay.arena, part)
    else:
        elementwise_units(job, <double*>job.replay.arena, part)


cdef void split_elementwise(const tape_replay* replay, Py_ssize_t first, Py_ssize_t end,
                            Py_ssize_t block, int threads, bint local) noexcept nogil:
    cdef elementwise_split job
    job.replay = replay
    job.first = first
    job.end = end
    job.n = replay.code[first * CODE_WIDTH + OUT_SIZE]
    job.block = block
    job.units = (job.n + block - 1) // block
    job.parts = threads if threads < job.units else job.units
    if local and job.parts > replay.scratch_parts:
        job.parts = replay.scratch_parts
    run_parallel(elementwise_task, &job, job.parts, threads)


cdef inline void part_of(const int64_t* row, int64_t* part,
                         const run_part* where) noexcept nogil:
    # part: row, for the output's elements [base + j, base + j + count) alone (a full
    # operand's or a period's elements there, a single number as it is; a Var of the
    # scratch: its block there)
    cdef int column, bit = LOCAL_A
    cdef Py_ssize_t j = where.j, base = where.base
    memcpy(part, row, CODE_WIDTH * sizeof(int64_t))
    part[OUT] = row[OUT] + (where.scratch if row[LOCAL] & LOCAL_OUT else base + j)
    part[OUT_SIZE] = where.count
    for column in range(A, C + 1, 2):
        if row[LOCAL] & bit:
            part[column] = row[column] + where.scratch
            part[column + 1] = where.count
        elif row[column + 1] > 1:    # (its size's column follows)
            part[column] = row[column] + j + (0 if row[column + 1] == where.period else base)
            part[column + 1] = where.count
        bit <<= 1


cdef int elementwise_part(const tape_replay* replay, const int64_t* row, bint next_runs,
                          real* arena, const run_part* where) noexcept nogil:
    # the part `where` of an instruction of a blocked run, by the loops of whole
    # instructions on a row of that part; and of the next instruction where it is a sine
    # paired with this one and runs too: the instructions done. A slice's gather: nothing
    # to do; a gather of one number: the block filled with it; a pad: its stretch of the
    # operand, zeros around it; a sum: its block's sum kept in `partials`
    cdef int64_t part[CODE_WIDTH]
    cdef int64_t second[CODE_WIDTH]
    cdef Py_ssize_t i, count = where.count, first, low, high
    cdef real* out
    cdef real value
    if row[KIND] == GATHER and row[P2] == ALIASED:
        return 1
    part_of(row, part, where)
    out = arena + part[OUT]
    if row[KIND] == GATHER:
        value = arena[row[A]]
        for i in range(count):
            out[i] = value
    elif row[KIND] == SCATTER_ADD:
        # out[i] = a[i - first] for first <= i < first + |a|, else 0
        first = replay.indices[row[P0]] - where.base - where.j
        low = 0 if first < 0 else (first if first < count else count)
        high = first + row[A_SIZE]
        high = low if high < low else (count if high > count else high)
        memset(out, 0, low * sizeof(real))
        memcpy(out + low, arena + row[A] + low - first, (high - low) * sizeof(real))
        memset(out + high, 0, (count - high) * sizeof(real))
    elif row[KIND] == SUM_INNER:
        replay.partials[row[P1] + where.number] = sum_of(arena + part[A], count)
    elif is_unary_column(row[KIND]) and row[P0]:
        numpy_unary(part, arena, replay.ufunc_loops + row[P0] - 1)
    elif is_unary_column(row[KIND]) and row[P2]:
        if row[P3] and next_runs:
            part_of(row + CODE_WIDTH, second, where)
            sine(part, second, arena)
            return 2
        sine(part, NULL, arena)
    else:
        elementwise(part, arena)
    return 1


cdef int call_python(PyObject* callbacks, Py_ssize_t i) noexcept with gil:
    # -1 with the callback's exception left set. NumPy's ufuncs clear the floating-point
    # flags (and report their own): those the instructions before raised are kept.
    cdef fexcept_t flags
    cdef PyObject* result
    fegetexceptflag(&flags, numpy_fp_flags())
    result = PyObject_CallNoArgs(PyList_GET_ITEM(callbacks, i))
    fesetexceptflag(&flags, numpy_fp_flags())
    if result == NULL:
        return -1
    Py_DECREF(result)
    return 0


cdef bint guard_holds(const real* a, const real* expected, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        if a[i] != expected[i] and not (isnan(a[i]) and isnan(expected[i])):
            return False
    return True


# -- elementwise kinds -------------------------------------------------------------------

cdef void elementwise(const int64_t* row, real* arena) noexcept nogil:
    # out[i] = kind(a[i % |a|], b[i % |b|], c[i % |c|]); an absent operand has size 0
    cdef Py_ssize_t n = row[OUT_SIZE], sa = row[A_SIZE], sb = row[B_SIZE], sc = row[C_SIZE]
    cdef Py_ssize_t period = sa, block = 0, j = 0
    cdef real* out = arena + row[OUT]
    cdef const real* a = arena + row[A]
    cdef const real* b = arena + row[B]
    cdef const real* c = arena + row[C]
    if n == 0:
        return
    # the operands' sizes divide each other: the output's first `period` elements in
    # blocks as long as the smallest operand of more than one element
    if sb > period:
        period = sb
    if sc > period:
        period = sc
    block = period
    if 1 < sa < block:
        block = sa
    if 1 < sb < block:
        block = sb
    if 1 < sc < block:
        block = sc
    while j < period:
        elementwise_block(row[KIND], row[OP], block, out + j,
                          a + (j % sa if sa > 1 else 0), sa > 1,
                          b + (j % sb if sb > 1 else 0), sb > 1,
                          c + (j % sc if sc > 1 else 0), sc > 1)
        j += block
    repeat(out, period, n)


cdef void numpy_unary(const int64_t* row, real* arena, const ufunc_loop* loop) noexcept nogil:
    # a unary column by NumPy's loop: the operand's |a| elements, repeated to the output's
    cdef Py_ssize_t n = row[OUT_SIZE], size = row[A_SIZE], i
    cdef Py_ssize_t stride[2]
    cdef char* data[2]
    cdef real* out = arena + row[OUT]
    cdef double u
    if n == 0:
        return
    data[0] = <char*>(arena + row[A])
    data[1] = <char*>out
    stride[0] = sizeof(real)
    stride[1] = sizeof(real)
    # (a float loop cannot fail)
    loop.loop(loop.context, data, &size, stride, loop.auxdata)
    if row[P1]:   # RECIPROCAL_SQUARED
        for i in range(size):
            u = out[i]
            out[i] = <real>(1.0 / (u * u))
    repeat(out, size, n)


cdef void sine(const int64_t* row, const int64_t* second, real* arena) noexcept nogil:
    # a sin or cos column (SINE_SHIFTS, P2 - 1 the shift): |a| elements, repeated; with
    # `second` (not NULL), the row of the column paired with it (_pair_sines) as well
    cdef Py_ssize_t n = row[OUT_SIZE], size = row[A_SIZE]
    cdef real* out = arena + row[OUT]
    cdef real* out2 = arena + second[OUT] if second != NULL else NULL
    cdef int shift2 = <int>second[P2] - 1 if second != NULL else 0
    if n == 0:
        return
    if real is double:
        cyad_sine_double(size, arena + row[A], out, out2, <int>row[P2] - 1, shift2)
    else:
        cyad_sine_float(size, arena + row[A], out, out2, <int>row[P2] - 1, shift2)
    repeat(out, size, n)
    if second != NULL:
        repeat(out2, size, n)


def _sine_baseline(bint baseline):
    """Force (True) or release (False) the baseline copy of the sin and cos loops, not
    the AVX2 one (for tests); returns the former setting."""
    global cyad_sine_baseline
    former = bool(cyad_sine_baseline)
    cyad_sine_baseline = baseline
    return former


cdef inline void repeat(real* out, Py_ssize_t period, Py_ssize_t n) noexcept nogil:
    # out[i] = out[i % period] for i < n (period divides n): doubling copies
    cdef Py_ssize_t done = period, count
    while done < n:
        count = done if done < n - done else n - done
        memcpy(out + done, out, count * sizeof(real))
        done += count


cdef void elementwise_block(int64_t kind, int64_t op, Py_ssize_t n, real* out,
                            const real* a, bint a_full, const real* b, bint b_full,
                            const real* c, bint c_full) noexcept nogil:
    # n elements, where an operand is n contiguous numbers (full) or one; a one-operand
    # kind's operand is always full or n == 1
    if kind == BINARY and op <= BinaryOp.DIVIDE:
        arithmetic(op, n, out, a, a_full, b, b_full)
    elif is_unary_column(kind):
        unary_block(kind, op, n, out, a)
    elif is_binary_column(kind):
        binary_block(kind, op, n, out, a, a_full, b, b_full)
    elif kind == SCALE:
        scale_block(n, out, a, a_full, b, b_full)
    elif kind == COMPARE:
        compare_block(op, n, out, a, a_full, b, b_full)
    elif kind == SELECT:
        select_block(n, out, a, a_full, b, b_full, c, c_full)
    else:   # COPY
        memcpy(out, a, n * sizeof(real))


cdef inline real arithmetic_one(int64_t op, real x, real y) noexcept nogil:
    if op == BinaryOp.ADD:
        return x + y
    elif op == BinaryOp.SUBTRACT:
        return x - y
    elif op == BinaryOp.MULTIPLY:
        return x * y
    return x / y


cdef inline void arithmetic_loops(int64_t op, Py_ssize_t n, real* out, const real* a,
                                  bint a_full, const real* b, bint b_full) noexcept nogil:
    # inlined with a constant op: one vectorised loop per case
    cdef Py_ssize_t i
    cdef real x, y
    if a_full and b_full:
        for i in range(n):
            out[i] = arithmetic_one(op, a[i], b[i])
    elif a_full:
        y = b[0]
        for i in range(n):
            out[i] = arithmetic_one(op, a[i], y)
    elif b_full:
        x = a[0]
        for i in range(n):
            out[i] = arithmetic_one(op, x, b[i])
    else:
        out[0] = arithmetic_one(op, a[0], b[0])


cdef void arithmetic(int64_t op, Py_ssize_t n, real* out, const real* a, bint a_full,
                     const real* b, bint b_full) noexcept nogil:
    # in the tape's dtype, as NumPy computes them
    if op == BinaryOp.ADD:
        arithmetic_loops(BinaryOp.ADD, n, out, a, a_full, b, b_full)
    elif op == BinaryOp.SUBTRACT:
        arithmetic_loops(BinaryOp.SUBTRACT, n, out, a, a_full, b, b_full)
    elif op == BinaryOp.MULTIPLY:
        arithmetic_loops(BinaryOp.MULTIPLY, n, out, a, a_full, b, b_full)
    else:
        arithmetic_loops(BinaryOp.DIVIDE, n, out, a, a_full, b, b_full)


cdef inline void unary_loops(int op, int64_t kind, Py_ssize_t n, real* out,
                             const real* a) noexcept nogil:
    # inlined with a constant op, the rule's chain folds to its one case
    cdef Py_ssize_t i
    cdef double d, v
    if kind == UNARY:
        for i in range(n):
            out[i] = <real>unary_rule(op, a[i], &d)
    elif kind == UNARY_D:
        for i in range(n):
            unary_rule(op, a[i], &d)
            out[i] = <real>d
    else:
        for i in range(n):
            v = unary_rule(op, a[i], &d)
            out[i] = <real>unary_second(op, a[i], v, d)


cdef inline void binary_loops(int op, int64_t kind, Py_ssize_t n, real* out, const real* a,
                              bint a_full, const real* b, bint b_full) noexcept nogil:
    # inlined with a constant op, the rule's chains fold to its one case; a full operand
    # steps by one, a single number by zero. The value and d/da of an array and a single
    # number (x**3, a constant exponent) have loops of their own, b's number a constant
    # there: the C compiler takes the rule's tests of b out of the loop, and vectorises it
    cdef Py_ssize_t i, sa = a_full, sb = b_full
    cdef double x, y, v, da, db, daa, dab, dbb
    if kind == BINARY:
        if a_full and not b_full:
            y = b[0]
            for i in range(n):
                out[i] = <real>binary_rule(op, a[i], y, &da, &db)
        else:
            for i in range(n):
                out[i] = <real>binary_rule(op, a[i * sa], b[i * sb], &da, &db)
    elif kind == BINARY_DA:
        if a_full and not b_full:
            y = b[0]
            for i in range(n):
                binary_rule(op, a[i], y, &da, &db)
                out[i] = <real>da
        else:
            for i in range(n):
                binary_rule(op, a[i * sa], b[i * sb], &da, &db)
                out[i] = <real>da
    elif kind == BINARY_DB:
        for i in range(n):
            binary_rule(op, a[i * sa], b[i * sb], &da, &db)
            out[i] = <real>db
    elif kind == BINARY_DAA:
        for i in range(n):
            x = a[i * sa]
            y = b[i * sb]
            v = binary_rule(op, x, y, &da, &db)
            binary_second(op, x, y, v, da, db, &daa, &dab, &dbb)
            out[i] = <real>daa
    elif kind == BINARY_DAB:
        for i in range(n):
            x = a[i * sa]
            y = b[i * sb]
            v = binary_rule(op, x, y, &da, &db)
            binary_second(op, x, y, v, da, db, &daa, &dab, &dbb)
            out[i] = <real>dab
    else:
        for i in range(n):
            x = a[i * sa]
            y = b[i * sb]
            v = binary_rule(op, x, y, &da, &db)
            binary_second(op, x, y, v, da, db, &daa, &dab, &dbb)
            out[i] = <real>dbb


# unary_block and binary_block: one call of the loops above per rule, generated
include "cyad/_tape/replay_rules.pxi"


cdef void scale_block(Py_ssize_t n, real* out, const real* a, bint a_full, const real* b,
                      bint b_full) noexcept nogil:
    # a partial times a direction, 0 where the direction is 0 (whatever the partial), in
    # the tape's dtype as NumPy multiplies; the product is taken everywhere and then
    # chosen (a select the C compiler vectorises; a branch around it would not be)
    cdef Py_ssize_t i
    cdef real x, y, product
    if b_full:
        if a_full:
            for i in range(n):
                product = a[i] * b[i]
                out[i] = product if b[i] != 0 else 0
        else:
            x = a[0]
            for i in range(n):
                product = x * b[i]
                out[i] = product if b[i] != 0 else 0
    elif b[0] == 0:
        memset(out, 0, n * sizeof(real))
    else:
        y = b[0]
        if a_full:
            for i in range(n):
                out[i] = a[i] * y
        else:
            out[0] = a[0] * y


cdef inline bint compare_one(int op, double x, double y) noexcept nogil:
    if op == LESS:
        return x < y
    elif op == LESS_EQUAL:
        return x <= y
    elif op == GREATER:
        return x > y
    elif op == GREATER_EQUAL:
        return x >= y
    elif op == EQUAL:
        return x == y
    elif op == NOT_EQUAL:
        return x != y
    elif op == LOGICAL_AND:
        return x != 0 and y != 0
    elif op == LOGICAL_OR:
        return x != 0 or y != 0
    elif op == LOGICAL_XOR:
        return (x != 0) != (y != 0)
    elif op == LOGICAL_NOT:
        return x == 0
    # (C's tests return any nonzero int, isinf -1 for -inf: the result must be 0 or 1)
    elif op == ISNAN:
        return isnan(x) != 0
    elif op == ISINF:
        return isinf(x) != 0
    elif op == ISFINITE:
        return isfinite(x) != 0
    return signbit(x) != 0


cdef inline void compare_loop(int op, Py_ssize_t n, real* out, const real* a, bint a_full,
                              const real* b, bint b_full) noexcept nogil:
    # inlined with a constant op; b is absent (never read) for the one-operand comparisons
    cdef Py_ssize_t i, sa = a_full, sb = b_full
    for i in range(n):
        out[i] = <real>compare_one(op, a[i * sa], b[i * sb])


cdef void compare_block(int64_t op, Py_ssize_t n, real* out, const real* a, bint a_full,
                        const real* b, bint b_full) noexcept nogil:
    if op == LESS:
        compare_loop(LESS, n, out, a, a_full, b, b_full)
    elif op == LESS_EQUAL:
        compare_loop(LESS_EQUAL, n, out, a, a_full, b, b_full)
    elif op == GREATER:
        compare_loop(GREATER, n, out, a, a_full, b, b_full)
    elif op == GREATER_EQUAL:
        compare_loop(GREATER_EQUAL, n, out, a, a_full, b, b_full)
    elif op == EQUAL:
        compare_loop(EQUAL, n, out, a, a_full, b, b_full)
    elif op == NOT_EQUAL:
        compare_loop(NOT_EQUAL, n, out, a, a_full, b, b_full)
    else:   # the logical ones and the tests of one number
        compare_loop(<int>op, n, out, a, a_full, b, b_full)


cdef void select_block(Py_ssize_t n, real* out, const real* c, bint c_full, const real* a,
                       bint a_full, const real* b, bint b_full) noexcept nogil:
    # args (c, a, b): the condition comes first. Both operands read, then one chosen: with
    # unit steps a vectorised blend, no branch to mispredict where the condition varies
    cdef Py_ssize_t i, sc = c_full, sa = a_full, sb = b_full
    cdef real x, y
    if c_full and a_full and b_full:
        for i in range(n):
            x = a[i]
            y = b[i]
            out[i] = x if c[i] != 0 else y
        return
    for i in range(n):
        x = a[i * sa]
        y = b[i * sb]
        out[i] = x if c[i * sc] != 0 else y


# -- structural kinds ------------------------------------------------------------------

cdef void gather(const int64_t* row, real* arena, const int64_t* index,
                 int threads) noexcept nogil:
    # out[l*m + i] = a[l*r + index[i]], 0 where index[i] < 0
    cdef Py_ssize_t m = row[P1], rows, r, line, i, first, step = row[P3]
    cdef Py_ssize_t lead = 0, count = m
    cdef real* out = arena + row[OUT]
    cdef const real* a
    cdef int64_t j
    if m == 0 or row[OUT_SIZE] == 0 or row[P2] == ALIASED:
        return
    if row[P2] == PADDED:
        lead, count = index[m], index[m + 1]
    rows = row[OUT_SIZE] // m
    r = row[A_SIZE] // rows
    first = index[lead]
    for line in range(rows):
        a = arena + row[A] + line * r
        if row[P2]:
            memset(out, 0, lead * sizeof(real))
            if step == 1:
                copy_bytes(out + lead, a + first, count * sizeof(real), threads)
            else:
                a += first
                for i in range(count):
                    out[lead + i] = a[i * step]
            memset(out + lead + count, 0, (m - lead - count) * sizeof(real))
        else:
            for i in range(m):
                j = index[i]
                out[i] = a[j] if j >= 0 else 0
        out += m


cdef void scatter_add(const int64_t* row, real* arena, const int64_t* index,
                      int threads) noexcept nogil:
    # out = 0; out[l*r + index[i]] += a[l*m + i], nothing where index[i] < 0
    cdef Py_ssize_t m = row[P1], rows, r, line, i, step = row[P3], first
    cdef Py_ssize_t lead = 0, count = m
    cdef real* out
    cdef const real* a = arena + row[A]
    cdef int64_t j
    cdef bint block
    if m == 0 or row[A_SIZE] == 0:
        memset(arena + row[OUT], 0, row[OUT_SIZE] * sizeof(real))
        return
    if row[P2] == PADDED:
        lead, count = index[m], index[m + 1]
    # a block of distinct targets in a row (a slice's transpose) is copied, and only the
    # rest of its line cleared; any other scatter adds into a cleared output
    block = row[P2] != 0 and step == 1 and count > 0
    if not block:
        memset(arena + row[OUT], 0, row[OUT_SIZE] * sizeof(real))
    rows = row[A_SIZE] // m
    r = row[OUT_SIZE] // rows
    for line in range(rows):
        out = arena + row[OUT] + line * r
        if row[P2]:
            # distinct targets: a strided copy of the indexed block
            first = index[lead]
            out += first
            if block:
                memset(out - first, 0, first * sizeof(real))
                copy_bytes(out, a + lead, count * sizeof(real), threads)
                memset(out + count, 0, (r - first - count) * sizeof(real))
            else:
                for i in range(count):
                    out[i * step] = a[lead + i]
        else:
            for i in range(m):
                j = index[i]
                if j >= 0:
                    out[j] += a[i]
        a += m


cdef inline double sum_of(const real* a, Py_ssize_t k) noexcept nogil:
    # eight accumulators in double: vectorised, and more exact than one
    cdef double acc[8]
    cdef double total = 0.0
    cdef Py_ssize_t i = 0, t
    if k >= 8:
        for t in range(8):
            acc[t] = a[t]
        i = 8
        while i + 8 <= k:
            for t in range(8):
                acc[t] += a[i + t]
            i += 8
        total = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
    while i < k:
        total += a[i]
        i += 1
    return total


ctypedef struct sum_split:
    const int64_t* row
    void* arena
    bint single
    Py_ssize_t pieces, piece   # a long sum's pieces and their length (one row)
    Py_ssize_t parts
    double partial[SUM_PIECES]


cdef void sum_rows(const int64_t* row, real* arena, Py_ssize_t first,
                   Py_ssize_t last) noexcept nogil:
    # out[j] = sum over t < k of a[j*k + t], for rows first <= j < last
    cdef Py_ssize_t k = row[P0], j
    cdef real* out = arena + row[OUT]
    cdef const real* a = arena + row[A]
    for j in range(first, last):
        out[j] = <real>sum_of(a + j * k, k)


cdef void sum_pieces(sum_split* job, const real* a, Py_ssize_t first,
                     Py_ssize_t last) noexcept nogil:
    cdef Py_ssize_t p, k = job.row[P0], start
    for p in range(first, last):
        start = p * job.piece
        job.partial[p] = sum_of(a + start, job.piece if k - start > job.piece else k - start)


cdef void sum_task(void* context, Py_ssize_t part) noexcept nogil:
    cdef sum_split* job = <sum_split*>context
    cdef Py_ssize_t m = job.row[OUT_SIZE] if job.pieces == 0 else job.pieces
    cdef Py_ssize_t first = m * part // job.parts, last = m * (part + 1) // job.parts
    if job.pieces == 0 and job.single:
        sum_rows(job.row, <float*>job.arena, first, last)
    elif job.pieces == 0:
        sum_rows(job.row, <double*>job.arena, first, last)
    elif job.single:
        sum_pieces(job, <float*>job.arena + job.row[A], first, last)
    else:
        sum_pieces(job, <double*>job.arena + job.row[A], first, last)


cdef void sum_inner(const int64_t* row, real* arena, int threads) noexcept nogil:
    # out[j] = sum over t < k of a[j*k + t]: a long sum in pieces (added in order), many
    # sums by rows, either split across the threads when they are large
    cdef Py_ssize_t k = row[P0], m = row[OUT_SIZE], p
    cdef sum_split job
    cdef double total = 0.0
    job.row = row
    job.arena = arena
    job.single = real is float
    job.pieces = 0
    if m == 1 and k >= _PARALLEL_FROM:
        job.pieces = k // SUM_PIECE if k // SUM_PIECE < SUM_PIECES else SUM_PIECES
        job.piece = ((k + job.pieces - 1) // job.pieces + 7) // 8 * 8
        job.pieces = (k + job.piece - 1) // job.piece
        job.parts = threads if threads < job.pieces else job.pieces
        run_parallel(sum_task, &job, job.parts, threads)
        for p in range(job.pieces):
            total += job.partial[p]
        arena[row[OUT]] = <real>total
    elif threads > 1 and m > 1 and m * k >= _PARALLEL_FROM:
        job.parts = threads if threads < m else m
        run_parallel(sum_task, &job, job.parts, threads)
    else:
        sum_rows(row, arena, 0, m)


cdef inline double dot(const real* a, const real* b, Py_ssize_t k) noexcept nogil:
    # eight accumulators in double, as sum_of
    cdef double acc[8]
    cdef double total = 0.0
    cdef Py_ssize_t i = 0, t
    if k >= 8:
        for t in range(8):
            acc[t] = <double>a[t] * b[t]
        i = 8
        while i + 8 <= k:
            for t in range(8):
                acc[t] += <double>a[i + t] * b[i + t]
            i += 8
        total = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
    while i < k:
        total += <double>a[i] * b[i]
        i += 1
    return total


# matmul's inner kernel for narrow outputs: a tile of MATMUL_ROWS rows by MATMUL_COLUMNS
# columns of the output held in accumulators (8 SSE2 registers in float64) while k runs
# innermost. Wider outputs run i-k-j loops (a row of the output updated by a row of b
# times one number of a, vectorised), which measure as fast as tiles there.
cdef enum:
    MATMUL_ROWS = 4
    MATMUL_COLUMNS = 4
    MATMUL_TILED_BELOW = 16    # outputs of fewer columns run in tiles


cdef inline void matmul_tile(int rows, Py_ssize_t k, Py_ssize_t n, const real* a,
                             const real* b, real* out) noexcept nogil:
    # out[r, j] = sum over t of a[r, t] * b[t, j] for r < rows (a constant once inlined)
    # and j < MATMUL_COLUMNS, summed in t's order in the tape's dtype, as the i-k-j loops
    cdef real acc[MATMUL_ROWS][MATMUL_COLUMNS]
    cdef real x
    cdef const real* b_row
    cdef Py_ssize_t t, r, j
    for r in range(rows):
        for j in range(MATMUL_COLUMNS):
            acc[r][j] = 0
    for t in range(k):
        b_row = b + t * n
        for r in range(rows):
            x = a[r * k + t]
            for j in range(MATMUL_COLUMNS):
                acc[r][j] = acc[r][j] + x * b_row[j]
    for r in range(rows):
        for j in range(MATMUL_COLUMNS):
            out[r * n + j] = acc[r][j]


cdef inline void matmul_rows(int rows, Py_ssize_t k, Py_ssize_t n, const real* a,
                             const real* b, real* out) noexcept nogil:
    # `rows` rows of the output: tiles, then the last n % MATMUL_COLUMNS columns one by one
    cdef Py_ssize_t j = 0, r, t, last = n - n % MATMUL_COLUMNS
    cdef real total
    while j < last:
        matmul_tile(rows, k, n, a, b + j, out + j)
        j += MATMUL_COLUMNS
    for r in range(rows):
        for j in range(last, n):
            total = 0
            for t in range(k):
                total = total + a[r * k + t] * b[t * n + j]
            out[r * n + j] = total


cdef void matmul_tiled(Py_ssize_t m, Py_ssize_t k, Py_ssize_t n, const real* a,
                       const real* b, real* out) noexcept nogil:
    cdef Py_ssize_t i = 0
    while i + MATMUL_ROWS <= m:
        matmul_rows(MATMUL_ROWS, k, n, a + i * k, b, out + i * n)
        i += MATMUL_ROWS
    if m - i == 3:
        matmul_rows(3, k, n, a + i * k, b, out + i * n)
    elif m - i == 2:
        matmul_rows(2, k, n, a + i * k, b, out + i * n)
    elif m - i == 1:
        matmul_rows(1, k, n, a + i * k, b, out + i * n)


cdef extern from *:
    """
    /* matmul's i-k-j loops, in C for a second copy of them built for AVX2 (gcc's
       target_clones on x86-64 Linux: the CPU picks its copy once, at load), twice the
       width of the baseline SSE2 at the same results (no FMA: each step a multiply and
       an add, rounded as in the baseline). */
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    #define CYAD_MATMUL_CLONES __attribute__((target_clones("avx2", "default")))
    #else
    #define CYAD_MATMUL_CLONES
    #endif
    #define CYAD_MATMUL_IKJ(name, real) \
    CYAD_MATMUL_CLONES static void name(Py_ssize_t m, Py_ssize_t k, Py_ssize_t n, \
                                        const real* restrict a, const real* restrict b, \
                                        real* restrict out) { \
        for (Py_ssize_t i = 0; i < m; i++) { \
            real* restrict row = out + i * n; \
            for (Py_ssize_t j = 0; j < n; j++) row[j] = 0; \
            for (Py_ssize_t t = 0; t < k; t++) { \
                const real x = a[i * k + t]; \
                const real* restrict b_row = b + t * n; \
                for (Py_ssize_t j = 0; j < n; j++) row[j] = row[j] + x * b_row[j]; \
            } \
        } \
    }
    CYAD_MATMUL_IKJ(cyad_matmul_ikj_double, double)
    CYAD_MATMUL_IKJ(cyad_matmul_ikj_float, float)
    """
    void cyad_matmul_ikj_double(Py_ssize_t m, Py_ssize_t k, Py_ssize_t n, const double* a,
                                const double* b, double* out) noexcept nogil
    void cyad_matmul_ikj_float(Py_ssize_t m, Py_ssize_t k, Py_ssize_t n, const float* a,
                               const float* b, float* out) noexcept nogil


cdef void matmul(const int64_t* row, real* arena) noexcept nogil:
    # out[p] = a[p] @ b[p]: (m, k) by (k, n), an operand of one matrix the same for all p
    cdef Py_ssize_t m = row[P0], k = row[P1], n = row[P2], _p, i, batch
    cdef Py_ssize_t a_step = 0 if row[A_SIZE] == m * k else m * k
    cdef Py_ssize_t b_step = 0 if row[B_SIZE] == k * n else k * n
    cdef real* out = arena + row[OUT]
    cdef const real* a = arena + row[A]
    cdef const real* b = arena + row[B]
    if m * n == 0:
        return
    batch = row[OUT_SIZE] // (m * n)
    for _p in range(batch):
        if n == 1:
            # a matrix times a vector: a dot product per row
            for i in range(m):
                out[i] = <real>dot(a + i * k, b, k)
        elif n < MATMUL_TILED_BELOW:
            matmul_tiled(m, k, n, a, b, out)
        elif real is double:
            cyad_matmul_ikj_double(m, k, n, a, b, out)
        else:
            cyad_matmul_ikj_float(m, k, n, a, b, out)
        out += m * n
        a += a_step
        b += b_step
