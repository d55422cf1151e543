"""f(x, *args): several arguments, argnums=, has_aux=, containers of arrays, against JAX.

Random structures (nested dicts, tuples, lists and namedtuples of arrays, 0-d arrays and
Python floats) and functions coupling all their leaves, differentiated at first and second
order in the structures JAX gives (jax.grad, jax.jacfwd, jax.hessian, jax.jvp, jax.vjp);
then preps that take new values of the other arguments without recording f anew, static
arguments, out=, nesting and the refusals.
"""
from collections import namedtuple

import numpy as np
import pytest
from derivative_references import jax, seeded

import cyad

pytestmark = [pytest.mark.xdist_group("test_arguments"),
              pytest.mark.skipif(jax is None, reason="JAX's pytrees are the reference")]

if jax is not None:
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree
else:
    jnp = ravel_pytree = None

ENGINES = ["dual", "tape"]
Pair = namedtuple("Pair", "first second")
TOLERANCE = dict(rtol=1e-10, atol=1e-11)


def _close(actual, expected, **tolerance):
    actual_leaves, actual_spec = jax.tree_util.tree_flatten(actual)
    expected_leaves, expected_spec = jax.tree_util.tree_flatten(expected)
    assert actual_spec == expected_spec, (actual_spec, expected_spec)
    for a, e in zip(actual_leaves, expected_leaves):
        assert np.shape(a) == np.shape(e)
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), **(tolerance or TOLERANCE))


def random_tree(rng, depth=2):
    """A random container of float64 arrays, 0-d arrays and Python floats."""
    kind = rng.integers(0, 4) if depth > 0 else 4
    if kind == 4 or (depth < 2 and rng.random() < 0.3):
        shape = [(), (3,), (2, 3), (4,)][rng.integers(0, 4)]
        leaf = rng.uniform(-1.0, 1.0, shape)
        return float(leaf) if shape == () and rng.random() < 0.5 else leaf
    count = int(rng.integers(1, 4))
    items = [random_tree(rng, depth - 1) for _ in range(count)]
    if kind == 0:
        return {f"k{i}": item for i, item in enumerate(items)}
    if kind == 1:
        return tuple(items)
    if kind == 2:
        return list(items)
    return Pair(items[0], items[-1])


def coupled(xp, tree, other):
    """A scalar of every leaf of `tree`, coupled across leaves, scaled by `other`'s."""
    leaves = jax.tree_util.tree_leaves(tree)
    weights = jax.tree_util.tree_leaves(other)
    s = 0.0
    q = 0.0
    for k, leaf in enumerate(leaves):
        w = weights[k % len(weights)]
        s = s + xp.sum(xp.sin(leaf)) * xp.sum(w)
        q = q + xp.sum(leaf ** 2 * (k + 1)) + xp.sum(xp.cos(w) * xp.sum(leaf))
    return s * q + xp.exp(s / 10.0)


def vector_valued(xp, tree, other):
    """A container of arrays of every leaf of `tree` and `other`."""
    leaves = jax.tree_util.tree_leaves(tree)
    weights = jax.tree_util.tree_leaves(other)
    total = sum(xp.sum(xp.tanh(leaf)) for leaf in leaves)
    return {"a": xp.stack([total * xp.sum(weights[0]), xp.sum(leaves[0] ** 3)]),
            "b": (xp.sin(leaves[-1]) * total, total ** 2)}


def _jax_tree(tree):
    return jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64), tree)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", range(6))
def test_random_structures_at_first_and_second_order(engine, seed):
    rng = seeded(f"test_arguments {seed}")
    x, other = random_tree(rng), random_tree(rng)
    scale = float(rng.uniform(0.5, 1.5))

    def f(x, other, scale):
        return coupled(np, x, other) * scale

    def fj(x, other, scale):
        return coupled(jnp, x, other) * scale

    xj, otherj = _jax_tree(x), _jax_tree(other)
    for argnums in [0, 1, (0, 1), (1, 0, 2)]:
        g = cyad.gradient(f, x, other, scale, argnums=argnums, engine=engine)
        _close(g, jax.grad(fj, argnums)(xj, otherj, scale))
        value, g = cyad.value_and_gradient(f, x, other, scale, argnums=argnums, engine=engine)
        _close(value, fj(xj, otherj, scale))
    _close(cyad.hessian(f, x, other, scale, engine=engine), jax.hessian(fj)(xj, otherj, scale),
           rtol=1e-9, atol=1e-10)
    _close(cyad.hessian(f, x, other, scale, argnums=(0, 1), engine=engine),
           jax.hessian(fj, (0, 1))(xj, otherj, scale), rtol=1e-9, atol=1e-10)
    v = random_tree_like(rng, x)
    expected = jax.jvp(jax.grad(fj), (xj, otherj, scale), (_jax_tree(v), _zeros(otherj), 0.0))[1]
    _close(cyad.hvp(f, x, v, other, scale, engine=engine), expected, rtol=1e-9, atol=1e-10)


