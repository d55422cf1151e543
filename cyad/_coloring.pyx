"""Graph colorings of sparsity patterns, and the decompression of compressed derivatives.

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

Design:

- A pattern (anything with ``tocsr()``, such as a scipy.sparse matrix, or a dense array
  whose nonzeros form the pattern) is read once into sorted, deduplicated CSR index arrays;
  SciPy is never imported.
- Every coloring is a distance-1 coloring of a plain graph in CSR form: a column coloring
  colors the column intersection graph (columns adjacent when they share a row), a row
  coloring the row intersection graph, a star coloring the adjacency graph of the symmetric
  pattern (its diagonal left out); a row of r nonzeros gives the column graph r^2 edges, so
  a dense row costs time and memory quadratic in its length. The orders ("natural",
  "largest_first", "smallest_last", "incidence_degree", "dynamic_largest_first") are
  computed on that graph, the dynamic ones with bucket queues in linear time (ColPack's
  and SparseMatrixColorings.jl's orders).
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
- A decompression is prepared once per pattern and coloring: one index into the flattened
  compressed matrix for every nonzero of the pattern (in CSR order; a bidirectional one is
  a pair, each writing its share of the nonzeros). Preparing it checks the coloring (a
  coloring that cannot recover every nonzero is an error, never a wrong number); a call
  is one gather loop into ``out=`` and allocates nothing.
"""
import numpy as np

cimport numpy as cnp

from cyad._fused cimport real

cnp.import_array()

ORDERS = ("natural", "largest_first", "smallest_last", "incidence_degree",
          "dynamic_largest_first")
# order="auto" tries every order (and random ones) on graphs up to this many adjacency
# entries: each try is a greedy pass and its recoloring, linear in the entries
_AUTO_TRY_ALL = 200_000
_RANDOM_ORDERS = 8
_RANDOM = object()      # stands for the random orders among the names "auto" tries


# ---------------------------------------------------------------- patterns and graphs


def _pattern_csr(pattern):
    """(shape, indptr, indices) of a pattern: sorted, deduplicated CSR index arrays (intp)."""
    if hasattr(pattern, "tocsr"):
        csr = pattern.tocsr()
        m, n = csr.shape
        indptr = np.asarray(csr.indptr, dtype=np.intp)
        cols = np.asarray(csr.indices[:indptr[-1]], dtype=np.intp)
        rows = np.repeat(np.arange(m, dtype=np.intp), np.diff(indptr))
    else:
        dense = np.asarray(pattern)
        if dense.ndim != 2:
            raise ValueError(f"a sparsity pattern is two-dimensional, not {dense.ndim}-dimensional")
        m, n = dense.shape
        rows, cols = np.nonzero(dense)
        rows = rows.astype(np.intp, copy=False)
        cols = cols.astype(np.intp, copy=False)
    if cols.size and (cols.min() < 0 or cols.max() >= n):
        raise ValueError("a column index of the pattern lies outside its shape")
    # sorting row * n + column puts every row's columns in order and duplicates side by
    # side (np.sort and a mask: np.unique takes ten times as long)
    keys = rows.astype(np.int64) * n + cols
    if keys.size and not np.all(keys[1:] > keys[:-1]):
        keys = np.sort(keys)
        keys = keys[np.r_[True, keys[1:] != keys[:-1]]]
    rows, cols = np.divmod(keys, n) if n else (keys, keys)
    indptr = np.zeros(m + 1, dtype=np.intp)
    np.cumsum(np.bincount(rows, minlength=m), out=indptr[1:])
    return (int(m), int(n)), indptr, cols.astype(np.intp)


def _transpose(shape, indptr, indices):
    """CSR index arrays of the transposed pattern (each row's columns still sorted), and
    the CSR position of each of its entries."""
    m, n = shape
    rows = np.repeat(np.arange(m, dtype=np.intp), np.diff(indptr))
    order = np.argsort(indices, kind="stable").astype(np.intp)
    t_indptr = np.zeros(n + 1, dtype=np.intp)
    np.cumsum(np.bincount(indices, minlength=n), out=t_indptr[1:])
    return t_indptr, rows[order], order


