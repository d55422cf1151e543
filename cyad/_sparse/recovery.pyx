"""Decompression: a pattern's nonzeros recovered from the compressed products of a coloring.

The colorings, and why each recovers every nonzero, are cyad/_sparse/coloring.pyx's; the patterns
read into CSR index arrays and the adjacency graph are cyad/_sparse/graphs.pyx's.

Design:

- A decompression is prepared once per pattern and coloring: one index into the flattened
  compressed matrix for every nonzero of the pattern (in CSR order; a bidirectional one is
  a pair, each writing its share of the nonzeros). Preparing it checks the coloring (a
  coloring that cannot recover every nonzero is an error, never a wrong number); a call
  is one gather loop into ``out=`` and allocates nothing.
"""
import numpy as np

cimport numpy as cnp

from cyad._fused cimport real

from cyad._sparse.coloring import _checked_colors, _n_colors
from cyad._sparse.graphs import _adjacency_graph, _pattern_csr, _transpose

cnp.import_array()


cdef int _checked_compressed(cnp.ndarray compressed, tuple shape) except -1:
    """The dtype number of a compressed product, checked: 2-D of `shape`, float32 or
    float64, C-contiguous."""
    if (cnp.PyArray_NDIM(compressed) != 2 or cnp.PyArray_DIM(compressed, 0) != shape[0]
            or cnp.PyArray_DIM(compressed, 1) != shape[1]):
        raise ValueError(f"the compressed product has shape {shape}, not "
                         f"{np.shape(compressed)}")
    typenum = cnp.PyArray_TYPE(compressed)
    if typenum != cnp.NPY_DOUBLE and typenum != cnp.NPY_FLOAT:
        raise TypeError(f"the compressed product is float32 or float64, not "
                        f"{compressed.dtype}")
    if not cnp.PyArray_IS_C_CONTIGUOUS(compressed):
        raise ValueError("the compressed product is C-contiguous")
    return typenum


cdef int _check_out(cnp.ndarray out, Py_ssize_t nnz, int typenum, dtype) except -1:
    """out holds the nonzeros: 1-D, contiguous, writeable, nnz of the product's dtype."""
    if (cnp.PyArray_NDIM(out) != 1 or cnp.PyArray_DIM(out, 0) != nnz
            or cnp.PyArray_TYPE(out) != typenum or not cnp.PyArray_IS_C_CONTIGUOUS(out)
            or not cnp.PyArray_ISWRITEABLE(out)):
        raise ValueError(f"out is a writeable contiguous array of {nnz} {dtype} values")
    return 0


cdef class Recovery:
    """What a prepared recovery of a pattern's nonzeros from a compressed product holds:
    the pattern's shape and CSR structure and the product's shape (`Decompression`,
    `Substitution`).

    Attributes
    ----------
    shape : tuple of int
        The shape of the decompressed matrix.
    compressed_shape : tuple of int
        The shape the compressed product must have.
    indptr, indices : ndarray of intp
        The CSR structure of the pattern: the result's ``data`` goes with these.
    partial : bool
        Whether only some nonzeros come from this product.
    """

    cdef readonly tuple shape
    cdef readonly tuple compressed_shape
    cdef readonly object indptr
    cdef readonly object indices
    cdef readonly bint partial
    cdef Py_ssize_t _nnz
    cdef Py_ssize_t _rows
    cdef Py_ssize_t _cols

    def __init__(self, shape, compressed_shape, indptr, indices, partial=False):
        self.shape = tuple(shape)
        self.compressed_shape = tuple(compressed_shape)
        self.indptr = indptr
        self.indices = indices
        self.partial = partial
        self._nnz = np.shape(indices)[0]
        self._rows, self._cols = self.compressed_shape

    @property
    def nnz(self):
        """The number of nonzeros of the pattern (the length of the result)."""
        return self._nnz


