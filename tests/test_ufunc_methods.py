"""The ufuncs' methods (reduce, accumulate, outer, at) on every engine, where the scenarios
of tests/test_primitives.py do not reach: ufunc.at in place (repeated indices, an operand
aliasing the array written, views), out=, the left folds of the ufuncs that do not reorder,
and the refusals. References: NumPy's values, JAX's derivatives (where JAX has the method)
or the ufuncs written out.
"""
import numpy as np
import pytest
from derivative_references import assert_matches, references
from scenarios import ENGINES

import cyad

X = np.random.default_rng(31).standard_normal(8)
INDEX = np.array([1, 3, 1, 0, 3, 3])


def _at_program(xp, x):
    # a[INDEX] += a[:6] read before the writes (NumPy copies an overlapping operand)
    if xp is np:
        a = x * 1.0
        np.add.at(a, INDEX, a[:6])
        np.multiply.at(a, [2, 5, 2], a[[0, 1, 2]])
        return a
    a = x * 1.0
    a = a.at[INDEX].add(a[:6])
    b = a[np.array([0, 1, 2])]
    for i, j in zip([2, 5, 2], range(3)):
        a = a.at[i].multiply(b[j])
    return a


def _fold_program(xp, x):
    # np.power and np.arctan2 do not reorder: NumPy folds them from the left (np.hypot too,
    # from the first element as it is, negative or not)
    a = x.reshape(2, 4) * 0.5 + 1.5
    if xp is np:
        return np.concatenate([np.power.reduce(a, axis=1), np.arctan2.accumulate(a, axis=1)
                               .ravel(), np.hypot.accumulate(x)])
    power = ((a[:, 0] ** a[:, 1]) ** a[:, 2]) ** a[:, 3]
    steps = [a[:, 0]]
    for i in range(1, 4):
        steps.append(xp.arctan2(steps[-1], a[:, i]))
    hypot = [x[0]]
    for i in range(1, 8):
        hypot.append(xp.hypot(hypot[-1], x[i]))
    return xp.concatenate([power, xp.stack(steps, axis=1).ravel(), xp.stack(hypot)])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("program", [_at_program, _fold_program], ids=["at-aliased", "fold"])
def test_against_jax_at_first_and_second_order(program, dtype, engine):
    (ref,) = references([(lambda xp, x: [program(xp, x)], X)])[0]
    tolerance = dict(rtol=1e-9, atol=1e-10) if dtype == np.float64 else dict(rtol=2e-3,
                                                                              atol=2e-3)
    x = X.astype(dtype)
    value, jac = cyad.value_and_jacobian(lambda x: program(np, x), x, engine=engine)
    assert_matches(value, ref.value, what="value", **tolerance)
    assert_matches(jac, ref.first, what="jacobian", **tolerance)
    w = np.cos(np.arange(ref.value.size))
    hessian = cyad.hessian(lambda x: np.sum(program(np, x) * w), x, engine=engine)
    assert_matches(hessian, np.tensordot(w, ref.second, 1), what="hessian", **tolerance)


def test_at_gives_numpys_values():
    a, expected = X * 1.0, X * 1.0
    np.add.at(expected, INDEX, expected[:6])
    np.multiply.at(expected, [2, 5, 2], expected[[0, 1, 2]])
    for engine in ENGINES:
        value = cyad.value_and_jacobian(lambda x: _at_program(np, x), a, engine=engine)[0]
        np.testing.assert_array_equal(value, expected)


@pytest.mark.parametrize("engine", ENGINES)
def test_at_writes_through_a_view(engine):
    def f(x):
        y = x * 1.0
        np.add.at(y[2:], [0, 0, 3], x[:3] ** 2)   # into y, as in NumPy
        return y

    x = X[:6]
    expected = x.copy()
    np.add.at(expected[2:], [0, 0, 3], x[:3] ** 2)
    value, jac = cyad.value_and_jacobian(f, x, engine=engine)
    np.testing.assert_array_equal(value, expected)
    reference = np.eye(6)
    reference[2, :2] = 2 * x[:2]
    reference[5, 2] = 2 * x[2]
    np.testing.assert_allclose(jac, reference, rtol=1e-15)


