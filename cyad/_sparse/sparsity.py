"""Sparsity detection: which Jacobian and Hessian entries can be nonzero, read off a tape.

f is recorded once at x on tracer arrays (cyad/_tape/trace.py, the tape engine's recording,
guards included); nothing is replayed. Every element of every Var of the tape gets the
set of x's (flat) indices it depends on: a Var's sets are the rows of a CSR pattern of
shape (var.size, x.size), held as (indptr, indices), each row sorted and distinct (None:
it depends on nothing - a constant, a comparison, a mask). Each instruction is read as a
list of dependencies, one per operand its output depends on: the identity, a source
position per output element (modular broadcasting, a gather's index map), or a boolean
selection matrix S of shape (out.size, operand.size), S[i, j] when output element i
depends on operand element j (reductions, scatters, matmul). The output's sets are the
union over its operands of their rows taken by position (cyad/_sparse/index_sets.pyx gathers
and merges rows in compiled loops) or of S @ sets (a boolean sparse product is a union of
rows), as SparseConnectivityTracer.jl's gradient tracers propagate index sets, a whole
array per instruction. A Var's sets are dropped after the last instruction reading them.
Where f works on slices, the sets stay symbolic: `Bands` (cyad/_sparse/index_bands.py), a few
diagonals "row i holds stride * i + offset" on runs of rows, carried through elementwise
instructions, gathers whose index map is a few affine runs (a slice, a reversal, a slice
written into an array) and unions in O(bands) Python work; they become CSR rows (the
same sets) where another dependency needs them, and at the end.

Each kind's rules (cyad/_tape/instructions.py, whose docstring tables them) give its
dependencies (`dependencies`) and its second-order pairs (`second_order`); this
`_Propagation` is what they read and build with.

Hessian patterns (of a scalar f) use the same dependencies twice. Backwards, a boolean
mask per Var marks the elements the output depends on (reach = S.T @ reach); forwards,
with the sets, each nonlinear instruction contributes, at its reached elements, the
pairs of its operands' sets that its second partials couple (a * b: the cross term only;
sin(a): the pairs within a's; a * constant and the linear rules: none). The pairs are
listed row by row (`row_pairs`, in the upper triangle, with repeats) and made one
symmetric pattern at the end (`symmetric_pattern`); pairs of two Bands stay bands of
that pattern where their strides are +-1 (Rosenbrock's). A reach mask of every element
is _EVERY, no array. This equals SparseConnectivityTracer.jl's Hessian tracers
(first-order sets, second-order pair sets) propagated to the output, without storing
pair sets per element.

Patterns are global for the recorded branch: every rule is classified by whether a
partial is identically zero, never by its value at x, so the pattern contains the
nonzeros of the derivative at every x where the recorded guards hold (f's Python
control flow, the indices it read from values, argsort's orders, ... take the branch
they took at x). `maximum`, `minimum`, `where` and `clip` are instructions, not guards:
their patterns are the union of both branches. Constants (arrays f closes over) are
frozen in the tape, so their zeros count (a constant sparse matrix's pattern).

Local Jacobian patterns (`local=True`) hold at x alone: the unary, binary and select
instructions' dependencies are pruned where the rule's partial (the rule table's
first column, evaluated on the values at x) is zero, or where select's condition
picks the other side, and matmul uses every operand's zeros at x. Sums are not looked
into (a sum that cancels at x keeps its entries). Hessian patterns are global only.
"""
import functools
import math

import numpy as np

from cyad._sparse import index_bands as _index_bands
from cyad._sparse.index_bands import Bands
from cyad._sparse.index_sets import gather_rows, row_pairs, symmetric_pattern, union_rows
from cyad._reporting.progress import Progress
from cyad._tape.instructions import RULES
from cyad._tape.trace import Tracer, trace


def _scipy_sparse():
    try:
        import scipy.sparse
    except ImportError as error:   # pragma: no cover - SciPy is in the test extras
        raise ImportError("cyad: sparsity patterns are scipy.sparse arrays; install SciPy "
                          "(pip install scipy)") from error
    return scipy.sparse


# -- dependencies: the forms the kinds' rules give (cyad/_tape/instructions.py) -------------

def _selection(sparse, rows, columns, shape):
    """The boolean (shape) matrix with True at (rows, columns)."""
    return sparse.csr_array((np.ones(len(rows), bool), (rows, columns)), shape=shape)