cdef class Decompression(Recovery):
    """A prepared decompression: the nonzeros of a pattern from a compressed product.

    Made by `column_decompression`, `row_decompression`, `star_decompression` or (one of
    a pair) `bidirectional_decompression`. A call gathers, for every nonzero of the
    pattern in CSR order, its entry of the compressed product, through indices computed
    once. A partial decompression writes only the nonzeros its product holds, so that a
    pair of them fills one ``out``.

    Attributes
    ----------
    shape, compressed_shape, indptr, indices, nnz, partial
        As for `Recovery`.
    """

    cdef object _source_owner
    cdef object _target_owner
    cdef const Py_ssize_t[::1] _source
    cdef const Py_ssize_t[::1] _target
    cdef Py_ssize_t _count

    def __init__(self, shape, compressed_shape, indptr, indices, source, target=None):
        """Made by the decompression functions.

        source: the flat index into the compressed product of every nonzero recovered;
        target: their positions among the pattern's nonzeros (None: all, in order).
        """
        Recovery.__init__(self, shape, compressed_shape, indptr, indices, target is not None)
        self._source_owner = np.ascontiguousarray(source, dtype=np.intp)
        self._target_owner = np.ascontiguousarray(
            np.arange(self._nnz) if target is None else target, dtype=np.intp)
        count = self._source_owner.size
        if (self._source_owner.ndim != 1 or self._target_owner.shape != (count,)
                or (target is None and count != self._nnz)
                or count and not (0 <= self._source_owner.min()
                                  and self._source_owner.max() < self._rows * self._cols
                                  and 0 <= self._target_owner.min()
                                  and self._target_owner.max() < self._nnz)):
            raise ValueError("every nonzero has one source inside the compressed product")
        self._source = self._source_owner
        self._target = self._target_owner
        self._count = count

    def sources(self):
        """(source, target): for every nonzero this decompression recovers, its flat
        index in the compressed product and its position among the pattern's nonzeros
        (copies), to gather from another layout of the product."""
        return np.array(self._source_owner), np.array(self._target_owner)

    def __call__(self, cnp.ndarray compressed, cnp.ndarray out=None):
        """The nonzeros of the matrix, in the pattern's CSR order.

        Parameters
        ----------
        compressed : ndarray
            The compressed product (float32 or float64, C-contiguous), of shape
            `compressed_shape`.
        out : ndarray, optional
            Where to write the nonzeros: one-dimensional, contiguous, of length `nnz` and
            of compressed's dtype; required by a partial decompression. A call with
            ``out=`` allocates nothing (unless out overlaps compressed, which is then
            copied first).

        Returns
        -------
        ndarray
            out, or a new array: the ``data`` of the CSR matrix with `indptr` and
            `indices`.
        """
        cdef int typenum = _checked_compressed(compressed, self.compressed_shape)
        cdef Py_ssize_t p
        cdef char *src
        cdef char *dst
        if out is None:
            if self.partial:
                raise ValueError("a partial decompression writes into out=, which its "
                                 "partner fills as well")
            out = np.empty(self._nnz, dtype=compressed.dtype)
        else:
            _check_out(out, self._nnz, typenum, compressed.dtype)
        src = <char *>cnp.PyArray_DATA(compressed)
        dst = <char *>cnp.PyArray_DATA(out)
        if (self._count and cnp.PyArray_NBYTES(compressed)
                and dst < src + cnp.PyArray_NBYTES(compressed)
                and src < dst + cnp.PyArray_NBYTES(out)):
            # a gather into its own source would read entries it already overwrote
            compressed = compressed.copy()
            src = <char *>cnp.PyArray_DATA(compressed)
        with nogil:
            # a whole decompression writes in order, without the targets' indirection
            if typenum == cnp.NPY_DOUBLE and not self.partial:
                for p in range(self._count):
                    (<double *>dst)[p] = (<double *>src)[self._source[p]]
            elif typenum == cnp.NPY_DOUBLE:
                for p in range(self._count):
                    (<double *>dst)[self._target[p]] = (<double *>src)[self._source[p]]
            elif not self.partial:
                for p in range(self._count):
                    (<float *>dst)[p] = (<float *>src)[self._source[p]]
            else:
                for p in range(self._count):
                    (<float *>dst)[self._target[p]] = (<float *>src)[self._source[p]]
        return out


