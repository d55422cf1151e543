"""The compiled replay of a tape: a tape lowered once to flat buffers, run without the GIL.

`Replay(tape)` lowers a `cyad._tape.Tape` (whose docstring specifies every instruction
kind) once, to

- one arena: an ndarray of the tape's dtype (float64 or float32) holding every Var in a
  slot at a fixed offset (64-byte aligned), bool Vars as 0.0 / 1.0; the tape's
  constants are copied in here, and after the Vars come the expected values of the
  guards. By default every Var has a slot of its own; given `keep` (the Vars whose
  values the caller reads or writes between runs), a slot passes, once the last
  reader of its Var has run, to a Var written later (slot reuse by liveness, as a
  register allocator does: a derivative tape's arena shrinks several times, and what
  a run touches stays in cache). Inputs, outputs, constants and the kept Vars keep
  their own slots; a Var written before one of `starts` (where runs may begin again,
  a derivative tape's split) and read after it lives to the end;
- a code table: an int64 array of one row per instruction, CODE_WIDTH columns
  (cyad/_tape_replay.pxd names them): KIND, OP, OUT, OUT_SIZE, then A, A_SIZE, B,
  B_SIZE, C, C_SIZE (the operands' offsets and sizes, in elements of the arena; args in
  the tape's order, (c, a, b) of a select in A, B, C), and P0..P3, a kind's parameters
  (gather, scatter_add: its indices' place and count, and whether they are an
  arithmetic progression, of what step; sum_inner: k; matmul: m, k, n; python: its
  callback; guard: B, B_SIZE are the expected values);
- one int64 array of the indices of all gathers and scatters;
- a list of callbacks, one per python instruction: closures over views of the arena
  made here, so that a run makes no view.

Everything a run needs is in the `tape_replay` struct (the .pxd): `replay_run` runs
instructions [start, stop) from it without the GIL, taking the GIL only for a python
instruction. Its status: 0 when every instruction ran; s > 0 when the guard at
instruction s - 1 failed (the instructions before it ran, no later one did); -1 when a
python instruction raised, with the exception set for the caller to raise once it
holds the GIL. `Replay.run` returns the status, or raises that exception. A run leaves the
floating-point flags its instructions raised (a python instruction, whose NumPy
ufuncs clear them and report their own, restores them as it found them): the caller
tests them (cyad/_tape_engine.pyx).

The loops:
- Elementwise kinds (unary ... copy, scale among them): an operand smaller than the
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
  NumPy calls libm) run cyad/_vector_sine.h's vectorised loops, within 1 ulp of libm;
  two such columns of one operand in a row (sin's value and derivative) share one pass.
- Blocked runs: consecutive elementwise instructions over one output size of at least
  BLOCKED_BY * BLOCK elements, whose operands are that size, a period of it or single
  numbers (_blocked_runs), run block by block: BLOCK elements of each instruction in
  turn, so that what one writes the next reads from cache. The same loops, the same
  numbers.
  The other rules run through cyad/_rules.pxd (in double, rounded once to
  float32), in loops that a dispatch generated from the rule table
  (cyad/_tape_replay_rules.pxi.tp) calls with the op a constant: inlined, each loop is
  specialised to its rule, with no chain of comparisons per element, and (the module
  is built without errno and FP traps, cyad/meson.build) without the libm call of the
  column the kind does not read (cos in sin's value).
- gather, scatter_add: an index array that is an arithmetic progression (detected
  here), or one between runs of -1 (a block that concatenate, pad or stack places among
  zeros), is a strided copy (step 1: memcpy) and a memset of the zeros; otherwise one
  index per element.
- sum_inner: eight accumulators in double (a full sum, k = |a|, is one such loop; a sum
  of at least PARALLEL_FROM numbers, pieces of such loops added in order).
- Threads (cyad.set_threads, cyad/_threads.pyx): an elementwise instruction or blocked
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

Readings of the tape's specification (cyad/_tape.py):
- The operand sizes of an elementwise instruction must each divide the output's and
  each other's (suffixes of one shape do); lowering raises ValueError otherwise, as it
  does for any inconsistent gather, scatter, sum or matmul size, an index beyond its
  row, or an output that is an input or a constant.
- guard: a equals `expected` where both are the same number or both NaN (a value that
  was NaN when recorded stays valid while it is NaN); `expected` broadcasts to a's shape.
- scatter_add: a negative index adds nothing (the transpose of gather's zeros).
- python: function(*args), with the args' arena slots as read-only arrays (a bool Var
  as a bool array); one output, or a tuple of them, each converted to its Var's dtype
  and shape as cyad._tape.evaluate does (an error names `where`); `entry` and `params`
  are not read.
- zeros reads no operand (any args are ignored).
"""
import numpy as np

from libc.math cimport isnan, isinf, isfinite, signbit
from libc.stdint cimport int64_t
from libc.string cimport memcpy, memset
from cpython.ref cimport PyObject
from cpython.pycapsule cimport PyCapsule_GetPointer

