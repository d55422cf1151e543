"""Colorings of sparsity patterns and the decompression of compressed products.

Every coloring is checked against its definition by brute force (columns sharing a row
differ; a star coloring is proper and 2-colors no path on four vertices; an acyclic one
2-colors no cycle), every
decompression against the matrix it came from (random values on random patterns), and
the color counts against the known optima of structured patterns and SciPy's grouping.
"""
import itertools

import numpy as np
import pytest

import cyad
from cyad._sparse.coloring import (
    acyclic_coloring,
    bidirectional_coloring,
    column_coloring,
    row_coloring,
    seed_matrix,
    star_coloring,
)
from cyad._sparse.graphs import ORDERS
from cyad._sparse.recovery import (
    acyclic_decompression,
    bidirectional_decompression,
    column_decompression,
    row_decompression,
    star_decompression,
)

sparse = pytest.importorskip("scipy.sparse")
numdiff = pytest.importorskip("scipy.optimize._numdiff")


def random_pattern(rng, m, n, density, dense_rows=0, dense_cols=0):
    """A random boolean pattern, with some empty and some full rows and columns."""
    a = rng.random((m, n)) < density
    for i in rng.choice(m, size=min(dense_rows, m), replace=False):
        a[i] = True
    for j in rng.choice(n, size=min(dense_cols, n), replace=False):
        a[:, j] = True
    if m > 2 and n > 2:
        a[rng.integers(m)] = False          # an empty row
        a[:, rng.integers(n)] = False       # an empty column
    return a


def random_patterns(count=60, seed=0, square=False, symmetric=False):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        m = int(rng.integers(1, 40))
        n = m if square or symmetric else int(rng.integers(1, 40))
        density = float(rng.choice([0.02, 0.05, 0.1, 0.3, 0.6]))
        a = random_pattern(rng, m, n, density, dense_rows=int(rng.integers(0, 2)),
                           dense_cols=int(rng.integers(0, 2)))
        if symmetric:
            a = a | a.T
            a[np.diag_indices(n)] |= rng.random(n) < 0.5
        yield a


def values_on(pattern, rng, dtype=np.float64):
    """A dense matrix with random nonzero values exactly on the pattern."""
    values = rng.uniform(0.5, 2.0, pattern.shape) * rng.choice([-1, 1], pattern.shape)
    return np.where(pattern, values, 0).astype(dtype)


def symmetric_values_on(pattern, rng, dtype=np.float64):
    a = values_on(pattern, rng, dtype)
    return np.where(pattern, np.triu(a) + np.triu(a, 1).T, 0).astype(dtype)


def csr_data(a):
    """A's nonzeros in CSR order (the order every decompression writes)."""
    return a[np.nonzero(a)]


def assert_column_coloring(pattern, colors):
    pattern = np.asarray(pattern, dtype=bool)
    assert colors.shape == (pattern.shape[1],)
    if colors.size:
        assert colors.min() == 0 and set(colors) == set(range(colors.max() + 1))
    for row in pattern:
        cols = np.flatnonzero(row)
        assert len(set(colors[cols])) == len(cols)


def assert_star_coloring(pattern, colors):
    """Proper, and no path on four vertices in two colors (by brute force)."""
    pattern = np.asarray(pattern, dtype=bool)
    n = pattern.shape[0]
    adj = pattern & ~np.eye(n, dtype=bool)
    neighbors = [np.flatnonzero(adj[v]) for v in range(n)]
    if colors.size:
        assert colors.min() == 0 and set(colors) == set(range(colors.max() + 1))
    for v, w in zip(*np.nonzero(adj)):
        assert colors[v] != colors[w]
        # the path u - v - w - x
        for u in neighbors[v]:
            if u == w or colors[u] != colors[w]:
                continue
            for x in neighbors[w]:
                assert x == v or x == u or colors[x] != colors[v], (u, v, w, x)


