"""Sparse Jacobians and Hessians by compressed evaluation: few products, then a gather.

A Jacobian whose pattern is known (`cyad.jacobian_sparsity`, or given) is recovered from
k products instead of n (cyad/_sparse/coloring.pyx explains the colorings,
cyad/_sparse/recovery.pyx the decompressions):

    column   one pushforward per color, the seed columns as a tuple of tangents, all k in
             one prepared batched call: B = A @ S
    row      one pullback per color (reverse lanes on the tape): B = S.T @ A
    auto     whichever of column and row has fewer colors (column on a tie)
    bidirectional
             both: the dense rows row-colored and pulled back, the columns colored on the
             other rows and pushed forward; two partial gathers fill one result
    star     (Hessians) one hvp per color of a star coloring of the symmetric pattern,
             the seed columns as a tuple of directions (tape engine by default): B = H @ S,
             each nonzero read directly
    acyclic  (Hessians) the same with an acyclic coloring: often fewer colors (2 for a
             tridiagonal H, where star needs 3), each nonzero recovered by substitution
             (a row of B less the nonzeros found before it)

Design:

- Everything is decided at prepare time, in a `SparseJacobianPrep` / `SparseHessianPrep`:
  the pattern, read once into scipy's CSR index arrays; the coloring; the seeds (k arrays
  shaped like x); the compressed buffer, one C-contiguous (k, size) array whose rows are
  the products' ``out=`` arrays; the inner prep of the existing operator; and the
  decompression (a pair of partial ones for a bidirectional coloring), its gather indices
  rewritten once for the (k, size) layout (the recovery module's compressed products are
  (size, k) for a column or star coloring) and permuted to the requested format's order
  of nonzeros (CSR, CSC or COO).
- A prepared call is the inner prepared call (or two) into the compressed buffer, then a
  gather into the result's ``data``. With ``out=`` (a result of an earlier call, or
  ``prep.new_result()``) its ``data`` is refilled in place and nothing is allocated.
- A nonzero of the derivative outside the pattern would be added into the entries that
  share its product (with a column (row) coloring, the entries of its row (column) that
  share its color; with a star coloring, those its product shares). So a given sparsity
  is checked at prepare time to contain the pattern detected from f (ValueError naming a
  missing entry); only where f cannot be traced (a C function, an f that differentiates
  inside) is it trusted, and it must then contain every nonzero.
- C functions (FunctionWrapper) cannot be traced: they need ``sparsity=``.
- A pattern holds where f takes the branches it took where the pattern was detected
  (cyad/_sparse/sparsity.py), so every call watches f's branches with a tape (`_Watch`): the
  products' own where they run on the tape, else a tape prep of its own (a pullback of
  one cotangent, or a gradient), run on every call. A tape records f anew when a guard
  fails, a constant f closes over changes, or Python state f read changes; then, unless
  the new record is the old program with other numbers (`cyad._tape.program.same_structure`),
  the pattern is detected at the call's x and must lie inside the prep's (ValueError
  otherwise, before the result is written). A tape that gave up following f (handed to
  the dual engine after its guards kept failing) leaves a given sparsity trusted and
  refuses a detected one.
- y (for ``f(y, x)``) is the call's own, as for the dense operators. Where it shares
  memory with x, a call still reads x as it was when the call started: preparing
  evaluates f on a copy of x, and a call that runs f more than once (the products, the
  watch, the gradient of `value_gradient_and_sparse_hessian`) first copies x into
  the prep's scratch (allocated at the first such call).
"""
import types

import numpy as np

from cyad import _operators
from cyad._sparse import coloring as _coloring, graphs as _graphs, recovery as _recovery
from cyad._tape.program import frozen, same_structure
from cyad._sparse.sparsity import _scipy_sparse, recorded_pattern
from cyad._wrapper import FunctionWrapper

FORMATS = ("csr", "csc", "coo")
JACOBIAN_COLORINGS = ("auto", "column", "row", "bidirectional")
HESSIAN_COLORINGS = ("star", "acyclic")


def _checked_format(format):
    if format not in FORMATS:
        raise ValueError(f"format is one of {FORMATS}, not {format!r}")
    return format


def _read_sparsity(sparsity, shape):
    """A given pattern as a scipy.sparse.csr_array of booleans, checked against shape."""
    sparse = _scipy_sparse()
    pattern_shape, indptr, indices = _graphs._pattern_csr(
        sparsity if sparse.issparse(sparsity) else np.asarray(sparsity))
    if shape is not None and pattern_shape != shape:
        raise ValueError(f"the sparsity pattern has shape {pattern_shape}, the derivative "
                         f"{shape}")
    return sparse.csr_array((np.ones(indices.size, dtype=bool), indices, indptr),
                            shape=pattern_shape)


