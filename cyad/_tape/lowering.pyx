"""A tape lowered once to flat buffers, for the compiled replay (cyad/_tape/replay.pyx).

`Replay(tape)` lowers a `cyad._tape.program.Tape` once, to

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
- slices as offsets: a gather of a contiguous stretch of its operand (`x[1:]`,
  `x[:-1]`, one row) writes nothing: its output's slot is that stretch of the operand's
  (whose slot then lives as long as the slice's readers), and its row is ALIASED;
- a code table: an int64 array of one row per instruction, CODE_WIDTH columns
  (cyad/_tape/replay.pxd names them): KIND, OP, OUT, OUT_SIZE, then A, A_SIZE, B,
  B_SIZE, C, C_SIZE (the operands' offsets and sizes, in elements of the arena; args in
  the tape's order, (c, a, b) of a select in A, B, C), and P0..P3, a kind's parameters
  (gather, scatter_add: its indices' place and count, and whether they are an
  arithmetic progression, of what step; python: its callback; guard: B, B_SIZE are the
  expected values; any other kind: what its rules' `lower` gives, in
  cyad/_tape/instructions.py), and LOCAL (below);
- blocked runs (_blocked_runs): a table of where runs of elementwise instructions over
  large Vars start and end, run block by block; given `keep`, a Var that one instruction
  of a run writes and only instructions of the same run read lives in the run's scratch,
  a block of it at a time (LOCAL, _run_locals): it never reaches memory, and has no slot;
- one int64 array of the indices of all gathers and scatters;
- a list of callbacks, one per python instruction: closures over views of the arena
  made here, so that a run makes no view. An entry with ``into(operands, results,
  **params)`` (the Fourier transforms' cores) makes its own, which computes into the
  output slots (with scratch buffers it allocates here) rather than returning arrays
  that are copied there.

`Replay.run` runs instructions [start, stop) through `replay_run`, whose status
cyad/_tape/replay.pyx describes.

An instruction's operands and form are read off its kind's row of
cyad/_tape/kind_table.py (the specification of every kind), its params by what they are
(an index array, a comparison's ufunc, a rule's op, a callback, expected values), and the
rest by its kind's rules (`lower`, cyad/_tape/instructions.py), and checked:
- The operand sizes of an elementwise instruction must each divide the output's and
  each other's (suffixes of one shape do); lowering raises ValueError otherwise, as it
  does for any inconsistent gather, scatter, sum or matmul size, an index beyond its
  row, or an output that is an input or a constant.
"""
import numpy as np

from libc.stdint cimport int64_t
from cpython.ref cimport PyObject
from cpython.pycapsule cimport PyCapsule_GetPointer

from cyad._rules import table as _rule_table
from cyad._tape import instructions as _tape_instructions, kind_table as _tape_kind_table, \
    program as _tape
# the code table's layout, the run's struct and entry point
from cyad._tape.replay cimport *
from cyad._tape.kinds cimport is_unary_column
from cyad._parallel.threads cimport replay_threads

# a kind's code is its position in the table (the generated enum's order)
KIND_CODES = {kind.name: code for code, kind in enumerate(_tape_kind_table.KINDS)}
# a kind's params, by name (its row's): those lowered here by what they are (an index
# array, a ufunc, a callback, expected values)
_PARAMS = {kind.name: frozenset(name.strip() for name in kind.params.split(",") if name.strip())
           for kind in _tape_kind_table.KINDS}
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
           "P3": P3, "LOCAL": LOCAL}

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

# The sin and cos columns not in NUMPY_LOOPS, by cyad/_tape/vector_sine.h's vectorised loops:
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


def _set_params(list row, params):
    # P0.. of a row: the values a kind's rules' `lower` gave
    if len(params) > 4:
        raise ValueError(f"{len(params)} params: a row has P0..P3")
    for column, value in zip((P0, P1, P2, P3), params):
        row[column] = value


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


def _own_slots(vars, alias_of, Py_ssize_t unit):
    """Every Var's offset in a slot of its own (a slice's: in its root's), and the end of
    the last."""
    offsets = np.zeros(len(vars), np.int64)
    cdef Py_ssize_t end = 0
    for number, var in enumerate(vars):
        if number in alias_of:
            continue
        offsets[number] = end
        end += _rounded(var.size, unit)
    for number, (root, first) in alias_of.items():
        offsets[number] = offsets[root] + first
    return offsets, end


