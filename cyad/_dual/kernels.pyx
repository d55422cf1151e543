"""Chunk loops: apply a rule of the rule table to every element of a dual buffer.

A dual buffer of n numbers with `width` lanes is a values array of n and a
row-major n x width partials array. For every element the loops evaluate the
rule once (value and derivative coefficient) and then update the element's row
of partials in a lane loop whose length is a compile-time constant: widths 1, 2,
4, 8 and 16 each have their own specialisation, wider rows (multiples of 8) run
as blocks of 8. `lane_count` (cyad/_dual/layout.pxd) pads any requested chunk up to such a width.

Rows whose derivative coefficient is not finite (sqrt at 0, log at 0) go through
a careful loop in which a zero tangent contributes zero instead of 0 * inf = nan,
so one singular entry cannot poison the directions that do not touch it.

Aliasing: every loop reads all of an element's inputs before it writes any of that
element's outputs, and touches no other element, so the output may be the very memory
of an operand (in-place operators, ufuncs with out=). Any other overlap - a shifted or
reversed view, an element broadcast over the output - is the caller's to remove
(cyad._dual.array computes such operations into a fresh buffer).
"""
from libc.math cimport isfinite
from cyad._fused cimport real, lanes, lanes1, lanes2, lanes4, lanes8, lanes16
from cyad._dual.layout cimport inner_lane, cross_lane
from cyad._rules.rules cimport unary_rule, binary_rule, unary_second, binary_second, careful_product


# -- lane loops: one row of partials ------------------------------------------

cdef inline void scale_row(lanes* tag, Py_ssize_t blocks, double d,
                           const real* p, real* out) noexcept nogil:
    # out = d * p
    cdef Py_ssize_t _block, k
    for _block in range(blocks):
        for k in range(<Py_ssize_t>sizeof(lanes)):
            out[k] = <real>(d * p[k])
        p += sizeof(lanes)
        out += sizeof(lanes)


cdef inline void combine_row(lanes* tag, Py_ssize_t blocks, double da, const real* pa,
                             double db, const real* pb, real* out) noexcept nogil:
    # out = da * pa + db * pb
    cdef Py_ssize_t _block, k
    for _block in range(blocks):
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


cdef inline void update_row(lanes* tag, Py_ssize_t blocks, double da, const real* pa,
                            double db, const real* pb, real* out) noexcept nogil:
    # out = da * pa + db * pb, where a NULL row is a constant operand's (no term)
    if pa != NULL and pb != NULL:
        if isfinite(da) and isfinite(db):
            combine_row(tag, blocks, da, pa, db, pb, out)
        else:
            careful_row(blocks * sizeof(lanes), da, pa, db, pb, out)
    elif pa != NULL:
        if isfinite(da):
            scale_row(tag, blocks, da, pa, out)
        else:
            careful_row(blocks * sizeof(lanes), da, pa, 0.0, <const real*>NULL, out)
    elif isfinite(db):
        scale_row(tag, blocks, db, pb, out)
    else:
        careful_row(blocks * sizeof(lanes), db, pb, 0.0, <const real*>NULL, out)


# -- element loops --------------------------------------------------------------

cdef void unary_loop(lanes* tag, int op, Py_ssize_t n, Py_ssize_t blocks,
                     const real* xv, const real* xp, real* yv, real* yp) noexcept nogil:
    cdef Py_ssize_t i, row = blocks * sizeof(lanes)
    cdef double d
    for i in range(n):
        yv[i] = <real>unary_rule(op, xv[i], &d)
        update_row(tag, blocks, d, xp + i * row, 0.0, <const real*>NULL, yp + i * row)


cdef void binary_loop(lanes* tag, int op, Py_ssize_t n, Py_ssize_t blocks,
                      const real* av, Py_ssize_t a_step, const real* ap,
                      const real* bv, Py_ssize_t b_step, const real* bp,
                      real* yv, real* yp) noexcept nogil:
    cdef Py_ssize_t i, row = blocks * sizeof(lanes)
    cdef Py_ssize_t a_row = a_step * row, b_row = b_step * row
    cdef double da, db
    for i in range(n):
        yv[i] = <real>binary_rule(op, av[i * a_step], bv[i * b_step], &da, &db)
        update_row(tag, blocks, da, NULL if ap == NULL else ap + i * a_row,
                   db, NULL if bp == NULL else bp + i * b_row, yp + i * row)


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