def _pattern(sparsity, shape, detect):
    """The prep's pattern, and the tape f was recorded to (None where f cannot be traced):
    detected, or given and checked to contain the one `detect()` finds (trusted where f
    cannot be traced)."""
    if sparsity is None:
        return detect()
    pattern = _read_sparsity(sparsity, shape)
    try:
        detected, tape = detect()
    except TypeError:
        return pattern, None
    if detected.shape == pattern.shape:     # else the caller's checks say which differs
        missing = _missing(pattern, detected)
        if missing is not None:
            raise ValueError(f"cyad: the given sparsity misses the entry {missing}, where "
                             "f's derivative can be nonzero; its value would be added into "
                             "other entries")
    return pattern, tape


def _missing(pattern, detected):
    """The first entry (row, column) of `detected` outside `pattern`, or None."""
    detected = detected.tocoo()
    held = np.asarray(pattern[detected.row, detected.col], dtype=bool).ravel()
    if held.all():
        return None
    i = int(np.flatnonzero(~held)[0])
    return int(detected.row[i]), int(detected.col[i])


class _Watch:
    """Checks on every call that the prep's pattern holds at x (the module docstring).

    `prep` is a tape prep: the products' own (run=None: the call runs it), or one made to
    watch, which `run(f, x, y)` calls. Its tape object changes when f is recorded anew.
    `recorded` is the tape the pattern was read off: a record of the same structure has
    the same pattern.
    """

    def __init__(self, prep, run, detect, pattern, recorded, given):
        self._state = prep.engine_state
        self._run = run
        self._detect = detect
        self._pattern = pattern
        self._given = given
        self._tape = self._state.tape
        self._primal = frozen(recorded)
        self._trusted = False

    def check(self, f, x, y):
        if self._trusted:
            return
        if self._run is not None:
            self._run(f, x, y)
        if self._state.tape is self._tape and not self._state.delegated:
            return
        if self._state.delegated:
            if self._given:
                self._trusted = True
                return
            raise RuntimeError("cyad: f's branches kept changing between calls, and its tape "
                               "no longer follows them: the sparsity detected when the prep "
                               "was made may not hold at this x; give sparsity= a pattern "
                               "that holds for every branch")
        primal = self._state.primal
        # recorded anew for a changed number (Python state, a constant) and the same
        # program: the same pattern, without detecting it
        missing = (None if same_structure(self._primal, primal)
                   else _missing(self._pattern, self._detect(x, y)[0]))
        if missing is not None:
            raise ValueError(f"cyad: at this x, f takes another branch than where its "
                             f"sparsity was detected, and its derivative can be nonzero at "
                             f"{missing}, outside the prep's pattern: prepare again at this "
                             "x, or give sparsity= a pattern that holds for every branch")
        self._tape, self._primal = self._state.tape, frozen(primal)


class _PullbackWatch:
    """A tape prep of f's pullback of one cotangent, to watch f for products that run on
    the dual engine; its call allocates nothing."""

    def __init__(self, f, x, y, out_shape):
        self._cotangent = (np.zeros(out_shape, dtype=x.dtype),)
        self._out = (np.empty_like(x),)
        self.prep = _operators.prepare_pullback(f, x, self._cotangent, y=y)

    def __call__(self, f, x, y):
        _operators.pullback(f, x, self._cotangent, y=y, prep=self.prep, out=self._out)


class _GradientWatch:
    """A tape prep of f's gradient, to watch a scalar f for hvps on the dual engine."""

    def __init__(self, f, x, y):
        self._out = np.empty_like(x)
        self.prep = _operators.prepare_gradient(f, x, y=y)

    def __call__(self, f, x, y):
        _operators.gradient(f, x, y=y, prep=self.prep, out=self._out)


def _watch(products_prep, make_watch, detect, pattern, recorded, given):
    """The prep's watch: None where f cannot be traced (recorded None: the pattern is
    trusted)."""
    if recorded is None:
        return None
    if products_prep.replays:
        return _Watch(products_prep, None, detect, pattern, recorded, given)
    watch = make_watch()
    if not watch.prep.replays:
        return None    # f is a recorded function: its tape is frozen, as is its pattern
    return _Watch(watch.prep, watch, detect, pattern, recorded, given)