from cyad._fused cimport real
from cyad._rules cimport BinaryOp, unary_rule, unary_second, binary_rule, binary_second
# (read by the generated dispatch, cyad/_tape_replay_rules.pxi.tp)
from cyad._rules cimport UnaryOp  # no-cython-lint
from cyad import _rule_table, _tape, _tape_kind_table
from cyad._threads cimport replay_threads, run_parallel, copy_bytes

cdef extern from "_vector_sine.h":
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


# a kind's code is its position in the table (the generated enum's order)
KIND_CODES = {kind.name: code for code, kind in enumerate(_tape_kind_table.KINDS)}
COMPARISON_CODES = {
    np.less: LESS, np.less_equal: LESS_EQUAL, np.greater: GREATER,
    np.greater_equal: GREATER_EQUAL, np.equal: EQUAL, np.not_equal: NOT_EQUAL,
    np.logical_and: LOGICAL_AND, np.logical_or: LOGICAL_OR, np.logical_xor: LOGICAL_XOR,
    np.logical_not: LOGICAL_NOT, np.isnan: ISNAN, np.isinf: ISINF, np.isfinite: ISFINITE,
    np.signbit: SIGNBIT,
}
# (an operand's size is in the column after its offset's: part_of relies on it)
assert (A_SIZE, B_SIZE, C_SIZE) == (A + 1, B + 1, C + 1)
# a comparison added to the tape needs its loop here
assert set(COMPARISON_CODES) == set(_tape.COMPARISONS)

# the code table's columns by name (the .pxd's anonymous enum)
COLUMNS = {"KIND": KIND, "OP": OP, "OUT": OUT, "OUT_SIZE": OUT_SIZE, "A": A, "A_SIZE": A_SIZE,
           "B": B, "B_SIZE": B_SIZE, "C": C, "C_SIZE": C_SIZE, "P0": P0, "P1": P1, "P2": P2,
           "P3": P3}

# slots start at multiples of this many bytes
ALIGNMENT = 64

# The unary columns that NumPy's own loops compute faster than the rule loops (its SIMD
# paths, chosen for the CPU at hand): by dtype and kind, the rule's name -> the ufunc
# computing that column. Measured at 10**5 elements on AVX2: values from 3x (arccosh) to
# 10x (cbrt) faster in float64 and 8x to 34x in float32, within 2 ulp of the rules'.
# (float64 sin and cos: NumPy calls the same scalar libm; the arithmetic: no faster.)
_FASTER_VALUES = ["cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tan",
                  "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
                  "arctanh", "floor", "ceil", "rint", "trunc"]
NUMPY_LOOPS = {
    np.dtype(np.float64): {
        "unary": {name: name for name in _FASTER_VALUES},
        "unary_d": {"exp": "exp", "expm1": "exp", "sinh": "cosh", "cosh": "sinh",
                    "tanh": "cosh"},
        "unary_d2": {"exp": "exp", "sinh": "sinh", "cosh": "cosh"},
    },
    np.dtype(np.float32): {
        "unary": {name: name for name in _FASTER_VALUES + ["sqrt", "sin", "cos"]},
        "unary_d": {"exp": "exp", "expm1": "exp", "sin": "cos", "sinh": "cosh",
                    "cosh": "sinh"},
        "unary_d2": {"exp": "exp", "sinh": "sinh", "cosh": "cosh"},
    },
}

# the columns of NUMPY_LOOPS that are 1 / (u * u) of their ufunc's u, as the rule writes
# them (tanh's derivative: 4x the rule loop in float64 at 10**5, within 3 ulp; float32
# rounds u first, and would stray further)
RECIPROCAL_SQUARED = frozenset({("unary_d", "tanh")})

# The sin and cos columns not in NUMPY_LOOPS, by cyad/_vector_sine.h's vectorised loops:
# sin(x + shift * pi/2) for a shift of (kind, rule) (cos' derivative -sin: shift 2).
# 3x libm's scalar sin in float64 with AVX2, within 1 ulp of it.
SINE_SHIFTS = {("unary", "sin"): 0, ("unary_d", "sin"): 1, ("unary_d2", "sin"): 2,
               ("unary", "cos"): 1, ("unary_d", "cos"): 2, ("unary_d2", "cos"): 3}


# the capsule of ufunc._resolve_dtypes_and_context, once ufunc._get_strided_loop filled
# it (NumPy's numpy/_core/src/umath/ufunc_object.c)
cdef struct ufunc_call_info:
    strided_loop strided_loop
    void* context
    void* auxdata
    unsigned char requires_pyapi
    unsigned char no_floatingpoint_errors