def random_tree_like(rng, tree):
    return jax.tree_util.tree_map(lambda a: rng.uniform(-1.0, 1.0, np.shape(a)), tree)


def _zeros(tree):
    return jax.tree_util.tree_map(jnp.zeros_like, tree)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", range(4))
def test_container_values(engine, seed):
    rng = seeded(f"test_arguments values {seed}")
    x, other = random_tree(rng), random_tree(rng)

    def f(x, other):
        return vector_valued(np, x, other)

    def fj(x, other):
        return vector_valued(jnp, x, other)

    xj, otherj = _jax_tree(x), _jax_tree(other)
    _close(cyad.jacobian(f, x, other, engine=engine), jax.jacfwd(fj)(xj, otherj))
    _close(cyad.jacobian(f, x, other, argnums=1, engine=engine),
           jax.jacfwd(fj, 1)(xj, otherj))
    flat = cyad.jacobian(f, x, other, flat=True, engine=engine)
    columns = ravel_pytree(xj)[0].size
    rows = ravel_pytree(fj(xj, otherj))[0].size
    assert flat.shape == (rows, columns)
    dx = random_tree_like(rng, x)
    value, tangent = jax.jvp(lambda x: fj(x, otherj), (xj,), (_jax_tree(dx),))
    _close(cyad.pushforward(f, x, dx, other, engine=engine), tangent)
    _close(cyad.value_and_pushforward(f, x, dx, other, engine=engine), (value, tangent))
    dy = random_tree_like(rng, value)
    _close(cyad.pullback(f, x, dy, other, engine=engine),
           jax.vjp(lambda x: fj(x, otherj), xj)[1](_jax_tree(dy))[0])


@pytest.mark.parametrize("engine", ENGINES)
def test_has_aux(engine):
    x = {"a": np.array([0.3, -0.2, 0.9]), "b": 1.5}

    def f(x, c):
        value = np.sum(np.sin(x["a"]) * x["b"]) * c
        return value, {"mean": np.mean(x["a"]), "label": "f", "value": value}

    def fj(x, c):
        value = jnp.sum(jnp.sin(x["a"]) * x["b"]) * c
        return value, {"mean": jnp.mean(x["a"]), "label": "f", "value": value}

    g, aux = cyad.gradient(f, x, 2.0, has_aux=True, engine=engine)
    gj, auxj = jax.grad(fj, has_aux=True)(_jax_tree(x), 2.0)
    _close(g, gj)
    assert aux["label"] == "f" and isinstance(aux["mean"], (float, np.floating, np.ndarray))
    np.testing.assert_allclose(aux["mean"], auxj["mean"])
    (value, aux), g = cyad.value_and_gradient(f, x, 2.0, has_aux=True, engine=engine)
    np.testing.assert_allclose(value, fj(_jax_tree(x), 2.0)[0])
    assert isinstance(aux["value"], (float, np.floating, np.ndarray))
    J, aux = cyad.jacobian(lambda x: (np.sin(x), np.sum(x)), np.arange(3.0), has_aux=True,
                           engine=engine)
    np.testing.assert_allclose(J, np.diag(np.cos(np.arange(3.0))))
    assert aux == 3.0
    with pytest.raises(TypeError, match="pair"):
        cyad.gradient(lambda x: np.sum(x), np.ones(2), has_aux=True, engine=engine)