class _SparsePrep:
    """What the two sparse preps share: the pattern, the coloring, the gathers.

    parts: one or two (compressed, decompression, transposed): a (k, ...) buffer whose
    rows are products, and the recovery module's decompression of it, which reads a
    (size, k) product when transposed.
    """

    def __init__(self, pattern, colors, coloring, parts, format):
        sparse = _scipy_sparse()
        self.sparsity = pattern
        self.coloring = coloring
        self.colors = colors
        self.format = format
        self.shape = pattern.shape
        indptr = np.asarray(pattern.indptr, dtype=np.intp)
        indices = np.asarray(pattern.indices, dtype=np.intp)
        nnz = indices.size
        template = sparse.csr_array((np.zeros(nnz, dtype=parts[0][0].dtype), indices, indptr),
                                    shape=self.shape)
        position = np.arange(nnz)      # the result's position of each CSR nonzero
        if format == "csc":
            rows = np.repeat(np.arange(self.shape[0], dtype=np.intp), np.diff(indptr))
            position[np.lexsort((rows, indices))] = np.arange(nnz)
            template = template.tocsc()
        elif format == "coo":
            template = template.tocoo()
        self._template = template
        buffers, gathers, self.n_colors = [], [], 0
        for compressed, decompression, transposed in parts:
            compressed = compressed.reshape(compressed.shape[0], -1)
            k, size = compressed.shape
            buffers.append(compressed)
            self.n_colors += k
            if isinstance(decompression, _recovery.Substitution):
                flat = np.arange(size * k)          # (size, k) product -> (k, size) buffer
                gathers.append(decompression.rearranged((flat % k) * size + flat // k,
                                                        position, (k, size)))
                continue
            # where each nonzero it recovers comes from (a partial one: some of them)
            source, target = decompression.sources()
            if transposed:
                source = (source % k) * size + source // k
            target = position[target]
            whole = target.size == nnz
            if whole:
                source[target] = source.copy()
            gathers.append(_recovery.Decompression(
                (k, size), (k, size), indptr, indices, source, None if whole else target))
        self._first_gather, self._first_buffer = gathers[0], buffers[0]
        self._second_gather, self._second_buffer = (
            (gathers[1], buffers[1]) if len(parts) > 1 else (None, None))

    def _unaliased_call_input(self, x, y):
        """x, or its copy in the prep's scratch where a call's first run would overwrite it
        (y shares its memory); the scratch is made at the first such call."""
        if y is None or not np.may_share_memory(x, y):
            return x
        x = np.asarray(x)
        scratch = self._x_scratch
        if scratch is None or scratch.shape != x.shape or scratch.dtype != x.dtype:
            scratch = self._x_scratch = np.empty_like(x)
        np.copyto(scratch, x)
        return scratch

    def _function_of(self, x, args):
        """The callable this call's products evaluate: f, or its Bound with this call's
        arguments."""
        if self._arguments is None:
            if args:
                raise ValueError("cyad: this prep was made for f(x) alone: prepare it with "
                                 "the arguments")
            return self._g
        return self._arguments.bound_to(x, args)

    def new_result(self):
        """A new sparse array of the result's structure (zeros), to pass as ``out=``."""
        result = self._template.copy()
        if self.format == "coo":
            result.coords = self._template.coords
        else:
            result.indices, result.indptr = self._template.indices, self._template.indptr
        return result

    def _result(self, out):
        if out is None:
            out = self.new_result()
        else:
            self._check_out(out)
        data = out.data
        self._first_gather(self._first_buffer, data)
        if self._second_gather is not None:
            self._second_gather(self._second_buffer, data)
        return out

    def _check_out(self, out):
        template = self._template
        if getattr(out, "format", None) != self.format or out.shape != self.shape:
            raise ValueError(f"out is a {self.format} sparse array of shape {self.shape} "
                             f"from this prep (new_result() or an earlier call)")
        # a result of this prep holds the prep's own index arrays: nothing to compare
        if self.format == "coo":
            if out.coords is template.coords:
                return
            same = out.nnz == template.nnz and all(
                np.array_equal(a, b) for a, b in zip(out.coords, template.coords))
        else:
            if out.indices is template.indices and out.indptr is template.indptr:
                return
            same = (out.nnz == template.nnz and np.array_equal(out.indices, template.indices)
                    and np.array_equal(out.indptr, template.indptr))
        if not same:
            raise ValueError("out has another sparsity structure than this prep's")


def _seeds(colors, k, x):
    """The seed columns as k arrays shaped and typed like x."""
    seed = _coloring.seed_matrix(colors, dtype=x.dtype)
    return tuple(np.ascontiguousarray(seed[:, c].reshape(x.shape)) for c in range(k))


def _float_input(x):
    x = np.asarray(x)
    return np.ascontiguousarray(x, dtype=x.dtype if x.dtype == np.float32 else np.float64)


