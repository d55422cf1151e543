"""The lane layouts of dual buffers (cyad/_dual/layout.pxd), against the documented formula.

The layout is stated here once more, independently, from its documentation: first order,
direction k in lane k of lane_count(directions) lanes (1, 2, 4, 8, 16, then multiples of
8); second order, a[k] in lane k, b[j] in lane outer + j, c[j][k] in lane
outer + inner + j * outer + k of a row padded like a first-order one. Nested duals are
built by hand from that statement, and every reader of the layout (the chunk loops, the
primitives' JVP path, the prepared engine, nested differentiation, the C-level
functions and cyad.dual's elements) must read them the same way.
"""
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import cyad
from cyad._dual.array import Tag, make_nested_tag, tagged_dual
from cyad._dual.layout import (NestedLanes, padded_width, read_columns, seed_basis, seed_columns,
                          seed_lanes)

PAIRS = [(outer, inner) for outer in (1, 2, 4, 8, 16, 24) for inner in (1, 2, 3, 5, 8, 13, 20)]


def width_by_hand(lanes):
    if lanes > 16:
        return -(-lanes // 8) * 8
    return min(w for w in (1, 2, 4, 8, 16) if w >= lanes)


def a_lane(outer, inner, k):
    return k


def b_lane(outer, inner, j):
    return outer + j


def c_lane(outer, inner, j, k):
    return outer + inner + j * outer + k


def nested_partials(rng, shape, outer, inner, dtype=np.float64):
    """Random a, b, c and the partials array holding them, written lane by lane."""
    a = rng.standard_normal(shape + (outer,))
    b = rng.standard_normal(shape + (inner,))
    c = rng.standard_normal(shape + (inner, outer))
    p = np.zeros(shape + (width_by_hand(outer + inner + outer * inner),), dtype)
    for k in range(outer):
        p[..., a_lane(outer, inner, k)] = a[..., k]
    for j in range(inner):
        p[..., b_lane(outer, inner, j)] = b[..., j]
        for k in range(outer):
            p[..., c_lane(outer, inner, j, k)] = c[..., j, k]
    return a, b, c, p


def nested_dual(rng, values, outer, inner):
    """A nested dual of `values` over tags of outer and inner width, and its (a, b, c)."""
    tag = make_nested_tag(Tag(outer), Tag(inner))
    a, b, c, p = nested_partials(rng, values.shape, outer, inner)
    return tagged_dual(values, p, tag), a, b, c


def parts(d, outer, inner):
    """(a, b, c) of a nested dual read lane by lane with the formula."""
    p = d.partials
    a = np.stack([p[..., a_lane(outer, inner, k)] for k in range(outer)], -1)
    b = np.stack([p[..., b_lane(outer, inner, j)] for j in range(inner)], -1)
    c = np.stack([np.stack([p[..., c_lane(outer, inner, j, k)] for k in range(outer)], -1)
                  for j in range(inner)], -2)
    return a, b, c


# -- the layout's own functions ------------------------------------------------------------------

@pytest.mark.parametrize("outer, inner", PAIRS)
def test_c_level_functions(c_hooks, outer, inner):
    c = c_hooks.c_layout(outer, inner)
    assert c["first"] == width_by_hand(outer)
    assert c["width"] == width_by_hand(outer + inner + outer * inner)
    assert c["a"] == [a_lane(outer, inner, k) for k in range(outer)]
    assert c["b"] == [b_lane(outer, inner, j) for j in range(inner)]
    assert c["c"] == [[c_lane(outer, inner, j, k) for k in range(outer)] for j in range(inner)]


def test_first_order_width():
    assert [padded_width(d) for d in range(1, 50)] == [width_by_hand(d) for d in range(1, 50)]


def test_cython_elements_row(c_hooks):
    # cyad.dual's second-order rows: one outer direction
    assert c_hooks.second_order_rows(40) == [width_by_hand(1 + 2 * i) for i in range(1, 41)]


@pytest.mark.parametrize("outer, inner", PAIRS)
def test_nested_lanes(outer, inner):
    lanes = NestedLanes(outer, inner)
    assert lanes.width == width_by_hand(outer + inner + outer * inner)
    assert list(range(lanes.width))[lanes.a] == [a_lane(outer, inner, k) for k in range(outer)]
    assert list(range(lanes.width))[lanes.b] == [b_lane(outer, inner, j) for j in range(inner)]
    assert [lanes.b_lane(j) for j in range(inner)] == [b_lane(outer, inner, j)
                                                       for j in range(inner)]
    assert [[lanes.c_lane(j, k) for k in range(outer)] for j in range(inner)] == \
        [[c_lane(outer, inner, j, k) for k in range(outer)] for j in range(inner)]
    a, b, c, p = nested_partials(np.random.default_rng(outer * 100 + inner), (3, 2), outer, inner)
    va, vb, vc = lanes.split(p)
    assert_array_equal(va, a)
    assert_array_equal(vb, b)
    assert_array_equal(vc, c)
    assert np.shares_memory(vc, p)   # views: writing them writes the lanes
    vc[...] = 0.0
    assert not p[..., lanes.c].any() and np.array_equal(va, a)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_seeding_and_reading_arrays(dtype):
    outer, inner, shape = 2, 3, (4,)
    lanes = NestedLanes(outer, inner)
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape + (outer,)).astype(dtype)
    t = tuple(rng.standard_normal(shape).astype(dtype) for _ in range(inner))
    c0 = rng.standard_normal(shape + (outer,)).astype(dtype)
    p = np.zeros(shape + (lanes.width,), dtype)
    seed_columns(p, lanes.a.start, a)
    seed_lanes(p, lanes.b_lane(0), t)
    seed_columns(p, lanes.c_lane(1), c0)
    expected = np.zeros_like(p)
    for k in range(outer):
        expected[..., a_lane(outer, inner, k)] = a[..., k]
        expected[..., c_lane(outer, inner, 1, k)] = c0[..., k]
    for j in range(inner):
        expected[..., b_lane(outer, inner, j)] = t[j]
    assert_array_equal(p, expected)
    assert_array_equal(read_columns(p, lanes.b_lane(0), inner), np.stack(t, -1))
    assert_array_equal(read_columns(p, lanes.c_lane(1), outer), c0)
    basis = np.zeros((4, 8), dtype)
    seed_basis(basis, 3)
    assert_array_equal(basis[:, 3:7], np.eye(4))
    assert not basis[:, :3].any() and not basis[:, 7:].any()
    with pytest.raises(ValueError, match="do not fit"):
        read_columns(p, lanes.c_lane(inner - 1), outer + 1 + lanes.width)
    with pytest.raises(ValueError, match="C-contiguous"):
        seed_basis(basis[:, ::2], 0)
    with pytest.raises(ValueError, match="numbers where"):
        seed_columns(p, 0, a[:2])


