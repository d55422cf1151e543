"""Index sets as the rows of a CSR pattern: the two operations sparsity detection does
most, in compiled loops.

A pattern is (indptr, indices), int64, each row's indices sorted and distinct (row i is
the set of x's indices element i depends on; cyad/_sparse/sparsity.py). `gather_rows` takes
rows by position (an elementwise operand read at i % |a|, a gather's index map);
`union_rows` merges two patterns of the same row count, row by row. Both keep the rows
sorted and distinct, so a pattern never grows beyond the union it stands for.
`row_pairs` lists the pairs of two patterns' rows (a Hessian's second-order pairs), as
coordinates with repeats, and `symmetric_pattern` makes them one symmetric pattern.
"""
import numpy as np

cimport numpy as cnp
from libc.stdlib cimport qsort

cnp.import_array()


def gather_rows(const cnp.int64_t[::1] indptr, const cnp.int64_t[::1] indices,
                const cnp.int64_t[::1] source):
    """Row i of the result is row source[i] (source[i] < 0: an empty row)."""
    cdef Py_ssize_t i, t, start, end, count = source.shape[0], total = 0
    cdef cnp.int64_t s
    out_ptr = np.empty(count + 1, np.int64)
    cdef cnp.int64_t[::1] ptr = out_ptr
    ptr[0] = 0
    for i in range(count):
        s = source[i]
        if s >= 0:
            total += indptr[s + 1] - indptr[s]
        ptr[i + 1] = total
    out_indices = np.empty(total, np.int64)
    cdef cnp.int64_t[::1] out = out_indices
    total = 0
    for i in range(count):
        s = source[i]
        if s >= 0:
            start, end = indptr[s], indptr[s + 1]
            for t in range(start, end):
                out[total] = indices[t]
                total += 1
    return out_ptr, out_indices


cdef _same_rows(const cnp.int64_t[::1] a_ptr, const cnp.int64_t[::1] b_ptr):
    if a_ptr.shape[0] != b_ptr.shape[0]:
        raise ValueError(f"cyad: index sets of {a_ptr.shape[0] - 1} and {b_ptr.shape[0] - 1} "
                         "rows cannot be merged row by row")


def union_rows(const cnp.int64_t[::1] a_ptr, const cnp.int64_t[::1] a_indices,
               const cnp.int64_t[::1] b_ptr, const cnp.int64_t[::1] b_indices):
    """Row i of the result is the union of row i of a and row i of b (merged)."""
    cdef Py_ssize_t i, p, q, p_end, q_end, total = 0, count = a_ptr.shape[0] - 1
    cdef cnp.int64_t u, v
    _same_rows(a_ptr, b_ptr)
    out_ptr = np.empty(count + 1, np.int64)
    out_indices = np.empty(a_indices.shape[0] + b_indices.shape[0], np.int64)
    cdef cnp.int64_t[::1] ptr = out_ptr
    cdef cnp.int64_t[::1] out = out_indices
    ptr[0] = 0
    for i in range(count):
        p, p_end, q, q_end = a_ptr[i], a_ptr[i + 1], b_ptr[i], b_ptr[i + 1]
        while p < p_end and q < q_end:
            u, v = a_indices[p], b_indices[q]
            if u <= v:
                out[total] = u
                p += 1
                q += u == v
            else:
                out[total] = v
                q += 1
            total += 1
        while p < p_end:
            out[total] = a_indices[p]
            p += 1
            total += 1
        while q < q_end:
            out[total] = b_indices[q]
            q += 1
            total += 1
        ptr[i + 1] = total
    return out_ptr, out_indices[:total]


def row_pairs(const cnp.int64_t[::1] a_ptr, const cnp.int64_t[::1] a_indices,
              const cnp.int64_t[::1] b_ptr, const cnp.int64_t[::1] b_indices, bint square):
    """Every pair of u in row i of a and v in row i of b, over the rows i, as
    (min(u, v), max(u, v)): the second-order pairs an elementwise product (a, b) or
    square (a, a) couples, in the upper triangle; of a square (a is b) each pair once."""
    cdef Py_ssize_t i, p, q, la, total = 0, count = a_ptr.shape[0] - 1
    cdef cnp.int64_t u, v
    _same_rows(a_ptr, b_ptr)
    for i in range(count):
        la = a_ptr[i + 1] - a_ptr[i]
        total += la * (la + 1) // 2 if square else la * (b_ptr[i + 1] - b_ptr[i])
    first_array = np.empty(total, np.int64)
    second_array = np.empty(total, np.int64)
    cdef cnp.int64_t[::1] first = first_array
    cdef cnp.int64_t[::1] second = second_array
    total = 0
    for i in range(count):
        for p in range(a_ptr[i], a_ptr[i + 1]):
            for q in range(p if square else b_ptr[i], b_ptr[i + 1]):
                u, v = a_indices[p], b_indices[q]
                first[total] = u if u <= v else v
                second[total] = v if u <= v else u
                total += 1
    return first_array, second_array


cdef int _compare(const void* a, const void* b) noexcept nogil:
    cdef cnp.int64_t u = (<const cnp.int64_t*>a)[0], v = (<const cnp.int64_t*>b)[0]
    return (u > v) - (u < v)