def _unaliased(x, y):
    """x, or a copy of it where y (written by every evaluation of f) shares its memory."""
    return x.copy() if y is not None and np.may_share_memory(x, y) else x


def _with_arguments(f, x, args, y):
    """The callable the products evaluate, and f's other arguments' holder: f itself and
    None without args; else a Bound of f(x, *args) whose arrays are inputs of every call
    (cyad/_arguments/operators.py), and its `Arguments`."""
    if not args:
        return f, None
    if isinstance(f, FunctionWrapper):
        raise TypeError("cyad: a FunctionWrapper (a C function) takes no extra arguments")
    from cyad._arguments.operators import Arguments
    arguments = Arguments(f, x, args, y is not None)
    return arguments.bound, arguments


def _need_sparsity(f, sparsity):
    if (sparsity is None and isinstance(f, FunctionWrapper) and f.callable is None
            and f.tape is None):
        raise TypeError("cyad: a C function cannot be traced to detect its sparsity; give "
                        "its pattern as sparsity=")


class SparseJacobianPrep(_SparsePrep):
    """A prepared sparse Jacobian: pattern, coloring, seeds, compressed buffer, gather.

    Attributes
    ----------
    sparsity : scipy.sparse.csr_array
        The pattern (m x n, m = f(x).size, n = x.size).
    coloring : str
        ``"column"`` (pushforwards), ``"row"`` (pullbacks) or ``"bidirectional"``
        (both).
    colors : ndarray of intp, or a pair of them
        The color of every column (or row); for ``"bidirectional"``, the pair
        ``(column_colors, row_colors)``, -1 where a column (row) is in no seed.
    n_colors : int
        The number of products per call.
    format : str
        The result's format: ``"csr"``, ``"csc"`` or ``"coo"``.

    Examples
    --------
    >>> differences = lambda x: x[1:] - x[:-1]
    >>> prep = cyad.prepare_sparse_jacobian(differences, np.ones(3), coloring="row")
    >>> prep.coloring, prep.colors, prep.sparsity.nnz
    ('row', array([0, 1]), 4)
    """

    def __init__(self, f, x, *args, y=None, sparsity=None, coloring="auto",
                 order="auto", engine=None, format="csr", workers=None, progress=False):
        if coloring not in JACOBIAN_COLORINGS:
            raise ValueError(f"coloring is one of {JACOBIAN_COLORINGS}, not {coloring!r}")
        _checked_format(format)
        _need_sparsity(f, sparsity)
        x = _unaliased(_float_input(x), y)
        self._f = f
        f, self._arguments = _with_arguments(f, x, args, y)
        def detect(x, y, progress=False):
            return recorded_pattern(f, x, y, progress=progress)

        pattern, recorded = _pattern(sparsity, None, lambda: detect(x, y, progress))
        if pattern.shape[1] != x.size:
            raise ValueError(f"the sparsity pattern has {pattern.shape[1]} columns, "
                             f"x has {x.size} elements")
        if coloring == "auto":
            column = _coloring.column_coloring(pattern, order)
            row = _coloring.row_coloring(pattern, order)
            coloring, colors = (("column", column) if _colors(column) <= _colors(row)
                                else ("row", row))
        elif coloring == "column":
            colors = _coloring.column_coloring(pattern, order)
        elif coloring == "row":
            colors = _coloring.row_coloring(pattern, order)
        else:
            colors = _coloring.bidirectional_coloring(pattern, order)
        self._g = f
        self._x_scratch = None
        value = _operators.value_and_pushforward(f, x, np.zeros_like(x), y=y, engine=engine)[0]
        self.out_shape = np.shape(value)
        if int(np.prod(self.out_shape)) != pattern.shape[0]:
            raise ValueError(f"the sparsity pattern has {pattern.shape[0]} rows, f(x) has "
                             f"{int(np.prod(self.out_shape))} elements")
        column_colors, row_colors = {"column": (colors, None), "row": (None, colors),
                                     "bidirectional": colors}[coloring]
        if coloring == "bidirectional":
            forward, reverse = _recovery.bidirectional_decompression(pattern, *colors)
        elif coloring == "column":
            forward = _recovery.column_decompression(pattern, colors)
        else:
            reverse = _recovery.row_decompression(pattern, colors)
        parts = []
        self._forward = self._reverse = None
        if column_colors is not None and _colors(column_colors):
            self._forward = _Products(True, f, x, column_colors, x, y, engine, self.out_shape,
                                      workers)
            parts.append((self._forward.compressed, forward, True))
        if row_colors is not None and _colors(row_colors):
            self._reverse = _Products(False, f, x, row_colors, np.empty(self.out_shape, x.dtype),
                                      y, engine, x.shape, workers)
            parts.append((self._reverse.compressed, reverse, False))
        if not parts:
            raise ValueError("the sparsity pattern has no nonzeros")
        self._first = self._forward if self._forward is not None else self._reverse
        self._both = len(parts) == 2
        self._watch = _watch(self._first.prep, lambda: _PullbackWatch(f, x, y, self.out_shape),
                             detect, pattern, recorded, sparsity is not None)
        super().__init__(pattern, colors, coloring, parts, format)

    def _products(self, f, x, y, value_out):
        """The products into the compressed buffers (the value into value_out if given),
        the pattern checked to hold at x."""
        x = self._unaliased_call_input(x, y)
        self._first.run(f, x, y, value_out)
        if self._both:
            self._reverse.run(f, x, y, None)
        if self._watch is not None:
            self._watch.check(f, x, y)