def column_decompression(pattern, colors):
    """Prepare the recovery of a Jacobian's nonzeros from ``A @ S`` (a column coloring).

    Parameters
    ----------
    pattern : sparse matrix or array_like
        The Jacobian's pattern (m x n), as for `column_coloring`.
    colors : array_like of int
        A column coloring of the pattern (length n).

    Returns
    -------
    Decompression
        Called with the m x k compressed product ``A @ seed_matrix(colors)``, it gives A's
        nonzeros: ``A[i, j] = B[i, colors[j]]``.

    Raises
    ------
    ValueError
        If two columns of one color share a row.

    Examples
    --------
    >>> from cyad._sparse.coloring import column_coloring, seed_matrix
    >>> from cyad._sparse.recovery import column_decompression
    >>> a = np.array([[1., 2., 0.], [0., 3., 4.]])
    >>> colors = column_coloring(a)
    >>> decompress = column_decompression(a, colors)
    >>> decompress(a @ seed_matrix(colors))
    array([1., 2., 3., 4.])
    """
    shape, indptr, indices = _pattern_csr(pattern)
    colors = _checked_colors(colors, shape[1])
    k = _n_colors(colors)
    rows = np.repeat(np.arange(shape[0], dtype=np.intp), np.diff(indptr))
    _check_alone(_alone(indptr, indices, colors, k), "column", "row")
    return Decompression(shape, (shape[0], k), indptr, indices, rows * k + colors[indices])


def row_decompression(pattern, colors):
    """Prepare the recovery of a Jacobian's nonzeros from ``S.T @ A`` (a row coloring).

    Parameters
    ----------
    pattern : sparse matrix or array_like
        The Jacobian's pattern (m x n), as for `column_coloring`.
    colors : array_like of int
        A row coloring of the pattern (length m).

    Returns
    -------
    Decompression
        Called with the k x n compressed product ``seed_matrix(colors).T @ A``, it gives
        A's nonzeros: ``A[i, j] = B[colors[i], j]``.

    Raises
    ------
    ValueError
        If two rows of one color share a column.

    Examples
    --------
    >>> from cyad._sparse.coloring import row_coloring, seed_matrix
    >>> from cyad._sparse.recovery import row_decompression
    >>> a = np.array([[1., 0.], [0., 2.], [3., 4.]])
    >>> colors = row_coloring(a)
    >>> decompress = row_decompression(a, colors)
    >>> decompress(seed_matrix(colors).T @ a)
    array([1., 2., 3., 4.])
    """
    shape, indptr, indices = _pattern_csr(pattern)
    colors = _checked_colors(colors, shape[0])
    k = _n_colors(colors)
    rows = np.repeat(np.arange(shape[0], dtype=np.intp), np.diff(indptr))
    t_indptr, t_indices, _ = _transpose(shape, indptr, indices)
    _check_alone(_alone(t_indptr, t_indices, colors, k), "row", "column")
    return Decompression(shape, (k, shape[1]), indptr, indices, colors[rows] * shape[1] + indices)


def star_decompression(pattern, colors):
    """Prepare the recovery of a symmetric Hessian's nonzeros from ``H @ S``.

    Parameters
    ----------
    pattern : sparse matrix or array_like
        The Hessian's symmetric pattern (n x n), as for `star_coloring`; its nonzeros,
        the diagonal included, are what is recovered.
    colors : array_like of int
        A star coloring of the pattern (length n), such as `star_coloring` gives.

    Returns
    -------
    Decompression
        Called with the n x k compressed product ``H @ seed_matrix(colors)``, it gives H's
        nonzeros: ``H[i, j]`` is ``B[i, colors[j]]`` when j is the only column of its
        color in row i, else ``B[j, colors[i]]``.

    Raises
    ------
    ValueError
        If the pattern is not symmetric, or the coloring cannot recover some nonzero (it
        is not a star coloring).

    Examples
    --------
    >>> from cyad._sparse.coloring import star_coloring, seed_matrix
    >>> from cyad._sparse.recovery import star_decompression
    >>> h = np.array([[4., 1., 1.], [1., 5., 0.], [1., 0., 6.]])
    >>> colors = star_coloring(h)
    >>> decompress = star_decompression(h, colors)
    >>> decompress(h @ seed_matrix(colors))
    array([4., 1., 1., 1., 5., 1., 6.])
    """
    shape, indptr, indices = _pattern_csr(pattern)
    _adjacency_graph(shape, indptr, indices)        # checks the pattern is symmetric
    colors = _checked_colors(colors, shape[0])
    k = _n_colors(colors)
    rows = np.repeat(np.arange(shape[0], dtype=np.intp), np.diff(indptr))
    # the pattern is its own transpose: entry order[p] is entry p's mirror
    _, _, order = _transpose(shape, indptr, indices)
    alone = _alone(indptr, indices, colors, k)
    mirror_alone = alone[order]
    lost = ~(alone | mirror_alone)
    if lost.any():
        p = np.flatnonzero(lost)[0]
        raise ValueError(f"the colors are not a star coloring of the pattern: the entry "
                         f"({rows[p]}, {indices[p]}) cannot be recovered")
    source = np.where(alone, rows * k + colors[indices], indices * k + colors[rows])
    return Decompression(shape, (shape[0], k), indptr, indices, source)