def test_a_prep_takes_new_arguments_without_recording_anew():
    rng = seeded("test_arguments batches")
    params = {"W": rng.standard_normal((4, 3)), "b": rng.standard_normal(3)}

    def loss(p, X, Y, lr):
        return np.sum((np.tanh(X @ p["W"] + p["b"]) - Y) ** 2) * lr

    def lossj(p, X, Y, lr):
        return jnp.sum((jnp.tanh(X @ p["W"] + p["b"]) - Y) ** 2) * lr

    X, Y = rng.standard_normal((5, 4)), rng.standard_normal((5, 3))
    prep = cyad.prepare_gradient(loss, params, X, Y, 0.1, engine="tape")
    out = {"W": np.empty((4, 3)), "b": np.empty(3)}
    for step in range(100):
        X, Y = rng.standard_normal((5, 4)), rng.standard_normal((5, 3))
        lr = 0.1 + step / 100
        assert cyad.gradient(loss, params, X, Y, lr, prep=prep, out=out) is out
        if step % 25 == 0:
            _close(out, jax.grad(lossj)(_jax_tree(params), X, Y, lr))
        params = {k: v - 0.01 * out[k] for k, v in params.items()}
    assert prep.records == 1 and prep.preparations == 1
    _close(cyad.gradient(loss, params, X, Y, lr, prep=prep),
           jax.grad(lossj)(_jax_tree(params), X, Y, lr))


@pytest.mark.parametrize("engine", [None, "dual", "tape"])
def test_a_static_argument_that_changes_prepares_anew(engine):
    def f(x, power, scale):
        return np.sum(x ** power * scale)

    x = np.array([0.5, 1.5])
    prep = cyad.prepare_gradient(f, x, 2, 1.0, engine=engine)
    np.testing.assert_allclose(cyad.gradient(f, x, 2, 3.0, prep=prep), 6.0 * x)
    np.testing.assert_allclose(cyad.gradient(f, x, 3, 1.0, prep=prep), 3.0 * x ** 2)
    assert prep.preparations == 2
    np.testing.assert_allclose(cyad.gradient(f, x, 3, np.full(2, 2.0), prep=prep),
                               6.0 * x ** 2)     # another shape of an input: anew too
    assert prep.preparations == 3


def test_structures_are_checked():
    x = {"a": np.ones(2), "b": np.ones(3)}
    prep = cyad.prepare_gradient(lambda x, c: np.sum(x["a"]) * np.sum(x["b"]) * c, x, 1.0)
    f = prep.f
    with pytest.raises(ValueError, match="structure"):
        cyad.gradient(f, {"a": np.ones(2)}, 1.0, prep=prep)
    with pytest.raises(ValueError, match=r"leaf 1 of x has shape \(4,\)"):
        cyad.gradient(f, {"a": np.ones(2), "b": np.ones(4)}, 1.0, prep=prep)
    with pytest.raises(ValueError, match="out="):
        cyad.gradient(f, x, 1.0, prep=prep, out={"a": np.ones(2)})
    with pytest.raises(ValueError, match="argnums"):
        cyad.gradient(f, x, 1.0, argnums=1, prep=prep)
    with pytest.raises(ValueError, match="argnums=2 names argument 2"):
        cyad.gradient(f, x, 1.0, argnums=2)
    with pytest.raises(TypeError, match="argnums= takes"):
        cyad.gradient(f, x, 1.0, argnums=[0])
    with pytest.raises(ValueError, match="twice"):
        cyad.gradient(f, x, 1.0, argnums=(0, -2))
    with pytest.raises(ValueError, match="one array x"):
        cyad.gradient(f, x, 1.0, prep=cyad.prepare_gradient(np.sum, np.ones(2)))
    with pytest.raises(TypeError, match="holomorphic"):
        cyad.gradient(f, x, 1.0, holomorphic=True)


@pytest.mark.parametrize("engine", ENGINES)
def test_out_takes_the_results_structure(engine):
    x = (np.array([0.1, 0.2]), {"c": np.array(0.7)})

    def f(x):
        return np.sum(np.exp(x[0])) * x[1]["c"] ** 2

    out = (np.empty(2), {"c": np.empty(())})
    prep = cyad.prepare_gradient(f, x, engine=engine)
    assert cyad.gradient(f, x, prep=prep, out=out) is out
    _close(out, jax.grad(lambda x: jnp.sum(jnp.exp(x[0])) * x[1]["c"] ** 2)(_jax_tree(x)))
    H = cyad.hessian(f, x, engine=engine)
    Hj = jax.hessian(lambda x: jnp.sum(jnp.exp(x[0])) * x[1]["c"] ** 2)(_jax_tree(x))
    _close(H, Hj)
    pair = (np.empty(()), (np.empty(2), {"c": np.empty(())}))
    assert cyad.value_and_gradient(f, x, engine=engine, out=pair) is pair
    np.testing.assert_allclose(pair[0], f(x))


