"""Graph colorings of sparsity patterns, and the seed matrices of their compressed products.

A sparse Jacobian A (m x n) is recovered from few products: columns that share no row can
be pushed together, so with a column coloring c (one color per column, columns sharing a
row colored apart) the compressed product B = A @ S, S the n x k 0/1 seed matrix
(S[j, c[j]] = 1), holds every nonzero once: A[i, j] = B[i, c[j]]. A row coloring does the
same for reverse mode (B = S.T @ A, A[i, j] = B[c[i], j]). A symmetric Hessian needs fewer
colors: with a star coloring (a distance-1 coloring in which every path on four vertices
uses at least three colors) of its adjacency graph, every H[i, j] is read directly from
B = H @ S, either as B[i, c[j]] (when j is the only one of its color among the nonzeros of
row i) or as B[j, c[i]]; the star property guarantees one of the two (Gebremedhin, Manne,
Pothen 2005, "What color is your Jacobian? Graph coloring for computing derivatives",
section 4, direct recovery). A bidirectional coloring sends the dense rows to reverse
mode: they are row-colored among themselves, the columns colored on the other rows, and
each nonzero read from whichever of the two products holds it alone.

The graphs these colorings color and their vertex orders are cyad/_sparse/graphs.pyx's; the
recovery of the nonzeros from the compressed products is cyad/_sparse/recovery.pyx's.

Design:

- Greedy coloring gives each vertex, in order, the smallest color none of its neighbors
  has. A column or row coloring is then recolored by Culberson's iterated greedy (1992,
  "Iterated greedy graph coloring and the difficulty landscape"): greedy again, visiting the
  color classes one after another (reversed, largest first, or shuffled), which never needs
  more colors and often fewer; passes stop when three in a row gain nothing.
- ``order="auto"`` (the default) colors a graph of at most 200 000 adjacency entries in
  every order and in eight seeded random orders and keeps the fewest colors (largest_first
  on a tie); a larger graph in largest_first only, so that preparing stays linear in its
  size. A tuple of order names keeps the best of those. A coloring that reaches a lower
  bound (a column coloring: the longest row's nonzeros, which are pairwise adjacent) ends
  the search.
- Star coloring is algorithm 4.1 of Gebremedhin, Tarafdar, Manne, Pothen 2007, "New
  acyclic and star coloring algorithms with application to computing Hessians", as
  SparseMatrixColorings.jl writes it: the 2-colored stars and their hubs are kept while
  coloring, and forbid the colors that would make a 2-colored path on four vertices.
"""
import numpy as np

from cyad._sparse.graphs import (_adjacency_graph, _intersection_graph, _orders,
                                 _pattern_csr, _transpose)


def _greedy(const Py_ssize_t[::1] ptr, const Py_ssize_t[::1] adj,
            const Py_ssize_t[::1] order):
    """Greedy distance-1 coloring: each vertex in order takes the smallest free color."""
    cdef Py_ssize_t n = ptr.shape[0] - 1
    cdef Py_ssize_t[::1] color = np.full(n, -1, dtype=np.intp)
    cdef Py_ssize_t[::1] forbidden = np.full(n + 1, -1, dtype=np.intp)
    cdef Py_ssize_t t, v, p, c
    with nogil:
        for t in range(n):
            v = order[t]
            for p in range(ptr[v], ptr[v + 1]):
                c = color[adj[p]]
                if c >= 0:
                    forbidden[c] = v
            c = 0
            while forbidden[c] == v:
                c += 1
            color[v] = c
    return np.asarray(color)


def _recolored(ptr, adj, colors, bound=1, patience=3):
    """Culberson's iterated greedy: recolor greedily, visiting one color class after another.

    A class holds no two adjacent vertices, so each class, visited whole, takes at most the
    colors the classes before it took: never more colors. The class order cycles through
    reversed, largest first and shuffled (seeded); the passes stop after `patience` in a
    row without fewer colors, or at `bound` colors (a lower bound).
    """
    rng = np.random.default_rng(1)
    best = colors
    stale = 0
    passes = 0
    while stale < patience and _n_colors(best) > max(bound, 1):
        k = _n_colors(colors)
        if passes % 3 == 0:
            rank = np.arange(k)[::-1]
        elif passes % 3 == 1:
            rank = np.empty(k, dtype=np.intp)
            rank[np.argsort(-np.bincount(colors, minlength=k), kind="stable")] = np.arange(k)
        else:
            rank = rng.permutation(k)
        passes += 1
        colors = _greedy(ptr, adj, np.argsort(rank[colors], kind="stable").astype(np.intp))
        if _n_colors(colors) < _n_colors(best):
            best = colors
            stale = 0
        else:
            stale += 1
    return best