def _intersection_graph(Py_ssize_t n, const Py_ssize_t[::1] by_vertex_ptr,
                        const Py_ssize_t[::1] by_vertex, const Py_ssize_t[::1] by_other_ptr,
                        const Py_ssize_t[::1] by_other):
    """CSR graph on n vertices, two adjacent when they share an entry of the other side.

    For columns: by_vertex is the CSC structure (rows of each column), by_other the CSR one.
    """
    cdef Py_ssize_t[::1] mark = np.full(n, -1, dtype=np.intp)
    cdef Py_ssize_t[::1] ptr = np.zeros(n + 1, dtype=np.intp)
    cdef Py_ssize_t v, p, q, i, w, count = 0
    with nogil:
        for v in range(n):                      # first pass: the degrees
            mark[v] = v
            for p in range(by_vertex_ptr[v], by_vertex_ptr[v + 1]):
                i = by_vertex[p]
                for q in range(by_other_ptr[i], by_other_ptr[i + 1]):
                    w = by_other[q]
                    if mark[w] != v:
                        mark[w] = v
                        count += 1
            ptr[v + 1] = count
    cdef Py_ssize_t[::1] adj = np.empty(count, dtype=np.intp)
    mark[:] = -1
    count = 0
    with nogil:
        for v in range(n):                      # second pass: the neighbors
            mark[v] = v
            for p in range(by_vertex_ptr[v], by_vertex_ptr[v + 1]):
                i = by_vertex[p]
                for q in range(by_other_ptr[i], by_other_ptr[i + 1]):
                    w = by_other[q]
                    if mark[w] != v:
                        mark[w] = v
                        adj[count] = w
                        count += 1
    return np.asarray(ptr), np.asarray(adj)


def _adjacency_graph(shape, indptr, indices):
    """The adjacency graph of a symmetric pattern (diagonal left out), and its edge ids.

    Returns (ptr, adj, edge, n_edges): edge[p] numbers the undirected edge of entry p, the
    same for (v, w) and (w, v).
    """
    m, n = shape
    if m != n:
        raise ValueError(f"a symmetric pattern is square, not {m} x {n}")
    t_indptr, t_indices, _ = _transpose(shape, indptr, indices)
    if not (np.array_equal(t_indptr, indptr) and np.array_equal(t_indices, indices)):
        raise ValueError("the pattern is not symmetric")
    rows = np.repeat(np.arange(n, dtype=np.intp), np.diff(indptr))
    off = rows != indices
    ptr = np.zeros(n + 1, dtype=np.intp)
    np.cumsum(np.bincount(rows[off], minlength=n), out=ptr[1:])
    adj = np.ascontiguousarray(indices[off])
    return (ptr, adj) + _edge_ids(ptr, adj)


def _edge_ids(const Py_ssize_t[::1] ptr, const Py_ssize_t[::1] adj):
    """Number the undirected edges of a symmetric graph with sorted neighbor lists.

    Visiting the vertices in increasing order meets the entries (w, v) of each row w in
    increasing v, so a cursor per row finds every entry's mirror.
    """
    cdef Py_ssize_t n = ptr.shape[0] - 1
    cdef Py_ssize_t[::1] cursor = np.array(ptr[:n], dtype=np.intp)
    cdef Py_ssize_t[::1] edge = np.empty(adj.shape[0], dtype=np.intp)
    cdef Py_ssize_t v, p, w, count = 0
    with nogil:
        for v in range(n):
            for p in range(ptr[v], ptr[v + 1]):
                w = adj[p]
                if w > v:
                    edge[p] = count
                    edge[cursor[w]] = count
                    count += 1
                cursor[w] += 1
    return np.asarray(edge), int(count)


# ---------------------------------------------------------------- orders


def _order(ptr, adj, order):
    """The vertices of a CSR graph in the named order (an intp array)."""
    n = ptr.shape[0] - 1
    if order == "natural":
        return np.arange(n, dtype=np.intp)
    if order == "largest_first":
        return np.argsort(-np.diff(ptr), kind="stable").astype(np.intp)
    if order == "smallest_last":
        return _dynamic_order(ptr, adj, 0)
    if order == "dynamic_largest_first":
        return _dynamic_order(ptr, adj, 1)
    if order == "incidence_degree":
        return _dynamic_order(ptr, adj, 2)
    raise ValueError(f"order is 'auto', one of {', '.join(map(repr, ORDERS))} or a tuple "
                     f"of them, not {order!r}")