@pytest.mark.parametrize("engine", ENGINES)
def test_nested_with_arguments(engine):
    # the gradient of a function that takes a gradient with other arguments: third-party
    # arrays of the outer differentiation reach the inner one as arguments
    def inner(w, x, c):
        return np.sum(np.sin(w * x)) * c

    def outer(x):
        g = cyad.gradient(inner, np.array([0.3, 0.4]), x, 2.0, engine=engine)
        return np.sum(g ** 2)

    def outerj(x):
        g = jax.grad(lambda w, x, c: jnp.sum(jnp.sin(w * x)) * c)(jnp.array([0.3, 0.4]), x, 2.0)
        return jnp.sum(g ** 2)

    x = np.array([0.5, -0.7])
    np.testing.assert_allclose(cyad.gradient(outer, x, engine=engine),
                               jax.grad(outerj)(x), **TOLERANCE)


@pytest.mark.parametrize("engine", ENGINES)
def test_float32_leaves(engine):
    x = {"a": np.array([0.5, 0.25], np.float32), "b": np.float32(2.0)}
    g = cyad.gradient(lambda x, c: np.sum(x["a"] ** 2) * x["b"] * c, x,
                      np.float32(3.0), engine=engine)
    assert g["a"].dtype == np.float32
    np.testing.assert_allclose(g["a"], [6.0, 3.0], rtol=1e-6)
    np.testing.assert_allclose(g["b"], 0.3125 * 3.0, rtol=1e-6)
    # prepared, into out=, with a Python float argument of each call (the compiled path)
    prep = cyad.prepare_gradient(lambda x, c: np.sum(x["a"] ** 2) * x["b"] * c, x, 1.0,
                                 engine=engine)
    out = {"a": np.empty(2, np.float32), "b": np.empty((), np.float32)}
    for c in [0.5, 4.0]:
        cyad.gradient(prep.f, x, c, prep=prep, out=out)
        np.testing.assert_allclose(out["a"], np.array([1.0, 0.5]) * 2 * c, rtol=1e-6)
        np.testing.assert_allclose(out["b"], 0.3125 * c, rtol=1e-6)
    assert prep.preparations == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_scalar_arguments_of_derivative_and_second_derivative(engine):
    def f(t, k):
        return np.stack([np.sin(k * t), t * np.sin(k * t)])

    np.testing.assert_allclose(cyad.derivative(f, 0.3, 2.0, engine=engine),
                               [2 * np.cos(0.6), np.sin(0.6) + 0.6 * np.cos(0.6)])
    np.testing.assert_allclose(cyad.derivative(f, 0.3, 2.0, argnums=1, engine=engine),
                               [0.3 * np.cos(0.6), 0.09 * np.cos(0.6)])
    np.testing.assert_allclose(cyad.second_derivative(f, 0.3, 2.0, engine=engine)[0],
                               -4 * np.sin(0.6))


@pytest.mark.parametrize("engine", ENGINES)
def test_two_argument_form(engine):
    def f(y, x, c):
        y[:] = np.sin(x) * c

    x, dx = np.array([0.2, 0.5]), np.array([1.0, -1.0])
    np.testing.assert_allclose(cyad.pushforward(f, x, dx, 3.0, y=np.zeros(2), engine=engine),
                               3.0 * np.cos(x) * dx)
    prep = cyad.prepare_jacobian(f, x, 3.0, y=np.zeros(2), engine=engine)
    np.testing.assert_allclose(cyad.jacobian(f, x, 0.5, y=np.zeros(2), prep=prep),
                               np.diag(0.5 * np.cos(x)))


@cyad.custom_derivative
def _scaled_cube(a, s):
    return s * a ** 3


@_scaled_cube.defjvp
def _scaled_cube_jvp(primals, tangents):
    (a, s), (ta, ts) = primals, tangents
    return s * a ** 3, 3 * s * a ** 2 * ta + a ** 3 * ts


@_scaled_cube.defvjp
def _scaled_cube_vjp(primals, cotangent):
    a, s = primals
    return 3 * s * a ** 2 * cotangent, np.sum(a ** 3 * cotangent)