def _fewest(colorings, bound=1):
    """The first of the colorings with the fewest colors; the first with `bound` colors (a
    lower bound: no coloring has fewer) ends the search, the rest left unmade."""
    best = None
    for colors in colorings:
        if best is None or _n_colors(colors) < _n_colors(best):
            best = colors
            if _n_colors(best) <= bound:
                break
    return best


def _star(const Py_ssize_t[::1] ptr, const Py_ssize_t[::1] adj,
          const Py_ssize_t[::1] edge, Py_ssize_t n_edges, const Py_ssize_t[::1] order):
    """Star coloring, algorithm 4.1 of Gebremedhin et al. 2007.

    While coloring v, a colored neighbor w forbids its color (distance 1) and:
    case 1, v already met a neighbor q of w's color: then v-w-?-q paths would be
    2-colored, so the colors of all neighbors of w and q are forbidden; case 2, w's neighbor
    x is the hub of the 2-colored star holding edge w-x: v must not take x's color. After v
    is colored, its edges join the stars they extend (star and hub), or start new ones.
    """
    cdef Py_ssize_t n = ptr.shape[0] - 1
    cdef Py_ssize_t[::1] color = np.full(n, -1, dtype=np.intp)
    cdef Py_ssize_t[::1] forbidden = np.full(n + 1, -1, dtype=np.intp)
    # per color: the vertex being colored that first met a neighbor of this color, that
    # neighbor, and their edge
    cdef Py_ssize_t[::1] first_v = np.full(n + 1, -1, dtype=np.intp)
    cdef Py_ssize_t[::1] first_w = np.full(n + 1, -1, dtype=np.intp)
    cdef Py_ssize_t[::1] first_edge = np.full(n + 1, -1, dtype=np.intp)
    cdef Py_ssize_t[::1] treated = np.full(n, -1, dtype=np.intp)
    cdef Py_ssize_t[::1] star = np.full(n_edges, -1, dtype=np.intp)
    # a star's hub; a star of one edge has none yet: -1 - (one of its ends)
    cdef Py_ssize_t[::1] hub = np.empty(n_edges, dtype=np.intp)
    cdef Py_ssize_t n_stars = 0
    cdef Py_ssize_t t, v, p, q, w, x, c, cw, s
    cdef bint extended
    with nogil:
        for t in range(n):
            v = order[t]
            for p in range(ptr[v], ptr[v + 1]):
                w = adj[p]
                cw = color[w]
                if cw < 0:
                    continue
                forbidden[cw] = v
                if first_v[cw] == v:            # case 1
                    if treated[first_w[cw]] != v:
                        _treat(ptr, adj, color, forbidden, treated, v, first_w[cw])
                    _treat(ptr, adj, color, forbidden, treated, v, w)
                else:
                    first_v[cw] = v
                    first_w[cw] = w
                    first_edge[cw] = edge[p]
                    for q in range(ptr[w], ptr[w + 1]):     # case 2
                        x = adj[q]
                        if x == v or color[x] < 0:
                            continue
                        if x == hub[star[edge[q]]]:
                            forbidden[color[x]] = v
            c = 0
            while forbidden[c] == v:
                c += 1
            color[v] = c
            # the stars that v's edges extend, or start
            for p in range(ptr[v], ptr[v + 1]):
                w = adj[p]
                cw = color[w]
                if cw < 0:
                    continue
                extended = False
                for q in range(ptr[w], ptr[w + 1]):     # x-w-v with x of v's color: hub w
                    x = adj[q]
                    if x != v and color[x] == c:
                        s = star[edge[q]]
                        hub[s] = w
                        star[edge[p]] = s
                        extended = True
                        break
                if not extended:
                    if first_v[cw] == v and first_w[cw] != w:   # w-v-q, w and q alike: hub v
                        s = star[first_edge[cw]]
                        hub[s] = v
                        star[edge[p]] = s
                    else:
                        hub[n_stars] = -1 - (v if v > w else w)
                        star[edge[p]] = n_stars
                        n_stars += 1
    return np.asarray(color)


