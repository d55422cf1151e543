"""Sparsity patterns read into CSR, their intersection and adjacency graphs, vertex orders.

What cyad/_sparse/coloring.pyx's colorings and cyad/_sparse/recovery.pyx's decompressions
share about a pattern: its CSR index arrays, its transpose, the column and row
intersection graphs and the adjacency graph of a symmetric pattern (with its edge ids),
and the orders in which a greedy coloring visits a graph's vertices
(cyad/_sparse/coloring.pyx says how ``order="auto"`` keeps the best of them).

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
"""
import numpy as np

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
