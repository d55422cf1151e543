"""Prepared calls with out= make no heap allocation of their own."""
import numpy as np
import pytest

import cyad


def copy(y, x):
    y[...] = x


@pytest.mark.parametrize("n", [10, 100])
def test_pushforward_and_value_and_pushforward(n, allocations_per_call):
    x, dx, y = np.arange(n, dtype=float), np.ones(n), np.zeros(n)
    prep = cyad.prepare_pushforward(copy, x, dx, y=y)
    out = np.zeros(n)
    pair = (np.zeros(n), np.zeros(n))
    pushforward, value_and_pushforward = cyad.pushforward, cyad.value_and_pushforward

    assert allocations_per_call(lambda: pushforward(copy, x, dx, y=y, prep=prep, out=out)) == 0
    assert allocations_per_call(
        lambda: value_and_pushforward(copy, x, dx, y=y, prep=prep, out=pair)) == 0
    np.testing.assert_array_equal(out, dx)
    np.testing.assert_array_equal(pair[0], x)
    np.testing.assert_array_equal(pair[1], dx)


@pytest.mark.parametrize("n", [10, 100])
@pytest.mark.parametrize("chunk", [None, 3])
def test_jacobian(n, chunk, allocations_per_call):
    x, y = np.arange(n, dtype=float), np.zeros(n)
    prep = cyad.prepare_jacobian(copy, x, y=y, chunk=chunk)
    out = np.zeros((n, n))
    pair = (np.zeros(n), np.zeros((n, n)))
    jacobian, value_and_jacobian = cyad.jacobian, cyad.value_and_jacobian

    assert allocations_per_call(lambda: jacobian(copy, x, y=y, prep=prep, out=out)) == 0
    assert allocations_per_call(lambda: value_and_jacobian(copy, x, y=y, prep=prep, out=pair)) == 0
    np.testing.assert_array_equal(out, np.eye(n))


@pytest.mark.parametrize("n", [10, 100])
def test_gradient_of_a_function_that_allocates_nothing(n, allocations_per_call):
    x = np.arange(n, dtype=float)

    def constant(x):
        return 2.5

    prep = cyad.prepare_gradient(constant, x, chunk=4)
    out = np.ones(n)
    pair = (np.zeros(()), np.zeros(n))
    assert allocations_per_call(lambda: cyad.gradient(constant, x, prep=prep, out=out)) == 0
    assert allocations_per_call(
        lambda: cyad.value_and_gradient(constant, x, prep=prep, out=pair)) == 0
    np.testing.assert_array_equal(out, 0.0)
    assert pair[0] == 2.5


def test_derivative(allocations_per_call):
    y = np.zeros(())

    def f(y, x):
        y[...] = x

    prep = cyad.prepare_derivative(f, 0.5, y=y)
    out = np.zeros(())
    assert allocations_per_call(lambda: cyad.derivative(f, 0.5, y=y, prep=prep, out=out)) == 0
    assert out == 1.0


@pytest.mark.parametrize("operator", ["gradient", "jacobian"])
def test_cyad_adds_nothing_to_what_f_allocates(operator, allocations_per_call):
    # f's own operations allocate; a prepared call allocates exactly that, per evaluation
    n = 12
    x = np.linspace(0.1, 1.2, n)
    w = np.linspace(1.0, 2.0, n)
    f = (lambda x: (x * w).sum()) if operator == "gradient" else (lambda x: x * w)
    # on the dual engine, which evaluates f in every call
    prep = getattr(cyad, f"prepare_{operator}")(f, x, chunk=5, engine="dual")
    out = np.zeros(n) if operator == "gradient" else np.zeros((n, n))
    operate = getattr(cyad, operator)

    # the least of three counts: an amortised resize somewhere in the interpreter lands in one
    # count now and then, an allocation of cyad's own in every one
    per_call = min(allocations_per_call(lambda: operate(f, x, prep=prep, out=out))
                   for _ in range(3))
    per_evaluation = min(allocations_per_call(lambda: f(prep.input_dual)) for _ in range(3))
    assert prep.evaluations == 3
    assert per_evaluation > 0
    assert per_call == pytest.approx(prep.evaluations * per_evaluation, abs=0.005)