def assert_acyclic_coloring(pattern, colors):
    """Proper, and the edges between any two colors hold no cycle (union-find over each
    pair's edges: an edge joining two vertices already connected closes a cycle)."""
    pattern = np.asarray(pattern, dtype=bool)
    n = pattern.shape[0]
    adj = np.triu(pattern & ~np.eye(n, dtype=bool))
    if colors.size:
        assert colors.min() == 0 and set(colors) == set(range(colors.max() + 1))
    parent = {}

    def root(key):
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    for v, w in zip(*np.nonzero(adj)):
        assert colors[v] != colors[w]
        pair = (min(colors[v], colors[w]), max(colors[v], colors[w]))
        a, b = root((pair, v)), root((pair, w))
        assert a != b, f"a cycle in colors {pair} through {v}-{w}"
        parent[a] = b


def laplacian_2d(side):
    one = sparse.diags([np.ones(side - 1), np.ones(side), np.ones(side - 1)], [-1, 0, 1])
    eye = sparse.identity(side)
    return (sparse.kron(one, eye) + sparse.kron(eye, one)).tocsr()


def banded(n, half_width):
    offsets = list(range(-half_width, half_width + 1))
    return sparse.diags([np.ones(n - abs(k)) for k in offsets], offsets, shape=(n, n)).tocsr()


# ---------------------------------------------------------------- validity


def test_the_checks_reject_invalid_colorings():
    path = (np.eye(4) + np.eye(4, k=1) + np.eye(4, k=-1)) != 0
    with pytest.raises(AssertionError):
        assert_star_coloring(path, np.array([0, 1, 0, 1]))     # 2-colored path
    with pytest.raises(AssertionError):
        assert_star_coloring(path, np.array([0, 0, 1, 2]))     # not proper
    assert_star_coloring(path, np.array([0, 1, 2, 0]))
    with pytest.raises(AssertionError):
        assert_column_coloring(path, np.array([0, 1, 0, 1]))
    assert_column_coloring(path, np.array([0, 1, 2, 0]))


@pytest.mark.parametrize("order", ORDERS)
def test_column_and_row_colorings_are_valid(order):
    for a in random_patterns(seed=1):
        assert_column_coloring(a, column_coloring(a, order=order))
        assert_column_coloring(a.T, row_coloring(a, order=order))


@pytest.mark.parametrize("order", ORDERS)
def test_star_colorings_are_valid(order):
    for a in random_patterns(seed=2, symmetric=True):
        assert_star_coloring(a, star_coloring(a, order=order))
    rng = np.random.default_rng(22)
    for n, density in [(150, 0.01), (150, 0.03), (100, 0.08)]:
        a = random_pattern(rng, n, n, density, dense_rows=1)
        a = a | a.T
        assert_star_coloring(a, star_coloring(sparse.csr_matrix(a), order=order))


@pytest.mark.parametrize("order", ORDERS)
def test_acyclic_colorings_are_valid(order):
    acyclic_total = star_total = 0
    for a in random_patterns(seed=21, symmetric=True):
        colors = acyclic_coloring(a, order=order)
        assert_acyclic_coloring(a, colors)
        acyclic_total += n_colors(colors)
        star_total += n_colors(star_coloring(a, order=order))
    # a star coloring is acyclic too, under a stronger condition: fewer colors overall
    assert acyclic_total < star_total


def test_the_acyclic_check_finds_cycles():
    cycle = np.eye(4, k=1) + np.eye(4, k=-1) + np.eye(4, k=3) + np.eye(4, k=-3)
    with pytest.raises(AssertionError, match="cycle"):
        assert_acyclic_coloring(cycle, np.array([0, 1, 0, 1]))
    assert_acyclic_coloring(cycle, np.array([0, 1, 0, 2]))
    with pytest.raises(ValueError, match="cycle"):
        acyclic_decompression(cycle, [0, 1, 0, 1])
    with pytest.raises(ValueError, match="adjacent"):
        acyclic_decompression(cycle, [0, 0, 1, 2])


@pytest.mark.parametrize("order", ORDERS)
def test_orders_are_permutations(order):
    from cyad._sparse.graphs import _order, _pattern_csr, _adjacency_graph
    for a in random_patterns(count=20, seed=3, symmetric=True):
        ptr, adj, _, _ = _adjacency_graph(*_pattern_csr(a))
        perm = _order(ptr, adj, order)
        assert np.array_equal(np.sort(perm), np.arange(a.shape[0]))