def _numpy_loop(name, dtype):
    """NumPy's call info (a capsule) of ufunc `name` from dtype to dtype, its strided loop
    resolved for contiguous operands; None where NumPy offers none for it."""
    ufunc = getattr(np, name, None)
    try:
        dtypes, capsule = ufunc._resolve_dtypes_and_context((dtype, dtype))
        if dtypes != (dtype, dtype):
            return None
        ufunc._get_strided_loop(capsule, fixed_strides=(dtype.itemsize, dtype.itemsize))
    except (AttributeError, TypeError, ValueError):   # (an older NumPy)
        return None
    info = <ufunc_call_info*>PyCapsule_GetPointer(capsule, "numpy_1.24_ufunc_call_info")
    if info.requires_pyapi:
        return None
    return capsule


# -- lowering ------------------------------------------------------------------------

def _rounded(Py_ssize_t size, Py_ssize_t unit):
    return (size + unit - 1) // unit * unit


def _python_callback(function, args, outs, where):
    """A python instruction as a callback of no arguments: outs[j][...] = function(*args)[j].

    args: (read-only slot, Var) pairs; outs: (slot, Var) pairs; `where` names the call
    in errors.
    """
    slots = tuple(slot for slot, _ in args)
    bools = tuple(var.dtype == bool for _, var in args)

    def callback():
        if any(bools):
            values = [slot != 0 if b else slot for slot, b in zip(slots, bools)]
        else:
            values = slots
        result = function(*values)
        results = result if isinstance(result, tuple) else (result,)
        if len(results) != len(outs):
            raise ValueError(f"{where} gave {len(results)} results; the tape expects "
                             f"{len(outs)}")
        for (slot, var), value in zip(outs, results):
            value = np.asarray(value, var.dtype)
            if value.size != var.size:
                raise ValueError(f"{where} gave an array of shape {value.shape}; the tape "
                                 f"expects {var.shape}")
            slot[...] = value.reshape(var.shape)

    return callback


def _check_modular(args, out, fail):
    # every operand's size divides the output's, and the smaller sizes the larger
    if all(var.size == out.size or var.size == 1 for var in args) or out.size == 0:
        return
    sizes = sorted({var.size for var in args} - {1})
    for i, size in enumerate(sizes):
        if size == 0 or out.size % size or (i and size % sizes[i - 1]):
            raise fail(f"its operands' sizes {[v.size for v in args]} do not broadcast "
                       f"modularly to {out.size} elements")


def _index_facts(const int64_t[::1] index, bint gather):
    """(run, step, largest entry, lead, count) of a gather's or scatter's `index`: run
    PROGRESSION when it is an arithmetic progression of entries >= 0 (for a scatter, of a
    nonzero step: distinct targets); PADDED when it is one between runs of -1 (the zeros
    that concatenate, pad and stack put around a block, and their transposes): `lead`
    entries -1, then the progression's `count`; else SCATTERED (step 0)."""
    cdef Py_ssize_t i, n = index.shape[0], lead = 0, end
    cdef int64_t step = 1, largest = -1
    for i in range(n):
        largest = max(largest, index[i])
    while lead < n and index[lead] == -1:
        lead += 1
    end = lead
    while end < n and index[end] >= 0:
        end += 1
    if end == lead:
        return SCATTERED, 0, largest, 0, 0
    for i in range(end, n):
        if index[i] != -1:
            return SCATTERED, 0, largest, 0, 0
    if end - lead > 1:
        step = index[lead + 1] - index[lead]
    for i in range(lead + 1, end):
        if index[i] - index[i - 1] != step:
            return SCATTERED, 0, largest, 0, 0
    if not gather and step == 0:
        return SCATTERED, 0, largest, 0, 0
    if lead == 0 and end == n:
        return PROGRESSION, step, largest, 0, n
    return PADDED, step, largest, lead, end - lead


def _own_slots(vars, Py_ssize_t unit):
    """Every Var's offset in a slot of its own, and the end of the last."""
    offsets = np.zeros(len(vars), np.int64)
    cdef Py_ssize_t end = 0
    for number, var in enumerate(vars):
        offsets[number] = end
        end += _rounded(var.size, unit)
    return offsets, end