def test_a_batch_of_tangents(allocations_per_call):
    # tuples of tangents and outputs: pointed to as they are, nothing gathered per call
    n = 10
    x, y = np.arange(n, dtype=float), np.zeros(n)
    tangents = (np.ones(n), np.arange(n, dtype=float), np.full(n, -2.0))
    prep = cyad.prepare_pushforward(copy, x, tangents, y=y)
    outs = (np.zeros(n), np.zeros(n), np.zeros(n))
    assert allocations_per_call(
        lambda: cyad.pushforward(copy, x, tangents, y=y, prep=prep, out=outs)) == 0
    for t, o in zip(tangents, outs):
        np.testing.assert_array_equal(o, t)


def updated_in_place(y, x):
    # in-place operators on a contiguous dual, by duals of its shape and numbers, also by itself
    y *= 2.0
    y += 1.0
    y *= y
    y -= x
    y **= 3


@pytest.mark.parametrize("n", [10, 400])   # 400: the overwritten operand's values on the heap
def test_in_place_operators_allocate_nothing(n, allocations_per_call):
    def f(y, x):
        y[...] = x
        updated_in_place(y, x)

    x = np.linspace(0.1, 1.0, n)
    y = np.zeros(n)
    prep = cyad.prepare_jacobian(f, x, y=y, chunk=4)
    out = np.zeros((n, n))
    call = lambda: cyad.jacobian(f, x, y=y, prep=prep, out=out)  # noqa: E731
    call()
    # y = ((2x + 1)^2 - x)^3
    u = (2 * x + 1) ** 2 - x
    np.testing.assert_allclose(out, np.diag(3 * u ** 2 * (4 * (2 * x + 1) - 1)), rtol=1e-12)
    assert allocations_per_call(call) == 0


def test_in_place_operators_allocate_nothing_at_second_order(allocations_per_call):
    def f(y, x):
        y[...] = x
        updated_in_place(y, y)

    y = np.zeros(())
    prep = cyad.prepare_second_derivative(f, 0.5, y=y)
    out = np.zeros(())
    call = lambda: cyad.second_derivative(f, 0.5, y=y, prep=prep, out=out)  # noqa: E731
    call()
    # y = ((2t + 1)^2 - (2t + 1)^2)^3 = 0: x is y itself here, so y -= x leaves 0
    assert out == 0.0
    assert allocations_per_call(call) == 0


def test_a_prep_that_refused_a_call_allocates_nothing(allocations_per_call):
    # the claim is released whatever happened: a refused call leaves the prep as it was
    n = 10
    x, dx, y = np.arange(n, dtype=float), np.ones(n), np.zeros(n)
    prep = cyad.prepare_pushforward(copy, x, dx, y=y)

    def calls_its_own_prep(y, x):
        cyad.pushforward(copy, x, dx, y=y, prep=prep)

    with pytest.raises(RuntimeError, match="in use by another call"):
        cyad.pushforward(calls_its_own_prep, x, dx, y=y, prep=prep)
    out = np.zeros(n)
    pushforward = cyad.pushforward
    assert allocations_per_call(lambda: pushforward(copy, x, dx, y=y, prep=prep, out=out)) == 0
    np.testing.assert_array_equal(out, dx)


@pytest.mark.parametrize("chunk", [None, 3])
def test_outputs_overlapping_inputs_allocate_once(chunk, allocations_per_call):
    # the first such call allocates the prep's scratch for the copies; later ones reuse it
    n = 10
    x, y = np.arange(n, dtype=float), np.zeros(n)
    tangents = (np.ones(n), np.arange(n, dtype=float), np.full(n, -2.0))
    prep = cyad.prepare_pushforward(copy, x, tangents, y=y, chunk=chunk)
    outs = (tangents[1], tangents[2], tangents[0])      # each the tangent of another
    assert allocations_per_call(
        lambda: cyad.pushforward(copy, x, tangents, y=y, prep=prep, out=outs)) == 0
    # f copies, so out[k] = tangents[k] as they were: a call rotates the tangents
    before = [np.array(t) for t in tangents]
    cyad.pushforward(copy, x, tangents, y=y, prep=prep, out=outs)
    for k in range(3):
        np.testing.assert_array_equal(outs[k], before[k])