# the most entries a batched dependency is made of (beyond, "all": a coarser pattern)
_BATCHED_ENTRIES = 10**7


def _batched(sparse, instr, axes):
    """The dependency of every output of an instruction that maps its operands along `axes`
    (negative) separately at each place along the other axes (a batch of transforms): each
    output element on the operands' elements at its own place; None (every element on
    every one) for a single transform, or where the operands' shapes do not say so."""
    out_shape = instr.outs[0].shape
    ndim = len(out_shape)
    axes = {axis % ndim for axis in axes} if ndim else set()
    others = [d for d in range(ndim) if d not in axes]
    shape = instr.args[0].shape
    batch = tuple(out_shape[d] for d in others)
    if (any(var.shape != shape for var in instr.args)
            or any(var.shape != out_shape for var in instr.outs) or len(shape) != ndim
            or any(shape[d] != out_shape[d] for d in others) or math.prod(batch) <= 1):
        return None
    per_output = instr.args[0].size // math.prod(batch)
    if instr.outs[0].size * per_output > _BATCHED_ENTRIES:
        return None

    def places(of):     # each element's place in the batch
        index = np.indices(of).reshape(ndim, -1)
        return np.ravel_multi_index(tuple(index[d] for d in others), batch)

    # the operand's elements grouped by place, a row of `per_output` per place
    grouped = np.argsort(places(shape), kind="stable").reshape(-1, per_output)
    columns = grouped[places(out_shape)].ravel()
    rows = np.repeat(np.arange(instr.outs[0].size), per_output)
    return _selection(sparse, rows, columns, (instr.outs[0].size, instr.args[0].size))


def _modular(size, operand):
    """An elementwise output of `size` on an operand read at i % |a|: None (the identity)
    or the source row of each output element."""
    return None if operand.size == size else _modular_source(size, operand.size)


@functools.lru_cache(maxsize=32)
def _modular_source(size, operand_size):
    # (a scalar constant meets most instructions: its source is made once)
    source = np.arange(size, dtype=np.int64) % max(operand_size, 1)
    source.flags.writeable = False
    return source


