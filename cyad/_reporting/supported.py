"""The functions cyad differentiates, read off its tables: the rows of the documentation's
supported-functions table.

Nothing here is written by hand: the elementwise functions come from the rule table
(`cyad._rules.table`), the other NumPy and SciPy functions from the primitive table
(`cyad._primitives.TABLE`), SciPy's functions outside NumPy's dispatch from their registry
(`cyad._primitives.scipy_functions`), SciPy's classes whose methods cyad's wrappers serve
(scipy.stats' distributions, scipy.sparse's products and solves, scipy.interpolate's
interpolators) from their modules, and the array-making functions the engines implement
beside the tables from the dual engine's registry. A function is named by its public path (the first
module of `MODULES` that holds it), so ``numpy.linalg.eigh`` rather than NumPy's
implementation module.
"""
import importlib
from typing import NamedTuple

import numpy as np

from cyad._rules import table as _rule_table

# where a user reaches the functions, searched in this order
MODULES = ("numpy", "numpy.linalg", "numpy.fft", "scipy.special", "scipy.linalg")

_KINDS = {
    "composition": "composition",
    "linear": "linear (with its transpose)",
    "primitive": "primitive (JVP and VJP rules)",
    "constant": "value only",
}
ALL_ORDERS = "first, second, nested"


class Row(NamedTuple):
    module: str      # "numpy", "numpy.linalg", "scipy.special", ...
    name: str        # the function's name in that module
    kind: str        # how cyad describes it
    orders: str      # the orders it is differentiated at
    note: str        # a restriction, or ""
    complex: str     # "yes" where it takes complex arrays too (cyad._complex), else ""


def public_name(function):
    """(module, name) through which a user calls `function`."""
    name = function.__name__
    for module in MODULES:
        try:
            found = importlib.import_module(module)
        except ImportError:
            continue
        if getattr(found, name, None) is function:
            return module, name
    return getattr(function, "__module__", None) or "numpy", name


def rule_ufunc_path(name):
    """(module, name) of the function a user calls for a rule's ufunc (named as in the rule
    table): a private ufunc (scipy.special._ufuncs._zeta) by the public function of its name
    (scipy.special.zeta) that calls it, _spherical_jn_d by spherical_jn (derivative=True)."""
    module, attribute = _rule_table.module_and_name(name)
    if attribute.startswith("_"):
        module, attribute = module.removesuffix("._ufuncs"), attribute.lstrip("_")
        if attribute.startswith("spherical_"):
            attribute = attribute.removesuffix("_d")
    return module, attribute


def _rule_rows(rules, arity):
    rows = []
    for rule in rules:
        if getattr(rule, "variant_of", None):
            continue    # internal: served through the rule it stands for
        note = ""
        if getattr(rule, "differentiable", "ab") == "b":
            note = "differentiable in its second argument only (the first is a constant)"
        for name in rule.ufuncs:
            module, attribute = rule_ufunc_path(name)
            function = getattr(np, attribute, None) if module == "numpy" else None
            rows.append(Row(module, attribute, f"elementwise, {arity}", ALL_ORDERS, note,
                            _complex(function)))
    return rows


def _complex(function):
    from cyad._complex.functions import supports
    return "yes" if function is not None and supports(function) else ""


