"""Chunk loops: apply a rule of the rule table to every element of a dual buffer.

A dual buffer of n numbers with `width` lanes is a values array of n and a
row-major n x width partials array. For every element the loops evaluate the
rule once (value and derivative coefficient) and then update the element's row
of partials in a lane loop whose length is a compile-time constant: widths 1, 2,
4, 8 and 16 each have their own specialisation, wider rows (multiples of 8) run
as blocks of 8. `lane_count` pads any requested chunk up to such a width.

Rows whose derivative coefficient is not finite (sqrt at 0, log at 0) go through
a careful loop in which a zero tangent contributes zero instead of 0 * inf = nan,
so one singular entry cannot poison the directions that do not touch it.
"""
from libc.math cimport isfinite
from cyad._fused cimport real, lanes, lanes1, lanes2, lanes4, lanes8, lanes16
from cyad._rules cimport unary_rule, binary_rule, careful_product


cdef Py_ssize_t lane_count(Py_ssize_t chunk) noexcept nogil:
    """The padded width that runs `chunk` directions: 1, 2, 4, 8, 16 or a multiple of 8."""
    cdef Py_ssize_t width = 1
    if chunk > 16:
        return (chunk + 7) // 8 * 8
    while width < chunk:
        width *= 2
    return width


cdef Py_ssize_t second_order_width(Py_ssize_t outer, Py_ssize_t inner) noexcept nogil:
    """Lanes of a nested dual over `outer` and `inner` directions (see cyad._wrapper)."""
    return lane_count(outer + inner + outer * inner)


# -- lane loops: one row of partials ------------------------------------------

cdef inline void scale_row(lanes* tag, Py_ssize_t blocks, double d,
                           const real* p, real* out) noexcept nogil:
    # out = d * p
    cdef Py_ssize_t b, k
    for b in range(blocks):
        for k in range(<Py_ssize_t>sizeof(lanes)):
            out[k] = <real>(d * p[k])
        p += sizeof(lanes)
        out += sizeof(lanes)


cdef inline void combine_row(lanes* tag, Py_ssize_t blocks, double da, const real* pa,
                             double db, const real* pb, real* out) noexcept nogil:
    # out = da * pa + db * pb
    cdef Py_ssize_t b, k
    for b in range(blocks):
        for k in range(<Py_ssize_t>sizeof(lanes)):
            out[k] = <real>(da * pa[k] + db * pb[k])
        pa += sizeof(lanes)
        pb += sizeof(lanes)
        out += sizeof(lanes)


cdef void careful_row(Py_ssize_t row, double da, const real* pa,
                      double db, const real* pb, real* out) noexcept nogil:
    # out = da * pa + db * pb where 0 * inf counts as 0; pb may be NULL
    cdef Py_ssize_t k
    cdef double acc
    for k in range(row):
        acc = careful_product(da, pa[k])
        if pb != NULL:
            acc = acc + careful_product(db, pb[k])
        out[k] = <real>acc


# -- element loops --------------------------------------------------------------

cdef void unary_loop(lanes* tag, int op, Py_ssize_t n, Py_ssize_t blocks,
                     const real* xv, const real* xp, real* yv, real* yp) noexcept nogil:
    cdef Py_ssize_t i, row = blocks * sizeof(lanes)
    cdef double d
    for i in range(n):
        yv[i] = <real>unary_rule(op, xv[i], &d)
        if isfinite(d):
            scale_row(tag, blocks, d, xp + i * row, yp + i * row)
        else:
            careful_row(row, d, xp + i * row, 0.0, <const real*>NULL, yp + i * row)


cdef void binary_loop(lanes* tag, int op, Py_ssize_t n, Py_ssize_t blocks,
                      const real* av, Py_ssize_t a_step, const real* ap,
                      const real* bv, Py_ssize_t b_step, const real* bp,
                      real* yv, real* yp) noexcept nogil:
    cdef Py_ssize_t i, row = blocks * sizeof(lanes)
    cdef Py_ssize_t a_row = a_step * row, b_row = b_step * row
    cdef double da, db
    for i in range(n):
        yv[i] = <real>binary_rule(op, av[i * a_step], bv[i * b_step], &da, &db)
        if ap != NULL and bp != NULL:
            if isfinite(da) and isfinite(db):
                combine_row(tag, blocks, da, ap + i * a_row, db, bp + i * b_row, yp + i * row)
            else:
                careful_row(row, da, ap + i * a_row, db, bp + i * b_row, yp + i * row)
        elif ap != NULL:
            if isfinite(da):
                scale_row(tag, blocks, da, ap + i * a_row, yp + i * row)
            else:
                careful_row(row, da, ap + i * a_row, 0.0, <const real*>NULL, yp + i * row)
        else:
            if isfinite(db):
                scale_row(tag, blocks, db, bp + i * b_row, yp + i * row)
            else:
                careful_row(row, db, bp + i * b_row, 0.0, <const real*>NULL, yp + i * row)


# -- dispatch on the width, once per call ---------------------------------------

cdef void unary_chunks(int op, Py_ssize_t width, Py_ssize_t n,
                       const real* xv, const real* xp,
                       real* yv, real* yp) noexcept nogil:
    """y = op(x) for n elements with `width` lanes (a value of lane_count)."""
    if width == 1:
        unary_loop(<lanes1*>NULL, op, n, 1, xv, xp, yv, yp)
    elif width == 2:
        unary_loop(<lanes2*>NULL, op, n, 1, xv, xp, yv, yp)
    elif width == 4:
        unary_loop(<lanes4*>NULL, op, n, 1, xv, xp, yv, yp)
    elif width == 8:
        unary_loop(<lanes8*>NULL, op, n, 1, xv, xp, yv, yp)
    elif width == 16:
        unary_loop(<lanes16*>NULL, op, n, 1, xv, xp, yv, yp)
    else:
        unary_loop(<lanes8*>NULL, op, n, width // 8, xv, xp, yv, yp)


cdef void binary_chunks(int op, Py_ssize_t width, Py_ssize_t n,
                        const real* av, Py_ssize_t a_step, const real* ap,
                        const real* bv, Py_ssize_t b_step, const real* bp,
                        real* yv, real* yp) noexcept nogil:
    """y = op(a, b) for n elements with `width` lanes.

    A step of 0 broadcasts a single element of that operand; a NULL partials
    pointer marks an operand without derivatives (a constant).
    """
    if width == 1:
        binary_loop(<lanes1*>NULL, op, n, 1, av, a_step, ap, bv, b_step, bp, yv, yp)
    elif width == 2:
        binary_loop(<lanes2*>NULL, op, n, 1, av, a_step, ap, bv, b_step, bp, yv, yp)
    elif width == 4:
        binary_loop(<lanes4*>NULL, op, n, 1, av, a_step, ap, bv, b_step, bp, yv, yp)
    elif width == 8:
        binary_loop(<lanes8*>NULL, op, n, 1, av, a_step, ap, bv, b_step, bp, yv, yp)
    elif width == 16:
        binary_loop(<lanes16*>NULL, op, n, 1, av, a_step, ap, bv, b_step, bp, yv, yp)
    else:
        binary_loop(<lanes8*>NULL, op, n, width // 8, av, a_step, ap, bv, b_step, bp, yv, yp)