def _shared_slots(tape, instrs, keep, starts, Py_ssize_t unit):
    """Every Var's offset, a slot passing to a later Var once its last reader has run;
    and the end of the last slot.

    Slots of their own: the inputs, outputs and constants, the Vars of `keep`, and any
    Var that no instruction or more than one writes. A run may start at any of `starts`
    (and at 0) after earlier runs: a Var written before a start and read after it lives
    to the end. An instruction's outputs take their slots before its operands free
    theirs, so that no output overlaps an operand.
    """
    vars = tape.vars
    cdef Py_ssize_t n = len(instrs), n_vars = len(vars), s, number, start, size, end = 0
    cdef Py_ssize_t[::1] written = np.full(n_vars, -1, np.intp)   # the instruction writing
    cdef Py_ssize_t[::1] last = np.full(n_vars, -1, np.intp)      # each Var (-2: several),
    cdef Py_ssize_t[::1] slot = np.zeros(n_vars, np.intp)         # its last reader, offset
    cdef Py_ssize_t[::1] rounded = np.empty(n_vars, np.intp)
    cdef unsigned char[::1] own = np.zeros(n_vars, np.uint8)
    for number in range(n_vars):
        size = vars[number].size
        rounded[number] = (size + unit - 1) // unit * unit
    for s in range(n):
        instr = instrs[s]
        for var in instr.args:
            last[<Py_ssize_t>var.number] = s
        for var in instr.outs:
            number = var.number
            written[number] = s if written[number] == -1 else -2
    for start in starts:
        for number in range(n_vars):
            if 0 <= written[number] < start <= last[number]:
                last[number] = n
    for group in (tape.inputs, tape.outputs, tape.consts, keep):
        for var in group:
            own[<Py_ssize_t>var.number] = 1
    for number in range(n_vars):
        if own[number] or written[number] < 0:
            own[number] = 1
            slot[number] = end
            end += rounded[number]
    free = {}      # rounded size -> offsets of free slots
    for s in range(n):
        instr = instrs[s]
        for var in instr.outs:
            number = var.number
            if own[number]:
                continue
            slots = free.get(rounded[number])
            if slots:
                slot[number] = slots.pop()
            else:
                slot[number] = end
                end += rounded[number]
        # the slots whose last reader this is, and those of outputs nothing reads (an
        # operand read twice frees its slot once)
        for var in instr.args:
            number = var.number
            if last[number] == s and not own[number]:
                last[number] = -3
                free.setdefault(rounded[number], []).append(slot[number])
        for var in instr.outs:
            number = var.number
            if last[number] < s and last[number] != -3 and not own[number]:
                last[number] = -3
                free.setdefault(rounded[number], []).append(slot[number])
    return np.asarray(slot, np.int64), end


def _pair_sines(code):
    """Pair each sin or cos column (P2, SINE_SHIFTS) with the next instruction where that
    is one too, of the same operand and size and another output: P3 1 in the first's row
    (a run then computes both in one pass, one reduction, where it runs both)."""
    cdef Py_ssize_t s = 0
    while s + 1 < code.shape[0]:
        first, second = code[s], code[s + 1]
        if first[P2] and second[P2] and is_unary_column(first[KIND]) \
                and is_unary_column(second[KIND]) and first[A] == second[A] \
                and first[A_SIZE] == second[A_SIZE] \
                and first[OUT_SIZE] == second[OUT_SIZE] and first[OUT] != second[OUT]:
            first[P3] = 1
            s += 2
        else:
            s += 1


# Blocked runs: consecutive elementwise instructions over one output size (at least
# BLOCKED_BY times the block) run block by block, a block of every instruction in turn,
# so that what one writes the next reads from cache rather than memory. Measured (the
# JVP of sin(x) exp(-x^2) + x^3, AMD EPYC, 32 MB L3): at 10**6 elements 0.93x the time of
# whole instructions with blocks of 65536; blocks of 256 to 8192 took up to 1.1x (the
# hardware's stream prefetch across many short streams), and at 3 * 10**5, where the
# whole run fits in L3, no block gained.
BLOCK = 65536
BLOCKED_BY = 8


def _blocked_runs(code, Py_ssize_t block):
    """(end, period, block) for every row of the code table: instructions [s, end) form a
    blocked run (end 0: s is in none) of at least BLOCKED_BY * block elements, whose
    operands are the output's N elements, a period of them broadcast (P elements, P
    dividing N), or single numbers.

    Blocks never cross a multiple of P, and an instruction joins only when it has an
    operand of more than one element and its output has N. Then a block's elements of
    the output depend on the same elements of the operands alone (or on an operand of P
    elements, which no instruction of the run writes: its outputs all have N); and slots
    that pass between Vars (cyad/_tape_replay.pyx, _shared_slots) are whole slots of N
    elements, read and rewritten element by element in the run's order: running the run
    block by block gives the numbers of running it instruction by instruction.
    """
    cdef Py_ssize_t n_instr = code.shape[0], s, first, n, period, size, columns
    runs = np.zeros((n_instr, 3), np.int64)
    first = 0
    while first < n_instr:
        n = code[first, OUT_SIZE]
        period = n
        s = first
        while s < n_instr and is_elementwise(code[s, KIND]) and code[s, OUT_SIZE] == n \
                and block > 0 and n >= BLOCKED_BY * block:
            columns = 0
            for size in (code[s, A_SIZE], code[s, B_SIZE], code[s, C_SIZE]):
                if size > 1 and size != n:
                    if period != n and size != period:
                        break
                    period = size
                columns += size > 1
            else:
                if columns:
                    s += 1
                    continue
            break
        if s - first >= 2:
            runs[first:s, 0] = s
            runs[first:s, 1] = period
            runs[first:s, 2] = block
            first = s
        else:
            first += 1
    return runs