def _orders(ptr, adj, order):
    """The vertex orders that `order` names, one after another (made as they are asked
    for): a name of ORDERS, a tuple of them, or "auto"."""
    if isinstance(order, tuple) and order:
        names = order
    elif isinstance(order, str) and order == "auto":
        names = ["largest_first"]
        if adj.shape[0] <= _AUTO_TRY_ALL:
            names += [name for name in ORDERS if name != "largest_first"]
            names.append(_RANDOM)
    else:
        names = [order]
    for name in names:          # every name checked before the first coloring
        if name is not _RANDOM and (not isinstance(name, str) or name not in ORDERS):
            _order(ptr, adj, name)      # raises, naming the orders
    for name in names:
        if name is _RANDOM:
            rng = np.random.default_rng(0)
            for _ in range(_RANDOM_ORDERS):
                yield rng.permutation(ptr.shape[0] - 1).astype(np.intp)
        else:
            yield _order(ptr, adj, name)


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


def _dynamic_order(const Py_ssize_t[::1] ptr, const Py_ssize_t[::1] adj, int mode):
    """An order picking vertices by a key that changes as vertices are picked.

    mode 0, smallest_last: key the degree among the unpicked, pick the smallest, the order
    reversed (Matula and Beck's degeneracy order). mode 1, dynamic_largest_first: the same
    key, pick the largest. mode 2, incidence_degree: key the number of picked neighbors,
    pick the largest. Vertices sit in doubly linked buckets by key, so the whole order takes
    time linear in the graph's size.
    """
    cdef Py_ssize_t n = ptr.shape[0] - 1
    cdef Py_ssize_t[::1] result = np.empty(n, dtype=np.intp)
    if n == 0:
        return np.asarray(result)
    cdef Py_ssize_t max_degree = int(np.max(np.diff(ptr)))
    cdef Py_ssize_t[::1] key = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] head = np.full(max_degree + 1, -1, dtype=np.intp)
    cdef Py_ssize_t[::1] nxt = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] prv = np.empty(n, dtype=np.intp)
    cdef signed char[::1] done = np.zeros(n, dtype=np.int8)
    cdef bint pick_max = mode != 0
    cdef Py_ssize_t step = 1 if mode == 2 else -1
    cdef Py_ssize_t v, w, p, k, cur, t
    with nogil:
        # insert in reverse so that each bucket lists its vertices in natural order
        for t in range(n):
            v = n - 1 - t
            key[v] = 0 if mode == 2 else ptr[v + 1] - ptr[v]
            nxt[v] = head[key[v]]
            prv[v] = -1
            if head[key[v]] >= 0:
                prv[head[key[v]]] = v
            head[key[v]] = v
        cur = max_degree if pick_max else 0
        for t in range(n):
            while head[cur] < 0:
                cur = cur - 1 if pick_max else cur + 1
            v = head[cur]
            _unlink(head, nxt, prv, key, v)
            done[v] = 1
            result[n - 1 - t if mode == 0 else t] = v
            for p in range(ptr[v], ptr[v + 1]):
                w = adj[p]
                if done[w]:
                    continue
                _unlink(head, nxt, prv, key, w)
                k = key[w] + step
                key[w] = k
                nxt[w] = head[k]
                prv[w] = -1
                if head[k] >= 0:
                    prv[head[k]] = w
                head[k] = w
                if pick_max and k > cur or not pick_max and k < cur:
                    cur = k
    return np.asarray(result)


cdef inline void _unlink(Py_ssize_t[::1] head, Py_ssize_t[::1] nxt, Py_ssize_t[::1] prv,
                         Py_ssize_t[::1] key, Py_ssize_t v) noexcept nogil:
    if prv[v] >= 0:
        nxt[prv[v]] = nxt[v]
    else:
        head[key[v]] = nxt[v]
    if nxt[v] >= 0:
        prv[nxt[v]] = prv[v]


# ---------------------------------------------------------------- colorings


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
    >>> from cyad._coloring import column_coloring
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
    >>> from cyad._coloring import row_coloring
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
    >>> from cyad._coloring import star_coloring
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
    >>> from cyad._coloring import acyclic_coloring
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
    >>> from cyad._coloring import bidirectional_coloring
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
    >>> from cyad._coloring import seed_matrix
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


# ---------------------------------------------------------------- decompression


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
    >>> from cyad._coloring import column_coloring, column_decompression, seed_matrix
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
    >>> from cyad._coloring import row_coloring, row_decompression, seed_matrix
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
    >>> from cyad._coloring import star_coloring, star_decompression, seed_matrix
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
    >>> from cyad._coloring import acyclic_coloring, acyclic_decompression, seed_matrix
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
    >>> from cyad._coloring import (bidirectional_coloring, bidirectional_decompression,
    ...                             seed_matrix)
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