class _Products:
    """One prepared batch of products: pushforwards of seed columns (forward) or
    pullbacks of seed rows, into the rows of one compressed buffer."""

    def __init__(self, forward, f, x, colors, like, y, engine, product_shape, workers):
        self.seeds = _seeds(colors, _colors(colors), like)
        prepare = _operators.prepare_pushforward if forward else _operators.prepare_pullback
        self.prep = prepare(f, x, self.seeds, y=y, engine=engine, workers=workers)
        self.compressed = np.zeros((len(self.seeds),) + tuple(product_shape),
                                   dtype=self.prep.dtype)
        self.outs = tuple(self.compressed)
        self.value_pair = (None, self.outs)
        self.operator = _operators.pushforward if forward else _operators.pullback
        self.value_operator = (_operators.value_and_pushforward if forward
                               else _operators.value_and_pullback)

    def run(self, f, x, y, value_out):
        if value_out is None:
            self.operator(f, x, self.seeds, y=y, prep=self.prep, out=self.outs)
            return
        if self.value_pair[0] is not value_out:
            # kept for the next call with the same value_out: a new pair would allocate
            self.value_pair = (value_out, self.outs)
        self.value_operator(f, x, self.seeds, y=y, prep=self.prep, out=self.value_pair)


def _colors(colors):
    return int(colors.max()) + 1 if colors.size else 0


class SparseHessianPrep(_SparsePrep):
    """A prepared sparse Hessian: coloring, directions, compressed buffer, recovery.

    Attributes
    ----------
    sparsity : scipy.sparse.csr_array
        The symmetric pattern (n x n).
    coloring : str
        ``"star"`` or ``"acyclic"``.
    colors : ndarray of intp
        The color of every variable.
    n_colors : int
        The number of Hessian-vector products per call.
    format : str
        The result's format: ``"csr"``, ``"csc"`` or ``"coo"``.

    Examples
    --------
    >>> cubes = lambda x: np.sum(x ** 3)
    >>> prep = cyad.prepare_sparse_hessian(cubes, np.ones(4))
    >>> prep.coloring, prep.n_colors
    ('star', 1)
    >>> out = prep.new_result()
    >>> cyad.sparse_hessian(cubes, np.arange(4.0), prep=prep, out=out) is out
    True
    >>> out.data
    array([ 0.,  6., 12., 18.])
    """

    def __init__(self, f, x, *args, y=None, sparsity=None, coloring="star", order="auto",
                 engine="tape", format="csr", workers=None, progress=False):
        if coloring not in HESSIAN_COLORINGS:
            raise ValueError(f"coloring is one of {HESSIAN_COLORINGS}, not {coloring!r}")
        _checked_format(format)
        _need_sparsity(f, sparsity)
        x = _unaliased(_float_input(x), y)
        self._f = f
        f, self._arguments = _with_arguments(f, x, args, y)
        n = x.size
        def detect(x, y, progress=False):
            return recorded_pattern(f, x, y, hessian=True, progress=progress)

        pattern, recorded = _pattern(sparsity, (n, n), lambda: detect(x, y, progress))
        if coloring == "star":
            colors = _coloring.star_coloring(pattern, order)
            decompression = _recovery.star_decompression(pattern, colors)
        else:
            colors = _coloring.acyclic_coloring(pattern, order)
            decompression = _recovery.acyclic_decompression(pattern, colors)
        k = _colors(colors)
        self._g = f
        self._x_scratch = None
        self._engine = engine
        self._seeds = _seeds(colors, k, x)
        self._inner = _operators.prepare_hvp(f, x, self._seeds, y=y, engine=engine,
                                             workers=workers)
        self._watch = _watch(self._inner, lambda: _GradientWatch(f, x, y), detect, pattern,
                             recorded, sparsity is not None)
        self._gradient_prep = None
        self._gradient_pair = (None, None)
        compressed = np.zeros((k,) + x.shape, dtype=self._inner.dtype)
        self._outs = tuple(compressed[c] for c in range(k))
        super().__init__(pattern, colors, coloring, [(compressed, decompression, True)],
                         format)

    def _products(self, f, x, y):
        """The hvps into the compressed buffer, the pattern checked to hold at x."""
        _operators.hvp(f, x, self._seeds, y=y, prep=self._inner, out=self._outs)
        if self._watch is not None:
            self._watch.check(f, x, y)

    def _value_and_gradient_prep(self, f, x, y):
        # made at the first value_gradient_and_sparse_hessian call
        if self._gradient_prep is None:
            self._gradient_prep = _operators.prepare_gradient(f, x, y=y, engine=self._engine)
        return self._gradient_prep