cdef class Replay:
    """A tape lowered to an arena, a code table and callbacks, replayed in compiled code.

    Parameters
    ----------
    tape : cyad._tape.Tape
        The program; a float64 or float32 tape. It is read once: a later change to it
        is not seen.
    keep : iterable of Var, optional
        Given, the Vars other than inputs, outputs and constants whose slots the caller
        reads or writes between runs: every other Var's slot may pass to a later Var once
        its last reader has run (`value` of such a Var is then only meaningful until
        then). None (the default): every Var keeps a slot of its own.
    starts : iterable of int, optional
        With `keep`: the instructions (besides 0) where a run may begin after earlier
        runs of the instructions before them, as [split, n) of a derivative tape runs
        once per chunk after [0, split) ran once. A run started anywhere else may read
        slots that later Vars took.
    block : int, optional
        Runs of elementwise instructions over at least BLOCKED_BY * block elements run
        block by block, `block` elements of each instruction in turn (_blocked_runs); 0:
        each instruction over its whole output. The default: BLOCK.

    Notes
    -----
    The module's docstring describes the buffers, the code table and the status of a run.
    """

    def __init__(self, tape, keep=None, starts=(), Py_ssize_t block=BLOCK):
        if self.tape is not None:
            raise TypeError("a Replay lowers one tape, once")
        dtype = np.dtype(tape.dtype)
        if dtype != np.float64 and dtype != np.float32:
            raise TypeError(f"a tape of {dtype} cannot be replayed (float64 or float32)")
        self.tape = tape
        cdef Py_ssize_t unit = ALIGNMENT // dtype.itemsize
        instrs = list(tape.instrs)
        vars = tape.vars
        for number, var in enumerate(vars):
            if var.number != number:
                raise ValueError(f"{var!r} is var {number} of the tape")
        for s, instr in enumerate(instrs):
            self._check_vars(instr, s)

        # the slots: every Var (shared by liveness when `keep` is given), then the
        # expected values of every guard
        if keep is None:
            offsets, end = _own_slots(vars, unit)
        else:
            for var in keep:
                self._check_var(var, "the Var to keep")
            for start in starts:
                if not 0 <= start <= len(instrs):
                    raise ValueError(f"a run cannot start at instruction {start} of "
                                     f"{len(instrs)}")
            offsets, end = _shared_slots(tape, instrs, keep, starts, unit)
        expected_at = {}
        for s, instr in enumerate(instrs):
            if instr.kind == "guard":
                expected_at[s] = end
                end += _rounded(instr.args[0].size, unit)
        memory = np.zeros(end + unit, dtype)    # (never empty: the arena has an address)
        start = (-memory.ctypes.data) % ALIGNMENT // dtype.itemsize
        self.arena = memory[start:start + end]
        self._offsets = offsets
        self._views = [None] * len(vars)    # (made when first asked for: _view)

        for var, value in tape.consts.items():
            self._check_var(var, "a constant")
            value = np.asarray(value)
            if value.shape != var.shape:
                raise ValueError(f"the constant {var!r} holds an array of shape {value.shape}")
            self._view(var)[...] = value

        code = np.zeros((len(instrs), CODE_WIDTH), np.int64)
        indices = []
        self._callbacks = []
        self._ufunc_capsules = []
        cdef Py_ssize_t n_indices = 0, column
        cdef int64_t[:, ::1] code_rows = code
        given = set(tape.inputs) | set(tape.consts)
        slots = offsets.tolist()
        for s, instr in enumerate(instrs):
            for out in instr.outs:
                if out in given:
                    raise ValueError(f"instruction {s} ({instr!r}) writes the input or "
                                     f"constant {out!r}")
            row = [0] * CODE_WIDTH    # (a list: cheaper to fill than a row of `code`)
            index = self._lower(s, instr, row, expected_at.get(s, 0), n_indices, slots)
            for column in range(CODE_WIDTH):
                code_rows[s, column] = row[column]
            if index is not None:
                indices.append(index)
                n_indices += index.size
        _pair_sines(code)
        self._code = code
        self._runs = _blocked_runs(code, block)
        self._runs.flags.writeable = False
        self._indices = np.concatenate(indices) if indices else np.zeros(1, np.int64)
        self._code.flags.writeable = False
        self._indices.flags.writeable = False
        self._ufunc_loops = np.zeros(max(1, len(self._ufunc_capsules)) * sizeof(ufunc_loop),
                                     np.uint8)
        cdef ufunc_loop* loops = <ufunc_loop*><size_t>self._ufunc_loops.ctypes.data
        cdef ufunc_call_info* info
        for j, capsule in enumerate(self._ufunc_capsules):
            info = <ufunc_call_info*>PyCapsule_GetPointer(capsule, "numpy_1.24_ufunc_call_info")
            loops[j].loop = info.strided_loop
            loops[j].context = info.context
            loops[j].auxdata = info.auxdata

        cdef const int64_t[:, ::1] code_view = self._code
        cdef const int64_t[::1] index_view = self._indices
        cdef const int64_t[:, ::1] runs_view = self._runs
        self.state.code = &code_view[0, 0] if len(instrs) else NULL
        self.state.n_instr = len(instrs)
        self.state.indices = &index_view[0]
        self.state.arena_size = end
        self.state.single = dtype == np.float32
        self.state.arena = <void*><size_t>self.arena.ctypes.data
        self.state.callbacks = <PyObject*>self._callbacks
        self.state.ufunc_loops = loops
        self.state.runs = &runs_view[0, 0] if len(instrs) else NULL

    def _check_var(self, var, what):
        vars = self.tape.vars
        if not (0 <= var.number < len(vars) and vars[var.number] is var):
            raise ValueError(f"{what} {var!r} is not a Var of this tape")

    def _check_vars(self, instr, Py_ssize_t s):
        # (the message is built only on failure: lowering a long tape checks many Vars)
        vars = self.tape.vars
        n = len(vars)
        for var in instr.args + instr.outs:
            number = var.number
            if not (0 <= number < n and vars[number] is var):
                self._check_var(var, f"instruction {s} ({instr!r}) uses")

    def _lower(self, Py_ssize_t s, instr, list row, Py_ssize_t expected_at,
               Py_ssize_t n_indices, list slots):
        """Fill `row` of the code table from instr (`slots`: every Var's offset); return
        its indices (gather, scatter_add) or None."""
        kind, args, outs, params = instr.kind, instr.args, instr.outs, instr.params
        if kind not in KIND_CODES:
            raise ValueError(f"instruction {s}: unknown kind {kind!r}")
        row[KIND] = KIND_CODES[kind]
        entry = _tape_kind_table.BY_NAME[kind]

        def fail(message):
            return ValueError(f"instruction {s} ({instr!r}): {message}")

        if kind == "python":
            function = params.get("function")
            if not callable(function):
                raise fail("its function is not callable")
            row[P0] = len(self._callbacks)
            self._callbacks.append(_python_callback(
                function, [(self._readonly_view(a), a) for a in args],
                [(self._view(o), o) for o in outs], params.get("where") or repr(function)))
            return None
        if kind == "guard":
            if len(args) != 1 or outs:
                raise fail("a guard reads one Var and writes none")
            a = args[0]
            try:
                expected = np.broadcast_to(np.asarray(params["expected"]), a.shape)
            except ValueError:
                raise fail(f"its expected values do not fit the shape {a.shape}") from None
            self.arena[expected_at:expected_at + a.size] = expected.ravel()
            row[A], row[A_SIZE] = slots[a.number], a.size
            row[B], row[B_SIZE] = expected_at, a.size
            return None

        if len(outs) != 1:
            raise fail("an instruction of this kind writes one Var")
        out = outs[0]
        row[OUT], row[OUT_SIZE] = slots[out.number], out.size
        if kind == "zeros":
            return None
        if kind == "compare":
            ufunc = params.get("ufunc")
            if ufunc not in COMPARISON_CODES:
                raise fail(f"{ufunc!r} is not a comparison of cyad._tape.COMPARISONS")
            row[OP] = COMPARISON_CODES[ufunc]
            arity = _tape.COMPARISONS[ufunc]
        else:
            arity = entry.operands
        if len(args) != arity:
            raise fail(f"it reads {len(args)} Vars, not {arity}")
        for column, size_column, var in zip((A, B, C), (A_SIZE, B_SIZE, C_SIZE), args):
            row[column], row[size_column] = slots[var.number], var.size

        if entry.rule is not None:
            rules = _rule_table.UNARY_RULES if entry.rule == "unary" else _rule_table.BINARY_RULES
            op = params.get("op")
            if not isinstance(op, (int, np.integer)) or not 0 <= op < len(rules):
                raise fail(f"{op!r} is not the position of a rule of the rule table")
            row[OP] = op
            ufunc = NUMPY_LOOPS[np.dtype(self.tape.dtype)].get(kind, {}).get(rules[op].name)
            if ufunc is not None:
                capsule = _numpy_loop(ufunc, np.dtype(self.tape.dtype))
                if capsule is not None:
                    self._ufunc_capsules.append(capsule)
                    row[P0] = len(self._ufunc_capsules)
                    row[P1] = (kind, rules[op].name) in RECIPROCAL_SQUARED
            if not row[P0] and (kind, rules[op].name) in SINE_SHIFTS:
                row[P2] = 1 + SINE_SHIFTS[kind, rules[op].name]
        if entry.elementwise:
            _check_modular(args, out, fail)
            return None

        a = args[0]
        if kind in ("gather", "scatter_add"):
            index = np.asarray(params.get("index"))
            if index.dtype.kind not in "iu":
                raise fail("its index is not an integer array")
            index = index.astype(np.int64).ravel()
            m = index.size
            # rows and row length of the side that is not indexed
            spread, packed = (a, out) if kind == "gather" else (out, a)
            if m == 0:
                if packed.size:
                    raise fail(f"no index, for {packed.size} elements")
            else:
                if packed.size % m:
                    raise fail(f"{packed.size} elements are not rows of {m} indices")
                rows = packed.size // m
                if rows and spread.size % rows:
                    raise fail(f"{spread.size} elements are not {rows} rows")
            run, step, largest, lead, count = _index_facts(index, kind == "gather")
            if m and rows and largest >= spread.size // rows:
                raise fail(f"an index reaches {largest} in rows of {spread.size // rows}")
            row[P0], row[P1] = n_indices, m
            row[P2], row[P3] = run, step
            if run == PADDED:   # its lead and count after its indices (the .pxd says so)
                return np.concatenate([index, np.array([lead, count], np.int64)])
            return index
        if kind == "sum_inner":
            k = int(params["k"])
            if k < 0 or a.size != out.size * k:
                raise fail(f"{a.size} elements are not {out.size} sums of {k}")
            row[P0] = k
            return None
        # matmul
        m, k, n = int(params["m"]), int(params["k"]), int(params["n"])
        if min(m, k, n) < 0:
            raise fail(f"a matrix of {m, k, n}")
        batch = out.size // (m * n) if m * n else 0
        b = args[1]
        if out.size != batch * m * n or a.size not in (m * k, batch * m * k) \
                or b.size not in (k * n, batch * k * n):
            raise fail(f"{a.size} and {b.size} elements are not (m, k) = {m, k} and "
                       f"(k, n) = {k, n} matrices for {out.size} elements of output")
        row[P0], row[P1], row[P2] = m, k, n
        return None

    def _view(self, var):
        """var's slot in the arena, shaped."""
        view = self._views[var.number]
        if view is None:
            start = self._offsets[var.number]
            view = self._views[var.number] = self.arena[start:start + var.size].reshape(var.shape)
        return view

    def _readonly_view(self, var):
        view = self._view(var).view()
        view.flags.writeable = False
        return view

    # -- use ---------------------------------------------------------------------------

    @property
    def n_instr(self):
        """The number of instructions."""
        return self.state.n_instr

    @property
    def code(self):
        """The code table (read-only): n_instr rows of the columns of the .pxd's Column."""
        return self._code

    @property
    def indices(self):
        """The index array of every gather and scatter_add (read-only)."""
        return self._indices

    def offset(self, var):
        """Where `var`'s slot starts in the arena, in elements."""
        self._check_var(var, "the Var")
        return int(self._offsets[var.number])

    def value(self, var):
        """`var`'s slot: a writable view of the arena of var's shape (a bool Var holds
        0.0 and 1.0). With `keep`, a Var's slot may be another Var's after its last
        reader ran."""
        self._check_var(var, "the Var")
        return self._view(var)

    def set_input(self, Py_ssize_t i, array):
        """Copy `array` (of input i's shape) into the slot of the tape's input i."""
        var = self.tape.inputs[i]
        array = np.asarray(array)
        if array.shape != var.shape:
            raise ValueError(f"input {i} has the shape {var.shape}, not {array.shape}")
        np.copyto(self._view(var), array, casting="same_kind")

    def run(self, Py_ssize_t start=0, stop=None):
        """Run instructions [start, stop) (stop None: to the end).

        Returns 0 when all ran, or s > 0 when the guard at instruction s - 1 failed
        (no later instruction ran); raises what a python instruction raised.
        """
        cdef Py_ssize_t end = self.state.n_instr if stop is None else stop
        cdef int status
        if not 0 <= start <= end <= self.state.n_instr:
            raise ValueError(f"instructions [{start}, {end}) of a tape of "
                             f"{self.state.n_instr}")
        with nogil:
            status = replay_run(&self.state, start, end)
        if status < 0:
            raise_set_exception()
        return status


