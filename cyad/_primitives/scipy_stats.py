"""scipy.stats on cyad's arrays: the distributions' methods, multivariate densities, zscore
and entropy.

SciPy's distribution methods (``norm.logpdf(x, loc, scale)``, ``gamma.cdf``, the frozen
``norm(loc, scale).logpdf``) call np.asarray on their arguments and compute through
``np.place`` into plain arrays, so an engine's array cannot pass through them. `install`
(run by `cyad._primitives.scipy_dispatch` when scipy.stats is imported) wraps the public
methods of ``rv_continuous`` and ``rv_discrete`` (logpdf, pdf, logpmf, pmf, cdf, logcdf, sf,
logsf, ppf, isf) and the multivariate distributions' logpdf and pdf: a call holding an
engine array in any argument goes to cyad's formula for that distribution, any other call to
SciPy's method unchanged (at the cost of a look at the arguments' types). A frozen
distribution's methods call its generator's, so ``scipy.stats.norm(mu, sigma).logpdf(x)``
takes the same way.

Formulas. `DISTRIBUTIONS` maps each supported distribution, by SciPy's name, to a class
holding its standardised methods (of ``z = (x - loc) / scale`` and the shape parameters),
written in NumPy and scipy.special operations that cyad differentiates (ndtr, log_ndtr,
ndtri, gammaln, xlogy, xlog1py, betaln, gammainc and betainc in x, expit, i0e, ...): their
derivatives are the table's, at every order and on every engine. A method the class does not
define is derived as SciPy derives it (pdf = exp(logpdf), logcdf = log(cdf), sf = 1 - cdf,
isf(q) = ppf(1 - q), logcdf = log(cdf) below the median and log1p(-sf) above it). The
public method around it is SciPy's: the support (-inf in logpdf
outside it, 0 or 1 in cdf and sf beyond its ends), NaN for invalid parameters (folded into
the scale, or into a shape parameter of a discrete distribution, so that a valid call pays no
extra pass over x), and the values at q = 0 and 1 of ppf and isf. A formula is evaluated at
an interior point where x lies outside the support, so that neither its value nor its
derivative meets log(0) or a NaN there.

Where SciPy's value comes from a function the rule table lacks (stdtr, gammaincinv,
betaincinv, the von Mises cdf, the truncated normal's quantile), a custom function computes
SciPy's own private method on the values, with its derivative in x written in table
operations: the density for a cdf, 1 / density(ppf(q)) for a quantile (and the implicit
function theorem's partials in the truncated normal's bounds), so that these too compose to
every order.

Refused. A derivative in a shape parameter that has no closed form (gamma's cdf in a,
Student's t cdf in df, beta's cdf in a and b, ...) is refused: an engine array there raises
TypeError naming the distribution, the method and the parameter (`fixed` of each class).
A discrete distribution is differentiable in its continuous parameters only: k, loc and the
integer counts (binom's and betabinom's n) must be constants; its ppf and isf are
piecewise constant (their derivative is zero: value-only functions). A distribution or
method without a formula raises TypeError naming it.

Accuracy. The tails are SciPy's where SciPy is accurate: norm's logcdf and logsf through
log_ndtr, the logistic's through log_expit, the truncated normal's probability mass through
differences of log_ndtr. A few formulas are more accurate than SciPy's default derivations
(laplace's and pareto's logs, cauchy's logpdf through hypot); the values agree elsewhere up
to rounding.

Cost. A likelihood, ``norm.logpdf(data, mu, sigma).sum()``, pays for the passes over its data:
a valid call folds its checks into the scale, a support's end at 0 is compared on the plain
``x - loc`` where x and loc are plain (and skipped where no point lies beyond it), and the
terms of the parameters alone are added up before they meet x (`Continuous`).

Multivariate. multivariate_normal's and multivariate_t's logpdf go through np.linalg.cholesky
of the symmetric matrix of cov's (shape's) lower triangle, the triangle SciPy's eigh reads,
and a triangular solve (cov may be a number or a vector of variances, as in SciPy);
dirichlet's, wishart's and invwishart's are their formulas (multigammaln as a sum of gammaln).
SciPy's frozen objects factorise their parameters when made, so one made with cyad's arrays
among them is a `FrozenMultivariate` (logpdf and pdf); a frozen object of plain parameters
is SciPy's, its logpdf of cyad's x cyad's formula. SciPy's checks of x (on the simplex, in the
support) are not made on cyad's arrays.

SciPy is imported when a formula first runs, so cyad imports without it.
"""
import functools
import importlib

import numpy as np

from cyad._primitives._table import (
    as_operand,
    is_engine_array,
    lanes_padded,
    ndim_of,
    shape_of,
    unbroadcast,
)
from cyad._primitives.custom import custom_derivative, value_only

_LOG_2PI = float(np.log(2.0 * np.pi))
_LOG_PI = float(np.log(np.pi))
_LOG_2 = float(np.log(2.0))
_INF = np.inf