def prepare_sparse_jacobian(f, x, *args, y=None, sparsity=None, coloring="auto",
                            order="auto", engine=None, format="csr", workers=None,
                            progress=False):
    """Prepare `sparse_jacobian` and `value_and_sparse_jacobian` of f at inputs like x.

    Parameters
    ----------
    f : callable or FunctionWrapper
        The function, ``f(x)`` or (with ``y=``) ``f(y, x)``.
    x : array_like
        An input (float64 or float32); the pattern is detected at x.
    *args
        f's further arguments, ``f(x, *args)``: their floating-point arrays and numbers are
        inputs of every call (new values keep the pattern, the coloring and the recorded
        tapes); a call whose other arguments differ in structure, shape or a static value
        (an int, a string, an object) raises ValueError.
    y : ndarray, optional
        The output array of a two-argument f.
    sparsity : sparse matrix or array_like of bool, optional
        The Jacobian's pattern (f(x).size x x.size); detected with
        `jacobian_sparsity` when not given (required for a C function). It must contain
        every nonzero: a given pattern is checked against the detected one where f can be
        traced (ValueError); for a C function it is trusted (an entry outside it would add
        into other entries).
    coloring : {"auto", "column", "row", "bidirectional"}, optional
        Pushforwards per column color, pullbacks per row color, or whichever of the two
        needs fewer products; ``"bidirectional"``: the dense rows pulled back, the other
        nonzeros pushed forward (an arrowhead pattern in a few colors, not n).
    order : str or tuple of str, optional
        The vertex order of the greedy coloring: "natural", "largest_first",
        "smallest_last", "incidence_degree", "dynamic_largest_first", a tuple of them
        (the fewest colors of all), or "auto" (default: every order and eight seeded
        random ones where the graph is small, largest_first where it is large).
    engine : str, optional
        The engine of the products.
    format : {"csr", "csc", "coo"}, optional
        The format of the results.
    workers : int or map-like, optional
        The products in parts at once, as for `cyad.prepare_jacobian`.
    progress : bool, optional
        Show the detection of the pattern as it goes, as `jacobian_sparsity` does.

    Returns
    -------
    SparseJacobianPrep
        With ``sparsity``, ``coloring``, ``colors``, ``n_colors`` and ``new_result()``.

    Examples
    --------
    >>> f = lambda x: x[1:] * x[:-1]
    >>> prep = cyad.prepare_sparse_jacobian(f, np.ones(5))
    >>> prep.coloring, prep.n_colors
    ('column', 2)
    """
    return SparseJacobianPrep(f, x, *args, y=y, sparsity=sparsity, coloring=coloring, order=order,
                              engine=engine, format=format, workers=workers, progress=progress)


def _new_prep(prep_class, f, x, args, y, options):
    """x as the call reads it, and a prep made for the call. Preparing evaluates f, which
    writes y: where y shares x's memory, the call reads a copy of x made first."""
    x = _unaliased(np.asarray(x), y)
    return x, prep_class(f, x, *args, y=y, **options)


def _check_prep(prep_class, prepare, f, prep, options):
    """A prep given to a sparse operator's call is of its kind and made for f."""
    if not isinstance(prep, prep_class):
        raise TypeError(f"prep is a {prep_class.__name__}, not {type(prep).__name__}")
    if options:
        raise TypeError(f"{', '.join(options)}: given to {prepare}, not with prep=")
    # (a bound method is made anew at each access of model.method: the same one is equal)
    if f is not prep._f and not (isinstance(f, types.MethodType) and f == prep._f):
        raise ValueError(
            f"cyad: the prep was made for another function ({_name(prep._f)}, not "
            f"{_name(f)}): pass the very object it was made with (a lambda written again or "
            "a functools.partial made anew is another object), or prepare anew for this one")


def _name(f):
    return getattr(f, "__qualname__", None) or type(f).__name__


