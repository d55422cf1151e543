"""The compiled replay of a tape (cyad._tape.lowering, cyad._tape.replay), on tapes written by hand.

`Rosenbrock`: the chained Rosenbrock function as a tape of 10 instructions (its value) and
of 18 (value and gradient, the reverse sweep written out), beside the same computations in
NumPy (gradient.py's primal and gradient by hand). `Elementwise`: sin(x) * x + x, a
rule's loop and two arithmetic loops, beside NumPy's ufuncs writing into buffers of their
own. `Blocked`: a chain of elementwise instructions over large arrays (the JVP of
sin(x) exp(-x**2) + x**3 written out), its runs block by block (the Vars that live
within a run in its scratch) or each instruction whole (Replay's block=0). A call is
`Replay.run()` on inputs set in setup.
"""
import numpy as np

from cyad._rules.table import BINARY_RULES, UNARY_RULES
from cyad._tape.program import Tape
from cyad._tape.lowering import Replay

from .common import ELEMENTWISE_SIZES, SIZES, Call, output
from .gradient import inputs, rosenbrock, rosenbrock_by_hand

UNARY = {rule.name: op for op, rule in enumerate(UNARY_RULES)}
BINARY = {rule.name: op for op, rule in enumerate(BINARY_RULES)}


def rosenbrock_tape(n, gradient):
    """sum(100 (x[1:] - x[:-1]**2)**2 + (1 - x[:-1])**2), and with `gradient` its
    gradient: 200 d at x[1:] plus (-400 x d - 2 (1 - x)) at x[:-1]."""
    t = Tape(np.float64)
    x = t.input((n,))

    def binary(name, a, b):
        return t.emit("binary", (a, b), (max(a.size, b.size),), op=BINARY[name])

    def square(a):
        return t.emit("unary", (a,), a.shape, op=UNARY["square"])

    head = t.emit("gather", (x,), (n - 1,), index=np.arange(n - 1))
    tail = t.emit("gather", (x,), (n - 1,), index=np.arange(1, n))
    d = binary("subtract", tail, square(head))
    e = binary("subtract", t.const([1.0]), head)
    terms = binary("add", binary("multiply", square(d), t.const([100.0])), square(e))
    t.outputs.append(t.emit("sum_inner", (terms,), (), k=n - 1))
    if gradient:
        d_tail = binary("multiply", d, t.const([200.0]))
        d_head = binary("add", binary("multiply", binary("multiply", head, d), t.const([-400.0])),
                        binary("multiply", e, t.const([-2.0])))
        t.outputs.append(binary(
            "add", t.emit("scatter_add", (d_head,), (n,), index=np.arange(n - 1)),
            t.emit("scatter_add", (d_tail,), (n,), index=np.arange(1, n))))
    return t


class Rosenbrock(Call):
    params = [SIZES, ["value", "value and gradient"], ["replay", "numpy"]]
    param_names = ["n", "computes", "by"]

    def setup(self, n, computes, by):
        x = inputs(n)
        if by == "numpy":
            gradient = output(n)
            if computes == "value":
                self.call = lambda: rosenbrock(x)
            else:
                self.call = lambda: rosenbrock_by_hand(x, gradient)
            return
        replay = Replay(rosenbrock_tape(n, computes != "value"))
        replay.set_input(0, x)
        self.call = replay.run


class Elementwise(Call):
    params = [ELEMENTWISE_SIZES, ["replay", "numpy"]]
    param_names = ["n", "by"]

    def setup(self, n, by):
        x = np.linspace(-1.0, 1.0, n)
        if by == "numpy":
            s, p, y = output(n), output(n), output(n)

            def call():
                np.sin(x, out=s)
                np.multiply(s, x, out=p)
                np.add(p, x, out=y)

            self.call = call
            return
        t = Tape(np.float64)
        v = t.input((n,))
        s = t.emit("unary", (v,), (n,), op=UNARY["sin"])
        p = t.emit("binary", (s, v), (n,), op=BINARY["multiply"])
        t.emit("binary", (p, v), (n,), op=BINARY["add"])
        replay = Replay(t)
        replay.set_input(0, x)
        self.call = replay.run


def elementwise_jvp_tape(n):
    """The JVP of sin(x) exp(-x**2) + x**3 along t: value and tangent, as the tape
    engine derives it (sin's value and derivative in a row, slots passed on)."""
    tape = Tape(np.float64)
    x, t = tape.input((n,)), tape.input((n,))

    def unary(kind, name, a):
        return tape.emit(kind, (a,), (n,), op=UNARY[name])

    def binary(kind, name, a, b):
        return tape.emit(kind, (a, b), (n,), op=BINARY[name])

    s, ds = unary("unary", "sin", x), unary("unary_d", "sin", x)
    q, dq = unary("unary", "square", x), unary("unary_d", "square", x)
    e = unary("unary", "exp", unary("unary", "negative", q))
    three = tape.const(3.0)
    cube = binary("binary", "power_const_exponent", x, three)
    dcube = binary("binary_da", "power_const_exponent", x, three)
    y = binary("binary", "add", binary("binary", "multiply", s, e), cube)
    de = tape.emit("scale", (e, unary("unary", "negative", tape.emit("scale", (dq, t), (n,)))),
                   (n,))
    dy = binary("binary", "add", binary("binary", "add", tape.emit("scale", (e, tape.emit(
        "scale", (ds, t), (n,))), (n,)), tape.emit("scale", (s, de), (n,))),
        tape.emit("scale", (dcube, t), (n,)))
    tape.outputs += [y, dy]
    return tape


class Blocked(Call):
    params = [[100_000, 1_000_000], ["blocked", "whole"]]
    param_names = ["n", "runs"]

    def setup(self, n, runs):
        replay = Replay(elementwise_jvp_tape(n), keep=(), block=None if runs == "blocked" else 0)
        replay.set_input(0, np.linspace(-1.0, 1.0, n))
        replay.set_input(1, np.ones(n))
        self.call = replay.run