def supported_functions():
    """Every function cyad differentiates, as sorted `Row`s. Importing SciPy's modules (when
    installed) names its functions by their public paths."""
    from cyad._dual.functions import HANDLED_FUNCTIONS
    from cyad._primitives import NAMED, TABLE
    from cyad._primitives.scipy_functions import SCIPY_FUNCTIONS

    rows = _rule_rows(_rule_table.UNARY_RULES, "unary")
    rows += _rule_rows(_rule_table.BINARY_RULES, "binary")
    for function, entry in TABLE.items():
        module, name = public_name(function)
        constant = entry.kind == "constant"
        rows.append(Row(module, name, _KINDS[entry.kind], "" if constant else ALL_ORDERS,
                        "its result carries no derivative" if constant else entry.note,
                        _complex(function)))
    for public, entry in NAMED.items():    # other modules' ufuncs, by name
        module, name = _rule_table.module_and_name(public)
        rows.append(Row(module, name, _KINDS[entry.kind], ALL_ORDERS, entry.note, ""))
    elementwise = {(row.module, row.name) for row in rows}
    for module, functions in SCIPY_FUNCTIONS.items():
        for name, function in functions.items():
            if (module, name) in elementwise:   # (spherical_jn, ...: its rules' rows)
                continue
            rows.append(Row(module, name, "outside NumPy's dispatch: cyad's wrapper in SciPy's "
                            "module", ALL_ORDERS, "",
                            "yes" if getattr(function, "takes_complex", False) else ""))
    rows += _class_rows()
    for function in HANDLED_FUNCTIONS:
        if function not in TABLE:
            module, name = public_name(function)
            rows.append(Row(module, name, "array creation and copying", ALL_ORDERS, "",
                            _complex(function)))
    unique = {(row.module, row.name): row for row in rows}
    return sorted(unique.values(), key=lambda row: (MODULES.index(row.module)
                                                   if row.module in MODULES else len(MODULES),
                                                   row.module, row.name))


def _class_rows():
    """SciPy's classes whose methods cyad's wrappers serve (cyad._primitives.scipy_stats,
    scipy_sparse_matrices, scipy_sparse_varying, scipy_interpolate): a row per distribution,
    per product or solve of a sparse matrix, per builder of a sparse matrix of derivatives,
    per interpolator; none without SciPy."""
    try:
        import scipy.interpolate
    except ImportError:
        return []
    from cyad._primitives import scipy_interpolate, scipy_sparse_varying, scipy_stats
    rows = []
    for name, distribution in scipy_stats.DISTRIBUTIONS.items():
        continuous = distribution.kind == "continuous"
        methods = scipy_stats.CONTINUOUS_METHODS if continuous else scipy_stats.DISCRETE_METHODS
        refused = {}
        for method, parameters in distribution.fixed.items():
            for parameter, why in parameters.items():
                refused.setdefault((parameter, why.format(p=parameter)), []).append(method)
        note = "; ".join(f"not in {p} in {', '.join(m)} ({why})"
                         for (p, why), m in refused.items())
        differentiable = ("in x, loc, scale and the shape parameters" if continuous else
                          "in the continuous parameters (k and loc constant)")
        rows.append(Row("scipy.stats", name, f"{distribution.kind} distribution: "
                        f"{', '.join(methods)}, frozen too", ALL_ORDERS,
                        "; ".join(filter(None, (differentiable, note))), ""))
    for name in scipy_stats.MULTIVARIATE:
        rows.append(Row("scipy.stats", name, "multivariate distribution: logpdf, pdf, frozen "
                        "too", ALL_ORDERS, "", ""))
    for name in (f"{form}_{api}" for form in ("bsr", "coo", "csc", "csr", "dia", "dok", "lil")
                 for api in ("array", "matrix")):
        rows.append(Row("scipy.sparse", name, "products A @ x, A.dot(x), x @ A (and A * x, "
                        "x * A of the matrix API)", ALL_ORDERS, "A constant, x differentiable",
                        ""))
    for name in sorted(scipy_sparse_varying.BUILDING):
        rows.append(Row("scipy.sparse", name, "a sparse matrix of derivatives: its products, "
                        "solves, transpose, toarray, diagonal, scaling and sums", ALL_ORDERS,
                        "of real values; the pattern constant", ""))
    for name in ("spsolve", "splu", "spilu", "factorized"):
        note = ("A constant, b differentiable" if name == "spilu" else
                "b and a matrix of diags, kron, ... differentiable")
        rows.append(Row("scipy.sparse.linalg", name, "solve with a sparse matrix", ALL_ORDERS,
                        note, ""))
    classes = {cls.__name__ for cls, _, _, _ in scipy_interpolate._methods(scipy.interpolate)
               if not cls.__name__.startswith("_")}
    for name in sorted(classes) + sorted(scipy_interpolate.FUNCTIONS):
        rows.append(Row("scipy.interpolate", name, "interpolation: construction and evaluation",
                        ALL_ORDERS, "in the data values and the evaluation points; knots "
                        "and grids constant", ""))
    return rows