def test_smallest_last_is_a_degeneracy_order():
    """Each vertex has at most the graph's degeneracy neighbors before it in the order."""
    from cyad._sparse.graphs import _order, _pattern_csr, _adjacency_graph
    for a in random_patterns(count=20, seed=4, symmetric=True):
        ptr, adj, _, _ = _adjacency_graph(*_pattern_csr(a))
        perm = _order(ptr, adj, "smallest_last")
        position = np.empty_like(perm)
        position[perm] = np.arange(perm.size)
        earlier = [sum(position[w] < position[v] for w in adj[ptr[v]:ptr[v + 1]])
                 for v in range(perm.size)]
        # the degeneracy, by peeling minimum-degree vertices
        graph = (a | a.T) & ~np.eye(a.shape[0], dtype=bool)
        alive, degeneracy = np.ones(a.shape[0], bool), 0
        while alive.any():
            degrees = graph[alive][:, alive].sum(axis=1)
            degeneracy = max(degeneracy, degrees.min())
            alive[np.flatnonzero(alive)[np.argmin(degrees)]] = False
        assert max(earlier, default=0) <= degeneracy


@pytest.mark.parametrize("order", ["smallest_last", "dynamic_largest_first",
                                   "incidence_degree"])
def test_dynamic_orders_pick_by_their_key(order):
    """Replayed step by step: every pick has the best key among the vertices left."""
    from cyad._sparse.graphs import _order, _pattern_csr, _adjacency_graph
    for a in random_patterns(count=30, seed=21, symmetric=True):
        ptr, adj, _, _ = _adjacency_graph(*_pattern_csr(a))
        graph = (a | a.T) & ~np.eye(a.shape[0], dtype=bool)
        perm = _order(ptr, adj, order)
        picks = perm[::-1] if order == "smallest_last" else perm
        left = np.ones(a.shape[0], dtype=bool)
        for v in picks:
            if order == "incidence_degree":      # most neighbors already picked
                keys = graph[:, ~left].sum(axis=1)
            else:                                # degree among the vertices left
                keys = graph[:, left].sum(axis=1)
            best = keys[left].min() if order == "smallest_last" else keys[left].max()
            assert keys[v] == best
            left[v] = False


def test_pattern_formats_agree():
    rng = np.random.default_rng(5)
    a = random_pattern(rng, 30, 25, 0.1, dense_rows=1)
    expected = column_coloring(a)
    for form in (sparse.csr_matrix(a), sparse.csc_matrix(a), sparse.coo_array(a),
                 sparse.lil_matrix(a), a.astype(float)):
        assert np.array_equal(column_coloring(form), expected)
    # duplicate entries and explicit zeros: stored entries are the pattern
    rows, cols = np.nonzero(a)
    coo = sparse.coo_matrix((np.zeros(2 * rows.size), (np.r_[rows, rows], np.r_[cols, cols])),
                            shape=a.shape)
    assert np.array_equal(column_coloring(coo), expected)


def test_empty_patterns():
    for shape in [(0, 0), (0, 4), (4, 0), (3, 5)]:
        a = np.zeros(shape)
        assert np.array_equal(column_coloring(a), np.zeros(shape[1], dtype=np.intp))
        assert np.array_equal(row_coloring(a), np.zeros(shape[0], dtype=np.intp))
        colors = column_coloring(a)
        decompress = column_decompression(a, colors)
        assert decompress(a @ seed_matrix(colors)).shape == (0,)
    assert star_coloring(np.zeros((0, 0))).shape == (0,)
    assert np.array_equal(star_coloring(np.eye(4)), np.zeros(4, dtype=np.intp))