def symmetric_pattern(const cnp.int64_t[::1] first, const cnp.int64_t[::1] second,
                      Py_ssize_t n):
    """The (n, n) pattern holding every pair (first[k], second[k]) and its mirror image,
    as (indptr, indices), rows sorted and distinct: a counting sort by row, then each
    row sorted and its repeats dropped."""
    cdef Py_ssize_t k, r, p, q, start, end, kept, count = first.shape[0]
    cdef cnp.int64_t value
    counts_array = np.zeros(n + 1, np.int64)
    cdef cnp.int64_t[::1] counts = counts_array
    for k in range(count):
        counts[first[k] + 1] += 1
        if second[k] != first[k]:
            counts[second[k] + 1] += 1
    for r in range(n):
        counts[r + 1] += counts[r]
    filled_array = counts_array[:n].copy()
    rows_array = np.empty(counts[n], np.int64)
    cdef cnp.int64_t[::1] filled = filled_array
    cdef cnp.int64_t[::1] rows = rows_array
    for k in range(count):
        rows[filled[first[k]]] = second[k]
        filled[first[k]] += 1
        if second[k] != first[k]:
            rows[filled[second[k]]] = first[k]
            filled[second[k]] += 1
    # each row sorted, its repeats dropped, and the rows moved together
    indptr_array = np.empty(n + 1, np.int64)
    cdef cnp.int64_t[::1] indptr = indptr_array
    indptr[0] = kept = 0
    for r in range(n):
        start, end = counts[r], counts[r + 1]
        if end - start > 16:
            qsort(&rows[start], end - start, sizeof(cnp.int64_t), _compare)
        else:       # (most rows are short: an insertion sort)
            for p in range(start + 1, end):
                value = rows[p]
                q = p
                while q > start and rows[q - 1] > value:
                    rows[q] = rows[q - 1]
                    q -= 1
                rows[q] = value
        for p in range(start, end):
            if p == start or rows[p] != rows[p - 1]:
                rows[kept] = rows[p]
                kept += 1
        indptr[r + 1] = kept
    return indptr_array, rows_array[:kept].copy()


def affine_runs(const cnp.int64_t[::1] source, Py_ssize_t most):
    """source as at most `most` affine runs [(p, q, a, t)]: source[i] = a + t * (i - p)
    for p <= i < q, and negative at every i outside the runs; None where it takes more
    runs (a slice's positions are one run, a slice written into an array a few)."""
    cdef Py_ssize_t i = 0, p, count = source.shape[0]
    cdef cnp.int64_t a, t
    runs = []
    while i < count:
        if source[i] < 0:
            i += 1
            continue
        if len(runs) == most:
            return None
        p, a = i, source[i]
        t = source[i + 1] - a if i + 1 < count and source[i + 1] >= 0 else 0
        i += 1
        while i < count and source[i] >= 0 and source[i] == a + t * (i - p):
            i += 1
        runs.append((p, i, a, t))
    return runs


cdef void _parallel_bands(Py_ssize_t count, const cnp.int64_t[::1] lo,
                          const cnp.int64_t[::1] hi, const cnp.int64_t[::1] stride,
                          const cnp.int64_t[::1] offset, cnp.int64_t[::1] ptr,
                          cnp.int64_t[::1] out) noexcept nogil:
    """band_rows of bands of one stride, sorted by offset and none two on one diagonal
    over a common row: each row's values come sorted and distinct, band by band. Rows
    counted (a difference array), then each band written down its rows."""
    cdef Py_ssize_t i, b, bands = lo.shape[0]
    for i in range(count + 1):
        ptr[i] = 0
    for b in range(bands):
        if hi[b] > lo[b]:
            ptr[lo[b] + 1] += 1
            if hi[b] < count:
                ptr[hi[b] + 1] -= 1
    for i in range(count):          # (the number of bands over row i, then its end)
        ptr[i + 1] += ptr[i]
    for i in range(count):
        ptr[i + 1] += ptr[i]
    # ptr[i + 1] is row i's end: fill each row from its start, kept in ptr[i] meanwhile
    for i in range(count, 0, -1):
        ptr[i] = ptr[i - 1]
    ptr[0] = 0
    for b in range(bands):
        for i in range(lo[b], hi[b]):
            out[ptr[i + 1]] = stride[b] * i + offset[b]
            ptr[i + 1] += 1


def band_rows(Py_ssize_t count, const cnp.int64_t[::1] lo, const cnp.int64_t[::1] hi,
              const cnp.int64_t[::1] stride, const cnp.int64_t[::1] offset):
    """The pattern of `count` rows whose row i holds stride[b] * i + offset[b] for
    every band b with lo[b] <= i < hi[b], as (indptr, indices), rows sorted and
    distinct (bands of one stride given by rising offset are written band by band,
    others row by row, each value inserted in order)."""
    cdef Py_ssize_t i, b, p, q, start, total = 0, bands = lo.shape[0]
    cdef cnp.int64_t value
    cdef bint one_stride = True
    for b in range(bands):
        if hi[b] > lo[b]:
            total += hi[b] - lo[b]
        # (one stride, offsets rising: no two bands on one diagonal)
        one_stride = one_stride and stride[b] == stride[0] and (
            b == 0 or offset[b] > offset[b - 1])
    out_ptr = np.empty(count + 1, np.int64)
    out_indices = np.empty(total, np.int64)
    cdef cnp.int64_t[::1] ptr = out_ptr
    cdef cnp.int64_t[::1] out = out_indices
    if one_stride:
        _parallel_bands(count, lo, hi, stride, offset, ptr, out)
        return out_ptr, out_indices
    ptr[0] = total = 0
    for i in range(count):
        start = total
        for b in range(bands):
            if lo[b] <= i < hi[b]:
                value = stride[b] * i + offset[b]
                p = total       # (an insertion into the row, a repeat dropped)
                while p > start and out[p - 1] > value:
                    p -= 1
                if p > start and out[p - 1] == value:
                    continue
                for q in range(total, p, -1):
                    out[q] = out[q - 1]
                out[p] = value
                total += 1
        ptr[i + 1] = total
    return out_ptr, out_indices[:total]