@pytest.mark.parametrize("engine", ENGINES)
def test_reduce_and_accumulate_into_out(engine):
    def f(x):
        out = np.zeros_like(x[:4])
        np.add.reduce(x.reshape(2, 4) ** 2, axis=0, out=out)
        np.maximum.accumulate(x[4:] * out, out=out)
        return out

    x = X
    jac = cyad.jacobian(f, x, engine=engine)
    expected = np.maximum.accumulate(x[4:] * (x[:4] ** 2 + x[4:] ** 2))
    np.testing.assert_allclose(cyad.value_and_jacobian(f, x, engine=engine)[0], expected,
                               rtol=1e-14)
    assert jac.shape == (4, 8) and np.all(np.isfinite(jac))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("call, error, match", [
    (lambda x: np.add.reduceat(x, [0, 2]), TypeError, r"numpy\.add\.reduceat is not supported"),
    (lambda x: np.power.reduce(x, axis=None), ValueError, "along one axis"),
    (lambda x: np.add.accumulate(x, dtype=np.float32), TypeError, "with a dtype"),
    (lambda x: np.hypot.reduce(x, initial=1.0), TypeError, "initial= or where="),
    (lambda x: np.add.at(np.zeros(3), [0, 1], x[:2]), TypeError, "into a plain ndarray"),
    (lambda x: np.add.at(x * 1.0, x[:2], 1.0), TypeError, "not differentiated arrays"),
    (lambda x: np.nextafter.accumulate(x), TypeError, r"numpy\.nextafter"),
], ids=["reduceat", "fold-all-axes", "dtype", "fold-initial", "at-plain", "at-float-index",
        "no-rule"])
def test_what_is_refused_says_why(call, error, match, engine):
    with pytest.raises(error, match=match):
        cyad.jacobian(call, X[:4], engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_at_with_a_mask_read_off_the_values(engine):
    def f(x):
        y = x * 1.0
        np.add.at(y, (x > 0,), x[0] ** 2)
        return y

    for x in (X[:4], -X[:4]):   # a tape records f anew where the mask changes
        value, jac = cyad.value_and_jacobian(f, x, engine=engine)
        mask = x > 0
        np.testing.assert_allclose(value, x + np.where(mask, x[0] ** 2, 0.0), rtol=1e-15)
        expected = np.eye(4)
        expected[:, 0] += np.where(mask, 2 * x[0], 0.0)
        np.testing.assert_allclose(jac, expected, rtol=1e-15)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("ufunc, sign", [(np.maximum, 1.0), (np.minimum, -1.0)],
                         ids=["maximum", "minimum"])
@pytest.mark.parametrize("x", [[1.0, 1.0, 1.0, 1.0], [2.0, 1.0, 2.0, 0.5, 2.0, 3.0, 3.0],
                               [0.5, -1.0, 0.5, np.inf, 2.0, np.inf]],
                         ids=["equal", "ties", "infinite"])
def test_running_extremes_at_ties_take_the_fold_of_the_rule(x, ufunc, sign, engine):
    # r_i = maximum(r_{i-1}, x_i) in turn, half to each side of a tie (JAX's too): the
    # weight of x_j in r_i is (1 - s_j) times the s_k after it, s_k = 1, 1/2 or 0 as r_{k-1}
    # is beyond, equal to or short of x_k
    y = sign * np.array(x)
    running = ufunc.accumulate(y)
    before = np.r_[-sign * np.inf, running[:-1]]
    beyond = before > y if sign > 0 else before < y
    s = np.where(before == y, 0.5, np.where(beyond, 1.0, 0.0))
    expected = np.array([[(1.0 - s[j]) * np.prod(s[j + 1:i + 1]) if j <= i else 0.0
                          for j in range(len(y))] for i in range(len(y))])
    value, jac = cyad.value_and_jacobian(lambda y: ufunc.accumulate(y * 1.0), y,
                                         engine=engine)
    np.testing.assert_array_equal(value, running)
    np.testing.assert_array_equal(jac, expected)