# -- second order: nested duals -----------------------------------------------------------
# A nested dual's row (the second-order layout of cyad/_dual/layout.pxd) holds a (outer
# lanes), b (inner lanes), c (inner x outer lanes: c[j] is the outer-lane row of inner
# direction j) and zero padding. Through y = g(x): y.a = g' x.a, y.b = g' x.b and
# y.c[j] = g' x.c[j] + g'' x.b[j] x.a; a binary rule adds both operands' terms with its
# second partials. The outer width is a lane count, so every row of outer lanes runs on
# compile-time blocks.
#
# The second-order terms of the c rows read the operands' a and b: an operation in place
# updates a and b after them (see the module's note on aliasing).

cdef inline void add_scaled_row(lanes* tag, Py_ssize_t blocks, double s,
                                const real* p, real* out) noexcept nogil:
    # out += s * p, with a careful product (0 * inf = 0) when s is not finite
    cdef Py_ssize_t _block, k
    if not isfinite(s):
        for k in range(blocks * <Py_ssize_t>sizeof(lanes)):
            out[k] = <real>(out[k] + careful_product(s, p[k]))
        return
    for _block in range(blocks):
        for k in range(<Py_ssize_t>sizeof(lanes)):
            out[k] = <real>(out[k] + s * p[k])
        p += sizeof(lanes)
        out += sizeof(lanes)