def test_bad_input():
    for order in ("random", (), ("natural", "random"), None):
        with pytest.raises(ValueError, match="order is 'auto', one of"):
            column_coloring(np.eye(3), order=order)
    with pytest.raises(ValueError, match="not symmetric"):
        star_coloring(np.triu(np.ones((3, 3))))
    with pytest.raises(ValueError, match="square"):
        star_coloring(np.ones((2, 3)))
    with pytest.raises(ValueError, match="two-dimensional"):
        column_coloring(np.ones(3))
    with pytest.raises(ValueError, match="not a valid column coloring"):
        column_decompression(np.ones((2, 2)), [0, 0])
    with pytest.raises(ValueError, match="not a valid row coloring"):
        row_decompression(np.ones((2, 2)), [0, 0])
    with pytest.raises(ValueError, match="needs 3 colors"):
        column_decompression(np.eye(3), [0, 1])
    with pytest.raises(ValueError, match="not negative"):
        column_decompression(np.eye(2), [0, -1])
    path = np.eye(4) + np.eye(4, k=1) + np.eye(4, k=-1)
    # proper, but the path 0-1-2-3 takes two colors: H[1, 2] cannot be recovered
    with pytest.raises(ValueError, match="not a star coloring"):
        star_decompression(path, [0, 1, 0, 1])
    from cyad._sparse.recovery import Decompression
    with pytest.raises(ValueError, match="one source inside"):
        Decompression((2, 2), (2, 1), np.array([0, 1, 2]), np.array([0, 1]), [0, 2])
    with pytest.raises(ValueError, match="one source inside"):
        Decompression((2, 2), (2, 1), np.array([0, 1, 2]), np.array([0, 1]), [0])
    decompress = column_decompression(np.eye(3), [0, 0, 0])
    with pytest.raises(ValueError, match="shape"):
        decompress(np.ones((3, 2)))
    with pytest.raises(TypeError, match="float32 or float64"):
        decompress(np.ones((3, 1), dtype=np.int64))
    with pytest.raises(ValueError, match="C-contiguous"):
        decompress(np.ones((3, 2))[:, :1])
    with pytest.raises(ValueError, match="out is"):
        decompress(np.ones((3, 1)), out=np.empty(4))
    with pytest.raises(ValueError, match="out is"):
        decompress(np.ones((3, 1)), out=np.empty(3, dtype=np.float32))
    forward, _ = bidirectional_decompression(np.eye(2), [0, 0], [-1, -1])
    with pytest.raises(ValueError, match="partial decompression writes into out"):
        forward(np.ones((2, 1)))
    with pytest.raises(ValueError, match="not a bidirectional coloring"):
        bidirectional_decompression(np.ones((2, 2)), [0, -1], [-1, -1])
    with pytest.raises(ValueError, match="-1"):
        bidirectional_decompression(np.ones((2, 2)), [0, -2], [0, 1])


# ---------------------------------------------------------------- decompression


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", ["natural", "largest_first", "smallest_last"])
def test_column_decompression_is_exact(order, dtype):
    rng = np.random.default_rng(6)
    for pattern in random_patterns(seed=7):
        a = values_on(pattern, rng, dtype)
        colors = column_coloring(sparse.csr_matrix(pattern), order=order)
        decompress = column_decompression(pattern, colors)
        compressed = a @ seed_matrix(colors, dtype=dtype)
        out = np.full(decompress.nnz, np.nan, dtype=dtype)
        assert decompress(compressed, out=out) is out
        # each entry of the compressed product is a sum with one nonzero term: exact
        np.testing.assert_array_equal(out, csr_data(np.where(pattern, a, 0)))
        rebuilt = sparse.csr_matrix((out, decompress.indices, decompress.indptr),
                                    shape=decompress.shape)
        np.testing.assert_array_equal(rebuilt.toarray(), a)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", ["natural", "largest_first", "incidence_degree"])
def test_row_decompression_is_exact(order, dtype):
    rng = np.random.default_rng(8)
    for pattern in random_patterns(seed=9):
        a = values_on(pattern, rng, dtype)
        colors = row_coloring(pattern, order=order)
        decompress = row_decompression(sparse.csc_matrix(pattern), colors)
        result = decompress(seed_matrix(colors, dtype=dtype).T @ a)
        assert result.dtype == dtype
        np.testing.assert_array_equal(result, csr_data(a))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", ORDERS)