cdef class Substitution(Recovery):
    """A prepared decompression by substitution: a symmetric Hessian from ``H @ S``.

    Made by `acyclic_decompression`. ``B[v, c]`` sums H[v, w] over v's neighbors w of
    color c; when all but one of them, u, are known, ``H[v, u]`` is B[v, c] less the
    others. A step list computed once orders the off-diagonal pairs so that each one's
    others come before it (peeling the leaves of the 2-colored forests); a call runs the
    steps into ``out`` and allocates nothing. Diagonal entries are read directly.

    Attributes
    ----------
    shape, compressed_shape, indptr, indices, nnz, partial
        As for `Recovery` (partial is False).
    """

    cdef object _owners
    cdef const Py_ssize_t[::1] _diagonal
    cdef const Py_ssize_t[::1] _diagonal_source
    cdef const Py_ssize_t[::1] _source
    cdef const Py_ssize_t[::1] _target
    cdef const Py_ssize_t[::1] _mirror
    cdef const Py_ssize_t[::1] _known_ptr
    cdef const Py_ssize_t[::1] _known

    def __init__(self, shape, compressed_shape, indptr, indices, diagonal, diagonal_source,
                 source, target, mirror, known_ptr, known):
        """Made by `acyclic_decompression` (and rearranged by `rearranged`).

        Step s writes ``out[target[s]] = out[mirror[s]] = compressed.flat[source[s]]``
        less ``out[known[known_ptr[s]:known_ptr[s + 1]]]``, in order; ``out[diagonal]``
        is ``compressed.flat[diagonal_source]``.
        """
        Recovery.__init__(self, shape, compressed_shape, indptr, indices)
        arrays = [np.ascontiguousarray(a, dtype=np.intp) for a in
                  (diagonal, diagonal_source, source, target, mirror, known_ptr, known)]
        self._owners = arrays
        (self._diagonal, self._diagonal_source, self._source, self._target, self._mirror,
         self._known_ptr, self._known) = arrays
        steps = arrays[2].size
        positions = np.concatenate([arrays[0], arrays[3], arrays[4], arrays[6]])
        sources = np.concatenate([arrays[1], arrays[2]])
        if (arrays[3].size != steps or arrays[4].size != steps
                or arrays[5].size != steps + 1 or arrays[0].size != arrays[1].size
                or (positions.size and not (0 <= positions.min() < self._nnz
                                            and positions.max() < self._nnz))
                or (sources.size and not (0 <= sources.min()
                                          and sources.max() < self._rows * self._cols))):
            raise ValueError("a substitution's steps read and write inside the product "
                             "and the nonzeros")

    def rearranged(self, source_map, position, compressed_shape):
        """The same steps on a product of `compressed_shape` whose flat entry
        ``source_map[i]`` holds this one's flat entry i, writing nonzero p at
        ``position[p]`` (another layout of the product, another order of the nonzeros)."""
        source_map = np.asarray(source_map, dtype=np.intp)
        position = np.asarray(position, dtype=np.intp)
        owners = self._owners
        return Substitution(self.shape, compressed_shape, self.indptr, self.indices,
                            position[owners[0]], source_map[owners[1]],
                            source_map[owners[2]], position[owners[3]], position[owners[4]],
                            owners[5], position[owners[6]])

    def __call__(self, cnp.ndarray compressed, cnp.ndarray out=None):
        """The nonzeros of H, in the pattern's CSR order (see `Decompression.__call__`)."""
        cdef int typenum = _checked_compressed(compressed, self.compressed_shape)
        cdef char *src
        cdef char *dst
        if out is None:
            out = np.empty(self._nnz, dtype=compressed.dtype)
        else:
            _check_out(out, self._nnz, typenum, compressed.dtype)
        src = <char *>cnp.PyArray_DATA(compressed)
        dst = <char *>cnp.PyArray_DATA(out)
        if (cnp.PyArray_NBYTES(compressed) and self._nnz
                and dst < src + cnp.PyArray_NBYTES(compressed)
                and src < dst + cnp.PyArray_NBYTES(out)):
            compressed = compressed.copy()
            src = <char *>cnp.PyArray_DATA(compressed)
        with nogil:
            if typenum == cnp.NPY_DOUBLE:
                self._substitute(<const double *>src, <double *>dst)
            else:
                self._substitute(<const float *>src, <float *>dst)
        return out

    cdef void _substitute(self, const real *b, real *out) noexcept nogil:
        cdef Py_ssize_t s, q
        cdef real value
        for s in range(self._diagonal.shape[0]):
            out[self._diagonal[s]] = b[self._diagonal_source[s]]
        for s in range(self._source.shape[0]):
            value = b[self._source[s]]
            for q in range(self._known_ptr[s], self._known_ptr[s + 1]):
                value -= out[self._known[q]]
            out[self._target[s]] = value
            out[self._mirror[s]] = value