def sparse_jacobian(f, x, *args, y=None, prep=None, out=None, **options):
    """The Jacobian of f at x as a scipy.sparse array, from few compressed products.

    Parameters
    ----------
    f, x, y, *args
        As for `cyad.jacobian` and `prepare_sparse_jacobian`.
    prep : SparseJacobianPrep, optional
        From `prepare_sparse_jacobian` (without it, one is made for this call).
    out : scipy.sparse array, optional
        A result of this prep (an earlier call's, or ``prep.new_result()``): its ``data``
        is refilled in place. A prepared call with ``out=`` allocates nothing of its own.
    engine : str, optional
        Without prep: the engine of the products (as for `prepare_sparse_jacobian`);
        a prep keeps its own (giving one with ``prep=`` raises TypeError).
    **options
        Without prep: the other keyword arguments of `prepare_sparse_jacobian`.

    Returns
    -------
    scipy.sparse array
        The Jacobian (f(x).size x x.size) with the pattern's structure, in the prep's
        format (CSR by default); out if given.

    Examples
    --------
    >>> f = lambda x: x[1:] * x[:-1]
    >>> cyad.sparse_jacobian(f, np.array([1.0, 2.0, 3.0])).toarray()
    array([[2., 1., 0.],
           [0., 3., 2.]])
    """
    if prep is None:
        x, prep = _new_prep(SparseJacobianPrep, f, x, args, y, options)
    else:
        _check_prep(SparseJacobianPrep, "prepare_sparse_jacobian", f, prep, options)
    f = prep._function_of(x, args)
    prep._products(f, x, y, None)
    return prep._result(out)


def value_and_sparse_jacobian(f, x, *args, y=None, prep=None, out=None, **options):
    """f(x) and its Jacobian as a scipy.sparse array.

    Parameters
    ----------
    f, x, y, *args, prep, **options
        As for `sparse_jacobian`.
    engine : str, optional
        Without prep: the engine of the products (as for `prepare_sparse_jacobian`);
        a prep keeps its own (giving one with ``prep=`` raises TypeError).
    out : pair, optional
        ``(value_out, jacobian_out)``: an array shaped like f(x), and a result of this
        prep; both are refilled in place.

    Returns
    -------
    tuple
        ``(f(x), jacobian)``; out if given.

    Examples
    --------
    >>> value, jac = cyad.value_and_sparse_jacobian(np.sin, np.zeros(3))
    >>> value, jac.diagonal()
    (array([0., 0., 0.]), array([1., 1., 1.]))
    """
    if prep is None:
        x, prep = _new_prep(SparseJacobianPrep, f, x, args, y, options)
    else:
        _check_prep(SparseJacobianPrep, "prepare_sparse_jacobian", f, prep, options)
    f = prep._function_of(x, args)
    if out is None:
        value = np.empty(prep.out_shape, dtype=prep._first.prep.dtype)
        prep._products(f, x, y, value)
        return (value[()] if value.ndim == 0 else value), prep._result(None)
    # indexed, not unpacked: unpacking here costs an allocation per call
    prep._products(f, x, y, out[0])
    prep._result(out[1])
    return out


def prepare_sparse_hessian(f, x, *args, y=None, sparsity=None, coloring="star", order="auto",
                           engine="tape", format="csr", workers=None, progress=False):
    """Prepare `sparse_hessian` and `value_gradient_and_sparse_hessian` of a scalar f.

    Parameters
    ----------
    f : callable or FunctionWrapper
        The scalar-valued function, ``f(x)`` or (with ``y=``) ``f(y, x)``.
    x : array_like
        An input (float64 or float32); the pattern is detected at x.
    *args
        f's further arguments, ``f(x, *args)``: their floating-point arrays and numbers are
        inputs of every call (new values keep the pattern, the coloring and the recorded
        tapes); a call whose other arguments differ in structure, shape or a static value
        (an int, a string, an object) raises ValueError.
    y : ndarray, optional
        The 0-d output array of a two-argument f.
    sparsity : sparse matrix or array_like of bool, optional
        The symmetric Hessian pattern (x.size x x.size); detected with `hessian_sparsity`
        when not given (required for a C function). It must contain every nonzero:
        checked against the detected one where f can be traced (ValueError), trusted
        for a C function.
    coloring : {"star", "acyclic"}, optional
        ``"star"`` (default): one Hessian-vector product per color of a star coloring,
        each nonzero read directly from one product. ``"acyclic"``: an acyclic coloring,
        often with fewer colors (2 for a tridiagonal or arrowhead Hessian, where star
        takes 3 and 2; 4 for a 2-D 5-point stencil, where star takes 5), each nonzero
        recovered by substitution (a product's entry less nonzeros recovered before it),
        which adds the rounding of those subtractions.
    order : str or tuple of str, optional
        The vertex order of the coloring, as for `prepare_sparse_jacobian`.
    engine : str, optional
        The engine of the Hessian-vector products (the tape by default).
    format : {"csr", "csc", "coo"}, optional
        The format of the results.
    workers : int or map-like, optional
        The products in parts at once, as for `cyad.prepare_hessian`.
    progress : bool, optional
        Show the detection of the pattern as it goes, as `hessian_sparsity` does.

    Returns
    -------
    SparseHessianPrep
        With ``sparsity``, ``coloring``, ``colors``, ``n_colors`` and ``new_result()``.

    Examples
    --------
    >>> f = lambda x: np.sum((x[1:] - x[:-1] ** 2) ** 2)
    >>> cyad.prepare_sparse_hessian(f, np.ones(50)).n_colors
    3
    """
    return SparseHessianPrep(f, x, *args, y=y, sparsity=sparsity, coloring=coloring,
                             order=order, engine=engine, format=format, workers=workers,
                             progress=progress)