class _Sums:
    """sum_inner's dependency: output element i on the operand's elements i*k .. i*k+k-1
    (its selection matrix made only where the rows are explicit and more than one)."""

    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def selection(self, sparse, size, operand_size):
        columns = np.arange(size * self.k)
        return _selection(sparse, columns // max(self.k, 1), columns, (size, operand_size))


def _elementwise(instr, operands):
    size = instr.outs[0].size
    return [(position, _modular(size, instr.args[position])) for position in operands]


def _local_dependencies(instr, deps, values):
    """An elementwise instruction's dependencies pruned where its partial is zero at x
    (a NaN partial keeps its dependency): the side of maximum or where not taken,
    abs at 0, a product with a factor that is 0 at x."""
    from cyad._rules.arrays import binary_column, unary_column   # compiled; imported late

    size = instr.outs[0].size
    # the operands' values at x, repeated to `size` (modular broadcasting)
    operands = [np.resize(np.ravel(values[var]), size) for var in instr.args]
    op = instr.params.get("op")
    if instr.kind == "unary":
        partials = {0: unary_column("unary_d", op, operands[0])}
    elif instr.kind == "binary":
        partials = {0: binary_column("binary_da", op, *operands),
                    1: binary_column("binary_db", op, *operands)}
    else:       # select: the condition picks a side
        partials = {1: operands[0] != 0, 2: operands[0] == 0}
    pruned = []
    for position, dependency in deps:
        operand = instr.args[position]
        source = np.arange(size, dtype=np.int64) % max(operand.size, 1) \
            if dependency is None else dependency.copy()
        source[np.ravel(partials[position]) == 0] = -1
        pruned.append((position, source))
    return pruned


# -- index sets: (indptr, indices) of a CSR pattern, rows sorted and distinct ---------------

def _as_matrix(sparse, sets, n):
    indptr, indices = sets
    return sparse.csr_array((np.ones(indices.size, bool), indices, indptr),
                            shape=(indptr.size - 1, n))


def _of_matrix(matrix):
    matrix = matrix.tocsr()
    matrix.sum_duplicates()     # (sorts each row's indices, and merges repeats)
    return matrix.indptr.astype(np.int64), matrix.indices.astype(np.int64)


def _explicit(sets):
    """A Var's sets as CSR rows (Bands made explicit)."""
    return sets.rows() if isinstance(sets, Bands) else sets


def _all_rows(sets, size, n):
    """`size` rows, each the union of every row of every pattern in `sets` (of x's n
    indices)."""
    present = [s for s in sets if s is not None]
    if not present or size == 0:
        return None
    mask = np.zeros(n, bool)
    for s in present:
        if isinstance(s, Bands):
            s.mark(mask)
        else:
            mask[s[1]] = True
    union = np.flatnonzero(mask)
    return np.arange(size + 1, dtype=np.int64) * union.size, np.tile(union, size)


class _Every:
    """The reach of a Var whose every element the output depends on: no mask made."""

    def any(self):
        return True

    def all(self):
        return True


_EVERY = _Every()


def _mask(reached, size):
    return np.ones(size, bool) if reached is _EVERY else reached


def _sharing(instr):
    """The outputs an instruction's dependencies are of: a primitive's all (their shapes
    alike), another kind's first."""
    return instr.outs if instr.kind == "python" else instr.outs[:1]


class _Propagation:
    """A recorded tape, each instruction's dependencies, and the index sets propagated
    through them (each Var's sets dropped after the last instruction that reads them,
    so that memory holds a few arrays' sets at a time, not the tape's). A Var's sets
    are Bands (cyad/_sparse/index_bands.py) while slices and elementwise operations keep them
    so, else explicit CSR rows."""

    def __init__(self, tape, output, result_shape, values=None):
        self.sparse = _scipy_sparse()
        self.tape = tape
        self.n = tape.inputs[0].size
        self.output = output          # a Var of the tape (None: f's result is a constant)
        self.result_shape = result_shape
        self.deps = [self.dependencies(instr, values) for instr in tape.instrs]
        self.sets = {}
        self.runs = {}                # id(an index map of self.deps) -> its affine runs
        self.shown = Progress(0, "", False)   # the instructions done (`progress=True`)

    @classmethod
    def of(cls, f, x, y, local=False):
        """f recorded at x (f(y, x) when y is given); `local`: the dependencies at x."""
        x = np.asarray(x)
        if x.dtype.kind not in "biuf":
            raise TypeError(f"cyad: x must be real numbers, not {x.dtype}")
        dtype = np.float32 if x.dtype == np.float32 else np.float64
        recording, result = trace(f, x, dtype, y)
        values = recording.values if local else None
        if not isinstance(result, Tracer):
            return cls(recording.tape, None, np.shape(result), values)
        output = recording.var_of(result)
        return cls(recording.tape, output, output.shape, values)

    def dependencies(self, instr, values=None):
        """[(operand position, dependency)]: what each element of instr's output depends
        on in that operand, by its kind's rules. A dependency is None (element i on element
        i), an int64 array (element i on element source[i], none where it is negative), a
        boolean sparse matrix S (element i on the elements j of S[i, j]), _Sums (sum_inner's
        groups), or "all" (every element on every one). With the Vars' `values` at x: the
        dependencies at x alone (`_local_dependencies`)."""
        rules = RULES.get(instr.kind)
        if rules is None:
            raise ValueError(f"cyad: sparsity of the instruction kind {instr.kind!r} is not known")
        return rules.dependencies(self, instr, values)

    def _propagate(self, reach=None):
        """The output's sets; with `reach` (the backward masks), also the second-order
        pairs of the reached instructions: coordinate arrays, and bands of the symmetric
        pattern."""
        self.sets = {self.tape.inputs[0]: Bands.identity(self.n)}
        last_read = {var: k for k, instr in enumerate(self.tape.instrs) for var in instr.args}
        pairs, pair_bands = [], []
        for k, (instr, deps) in enumerate(zip(self.tape.instrs, self.deps)):
            if any(isinstance(d, str) for _, d in deps):     # "all"
                operands = [self.sets.get(instr.args[p]) for p, _ in deps]
                for var in instr.outs:
                    self.sets[var] = _all_rows(operands, var.size, self.n)
            elif instr.outs:
                # (every output of a primitive has its dependencies, `_batched`)
                sets = self._forward(instr, deps)
                for var in _sharing(instr):
                    self.sets[var] = sets
            if reach is not None:
                reached = [reach.get(var) for var in instr.outs]
                if any(r is not None and r.any() for r in reached):
                    RULES[instr.kind].second_order(self, instr, reached, pairs, pair_bands)
            for var in instr.args:
                if last_read[var] == k and var is not self.output:
                    self.sets.pop(var, None)
            self.shown.update(1)
        return (None if self.output is None else self.sets.get(self.output)), pairs, pair_bands

    def _runs(self, source):
        runs = self.runs.get(id(source))
        if runs is None:
            runs = self.runs[id(source)] = _index_bands.runs_of(source)
        return runs

    def _gather(self, sets, source, size):
        """Row i of the result is row source[i] of sets (negative: empty)."""
        if isinstance(sets, Bands):
            runs = self._runs(source)
            gathered = None if runs is None else _index_bands.gather(sets, runs, size)
            if gathered is not None:
                return gathered
            sets = sets.rows()
        return gather_rows(*sets, source)

    def _forward(self, instr, deps):
        out = None
        size = instr.outs[0].size
        for position, dependency in deps:
            sets = self.sets.get(instr.args[position])
            if sets is None or (sets is out and dependency is None):    # (x * x)
                continue
            if isinstance(dependency, np.ndarray):
                sets = self._gather(sets, dependency, size)
            elif isinstance(dependency, _Sums) and size == 1:
                sets = _all_rows([sets], 1, self.n)
            elif isinstance(dependency, _Sums):
                selection = dependency.selection(self.sparse, size, instr.args[0].size)
                sets = _of_matrix(selection @ _as_matrix(self.sparse, _explicit(sets), self.n))
            elif dependency is not None:
                sets = _of_matrix(dependency @ _as_matrix(self.sparse, _explicit(sets), self.n))
            if out is None:
                out = sets
            else:
                both = _index_bands.union(out, sets) \
                    if isinstance(out, Bands) and isinstance(sets, Bands) else None
                out = both if both is not None else union_rows(*_explicit(out), *_explicit(sets))
        return out

    def pattern(self, sets, shape):
        indptr, indices = (np.zeros(shape[0] + 1, np.int64), np.zeros(0, np.int64)) \
            if sets is None else _explicit(sets)
        return self.sparse.csr_array((np.ones(indices.size, np.int8), indices, indptr),
                                     shape=shape)

    def jacobian(self, progress=False):
        size = int(np.prod(self.result_shape))
        with self._showing(1, "cyad.jacobian_sparsity", progress):
            return self.pattern(self._propagate()[0], (size, self.n))

    def _showing(self, passes, what, progress):
        # the instructions propagated through, as they are (`passes` over the tape)
        self.shown = Progress(passes * len(self.tape.instrs), f"{what}: instructions",
                              progress)
        return self.shown

    def hessian(self, progress=False):
        with self._showing(2, "cyad.hessian_sparsity", progress):
            return self._hessian()

    def _hessian(self):
        if int(np.prod(self.result_shape)) != 1:
            raise ValueError(f"cyad: hessian_sparsity needs f to return a scalar, not shape "
                             f"{self.result_shape}")
        if self.output is None:
            return self.pattern(None, (self.n, self.n))
        # backwards, the elements the output depends on; then forwards, the sets and the
        # pairs (upper-triangle coordinates, with repeats, and bands) at those elements
        reach = {self.output: _EVERY}
        for instr, deps in zip(reversed(self.tape.instrs), reversed(self.deps)):
            reached = [reach.get(var) for var in instr.outs]
            if any(r is not None and r.any() for r in reached):
                self._reach_back(instr, deps, reached, reach)
            self.shown.update(1)
        _, pairs, pair_bands = self._propagate(reach)
        n = self.n
        bands = _index_bands.made(n, pair_bands)
        if bands is not None and not pairs:
            return self.pattern(bands, (n, n))
        if bands is not None:       # (its rows as coordinates, beside the others)
            indptr, indices = bands.rows()
            pairs.append((np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr)), indices))
        else:
            pairs += [_index_bands.coordinates(band) for band in pair_bands]
        if not pairs:
            return self.pattern(None, (n, n))
        first = np.concatenate([u for u, _ in pairs])
        second = np.concatenate([v for _, v in pairs])
        return self.pattern(symmetric_pattern(first, second, n), (n, n))

    def _reach_back(self, instr, deps, reached, reach):
        """Mark the operands' elements that the reached output elements depend on (a
        mask, or _EVERY); constants have no sets to reach."""
        size = instr.outs[0].size
        masks = [r for r in reached[:len(_sharing(instr))] if r is not None]
        reached = _EVERY if any(r is _EVERY for r in masks) else \
            np.logical_or.reduce([np.zeros(size, bool)] + masks)
        for position, dependency in deps:
            operand = instr.args[position]
            if operand in self.tape.consts:
                continue
            if isinstance(dependency, str):
                mask = _EVERY
            elif dependency is None or (isinstance(dependency, _Sums) and reached is _EVERY):
                mask = reached
            elif isinstance(dependency, np.ndarray):
                mask = np.zeros(operand.size, bool)
                source = dependency if reached is _EVERY else dependency[reached]
                mask[source[source >= 0]] = True
                mask = _EVERY if mask.all() else mask
            elif isinstance(dependency, _Sums):
                mask = np.repeat(reached, dependency.k)
            else:
                mask = (dependency.T @ _mask(reached, instr.outs[0].size).astype(np.int32)) > 0
            known = reach.get(operand)
            reach[operand] = mask if known is None else \
                _EVERY if known is _EVERY or mask is _EVERY else known | mask

    # -- what the kinds' rules build with (`dependencies`, `second_order`) ---------------
    elementwise = staticmethod(_elementwise)
    local = staticmethod(_local_dependencies)
    sums = _Sums

    def batched(self, instr, axes):
        return _batched(self.sparse, instr, axes)
    explicit = staticmethod(_explicit)
    of_matrix = staticmethod(_of_matrix)
    all_rows = staticmethod(_all_rows)
    mask = staticmethod(_mask)
    row_pairs = staticmethod(row_pairs)

    def selection(self, rows, columns, shape):
        return _selection(self.sparse, rows, columns, shape)

    def as_matrix(self, sets):
        return _as_matrix(self.sparse, sets, self.n)

    def rows(self, var, size, reached):
        """var's sets at the reached elements of an elementwise output of `size`: Bands
        where every element is reached and var is read whole or as a scalar, else CSR."""
        sets = self.sets.get(var)
        if sets is None:
            return None
        whole = reached.all()
        if isinstance(sets, Bands) and whole and var.size in (size, 1):
            return sets if var.size == size else \
                _index_bands.gather(sets, [(0, size, 0, 0)], size)
        sets = _explicit(sets)
        if var.size != size or not whole:
            source = np.arange(size) if whole else np.flatnonzero(reached)
            sets = gather_rows(*sets, source % var.size)
        return sets

    def couple(self, a, b, square, pairs, pair_bands):
        """Add the pairs of rows a and b (a square: a is b) to `pairs` or `pair_bands`."""
        if isinstance(a, Bands) and isinstance(b, Bands):
            bands = _index_bands.pair_bands(a, b, square)
            if bands is not None:
                pair_bands += bands
                return
        pairs.append(row_pairs(*_explicit(a), *_explicit(b), square))