def acyclic_decompression(pattern, colors):
    """Prepare the recovery of a symmetric Hessian's nonzeros from ``H @ S`` by substitution.

    Parameters
    ----------
    pattern : sparse matrix or array_like
        The Hessian's symmetric pattern (n x n), as for `acyclic_coloring`.
    colors : array_like of int
        An acyclic coloring of the pattern (length n), such as `acyclic_coloring` gives.

    Returns
    -------
    Substitution
        Called with the n x k compressed product ``H @ seed_matrix(colors)``, it gives H's
        nonzeros in CSR order.

    Raises
    ------
    ValueError
        If the pattern is not symmetric, or the colors are not an acyclic coloring (two
        adjacent vertices share a color, or two colors hold a cycle).

    Examples
    --------
    >>> from cyad._sparse.coloring import acyclic_coloring, seed_matrix
    >>> from cyad._sparse.recovery import acyclic_decompression
    >>> h = np.array([[4., 1., 0.], [1., 5., 2.], [0., 2., 6.]])
    >>> colors = acyclic_coloring(h, order="natural")
    >>> colors
    array([0, 1, 0])
    >>> acyclic_decompression(h, colors)(h @ seed_matrix(colors))
    array([4., 1., 1., 5., 2., 2., 6.])
    """
    shape, indptr, indices = _pattern_csr(pattern)
    ptr, adj, _, _ = _adjacency_graph(shape, indptr, indices)
    n = shape[0]
    colors = _checked_colors(colors, n)
    k = _n_colors(colors)
    rows = np.repeat(np.arange(n, dtype=np.intp), np.diff(indptr))
    off = rows != indices
    clash = np.flatnonzero(off & (colors[rows] == colors[indices]))
    if clash.size:
        p = clash[0]
        raise ValueError(f"the colors are not an acyclic coloring of the pattern: "
                         f"{rows[p]} and {indices[p]} are adjacent and share a color")
    position = np.flatnonzero(off).astype(np.intp)       # adjacency entry -> CSR entry
    _, _, mirror = _transpose(shape, indptr, indices)
    steps = _substitution_steps(ptr, adj, colors, k)
    if steps is None:
        raise ValueError("the colors are not an acyclic coloring of the pattern: two "
                         "colors hold a cycle")
    entry, known_ptr, known = steps
    target = position[entry]
    source = rows[target] * k + colors[indices[target]]
    diagonal = np.flatnonzero(~off)
    return Substitution(shape, (n, k), indptr, indices, diagonal,
                        rows[diagonal] * k + colors[rows[diagonal]], source, target,
                        mirror[target], known_ptr, position[known])