cdef inline void _treat(const Py_ssize_t[::1] ptr, const Py_ssize_t[::1] adj,
                        Py_ssize_t[::1] color, Py_ssize_t[::1] forbidden,
                        Py_ssize_t[::1] treated, Py_ssize_t v, Py_ssize_t w) noexcept nogil:
    """Forbid for v the colors of w's neighbors."""
    cdef Py_ssize_t p, c
    for p in range(ptr[w], ptr[w + 1]):
        c = color[adj[p]]
        if c >= 0:
            forbidden[c] = v
    treated[w] = v


def _acyclic(const Py_ssize_t[::1] ptr, const Py_ssize_t[::1] adj,
             const Py_ssize_t[::1] edge, Py_ssize_t n_edges, const Py_ssize_t[::1] order):
    """Acyclic coloring, algorithm 3.1 of Gebremedhin et al. 2007.

    The 2-colored trees are kept as a disjoint-set forest over the edges. While coloring
    v, a colored neighbor w forbids its color, and a tree that v meets through two of its
    edges (w-x and w'-x' in one tree, v adjacent to w and w') forbids x's color: v taking
    it would close a 2-colored cycle. After v is colored, its edges to neighbors of one
    color join into a star around v, and an edge v-w joins the tree of every edge w-x
    with x of v's color.
    """
    cdef Py_ssize_t n = ptr.shape[0] - 1
    cdef Py_ssize_t[::1] color = np.full(n, -1, dtype=np.intp)
    cdef Py_ssize_t[::1] forbidden = np.full(n + 1, -1, dtype=np.intp)
    # per color: the vertex being colored that first met a neighbor of this color, and
    # their edge
    cdef Py_ssize_t[::1] first_v = np.full(n + 1, -1, dtype=np.intp)
    cdef Py_ssize_t[::1] first_edge = np.full(n + 1, -1, dtype=np.intp)
    # per tree (its root edge): the vertex being colored that first met it, and through
    # which neighbor
    cdef Py_ssize_t[::1] visit_v = np.full(n_edges, -1, dtype=np.intp)
    cdef Py_ssize_t[::1] visit_w = np.full(n_edges, -1, dtype=np.intp)
    cdef Py_ssize_t[::1] parent = np.arange(n_edges, dtype=np.intp)
    cdef Py_ssize_t[::1] rank = np.zeros(n_edges, dtype=np.intp)
    cdef Py_ssize_t t, v, p, q, w, x, c, cw, r
    with nogil:
        for t in range(n):
            v = order[t]
            for p in range(ptr[v], ptr[v + 1]):
                cw = color[adj[p]]
                if cw >= 0:
                    forbidden[cw] = v
            for p in range(ptr[v], ptr[v + 1]):
                w = adj[p]
                if color[w] < 0:
                    continue
                for q in range(ptr[w], ptr[w + 1]):
                    x = adj[q]
                    if color[x] < 0 or forbidden[color[x]] == v:
                        continue
                    r = _root(parent, edge[q])
                    if visit_v[r] != v:
                        visit_v[r] = v
                        visit_w[r] = w
                    elif visit_w[r] != w:
                        forbidden[color[x]] = v
            c = 0
            while forbidden[c] == v:
                c += 1
            color[v] = c
            for p in range(ptr[v], ptr[v + 1]):
                cw = color[adj[p]]
                if cw < 0:
                    continue
                if first_v[cw] != v:
                    first_v[cw] = v
                    first_edge[cw] = edge[p]
                else:
                    _union(parent, rank, edge[p], first_edge[cw])
            for p in range(ptr[v], ptr[v + 1]):
                w = adj[p]
                if color[w] < 0:
                    continue
                for q in range(ptr[w], ptr[w + 1]):
                    x = adj[q]
                    if x != v and color[x] == c:
                        _union(parent, rank, edge[p], edge[q])
    return np.asarray(color)


cdef inline Py_ssize_t _root(Py_ssize_t[::1] parent, Py_ssize_t e) noexcept nogil:
    """The root of e's tree in the disjoint-set forest (halving the path on the way)."""
    while parent[e] != e:
        parent[e] = parent[parent[e]]
        e = parent[e]
    return e