def _python_function(f):
    """The Python callable to trace: f itself, or the one a wrapper or a recorded
    function holds; a C function has no tape to read."""
    from cyad._tape.function import TapeFunction
    from cyad._wrapper import FunctionWrapper

    if isinstance(f, TapeFunction):
        return f.of_x
    if isinstance(f, FunctionWrapper):
        if f.tape is not None:
            return f.tape.of_x
        if f.callable is None:
            raise TypeError("cyad: the sparsity of a C function cannot be detected (it "
                            "cannot be traced); give its pattern where it is needed")
        return f.callable
    if not callable(f):
        raise TypeError(f"cyad: f must be callable, not {type(f).__name__}")
    return f


def jacobian_sparsity(f, x, *, y=None, local=False, progress=False):
    """The sparsity pattern of f's Jacobian: which entries can be nonzero.

    f is recorded once at `x` (as the tape engine records it) and every element's
    dependencies on the elements of x are propagated through the recorded
    instructions. The pattern is global for the recorded branch: it contains every
    nonzero of the Jacobian at every x where f takes the same Python branches
    (``if`` on values, indices read from values) as at this `x`. ``np.maximum``,
    ``np.minimum``, ``np.where`` and ``np.clip`` are not branches: their pattern is
    the union of both sides. With ``local=True`` the pattern holds at this `x` alone:
    an elementwise operation whose partial derivative is zero at `x` (the side
    ``np.maximum`` or ``np.where`` did not take, ``np.abs`` at 0, a product with a
    factor that is 0) contributes nothing.

    Parameters
    ----------
    f : callable
        ``f(x)`` returning an array, or ``f(y, x)`` writing into `y` when `y` is given.
        A C function cannot be traced (TypeError).
    x : array_like
        The point at which f is recorded. float32 records in float32, anything else in
        float64.
    y : ndarray, optional
        For ``f(y, x)``: the output array (its incoming values are constants).
    local : bool, optional
        The pattern at `x` alone, rather than on the whole recorded branch (default).
    progress : bool, optional
        Show the recorded instructions propagated through as the detection goes (a tqdm
        bar where tqdm is installed, else a line on stderr).

    Returns
    -------
    scipy.sparse.csr_array
        Shape ``(f(x).size, x.size)``, int8 ones at the entries that can be nonzero
        (flat indices of the output and of x).

    Raises
    ------
    ImportError
        When SciPy is not installed.

    See Also
    --------
    hessian_sparsity : the pattern of a scalar function's Hessian.

    Examples
    --------
    >>> def f(x):
    ...     return x[1:] * x[:-1] + np.sin(x[1:])
    >>> cyad.jacobian_sparsity(f, np.ones(4)).toarray()
    array([[1, 1, 0, 0],
           [0, 1, 1, 0],
           [0, 0, 1, 1]], dtype=int8)

    Both sides of ``np.maximum``, or the one it takes at `x`:

    >>> def g(x):
    ...     return np.maximum(x[:-1], x[1:])
    >>> cyad.jacobian_sparsity(g, np.arange(3.0)).toarray()
    array([[1, 1, 0],
           [0, 1, 1]], dtype=int8)
    >>> cyad.jacobian_sparsity(g, np.arange(3.0), local=True).toarray()
    array([[0, 1, 0],
           [0, 0, 1]], dtype=int8)
    """
    return _Propagation.of(_python_function(f), x, y, local).jacobian(progress)