def test_star_decompression_is_exact(order, dtype):
    rng = np.random.default_rng(10)
    for pattern in random_patterns(seed=11, symmetric=True):
        h = symmetric_values_on(pattern, rng, dtype)
        colors = star_coloring(pattern, order=order)
        decompress = star_decompression(pattern, colors)
        compressed = h @ seed_matrix(colors, dtype=dtype)
        # every recovered entry is one term of a row of H @ S, read where it is alone
        np.testing.assert_array_equal(decompress(compressed), csr_data(h))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", ORDERS)
def test_acyclic_decompression_recovers_h(order, dtype):
    """By substitution: each entry a row of H @ S less entries known before it, so equal
    to H up to the rounding of those subtractions."""
    rng = np.random.default_rng(22)
    rtol = 1e-12 if dtype == np.float64 else 2e-4
    for pattern in random_patterns(seed=23, symmetric=True):
        h = symmetric_values_on(pattern, rng, dtype)
        colors = acyclic_coloring(pattern, order=order)
        decompress = acyclic_decompression(pattern, colors)
        compressed = h @ seed_matrix(colors, dtype=dtype)
        result = decompress(compressed)
        assert result.dtype == dtype
        scale = np.abs(h).max() if h.size else 1.0
        np.testing.assert_allclose(result, csr_data(h), rtol=rtol, atol=rtol * scale)
        # the mirror of every pair holds the same number
        a = sparse.csr_matrix((result, decompress.indices, decompress.indptr),
                              shape=h.shape).toarray()
        np.testing.assert_array_equal(a, a.T)


def test_acyclic_colorings_of_structured_patterns():
    # a tree (a path, a star, a tridiagonal matrix) takes 2 colors; a 2-D 5-point grid
    # Laplacian at most 4 (a star coloring needs 5)
    for pattern in (banded(50, 1), np.eye(7) + np.eye(7, k=1) + np.eye(7, k=-1)):
        colors = acyclic_coloring(pattern)
        assert n_colors(colors) == 2
        assert_acyclic_coloring(pattern.toarray() if sparse.issparse(pattern) else pattern,
                                colors)
    arrowhead = np.eye(9)
    arrowhead[0] = arrowhead[:, 0] = 1
    assert n_colors(acyclic_coloring(arrowhead)) == 2
    grid = laplacian_2d(10)
    colors = acyclic_coloring(grid)
    assert_acyclic_coloring(grid.toarray(), colors)
    assert n_colors(colors) <= 4 < n_colors(star_coloring(grid))
    h = symmetric_values_on(grid.toarray() != 0, np.random.default_rng(24))
    np.testing.assert_allclose(acyclic_decompression(grid, colors)(h @ seed_matrix(colors)),
                               csr_data(h), rtol=1e-13, atol=1e-13)


