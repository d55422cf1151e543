"""jacobian_sparsity and hessian_sparsity against the Jacobians and Hessians themselves.

A pattern must contain every nonzero of the derivative at every x where the recorded
branch holds (checked at several random x against the dual engine's dense derivatives,
which share no code with the tape's propagation, and against analytic Hessians); on
functions whose structure is known exactly it must equal that structure (the
derivatives' own nonzeros at a generic x, and hand-built patterns), so that a
conservative all-to-all where the structure is known fails.
"""
import numpy as np
import pytest
import scipy.sparse

import cyad
from cyad._sparse import index_bands as _index_bands
from cyad._sparse.index_bands import Bands
from cyad._sparse.index_sets import (
    affine_runs, band_rows, gather_rows, row_pairs, symmetric_pattern, union_rows)
from cyad._sparse.sparsity import _Propagation
from cyad._tape.program import Tape, evaluate
from tests.rosenbrock import rosenbrock, rosenbrock_hessian

RNG = np.random.default_rng(20261201)


def _points(n, count=3, dtype=np.float64):
    return [RNG.uniform(0.5, 1.5, n).astype(dtype) * RNG.choice([-1, 1], n)
            for _ in range(count)]


def _dense_jacobian(f, x, y=None):
    if y is None:
        return np.atleast_2d(cyad.jacobian(f, x, engine="dual")).reshape(-1, x.size)
    return np.atleast_2d(cyad.jacobian(f, x, y=y.copy(), engine="dual")).reshape(-1, x.size)


def _dense_hessian(f, x):
    return np.asarray(cyad.hessian(f, x, engine="dual")).reshape(x.size, x.size)


def _check_pattern(pattern, shape):
    assert isinstance(pattern, scipy.sparse.csr_array)
    assert pattern.shape == shape
    assert pattern.dtype == np.int8
    assert np.all(pattern.data == 1)
    return pattern.toarray().astype(bool)


def _assert_contains(pattern, derivative):
    missing = (derivative != 0) & ~pattern
    assert not missing.any(), f"nonzeros outside the pattern at {np.argwhere(missing)[:5]}"


# -- functions of exactly known structure ------------------------------------------------

def broyden(x):
    # the Broyden tridiagonal function: (3 - 2 x_i) x_i - x_(i-1) - 2 x_(i+1) + 1
    padded = np.concatenate([np.zeros(1), x, np.zeros(1)])
    return (3.0 - 2.0 * x) * x - padded[:-2] - 2.0 * padded[2:] + 1.0


def laplacian_roll(x):
    u = x.reshape(6, 5)
    return (np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1)
            - 4.0 * u + u ** 3).ravel()


def laplacian_slices(x):
    u = x.reshape(6, 5)
    return (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * np.sin(u[1:-1, 1:-1]))


def arrowhead(x):
    return np.concatenate([np.sum(x ** 2, keepdims=True), x[0] * x[1:] + np.exp(x[1:])])


def block_diagonal(x):
    blocks = x.reshape(-1, 3)
    return (np.tanh(blocks) * np.sum(blocks, axis=1, keepdims=True)).ravel()


def _band(n, offsets, m=None):
    m = n if m is None else m
    return sum(np.eye(m, n, k, dtype=bool) for k in offsets).astype(bool)


def _laplacian_roll_pattern():
    grid = np.arange(30).reshape(6, 5)
    p = np.zeros((30, 30), bool)
    for shift, axis in ((0, 0), (1, 0), (-1, 0), (1, 1), (-1, 1)):
        p[grid.ravel(), np.roll(grid, shift, axis).ravel()] = True
    return p


def _laplacian_slices_pattern():
    grid = np.arange(30).reshape(6, 5)
    p = np.zeros((4, 3, 30), bool)
    for i in range(4):
        for j in range(3):
            for di, dj in ((0, 1), (2, 1), (1, 0), (1, 2), (1, 1)):
                p[i, j, grid[i + di, j + dj]] = True
    return p.reshape(12, 30)


def _arrowhead_pattern(n):
    p = np.eye(n, dtype=bool)
    p[0, :] = True
    p[:, 0] = True
    return p