cdef int raise_set_exception() except -1:
    # the exception a python instruction raised is set: returning -1 propagates it
    return -1


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
        end = replay.runs[3 * s]
        if end > s + 1:
            if end > stop:
                end = stop
            if end > s + 1:
                if threads > 1 and replay.runs[3 * s + 1] == n and n >= _PARALLEL_FROM:
                    split_elementwise(replay, s, end, replay.runs[3 * s + 2], threads)
                else:
                    run_blocked(replay, arena, s, end, replay.runs[3 * s + 1],
                                replay.runs[3 * s + 2])
                done = end
                continue
        kind = row[KIND]
        if threads > 1 and is_elementwise(kind) and n >= _PARALLEL_FROM and full_or_single(row):
            # (parts of 64 elements' multiples: each starts on a 64-byte boundary as the
            # slot does, so that a SIMD loop treats every element as in the whole run)
            split_elementwise(replay, s, s + 1, ((n + threads - 1) // threads + 63) // 64 * 64,
                              threads)
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


cdef void run_blocked(const tape_replay* replay, real* arena, Py_ssize_t first,
                      Py_ssize_t end, Py_ssize_t period, Py_ssize_t block) noexcept nogil:
    # instructions [first, end) of a blocked run (_blocked_runs), `block` elements of each
    # in turn, blocks within each stretch of `period` elements of the output
    cdef Py_ssize_t n = replay.code[first * CODE_WIDTH + OUT_SIZE], base, j, count, s
    base = 0
    while base < n:
        j = 0
        while j < period:
            count = period - j if period - j < block else block
            s = first
            while s < end:
                s += elementwise_part(replay.code + s * CODE_WIDTH, s + 1 < end, arena,
                                      replay.ufunc_loops, base, j, count, period)
            j += count
        base += period


# -- large work split across threads (cyad/_threads.pyx) -----------------------------------
#
# An elementwise instruction, or a blocked run whose operands are all of the output's size
# or single numbers, of at least PARALLEL_FROM elements, is split into units of elements
# (a blocked run's blocks; an instruction's share of the threads), contiguous ranges of
# units running on the threads: each element is computed by the loop that computes it in
# a serial run. A sum of at least PARALLEL_FROM numbers is always one of SUM_PIECES pieces
# at most, each summed as a short sum is and the pieces added in order; the pieces, or the
# rows of several sums, run on the threads. Below PARALLEL_FROM, waking a thread (some
# microseconds) costs about what a part would save.
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


cdef void elementwise_units(const elementwise_split* job, real* arena,
                            Py_ssize_t part) noexcept nogil:
    # the part's units: elements [u * block, (u + 1) * block) of every instruction in turn
    cdef Py_ssize_t u = job.units * part // job.parts
    cdef Py_ssize_t last = job.units * (part + 1) // job.parts, j, count, s
    while u < last:
        j = u * job.block
        count = job.n - j if job.n - j < job.block else job.block
        s = job.first
        while s < job.end:
            s += elementwise_part(job.replay.code + s * CODE_WIDTH, s + 1 < job.end, arena,
                                  job.replay.ufunc_loops, 0, j, count, job.n)
        u += 1


cdef void elementwise_task(void* context, Py_ssize_t part) noexcept nogil:
    cdef const elementwise_split* job = <const elementwise_split*>context
    if job.replay.single:
        elementwise_units(job, <float*>job.replay.arena, part)
    else:
        elementwise_units(job, <double*>job.replay.arena, part)


cdef void split_elementwise(const tape_replay* replay, Py_ssize_t first, Py_ssize_t end,
                            Py_ssize_t block, int threads) noexcept nogil:
    cdef elementwise_split job
    job.replay = replay
    job.first = first
    job.end = end
    job.n = replay.code[first * CODE_WIDTH + OUT_SIZE]
    job.block = block
    job.units = (job.n + block - 1) // block
    job.parts = threads if threads < job.units else job.units
    run_parallel(elementwise_task, &job, job.parts, threads)


cdef inline void part_of(const int64_t* row, int64_t* part, Py_ssize_t base, Py_ssize_t j,
                         Py_ssize_t count, Py_ssize_t period) noexcept nogil:
    # part: row, for the output's elements [base + j, base + j + count) alone (a full
    # operand's or a period's elements there, a single number as it is)
    cdef int column
    memcpy(part, row, CODE_WIDTH * sizeof(int64_t))
    part[OUT] = row[OUT] + base + j
    part[OUT_SIZE] = count
    for column in range(A, C + 1, 2):
        if row[column + 1] > 1:    # (its size's column follows)
            part[column] = row[column] + j + (0 if row[column + 1] == period else base)
            part[column + 1] = count


cdef int elementwise_part(const int64_t* row, bint next_runs, real* arena,
                          const ufunc_loop* loops, Py_ssize_t base, Py_ssize_t j,
                          Py_ssize_t count, Py_ssize_t period) noexcept nogil:
    # elements [base + j, base + j + count) of an instruction of a blocked run, by the
    # loops of whole instructions on a row of that part; and of the next instruction
    # where it is a sine paired with this one and runs too: the instructions done
    cdef int64_t part[CODE_WIDTH]
    cdef int64_t second[CODE_WIDTH]
    part_of(row, part, base, j, count, period)
    if is_unary_column(row[KIND]) and row[P0]:
        numpy_unary(part, arena, loops + row[P0] - 1)
    elif is_unary_column(row[KIND]) and row[P2]:
        if row[P3] and next_runs:
            part_of(row + CODE_WIDTH, second, base, j, count, period)
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
include "cyad/_tape_replay_rules.pxi"


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
    if m == 0 or row[OUT_SIZE] == 0:
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