cdef inline void _union(Py_ssize_t[::1] parent, Py_ssize_t[::1] rank, Py_ssize_t a,
                        Py_ssize_t b) noexcept nogil:
    """Join the trees of edges a and b (union by rank)."""
    a = _root(parent, a)
    b = _root(parent, b)
    if a == b:
        return
    if rank[a] < rank[b]:
        a, b = b, a
    elif rank[a] == rank[b]:
        rank[a] += 1
    parent[b] = a


def column_coloring(pattern, order="auto"):
    """Color the columns of a sparsity pattern so that columns sharing a row differ.

    The columns of one color can be pushed forward together: with the seed matrix S of the
    coloring, the compressed product ``A @ S`` holds every nonzero of A once.

    Parameters
    ----------
    pattern : sparse matrix or array_like
        The pattern: anything with ``tocsr()`` (its stored entries form the pattern), or
        a dense two-dimensional array (its nonzeros).
    order : str or tuple of str, optional
        The order in which the greedy coloring visits the columns: "natural",
        "largest_first", "smallest_last", "incidence_degree" or "dynamic_largest_first",
        each on the column intersection graph; a tuple of them (the fewest colors of
        all); or "auto" (default): every order and eight seeded random ones on a graph of
        at most 200 000 adjacency entries, largest_first on a larger one.

    Returns
    -------
    ndarray of intp
        The color of every column, from 0 to the number of colors less one.

    Examples
    --------
    >>> from cyad._sparse.coloring import column_coloring
    >>> tridiagonal = np.eye(6) + np.eye(6, k=1) + np.eye(6, k=-1)
    >>> column_coloring(tridiagonal, order="natural")
    array([0, 1, 2, 0, 1, 2])
    """
    return _column_colors(*_pattern_csr(pattern), order)


def _column_colors(shape, indptr, indices, order):
    """A column coloring of the CSR pattern (row coloring: give it the transpose)."""
    csc_ptr, csc, _ = _transpose(shape, indptr, indices)
    ptr, adj = _intersection_graph(shape[1], csc_ptr, csc, indptr, indices)
    # the columns of one row are pairwise adjacent: no coloring has fewer colors than the
    # longest row has nonzeros
    bound = int(np.diff(indptr).max()) if shape[0] else 0
    return _fewest((_recolored(ptr, adj, _greedy(ptr, adj, vertex_order), bound)
                    for vertex_order in _orders(ptr, adj, order)), bound)


def row_coloring(pattern, order="auto"):
    """Color the rows of a sparsity pattern so that rows sharing a column differ.

    The rows of one color can be pulled back together: with the seed matrix S of the
    coloring, the compressed product ``S.T @ A`` holds every nonzero of A once.

    Parameters
    ----------
    pattern : sparse matrix or array_like
        The pattern, as for `column_coloring`.
    order : str or tuple of str, optional
        The order of the rows, as for `column_coloring` (on the row intersection graph).

    Returns
    -------
    ndarray of intp
        The color of every row, from 0 to the number of colors less one.

    Examples
    --------
    >>> from cyad._sparse.coloring import row_coloring
    >>> pattern = np.eye(5)
    >>> pattern[4] = 1                  # the last row depends on every column
    >>> row_coloring(pattern)
    array([1, 1, 1, 1, 0])
    """
    shape, indptr, indices = _pattern_csr(pattern)
    csc_ptr, csc, _ = _transpose(shape, indptr, indices)
    return _column_colors(shape[::-1], csc_ptr, csc, order)


def star_coloring(pattern, order="auto"):
    """Star-color the adjacency graph of a symmetric sparsity pattern (a Hessian's).

    Adjacent vertices differ in color, and every path on four vertices uses at least three
    colors, so that `star_decompression` recovers every nonzero of H from ``H @ S``.

    Parameters
    ----------
    pattern : sparse matrix or array_like
        A symmetric pattern, as for `column_coloring`; its diagonal does not matter.
    order : str or tuple of str, optional
        The order of the vertices, as for `column_coloring` (on the adjacency graph).

    Returns
    -------
    ndarray of intp
        The color of every row (and column), from 0 to the number of colors less one.

    Raises
    ------
    ValueError
        If the pattern is not square and symmetric.

    Examples
    --------
    >>> from cyad._sparse.coloring import star_coloring
    >>> arrowhead = np.eye(5)
    >>> arrowhead[0] = arrowhead[:, 0] = 1
    >>> star_coloring(arrowhead)
    array([0, 1, 1, 1, 1])
    """
    return _symmetric_colors(pattern, order, _star)


