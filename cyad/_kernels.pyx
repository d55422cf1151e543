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
from cyad._rules cimport unary_rule, binary_rule, unary_second, binary_second, careful_product


cdef Py_ssize_t lane_count(Py_ssize_t chunk) noexcept nogil:
    """The padded width that runs `chunk` directions: 1, 2, 4, 8, 16 or a multiple of 8."""
    cdef Py_ssize_t width = 1
    if chunk > 16:
        return (chunk + 7) // 8 * 8
    while width < chunk:
        width *= 2
    return width


def padded_width(Py_ssize_t chunk):
    """lane_count for Python code."""
    return lane_count(chunk)


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


# -- second order: the cross lanes of nested duals ----------------------------------
# A nested dual's row (cyad._wrapper's second-order layout) holds a (outer lanes),
# b (inner lanes) and c (inner x outer lanes). The first-order loops above already
# give every lane its g' term; these add g'' b[j] a[k] to c[j][k]. The outer width is
# a lane count, so the k loop runs on compile-time blocks; j loops over `inner`.

cdef inline void add_scaled_row(lanes* tag, Py_ssize_t blocks, double s,
                                const real* p, real* out) noexcept nogil:
    # out += s * p, with a careful product (0 * inf = 0) when s is not finite
    cdef Py_ssize_t b, k
    if not isfinite(s):
        for k in range(blocks * <Py_ssize_t>sizeof(lanes)):
            out[k] = <real>(out[k] + careful_product(s, p[k]))
        return
    for b in range(blocks):
        for k in range(<Py_ssize_t>sizeof(lanes)):
            out[k] = <real>(out[k] + s * p[k])
        p += sizeof(lanes)
        out += sizeof(lanes)


cdef void unary_cross_loop(lanes* tag, int op, Py_ssize_t n, Py_ssize_t blocks, Py_ssize_t inner,
                           Py_ssize_t width, const real* xv, const real* xp,
                           real* yp) noexcept nogil:
    cdef Py_ssize_t i, j, outer = blocks * sizeof(lanes)
    cdef double v, d, dd
    cdef const real* row
    cdef real* cross
    for i in range(n):
        v = unary_rule(op, xv[i], &d)
        dd = unary_second(op, xv[i], v, d)
        if dd == 0.0:
            continue
        row = xp + i * width
        cross = yp + i * width + outer + inner
        for j in range(inner):
            if row[outer + j] != 0:
                add_scaled_row(tag, blocks, careful_product(dd, row[outer + j]), row, cross + j * outer)


cdef void binary_cross_loop(lanes* tag, int op, Py_ssize_t n, Py_ssize_t blocks, Py_ssize_t inner,
                            Py_ssize_t width,
                            const real* av, Py_ssize_t a_step, const real* ap,
                            const real* bv, Py_ssize_t b_step, const real* bp,
                            real* yp) noexcept nogil:
    cdef Py_ssize_t i, j, outer = blocks * sizeof(lanes)
    cdef double v, da, db, daa, dab, dbb, a_inner, b_inner, sa, sb
    cdef const real* a_row
    cdef const real* b_row
    cdef real* cross
    for i in range(n):
        v = binary_rule(op, av[i * a_step], bv[i * b_step], &da, &db)
        binary_second(op, av[i * a_step], bv[i * b_step], v, da, db, &daa, &dab, &dbb)
        if daa == 0.0 and dab == 0.0 and dbb == 0.0:
            continue
        a_row = NULL if ap == NULL else ap + i * a_step * width
        b_row = NULL if bp == NULL else bp + i * b_step * width
        cross = yp + i * width + outer + inner
        for j in range(inner):
            # c[j] += (daa A.b[j] + dab B.b[j]) A.a + (dab A.b[j] + dbb B.b[j]) B.a
            a_inner = 0.0 if a_row == NULL else a_row[outer + j]
            b_inner = 0.0 if b_row == NULL else b_row[outer + j]
            if a_row != NULL:
                sa = careful_product(daa, a_inner) + careful_product(dab, b_inner)
                if sa != 0.0:
                    add_scaled_row(tag, blocks, sa, a_row, cross + j * outer)
            if b_row != NULL:
                sb = careful_product(dab, a_inner) + careful_product(dbb, b_inner)
                if sb != 0.0:
                    add_scaled_row(tag, blocks, sb, b_row, cross + j * outer)


cdef void unary_cross(int op, Py_ssize_t outer, Py_ssize_t inner, Py_ssize_t width, Py_ssize_t n,
                      const real* xv, const real* xp, real* yp) noexcept nogil:
    """The g'' terms of y = g(x) on nested duals, added to yp (which holds the g' terms)."""
    if outer == 1:
        unary_cross_loop(<lanes1*>NULL, op, n, 1, inner, width, xv, xp, yp)
    elif outer == 2:
        unary_cross_loop(<lanes2*>NULL, op, n, 1, inner, width, xv, xp, yp)
    elif outer == 4:
        unary_cross_loop(<lanes4*>NULL, op, n, 1, inner, width, xv, xp, yp)
    elif outer == 8:
        unary_cross_loop(<lanes8*>NULL, op, n, 1, inner, width, xv, xp, yp)
    elif outer == 16:
        unary_cross_loop(<lanes16*>NULL, op, n, 1, inner, width, xv, xp, yp)
    else:
        unary_cross_loop(<lanes8*>NULL, op, n, outer // 8, inner, width, xv, xp, yp)


cdef void binary_cross(int op, Py_ssize_t outer, Py_ssize_t inner, Py_ssize_t width, Py_ssize_t n,
                       const real* av, Py_ssize_t a_step, const real* ap,
                       const real* bv, Py_ssize_t b_step, const real* bp,
                       real* yp) noexcept nogil:
    """The second-partial terms of y = g(a, b) on nested duals, added to yp."""
    if outer == 1:
        binary_cross_loop(<lanes1*>NULL, op, n, 1, inner, width, av, a_step, ap, bv, b_step, bp, yp)
    elif outer == 2:
        binary_cross_loop(<lanes2*>NULL, op, n, 1, inner, width, av, a_step, ap, bv, b_step, bp, yp)
    elif outer == 4:
        binary_cross_loop(<lanes4*>NULL, op, n, 1, inner, width, av, a_step, ap, bv, b_step, bp, yp)
    elif outer == 8:
        binary_cross_loop(<lanes8*>NULL, op, n, 1, inner, width, av, a_step, ap, bv, b_step, bp, yp)
    elif outer == 16:
        binary_cross_loop(<lanes16*>NULL, op, n, 1, inner, width, av, a_step, ap, bv, b_step, bp, yp)
    else:
        binary_cross_loop(<lanes8*>NULL, op, n, outer // 8, inner, width,
                          av, a_step, ap, bv, b_step, bp, yp)