@pytest.mark.parametrize("engine", ENGINES)
def test_custom_rules_see_the_arguments(engine):
    # a function with rules of its own, called on x and on an argument of each call
    def f(x, s):
        return np.sum(_scaled_cube(x["a"], s) * x["b"])

    x = {"a": np.array([0.5, -1.0, 2.0]), "b": np.array([1.0, 2.0, 3.0])}
    prep = cyad.prepare_hessian(f, x, 1.0, engine=engine)
    for s in [1.0, 2.5, -0.5]:
        H = cyad.hessian(f, x, s, prep=prep)
        Hj = jax.hessian(lambda x, s: jnp.sum(s * x["a"] ** 3 * x["b"]))(_jax_tree(x), s)
        _close(H, Hj)
        g = cyad.gradient(f, x, s, argnums=1, engine=engine)
        np.testing.assert_allclose(g, np.sum(x["a"] ** 3 * x["b"]))
    assert prep.records <= 1


def test_preps_on_threads_each_with_their_arguments():
    # one prep per thread, each fed its own batches: no call reads another's arguments
    from concurrent.futures import ThreadPoolExecutor

    def loss(w, X, y):
        return np.sum((np.tanh(X @ w["v"]) - y) ** 2)

    rng = seeded("test_arguments threads")
    w = {"v": rng.standard_normal(4)}
    batches = [(rng.standard_normal((6, 4)), rng.standard_normal(6)) for _ in range(40)]
    expected = [jax.grad(lambda w, X, y: jnp.sum((jnp.tanh(X @ w["v"]) - y) ** 2))(
        _jax_tree(w), X, y) for X, y in batches]

    def work(part):
        prep = cyad.prepare_gradient(loss, w, *batches[0], engine="tape")
        results = {k: cyad.gradient(loss, w, *batches[k], prep=prep)
                   for k in range(part, len(batches), 4)}
        return results, prep.records

    with ThreadPoolExecutor(4) as pool:
        for results, records in pool.map(work, range(4)):
            assert records == 1
            for k, g in results.items():
                _close(g, expected[k])
    # a prep whose calls run in parts on two threads (a Jacobian's chunks of directions)
    def residual(w, X, y):
        return np.tanh(X @ w["v"]) - y

    shared = cyad.prepare_jacobian(residual, w, *batches[0], engine="tape", chunk=1, workers=2)
    X, y = batches[3]
    _close(cyad.jacobian(residual, w, X, y, prep=shared),
           jax.jacfwd(lambda w: jnp.tanh(X @ w["v"]) - y)(_jax_tree(w)))