def test_the_default_tape_compares_python_state_without_allocating(allocations_per_call):
    # the comparison a default tape makes before each call: closure, globals, a dict, a list,
    # a tuple, an object's attributes, an array's contents
    n = 50
    x = np.linspace(0.1, 1.2, n)
    settings = {"scale": 1.5, "offsets": [0.5, 2.0], "pair": (1.0, 3.0)}
    model = type("Model", (), {})()
    model.weights = np.linspace(1.0, 2.0, n)
    model.power = 2

    def f(x):
        return (settings["scale"] * np.sum(model.weights * x ** model.power)
                + settings["offsets"][1] * settings["pair"][0])

    prep = cyad.prepare_gradient(f, x)
    out = np.zeros(n)
    assert allocations_per_call(lambda: cyad.gradient(f, x, prep=prep, out=out)) == 0
    assert prep.engine == "tape" and prep.engine_state.python_state.reads >= 8
    np.testing.assert_allclose(out, 3.0 * model.weights * x, rtol=1e-14)


@pytest.mark.parametrize("n", [3, 100])
def test_containers_and_arguments_allocate_nothing(n, allocations_per_call):
    # a gradient of f(params, X, Y, power, scale) with params a dict of a list and a tuple of
    # arrays, out= of the same structure, a new batch at every call and a Python float
    rng = np.random.default_rng(n)
    params = {"w": [rng.standard_normal(n), rng.standard_normal((2, n))], "c": (np.ones(1),)}
    batches = [(rng.standard_normal((4, n)), rng.standard_normal(4)) for _ in range(2)]

    def loss(p, X, Y, power, scale):
        return np.sum((X @ p["w"][0] + np.sum(p["w"][1]) * p["c"][0] - Y) ** power) * scale

    prep = cyad.prepare_gradient(loss, params, *batches[0], 2, 1.0, engine="tape")
    out = {"w": [np.empty(n), np.empty((2, n))], "c": (np.empty(1),)}
    pair = (np.empty(()), {"w": [np.empty(n), np.empty((2, n))], "c": (np.empty(1),)})
    which = [0]       # (the batch of the next call: 0 or 1, numbers that allocate nothing)

    # (no tuple unpacking in the counted calls: CPython's may make an iterator)
    def gradient():
        which[0] ^= 1
        batch = batches[which[0]]
        cyad.gradient(loss, params, batch[0], batch[1], 2, 0.5, prep=prep, out=out)

    def value_and_gradient():
        which[0] ^= 1
        batch = batches[which[0]]
        cyad.value_and_gradient(loss, params, batch[0], batch[1], 2, 0.5, prep=prep,
                                out=pair)

    assert allocations_per_call(gradient) == 0
    assert allocations_per_call(value_and_gradient) == 0
    X, Y = batches[which[0]]
    r = X @ params["w"][0] + np.sum(params["w"][1]) - Y
    np.testing.assert_allclose(pair[1]["w"][0], X.T @ r)
    np.testing.assert_allclose(pair[1]["c"][0], np.sum(params["w"][1]) * np.sum(r))
    np.testing.assert_allclose(pair[0], 0.5 * np.sum(r ** 2))
    assert prep.records == 1