cdef inline void update_lanes(Py_ssize_t count, double da, const real* pa, double db,
                              const real* pb, real* out) noexcept nogil:
    # update_row over `count` lanes, a runtime number: blocks of 8, then single lanes
    cdef Py_ssize_t bulk = count // 8 * 8
    if bulk:
        update_row(<lanes8*>NULL, count // 8, da, pa, db, pb, out)
    if count > bulk:
        update_row(<lanes1*>NULL, count - bulk, da, NULL if pa == NULL else pa + bulk,
                   db, NULL if pb == NULL else pb + bulk, out + bulk)


cdef inline void nested_row(lanes* tag, Py_ssize_t blocks, Py_ssize_t inner, Py_ssize_t width,
                            bint in_place, double da, double daa, double dab, const real* a,
                            double db, double dbb, const real* b, real* y) noexcept nogil:
    # y's row for y = g(a, b) with first partials da, db and second partials daa, dab, dbb;
    # a or b is NULL for a constant operand (its partials are zero). The first-order terms
    # of the whole row, then the second-order ones of the c rows, which read a and b: so
    # `in_place` (y is an operand's row) leaves a and b to the end.
    cdef Py_ssize_t j, outer = blocks * sizeof(lanes), cross = cross_lane(outer, inner, 0, 0)
    cdef double a_inner, b_inner, sa, sb
    if in_place:   # the c rows (and the zero padding behind them)
        update_lanes(width - cross, da, NULL if a == NULL else a + cross,
                     db, NULL if b == NULL else b + cross, y + cross)
    else:
        update_lanes(width, da, a, db, b, y)
    # c[j] += (daa A.b[j] + dab B.b[j]) A.a + (dab A.b[j] + dbb B.b[j]) B.a, for the j whose
    # inner partials are not all zero (one loop per kind of operands: the j loop is hot)
    if daa == 0.0 and dab == 0.0 and dbb == 0.0:
        pass
    elif b == NULL:
        for j in range(inner):
            a_inner = a[inner_lane(outer, j)]
            if a_inner != 0.0:
                sa = daa * a_inner
                if sa != 0.0:
                    add_scaled_row(tag, blocks, sa, a, y + cross_lane(outer, inner, j, 0))
    elif a == NULL:
        for j in range(inner):
            b_inner = b[inner_lane(outer, j)]
            if b_inner != 0.0:
                sb = dbb * b_inner
                if sb != 0.0:
                    add_scaled_row(tag, blocks, sb, b, y + cross_lane(outer, inner, j, 0))
    else:
        for j in range(inner):
            a_inner = a[inner_lane(outer, j)]
            b_inner = b[inner_lane(outer, j)]
            if a_inner == 0.0 and b_inner == 0.0:
                continue
            sa = careful_product(daa, a_inner) + careful_product(dab, b_inner)
            if sa != 0.0:
                add_scaled_row(tag, blocks, sa, a, y + cross_lane(outer, inner, j, 0))
            sb = careful_product(dab, a_inner) + careful_product(dbb, b_inner)
            if sb != 0.0:
                add_scaled_row(tag, blocks, sb, b, y + cross_lane(outer, inner, j, 0))
    if in_place:
        update_lanes(cross, da, a, db, b, y)


cdef void unary_nested_loop(lanes* tag, int op, Py_ssize_t n, Py_ssize_t blocks, Py_ssize_t inner,
                            Py_ssize_t width, const real* xv, const real* xp,
                            real* yv, real* yp) noexcept nogil:
    cdef Py_ssize_t i
    cdef double v, d
    cdef bint in_place = xp == yp
    for i in range(n):
        v = unary_rule(op, xv[i], &d)
        nested_row(tag, blocks, inner, width, in_place, d, unary_second(op, xv[i], v, d), 0.0,
                   xp + i * width, 0.0, 0.0, <const real*>NULL, yp + i * width)
        yv[i] = <real>v


cdef void binary_nested_loop(lanes* tag, int op, Py_ssize_t n, Py_ssize_t blocks, Py_ssize_t inner,
                             Py_ssize_t width,
                             const real* av, Py_ssize_t a_step, const real* ap,
                             const real* bv, Py_ssize_t b_step, const real* bp,
                             real* yv, real* yp) noexcept nogil:
    cdef Py_ssize_t i
    cdef double a, b, v, da, db, daa, dab, dbb
    cdef bint in_place = ap == yp or bp == yp
    for i in range(n):
        a = av[i * a_step]
        b = bv[i * b_step]
        v = binary_rule(op, a, b, &da, &db)
        binary_second(op, a, b, v, da, db, &daa, &dab, &dbb)
        nested_row(tag, blocks, inner, width, in_place, da, daa, dab,
                   NULL if ap == NULL else ap + i * a_step * width, db, dbb,
                   NULL if bp == NULL else bp + i * b_step * width, yp + i * width)
        yv[i] = <real>v


cdef void unary_nested(int op, Py_ssize_t outer, Py_ssize_t inner, Py_ssize_t width, Py_ssize_t n,
                       const real* xv, const real* xp, real* yv, real* yp) noexcept nogil:
    """y = op(x) for n nested duals of `outer` (a lane count) and `inner` directions."""
    if outer == 1:
        unary_nested_loop(<lanes1*>NULL, op, n, 1, inner, width, xv, xp, yv, yp)
    elif outer == 2:
        unary_nested_loop(<lanes2*>NULL, op, n, 1, inner, width, xv, xp, yv, yp)
    elif outer == 4:
        unary_nested_loop(<lanes4*>NULL, op, n, 1, inner, width, xv, xp, yv, yp)
    elif outer == 8:
        unary_nested_loop(<lanes8*>NULL, op, n, 1, inner, width, xv, xp, yv, yp)
    elif outer == 16:
        unary_nested_loop(<lanes16*>NULL, op, n, 1, inner, width, xv, xp, yv, yp)
    else:
        unary_nested_loop(<lanes8*>NULL, op, n, outer // 8, inner, width, xv, xp, yv, yp)


cdef void binary_nested(int op, Py_ssize_t outer, Py_ssize_t inner, Py_ssize_t width, Py_ssize_t n,
                        const real* av, Py_ssize_t a_step, const real* ap,
                        const real* bv, Py_ssize_t b_step, const real* bp,
                        real* yv, real* yp) noexcept nogil:
    """y = op(a, b) for n nested duals (steps and NULL partials as in binary_chunks)."""
    if outer == 1:
        binary_nested_loop(<lanes1*>NULL, op, n, 1, inner, width, av, a_step, ap, bv, b_step, bp,
                           yv, yp)
    elif outer == 2:
        binary_nested_loop(<lanes2*>NULL, op, n, 1, inner, width, av, a_step, ap, bv, b_step, bp,
                           yv, yp)
    elif outer == 4:
        binary_nested_loop(<lanes4*>NULL, op, n, 1, inner, width, av, a_step, ap, bv, b_step, bp,
                           yv, yp)
    elif outer == 8:
        binary_nested_loop(<lanes8*>NULL, op, n, 1, inner, width, av, a_step, ap, bv, b_step, bp,
                           yv, yp)
    elif outer == 16:
        binary_nested_loop(<lanes16*>NULL, op, n, 1, inner, width, av, a_step, ap, bv, b_step, bp,
                           yv, yp)
    else:
        binary_nested_loop(<lanes8*>NULL, op, n, outer // 8, inner, width,
                           av, a_step, ap, bv, b_step, bp, yv, yp)
