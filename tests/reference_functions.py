"""Three functions with analytic derivatives, as Python callables and as C functions.

    F(x) = sin(x) * sum(x) + x[::-1] ** 2    (R^n -> R^n: pushforwards and Jacobians)
    g(x) = sum(sin(x)) * sum(x)              (R^n -> R: gradients, hvps and Hessians)
    h(t) = [sin(t), t ** 3, exp(t)]          (R -> R^3: derivatives and second derivatives)

Each also comes in the two-argument form f(y, x): y += f(x), which reads y's starting
values. `PYTHON` holds them as Python callables on cyad's dual arrays; `C` as
FunctionWrappers of ctypes callbacks of cyad's C signatures (first and second order,
float64 and float32), written at the dual level by hand on nested duals (the layout of
cyad/_wrapper.pxd with one outer direction).
"""
import ctypes
import types

import numpy as np

import cyad
from cyad._dual.layout import NestedLanes

N = 6   # the size of F's and g's input


# -- analytic derivatives --------------------------------------------------------------------

def F_jacobian(x):
    x = np.asarray(x, np.float64)
    reverse = np.zeros((x.size, x.size))
    reverse[np.arange(x.size), np.arange(x.size)[::-1]] = 2.0 * x[::-1]
    return np.diag(np.cos(x) * x.sum()) + np.outer(np.sin(x), np.ones(x.size)) + reverse


def g_value(x):
    x = np.asarray(x, np.float64)
    return np.sin(x).sum() * x.sum()


def g_gradient(x):
    x = np.asarray(x, np.float64)
    return np.cos(x) * x.sum() + np.sin(x).sum()


def g_hessian(x):
    x = np.asarray(x, np.float64)
    ones = np.ones(x.size)
    return np.diag(-np.sin(x) * x.sum()) + np.outer(np.cos(x), ones) + np.outer(ones, np.cos(x))


def F_value(x):
    x = np.asarray(x, np.float64)
    return np.sin(x) * x.sum() + x[::-1] ** 2


def h_value(t):
    t = float(t)
    return np.array([np.sin(t), t ** 3, np.exp(t)])


def h_derivative(t):
    t = float(t)
    return np.array([np.cos(t), 3.0 * t ** 2, np.exp(t)])


def h_second_derivative(t):
    t = float(t)
    return np.array([-np.sin(t), 6.0 * t, np.exp(t)])


# -- as Python callables ---------------------------------------------------------------------

def _F(x):
    return np.sin(x) * np.sum(x) + x[::-1] ** 2


def _g(x):
    return np.sum(np.sin(x)) * np.sum(x)


def _h(t):
    return np.stack([np.sin(t), t ** 3, np.exp(t)])


def _accumulating(f):
    def f_in_place(y, x):
        y += f(x)
    return f_in_place


PYTHON = types.SimpleNamespace(F=_F, g=_g, h=_h, F_in_place=_accumulating(_F),
                               g_in_place=_accumulating(_g), h_in_place=_accumulating(_h))


# -- at the dual level: nested duals of one outer and m inner directions ---------------------

class _Nested:
    """Elements (v, a, b[m], c[m]): the value, the partial along the outer direction, the
    partials along the inner ones and the second derivatives across (cyad/_dual/layout.pxd).
    First order is the inner part alone (a = c = 0)."""

    def __init__(self, v, a, b, c):
        self.v, self.a, self.b, self.c = v, a, b, c

    def __add__(self, o):
        return _Nested(self.v + o.v, self.a + o.a, self.b + o.b, self.c + o.c)

    def __mul__(self, o):
        sv, sa, ov, oa = self.v[..., None], self.a[..., None], o.v[..., None], o.a[..., None]
        return _Nested(self.v * o.v, self.a * o.v + self.v * o.a, self.b * ov + sv * o.b,
                       self.c * ov + self.b * oa + sa * o.b + sv * o.c)

    def map(self, f, d, d2):
        """An elementwise function with its first and second derivative."""
        dv, d2v = d(self.v), d2(self.v)
        return _Nested(f(self.v), dv * self.a, dv[..., None] * self.b,
                       dv[..., None] * self.c + (d2v * self.a)[..., None] * self.b)

    def sum(self):
        return _Nested(self.v.sum(0), self.a.sum(0), self.b.sum(0), self.c.sum(0))

    def reversed(self):
        return _Nested(self.v[::-1], self.a[::-1], self.b[::-1], self.c[::-1])

    def repeated(self, k):
        return _Nested(*(np.repeat(part, k, axis=0) for part in (self.v, self.a, self.b, self.c)))