def _shared_slots(tape, instrs, keep, starts, alias_of, local_at, Py_ssize_t unit):
    """Every Var's offset, a slot passing to a later Var once its last reader has run;
    and the end of the last slot.

    Slots of their own: the inputs, outputs and constants, the Vars of `keep`, and any
    Var that no instruction or more than one writes. A run may start at any of `starts`
    (and at 0) after earlier runs: a Var written before a start and read after it lives
    to the end. An instruction's outputs take their slots before its operands free
    theirs, so that no output overlaps an operand. A slice (alias_of) is a stretch of
    its root's slot, whose readers read the root; a Var of a run's scratch (local_at)
    has its offset there and no slot.
    """
    vars = tape.vars
    cdef Py_ssize_t n = len(instrs), n_vars = len(vars), s, number, start, size, end = 0
    cdef Py_ssize_t[::1] written = np.full(n_vars, -1, np.intp)   # the instruction writing
    cdef Py_ssize_t[::1] last = np.full(n_vars, -1, np.intp)      # each Var (-2: several),
    cdef Py_ssize_t[::1] slot = np.zeros(n_vars, np.intp)         # its last reader, offset
    cdef Py_ssize_t[::1] rounded = np.empty(n_vars, np.intp)
    cdef unsigned char[::1] own = np.zeros(n_vars, np.uint8)
    cdef unsigned char[::1] none = np.zeros(n_vars, np.uint8)     # no slot: slices, locals
    for number in range(n_vars):
        size = vars[number].size
        rounded[number] = (size + unit - 1) // unit * unit
    for number in alias_of:
        none[number] = 1
    for number in local_at:
        none[number] = 1
    for s in range(n):
        instr = instrs[s]
        for var in instr.args:
            number = var.number
            if number in alias_of:
                number = alias_of[number][0]
            last[number] = s
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
        if (own[number] or written[number] < 0) and not none[number]:
            own[number] = 1
            slot[number] = end
            end += rounded[number]
    free = {}      # rounded size -> offsets of free slots
    for s in range(n):
        instr = instrs[s]
        for var in instr.outs:
            number = var.number
            if own[number] or none[number]:
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
            if number in alias_of:
                number = alias_of[number][0]
            if last[number] == s and not own[number] and not none[number]:
                last[number] = -3
                free.setdefault(rounded[number], []).append(slot[number])
        for var in instr.outs:
            number = var.number
            if last[number] < s and last[number] != -3 and not own[number] \
                    and not none[number]:
                last[number] = -3
                free.setdefault(rounded[number], []).append(slot[number])
    for number, (root, first) in alias_of.items():
        slot[number] = slot[root] + first
    for number, at in local_at.items():
        slot[number] = at
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
# so that what one writes the next reads from cache rather than memory, and the Vars
# that live within a run stay in its scratch (_run_locals). Blocks of BLOCK_BYTES,
# measured on a replay of Rosenbrock's gradient (slices, a sum and pads in runs) and of
# the JVP of sin(x) exp(-x^2) + x^3, float64, 2-core AMD EPYC (512 KB of L2): at 10**6
# elements, blocks of 16 and 32 KB took 1.12 and 1.08x the time of 64 KB (the JVP:
# 1.01x; 128 KB: 1.03x), 512 KB (the blocks before the scratch) 1.25x; at 10**5, 1.07,
# 1.03 and 1.68x; each instruction whole (block=0), 1.9x (Rosenbrock) and 2.0x (the JVP)
# at 10**6.
BLOCK_BYTES = 65536
BLOCKED_BY = 4


def default_block(dtype):
    """The elements of a block of a blocked run, in `dtype`."""
    return BLOCK_BYTES // np.dtype(dtype).itemsize


def _facts_of(instr, bint gather):
    """_index_facts of a gather's or scatter's index (None where it is not integers)."""
    index = np.asarray(instr.params.get("index"))
    if index.dtype.kind not in "iu":
        return None
    return _index_facts(np.ascontiguousarray(index.ravel(), np.int64), gather)


