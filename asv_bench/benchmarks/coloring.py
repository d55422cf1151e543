"""Colorings of sparsity patterns and decompression (cyad._sparse.coloring, cyad._sparse.recovery).

Patterns: n x n with 5 nonzeros per row, "band" (columns within 50 of the diagonal) or
"random" (anywhere); their symmetrized sum for the star and acyclic colorings. Baseline beside the
colorings: SciPy's column grouping (scipy.optimize._numdiff.group_columns, a greedy column
coloring in a random order), the grouping SciPy's least_squares and minimize use with a
sparsity pattern. Beside the prepared decompression: the same gather as NumPy fancy
indexing, which allocates its result.
"""
import numpy as np

from cyad._sparse import coloring as _coloring, recovery as _recovery

from .common import Call, output, skip

COLORING_SIZES = [10_000, 100_000]
PATTERNS = ["band", "random"]


def pattern(n, kind):
    import scipy.sparse

    rng = np.random.default_rng(0)
    rows = np.repeat(np.arange(n), 5)
    if kind == "band":
        cols = (rows + rng.integers(-50, 51, size=rows.size)) % n
    else:
        cols = rng.integers(0, n, size=rows.size)
    a = scipy.sparse.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    a.sum_duplicates()
    return a


class Coloring:
    """Time to color one pattern (the pattern read, the graph built, ordered and colored)."""

    params = [COLORING_SIZES, PATTERNS,
              ["column", "row", "star", "acyclic", "bidirectional", "scipy group_columns"],
              ["natural", "largest_first", "smallest_last", "auto"]]
    param_names = ["n", "pattern", "coloring", "order"]
    timeout = 120

    def setup(self, n, kind, coloring, order):
        self.pattern = pattern(n, kind)
        if coloring in ("star", "acyclic"):
            self.pattern = (self.pattern + self.pattern.T).tocsr()
        if coloring == "scipy group_columns":
            if order != "natural":
                skip("SciPy's grouping has one order (random)")
            from scipy.optimize._numdiff import group_columns
            self.color = group_columns
        else:
            function = getattr(_coloring, f"{coloring}_coloring")
            self.color = lambda p: function(p, order=order)

    def time_coloring(self, n, kind, coloring, order):
        self.color(self.pattern)

    def track_colors(self, n, kind, coloring, order):
        colors = self.color(self.pattern)
        if isinstance(colors, tuple):
            return sum(max(int(c.max()) + 1, 0) for c in colors)
        return int(colors.max()) + 1

    track_colors.unit = "colors"


class Decompression(Call):
    """One decompression of A @ S (or H @ S) into the nonzeros' array (acyclic: by
    substitution, which is no gather)."""

    params = [COLORING_SIZES, ["column", "star", "acyclic"], ["prepared", "numpy gather"]]
    param_names = ["n", "kind", "call"]

    def setup(self, n, kind, call):
        if kind == "acyclic" and call == "numpy gather":
            skip("a substitution is no gather")
        a = pattern(n, "random")
        if kind in ("star", "acyclic"):
            a = (a + a.T).tocsr()
        colors = getattr(_coloring, f"{kind}_coloring")(a)
        decompress = getattr(_recovery, f"{kind}_decompression")(a, colors)
        compressed = np.ascontiguousarray(a @ _coloring.seed_matrix(colors))
        out = output(decompress.nnz)
        if call == "prepared":
            self.call = lambda: decompress(compressed, out=out)
        else:
            # the same gather by hand: the flat source of each nonzero, read by fancy indexing
            flat = compressed.ravel()
            probe = np.arange(flat.size, dtype=np.float64).reshape(compressed.shape)
            source = decompress(probe).astype(np.intp)
            self.call = lambda: flat[source]
