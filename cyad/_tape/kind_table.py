"""The tape's instruction kinds, each once: its name, its params, the Vars it reads, and
what it computes.

cyad/_tape/program.py's `Instr` holds a kind's name; its rules
(cyad/_tape/instructions.py) are its meaning in NumPy, its derivatives, its sparsity and
its lowering's checks. The build generates the replay's `Kind` enum (a kind's code is
its position here) and the tests of a code's family from this table
(tools/generate_rules.py with cyad/_tape/kinds.pxd.tp, as the rule code is generated
from cyad/_rules/table.py); the lowering (cyad/_tape/lowering.pyx) reads an
instruction's row. The build loads this module by its path: it imports nothing of cyad.

In the meanings, i runs over the output's elements; `op` is the rule's position in
cyad/_rules/table.py's UNARY_RULES or BINARY_RULES; `index` an int64 ndarray; |a| the
size of Var a. Operands of an elementwise kind broadcast modularly (cyad/_tape/program.py):
a[i % |a|].

Adding a kind: its row here, its rules in cyad/_tape/instructions.py and its loop in
cyad/_tape/replay.pyx; the instruction that emits it is part of recording a NumPy function
in cyad/_tape/trace.py.
"""
from typing import NamedTuple


class Kind(NamedTuple):
    name: str
    params: str            # its params (Instr.params' keys)
    operands: int | None   # the Vars it reads (None: by its params, compare and python)
    elementwise: bool      # out[i] from the operands' elements at i (modular broadcast)
    rule: str | None       # "unary" or "binary": a column of the rule `op` of that table
    meaning: str


KINDS = (
    Kind("unary", "op", 1, True, "unary", "out[i] = f(a[i]) of the unary rule op"),
    Kind("unary_d", "op", 1, True, "unary", "out[i] = f'(a[i])"),
    Kind("unary_d2", "op", 1, True, "unary", "out[i] = f''(a[i])"),
    Kind("binary", "op", 2, True, "binary", "out[i] = g(a[i % |a|], b[i % |b|]) of the "
         "binary rule op"),
    Kind("binary_da", "op", 2, True, "binary", "the partial of g in a, broadcast the same way"),
    Kind("binary_db", "op", 2, True, "binary", "the partial of g in b"),
    Kind("binary_daa", "op", 2, True, "binary", "the second partial of g in a"),
    Kind("binary_dab", "op", 2, True, "binary", "the second partial of g in a and b"),
    Kind("binary_dbb", "op", 2, True, "binary", "the second partial of g in b"),
    Kind("scale", "", 2, True, None, "out[i] = a[i % |a|] * b[i % |b|], but 0 where "
         "b[i % |b|] is 0: a partial times a tangent or cotangent, so that an infinite or NaN "
         "partial meets a zero direction as 0 (as the dual kernels' careful_product does: "
         "sqrt's slope at 0)"),
    Kind("compare", "ufunc", None, True, None, "out[i] = 1.0 or 0.0: a NumPy comparison or "
         "logical ufunc (a key of cyad/_tape/program.py's COMPARISONS, the value its arity) of "
         "a[i % |a|] and b[i % |b|] (b absent for the unary ones)"),
    Kind("select", "", 3, True, None, "out[i] = a[i % |a|] if c[i % |c|] != 0 else "
         "b[i % |b|]; args (c, a, b)"),
    Kind("copy", "", 1, True, None, "out[i] = a[i % |a|]"),
    Kind("gather", "index", 1, False, None, "out[l*m + i] = a[l*r + index[i]], or 0 where "
         "index[i] < 0; m = index.size, L = |out| / m rows, r = |a| / L"),
    Kind("scatter_add", "index", 1, False, None, "the transpose of gather: out = 0, then "
         "out[l*r + index[i]] += a[l*m + i]; m = index.size, L = |a| / m, r = |out| / L"),
    Kind("sum_inner", "k", 1, False, None, "out[j] = sum over t < k of a[j*k + t]"),
    Kind("matmul", "m, k, n", 2, False, None, "out[p] = a[p] @ b[p], an (m, k) by a (k, n) "
         "matrix for every p < |out| / (m*n), row-major; an operand of one matrix's size is "
         "the same matrix for every p"),
    Kind("zeros", "", 0, False, None, "out[i] = 0"),
    Kind("python", "function, entry, params, where", None, False, None, "outs = "
         "function(*args) run by NumPy with the GIL: a table entry's impl (`entry` and "
         "`params` say which; `where` names what f called, for errors)"),
    Kind("guard", "expected, where", 1, False, None, "no output: the replay stops, and the "
         "tape is recorded anew, unless a equals `expected` (an ndarray of a's shape) "
         "everywhere; `where` says what f did with a value"),
)

BY_NAME = {kind.name: kind for kind in KINDS}