def _run_role(instr, Py_ssize_t s, aliased):
    """What instruction s can be in a blocked run, and its size: ("elementwise", n) of an
    elementwise kind; ("alias", 0) of a slice's gather (nothing to do); ("fill", n) of a
    gather of one number into n; ("pad", n) of a scatter_add of one row into a
    contiguous stretch of n > |a| elements (zeros around it); ("sum", k) of one sum of
    all k numbers of its operand; (None, 0) otherwise."""
    kind = instr.kind
    entry = _tape_kind_table.BY_NAME.get(kind)
    if s in aliased:
        return "alias", 0
    if entry is None or len(instr.outs) != 1:
        return None, 0
    out = instr.outs[0]
    if entry.elementwise:
        return "elementwise", out.size
    if kind in ("gather", "scatter_add") and len(instr.args) == 1:
        a = instr.args[0]
        facts = _facts_of(instr, kind == "gather")
        if facts is None:
            return None, 0
        run, step, largest, _, count = facts
        if kind == "gather" and a.size == 1 and count == out.size and run == PROGRESSION \
                and largest == 0:
            return "fill", out.size
        if kind == "scatter_add" and run == PROGRESSION and (step == 1 or count == 1) \
                and 0 < count == a.size < out.size and largest < out.size:
            return "pad", out.size
    if kind == "sum_inner" and out.size == 1 and len(instr.args) == 1:
        return "sum", instr.args[0].size
    return None, 0


def _blocked_runs(instrs, aliased, Py_ssize_t block, breaks=()):
    """(end, period, block, whole) for every instruction: instructions [s, end) form a
    blocked run (end 0: s is in none) over N >= BLOCKED_BY * block elements, run block
    by block (whole 0: no Var lives in its scratch, no sum is in it, so that a run may
    start or stop inside it; _run_locals sets it).

    A run starts at an elementwise, fill or pad instruction (_run_role) of N elements
    and takes the next ones while they are: elementwise, fill or pad of N elements whose
    operands (an elementwise kind's) are N elements, a period of them broadcast (P
    elements, P dividing N) or single numbers; slices' gathers (nothing to do) of a Var
    the run does not write (a block of a slice may lie ahead of the block the run is
    at); sums of all N numbers of an operand, whose result no later instruction of the
    run reads.
    No run holds an instruction of `breaks` but as its first.

    Blocks never cross a multiple of P. A block's elements of an output depend on the
    same elements of the operands alone (or on an operand of P elements, or of a pad,
    which no instruction of the run writes: its outputs all have N elements but sums'),
    and slots that pass between Vars (_shared_slots) are whole slots of N elements,
    read and rewritten element by element in the run's order: running the run block by
    block gives the numbers of running it instruction by instruction, but for a sum in
    a run, whose blocks' sums are added in order (rounded otherwise than the pieces of
    a whole sum).
    """
    cdef Py_ssize_t n_instr = len(instrs), s, first, n, period, size
    runs = np.zeros((n_instr, RUN_COLUMNS), np.int64)
    roles = [_run_role(instr, s, aliased) for s, instr in enumerate(instrs)]
    breaks = frozenset(breaks)
    first = 0
    while first < n_instr:
        role, n = roles[first]
        if role not in ("elementwise", "fill", "pad") or block <= 0 \
                or n < BLOCKED_BY * block:
            first += 1
            continue
        period = n
        sums = set()      # the results of the run's sums
        written = set()   # the Vars the run writes
        s = first
        while s < n_instr and (s == first or s not in breaks):
            instr = instrs[s]
            role, size = roles[s]
            if role is None or size != n and role != "alias" \
                    or any(var.number in sums for var in instr.args) \
                    or role == "alias" and instr.args[0].number in written:
                break
            written.update(var.number for var in instr.outs)
            if role == "sum":
                sums.add(instr.outs[0].number)
            elif role == "elementwise":
                for var in instr.args[:3]:
                    if var.size > 1 and var.size != n:
                        if period != n and var.size != period:
                            break
                        period = var.size
                else:
                    s += 1
                    continue
                break
            s += 1
        if s - first >= 2:
            runs[first:s, 0] = s
            runs[first:s, 1] = period
            runs[first:s, 2] = block
            first = s
        else:
            first += 1
    return runs