def recorded_pattern(f, x, y=None, hessian=False, progress=False):
    """jacobian_sparsity's (or, with `hessian`, hessian_sparsity's) pattern, and the tape
    it was read off, its output set as the tape engine sets it: a later record of f
    with the same structure (cyad._tape.program.same_structure) has the same pattern."""
    propagation = _Propagation.of(_python_function(f), x, y)
    pattern = propagation.hessian(progress) if hessian else propagation.jacobian(progress)
    tape = propagation.tape
    tape.outputs = [] if propagation.output is None else [propagation.output]
    return pattern, tape


def hessian_sparsity(f, x, *, y=None, progress=False):
    """The sparsity pattern of a scalar function's Hessian: which entries can be nonzero.

    f is recorded once at `x`; each element's first-order dependencies are propagated
    through the recorded instructions, and every nonlinear instruction the output
    depends on adds the pairs its second derivatives couple (``a * b`` the pairs of
    a's and b's indices, ``np.sin(a)`` the pairs within a's; ``a + b`` and a product
    with a constant none). The pattern is global for the recorded branch, as
    :func:`jacobian_sparsity`'s: it contains every nonzero of the Hessian at every x
    where f takes the same Python branches as at this `x`.

    Parameters
    ----------
    f : callable
        ``f(x)`` returning a scalar, or ``f(y, x)`` writing into the 0-d `y` when `y` is
        given.
    x : array_like
        The point at which f is recorded (float32 records in float32).
    y : ndarray, optional
        For ``f(y, x)``: the 0-d output array.
    progress : bool, optional
        Show the recorded instructions propagated through (backwards, then forwards) as
        the detection goes (a tqdm bar where tqdm is installed, else a line on stderr).

    Returns
    -------
    scipy.sparse.csr_array
        Shape ``(x.size, x.size)``, symmetric, int8 ones at the entries that can be
        nonzero.

    Raises
    ------
    ValueError
        When f does not return a scalar.
    ImportError
        When SciPy is not installed.

    See Also
    --------
    jacobian_sparsity : the pattern of a Jacobian.

    Examples
    --------
    Rosenbrock's function couples neighbours only:

    >>> def rosenbrock(x):
    ...     return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    >>> cyad.hessian_sparsity(rosenbrock, np.zeros(4)).toarray()
    array([[1, 1, 0, 0],
           [1, 1, 1, 0],
           [0, 1, 1, 1],
           [0, 0, 1, 1]], dtype=int8)
    """
    return _Propagation.of(_python_function(f), x, y).hessian(progress)