def test_calls_of_one_array_and_arguments_allocate_nothing(allocations_per_call):
    # every operator's prepared call of f(x, a, t), x and f's value one array each, a and t
    # new at every call (as SciPy passes fun(x, *args) and fun(t, y, *args)), out= given;
    # on the tape (the dual engine's calls allocate what f allocates on its dual arrays)
    engine = "tape"
    n = 5
    rng = np.random.default_rng(0)
    x, v, w = rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal(n)
    weights = [rng.standard_normal(n), rng.standard_normal(n)]

    def f(x, a, t):
        return np.sin(x) * a * t

    def scalar(x, a, t):
        return np.sum(x ** 3 * a) * t

    def in_place(dydt, x, a, t):
        dydt[...] = x ** 2 * a * t

    which = [0]
    times = [0.5, 1.5]

    def arguments():
        which[0] ^= 1
        return weights[which[0]], times[which[0]]

    J, H, g, fx, dydt = np.empty((n, n)), np.empty((n, n)), np.empty(n), np.empty(n), \
        np.empty(n)
    preps = {
        "jacobian": cyad.prepare_jacobian(f, x, weights[0], 0.5, engine=engine),
        "pushforward": cyad.prepare_pushforward(f, x, v, weights[0], 0.5, engine=engine),
        "pullback": cyad.prepare_pullback(f, x, w, weights[0], 0.5, engine=engine),
        "hessian": cyad.prepare_hessian(scalar, x, weights[0], 0.5, engine=engine),
        "hvp": cyad.prepare_hvp(scalar, x, v, weights[0], 0.5, engine=engine),
        "in place": cyad.prepare_jacobian(in_place, x, weights[0], 0.5, y=dydt, engine=engine),
    }
    # (explicit calls: a call's *args or **kwargs of the harness would allocate)
    calls = {
        "jacobian": lambda a: cyad.jacobian(f, x, a[0], a[1], prep=preps["jacobian"], out=J),
        "pushforward": lambda a: cyad.pushforward(f, x, v, a[0], a[1],
                                                  prep=preps["pushforward"], out=fx),
        "pullback": lambda a: cyad.pullback(f, x, w, a[0], a[1], prep=preps["pullback"],
                                            out=g),
        "hessian": lambda a: cyad.hessian(scalar, x, a[0], a[1], prep=preps["hessian"], out=H),
        "hvp": lambda a: cyad.hvp(scalar, x, v, a[0], a[1], prep=preps["hvp"], out=g),
        "in place": lambda a: cyad.jacobian(in_place, x, a[0], a[1], y=dydt,
                                            prep=preps["in place"], out=J),
    }
    expected = {
        "jacobian": lambda a, t: np.diag(np.cos(x) * a * t),
        "pushforward": lambda a, t: np.cos(x) * a * t * v,
        "pullback": lambda a, t: np.cos(x) * a * t * w,
        "hessian": lambda a, t: np.diag(6 * x * a * t),
        "hvp": lambda a, t: 6 * x * a * t * v,
        "in place": lambda a, t: np.diag(2 * x * a * t),
    }
    results = {"jacobian": J, "pushforward": fx, "pullback": g, "hessian": H, "hvp": g,
               "in place": J}
    for name, call in calls.items():
        assert allocations_per_call(lambda call=call: call(arguments())) == 0, name
        a, t = weights[which[0]], times[which[0]]
        np.testing.assert_allclose(results[name], expected[name](a, t), rtol=1e-14)
        assert preps[name].records == 1, name
    np.testing.assert_allclose(dydt, x ** 2 * weights[which[0]] * times[which[0]], rtol=1e-14)