def test_the_default_tape_watches_f_but_not_its_arguments():
    settings = {"scale": 1.0}

    def f(x, X):
        return np.sum(np.tanh(X @ x)) * settings["scale"]

    def expected(x, X):
        return settings["scale"] * X.T @ (1 - np.tanh(X @ x) ** 2)

    rng = seeded("test_arguments default tape")
    x, X = rng.standard_normal(3), rng.standard_normal((5, 3))
    prep = cyad.prepare_gradient(f, x, X)     # the default of a prepared gradient: a tape
    for _ in range(5):
        X = rng.standard_normal((5, 3))
        np.testing.assert_allclose(cyad.gradient(f, x, X, prep=prep), expected(x, X),
                                   **TOLERANCE)
    X[...] = rng.standard_normal((5, 3))      # an argument changed in place: read anew
    np.testing.assert_allclose(cyad.gradient(f, x, X, prep=prep), expected(x, X), **TOLERANCE)
    assert prep.records == 1
    settings["scale"] = 2.0                   # Python state f reads: recorded anew
    np.testing.assert_allclose(cyad.gradient(f, x, X, prep=prep), expected(x, X), **TOLERANCE)
    assert prep.records == 2


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", range(4))
def test_prepared_gradients_into_out(engine, seed):
    # the compiled path of a prepared gradient with out=, on random structures (None and
    # namedtuples among them), against JAX; and where it hands the call to the Python layer
    rng = seeded(f"test_arguments prepared {seed}")
    x, other = random_tree(rng), random_tree(rng)
    x = {"x": x, "nothing": None, "pair": Pair(rng.uniform(-1, 1, 2), rng.uniform(-1, 1))}

    def f(x, other, scale):
        return coupled(np, x, other) * scale

    def fj(x, other, scale):
        return coupled(jnp, x, other) * scale

    prep = cyad.prepare_gradient(f, x, other, 2.0, engine=engine)
    out = jax.tree_util.tree_map(lambda a: np.empty(np.shape(a)), x)
    pair = (np.empty(()), jax.tree_util.tree_map(lambda a: np.empty(np.shape(a)), x))
    for step in range(3):
        x = jax.tree_util.tree_map(lambda a, step=step: np.asarray(a) + 0.1 * step, x)
        other = jax.tree_util.tree_map(lambda a, step=step: np.asarray(a) * (1.0 + step),
                                       other)
        assert cyad.gradient(f, x, other, 2.0, prep=prep, out=out) is out
        _close(out, jax.grad(fj)(_jax_tree(x), _jax_tree(other), 2.0))
        assert cyad.value_and_gradient(f, x, other, 2.0, prep=prep, out=pair) is pair
        _close(pair, (fj(_jax_tree(x), _jax_tree(other), 2.0),
                      jax.grad(fj)(_jax_tree(x), _jax_tree(other), 2.0)))
    assert prep.preparations == 1 and prep.records <= 1
    # a static argument of another value, and out= of another structure: the Python layer
    _close(cyad.gradient(f, x, other, 3, prep=prep, out=out),
           jax.grad(fj)(_jax_tree(x), _jax_tree(other), 3.0))
    assert prep.preparations == 2
    with pytest.raises(ValueError, match="out="):
        cyad.gradient(f, x, other, 3, prep=prep, out={"x": out["x"]})


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_outputs_that_are_the_inputs(engine, dtype):
    # out= whose leaves are x's own leaves or an argument's: read as they were at the start
    def f(x, w):
        return np.sum(np.sin(x["a"]) * w) + np.sum(x["b"] ** 2) * np.sum(w)

    def expected(x, w):
        return {"a": np.cos(x["a"]) * w, "b": 2 * x["b"] * np.sum(w)}

    tolerance = TOLERANCE if dtype == np.float64 else dict(rtol=1e-5, atol=1e-6)
    x = {"a": np.array([0.1, 0.2, 0.3], dtype), "b": np.array([1.0, -2.0], dtype)}
    w = np.array([0.5, 1.5, -1.0], dtype)
    prep = cyad.prepare_gradient(f, x, w, engine=engine)
    want = expected({k: v.copy() for k, v in x.items()}, w)
    assert cyad.gradient(f, x, w, prep=prep, out=x) is x          # (the compiled path)
    _close(x, want, **tolerance)
    x = {"a": np.array([0.1, 0.2, 0.3], dtype), "b": np.array([1.0, -2.0], dtype)}
    out = {"a": w, "b": np.empty(2, dtype)}                       # the argument itself
    want = expected(x, w.copy())
    assert cyad.gradient(f, x, w, prep=prep, out=out) is out
    _close(out, want, **tolerance)
    x = {"a": np.array([0.1, 0.2, 0.3], dtype), "b": np.array([1.0, -2.0], dtype)}
    v = {"a": np.ones(3, dtype), "b": np.zeros(2, dtype)}
    H = jax.hessian(lambda x, w: jnp.sum(jnp.sin(x["a"]) * w) + jnp.sum(x["b"] ** 2)
                    * jnp.sum(w))(_jax_tree(x), jnp.asarray(w, jnp.float64))
    want = {k: sum(np.asarray(H[k][j]) @ np.asarray(v[j], np.float64) for j in v) for k in v}
    hvp_prep = cyad.prepare_hvp(f, x, v, w, engine=engine)
    assert cyad.hvp(f, x, v, w, prep=hvp_prep, out=v) is v        # (the Python layer)
    _close(v, {k: np.asarray(a, dtype) for k, a in want.items()}, **tolerance)


