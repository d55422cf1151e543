"""The rule table's first partials as compositions of the tables' own operations.

A rule's first-derivative columns (d of a unary rule, da and db of a binary one:
cyad/_rules/table.py) are C expressions, compiled into the rule code. Read here as Python,
the same expressions are programs of primal operations: their names bound to the NumPy
ufuncs of the table (cos, exp, scipy.special's psi, ...), `x if c else y` to np.where,
and the rule helpers of cyad/_rules/helpers.pxd to the compositions below. Run on an
engine's arrays (a tape's tracers), a partial is then recorded as operations that
differentiate again, to any order: the transforms of cyad/_tape/transform.py use them
for the derivative programs of a nested differentiation ("composed" partials), where the
compiled columns would stop at the second derivative (unary_d2 has no derivative).

Their numbers are the columns' (tests/test_rule_derivatives.py holds every rule to them,
on its test domain and at special points); where a column calls a function that is no
rule (the partials in m of ellipkinc and ellipeinc), the composition is a custom function
with its own rules (cyad._primitives.special.elliptic_partial).
`partials(kind, op)` gives a rule's compositions, one per operand.
"""
import ast
import math
import sys

import numpy as np

from cyad._rules import table as _rule_table


def _sign(x):
    return np.sign(x)


def _pow_da(a, b):
    return np.where(b == 0.0, 0.0, b * a ** (b - 1.0))


def _pow_db(a, b, v):
    return np.where(np.logical_and(a == 0.0, b > 0.0), 0.0, np.log(a) * v)


def _share(ahead, behind, a_nan, b_nan):
    # 1 where a wins (or is the NaN that propagates), 0 where b does, 1/2 at a tie
    return np.where(np.logical_or(ahead, a_nan), 1.0,
                    np.where(np.logical_or(behind, b_nan), 0.0, 0.5))


def _max_share(a, b):
    return _share(a > b, a < b, np.isnan(a), np.isnan(b))


def _min_share(a, b):
    return _share(a < b, a > b, np.isnan(a), np.isnan(b))


def _fmax_share(a, b):
    return np.where(np.isnan(a), 0.0, np.where(np.isnan(b), 1.0, _max_share(a, b)))


def _fmin_share(a, b):
    return np.where(np.isnan(a), 0.0, np.where(np.isnan(b), 1.0, _min_share(a, b)))


def _special():
    return sys.modules["scipy.special"]


def _log_ndtr_d(x):
    # phi(x) / Phi(x) as exp(-x**2 / 2 - log Phi(x)) / sqrt(2 pi): no underflow in the
    # lower tail, where log_ndtr keeps its precision
    return np.exp(-0.5 * x * x - _special().log_ndtr(x)) * (1.0 / math.sqrt(2.0 * math.pi))


def _gammainc_dx(a, x):
    # x**(a-1) e**-x / Gamma(a), through logarithms; at x = 0 its limits (a is a constant)
    at_zero = np.where(a == 1.0, 1.0, np.where(a > 1.0, 0.0, np.inf))
    inside = np.where(x == 0.0, 1.0, x)
    return np.where(x == 0.0, at_zero,
                    np.exp((a - 1.0) * np.log(inside) - inside - _special().gammaln(a)))


def _series(t, coefficients):
    # sum of coefficients[k] t**k, by Horner's rule
    total = coefficients[-1]
    for c in coefficients[-2::-1]:
        total = total * t + c
    return total


# boxcox's partial in lmbda: l**2 phi(t), phi(t) = sum over k >= 2 of (k - 1) t**(k-2) / k!
_BOXCOX_SERIES = [(k - 1) / math.factorial(k) for k in range(2, 40)]


def _boxcox_dl(log_x, lmbda):
    t = lmbda * log_x
    far = np.abs(t) >= 2.0
    safe = np.where(far, t, 2.0)   # (the closed form is 0/0 at t = 0)
    closed = (safe * np.exp(safe) - np.expm1(safe)) / (safe * safe)
    near = _series(np.where(far, 0.0, t), _BOXCOX_SERIES)
    return log_x * log_x * np.where(far, closed, near)


# erfcx' and dawsn' for |x| >= 7 by their asymptotic series (cyad/_rules/helpers.pxd): 48
# terms of a_n = (2n - 1)!! / (2 x^2)^n, alternating for erfcx
_ASYMPTOTIC = [math.prod(range(1, 2 * n, 2)) / 2.0 ** n for n in range(1, 49)]


def _asymptotic(x, sign, far):
    # the sum over n >= 1 of sign**n a_n where `far` (elsewhere that of x = 7)
    u = 1.0 / np.where(far, x * x, 49.0)
    return u * _series(sign * u, [sign * c for c in _ASYMPTOTIC])


def _erfcx_d(x, v):
    far = x >= 7.0
    c = 2.0 / math.sqrt(math.pi)
    return np.where(far, c * _asymptotic(x, -1.0, far), 2.0 * x * v - c)


def _dawsn_d(x, v):
    far = np.abs(x) >= 7.0
    return np.where(far, -_asymptotic(x, 1.0, far), 1.0 - 2.0 * x * v)