def acyclic_coloring(pattern, order="auto"):
    """Acyclic-color the adjacency graph of a symmetric sparsity pattern (a Hessian's).

    Adjacent vertices differ in color, and every cycle uses at least three colors: the
    edges between any two colors form a forest, from whose leaves `acyclic_decompression`
    recovers every nonzero of H from ``H @ S`` by substitution. It needs no more colors
    than a star coloring, often fewer (a tridiagonal Hessian: 2 against 3), at the price
    of subtractions in the recovery.

    Parameters
    ----------
    pattern : sparse matrix or array_like
        A symmetric pattern, as for `column_coloring`; its diagonal does not matter.
    order : str or tuple of str, optional
        The order of the vertices, as for `column_coloring` (on the adjacency graph).

    Returns
    -------
    ndarray of intp
        The color of every row (and column), from 0 to the number of colors less one.

    Raises
    ------
    ValueError
        If the pattern is not square and symmetric.

    Examples
    --------
    >>> from cyad._sparse.coloring import acyclic_coloring
    >>> tridiagonal = np.eye(6) + np.eye(6, k=1) + np.eye(6, k=-1)
    >>> acyclic_coloring(tridiagonal, order="natural")
    array([0, 1, 0, 1, 0, 1])
    """
    return _symmetric_colors(pattern, order, _acyclic)


def _symmetric_colors(pattern, order, color):
    """The coloring `color` (_star or _acyclic) of a symmetric pattern's adjacency graph
    with the fewest colors over the orders (an edge needs two)."""
    ptr, adj, edge, n_edges = _adjacency_graph(*_pattern_csr(pattern))
    return _fewest((color(ptr, adj, edge, n_edges, vertex_order)
                    for vertex_order in _orders(ptr, adj, order)), 2 if n_edges else 1)


def bidirectional_coloring(pattern, order="auto"):
    """Color columns for forward and rows for reverse products that together hold A.

    The dense rows of A go to reverse mode: rows with at least t nonzeros are row-colored
    among themselves and their nonzeros recovered from ``Sr.T @ A``; the columns are
    colored on the other rows only, whose nonzeros ``A @ Sc`` recovers. The threshold t
    is chosen among the rows' lengths for the fewest products (t above every row: a plain
    column coloring; t = 0: a plain row coloring). A dense row then costs one reverse
    product rather than a forward product per nonzero (the threshold partition of Coleman
    and Verma 1998, "The efficient computation of sparse Jacobian matrices using automatic
    differentiation", and Hossain and Steihaug 1998).

    Parameters
    ----------
    pattern : sparse matrix or array_like
        The pattern (m x n), as for `column_coloring`.
    order : str or tuple of str, optional
        The order of the columns and of the rows, as for `column_coloring`; "auto" picks
        the split with largest_first colorings, then colors it in every order.

    Returns
    -------
    column_colors : ndarray of intp
        For every column its color among the forward seeds, or -1 when no forward
        product needs it.
    row_colors : ndarray of intp
        For every row its color among the reverse seeds, or -1.

    Examples
    --------
    >>> from cyad._sparse.coloring import bidirectional_coloring
    >>> arrowhead = np.eye(5)
    >>> arrowhead[0] = arrowhead[:, 0] = 1
    >>> bidirectional_coloring(arrowhead)
    (array([0, 1, 1, 1, 1]), array([ 0, -1, -1, -1, -1]))
    """
    shape, indptr, indices = _pattern_csr(pattern)
    n = shape[1]
    lengths = np.diff(indptr)
    # t = n + 1 sends no row to reverse mode, t = 0 every row; between them the longest
    # distinct lengths (a bounded number of colorings)
    distinct = sorted(set(lengths.tolist()) - {0}, reverse=True)
    thresholds = [n + 1] + distinct[:16] + [0]
    # The two intersection graphs of a threshold have at most this many edges (a line of
    # r nonzeros gives r^2): a threshold far costlier than the cheapest is not tried, so
    # that a dense row (or column) is never put in a graph it would fill.
    costs = [_graph_bound(lengths, indices, n, lengths >= t) for t in thresholds]
    affordable = 64 * min(costs) + 10 ** 6
    # "auto" picks the threshold with largest_first colorings, then colors its split in
    # every order (trying them all at every threshold would cost as many colorings again)
    search = "largest_first" if isinstance(order, str) and order == "auto" else order
    best = None
    for threshold, cost in zip(thresholds, costs):
        if cost > affordable:
            continue
        colors = _split_colors(shape, indptr, indices, lengths >= threshold, search)
        products = _n_colors(colors[0]) + _n_colors(colors[1])
        if best is None or products < best[0]:
            best = (products, threshold, colors)
    if search is order:
        return best[2]
    colors = _split_colors(shape, indptr, indices, lengths >= best[1], order)
    return colors if _n_colors(colors[0]) + _n_colors(colors[1]) < best[0] else best[2]