class _Module:
    """A module imported at its first use (cyad imports without SciPy)."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attribute):
        return getattr(importlib.import_module(self._name), attribute)


sc = _Module("scipy.special")
_stats = _Module("scipy.stats")


# -- helpers ---------------------------------------------------------------------------------

def _plain(x):
    return not is_engine_array(x)


def _broadcast_shape(*arrays):
    return np.broadcast_shapes(*(shape_of(a) for a in arrays))


def _select(cond, a, b):
    """np.where(cond, a, b), without a pass over the arrays where a plain cond is all true
    or all false (and the chosen operand has the result's shape already)."""
    if cond is True or cond is False:
        cond = np.asarray(cond)
    if _plain(cond):
        if cond.all() and shape_of(a) == _broadcast_shape(cond, a, b):
            return a
        if not cond.any() and shape_of(b) == _broadcast_shape(cond, a, b):
            return b
    return np.where(cond, a, b)


def _and(a, b):
    if a is True:
        return b
    if b is True:
        return a
    return np.logical_and(a, b)


def _all(*conditions):
    return functools.reduce(_and, conditions)


def _or(a, b):
    if a is False:
        return b
    if b is False:
        return a
    return np.logical_or(a, b)


def _is_constant(bound, value):
    """Whether a support's end is the plain constant value (an infinite end needs no mask)."""
    return _plain(bound) and np.ndim(bound) == 0 and bound == value


def _log_diff(log_p, log_q):
    """log(p - q) of log p > log q."""
    return log_p + np.log(-np.expm1(log_q - log_p))


def _log_gauss_mass(a, b):
    """log(ndtr(b) - ndtr(a)), in the left tail where b <= 0, in the right one where a > 0
    (by symmetry), and as log1p of the two tails' masses otherwise (SciPy's way); each case
    computed at its own (a, b) only (elsewhere at a point of its own, where it is finite)."""
    left = b <= 0
    right = a > 0
    central = np.logical_not(np.logical_or(left, right))
    a_left, b_left = _select(left, a, -2.0), _select(left, b, -1.0)
    a_right, b_right = _select(right, a, 1.0), _select(right, b, 2.0)
    a_central, b_central = _select(central, a, -1.0), _select(central, b, 1.0)
    mass = _select(left, _log_diff(sc.log_ndtr(b_left), sc.log_ndtr(a_left)), 0.0)
    mass = _select(right, _log_diff(sc.log_ndtr(-a_right), sc.log_ndtr(-b_right)), mass)
    return _select(central, np.log1p(-sc.ndtr(a_central) - sc.ndtr(-b_central)), mass)


def _series(w, coefficients):
    """The polynomial sum(c_i w**i) by Horner's rule."""
    total = coefficients[-1]
    for c in coefficients[-2::-1]:
        total = total * w + c
    return total


_SMALL = 1e-3
# log1p(-w) / w = -(1 + w/2 + w**2/3 + ...) and -expm1(-w) / w = 1 - w/2 + w**2/6 - ...,
# to w**8: exact in double precision for |w| < 1e-3, with their derivatives
_LOG1P_OVER = [-1.0 / (i + 1) for i in range(9)]
_EXPM1_OVER = [(-1.0) ** i / float(np.prod(np.arange(2, i + 2))) for i in range(9)]


def _smooth_at_zero(w, near, far, far_safe=1.0):
    """far(w) away from 0, the series `near` (its coefficients) within _SMALL of 0: a
    function with a removable singularity at w = 0, exact there with its derivatives."""
    small = np.abs(w) < _SMALL
    inner = _series(_select(small, w, 0.0), near)
    outer = far(_select(small, far_safe, w))
    return _select(small, inner, outer)


# -- SciPy's private methods on values, with derivatives in table operations --------------------

_SCIPY_METHODS = {}


def _scipy_method(name, method, partials):
    """SciPy's standardised method (``_cdf``, ``_ppf``, ...) of a distribution, as a custom
    function of (x, *shapes) whose value is SciPy's and whose partials are
    ``partials(out, x, *shapes)``: a tuple of one per operand, None where it has none (such
    an operand must be a constant: the callers refuse an engine array there). One function
    per distribution and method, made at its first use."""
    key = (name, method)
    function = _SCIPY_METHODS.get(key)
    if function is not None:
        return function

    def value(x, *shapes):
        distribution = getattr(_stats, name)
        return getattr(distribution, "_" + method)(*np.broadcast_arrays(x, *shapes))

    value.__name__ = value.__qualname__ = f"{name}.{method}"
    value.__module__ = "scipy.stats"
    function = custom_derivative(value, lanes=True)

    @function.defjvp
    def _jvp(primals, tangents):
        out = function(*primals)
        total = None
        for t, d in zip(tangents, partials(out, *primals), strict=True):
            if t is None or d is None:
                continue
            term = lanes_padded(t, ndim_of(d)) * d
            total = term if total is None else total + term
        if total is None:
            lanes = next(np.shape(t)[0] for t in tangents if t is not None)
            total = np.zeros((lanes,) + shape_of(out))
        return out, total

    @function.defvjp
    def _vjp(primals, cotangent):
        out = function(*primals)
        return tuple(None if d is None else unbroadcast(cotangent * d, shape_of(p))
                     for p, d in zip(primals, partials(out, *primals), strict=True))

    _SCIPY_METHODS[key] = function
    return function


def _in_x_only(derivative):
    """The partials of a function of (x, *shapes) differentiable in x alone."""
    def partials(out, x, *shapes):
        return (derivative(out, x, *shapes),) + (None,) * len(shapes)
    return partials


def _scipy_cdf(name, density):
    return _scipy_method(name, "cdf", _in_x_only(lambda out, x, *s: density(x, *s)))


def _scipy_sf(name, density):
    return _scipy_method(name, "sf", _in_x_only(lambda out, x, *s: -density(x, *s)))


def _scipy_ppf(name, density):
    # the inverse's derivative: 1 / density(ppf(q))
    return _scipy_method(name, "ppf", _in_x_only(lambda out, q, *s: 1.0 / density(out, *s)))


def _scipy_isf(name, density):
    return _scipy_method(name, "isf", _in_x_only(lambda out, q, *s: -1.0 / density(out, *s)))


def _density_of(logpdf):
    @functools.wraps(logpdf)
    def density(x, *shapes):
        return np.exp(logpdf(x, *shapes))
    return density


# -- the distributions -------------------------------------------------------------------------

DISTRIBUTIONS = {}

_TAILS = ("cdf", "logcdf", "sf", "logsf", "ppf", "isf")
_NO_CLOSED_FORM = "its derivative in {p} has no closed form"
_COUNT = "{p} is an integer count"


def _distribution(cls):
    DISTRIBUTIONS[cls.name] = cls
    return cls


class Continuous:
    """A continuous distribution: standardised methods of z and the shape parameters
    (logpdf, cdf, ... as functions of the class, not methods), and optionally

    - ``logpdf_terms(z, *shapes, positive)``: logpdf as (a term of z, a constant of the shapes
      subtracted from it), with ``positive`` where z > 0 is known (no xlogy then): the
      constant joins log(scale) before it meets x;
    - ``square_terms(squares, factor, *shapes)``: the same of a symmetric density, of
      z**2 = squares * factor, for squares of plain x and loc computed once;
    - ``median`` (a number or a function of the shapes) where ppf(0.5) is not cheap.
    """

    kind = "continuous"
    name = None
    shapes = ()
    fixed = {}            # {method: {shape: why its derivative is refused}}
    symmetric = False     # about 0: sf, logsf and isf are cdf, logcdf and ppf mirrored
    open_ends = ()        # "lo", "hi": ends outside logpdf's support (its limit there is -inf)
    interior = 0.0        # a point of the support (a function of the shapes where it varies)

    @staticmethod
    def argcheck(*shapes):
        return True

    @staticmethod
    def support(*shapes):
        return -_INF, _INF


class Discrete:
    """A discrete distribution: its methods of k and the shape parameters."""

    kind = "discrete"
    name = None
    shapes = ()
    fixed = {}
    nan_into = None       # the shape parameter that carries NaN where the parameters are invalid

    @staticmethod
    def argcheck(*shapes):
        return True

    @staticmethod
    def support(*shapes):
        return 0, _INF


def _norm_logpdf(z):
    return -0.5 * (z * z) - 0.5 * _LOG_2PI


@_distribution
class norm(Continuous):
    name = "norm"
    symmetric = True

    def logpdf(z):
        return _norm_logpdf(z)

    def logpdf_terms(z, positive):
        return -0.5 * (z * z), 0.5 * _LOG_2PI

    def square_terms(squares, factor):
        return -0.5 * factor * squares, 0.5 * _LOG_2PI

    def cdf(z):
        return sc.ndtr(z)

    def logcdf(z):
        return sc.log_ndtr(z)

    def ppf(q):
        return sc.ndtri(q)


def _t_logpdf(z, df):
    body, constant = _t_square_terms(z * z, 1.0, df)
    return body - constant


def _t_square_terms(squares, factor, df):
    """t's logpdf of z**2 = squares * factor (factor a scalar), as (a term of z, a constant
    subtracted from it)."""
    if np.any(np.isinf(df)):   # df = inf is the normal distribution
        infinite = np.isinf(df)
        body, constant = _t_square_terms(squares, factor, _select(infinite, 1.0, df))
        return (_select(infinite, -0.5 * factor * squares, body),
                _select(infinite, 0.5 * _LOG_2PI, constant))
    # log(poch(df/2, 1/2)) - log(pi df)/2 = -betaln(df/2, 1/2) - log(df)/2 (accurate for large df)
    constant = sc.betaln(0.5 * df, 0.5) + 0.5 * np.log(df)
    return -0.5 * (df + 1.0) * np.log1p(factor / df * squares), constant


_t_pdf = _density_of(_t_logpdf)


@_distribution
class t(Continuous):
    name = "t"
    shapes = ("df",)
    fixed = dict.fromkeys(_TAILS, {"df": _NO_CLOSED_FORM})
    median = 0.0

    def argcheck(df):
        return df > 0

    def logpdf(z, df):
        return _t_logpdf(z, df)

    def logpdf_terms(z, df, positive):
        return _t_square_terms(z * z, 1.0, df)

    def square_terms(squares, factor, df):
        return _t_square_terms(squares, factor, df)

    def cdf(z, df):
        return _scipy_cdf("t", _t_pdf)(z, df)

    def sf(z, df):
        return _scipy_sf("t", _t_pdf)(z, df)

    def ppf(q, df):
        return _scipy_ppf("t", _t_pdf)(q, df)

    def isf(q, df):
        return _scipy_isf("t", _t_pdf)(q, df)


def _gamma_logpdf(z, a):
    return sc.xlogy(a - 1.0, z) - z - sc.gammaln(a)


_gamma_pdf = _density_of(_gamma_logpdf)


@_distribution
class gamma(Continuous):
    name = "gamma"
    shapes = ("a",)
    fixed = dict.fromkeys(_TAILS, {"a": _NO_CLOSED_FORM})
    interior = 1.0

    def argcheck(a):
        return a > 0

    def support(a):
        return 0.0, _INF

    def logpdf(z, a):
        return _gamma_logpdf(z, a)

    def logpdf_terms(z, a, positive):
        power = (a - 1.0) * np.log(z) if positive else sc.xlogy(a - 1.0, z)
        return power - z, sc.gammaln(a)

    def cdf(z, a):
        return sc.gammainc(a, z)

    def sf(z, a):
        return sc.gammaincc(a, z)

    def ppf(q, a):
        return _scipy_ppf("gamma", _gamma_pdf)(q, a)

    def isf(q, a):
        return _scipy_isf("gamma", _gamma_pdf)(q, a)


def _beta_logpdf(z, a, b):
    return sc.xlog1py(b - 1.0, -z) + sc.xlogy(a - 1.0, z) - sc.betaln(a, b)


_beta_pdf = _density_of(_beta_logpdf)


@_distribution
class beta(Continuous):
    name = "beta"
    shapes = ("a", "b")
    fixed = dict.fromkeys(_TAILS, {"a": _NO_CLOSED_FORM, "b": _NO_CLOSED_FORM})
    interior = 0.5

    def argcheck(a, b):
        return _and(a > 0, b > 0)

    def support(a, b):
        return 0.0, 1.0

    def logpdf(z, a, b):
        return _beta_logpdf(z, a, b)

    def cdf(z, a, b):
        return sc.betainc(a, b, z)

    def sf(z, a, b):
        return sc.betaincc(a, b, z)

    def ppf(q, a, b):
        return _scipy_ppf("beta", _beta_pdf)(q, a, b)

    def isf(q, a, b):
        return _scipy_isf("beta", _beta_pdf)(q, a, b)


@_distribution
class lognorm(Continuous):
    name = "lognorm"
    shapes = ("s",)
    open_ends = ("lo",)
    interior = 1.0

    def argcheck(s):
        return s > 0

    def support(s):
        return 0.0, _INF

    def logpdf(z, s):
        y = np.log(z)
        return -(y * y) / (2.0 * s * s) - np.log(s) - y - 0.5 * _LOG_2PI

    def cdf(z, s):
        return sc.ndtr(np.log(z) / s)

    def logcdf(z, s):
        return sc.log_ndtr(np.log(z) / s)

    def sf(z, s):
        return sc.ndtr(-np.log(z) / s)

    def logsf(z, s):
        return sc.log_ndtr(-np.log(z) / s)

    def ppf(q, s):
        return np.exp(s * sc.ndtri(q))

    def isf(q, s):
        return np.exp(-s * sc.ndtri(q))


@_distribution
class expon(Continuous):
    name = "expon"
    interior = 1.0

    def support():
        return 0.0, _INF

    def logpdf(z):
        return -z

    def cdf(z):
        return -np.expm1(-z)

    def sf(z):
        return np.exp(-z)

    def logsf(z):
        return -z

    def ppf(q):
        return -np.log1p(-q)

    def isf(q):
        return -np.log(q)


def _chi2_logpdf(z, df):
    return sc.xlogy(0.5 * df - 1.0, z) - 0.5 * z - sc.gammaln(0.5 * df) - (0.5 * _LOG_2) * df


_chi2_pdf = _density_of(_chi2_logpdf)


@_distribution
class chi2(Continuous):
    name = "chi2"
    shapes = ("df",)
    fixed = dict.fromkeys(_TAILS, {"df": _NO_CLOSED_FORM})
    interior = 1.0

    def argcheck(df):
        return df > 0

    def support(df):
        return 0.0, _INF

    def logpdf(z, df):
        return _chi2_logpdf(z, df)

    def logpdf_terms(z, df, positive):
        power = (0.5 * df - 1.0) * np.log(z) if positive else sc.xlogy(0.5 * df - 1.0, z)
        return power - 0.5 * z, sc.gammaln(0.5 * df) + (0.5 * _LOG_2) * df

    def cdf(z, df):
        return sc.gammainc(0.5 * df, 0.5 * z)

    def sf(z, df):
        return sc.gammaincc(0.5 * df, 0.5 * z)

    def ppf(q, df):
        return _scipy_ppf("chi2", _chi2_pdf)(q, df)

    def isf(q, df):
        return _scipy_isf("chi2", _chi2_pdf)(q, df)


def _cauchy_ppf(q):
    # tan(pi (q - 1/2)) in the middle (0 at q = 1/2); in the tails -1 / tan(pi p) with
    # p = q, or q - 1 above 1/2 (exact): accurate in both
    middle = _and(q > 0.25, q < 0.75)
    tails = _select(middle, 0.1, _select(q > 0.5, q - 1.0, q))
    return _select(middle, np.tan(np.pi * (_select(middle, q, 0.5) - 0.5)),
                   -1.0 / np.tan(np.pi * tails))


@_distribution
class cauchy(Continuous):
    name = "cauchy"
    symmetric = True
    median = 0.0

    def logpdf(z):
        # log1p(z**2) as 2 log(hypot(1, z)), which does not overflow
        return -_LOG_PI - 2.0 * np.log(np.hypot(1.0, z))

    def cdf(z):
        return np.arctan2(1.0, -z) / np.pi

    def ppf(q):
        return _cauchy_ppf(q)


@_distribution
class laplace(Continuous):
    name = "laplace"
    symmetric = True

    def logpdf(z):
        return -_LOG_2 - np.abs(z)

    def cdf(z):
        e = 0.5 * np.exp(-np.abs(z))
        return _select(z > 0, 1.0 - e, e)

    def logcdf(z):
        e = 0.5 * np.exp(-np.abs(z))
        return _select(z > 0, np.log1p(-e), np.log(e))

    def ppf(q):
        upper = q > 0.5
        return _select(upper, -np.log(2.0 * (1.0 - _select(upper, q, 0.75))),
                       np.log(2.0 * _select(upper, 0.25, q)))


@_distribution
class logistic(Continuous):
    name = "logistic"
    symmetric = True

    def logpdf(z):
        y = -np.abs(z)
        return y - 2.0 * np.log1p(np.exp(y))

    def cdf(z):
        return sc.expit(z)

    def logcdf(z):
        return sc.log_expit(z)

    def ppf(q):
        return sc.logit(q)


@_distribution
class weibull_min(Continuous):
    name = "weibull_min"
    shapes = ("c",)
    interior = 1.0

    def argcheck(c):
        return c > 0

    def support(c):
        return 0.0, _INF

    def logpdf(z, c):
        return np.log(c) + sc.xlogy(c - 1.0, z) - z ** c

    def logpdf_terms(z, c, positive):
        power = (c - 1.0) * np.log(z) if positive else sc.xlogy(c - 1.0, z)
        return power - z ** c, -np.log(c)

    def cdf(z, c):
        return -np.expm1(-(z ** c))

    def sf(z, c):
        return np.exp(-(z ** c))

    def logsf(z, c):
        return -(z ** c)

    def ppf(q, c):
        return (-np.log1p(-q)) ** (1.0 / c)

    def isf(q, c):
        return (-np.log(q)) ** (1.0 / c)


@_distribution
class gumbel_r(Continuous):
    name = "gumbel_r"

    def logpdf(z):
        return -z - np.exp(-z)

    def cdf(z):
        return np.exp(-np.exp(-z))

    def logcdf(z):
        return -np.exp(-z)

    def sf(z):
        return -np.expm1(-np.exp(-z))

    def ppf(q):
        return -np.log(-np.log(q))

    def isf(q):
        return -np.log(-np.log1p(-q))


@_distribution
class gumbel_l(Continuous):
    name = "gumbel_l"

    def logpdf(z):
        return z - np.exp(z)

    def cdf(z):
        return -np.expm1(-np.exp(z))

    def sf(z):
        return np.exp(-np.exp(z))

    def logsf(z):
        return -np.exp(z)

    def ppf(q):
        return np.log(-np.log1p(-q))

    def isf(q):
        return np.log(-np.log(q))


@_distribution
class pareto(Continuous):
    name = "pareto"
    shapes = ("b",)
    interior = 2.0

    def argcheck(b):
        return b > 0

    def support(b):
        return 1.0, _INF

    def logpdf(z, b):
        return np.log(b) - (b + 1.0) * np.log(z)

    def cdf(z, b):
        return -np.expm1(-b * np.log(z))

    def sf(z, b):
        return np.exp(-b * np.log(z))

    def logsf(z, b):
        return -b * np.log(z)

    def ppf(q, b):
        return np.exp(-np.log1p(-q) / b)

    def isf(q, b):
        return np.exp(-np.log(q) / b)


@_distribution
class uniform(Continuous):
    name = "uniform"
    interior = 0.5

    def support():
        return 0.0, 1.0

    def logpdf(z):
        return 0.0 * z

    def cdf(z):
        return z

    def logcdf(z):
        return np.log(z)

    def sf(z):
        return 1.0 - z

    def logsf(z):
        return np.log1p(-z)

    def ppf(q):
        return q

    def isf(q):
        return 1.0 - q


def _invgamma_logpdf(z, a):
    return -(a + 1.0) * np.log(z) - sc.gammaln(a) - 1.0 / z


_invgamma_pdf = _density_of(_invgamma_logpdf)


@_distribution
class invgamma(Continuous):
    name = "invgamma"
    shapes = ("a",)
    fixed = dict.fromkeys(_TAILS, {"a": _NO_CLOSED_FORM})
    open_ends = ("lo",)
    interior = 1.0

    def argcheck(a):
        return a > 0

    def support(a):
        return 0.0, _INF

    def logpdf(z, a):
        return _invgamma_logpdf(z, a)

    def cdf(z, a):
        return sc.gammaincc(a, 1.0 / z)

    def sf(z, a):
        return sc.gammainc(a, 1.0 / z)

    def ppf(q, a):
        return _scipy_ppf("invgamma", _invgamma_pdf)(q, a)

    def isf(q, a):
        return _scipy_isf("invgamma", _invgamma_pdf)(q, a)


def _genextreme_loglogcdf(z, c):
    """log(-log(cdf)) = log1p(-c z) / c (-z at c = 0): z log1p(-w) / w of w = c z."""
    return z * _smooth_at_zero(c * z, _LOG1P_OVER, lambda w: np.log1p(-w) / w, 0.5)


def _genextreme_of_gumbel(y, c):
    """-expm1(-c y) / c (y at c = 0): the quantile of the Gumbel quantile y."""
    return y * _smooth_at_zero(c * y, _EXPM1_OVER, lambda w: -np.expm1(-w) / w)


@_distribution
class genextreme(Continuous):
    """SciPy's sign of c: the support ends at 1/c, above for c > 0 and below for c < 0;
    smooth in c through c = 0 (the Gumbel distribution), by series there."""
    name = "genextreme"
    shapes = ("c",)

    def argcheck(c):
        return np.isfinite(c)

    def support(c):
        safe = _select(c == 0, 1.0, c)
        return _select(c < 0, 1.0 / safe, -_INF), _select(c > 0, 1.0 / safe, _INF)

    def logpdf(z, c):
        # -inf at an infinite z and at the end 1/c of c > 0 (but 0 where c = 1 too)
        infinite = np.isinf(z)
        finite = _select(infinite, 0.0, z)
        end = _or(c * finite == 1, infinite)
        safe = _select(end, 0.0, finite)
        loglog = _genextreme_loglogcdf(safe, c)
        value = -np.exp(loglog) + loglog - np.log1p(-c * safe)
        return _select(end, _select(_and(c == 1, z == 1), 0.0, -_INF), value)

    def logcdf(z, c):
        return -np.exp(_genextreme_loglogcdf(z, c))

    def cdf(z, c):
        return np.exp(-np.exp(_genextreme_loglogcdf(z, c)))

    def sf(z, c):
        return -np.expm1(-np.exp(_genextreme_loglogcdf(z, c)))

    def ppf(q, c):
        return _genextreme_of_gumbel(-np.log(-np.log(q)), c)

    def isf(q, c):
        return _genextreme_of_gumbel(-np.log(-np.log1p(-q)), c)


def _truncnorm_logpdf(z, a, b):
    return _norm_logpdf(z) - _log_gauss_mass(a, b)


def _truncnorm_quantile_partials(sign):
    """The partials of the quantile x(q, a, b) (isf: sign -1, q the upper tail), by the
    implicit function theorem: 1 / pdf(x) in q, (1 - F) phi(a) / phi(x) in a and
    F phi(b) / phi(x) in b (F the lower tail probability q, or 1 - q)."""
    def partials(x, q, a, b):
        lower = q if sign > 0 else 1.0 - q
        half = 0.5 * x * x
        return (sign / np.exp(_truncnorm_logpdf(x, a, b)),
                (1.0 - lower) * np.exp(half - 0.5 * a * a),
                lower * np.exp(half - 0.5 * b * b))
    return partials


@_distribution
class truncnorm(Continuous):
    name = "truncnorm"
    shapes = ("a", "b")

    def argcheck(a, b):
        return a < b

    def support(a, b):
        return a, b

    def interior(a, b):
        # the midpoint of finite ends, else a point 1 inside the finite one (or 0)
        finite_a, finite_b = np.isfinite(a), np.isfinite(b)
        middle = 0.5 * (_select(finite_a, a, 0.0) + _select(finite_b, b, 0.0))
        return _select(_and(finite_a, finite_b), middle, np.clip(0.0, a + 1.0, b - 1.0))

    def logpdf(z, a, b):
        return _truncnorm_logpdf(z, a, b)

    def _logs(z, a, b):
        # log cdf and log sf, each from the other's log1p where it is near 0 (SciPy's way)
        mass = _log_gauss_mass(a, b)
        lower = _log_gauss_mass(a, z) - mass
        upper = _log_gauss_mass(z, b) - mass
        near_lower = lower > -0.1
        near_upper = upper > -0.1
        log_cdf = _select(near_lower, np.log1p(-np.exp(_select(near_lower, upper, -1.0))),
                          lower)
        log_sf = _select(near_upper, np.log1p(-np.exp(_select(near_upper, lower, -1.0))),
                         upper)
        return log_cdf, log_sf

    def logcdf(z, a, b):
        return truncnorm._logs(z, a, b)[0]

    def logsf(z, a, b):
        return truncnorm._logs(z, a, b)[1]

    def cdf(z, a, b):
        return np.exp(truncnorm.logcdf(z, a, b))

    def sf(z, a, b):
        return np.exp(truncnorm.logsf(z, a, b))

    def ppf(q, a, b):
        return _scipy_method("truncnorm", "ppf", _truncnorm_quantile_partials(1.0))(q, a, b)

    def isf(q, a, b):
        return _scipy_method("truncnorm", "isf", _truncnorm_quantile_partials(-1.0))(q, a, b)


def _gennorm_logpdf(z, beta):
    return np.log(0.5 * beta) - sc.gammaln(1.0 / beta) - np.abs(z) ** beta


_gennorm_pdf = _density_of(_gennorm_logpdf)


@_distribution
class gennorm(Continuous):
    name = "gennorm"
    shapes = ("beta",)
    fixed = dict.fromkeys(_TAILS, {"beta": _NO_CLOSED_FORM})
    median = 0.0

    def argcheck(beta):
        return beta > 0

    def logpdf(z, beta):
        return _gennorm_logpdf(z, beta)

    def cdf(z, beta):
        c = 0.5 * np.sign(z)
        return (0.5 + c) - c * sc.gammaincc(1.0 / beta, np.abs(z) ** beta)

    def sf(z, beta):
        return gennorm.cdf(-z, beta)

    def ppf(q, beta):
        return _scipy_ppf("gennorm", _gennorm_pdf)(q, beta)

    def isf(q, beta):
        return -gennorm.ppf(q, beta)


def _vonmises_logpdf(z, kappa):
    # kappa cosm1(z) - log(2 pi i0e(kappa)), cosm1(z) = -2 sin(z/2)**2 (NaN at infinite z)
    finite = np.isfinite(z)
    s = np.sin(0.5 * _select(finite, z, 0.0))
    value = -2.0 * kappa * (s * s) - _LOG_2PI - np.log(sc.i0e(kappa))
    return _select(finite, value, np.nan)


_vonmises_pdf = _density_of(_vonmises_logpdf)


@_distribution
class vonmises(Continuous):
    name = "vonmises"
    shapes = ("kappa",)
    fixed = dict.fromkeys(_TAILS, {"kappa": _NO_CLOSED_FORM})
    median = 0.0

    def argcheck(kappa):
        return kappa >= 0

    def logpdf(z, kappa):
        return _vonmises_logpdf(z, kappa)

    def cdf(z, kappa):
        return _scipy_cdf("vonmises", _vonmises_pdf)(z, kappa)

    def ppf(q, kappa):
        return _scipy_ppf("vonmises", _vonmises_pdf)(q, kappa)


# -- discrete distributions ---------------------------------------------------------------------

@_distribution
class poisson(Discrete):
    name = "poisson"
    shapes = ("mu",)
    nan_into = "mu"

    def argcheck(mu):
        return mu >= 0

    def logpmf(k, mu):
        return sc.xlogy(k, mu) - sc.gammaln(k + 1.0) - mu

    def cdf(k, mu):
        return sc.gammaincc(k + 1.0, mu)

    def sf(k, mu):
        return sc.gammainc(k + 1.0, mu)


def _binom_logpmf(k, n, p):
    combinations = sc.gammaln(n + 1.0) - (sc.gammaln(k + 1.0) + sc.gammaln(n - k + 1.0))
    return combinations + sc.xlogy(k, p) + sc.xlog1py(n - k, -p)


def _isintegral(n):
    return n == np.round(n)


@_distribution
class binom(Discrete):
    name = "binom"
    shapes = ("n", "p")
    nan_into = "p"
    fixed = dict.fromkeys(("logpmf", "pmf") + _TAILS, {"n": _COUNT})

    def argcheck(n, p):
        return _all(n >= 0, _isintegral(n), p >= 0, p <= 1)

    def support(n, p):
        return 0, n

    def logpmf(k, n, p):
        return _binom_logpmf(k, n, p)

    def cdf(k, n, p):
        return sc.betainc(n - k, k + 1.0, 1.0 - p)

    def sf(k, n, p):
        return sc.betainc(k + 1.0, n - k, p)


@_distribution
class bernoulli(Discrete):
    name = "bernoulli"
    shapes = ("p",)
    nan_into = "p"

    def argcheck(p):
        return _and(p >= 0, p <= 1)

    def support(p):
        return 0, 1

    def logpmf(k, p):
        return _binom_logpmf(k, 1.0, p)

    def cdf(k, p):
        return 1.0 - p + 0.0 * k

    def sf(k, p):
        return p + 0.0 * k


@_distribution
class nbinom(Discrete):
    name = "nbinom"
    shapes = ("n", "p")
    nan_into = "p"
    fixed = dict.fromkeys(("cdf", "logcdf", "sf", "logsf"), {"n": _NO_CLOSED_FORM})

    def argcheck(n, p):
        return _all(n > 0, p > 0, p <= 1)

    def logpmf(k, n, p):
        coefficient = sc.gammaln(n + k) - sc.gammaln(k + 1.0) - sc.gammaln(n)
        return coefficient + n * np.log(p) + sc.xlog1py(k, -p)

    def cdf(k, n, p):
        return sc.betainc(n, k + 1.0, p)

    def logcdf(k, n, p):
        # log1p of the upper tail where the cdf is above 1/2 (SciPy's way)
        cdf = nbinom.cdf(k, n, p)
        high = cdf > 0.5
        return _select(high, np.log1p(-sc.betainc(k + 1.0, n, 1.0 - p)),
                       np.log(_select(high, 0.5, cdf)))

    def sf(k, n, p):
        return sc.betaincc(n, k + 1.0, p)


@_distribution
class geom(Discrete):
    name = "geom"
    shapes = ("p",)
    nan_into = "p"

    def argcheck(p):
        return _and(p <= 1, p > 0)

    def support(p):
        return 1, _INF

    def logpmf(k, p):
        return sc.xlog1py(k - 1.0, -p) + np.log(p)

    def cdf(k, p):
        return -np.expm1(np.log1p(-p) * k)

    def sf(k, p):
        return np.exp(k * np.log1p(-p))

    def logsf(k, p):
        return k * np.log1p(-p)


def _betabinom_logpmf(k, n, a, b):
    combinations = -np.log(n + 1.0) - sc.betaln(n - k + 1.0, k + 1.0)
    return combinations + sc.betaln(k + a, n - k + b) - sc.betaln(a, b)


@_distribution
class betabinom(Discrete):
    name = "betabinom"
    shapes = ("n", "a", "b")
    nan_into = "a"
    fixed = dict.fromkeys(("logpmf", "pmf") + _TAILS, {"n": _COUNT})

    def argcheck(n, a, b):
        return _all(n >= 0, _isintegral(n), a > 0, b > 0)

    def support(n, a, b):
        return 0, n

    def logpmf(k, n, a, b):
        return _betabinom_logpmf(k, n, a, b)

    def cdf(k, n, a, b):
        # the sum of the pmf over 0..k, along a trailing axis (SciPy sums it too)
        k = np.asarray(k)
        n = np.asarray(n)
        top = int(np.max(k)) if k.size else 0
        j = np.arange(top + 1.0)
        within = j <= k[..., None]
        terms = np.exp(_betabinom_logpmf(np.where(within, j, 0.0), n[..., None],
                                         np.expand_dims(a, -1), np.expand_dims(b, -1)))
        return np.clip(np.sum(np.where(within, terms, 0.0), axis=-1), 0.0, 1.0)


# -- the public methods ----------------------------------------------------------------------

_ARGUMENT = {"logpdf": "x", "pdf": "x", "logpmf": "k", "pmf": "k", "cdf": "x", "logcdf": "x",
             "sf": "x", "logsf": "x", "ppf": "q", "isf": "q"}
CONTINUOUS_METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf")
DISCRETE_METHODS = ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf")
# the fill values beyond the support's lower and upper ends
_ENDS = {"cdf": (0.0, 1.0), "logcdf": (-_INF, 0.0), "sf": (1.0, 0.0), "logsf": (0.0, -_INF)}


# a symmetric distribution's methods from their mirror images
_MIRRORED = {"sf": "cdf", "logsf": "logcdf", "isf": "ppf"}


def _standard(spec, method):
    """The standardised method of a distribution, derived as SciPy derives it where the
    class does not define it."""
    own = getattr(spec, method, None)
    if own is not None:
        return own

    def base(name):
        function = _standard(spec, name)
        if function is None:
            raise _no_formula(spec.name, method)
        return function

    if spec.kind == "continuous" and spec.symmetric and method in _MIRRORED:
        mirrored = base(_MIRRORED[method])
        if method == "isf":
            return lambda q, *s: -mirrored(q, *s)
        return lambda z, *s: mirrored(-z, *s)
    if method == "pdf":
        return lambda z, *s: np.exp(base("logpdf")(z, *s))
    if method == "pmf":
        return lambda k, *s: np.exp(base("logpmf")(k, *s))
    if method == "sf":
        return lambda z, *s: 1.0 - base("cdf")(z, *s)
    if method == "isf":
        return lambda q, *s: base("ppf")(1.0 - q, *s)
    if method in ("logcdf", "logsf") and spec.kind == "discrete":
        def log_of(k, *s):
            with np.errstate(divide="ignore"):   # log(0) = -inf, as SciPy's
                return np.log(base(method[3:])(k, *s))
        return log_of
    if method in ("logcdf", "logsf"):
        # SciPy's: the log of the tail below (above) the median, log1p of minus the other
        # tail beyond it
        tail, other = method[3:], ("sf" if method == "logcdf" else "cdf")

        def log_tail(z, *s):
            median = _median(spec, s)
            near = (z < median) if method == "logcdf" else (z > median)
            with np.errstate(divide="ignore"):   # log(0) = -inf, as SciPy's
                return _select(near, np.log(base(tail)(_select(near, z, median), *s)),
                               np.log1p(-base(other)(_select(near, median, z), *s)))
        return log_tail
    return None


def _median(spec, shapes):
    median = getattr(spec, "median", None)
    if median is not None:
        return median(*shapes) if callable(median) else median
    return _standard(spec, "ppf")(0.5, *shapes)


def _no_formula(name, method):
    return TypeError(f"cyad: scipy.stats.{name}.{method} has no formula in cyad on cyad's "
                     f"arrays (supported: {', '.join(sorted(DISTRIBUTIONS))}, and "
                     f"{', '.join(sorted(MULTIVARIATE))})")


def _refuse(name, method, parameter, why):
    why = why.format(p=parameter)
    return TypeError(f"cyad: scipy.stats.{name}.{method} is not differentiable in "
                     f"{parameter} on cyad's arrays ({why}): pass {parameter} as a constant "
                     "(a plain number or array)")


def _check_fixed(spec, method, named):
    for parameter, value in named.items():
        if not is_engine_array(value):
            continue
        why = spec.fixed.get(method, {}).get(parameter)
        if why is None and spec.kind == "discrete" and parameter in ("k", "loc"):
            why = "a discrete distribution's {p} is not a continuous parameter"
        if why is not None:
            raise _refuse(spec.name, method, parameter, why)


def call(distribution, method, args, kwargs):
    """``distribution.method(*args, **kwargs)`` of a SciPy distribution on cyad's arrays."""
    spec = DISTRIBUTIONS.get(distribution.name)
    if spec is None or type(distribution) is not type(getattr(_stats, spec.name, None)):
        raise _no_formula(getattr(distribution, "name", type(distribution).__name__), method)
    argument = _ARGUMENT[method]
    if args:
        x, args = args[0], args[1:]
    elif argument in kwargs:
        kwargs = dict(kwargs)
        x = kwargs.pop(argument)
    else:
        raise TypeError(f"scipy.stats.{spec.name}.{method}() missing 1 required positional "
                        f"argument: {argument!r}")
    shapes, loc, scale = distribution._parse_args(*args, **kwargs)
    named = dict(zip(spec.shapes, shapes, strict=True), loc=loc, scale=scale)
    named["q" if method in ("ppf", "isf") else ("k" if spec.kind == "discrete" else "x")] = x
    _check_fixed(spec, method, named)
    shapes = tuple(as_operand(s) for s in shapes)
    if spec.kind == "discrete":
        return _discrete(spec, method, as_operand(x), shapes, np.asarray(loc))
    x = as_operand(x)
    if _plain(x):
        x = np.asarray(x, dtype=np.promote_types(x.dtype, np.float64))
    return _continuous(spec, method, x, shapes, as_operand(loc), as_operand(scale))


def _scalar_result(value):
    # SciPy returns a 0-d result as a scalar
    return value[()] if _plain(value) and np.ndim(value) == 0 else value


def _continuous(spec, method, x, shapes, loc, scale):
    standard = _standard(spec, "logpdf" if method == "pdf" else method)
    if standard is None:
        raise _no_formula(spec.name, method)
    valid = _and(spec.argcheck(*shapes), scale > 0)
    if method in ("ppf", "isf"):
        valid = _and(valid, loc == loc)
    # NaN for invalid parameters, through the scale (no pass over x on a valid call)
    scale = _select(valid, scale, np.nan)
    lo, hi = spec.support(*shapes)
    interior = spec.interior(*shapes) if callable(spec.interior) else spec.interior
    if method in ("ppf", "isf"):
        return _scalar_result(_quantile(standard, method, x, shapes, loc, scale, lo, hi))
    deviation = x - loc
    z = deviation / scale
    if method in ("logpdf", "pdf"):
        outside = False
        if not _is_constant(lo, -_INF):
            outside = _or(outside, _compare(z, deviation, lo,
                                            np.less_equal if "lo" in spec.open_ends else np.less))
        if not _is_constant(hi, _INF):
            outside = _or(outside, _compare(z, deviation, hi, np.greater_equal
                                            if "hi" in spec.open_ends else np.greater))
        # (a likelihood's pass over its data is what counts: the terms that depend on the
        # parameters alone are added up before they meet x)
        square = getattr(spec, "square_terms", None)
        terms = getattr(spec, "logpdf_terms", None)
        if square is not None and outside is False and _plain(deviation):
            # a symmetric density of z**2 = deviation**2 / scale**2, the squares plain
            body, constant = square(deviation * deviation, 1.0 / (scale * scale), *shapes)
        elif terms is not None:
            inner = z if outside is False else _select(outside, interior, z)
            # z > 0 known everywhere (plain x and loc): no xlogy for its case z = 0
            positive = (_is_constant(lo, 0.0) and _plain(deviation)
                        and bool(np.all(deviation > 0)))
            body, constant = terms(inner, *shapes, positive)
        else:
            inner = z if outside is False else _select(outside, interior, z)
            body, constant = standard(inner, *shapes), 0.0
        value = body - (constant + np.log(scale))
        if outside is not False:
            value = _select(outside, _select(valid, -_INF, np.nan), value)
        return _scalar_result(np.exp(value) if method == "pdf" else value)
    # (an infinite end is masked too unless x is plain and finite: SciPy's 0 and 1 there)
    finite = _plain(x) and bool(np.isfinite(x).all())
    below = False if finite and _is_constant(lo, -_INF) else _compare(z, deviation, lo,
                                                                        np.less_equal)
    above = False if finite and _is_constant(hi, _INF) else _compare(z, deviation, hi,
                                                                       np.greater_equal)
    beyond = _or(below, above)
    inner = z if beyond is False else _select(beyond, interior, z)
    value = standard(inner, *shapes)
    at_lo, at_hi = _ENDS[method]
    if above is not False:
        value = _select(above, _select(valid, at_hi, np.nan), value)
    if below is not False:
        value = _select(below, _select(valid, at_lo, np.nan), value)
    return _scalar_result(value)


def _compare(z, deviation, end, comparison):
    """comparison(z, end) of z = deviation / scale; at an end 0, that of the deviation (the
    scale is positive where the parameters are valid), plain where x and loc are."""
    if _is_constant(end, 0.0):
        return comparison(deviation, 0.0)
    return comparison(z, end)


def _quantile(standard, method, q, shapes, loc, scale, lo, hi):
    inside = _and(q > 0, q < 1)
    value = standard(_select(inside, q, 0.5), *shapes)
    first, last = (lo, hi) if method == "ppf" else (hi, lo)
    value = _select(q == 0, first, value)
    value = _select(q == 1, last, value)
    value = _select(_and(q >= 0, q <= 1), value, np.nan)
    return value * scale + loc


_QUANTILES = {}    # the value-only functions of _discrete_quantile, made once each


def _discrete_quantile(name, method):
    """A discrete distribution's ppf or isf, SciPy's, as a value-only function: piecewise
    constant, its derivative is zero."""
    if (name, method) in _QUANTILES:
        return _QUANTILES[name, method]

    def quantile(q, loc, *shapes):
        distribution = getattr(_stats, name)
        return getattr(type(distribution), method).__wrapped__(distribution, q, *shapes,
                                                               loc=loc)
    quantile.__name__ = quantile.__qualname__ = f"{name}.{method}"
    quantile.__module__ = "scipy.stats"
    return _QUANTILES.setdefault((name, method), value_only(quantile))


def _discrete(spec, method, k, shapes, loc):
    if method in ("ppf", "isf"):
        return _scalar_result(_discrete_quantile(spec.name, method)(k, loc, *shapes))
    standard = _standard(spec, method)
    if standard is None:
        raise _no_formula(spec.name, method)
    k = np.asarray(k) - loc
    valid = spec.argcheck(*shapes)
    position = spec.shapes.index(spec.nan_into)
    shapes = list(shapes)
    shapes[position] = _select(valid, shapes[position], np.nan)
    lo, hi = spec.support(*shapes)
    lo, hi = np.asarray(lo), np.asarray(hi)
    invalid = _or(np.logical_not(valid) if valid is not True else False, np.isnan(k))
    if method in ("logpmf", "pmf"):
        inside = (k >= lo) & (k <= hi) & (np.floor(k) == k)
        fill = -_INF if method == "logpmf" else 0.0
    else:   # (k, lo and hi are plain: the counts are constants)
        inside = (k >= lo) & (k < hi) & np.isfinite(k)
        end = (k >= hi) if method in ("cdf", "logcdf") else (k < lo)   # where the tail is 1
        low, one = (-_INF, 0.0) if method.startswith("log") else (0.0, 1.0)
        fill = np.where(end, one, low)
        k = np.floor(np.where(inside, k, 0.0))
    fill = _select(invalid, np.nan, fill)
    if method == "logcdf":
        fill = _select(end, 0.0, fill)   # SciPy's: 0 beyond the support, whatever the parameters
    safe = np.where(inside, k, np.broadcast_to(lo, np.shape(inside)))
    value = standard(safe, *shapes)
    return _scalar_result(_select(inside, value, fill))


# -- multivariate distributions ------------------------------------------------------------------

def _lower_symmetric(a):
    """The symmetric matrix of a's lower triangle (the triangle SciPy's eigh reads)."""
    n = shape_of(a)[-1]
    lower = np.tri(n)
    strict = lower - np.eye(n)
    return a * lower + np.swapaxes(a * strict, -1, -2)


def _squeeze(out):
    out = np.squeeze(out)
    return _scalar_result(out)


def _quantiles(x, dim):
    """SciPy's _process_quantiles: x as (..., dim)."""
    x = as_operand(x)
    if _plain(x):
        x = np.asarray(x, dtype=np.promote_types(x.dtype, np.float64))
    if ndim_of(x) == 0:
        x = np.reshape(x, (1,))
    if ndim_of(x) == 1:
        x = np.reshape(x, (-1, 1) if dim == 1 else (1, -1))
    return x


def _dimension(mean, cov):
    if mean is not None:
        return int(np.prod(shape_of(mean)))
    if cov is not None and ndim_of(cov) >= 1:
        return shape_of(cov)[0]
    return 1


def _cholesky_terms(dev, cov, dim):
    """(maha, logdet) of deviations dev (..., dim) from a covariance: a scalar, a vector of
    variances or a matrix (its lower triangle)."""
    cov = as_operand(cov)
    if ndim_of(cov) < 2:
        variances = cov * np.ones(dim) if ndim_of(cov) == 0 else cov
        maha = np.sum(dev * dev / variances, axis=-1)
        return maha, np.sum(np.log(variances))
    from cyad._primitives.scipy_functions import solve_triangular
    factor = np.linalg.cholesky(_lower_symmetric(cov))
    flat = np.reshape(dev, (-1, dim))
    z = solve_triangular(factor, np.swapaxes(flat, 0, 1), trans=0, lower=True,
                         unit_diagonal=False)
    maha = np.reshape(np.sum(z * z, axis=0), shape_of(dev)[:-1])
    return maha, 2.0 * np.sum(np.log(np.diagonal(factor)))


def multivariate_normal_logpdf(x, mean=None, cov=1, allow_singular=False):
    cov = as_operand(cov)
    dim = _dimension(mean, cov)
    x = _quantiles(x, dim)
    mean = np.zeros(dim) if mean is None else np.reshape(as_operand(mean), (dim,))
    maha, logdet = _cholesky_terms(x - mean, cov, dim)
    return _squeeze(-0.5 * (dim * _LOG_2PI + logdet + maha))


def multivariate_t_logpdf(x, loc=None, shape=1, df=1):
    shape = as_operand(shape)
    dim = _dimension(loc, shape)
    if _plain(df) and np.isinf(df):
        return multivariate_normal_logpdf(x, loc, shape)
    x = _quantiles(x, dim)
    loc = np.zeros(dim) if loc is None else np.reshape(as_operand(loc), (dim,))
    maha, logdet = _cholesky_terms(x - loc, shape, dim)
    half = 0.5 * (df + dim)
    value = (sc.gammaln(half) - sc.gammaln(0.5 * df) - 0.5 * dim * np.log(df * np.pi)
             - 0.5 * logdet - half * np.log1p(maha / df))
    return _squeeze(value)


def dirichlet_logpdf(x, alpha):
    """x of shape (K, ...) or (K - 1, ...) (the last component 1 - the others' sum)."""
    x = as_operand(x)
    k = shape_of(alpha)[0]
    if shape_of(x)[0] == k - 1:
        rest = 1.0 - np.sum(x, axis=0, keepdims=True)
        x = np.concatenate([x, rest], axis=0)
    log_beta = np.sum(sc.gammaln(alpha)) - sc.gammaln(np.sum(alpha))
    alpha = np.reshape(alpha, (k,) + (1,) * (ndim_of(x) - 1))
    return _squeeze(np.sum(sc.xlogy(alpha - 1.0, x), axis=0) - log_beta)


def _multigammaln(a, dim):
    j = np.arange(dim)
    return 0.25 * dim * (dim - 1) * _LOG_PI + np.sum(sc.gammaln(np.expand_dims(a, -1) - 0.5 * j),
                                                     axis=-1)


def _wishart_parameters(df, scale):
    scale = as_operand(scale)
    if ndim_of(scale) == 0:
        scale = np.reshape(scale, (1, 1))
    elif ndim_of(scale) == 1:
        scale = scale * np.eye(shape_of(scale)[0])
    return shape_of(scale)[0], scale


def _wishart_quantiles(x, dim):
    """x as a stack (N, dim, dim) (SciPy's samples are on its last axis)."""
    x = as_operand(x)
    if ndim_of(x) == 0:
        x = np.reshape(x, (1, 1, 1))
    elif ndim_of(x) == 1:
        x = np.reshape(x, (-1, 1, 1)) if dim == 1 else x * np.eye(dim)[None]
    elif ndim_of(x) == 2:
        x = np.reshape(x, (1, dim, dim)) if dim > 1 or shape_of(x)[0] == 1 else \
            np.reshape(x, (-1, 1, 1))
    else:
        x = np.moveaxis(x, -1, 0)
    return x


def _logdet_spd(a):
    factor = np.linalg.cholesky(_lower_symmetric(a))
    return 2.0 * np.sum(np.log(np.diagonal(factor, axis1=-2, axis2=-1)), axis=-1)


def wishart_logpdf(x, df, scale):
    dim, scale = _wishart_parameters(df, scale)
    x = _wishart_quantiles(x, dim)
    scale = _lower_symmetric(scale)
    log_det_x = _logdet_spd(x)
    # trace(inv(scale) x) = sum(inv(scale) * x), scale symmetric
    trace = np.sum(np.linalg.inv(scale) * x, axis=(-2, -1))
    value = (0.5 * (df - dim - 1.0) * log_det_x - 0.5 * trace
             - (0.5 * df * dim * _LOG_2 + 0.5 * df * _logdet_spd(scale)
                + _multigammaln(0.5 * df, dim)))
    return _squeeze(value)


def invwishart_logpdf(x, df, scale):
    dim, scale = _wishart_parameters(df, scale)
    x = _wishart_quantiles(x, dim)
    scale = _lower_symmetric(scale)
    log_det_x = _logdet_spd(x)
    # trace(scale inv(x)) = sum(scale * inv(x)), both symmetric
    trace = np.sum(scale * np.linalg.inv(_lower_symmetric(x)), axis=(-2, -1))
    value = (0.5 * df * _logdet_spd(scale) - 0.5 * trace
             - (0.5 * df * dim * _LOG_2 + 0.5 * (df + dim + 1.0) * log_det_x)
             - _multigammaln(0.5 * df, dim))
    return _squeeze(value)


# {name: (logpdf, its parameters' names, the frozen object's attributes holding them)}
MULTIVARIATE = {
    "multivariate_normal": (multivariate_normal_logpdf, ("mean", "cov", "allow_singular"),
                            ("mean", "cov", "allow_singular")),
    "multivariate_t": (multivariate_t_logpdf, ("loc", "shape", "df"), ("loc", "shape", "df")),
    "dirichlet": (dirichlet_logpdf, ("alpha",), ("alpha",)),
    "wishart": (wishart_logpdf, ("df", "scale"), ("df", "scale")),
    "invwishart": (invwishart_logpdf, ("df", "scale"), ("df", "scale")),
}


def _multivariate_call(name, method, args, kwargs):
    logpdf = MULTIVARIATE[name][0]
    value = logpdf(*args, **kwargs)
    return np.exp(value) if method == "pdf" else value


class FrozenMultivariate:
    """A multivariate distribution frozen with cyad's arrays among its parameters (SciPy's
    frozen objects factorise them on creation): its logpdf and pdf."""

    def __init__(self, name, parameters):
        self._name = name
        self._parameters = parameters
        for key, value in parameters.items():
            setattr(self, key, value)

    def logpdf(self, x):
        return _multivariate_call(self._name, "logpdf", (x,), self._parameters)

    def pdf(self, x):
        return _multivariate_call(self._name, "pdf", (x,), self._parameters)

    def __repr__(self):
        return f"<cyad frozen scipy.stats.{self._name}>"


def _bound(name, method, args, kwargs, keep):
    """The arguments `keep` of a call of SciPy's `method` of a multivariate generator, by
    name (with their defaults)."""
    import inspect
    original = getattr(type(getattr(_stats, name)), method).__wrapped__
    bound = inspect.signature(original).bind(None, *args, **kwargs)
    bound.apply_defaults()
    return {n: v for n, v in bound.arguments.items() if n in keep}


# -- scipy.stats' functions ---------------------------------------------------------------------

def _scipy_zscore(a, axis=0, ddof=0, nan_policy="propagate"):
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(f"nan_policy must be one of 'propagate', 'omit', 'raise', not "
                         f"{nan_policy!r}")
    if nan_policy == "raise" and np.any(np.isnan(a)):
        raise ValueError("The input contains nan values")
    if nan_policy == "omit":
        mean = np.nanmean(a, axis=axis, keepdims=True)
        std = np.nanstd(a, axis=axis, ddof=ddof, keepdims=True)
    else:
        mean = np.mean(a, axis=axis, keepdims=True)
        std = np.std(a, axis=axis, ddof=ddof, keepdims=True)
    # a constant slice has no z-scores (SciPy's test)
    zero = std <= np.abs(np.finfo(np.float64).eps * mean)
    z = (a - mean) / _select(zero, 1.0, std)
    return _select(np.broadcast_to(zero, shape_of(z)) if _plain(zero) else zero, np.nan, z)


def _scipy_entropy(pk, qk=None, base=None, axis=0, *, nan_policy="propagate", keepdims=False):
    if base is not None and base <= 0:
        raise ValueError("`base` must be a positive number or `None`.")
    if nan_policy != "propagate":
        raise ValueError("cyad: scipy.stats.entropy takes nan_policy='propagate' on cyad's "
                         "arrays")
    pk = as_operand(pk)
    pk = pk / np.sum(pk, axis=axis, keepdims=True)
    if qk is None:
        vec = sc.entr(pk)
    else:
        qk = as_operand(qk)
        qk = qk / np.sum(qk, axis=axis, keepdims=True)
        vec = sc.rel_entr(pk, qk)
    s = np.sum(vec, axis=axis, keepdims=keepdims)
    if base is not None:
        s = s / np.log(base)
    return s


SCIPY_STATS = {"zscore": _scipy_zscore, "entropy": _scipy_entropy}


# -- installing the wrappers ---------------------------------------------------------------------

def _dispatching(original, route):
    """A method of SciPy's: `route(self, args, kwargs)` where an argument holds an engine
    array, SciPy's method otherwise."""
    from cyad._primitives.scipy_dispatch import PLAIN as _PLAIN
    from cyad._primitives.scipy_dispatch import _holds_engine_array

    @functools.wraps(original)
    def wrapper(self, *args, **kwargs):
        # (the loops inline: this look costs every plain call of SciPy's method)
        for x in args:
            if type(x) not in _PLAIN and _holds_engine_array(x):
                return route(self, args, kwargs)
        if kwargs:
            for x in kwargs.values():
                if type(x) not in _PLAIN and _holds_engine_array(x):
                    return route(self, args, kwargs)
        return original(self, *args, **kwargs)

    wrapper.__cyad_dispatching__ = True
    return wrapper


def _wrap(cls, name, route):
    original = vars(cls).get(name)
    if original is None or getattr(original, "__cyad_dispatching__", False):
        return
    from cyad._primitives.scipy_dispatch import replace
    replace(cls, name, _dispatching(original, route))


def _univariate_route(method):
    def route(self, args, kwargs):
        return call(self, method, args, kwargs)
    return route


def _generator_route(name, method):
    keep = ("x",) + MULTIVARIATE[name][1]

    def route(self, args, kwargs):
        return _multivariate_call(name, method, (), _bound(name, method, args, kwargs, keep))
    return route


def _freezing_route(name):
    def route(self, args, kwargs):
        return FrozenMultivariate(name, _bound(name, "__call__", args, kwargs,
                                               MULTIVARIATE[name][1]))
    return route


def _frozen_route(name, method):
    def route(self, args, kwargs):
        parameters = {a: getattr(self, a) for a in MULTIVARIATE[name][2]}
        return _multivariate_call(name, method, args, {**kwargs, **parameters})
    return route


def install(module):
    """Wrap scipy.stats' distribution methods (`module` is scipy.stats)."""
    from scipy.stats import _distn_infrastructure as infrastructure
    from scipy.stats import _multivariate as multivariate
    for cls, methods in ((infrastructure.rv_continuous, CONTINUOUS_METHODS),
                         (infrastructure.rv_discrete, DISCRETE_METHODS)):
        for method in methods:
            _wrap(cls, method, _univariate_route(method))
    # a distribution's own public methods (levy_stable's pdf and cdf): its name in the error
    for value in vars(module).values():
        if isinstance(value, (infrastructure.rv_continuous, infrastructure.rv_discrete)):
            for method in CONTINUOUS_METHODS + DISCRETE_METHODS:
                _wrap(type(value), method, _univariate_route(method))
    for name in MULTIVARIATE:
        generator = type(getattr(module, name))
        frozen = getattr(multivariate, f"{name}_frozen")
        for method in ("logpdf", "pdf"):
            _wrap(generator, method, _generator_route(name, method))
            _wrap(frozen, method, _frozen_route(name, method))
        _wrap(generator, "__call__", _freezing_route(name))