# -- every reader of nested duals ---------------------------------------------------------------

@pytest.mark.parametrize("outer, inner", [(1, 1), (2, 3), (4, 5), (8, 2), (16, 3), (24, 4)])
def test_chunk_loops_read_the_layout(outer, inner):
    # y = sin(x) * x: y.c[j][k] from the product and chain rules, part by part
    rng = np.random.default_rng(outer + inner)
    v = rng.uniform(-2, 2, 5)
    x, a, b, c = nested_dual(rng, v, outer, inner)
    y = np.sin(x) * x
    s, ds, dds = np.sin(v)[:, None], np.cos(v)[:, None], -np.sin(v)[:, None]
    # p = sin(x): p.a = cos a, p.b = cos b, p.c = cos c - sin b a
    pa, pb = ds * a, ds * b
    pc = ds[..., None] * c + dds[..., None] * b[..., :, None] * a[..., None, :]
    vv = v[:, None]
    ya, yb, yc = parts(y, outer, inner)
    assert_allclose(y.values, np.sin(v) * v, rtol=1e-14)
    assert_allclose(ya, pa * vv + s * a, rtol=1e-12, atol=1e-14)
    assert_allclose(yb, pb * vv + s * b, rtol=1e-12, atol=1e-14)
    assert_allclose(yc, pc * vv[..., None] + pb[..., :, None] * a[..., None, :]
                    + b[..., :, None] * pa[..., None, :] + s[..., None] * c,
                    rtol=1e-12, atol=1e-13)
    assert not y.partials[..., c_lane(outer, inner, inner - 1, outer - 1) + 1:].any()


@pytest.mark.parametrize("outer, inner", [(1, 2), (2, 3), (4, 1), (8, 5)])
def test_primitives_read_the_layout(outer, inner):
    # det of a 2 x 2 nested dual matrix through its JVP rule, beside the same products
    # through the chunk loops
    rng = np.random.default_rng(7 * outer + inner)
    m, _, _, _ = nested_dual(rng, rng.standard_normal((2, 2)), outer, inner)
    d = np.linalg.det(m)
    e = m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0]
    assert d.tag is m.tag
    assert_allclose(d.values, e.values, rtol=1e-13)
    for got, want in zip(parts(d, outer, inner), parts(e, outer, inner), strict=True):
        assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    # and a linear primitive: each part maps through the matrix alone
    k = rng.standard_normal((3, 2))
    x, a, b, c = nested_dual(rng, rng.standard_normal(2), outer, inner)
    ya, yb, yc = parts(k @ x, outer, inner)
    assert_allclose(ya, k @ a, rtol=1e-13)
    assert_allclose(yb, k @ b, rtol=1e-13)
    assert_allclose(yc, np.einsum("ij,jab->iab", k, c), rtol=1e-13)


def test_prepared_engine_seeds_and_reads_the_layout():
    # f sees the engine's seeds, checked against the formula, and returns a nested dual
    # built by hand, whose cross lanes the hvp must read
    n, v = 3, np.array([0.5, -1.0, 2.0])
    rng = np.random.default_rng(11)
    returned = {}

    def f(x):
        outer, inner = x.tag.outer.width, x.tag.inner.width
        r, a, b, c = nested_dual(rng, np.array(1.0), outer, inner)
        returned.update(seeds=parts(x, outer, inner), b=b, c=c)
        return tagged_dual(r.values, r.partials, x.tag)

    prep = cyad.prepare_hvp(f, np.ones(n), v, engine="dual")
    assert prep.evaluations == 1
    grad, hv = cyad.gradient_and_hvp(f, np.ones(n), v, prep=prep)
    xa, xb, xc = returned["seeds"]
    assert_array_equal(xa[:, 0], v)               # the tangent in outer lane 0
    assert_array_equal(xb, np.eye(n, xb.shape[-1]))   # basis directions in the inner lanes
    assert not xc.any()
    assert_array_equal(grad, returned["b"][:n])
    assert_array_equal(hv, returned["c"][:n, 0])