@pytest.mark.parametrize("engine", ENGINES)
def test_nested_at_second_order_with_arguments(engine):
    # the Hessian of a function whose value is a gradient taken with a dict and arguments
    def inner(p, x, c):
        return np.sum(np.tanh(p["w"] * x) * p["s"]) * c

    def outer(x):
        g = cyad.gradient(inner, {"w": np.array([0.3, -0.4]), "s": 1.5}, x, 2.0,
                          engine=engine)
        return np.sum(g["w"] ** 2) + g["s"] ** 2

    def outerj(x):
        g = jax.grad(lambda p, x, c: jnp.sum(jnp.tanh(p["w"] * x) * p["s"]) * c)(
            {"w": jnp.array([0.3, -0.4]), "s": 1.5}, x, 2.0)
        return jnp.sum(g["w"] ** 2) + g["s"] ** 2

    x = np.array([0.5, -0.7])
    np.testing.assert_allclose(cyad.hessian(outer, x, engine=engine), jax.hessian(outerj)(x),
                               rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("engine", ENGINES)
def test_sparse_operators_take_arguments(engine):
    # a residual of a 1-D diffusion with a coefficient field k and a forcing q, new at every
    # call: one pattern, one coloring, the tapes recorded once
    def residual(u, k, q, h):
        flux = k[1:] * (u[1:] - u[:-1]) / h
        return np.concatenate([u[:1], flux[1:] - flux[:-1] + q[1:-1] * u[1:-1] ** 3, u[-1:]])

    def residualj(u, k, q, h):
        flux = k[1:] * (u[1:] - u[:-1]) / h
        return jnp.concatenate([u[:1], flux[1:] - flux[:-1] + q[1:-1] * u[1:-1] ** 3, u[-1:]])

    def energy(u, k, h):
        return np.sum(k[1:] * (u[1:] - u[:-1]) ** 2) / h + np.sum(u ** 4)

    def energyj(u, k, h):
        return jnp.sum(k[1:] * (u[1:] - u[:-1]) ** 2) / h + jnp.sum(u ** 4)

    rng = seeded("test_arguments sparse")
    n = 12
    u = rng.uniform(-1, 1, n)
    prep = cyad.prepare_sparse_jacobian(residual, u, np.ones(n), np.ones(n), 0.1, engine=engine)
    hprep = cyad.prepare_sparse_hessian(energy, u, np.ones(n), 0.1)
    out = prep.new_result()
    for _ in range(3):
        k, q = rng.uniform(0.5, 2.0, n), rng.uniform(-1, 1, n)
        assert cyad.sparse_jacobian(residual, u, k, q, 0.1, prep=prep, out=out) is out
        np.testing.assert_allclose(out.toarray(), jax.jacfwd(residualj)(u, k, q, 0.1),
                                   **TOLERANCE)
        value, J = cyad.value_and_sparse_jacobian(residual, u, k, q, 0.1, prep=prep)
        np.testing.assert_allclose(value, residual(u, k, q, 0.1), **TOLERANCE)
        H = cyad.sparse_hessian(energy, u, k, 0.1, prep=hprep)
        np.testing.assert_allclose(H.toarray(), jax.hessian(energyj)(u, k, 0.1), **TOLERANCE)
        value, g, H = cyad.value_gradient_and_sparse_hessian(energy, u, k, 0.1, prep=hprep)
        np.testing.assert_allclose(g, jax.grad(energyj)(u, k, 0.1), **TOLERANCE)
    assert prep.n_colors == 3
    np.testing.assert_allclose(cyad.sparse_jacobian(residual, u, k, q, 0.1).toarray(),
                               jax.jacfwd(residualj)(u, k, q, 0.1), **TOLERANCE)
    with pytest.raises(ValueError, match="static value"):
        cyad.sparse_jacobian(residual, u, k, q, 2, prep=prep)        # an int, not a float
    def square(u, *args):
        return u ** 2

    with pytest.raises(ValueError, match="prepare it with the arguments"):
        cyad.sparse_jacobian(square, u, k, prep=cyad.prepare_sparse_jacobian(square, u))


@pytest.mark.parametrize("engine", ENGINES)
def test_scratch_arguments(engine):
    # f writes into work arrays (a (2, n) array and a dict of one) and reads them back; the
    # same function without scratch is JAX's reference, at first and second order, with a
    # prep, and in the sparse operators
    def f(x, a, work):
        work["terms"][0] = np.sin(x) * a
        work["terms"][1] = x ** 3
        work["sum"][...] = work["terms"][0] + work["terms"][1]
        return work["sum"] * x[::-1]

    def fj(x, a):
        return (jnp.sin(x) * a + x ** 3) * x[::-1]

    def scalar(x, a, work):
        return np.sum(f(x, a, work) ** 2)

    def scalarj(x, a):
        return jnp.sum(fj(x, a) ** 2)

    n = 5
    rng = seeded("test_arguments cache")
    x, a = rng.uniform(-1, 1, n), rng.uniform(0.5, 2.0, n)
    work = {"terms": np.empty((2, n)), "sum": np.empty(n)}
    cache = cyad.Cache(work)
    _close(cyad.jacobian(f, x, a, cache, engine=engine), jax.jacfwd(fj)(x, a))
    _close(cyad.gradient(scalar, x, a, cache, engine=engine), jax.grad(scalarj)(x, a))
    _close(cyad.hessian(scalar, x, a, cache, engine=engine), jax.hessian(scalarj)(x, a))
    _close(cyad.gradient(lambda x: cyad.gradient(scalar, x, a, cache, engine=engine)[0], x,
                         engine=engine), jax.grad(lambda x: jax.grad(scalarj)(x, a)[0])(x))
    # a plain evaluation (has_aux's) writes into work itself
    value, aux = cyad.gradient(lambda x, w: (scalar(x, a, w), w["sum"].copy()), x, cache,
                               has_aux=True, engine=engine)
    _close(aux, (np.sin(x) * a + x ** 3))
    # a prep takes a Cache of the same shapes (another object) without preparing anew
    prep = cyad.prepare_hessian(scalar, x, a, cache, engine=engine)
    for _ in range(2):
        a = rng.uniform(0.5, 2.0, n)
        other = cyad.Cache({"terms": np.empty((2, n)), "sum": np.empty(n)})
        _close(cyad.hessian(scalar, x, a, other, prep=prep), jax.hessian(scalarj)(x, a))
    assert prep.preparations == 1
    assert cyad.Cache(np.empty(3)) != cyad.Cache(np.empty(4))
    sparse = cyad.prepare_sparse_jacobian(f, x, a, cache, engine=engine)
    _close(cyad.sparse_jacobian(f, x, a, cache, prep=sparse).toarray(), jax.jacfwd(fj)(x, a))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_recorded_function_takes_arguments(dtype):
    # cyad.record(f, x, args=...): the arguments' arrays and numbers are inputs of the tape;
    # set_arguments gives the C function new values without recording f anew (the dual
    # engine's operators call it), first and second order against JAX
    def f(x, p, n):
        return np.sin(x * p["a"]) * p["s"] + x ** n

    def fj(x, p):
        return jnp.sin(x * p["a"]) * p["s"] + x ** 2

    def scalar(x, p):
        return np.sum(f(x, p, 2) ** 2)

    def scalarj(x, p):
        return jnp.sum(fj(x, p) ** 2)

    rng = seeded("test_arguments record")
    x = rng.uniform(-1, 1, 4).astype(dtype)
    tolerance = TOLERANCE if dtype == np.float64 else dict(rtol=2e-4, atol=2e-5)
    params = {"a": rng.uniform(0.5, 2.0, 4), "s": 1.5}
    w = cyad.record(f, x, args=(params, 2))
    h = cyad.record(scalar, x, args=(params,))
    for k in range(3):
        params = {"a": rng.uniform(0.5, 2.0, 4), "s": float(k) - 0.5}
        w.tape.set_arguments(params, 2)
        h.tape.set_arguments(params)
        p64 = {"a": jnp.asarray(params["a"], jnp.float32 if dtype == np.float32 else None),
               "s": params["s"]}
        x64 = jnp.asarray(x)
        _close(cyad.jacobian(w, x, engine="dual"), jax.jacfwd(fj)(x64, p64), **tolerance)
        _close(cyad.hessian(h, x, engine="dual"), jax.hessian(scalarj)(x64, p64), **tolerance)
        # the tape engine's operators trace the recorded function's f of x, its arguments
        # those set
        _close(cyad.gradient(h, x, engine="tape"), jax.grad(scalarj)(x64, p64), **tolerance)
    assert (w.tape.records, h.tape.records) == (1, 1)
    with pytest.raises(ValueError, match="record the function anew"):
        w.tape.set_arguments(params, 3)
    with pytest.raises(ValueError, match="without arguments"):
        cyad.record(np.sin, x).tape.set_arguments(params)

    def in_place(y, x, a):
        y[...] = x ** 2 * a

    y = np.zeros(4, dtype)
    r = cyad.record(in_place, x, y, args=(params["a"],))
    _close(cyad.jacobian(r, x, y=y, engine="dual"), np.diag(2 * x * params["a"]), **tolerance)
    # its pattern, and nested in another differentiation, as its f of x with the arguments
    chain = cyad.record(lambda x, a: x[1:] * x[:-1] * a[1:], x, args=(params["a"],))
    np.testing.assert_array_equal(cyad.jacobian_sparsity(chain, x).toarray(),
                                  np.eye(3, 4, dtype=bool) | np.eye(3, 4, 1, dtype=bool))
    _close(cyad.gradient(lambda z: np.sum(cyad.jacobian(chain, z)), x),
           jax.grad(lambda z: jnp.sum(jax.jacfwd(lambda t: t[1:] * t[:-1] * params["a"][1:])(
               z)))(jnp.asarray(x)), **tolerance)