def _sin(x):
    return x.map(np.sin, np.cos, lambda t: -np.sin(t))


def _nested_F(x):
    return _sin(x) * x.sum() + x.reversed() * x.reversed()


def _nested_g(x):
    return _sin(x).sum() * x.sum()


def _nested_h(x):
    # x is one element: each output applies its own function to it
    return x.repeated(3).map(lambda t: np.array([np.sin(t[0]), t[1] ** 3, np.exp(t[2])]),
                             lambda t: np.array([np.cos(t[0]), 3 * t[1] ** 2, np.exp(t[2])]),
                             lambda t: np.array([-np.sin(t[0]), 6 * t[1], np.exp(t[2])]))


def _arrays(pointers, shapes):
    return [np.ctypeslib.as_array(p, s) for p, s in zip(pointers, shapes)]


def _first_order(body, in_place):
    """body as a function of the first-order signature (the lanes are inner directions).
    Like a C loop it stores each output element as soon as it is computed (from all of x),
    so a later element would read an input that an output overlapped after the store."""
    def f(x, dx, y, dy, n_x, n_y, width, context):
        x, dx, y, dy = _arrays((x, dx, y, dy), ((n_x,), (n_x, width), (n_y,), (n_y, width)))
        for i in range(n_y):
            r = body(_Nested(x, np.zeros_like(x), dx, np.zeros_like(dx)))
            y[i] = y[i] + r.v.reshape(-1)[i] if in_place else r.v.reshape(-1)[i]
            dy[i] = r.b.reshape(n_y, width)[i]
        return 0
    return f


def _second_order(body, in_place):
    """body as a function of the second-order signature (outer == 1), storing as it goes."""
    def f(x, dx, y, dy, n_x, n_y, outer, inner, context):
        lanes = NestedLanes(outer, inner)
        x, dx, y, dy = _arrays((x, dx, y, dy), ((n_x,), (n_x, lanes.width), (n_y,),
                                                (n_y, lanes.width)))
        xa, xb, xc = lanes.split(dx)
        ya, yb, yc = lanes.split(dy)
        for i in range(n_y):
            r = body(_Nested(x, xa[:, 0], xb, xc[..., 0]))
            y[i] = y[i] + r.v.reshape(-1)[i] if in_place else r.v.reshape(-1)[i]
            ya[i, 0] = r.a.reshape(-1)[i]
            yb[i] = r.b.reshape(n_y, inner)[i]
            yc[i, :, 0] = r.c.reshape(n_y, inner)[i]
        return 0
    return f


def _signature(ctype, second):
    p = ctypes.POINTER(ctype)
    sizes = (ctypes.c_ssize_t,) * (4 if second else 3)
    return ctypes.CFUNCTYPE(ctypes.c_int, p, p, p, p, *sizes, ctypes.c_void_p)


def _wrapper(body, out_shape, in_place, second):
    functions = []
    for ctype in (ctypes.c_double, ctypes.c_float):
        functions.append(_signature(ctype, False)(_first_order(body, in_place)))
        if second:
            functions.append(_signature(ctype, True)(_second_order(body, in_place)))
    return cyad.FunctionWrapper(*functions, out_shape=None if in_place else out_shape)


C = types.SimpleNamespace(
    F=_wrapper(_nested_F, (N,), False, False),
    g=_wrapper(_nested_g, (), False, True),
    h=_wrapper(_nested_h, (3,), False, True),
    F_in_place=_wrapper(_nested_F, None, True, False),
    g_in_place=_wrapper(_nested_g, None, True, True),
    h_in_place=_wrapper(_nested_h, None, True, True),
)
KINDS = {"python": PYTHON, "c": C}