def _spherical_d2(n, s, below, at, above):
    # (cyad/_rules/helpers.pxd)
    n = np.trunc(n)
    return (n * (n - 1.0) / (2.0 * n - 1.0) * below
            - s * (n * n / (2.0 * n - 1.0) + (n + 1.0) * (n + 1.0) / (2.0 * n + 3.0)) * at
            + (n + 1.0) * (n + 2.0) / (2.0 * n + 3.0) * above) / (2.0 * n + 1.0)


def _elliptic_partial(kind):
    def partial(phi, m):
        from cyad._primitives.special import elliptic_partial
        return elliptic_partial(phi, m, 1, kind)
    return partial


class _ScipySpecial:
    """`sc.<name>` of a column: scipy.special's ufunc (a rule of the table); the partials of
    the incomplete elliptic integrals in m, composed; polygamma as the primitive table
    computes it; spherical_jn, ... as cyad computes them (through their rules)."""

    _COMPOSED = {"ellipkinc_dm": _elliptic_partial(1), "ellipeinc_dm": _elliptic_partial(-1)}

    def __getattr__(self, name):
        if name in self._COMPOSED:
            return self._COMPOSED[name]
        if name == "polygamma":
            from cyad._primitives.scipy_functions import _scipy_polygamma
            return _scipy_polygamma
        if name == "zeta":     # the rule: Hurwitz's zeta(s, q)
            return _special()._ufuncs._zeta
        if name.startswith("spherical_"):   # (whether or not SciPy's module is wrapped)
            from cyad._primitives.scipy_functions import SPHERICAL_BESSEL
            return SPHERICAL_BESSEL[name]
        return getattr(_special(), name)


_NAMES = {
    "fabs": np.abs, "sqrt": np.sqrt, "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1,
    "log": np.log, "log1p": np.log1p, "sin": np.sin, "cos": np.cos, "sinh": np.sinh,
    "cosh": np.cosh, "tanh": np.tanh, "hypot": np.hypot, "pow": np.power, "rint": np.rint,
    "trunc": np.trunc,
    "copysign": np.copysign, "M_LN2": math.log(2.0), "M_LN10": math.log(10.0),
    "M_PI": math.pi, "M_2_SQRTPI": 2.0 / math.sqrt(math.pi), "M_SQRT1_2": math.sqrt(0.5),
    "NAN": math.nan, "INFINITY": math.inf,
    "_sign": _sign, "_pow_da": _pow_da, "_pow_db": _pow_db, "_max_share": _max_share,
    "_min_share": _min_share, "_fmax_share": _fmax_share, "_fmin_share": _fmin_share,
    "_log_ndtr_d": _log_ndtr_d, "_gammainc_dx": _gammainc_dx, "_boxcox_dl": _boxcox_dl,
    "_erfcx_d": _erfcx_d, "_dawsn_d": _dawsn_d, "_spherical_d2": _spherical_d2,
    "sc": _ScipySpecial(),
}


def _condition(test):
    # a comparison as it is, a number c as c != 0
    if isinstance(test, (bool, np.bool_)) or getattr(test, "dtype", None) == np.bool_:
        return test
    return np.not_equal(test, 0.0)


class _Conditionals(ast.NodeTransformer):
    # C's `x if c else y` on arrays: np.where(c, x, y), a number c meaning c != 0
    def visit_IfExp(self, node):
        self.generic_visit(node)
        return ast.Call(func=ast.Name("_where", ast.Load()),
                        args=[ast.Call(func=ast.Name("_condition", ast.Load()), args=[node.test],
                                       keywords=[]), node.body, node.orelse], keywords=[])


def _compiled(expression, names):
    """A C expression of the table as a Python function of `names`."""
    tree = ast.parse(expression, mode="eval")
    tree = ast.fix_missing_locations(_Conditionals().visit(tree))
    body = compile(ast.Expression(tree.body), f"<rule: {expression}>", "eval")
    namespace = dict(_NAMES, _where=np.where, _condition=_condition)

    def partial(*values):
        return eval(body, namespace, dict(zip(names, values)))
    return partial


_COMPILED: dict[tuple[str, int], tuple] = {}   # (kind, op) -> its partials, compiled once


def partials(kind, op):
    """The compositions of the first partials of unary (kind "unary") or binary rule
    `op`: a tuple of functions, of (x, v) for d; of (a, b, v) for da and db (which
    computes da where its expression reads it: maximum's 1 - da). A variant of power
    computes its rule's partials."""
    found = _COMPILED.get((kind, op))
    if found is None:
        if kind == "unary":
            found = (_compiled(_rule_table.UNARY_RULES[op].d, ("x", "v")),)
        else:
            rule = _rule_table.BINARY_RULES[op]
            base = rule if rule.variant_of is None else \
                next(r for r in _rule_table.BINARY_RULES if r.name == rule.variant_of)
            da = _compiled(rule.da if rule.da is not None else base.da, ("a", "b", "v"))
            db = _compiled(rule.db, ("a", "b", "v", "da"))
            reads_da = "da" in {node.id for node in ast.walk(ast.parse(rule.db))
                                if isinstance(node, ast.Name)}

            def with_da(a, b, v, db=db):
                return db(a, b, v, da(a, b, v) if reads_da else None)
            found = (da, with_da)
        _COMPILED[kind, op] = found
    return found