def slice_aliases(tape, instrs, keep):
    """{the output Var's number: (the root Var's number, first)} of every gather whose
    output is the stretch of its operand from `first` on (index an arithmetic progression
    of step 1, one row; an alias of an alias is one of the first's root), and the
    positions of those gathers.

    Not aliased: an output of the tape or of `keep` (read between runs), or an operand
    that more than one instruction writes (a slot rewritten while the slice is read).
    """
    writers = {}
    for instr in instrs:
        for var in instr.outs:
            writers[var.number] = writers.get(var.number, 0) + 1
    kept = {var.number for var in tape.outputs}
    kept.update(var.number for var in keep or ())
    alias_of = {}
    aliased = set()
    for s, instr in enumerate(instrs):
        if instr.kind != "gather" or len(instr.args) != 1 or len(instr.outs) != 1:
            continue
        a, out = instr.args[0], instr.outs[0]
        if out.number in kept or writers.get(a.number, 0) > 1 or out.size == 0 \
                or out.dtype != a.dtype:
            continue
        facts = _facts_of(instr, True)
        if facts is None:
            continue
        run, step, largest, _, count = facts
        # one row (of out's size) of consecutive indices within a
        if run != PROGRESSION or not (step == 1 or count == 1) or count != out.size \
                or largest >= a.size:
            continue
        first = largest - count + 1
        root, at = alias_of.get(a.number, (a.number, 0))
        alias_of[out.number] = (root, at + first)
        aliased.add(s)
    return alias_of, aliased


def _run_locals(tape, instrs, runs, keep, alias_of, Py_ssize_t unit):
    """{Var number: offset in a part's scratch} of the Vars that live within a blocked run,
    and the scratch a part needs (in elements); marks runs' column whole where a run holds
    such Vars or a sum.

    Such a Var (none when keep is None) is written by one instruction of a run and read
    by instructions of the same run alone (its block is read in the block it was
    written); not an input, output, constant, kept Var or the root of a slice. Within a
    run, a Var's scratch slot (of the run's block) passes to a later Var once its last
    reader has run, an instruction's outputs taking theirs before its operands free
    theirs.
    """
    cdef Py_ssize_t s, first, end, n_instr = len(instrs), size = 0
    if keep is None:    # (every Var keeps a slot: none in the scratch)
        fixed = {var.number for var in tape.vars}
    else:
        fixed = {var.number for group in (tape.inputs, tape.outputs, tape.consts, keep)
                 for var in group}
    fixed.update(root for root, _ in alias_of.values())
    writer, readers = {}, {}
    for s, instr in enumerate(instrs):
        for var in instr.args:
            number = alias_of.get(var.number, (var.number, 0))[0]
            readers.setdefault(number, []).append(s)
        for var in instr.outs:
            writer[var.number] = -1 if var.number in writer else s
    local_at = {}
    first = 0
    while first < n_instr:
        end = runs[first, 0]
        if not end:
            first += 1
            continue
        rounded = _rounded(runs[first, 2], unit)
        free, used, last, whole = [], 0, {}, False
        for s in range(first, end):
            instr = instrs[s]
            out = instr.outs[0].number
            if out in alias_of:
                continue
            whole = whole or instr.kind == "sum_inner"
            reads = readers.get(out, ())
            if out not in fixed and writer[out] == s and instr.kind != "sum_inner" \
                    and all(first < r < end for r in reads):
                if free:
                    local_at[out] = free.pop()
                else:
                    local_at[out] = used
                    used += rounded
                last[out] = max(reads, default=s)
            for var in instr.args + instr.outs:
                if last.get(var.number) == s:
                    del last[var.number]
                    free.append(local_at[var.number])
        if used or whole:
            runs[first:end, 3] = 1
        size = max(size, used)
        first = end
    return local_at, size


def _blocks(run, Py_ssize_t n):
    """The blocks of a blocked run over n elements, of row (end, period, block, whole):
    its n / period stretches of ceil(period / block) each."""
    cdef Py_ssize_t period = run[1], block = run[2]
    return n // period * ((period + block - 1) // block)