EXACT = [
    ("broyden", broyden, 12, lambda n: _band(n, (-1, 0, 1))),
    ("laplacian_roll", laplacian_roll, 30, lambda n: _laplacian_roll_pattern()),
    ("laplacian_slices", laplacian_slices, 30, lambda n: _laplacian_slices_pattern()),
    ("arrowhead", arrowhead, 9, _arrowhead_pattern),
    ("block_diagonal", block_diagonal, 12,
     lambda n: np.kron(np.eye(n // 3, dtype=bool), np.ones((3, 3), bool)).astype(bool)),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name, f, n, expected", EXACT, ids=[e[0] for e in EXACT])
def test_exact_jacobian_patterns(name, f, n, expected, dtype):
    points = _points(n, dtype=dtype)
    pattern = _check_pattern(cyad.jacobian_sparsity(f, points[0]), expected(n).shape)
    np.testing.assert_array_equal(pattern, expected(n))
    for x in points:   # the derivative's own nonzeros at a generic x: the same
        np.testing.assert_array_equal(pattern, _dense_jacobian(f, x) != 0)
    assert pattern.sum() < pattern.size / 2


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rosenbrock_hessian_is_tridiagonal(dtype):
    n = 10
    pattern = _check_pattern(cyad.hessian_sparsity(rosenbrock, np.ones(n, dtype)), (n, n))
    np.testing.assert_array_equal(pattern, _band(n, (-1, 0, 1)))
    for x in _points(n):
        np.testing.assert_array_equal(pattern, rosenbrock_hessian(x) != 0)


HESSIANS = [
    ("separable", lambda x: np.sum(np.sin(x)), lambda n: np.eye(n, dtype=bool)),
    ("linear", lambda x: np.sum(3.0 * x) - x[2], lambda n: np.zeros((n, n), bool)),
    ("product", lambda x: x[0] * x[1] + x[2], lambda n: _pair(n, [(0, 1)])),
    ("arrowhead", lambda x: np.sum(x[0] * x[1:]) + np.sum(x ** 3), _arrowhead_pattern),
    ("neighbours", lambda x: np.sum(x[1:] * x[:-1]), lambda n: _band(n, (-1, 1))),
    ("quotient", lambda x: x[0] / x[3] + np.exp(x[1]), lambda n: _pair(n, [(0, 3), (3, 3),
                                                                             (1, 1)])),
    ("block_diagonal", lambda x: np.sum(block_diagonal(x)),
     lambda n: np.kron(np.eye(n // 3, dtype=bool), np.ones((3, 3), bool)).astype(bool)),
    ("constant_inside", lambda x: np.sum(np.floor(3.0 * x) * x), lambda n: np.zeros((n, n), bool)),
]


def _pair(n, pairs):
    p = np.zeros((n, n), bool)
    for i, j in pairs:
        p[i, j] = p[j, i] = True
    return p


@pytest.mark.parametrize("name, f, expected", HESSIANS, ids=[h[0] for h in HESSIANS])
def test_exact_hessian_patterns(name, f, expected):
    n = 6
    pattern = _check_pattern(cyad.hessian_sparsity(f, _points(n)[0]), (n, n))
    np.testing.assert_array_equal(pattern, expected(n))
    np.testing.assert_array_equal(pattern, pattern.T)
    for x in _points(n):
        np.testing.assert_array_equal(pattern, _dense_hessian(f, x) != 0)


def test_matmul_by_a_constant_gives_its_pattern():
    n = 8
    a = RNG.normal(size=(5, n)) * (RNG.uniform(size=(5, n)) < 0.3)
    a[:, 0] = 0.0   # a column no output depends on
    b = RNG.normal(size=(n, 4)) * (RNG.uniform(size=(n, 4)) < 0.4)
    x = _points(n)[0]
    pattern = _check_pattern(cyad.jacobian_sparsity(lambda x: a @ np.sin(x), x), (5, n))
    np.testing.assert_array_equal(pattern, a != 0)
    pattern = _check_pattern(cyad.jacobian_sparsity(lambda x: np.cos(x) @ b, x), (4, n))
    np.testing.assert_array_equal(pattern, b.T != 0)
    # a batch of matrices times one constant vector
    v = np.array([1.0, 0.0, 2.0, 0.0])
    pattern = _check_pattern(cyad.jacobian_sparsity(lambda x: x.reshape(2, 4) @ v, x), (2, n))
    np.testing.assert_array_equal(pattern, np.kron(np.eye(2), v != 0).astype(bool))
    # the quadratic form x A x couples the pattern of A + A.T
    a = RNG.normal(size=(n, n)) * (RNG.uniform(size=(n, n)) < 0.25)
    pattern = _check_pattern(cyad.hessian_sparsity(lambda x: x @ (a @ x), x), (n, n))
    np.testing.assert_array_equal(pattern, (a + a.T) != 0)
    for x in _points(n):
        _assert_contains(pattern, _dense_hessian(lambda x: x @ (a @ x), x))


def test_variable_matmul_couples_rows_and_columns():
    def f(x):
        u = x[:6].reshape(2, 3)
        v = x[6:].reshape(3, 2)
        return (u @ v).ravel()
    n = 12
    pattern = _check_pattern(cyad.jacobian_sparsity(f, _points(n)[0]), (4, n))
    for x in _points(n):
        np.testing.assert_array_equal(pattern, _dense_jacobian(f, x) != 0)
    hessian = _check_pattern(cyad.hessian_sparsity(lambda x: np.sum(f(x)), _points(n)[0]),
                             (n, n))
    for x in _points(n):
        np.testing.assert_array_equal(hessian, _dense_hessian(lambda x: np.sum(f(x)), x) != 0)


def test_maximum_and_where_give_both_branches():
    n = 7
    x = np.arange(n, dtype=float)   # maximum picks x[1:] everywhere at this x
    pattern = _check_pattern(cyad.jacobian_sparsity(
        lambda x: np.maximum(x[:-1], x[1:]), x), (n - 1, n))
    np.testing.assert_array_equal(pattern, _band(n, (0, 1), n - 1))
    assert (_dense_jacobian(lambda x: np.maximum(x[:-1], x[1:]), x) != 0).sum() == n - 1

    def g(x):
        return np.where(x > 0, x ** 2, np.roll(x, 1))
    pattern = _check_pattern(cyad.jacobian_sparsity(g, np.ones(n)), (n, n))
    np.testing.assert_array_equal(pattern, _band(n, (0,)) | np.roll(np.eye(n, dtype=bool), 1, 0))
    for x in _points(n):
        _assert_contains(pattern, _dense_jacobian(g, x))
    clipped = _check_pattern(cyad.jacobian_sparsity(lambda x: np.clip(x, -0.5, 0.5), x), (n, n))
    np.testing.assert_array_equal(clipped, np.eye(n, dtype=bool))


def test_local_patterns_prune_what_x_does_not_take():
    n = 7
    x = np.arange(n, dtype=float)
    pattern = _check_pattern(cyad.jacobian_sparsity(
        lambda x: np.maximum(x[:-1], x[1:]), x, local=True), (n - 1, n))
    np.testing.assert_array_equal(pattern, _band(n, (1,), n - 1))

    def g(x):
        return np.where(x > 3, x ** 2, np.roll(x, 1))
    local = _check_pattern(cyad.jacobian_sparsity(g, x, local=True), (n, n))
    np.testing.assert_array_equal(local, _dense_jacobian(g, x) != 0)
    # abs at 0 and a product with a factor 0 at x: their partials are 0 there
    point = np.array([0.0, 1.0, -1.0])
    local = _check_pattern(cyad.jacobian_sparsity(lambda x: np.abs(x) * x[0], point,
                                                  local=True), (3, 3))
    np.testing.assert_array_equal(local, [[0, 0, 0], [1, 0, 0], [1, 0, 0]])
    # a matmul of variables with zeros at x: out_i on A[i, t] where v[t] != 0, on v[t]
    # where A[i, t] != 0
    def product(x):
        return x[:4].reshape(2, 2) @ x[4:]
    point = np.array([1.0, 0.0, 0.0, 2.0, 3.0, 0.0])
    local = _check_pattern(cyad.jacobian_sparsity(product, point, local=True), (2, 6))
    np.testing.assert_array_equal(local, [[1, 0, 0, 0, 1, 0], [0, 0, 1, 0, 0, 1]])
    np.testing.assert_array_equal(local, _dense_jacobian(product, point) != 0)


@pytest.mark.parametrize("name, f, n, expected", EXACT, ids=[e[0] for e in EXACT])
def test_local_patterns_of_exact_structures(name, f, n, expected):
    for x in _points(n):
        local = _check_pattern(cyad.jacobian_sparsity(f, x, local=True), expected(n).shape)
        np.testing.assert_array_equal(local, _dense_jacobian(f, x) != 0)


def test_python_branch_gives_the_recorded_branch():
    def f(x):
        if x[0] > 0:
            return x[1:] * x[0]
        return np.sin(x[1:])
    n = 5
    positive = _check_pattern(cyad.jacobian_sparsity(f, np.ones(n)), (n - 1, n))
    negative = _check_pattern(cyad.jacobian_sparsity(f, -np.ones(n)), (n - 1, n))
    np.testing.assert_array_equal(negative, _band(n, (1,), n - 1))
    expected = _band(n, (1,), n - 1)
    expected[:, 0] = True
    np.testing.assert_array_equal(positive, expected)


def test_two_argument_form():
    def f(y, x):
        y[:] = x[1:] - x[:-1] ** 2
        y[0] += 2.0 * y[0]
    n = 6
    y = np.zeros(n - 1)
    pattern = _check_pattern(cyad.jacobian_sparsity(f, _points(n)[0], y=y), (n - 1, n))
    np.testing.assert_array_equal(pattern, _band(n, (0, 1), n - 1))
    for x in _points(n):
        np.testing.assert_array_equal(pattern, _dense_jacobian(f, x, y) != 0)


def test_table_entries_run_by_numpy():
    n = 6
    x = _points(n)[0]
    # np.cumsum (linear) and np.linalg.det (a primitive) run by NumPy: every output on
    # every input, conservatively; only a primitive couples pairs
    pattern = _check_pattern(cyad.jacobian_sparsity(lambda x: np.cumsum(x) * 2.0, x), (n, n))
    assert pattern.all()
    hessian = _check_pattern(cyad.hessian_sparsity(lambda x: np.sum(np.cumsum(x)), x), (n, n))
    assert not hessian.any()

    def det(x):
        return np.linalg.det(x[:4].reshape(2, 2)) + np.sum(x[4:])
    hessian = _check_pattern(cyad.hessian_sparsity(det, x), (n, n))
    np.testing.assert_array_equal(hessian, np.outer(np.arange(n) < 4, np.arange(n) < 4))
    _assert_contains(hessian, _dense_hessian(det, x))
    # np.sort orders by argsort's guarded positions: the permutation at x
    pattern = _check_pattern(cyad.jacobian_sparsity(np.sort, x), (n, n))
    np.testing.assert_array_equal(pattern, np.eye(n, dtype=bool)[np.argsort(x)])
    # np.round reads values only: no dependency
    pattern = _check_pattern(cyad.jacobian_sparsity(lambda x: np.round(x) + x[0], x), (n, n))
    np.testing.assert_array_equal(pattern, np.broadcast_to(np.arange(n) == 0, (n, n)))
    for point in _points(n):
        _assert_contains(pattern, _dense_jacobian(lambda x: np.round(x) + x[0], point))


def test_in_place_updates_and_aliasing():
    def f(x):
        y = x.copy()
        y[1:] += y[:-1] * 2.0      # reads the old y[:-1]: a bidiagonal pattern
        y *= y
        return y
    n = 6
    pattern = _check_pattern(cyad.jacobian_sparsity(f, _points(n)[0]), (n, n))
    np.testing.assert_array_equal(pattern, _band(n, (0, -1)))
    for x in _points(n):
        np.testing.assert_array_equal(pattern, _dense_jacobian(f, x) != 0)


def test_constant_and_independent_outputs():
    n = 4
    pattern = _check_pattern(cyad.jacobian_sparsity(lambda x: np.ones(3), np.ones(n)), (3, n))
    assert not pattern.any()
    hessian = _check_pattern(cyad.hessian_sparsity(lambda x: np.sum(x), np.ones(n)), (n, n))
    assert not hessian.any()
    pattern = _check_pattern(cyad.jacobian_sparsity(np.sin, 0.5), (1, 1))
    assert pattern.all()


def test_wrapped_and_recorded_functions():
    x = _points(12)[0]
    expected = _band(12, (-1, 0, 1))
    for f in (cyad.FunctionWrapper(broyden), cyad.record(broyden, x)):
        np.testing.assert_array_equal(
            _check_pattern(cyad.jacobian_sparsity(f, x), (12, 12)), expected)


def test_errors():
    with pytest.raises(ValueError, match="scalar"):
        cyad.hessian_sparsity(np.sin, np.ones(3))
    with pytest.raises(TypeError, match="callable"):
        cyad.jacobian_sparsity(3.0, np.ones(3))


# -- random programs: the pattern contains the derivative everywhere ---------------------

def _random_program(rng, n):
    """A random composition of elementwise rules, shifts, slices, reductions and
    products with sparse constants, as a function of x (n elements)."""
    steps = []
    for _ in range(rng.integers(3, 8)):
        choice, shift = rng.integers(9), int(rng.integers(1, 3))
        if choice == 0:
            steps.append(lambda u, k=shift: np.roll(u, k))
        elif choice == 1:
            steps.append(lambda u: np.sin(u) * u[::-1])
        elif choice == 2:
            steps.append(lambda u: np.concatenate([u[1:] + u[:-1], u[:1] ** 2]))
        elif choice == 3:
            a = rng.normal(size=(n, n)) * (rng.uniform(size=(n, n)) < 0.2)
            steps.append(lambda u, a=a: a @ u + u)
        elif choice == 4:
            steps.append(lambda u: np.maximum(u, 0.3 * u[::-1]))
        elif choice == 5:
            steps.append(lambda u: u * np.sum(u[:2]) + np.tanh(u))
        elif choice == 6:
            steps.append(lambda u: np.where(u > 0, np.exp(-u * u), u[::-1] / 3.0))
        elif choice == 7:
            steps.append(lambda u: (u.reshape(-1, 2) * u.reshape(-1, 2)[:, ::-1]).ravel())
        else:
            steps.append(lambda u: np.floor(u) * u + np.cumsum(u) * 0.1)

    def program(x):
        u = x
        for step in steps:
            u = step(u)
        return u
    return program


@pytest.mark.parametrize("seed", range(12))
def test_random_programs(seed):
    rng = np.random.default_rng(seed)
    n = 8
    program = _random_program(rng, n)
    x0 = rng.uniform(-1.5, 1.5, n)
    pattern = _check_pattern(cyad.jacobian_sparsity(program, x0), (n, n))
    local = _check_pattern(cyad.jacobian_sparsity(program, x0, local=True), (n, n))
    assert not (local & ~pattern).any()
    _assert_contains(local, _dense_jacobian(program, x0))
    hessian = _check_pattern(cyad.hessian_sparsity(lambda x: np.sum(program(x) ** 2), x0),
                             (n, n))
    np.testing.assert_array_equal(hessian, hessian.T)
    for x in [x0] + [rng.uniform(-1.5, 1.5, n) for _ in range(3)]:
        # (the programs have no Python branches: where and maximum are instructions)
        _assert_contains(pattern, _dense_jacobian(program, x))
        _assert_contains(hessian, _dense_hessian(lambda x: np.sum(program(x) ** 2), x))


# -- the index-map kinds, on tapes written by hand ------------------------------------------

def _linear_tape(kind, in_size, out_shape, **params):
    tape = Tape(np.float64)
    x = tape.input((in_size,))
    tape.outputs = [tape.emit(kind, (x,), out_shape, **params)]
    return tape


@pytest.mark.parametrize("kind, in_size, out_shape, params", [
    ("gather", 6, (4,), {"index": np.array([5, -1, 0, 5])}),
    ("gather", 12, (2, 4), {"index": np.array([5, -1, 0, 5])}),          # two rows
    ("scatter_add", 6, (4,), {"index": np.array([0, 2, 2, -1, 3, 0])}),
    ("scatter_add", 12, (2, 4), {"index": np.array([0, 2, 2, -1, 3, 0])}),
    ("sum_inner", 12, (4,), {"k": 3}),
    ("copy", 3, (2, 3), {}),                                               # modular
])
def test_index_map_kinds(kind, in_size, out_shape, params):
    """A linear instruction's pattern against its Jacobian, column j its value at the
    j-th unit vector (cyad._tape.program.evaluate: the kinds' meaning in NumPy)."""
    tape = _linear_tape(kind, in_size, out_shape, **params)
    instr = tape.instrs[0]
    jacobian = np.stack([evaluate(instr, [e])[0].ravel() for e in np.eye(in_size)], axis=1)
    propagation = _Propagation(tape, tape.outputs[0], out_shape)
    pattern = _check_pattern(propagation.jacobian(), jacobian.shape)
    np.testing.assert_array_equal(pattern, jacobian != 0)


def test_batched_matmul_with_a_constant():
    tape = Tape(np.float64)
    x = tape.input((2, 3, 2))
    # two (2, 3) matrices with zeros, one per batch element
    const = tape.const(np.array([[[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]],
                                 [[0.0, 4.0, 0.0], [5.0, 0.0, 0.0]]]))
    out = tape.emit("matmul", (const, x), (2, 2, 2), m=2, k=3, n=2)
    instr = tape.instrs[0]
    values = tape.consts[const]
    jacobian = np.stack([evaluate(instr, [values, e.reshape(2, 3, 2)])[0].ravel()
                         for e in np.eye(12)], axis=1)
    pattern = _check_pattern(_Propagation(tape, out, out.shape).jacobian(), (8, 12))
    np.testing.assert_array_equal(pattern, jacobian != 0)
    assert not pattern.all()


# -- the compiled index-set kernels against Python sets ------------------------------------

def _random_rows(rng, count, n):
    rows = [sorted(set(rng.integers(0, n, rng.integers(0, 5)).tolist())) for _ in range(count)]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    indices = np.array([i for r in rows for i in r], np.int64)
    return rows, (indptr, indices)


def _as_lists(indptr, indices):
    return [indices[indptr[i]:indptr[i + 1]].tolist() for i in range(indptr.size - 1)]


@pytest.mark.parametrize("seed", range(5))
def test_index_set_kernels(seed):
    rng = np.random.default_rng(seed)
    n = 9
    a, a_csr = _random_rows(rng, 20, n)
    b, b_csr = _random_rows(rng, 20, n)
    source = rng.integers(-1, 20, 30).astype(np.int64)
    assert _as_lists(*gather_rows(*a_csr, source)) == [a[s] if s >= 0 else [] for s in source]
    assert _as_lists(*union_rows(*a_csr, *b_csr)) == [sorted(set(u) | set(v))
                                                     for u, v in zip(a, b)]
    with pytest.raises(ValueError, match="rows"):   # (30 rows and 20)
        union_rows(*gather_rows(*a_csr, source), *b_csr)
    with pytest.raises(ValueError, match="rows"):
        row_pairs(*gather_rows(*a_csr, source), *b_csr, False)
    first, second = row_pairs(*a_csr, *b_csr, False)
    assert sorted(zip(first.tolist(), second.tolist())) == sorted(
        (min(u, v), max(u, v)) for r, s in zip(a, b) for u in r for v in s)
    first, second = row_pairs(*a_csr, *a_csr, True)
    assert sorted(zip(first.tolist(), second.tolist())) == sorted(
        (u, v) for r in a for u in r for v in r if u <= v)
    expected = [sorted({v for u, v in zip(first, second) if u == i}
                       | {u for u, v in zip(first, second) if v == i}) for i in range(n)]
    assert _as_lists(*symmetric_pattern(first, second, n)) == expected
    # a long row (sorted by qsort, the short ones by insertion)
    first, second = np.zeros(40, np.int64), rng.integers(0, n, 40).astype(np.int64)
    expected = [sorted(set(second.tolist()))] + [[0] if i in second else [] for i in range(1, n)]
    assert _as_lists(*symmetric_pattern(first, second, n)) == expected


# -- bands: index sets kept symbolic, against the same sets made explicit -------------------

def _band_program(rng, n):
    """A random composition of slices, strided and reversed reads, slice writes into
    zeros and in-place updates of slices (the forms bands keep), with scalars, sums and
    rolls among them (forms that make the rows explicit)."""
    steps = []
    for _ in range(rng.integers(2, 7)):
        choice, shift = rng.integers(9), int(rng.integers(1, 3))
        step = int(rng.choice([1, 2, -1, -2]))
        if choice == 0:
            steps.append(lambda u, a=shift: np.concatenate([u[a:] * u[:u.size - a], u[:a] + 1.0]))
        elif choice == 1:
            def written(u, a=shift, s=step):
                y = np.zeros_like(u)
                y[a::abs(s)] = np.sin(u[a::abs(s)]) if s > 0 else u[::-1][a::abs(s)] ** 2
                y[0] += u[-1] * u[0]
                return y
            steps.append(written)
        elif choice == 2:
            def updated(u, a=shift):
                y = u * 2.0 + 1.0
                y[a:] -= u[:u.size - a]
                y[:u.size - 1] -= 2.0 * u[1:] * u[:-1]
                return y
            steps.append(updated)
        elif choice == 3:
            steps.append(lambda u, s=step: u * np.tanh(u[::s][:1]) + u[::-1] ** 3)
        elif choice == 4:
            steps.append(lambda u: np.exp(u) * np.sum(u[1:3]) + u)
        elif choice == 5:
            def tridiagonal(u):
                y = np.zeros_like(u)
                y[1:-1] = (3 - 2 * u[1:-1]) * u[1:-1] - u[:-2] - 2 * u[2:] + 1
                y[0] = (3 - 2 * u[0]) * u[0] - 2 * u[1] + 1
                y[-1] = u[-1] * u[-2]
                return y
            steps.append(tridiagonal)
        elif choice == 6:
            steps.append(lambda u: np.maximum(u, u[::-1]) * u)
        elif choice == 7:
            steps.append(lambda u: (u.reshape(-1, 2) * u.reshape(-1, 2)[:, ::-1]).ravel()
                         + np.roll(u, 1))
        else:
            def interleaved(u):
                y = u.copy()
                y[::2] = u[1::2] * u[::2]
                return y
            steps.append(interleaved)

    def program(x):
        u = x
        for step in steps:
            u = step(u)
        return u
    return program


def _explicit_patterns(monkeypatch, f, g, x):
    """f's Jacobian and g's Hessian patterns with every Var's sets made explicit."""
    with monkeypatch.context() as patch:
        patch.setattr(_index_bands, "MOST", 0)
        return (cyad.jacobian_sparsity(f, x).toarray(), cyad.hessian_sparsity(g, x).toarray())


@pytest.mark.parametrize("seed", range(40))
def test_bands_equal_explicit_rows(seed, monkeypatch):
    """Detection with bands gives the patterns of the same propagation on explicit rows
    (exactly), and they hold the dense derivatives."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([4, 6, 8, 10, 12]))
    program = _band_program(rng, n)

    def energy(x):
        return np.sum(program(x) ** 2)
    x = rng.uniform(-1.2, 1.2, n)
    jacobian = _check_pattern(cyad.jacobian_sparsity(program, x), (n, n))
    hessian = _check_pattern(cyad.hessian_sparsity(energy, x), (n, n))
    explicit = _explicit_patterns(monkeypatch, program, energy, x)
    np.testing.assert_array_equal(jacobian, explicit[0])
    np.testing.assert_array_equal(hessian, explicit[1])
    with np.errstate(all="ignore"):
        _assert_contains(jacobian, _dense_jacobian(program, x))
        _assert_contains(hessian, _dense_hessian(energy, x))


def broyden_updated(x):
    # the Broyden function as asv_bench/benchmarks/sparsity.py writes it: slices updated
    y = (3.0 - 2.0 * x) * x + 1.0
    y[1:] -= x[:-1]
    y[:-1] -= 2.0 * x[1:]
    return y


def broyden_written(x):
    y = np.zeros_like(x)
    y[1:-1] = (3 - 2 * x[1:-1]) * x[1:-1] - x[:-2] - 2 * x[2:] + 1
    y[0] = (3 - 2 * x[0]) * x[0] - 2 * x[1] + 1
    y[-1] = (3 - 2 * x[-1]) * x[-1] - x[-2] + 1
    return y


@pytest.mark.parametrize("f", [broyden_updated, broyden_written])
@pytest.mark.parametrize("n", [3, 4, 1000])
def test_broyden_forms_are_tridiagonal(f, n, monkeypatch):
    x = np.linspace(-1.0, 1.5, n)
    pattern = _check_pattern(cyad.jacobian_sparsity(f, x), (n, n))
    np.testing.assert_array_equal(pattern, _band(n, (-1, 0, 1)))
    hessian = _check_pattern(cyad.hessian_sparsity(lambda x: np.sum(f(x) ** 2), x), (n, n))
    np.testing.assert_array_equal(hessian, _band(n, (-2, -1, 0, 1, 2)))
    # (the rosenbrock function, banded the whole way)
    rosenbrock_pattern = _check_pattern(cyad.hessian_sparsity(rosenbrock, x), (n, n))
    np.testing.assert_array_equal(rosenbrock_pattern, _band(n, (-1, 0, 1)))


def _runs_reference(source):
    """affine_runs' greedy runs, in Python."""
    runs, i = [], 0
    while i < len(source):
        if source[i] < 0:
            i += 1
            continue
        p, a = i, source[i]
        t = source[i + 1] - a if i + 1 < len(source) and source[i + 1] >= 0 else 0
        i += 1
        while i < len(source) and source[i] >= 0 and source[i] == a + t * (i - p):
            i += 1
        runs.append((p, i, a, t))
    return runs


def _random_bands(rng, count, n):
    bands = []
    for _ in range(rng.integers(0, 5)):
        stride = int(rng.choice([0, 1, -1, 2, -2]))
        lo, hi = sorted(rng.integers(0, count + 1, 2).tolist())
        # rows whose column stride * i + offset lies in [0, n) for every i in [lo, hi)
        ends = [stride * lo, stride * max(hi - 1, lo)]
        low, high = -min(ends), n - 1 - max(ends)
        if low <= high:
            bands.append((lo, hi, stride, int(rng.integers(low, high + 1))))
    return Bands(count, tuple(bands))


def _band_lists(bands):
    return [sorted({s * i + o for lo, hi, s, o in bands.bands if lo <= i < hi})
            for i in range(bands.count)]


@pytest.mark.parametrize("seed", range(20))
def test_band_kernels(seed):
    """affine_runs, band_rows, gather, union and pair_bands against Python sets and the
    explicit kernels."""
    rng = np.random.default_rng(seed)
    n, count = 15, 12
    # an index map of a few affine runs and holes
    pieces = []
    for _ in range(rng.integers(1, 5)):
        length, t = int(rng.integers(1, 6)), int(rng.choice([0, 1, -1, 2, -3]))
        a = int(rng.integers(0, count))
        pieces.append(np.clip(a + t * np.arange(length), -1, count - 1))
        pieces.append(np.full(int(rng.integers(0, 3)), -1))
    source = np.concatenate(pieces).astype(np.int64)
    runs = affine_runs(source, 100)
    assert runs == _runs_reference(source.tolist())
    rebuilt = np.full(source.size, -1, np.int64)
    for p, q, a, t in runs:
        rebuilt[p:q] = a + t * np.arange(q - p)
    np.testing.assert_array_equal(rebuilt, source)
    assert affine_runs(source, len(runs) - 1) is None if runs else affine_runs(source, 0) == []

    a, b = _random_bands(rng, count, n), _random_bands(rng, count, n)
    assert _as_lists(*a.rows()) == _band_lists(a)
    # bands of one stride (written band by band), on distinct diagonals or not
    offsets = rng.choice(np.arange(-3, 4), int(rng.integers(1, 5)), replace=bool(seed % 2))
    ends = [sorted(rng.integers(0, count + 1, 2).tolist()) for _ in offsets]
    one_stride = Bands(count, tuple((lo, hi, 1, int(o)) for (lo, hi), o in zip(ends, offsets)
                                    if all(0 <= i + o < n for i in range(lo, hi))))
    assert _as_lists(*one_stride.rows()) == _band_lists(one_stride)
    lo, hi, stride, offset = (np.array(c, np.int64).reshape(-1) for c in zip(*a.bands)) \
        if a.bands else [np.zeros(0, np.int64)] * 4
    assert _as_lists(*band_rows(count, lo, hi, stride, offset)) == _band_lists(a)
    gathered = _index_bands.gather(a, runs, source.size)
    assert _as_lists(*gathered.rows()) == _as_lists(*gather_rows(*a.rows(), source))
    assert _as_lists(*_index_bands.union(a, b).rows()) == _as_lists(
        *union_rows(*a.rows(), *b.rows()))
    mask = np.zeros(n, bool)
    a.mark(mask)
    assert np.flatnonzero(mask).tolist() == sorted(set(a.rows()[1].tolist()))
    for left, right, square in ((a, b, False), (a, a, True)):
        pairs = _index_bands.pair_bands(left, right, square)
        expected = symmetric_pattern(*row_pairs(*left.rows(), *right.rows(), square), n)
        if pairs is None:       # a stride not +-1
            assert any(s not in (1, -1) for *_, s, _ in left.bands + right.bands)
            continue
        coordinates = [_index_bands.coordinates(band) for band in pairs]
        first = np.concatenate([np.zeros(0, np.int64)] + [u for u, _ in coordinates])
        second = np.concatenate([np.zeros(0, np.int64)] + [v for _, v in coordinates])
        assert _as_lists(*symmetric_pattern(first, second, n)) == _as_lists(*expected)