def _substitution_steps(const Py_ssize_t[::1] ptr, const Py_ssize_t[::1] adj,
                        const Py_ssize_t[::1] colors, Py_ssize_t k):
    """The order of the off-diagonal pairs for substitution, or None if a cycle stops it.

    A segment is a vertex v's adjacency entries to one color c (sorted by color, so each
    is contiguous); while one of its pairs is unknown, the pair is B[v, c] less the known
    ones. Each step solves the last unknown pair of a segment whose count fell to one,
    which lowers the count of the mirror's segment. Returns (entry, known_ptr, known):
    the adjacency entry each step solves and the entries it subtracts.
    """
    cdef Py_ssize_t n = ptr.shape[0] - 1
    cdef Py_ssize_t m = adj.shape[0]
    # each vertex's entries sorted by their neighbor's color (stable: by neighbor within)
    key = np.repeat(np.arange(n, dtype=np.intp), np.diff(ptr)) * (k + 1) + np.asarray(colors)[adj]
    cdef Py_ssize_t[::1] by_color = np.argsort(key, kind="stable").astype(np.intp)
    sorted_key = key[by_color]
    starts = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]]) if m else \
        np.zeros(0, dtype=np.intp)
    cdef Py_ssize_t[::1] seg_ptr = np.r_[starts, m].astype(np.intp)
    cdef Py_ssize_t n_seg = starts.size
    cdef Py_ssize_t[::1] seg_of = np.empty(m, dtype=np.intp)   # by adjacency entry
    cdef Py_ssize_t[::1] unknown = np.diff(seg_ptr).astype(np.intp)
    cdef Py_ssize_t[::1] mirror = np.empty(m, dtype=np.intp)  # adjacency entry of (w, v)
    cdef cnp.uint8_t[::1] solved = np.zeros(m, dtype=np.uint8)
    cdef Py_ssize_t[::1] queue = np.empty(n_seg + 1, dtype=np.intp)
    cdef Py_ssize_t[::1] entry = np.empty(m // 2, dtype=np.intp)
    cdef Py_ssize_t[::1] known_ptr = np.zeros(m // 2 + 1, dtype=np.intp)
    cdef Py_ssize_t[::1] known = np.empty(m, dtype=np.intp)
    cdef Py_ssize_t[::1] cursor = np.array(ptr[:n], dtype=np.intp)
    cdef Py_ssize_t s, p, q, v, w, head = 0, tail = 0, steps = 0, n_known = 0, last
    with nogil:
        for s in range(n_seg):
            for q in range(seg_ptr[s], seg_ptr[s + 1]):
                seg_of[by_color[q]] = s
            if unknown[s] == 1:
                queue[tail] = s
                tail += 1
        for v in range(n):                  # mirrors: rows' entries come in order
            for p in range(ptr[v], ptr[v + 1]):
                w = adj[p]
                if w > v:
                    mirror[p] = cursor[w]
                    mirror[cursor[w]] = p
                cursor[w] += 1
        while head < tail:
            s = queue[head]
            head += 1
            if unknown[s] != 1:
                continue
            last = -1
            for q in range(seg_ptr[s], seg_ptr[s + 1]):
                p = by_color[q]
                if solved[p]:
                    known[n_known] = p
                    n_known += 1
                else:
                    last = p
            entry[steps] = last
            steps += 1
            known_ptr[steps] = n_known
            solved[last] = solved[mirror[last]] = 1
            unknown[s] = 0
            s = seg_of[mirror[last]]
            unknown[s] -= 1
            if unknown[s] == 1:
                queue[tail] = s
                tail += 1
    if 2 * steps != m:
        return None
    return np.asarray(entry), np.asarray(known_ptr), np.asarray(known)[:n_known]


def bidirectional_decompression(pattern, column_colors, row_colors):
    """Prepare the recovery of a Jacobian's nonzeros from a forward and a reverse product.

    Parameters
    ----------
    pattern : sparse matrix or array_like
        The Jacobian's pattern (m x n), as for `column_coloring`.
    column_colors, row_colors : array_like of int
        The colors of a bidirectional coloring (-1: in no seed), such as
        `bidirectional_coloring` gives.

    Returns
    -------
    forward, reverse : Decompression
        Two partial decompressions that fill one ``out``: forward from the m x kc product
        ``A @ seed_matrix(column_colors)`` (the nonzeros it holds alone), reverse from the
        kr x n product ``seed_matrix(row_colors).T @ A`` (the others).

    Raises
    ------
    ValueError
        If some nonzero is held alone by neither product.

    Examples
    --------
    >>> from cyad._sparse.coloring import bidirectional_coloring, seed_matrix
    >>> from cyad._sparse.recovery import bidirectional_decompression
    >>> a = np.diag([1., 2., 3.])
    >>> a[0] = a[:, 0] = 4
    >>> column_colors, row_colors = bidirectional_coloring(a)
    >>> forward, reverse = bidirectional_decompression(a, column_colors, row_colors)
    >>> out = np.empty(forward.nnz)
    >>> _ = forward(a @ seed_matrix(column_colors), out=out)
    >>> reverse(seed_matrix(row_colors).T @ a, out=out)
    array([4., 4., 4., 4., 2., 4., 3.])
    """
    shape, indptr, indices = _pattern_csr(pattern)
    m, n = shape
    column_colors = _checked_colors(column_colors, n, uncolored=True)
    row_colors = _checked_colors(row_colors, m, uncolored=True)
    kc, kr = _n_colors(column_colors), _n_colors(row_colors)
    csc_ptr, csc_rows, order = _transpose(shape, indptr, indices)
    forward = _alone(indptr, indices, column_colors, kc)
    reverse = np.empty_like(forward)
    reverse[order] = _alone(csc_ptr, csc_rows, row_colors, kr)
    lost = ~(forward | reverse)
    rows = np.repeat(np.arange(m, dtype=np.intp), np.diff(indptr))
    if lost.any():
        p = np.flatnonzero(lost)[0]
        raise ValueError(f"the colors are not a bidirectional coloring of the pattern: the "
                         f"entry ({rows[p]}, {indices[p]}) cannot be recovered")
    ahead, back = np.flatnonzero(forward), np.flatnonzero(~forward)
    return (
        Decompression(shape, (m, kc), indptr, indices,
                      rows[ahead] * kc + column_colors[indices[ahead]], ahead),
        Decompression(shape, (kr, n), indptr, indices,
                      row_colors[rows[back]] * n + indices[back], back),
    )


def _alone(const Py_ssize_t[::1] indptr, const Py_ssize_t[::1] indices,
           const Py_ssize_t[::1] colors, Py_ssize_t k):
    """For every entry of a CSR pattern: whether its column is the only one of its color in
    its row, so that the row's entry of that color in the compressed product is it alone
    (an uncolored column, -1, is in no product: never alone, and never in the way)."""
    cdef Py_ssize_t[::1] tally = np.zeros(k, dtype=np.intp)
    cdef cnp.uint8_t[::1] alone = np.zeros(indices.shape[0], dtype=np.uint8)
    cdef Py_ssize_t i, p, c
    with nogil:
        for i in range(indptr.shape[0] - 1):
            for p in range(indptr[i], indptr[i + 1]):
                c = colors[indices[p]]
                if c >= 0:
                    tally[c] += 1
            for p in range(indptr[i], indptr[i + 1]):
                c = colors[indices[p]]
                alone[p] = c >= 0 and tally[c] == 1
            for p in range(indptr[i], indptr[i + 1]):
                c = colors[indices[p]]
                if c >= 0:
                    tally[c] = 0
    return np.asarray(alone).view(bool)


def _check_alone(alone, kind, other):
    if not alone.all():
        raise ValueError(f"the colors are not a valid {kind} coloring: two {kind}s of one "
                         f"color share a {other}")