def _local_bits(instr, local_at):
    """Column LOCAL of an instruction of a blocked run: which of its Vars are in the
    scratch (an operand absent from a row is not: zeros and compare read fewer)."""
    bits = LOCAL_OUT if instr.outs[0].number in local_at else 0
    for bit, var in zip((LOCAL_A, LOCAL_B, LOCAL_C), instr.args):
        if var.number in local_at:
            bits |= bit
    return bits


cdef class Replay:
    """A tape lowered to an arena, a code table and callbacks, replayed in compiled code.

    Parameters
    ----------
    tape : cyad._tape.program.Tape
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
        block by block, `block` elements of each instruction in turn (_blocked_runs),
        and with `keep` the Vars that live within a run in its scratch; 0: each
        instruction over its whole output. The default: BLOCK_BYTES of the tape's dtype.
        A run holding Vars in its scratch runs whole: [start, stop) of `run` must not
        cut it.

    Notes
    -----
    The module's docstring describes the buffers, the code table and the status of a run.
    """

    def __init__(self, tape, keep=None, starts=(), block=None):
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

        # slices, blocked runs and the Vars in their scratch; the slots: every Var
        # (shared by liveness when `keep` is given), then the expected values of every
        # guard, then the scratch of every part
        cdef Py_ssize_t block_size = default_block(dtype) if block is None else block
        if keep is not None:
            keep = list(keep)
            for var in keep:
                self._check_var(var, "the Var to keep")
            for start in starts:
                if not 0 <= start <= len(instrs):
                    raise ValueError(f"a run cannot start at instruction {start} of "
                                     f"{len(instrs)}")
        alias_of, aliased = slice_aliases(tape, instrs, keep)
        runs = _blocked_runs(instrs, aliased, block_size, starts)
        local_at, scratch_size = _run_locals(tape, instrs, runs, keep, alias_of, unit)
        if keep is None:
            offsets, end = _own_slots(vars, alias_of, unit)
        else:
            offsets, end = _shared_slots(tape, instrs, keep, starts, alias_of, local_at,
                                         unit)
        self._local = frozenset(local_at)
        expected_at = {}
        for s, instr in enumerate(instrs):
            if "expected" in _PARAMS.get(instr.kind, ()):     # (a guard)
                expected_at[s] = end
                end += _rounded(instr.args[0].size, unit)
        # a part per thread of a run split across them (at most the threads of now)
        cdef Py_ssize_t scratch_parts = max(1, replay_threads()) if scratch_size else 0
        self.state.scratch = end
        self.state.scratch_size = scratch_size
        self.state.scratch_parts = scratch_parts
        end += scratch_parts * scratch_size
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
        cdef Py_ssize_t n_indices = 0, column, n_partials = 0
        cdef int64_t[:, ::1] code_rows = code
        given = set(tape.inputs) | set(tape.consts)
        slots = offsets.tolist()
        for s, instr in enumerate(instrs):
            for out in instr.outs:
                if out in given:
                    raise ValueError(f"instruction {s} ({instr!r}) writes the input or "
                                     f"constant {out!r}")
            row = [0] * CODE_WIDTH    # (a list: cheaper to fill than a row of `code`)
            if s in aliased:
                row[KIND], row[P2] = KIND_CODES["gather"], ALIASED
                row[OUT], row[OUT_SIZE] = slots[instr.outs[0].number], instr.outs[0].size
                row[A], row[A_SIZE] = slots[instr.args[0].number], instr.args[0].size
                index = None
            else:
                index = self._lower(s, instr, row, expected_at.get(s, 0), n_indices, slots)
                if runs[s, 3]:
                    row[LOCAL] = _local_bits(instr, local_at)
                if runs[s, 0] and instr.kind == "sum_inner":   # its blocks' sums' place
                    row[P1], row[P2] = n_partials, _blocks(runs[s], instr.args[0].size)
                    n_partials += row[P2]
            for column in range(CODE_WIDTH):
                code_rows[s, column] = row[column]
            if index is not None:
                indices.append(index)
                n_indices += index.size
        _pair_sines(code)
        self._code = code
        self._runs = runs
        self._runs.flags.writeable = False
        self._indices = np.concatenate(indices) if indices else np.zeros(1, np.int64)
        self._partials = np.zeros(max(1, n_partials), np.float64)
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
        cdef double[::1] partials_view = self._partials
        self.state.partials = &partials_view[0]

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
        its indices (gather, scatter_add) or None. What its row says is lowered here, by
        its params; what it does not, by its rules' `lower` (cyad/_tape/instructions.py)."""
        kind, args, outs, params = instr.kind, instr.args, instr.outs, instr.params
        if kind not in KIND_CODES:
            raise ValueError(f"instruction {s}: unknown kind {kind!r}")
        row[KIND] = KIND_CODES[kind]
        entry = _tape_kind_table.BY_NAME[kind]
        kind_rules = _tape_instructions.RULES[kind]
        names = _PARAMS[kind]

        def fail(message):
            return ValueError(f"instruction {s} ({instr!r}): {message}")

        if "function" in names:     # python: its callback
            function = params.get("function")
            if not callable(function):
                raise fail("its function is not callable")
            row[P0] = len(self._callbacks)
            into = getattr(params.get("entry"), "into", None)
            if into is not None and not any(a.dtype == bool for a in args):
                # the entry computes into the output slots itself
                self._callbacks.append(into([self._readonly_view(a) for a in args],
                                            [self._view(o) for o in outs],
                                            **params["params"]))
                return None
            self._callbacks.append(_python_callback(
                function, [(self._readonly_view(a), a) for a in args],
                [(self._view(o), o) for o in outs], params.get("where") or repr(function)))
            return None
        if "expected" in names:     # guard: its expected values
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
        if entry.operands == 0:     # (zeros: any args are not read, nor checked)
            _set_params(row, kind_rules.lower(instr, args, out, fail))
            return None
        if "ufunc" in names:        # compare
            ufunc = params.get("ufunc")
            if ufunc not in COMPARISON_CODES:
                raise fail(f"{ufunc!r} is not a comparison of cyad._tape.program.COMPARISONS")
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
            _set_params(row, kind_rules.lower(instr, args, out, fail))
            return None

        if "index" in names:        # gather, scatter_add
            a = args[0]
            index = np.asarray(params.get("index"))
            if index.dtype.kind not in "iu":
                raise fail("its index is not an integer array")
            index = index.astype(np.int64).ravel()
            m = index.size
            # rows and row length of the side that is not indexed
            spread, packed = (out, a) if kind_rules.scatters else (a, out)
            if m == 0:
                if packed.size:
                    raise fail(f"no index, for {packed.size} elements")
            else:
                if packed.size % m:
                    raise fail(f"{packed.size} elements are not rows of {m} indices")
                rows = packed.size // m
                if rows and spread.size % rows:
                    raise fail(f"{spread.size} elements are not {rows} rows")
            run, step, largest, lead, count = _index_facts(index, not kind_rules.scatters)
            if m and rows and largest >= spread.size // rows:
                raise fail(f"an index reaches {largest} in rows of {spread.size // rows}")
            row[P0], row[P1] = n_indices, m
            row[P2], row[P3] = run, step
            if run == PADDED:   # its lead and count after its indices (the .pxd says so)
                return np.concatenate([index, np.array([lead, count], np.int64)])
            return index
        _set_params(row, kind_rules.lower(instr, args, out, fail))
        return None

    def _view(self, var):
        """var's slot in the arena, shaped."""
        view = self._views[var.number]
        if view is None:
            if var.number in self._local:
                raise ValueError(f"{var!r} lives in a blocked run's scratch: it has no slot")
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
    def runs(self):
        """The blocked runs (read-only): n_instr rows (end, period, block, whole) of
        _blocked_runs, whole set by _run_locals."""
        return self._runs

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
        runs = self._runs
        for edge in (start, end):
            if 0 < edge < self.state.n_instr and runs[edge, 3] \
                    and runs[edge - 1, 0] == runs[edge, 0]:
                raise ValueError(f"instruction {edge} is inside a blocked run that runs "
                                 f"whole (from a start of the Replay on)")
        with nogil:
            status = replay_run(&self.state, start, end)
        if status < 0:
            raise_set_exception()
        return status


cdef int raise_set_exception() except -1:
    # the exception a python instruction raised is set: returning -1 propagates it
    return -1
