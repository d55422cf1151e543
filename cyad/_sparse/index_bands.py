"""Index sets kept symbolic as bands: what slices, shifts and scalars make of x's indices.

Sparsity detection (cyad/_sparse/sparsity.py) gives every element of a Var the set of x's
indices it depends on. Where f works on slices (`x[1:] - x[:-1]`, `y[1:-1] = ...`), those
sets are a few diagonals: row i holds stride * i + offset on a run of rows lo <= i < hi.
`Bands` holds a Var's sets so, a handful of (lo, hi, stride, offset), and propagates
them in O(bands) Python work per instruction instead of O(elements) set unions:

    elementwise operand, same size   the same bands
    a gather by an affine run        source[i] = a + t * (i - p) on p <= i < q reads row
                                     a + t * (i - p): a band's stride * row + offset is
                                     affine in i again (`affine_runs` finds the runs of
                                     an index array in one compiled pass)
    a union                          the bands of both, those on one diagonal merged

Anything else (a gather of many runs, a sum, a matmul, more than MOST bands) makes the
rows explicit (`rows`, compiled: `band_rows`) and detection goes on with CSR rows. A
band's rows stay exact: the union of the bands covering row i is row i's set, no more.

Second-order pairs (Hessian detection) of two Bands are pair bands, row i coupling
stride_a * i + offset_a with stride_b * i + offset_b; `pair_bands` turns those whose
strides are +-1 into the bands of the symmetric (n, n) pattern (both (u, v) and (v, u)).
"""
import numpy as np

from cyad._sparse.index_sets import affine_runs, band_rows

MOST = 16       # bands per Var before its rows are made explicit


class Bands:
    """`count` rows: row i holds stride * i + offset for each (lo, hi, stride, offset) of
    `bands` with lo <= i < hi."""

    __slots__ = ("count", "bands")

    def __init__(self, count, bands):
        self.count = count
        self.bands = bands

    @classmethod
    def identity(cls, n):
        return cls(n, ((0, n, 1, 0),))

    def rows(self):
        """The explicit (indptr, indices), rows sorted and distinct."""
        if not self.bands:
            return np.zeros(self.count + 1, np.int64), np.zeros(0, np.int64)
        # (by diagonal: most rows then come sorted, without moving what they hold)
        bands = sorted(self.bands, key=lambda band: band[2:])
        lo, hi, stride, offset = (np.array(column, np.int64) for column in zip(*bands))
        return band_rows(self.count, lo, hi, stride, offset)

    def mark(self, mask):
        """Set mask[j] for every index j some row holds."""
        for lo, hi, stride, offset in self.bands:
            first, last = stride * lo + offset, stride * (hi - 1) + offset
            if lo >= hi:
                continue
            if stride == 0:
                mask[offset] = True
            else:   # (a slice of the mask, whichever way the band runs)
                mask[min(first, last):max(first, last) + 1:abs(stride)] = True


def made(count, bands):
    """Bands of `count` rows, those on one diagonal with touching runs merged; None
    where more than MOST remain (the caller makes the rows explicit). A band of one row
    is put on the unit diagonal through its entry (a slice's end: y[0], x[-1])."""
    bands = sorted((lo, hi, 1, stride * lo + offset - lo) if hi - lo == 1 else
                   (lo, hi, stride, offset) for lo, hi, stride, offset in bands if lo < hi)
    merged = []
    for band in bands:
        lo, hi, stride, offset = band
        for k, (lo2, hi2, stride2, offset2) in enumerate(merged):
            if (stride2, offset2) == (stride, offset) and lo <= hi2 and lo2 <= hi:
                merged[k] = (min(lo, lo2), max(hi, hi2), stride, offset)
                break
        else:
            merged.append(band)
    return Bands(count, tuple(merged)) if len(merged) <= MOST else None


def union(a, b):
    return made(a.count, a.bands + b.bands)


def runs_of(source):
    """The affine runs of an index map (int64; negative: no source), or None."""
    return affine_runs(source, MOST)


def gather(bands, runs, count):
    """Row i of the result is row source[i] of `bands`, for the runs (p, q, a, t) of
    source (outside them: empty); None where that takes more than MOST bands."""
    result = []
    for p, q, a, t in runs:
        for lo, hi, stride, offset in bands.bands:
            # the j = i - p in [0, q - p) with lo <= a + t * j < hi
            if t > 0:
                first, stop = -((a - lo) // t), -((a - hi) // t)
            elif t < 0:
                first, stop = (a - hi) // -t + 1, (a - lo) // -t + 1
            else:
                first, stop = (0, q - p) if lo <= a < hi else (0, 0)
            first, stop = max(first, 0), min(stop, q - p)
            if first < stop:
                result.append((p + first, p + stop, stride * t,
                               stride * (a - t * p) + offset))
    return made(count, result)


def pair_bands(a, b, square):
    """The second-order pairs of two Bands of the same rows (each row's indices of a
    with each of b's; `square`: a is b) as the bands of the symmetric (n, n) pattern,
    a list of (lo, hi, stride, offset); None where a pair's strides are not +-1 (its
    pairs are no band of that pattern)."""
    result = []
    for k, (lo_a, hi_a, stride_a, offset_a) in enumerate(a.bands):
        for lo_b, hi_b, stride_b, offset_b in (b.bands[k:] if square else b.bands):
            lo, hi = max(lo_a, lo_b), min(hi_a, hi_b)
            if lo >= hi:
                continue
            if stride_a not in (1, -1) or stride_b not in (1, -1):
                return None
            # row u = stride_a * i + offset_a holds stride_b * i + offset_b, and mirrored
            for (s, o), (s2, o2) in (((stride_a, offset_a), (stride_b, offset_b)),
                                     ((stride_b, offset_b), (stride_a, offset_a))):
                first, last = s * lo + o, s * (hi - 1) + o
                result.append((min(first, last), max(first, last) + 1, s * s2, o2 - s * s2 * o))
    return result


def coordinates(band):
    """A band's entries as coordinate arrays (rows, columns)."""
    lo, hi, stride, offset = band
    rows = np.arange(lo, hi, dtype=np.int64)
    return rows, stride * rows + offset