def _split_colors(shape, indptr, indices, dense, order):
    """Column colors of the rows not dense (-1: in none of them), row colors of the dense
    rows (-1: not dense), each compacted."""
    m, n = shape
    lengths = np.diff(indptr)
    kept = np.repeat(~dense, lengths)
    sparse_ptr = np.zeros(m + 1, dtype=np.intp)
    np.cumsum(np.where(dense, 0, lengths), out=sparse_ptr[1:])
    columns = _column_colors(shape, sparse_ptr, indices[kept], order)
    columns[np.bincount(indices[kept], minlength=n) == 0] = -1
    dense_ptr = np.zeros(m + 1, dtype=np.intp)
    np.cumsum(np.where(dense, lengths, 0), out=dense_ptr[1:])
    csc_ptr, csc, _ = _transpose(shape, dense_ptr, indices[~kept])
    rows = _column_colors((n, m), csc_ptr, csc, order)
    rows[~dense | (lengths == 0)] = -1
    return _compact(columns), _compact(rows)


def _graph_bound(lengths, indices, n, dense):
    """The edges, at most, of the column graph of the rows not dense and of the row graph
    of the dense ones."""
    in_dense = np.bincount(indices[np.repeat(dense, lengths)], minlength=n)
    return int(np.sum(np.where(dense, 0, lengths) ** 2) + np.sum(in_dense ** 2))


def _compact(colors):
    """The colors in use renumbered 0..k-1, in order (-1 stays)."""
    present = np.zeros(_n_colors(colors) + 1, dtype=bool)
    present[colors[colors >= 0]] = True
    return np.where(colors >= 0, (np.cumsum(present) - 1)[colors], -1).astype(np.intp)


def seed_matrix(colors, dtype=np.float64):
    """The n x k 0/1 seed matrix of a coloring: column c marks the vertices of color c.

    Parameters
    ----------
    colors : array_like of int
        A coloring, colors from 0 to k - 1; -1 (from `bidirectional_coloring`) leaves a
        vertex out of every seed.
    dtype : dtype, optional
        The seed's dtype (float64 by default).

    Returns
    -------
    ndarray
        S with ``S[j, colors[j]] = 1`` and zeros elsewhere: the directions to push forward
        (or, for a row coloring, to pull back).

    Examples
    --------
    >>> from cyad._sparse.coloring import seed_matrix
    >>> seed_matrix([0, 1, 0])
    array([[1., 0.],
           [0., 1.],
           [1., 0.]])
    """
    colors = _checked_colors(colors, None, uncolored=True)
    seed = np.zeros((colors.shape[0], _n_colors(colors)), dtype=dtype)
    seeded = np.flatnonzero(colors >= 0)
    seed[seeded, colors[seeded]] = 1
    return seed


def _checked_colors(colors, n, uncolored=False):
    """colors as an intp array, checked; uncolored: -1 (in no seed) allowed."""
    colors = np.asarray(colors)
    if colors.ndim != 1 or (colors.size and not np.issubdtype(colors.dtype, np.integer)):
        raise ValueError("colors are a one-dimensional array of integers")
    if n is not None and colors.shape[0] != n:
        raise ValueError(f"the pattern needs {n} colors, not {colors.shape[0]}")
    if colors.size and colors.min() < (-1 if uncolored else 0):
        raise ValueError("colors are -1 (in no seed) or more" if uncolored
                         else "colors are not negative")
    return colors.astype(np.intp)


def _n_colors(colors):
    return max(int(colors.max()) + 1, 0) if colors.size else 0