def test_container_x_with_hvp_pullback_and_pushforward_allocates_nothing(allocations_per_call):
    # x a dict of arrays: the hvp's and the pushforward's tangents of its structure, the
    # hvp's and the pullback's out= too, the pushforward's out= f's array; a new batch a
    # of each call
    n = 4
    rng = np.random.default_rng(1)
    params = {"w": rng.standard_normal(n), "b": (rng.standard_normal((2, n)),)}
    tangent = {"w": rng.standard_normal(n), "b": (rng.standard_normal((2, n)),)}
    batches = [rng.standard_normal(n), rng.standard_normal(n)]
    w = rng.standard_normal(n)

    def f(p, a):
        return np.sin(p["w"] * a) + p["b"][0][0] * p["b"][0][1]

    def scalar(p, a):
        return np.sum(f(p, a) ** 2)

    preps = {"hvp": cyad.prepare_hvp(scalar, params, tangent, batches[0], engine="tape"),
             "pullback": cyad.prepare_pullback(f, params, w, batches[0], engine="tape"),
             "pushforward": cyad.prepare_pushforward(f, params, tangent, batches[0],
                                                     engine="tape")}
    outs = {"hvp": {"w": np.empty(n), "b": (np.empty((2, n)),)},
            "pullback": {"w": np.empty(n), "b": (np.empty((2, n)),)},
            "pushforward": np.empty(n)}
    which = [0]

    calls = {
        "hvp": lambda a: cyad.hvp(scalar, params, tangent, a, prep=preps["hvp"],
                                  out=outs["hvp"]),
        "pullback": lambda a: cyad.pullback(f, params, w, a, prep=preps["pullback"],
                                            out=outs["pullback"]),
        "pushforward": lambda a: cyad.pushforward(f, params, tangent, a,
                                                  prep=preps["pushforward"],
                                                  out=outs["pushforward"]),
    }

    def batch():
        which[0] ^= 1
        return batches[which[0]]

    for name, call in calls.items():
        assert allocations_per_call(lambda call=call: call(batch())) == 0, name
        a = batches[which[0]]
        # the Python layer's answer (a new result) is the reference
        if name == "pushforward":
            expected = cyad.pushforward(f, params, tangent, a, engine="dual")
            np.testing.assert_allclose(outs[name], expected, rtol=1e-13)
        else:
            expected = (cyad.hvp(scalar, params, tangent, a, engine="dual") if name == "hvp"
                        else cyad.pullback(f, params, w, a, engine="dual"))
            np.testing.assert_allclose(outs[name]["w"], expected["w"], rtol=1e-13)
            np.testing.assert_allclose(outs[name]["b"][0], expected["b"][0], rtol=1e-13)
        assert preps[name].records == 1


def test_container_x_with_jacobian_and_hessian_allocates_nothing(allocations_per_call):
    # x a dict of arrays: a Jacobian into x's structure of blocks (f's shape + each leaf's)
    # and flat=True into one matrix, a Hessian flat=True; a new batch a of each call
    n = 3
    rng = np.random.default_rng(2)
    params = {"w": rng.standard_normal(n), "b": (rng.standard_normal((2, n)),)}
    batches = [rng.standard_normal(n), rng.standard_normal(n)]

    def f(p, a):
        return np.sin(p["w"] * a) + p["b"][0][0] * p["b"][0][1]

    def scalar(p, a):
        return np.sum(f(p, a) ** 2)

    preps = {"blocks": cyad.prepare_jacobian(f, params, batches[0], engine="tape"),
             "flat": cyad.prepare_jacobian(f, params, batches[0], flat=True, engine="tape"),
             "hessian": cyad.prepare_hessian(scalar, params, batches[0], flat=True,
                                             engine="tape")}
    outs = {"blocks": {"w": np.empty((n, n)), "b": (np.empty((n, 2, n)),)},
            "flat": np.empty((n, 3 * n)), "hessian": np.empty((3 * n, 3 * n))}
    calls = {
        "blocks": lambda a: cyad.jacobian(f, params, a, prep=preps["blocks"],
                                          out=outs["blocks"]),
        "flat": lambda a: cyad.jacobian(f, params, a, flat=True, prep=preps["flat"],
                                        out=outs["flat"]),
        "hessian": lambda a: cyad.hessian(scalar, params, a, flat=True, prep=preps["hessian"],
                                          out=outs["hessian"]),
    }
    which = [0]

    def batch():
        which[0] ^= 1
        return batches[which[0]]

    for name, call in calls.items():
        assert allocations_per_call(lambda call=call: call(batch())) == 0, name
        a = batches[which[0]]
        if name == "hessian":
            expected = cyad.hessian(scalar, params, a, flat=True, engine="dual")
        else:
            expected = cyad.jacobian(f, params, a, flat=True, engine="dual")
        if name == "blocks":
            # (the flat order is optree's: a dict's leaves by sorted keys, "b" first)
            got = np.concatenate([outs[name]["b"][0].reshape(n, 2 * n), outs[name]["w"]], 1)
        else:
            got = outs[name]
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)
        assert preps[name].records == 1