def sparse_hessian(f, x, *args, y=None, prep=None, out=None, **options):
    """The Hessian of a scalar f at x as a scipy.sparse array, one hvp per star color.

    Parameters
    ----------
    f, x, y, *args
        As for `cyad.hessian` and `prepare_sparse_hessian`.
    prep : SparseHessianPrep, optional
        From `prepare_sparse_hessian` (without it, one is made for this call).
    out : scipy.sparse array, optional
        A result of this prep, refilled in place; a prepared call with ``out=``
        allocates nothing of its own.
    engine : str, optional
        Without prep: the engine of the products (as for `prepare_sparse_hessian`);
        a prep keeps its own (giving one with ``prep=`` raises TypeError).
    **options
        Without prep: the other keyword arguments of `prepare_sparse_hessian`.

    Returns
    -------
    scipy.sparse array
        The symmetric Hessian with the pattern's structure; out if given.

    Examples
    --------
    >>> f = lambda x: np.sum(x[1:] * x[:-1])
    >>> cyad.sparse_hessian(f, np.ones(3)).toarray()
    array([[0., 1., 0.],
           [1., 0., 1.],
           [0., 1., 0.]])
    """
    if prep is None:
        x, prep = _new_prep(SparseHessianPrep, f, x, args, y, options)
    else:
        _check_prep(SparseHessianPrep, "prepare_sparse_hessian", f, prep, options)
    f = prep._function_of(x, args)
    prep._products(f, x, y)
    return prep._result(out)


def value_gradient_and_sparse_hessian(f, x, *args, y=None, prep=None, out=None, **options):
    """f(x), its gradient, and its Hessian as a scipy.sparse array.

    Parameters
    ----------
    f, x, y, *args, prep, **options
        As for `sparse_hessian`.
    engine : str, optional
        Without prep: the engine of the products (as for `prepare_sparse_hessian`);
        a prep keeps its own (giving one with ``prep=`` raises TypeError).
    out : triple, optional
        ``(value_out, gradient_out, hessian_out)``: a 0-d array, an array shaped like x,
        and a result of this prep; all refilled in place.

    Returns
    -------
    tuple
        ``(f(x), gradient, hessian)``; out if given.

    Examples
    --------
    >>> f = lambda x: np.sum(x ** 3)
    >>> value, gradient, hessian = cyad.value_gradient_and_sparse_hessian(f, np.ones(2))
    >>> value, gradient, hessian.toarray()
    (2.0, array([3., 3.]), array([[6., 0.],
           [0., 6.]]))
    """
    if prep is None:
        x, prep = _new_prep(SparseHessianPrep, f, x, args, y, options)
    else:
        _check_prep(SparseHessianPrep, "prepare_sparse_hessian", f, prep, options)
    f = prep._function_of(x, args)
    x = prep._unaliased_call_input(x, y)    # the gradient's run writes y before the HVPs
    gradient_prep = prep._value_and_gradient_prep(f, x, y)
    if out is None:
        value, gradient = _operators.value_and_gradient(f, x, y=y, prep=gradient_prep)
        prep._products(f, x, y)
        return value, gradient, prep._result(None)
    pair = prep._gradient_pair
    if pair[0] is not out[0] or pair[1] is not out[1]:
        # kept for the next call with the same outputs: a new pair would allocate
        pair = prep._gradient_pair = (out[0], out[1])
    _operators.value_and_gradient(f, x, y=y, prep=gradient_prep, out=pair)
    prep._products(f, x, y)
    prep._result(out[2])
    return out