def test_a_rearranged_substitution_reads_another_layout():
    """rearranged: the product read in another layout (transposed), the nonzeros written
    in another order (reversed), the same numbers."""
    rng = np.random.default_rng(25)
    pattern = next(random_patterns(count=1, seed=26, symmetric=True))
    h = symmetric_values_on(pattern, rng)
    colors = acyclic_coloring(pattern)
    decompress = acyclic_decompression(pattern, colors)
    compressed = h @ seed_matrix(colors)
    n, k = compressed.shape
    flat = np.arange(n * k)
    transposed = decompress.rearranged((flat % k) * n + flat // k,
                                       np.arange(decompress.nnz)[::-1], (k, n))
    np.testing.assert_array_equal(transposed(np.ascontiguousarray(compressed.T)),
                                  decompress(compressed)[::-1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", ["natural", "largest_first", "smallest_last"])
def test_bidirectional_decompression_is_exact(order, dtype):
    rng = np.random.default_rng(18)
    for pattern in random_patterns(seed=19):
        a = values_on(pattern, rng, dtype)
        column_colors, row_colors = bidirectional_coloring(pattern, order=order)
        assert column_colors.shape == (a.shape[1],) and row_colors.shape == (a.shape[0],)
        # never more products than either direction alone
        assert products((column_colors, row_colors)) <= min(
            n_colors(column_coloring(pattern, order=order)) if a.shape[1] else 0,
            n_colors(row_coloring(pattern, order=order)) if a.shape[0] else 0)
        forward, reverse = bidirectional_decompression(sparse.coo_matrix(pattern),
                                                       column_colors, row_colors)
        assert forward.partial and reverse.partial
        out = np.full(forward.nnz, np.nan, dtype=dtype)
        forward(a @ seed_matrix(column_colors, dtype=dtype), out=out)
        reverse(seed_matrix(row_colors, dtype=dtype).T @ a, out=out)
        np.testing.assert_array_equal(out, csr_data(a))


def test_bidirectional_with_dense_rows():
    """Dense rows go to reverse mode: products stay few where forward needs n."""
    rng = np.random.default_rng(20)
    for _ in range(10):
        pattern = random_pattern(rng, 60, 80, 0.02, dense_rows=3)
        column_colors, row_colors = bidirectional_coloring(pattern)
        assert products((column_colors, row_colors)) < 20 <= n_colors(
            column_coloring(pattern))
        a = values_on(pattern, rng)
        forward, reverse = bidirectional_decompression(pattern, column_colors, row_colors)
        out = np.empty(forward.nnz)
        forward(a @ seed_matrix(column_colors), out=out)
        reverse(seed_matrix(row_colors).T @ a, out=out)
        np.testing.assert_array_equal(out, csr_data(a))
    compressed = seed_matrix(row_colors).T @ a
    assert cyad.allocations_per_call(lambda: reverse(compressed, out=out)) == 0


def test_bidirectional_never_builds_the_graph_of_a_dense_row():
    """A row of all n columns would give the column graph n^2 edges (200 MB here): the
    threshold that keeps it is not tried, and the coloring stays small and exact."""
    import tracemalloc
    n = 5000
    rng = np.random.default_rng(23)
    rows = np.r_[np.repeat(np.arange(n), 3), np.zeros(n, dtype=int)]
    cols = np.r_[rng.integers(0, n, size=3 * n), np.arange(n)]
    a = sparse.csr_matrix((rng.uniform(1, 2, rows.size), (rows, cols)), shape=(n, n))
    a.sum_duplicates()
    tracemalloc.start()
    try:
        column_colors, row_colors = bidirectional_coloring(a)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 2 ** 20
    assert row_colors.max() == 0 and row_colors[0] == 0     # the dense row, in reverse
    assert products((column_colors, row_colors)) <= 12
    forward, reverse = bidirectional_decompression(a, column_colors, row_colors)
    out = np.empty(forward.nnz)
    forward(np.ascontiguousarray(a @ seed_matrix(column_colors)), out=out)
    reverse(np.ascontiguousarray((a.T @ seed_matrix(row_colors)).T), out=out)
    np.testing.assert_array_equal(out, a.data)


def test_decompression_with_aliasing_output():
    """out overlapping the compressed product: the result is still right."""
    rng = np.random.default_rng(12)
    pattern = random_pattern(rng, 20, 20, 0.1)
    a = values_on(pattern, rng)
    colors = column_coloring(pattern)
    decompress = column_decompression(pattern, colors)
    expected = csr_data(a)
    k = colors.max() + 1
    buffer = np.zeros(40 * k + decompress.nnz)
    for start in (0, 3, 20 * k - 5):
        compressed = buffer[start:start + 20 * k].reshape(20, k)
        compressed[...] = a @ seed_matrix(colors)
        out = buffer[:decompress.nnz] if start else buffer[5:5 + decompress.nnz]
        decompress(compressed, out=out)
        np.testing.assert_array_equal(out, expected)


def test_prepared_decompression_allocates_nothing():
    rng = np.random.default_rng(13)
    pattern = random_pattern(rng, 200, 300, 0.02)
    colors = column_coloring(pattern)
    decompress = column_decompression(pattern, colors)
    compressed = values_on(pattern, rng) @ seed_matrix(colors)
    out = np.empty(decompress.nnz)
    assert cyad.allocations_per_call(lambda: decompress(compressed, out=out)) == 0
    h = laplacian_2d(12)
    star = star_decompression(h, star_coloring(h))
    compressed32 = np.ones(star.compressed_shape, dtype=np.float32)
    out32 = np.empty(star.nnz, dtype=np.float32)
    assert cyad.allocations_per_call(lambda: star(compressed32, out=out32)) == 0
    acyclic = acyclic_decompression(h, acyclic_coloring(h))
    compressed = np.ones(acyclic.compressed_shape)
    out = np.empty(acyclic.nnz)
    assert cyad.allocations_per_call(lambda: acyclic(compressed, out=out)) == 0


# ---------------------------------------------------------------- quality


def n_colors(colors):
    return int(colors.max()) + 1


def products(bicoloring):
    """The forward and reverse products a bidirectional coloring needs."""
    return sum(max(int(colors.max()) + 1, 0) for colors in bicoloring if colors.size)


@pytest.mark.parametrize("order", ["natural", "largest_first", "smallest_last",
                                   "incidence_degree"])
def test_banded_patterns_are_colored_optimally(order):
    """A band of half-width w has 2w + 1 nonzeros in a row: that many colors, no more.
    (dynamic_largest_first takes 6 on the pentadiagonal pattern.)"""
    for n in (10, 101, 1000):
        assert n_colors(column_coloring(banded(n, 1), order=order)) == 3
        assert n_colors(column_coloring(banded(n, 2), order=order)) == 5
        assert n_colors(row_coloring(banded(n, 2), order=order)) == 5


def test_rectangular_banded_patterns_are_colored_optimally():
    """Lower and upper bandwidths l, u: as many colors as the longest row (or column)."""
    for m, n in [(10, 20), (20, 10), (40, 40)]:
        for lower, upper in itertools.product(range(6), repeat=2):
            i, j = np.indices((m, n))
            a = (-lower <= j - i) & (j - i <= upper)
            colors = column_coloring(a, order="natural")
            assert_column_coloring(a, colors)
            assert n_colors(colors) == a.sum(axis=1).max()
            assert n_colors(row_coloring(a, order="natural")) == a.sum(axis=0).max()


@pytest.mark.parametrize("order", ["natural", "largest_first", "smallest_last",
                                   "incidence_degree"])
def test_symmetric_banded_star_coloring(order):
    """A symmetric band of half-width b takes 2b + 1 star colors (SparseMatrixColorings.jl's
    test/theory.jl, after Gebremedhin et al.)."""
    for n in (100, 5000):
        for half_width in (1, 5, 10):
            assert n_colors(star_coloring(banded(n, half_width), order=order)) == (
                2 * half_width + 1)


@pytest.mark.parametrize("order", ["natural", "largest_first", "incidence_degree"])
def test_laplacian_star_coloring(order):
    """The 5-point Laplacian's Hessian in at most 5 colors (smallest_last takes 6)."""
    for side in (4, 10, 30):
        h = laplacian_2d(side)
        colors = star_coloring(h, order=order)
        if side <= 10:
            assert_star_coloring(h.toarray() != 0, colors)
        assert n_colors(colors) <= 5


def test_tridiagonal_star_coloring_is_optimal():
    """A path needs three colors for a star coloring (two would 2-color a 4-path)."""
    for order in ORDERS:
        assert n_colors(star_coloring(banded(50, 1), order=order)) == 3


def test_arrowheads():
    n = 50
    # a Jacobian whose last output reads every input: forward needs n colors, reverse 2
    half = np.eye(n)
    half[-1] = 1
    assert n_colors(column_coloring(half)) == n
    assert n_colors(row_coloring(half)) == 2
    assert products(bidirectional_coloring(half)) == 2
    # the symmetric arrowhead: n colors either way for a Jacobian, 3 products (2 forward,
    # 1 reverse) bidirectionally, and 2 colors for its Hessian, one star around vertex 0
    full = np.eye(n)
    full[0] = full[:, 0] = 1
    assert n_colors(column_coloring(full)) == n
    assert n_colors(row_coloring(full)) == n
    assert products(bidirectional_coloring(full)) == 3
    colors = star_coloring(full)
    assert_star_coloring(full, colors)
    assert n_colors(colors) == 2


def test_never_more_colors_than_scipy_grouping():
    """SciPy's group_columns is a greedy column coloring in a random order; the default
    order ("auto": every order and seeded random ones, each recolored) is at least as good
    on random, banded and grid patterns (the 4 x 4 grid Laplacian, where one greedy order
    alone takes 6, included)."""
    rng = np.random.default_rng(14)
    for _ in range(200):
        m, n = (int(v) for v in rng.integers(5, 120, size=2))
        density = float(rng.choice([0.01, 0.03, 0.1, 0.3]))
        a = random_pattern(rng, m, n, density)
        ours = n_colors(column_coloring(sparse.csr_matrix(a)))
        assert ours <= numdiff.group_columns(a).max() + 1
    patterns = [banded(200, 1), banded(200, 2)] + [laplacian_2d(k) for k in range(3, 16)]
    for pattern in patterns:
        ours = n_colors(column_coloring(pattern))
        assert ours <= numdiff.group_columns(pattern).max() + 1
    assert n_colors(column_coloring(laplacian_2d(4))) == 5


@pytest.mark.parametrize("order", ORDERS)
def test_recoloring_never_adds_colors(order):
    """Each order's coloring is recolored by iterated greedy: valid, and never more colors
    than one greedy pass in that order."""
    from cyad._sparse.coloring import _greedy
    from cyad._sparse.graphs import _intersection_graph, _order, _pattern_csr, _transpose
    rng = np.random.default_rng(16)
    for _ in range(40):
        m, n = (int(v) for v in rng.integers(5, 80, size=2))
        a = random_pattern(rng, m, n, float(rng.choice([0.03, 0.1, 0.3])))
        shape, indptr, indices = _pattern_csr(a)
        csc_ptr, csc, _ = _transpose(shape, indptr, indices)
        ptr, adj = _intersection_graph(n, csc_ptr, csc, indptr, indices)
        greedy = _greedy(ptr, adj, _order(ptr, adj, order))
        colors = column_coloring(a, order=order)
        assert_column_coloring(a, colors)
        assert n_colors(colors) <= n_colors(greedy)


def test_a_tuple_of_orders_keeps_the_fewest_colors():
    rng = np.random.default_rng(17)
    for _ in range(30):
        a = random_pattern(rng, 40, 30, 0.1)
        each = [n_colors(column_coloring(a, order=order)) for order in ORDERS]
        assert n_colors(column_coloring(a, order=ORDERS)) == min(each)
        symmetric = a[:30] + a[:30].T
        stars = [n_colors(star_coloring(symmetric, order=order)) for order in ORDERS]
        colors = star_coloring(symmetric, order=ORDERS)
        assert_star_coloring(symmetric, colors)
        assert n_colors(colors) == min(stars)
        assert n_colors(star_coloring(symmetric)) <= min(stars)


def test_large_pattern():
    """n = 10**5 columns, 5 nonzeros per row: colored, and validly, in moderate time."""
    rng = np.random.default_rng(15)
    n = 10 ** 5
    rows = np.repeat(np.arange(n), 5)
    cols = (rows + rng.integers(-50, 51, size=rows.size)) % n
    a = sparse.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    colors = column_coloring(a)
    a.sum_duplicates()
    # columns sharing a row differ: one check per row, vectorised
    c = colors[a.indices]
    row_of = np.repeat(np.arange(n), np.diff(a.indptr))
    assert np.unique(row_of * (c.max() + 1) + c).size == a.nnz
    decompress = column_decompression(a, colors)
    b = a @ seed_matrix(colors)
    np.testing.assert_array_equal(decompress(np.ascontiguousarray(b)), a.data)



def test_docstring_examples():
    """The modules are not public yet, so test_docstrings does not reach their examples."""
    import doctest

    from cyad._sparse import coloring as _coloring, recovery as _recovery
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tested = 0
    for module in (_coloring, _recovery):
        for name in dir(module):
            obj = getattr(module, name)
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            for test in finder.find(obj, name, globs={"np": np}):
                runner.run(test)
                tested += bool(test.examples)
    assert tested >= 8
    assert runner.summarize(verbose=False).failed == 0
