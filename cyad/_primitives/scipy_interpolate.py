"""scipy.interpolate on cyad's arrays: splines and grids evaluated, and built, inside f.

SciPy's interpolators are classes whose methods call np.asarray (and compiled loops) on
their arguments, so an engine's array never reaches an operation cyad knows. `install`
puts wrappers on their methods and constructors, and on scipy.interpolate's functions,
when scipy.interpolate is imported (as cyad._primitives.scipy_dispatch does for SciPy's
functions): a wrapper calls cyad's version when an argument is an engine's array (or the
object holds one, built inside f) and SciPy's method otherwise, so that a plain call is
SciPy's own (SciPy's method is ``__wrapped__``). The cost is a look at the arguments'
types: measured, 0.25-0.45 us a call for the wrapper itself (where a plain Python call
costs 0.05 us), against SciPy's 3-15 us for an evaluation of 10 points and 50-150 us for
a construction (asv_bench/benchmarks/scipy_interpolate.py); an evaluation method looks at
its points alone (the other parameters are orders and flags).

Evaluation is written in operations cyad differentiates, so the derivatives in the points
and in the coefficients, at every order, are the table's:

- the interval of each point is a value-only function (an engine that records f checks it
  on every replay), found by SciPy's conventions: ``x[i] <= x < x[i + 1]``, the last
  interval closed (PPoly, PPoly with decreasing breakpoints ``x[i + 1] < x <= x[i]``,
  BSpline's ``t[l] <= x < t[l + 1]`` with k <= l < n, RegularGridInterpolator); interp1d
  runs SciPy's own code for its kinds (np.searchsorted with its sides), the spline kinds
  through BSpline. At a knot the derivative is therefore that of the interval SciPy
  evaluates there;
- PPoly (CubicSpline, PchipInterpolator, Akima1DInterpolator, CubicHermiteSpline): Horner's
  rule with the interval's coefficients gathered, ``nu`` by the falling factorials of the
  powers; BPoly through PPoly.from_bernstein_basis (its coefficients constant);
- BSpline, and NdBSpline (RegularGridInterpolator's slinear, cubic and quintic): de Boor's
  recursion for the k + 1 B-splines that do not vanish at each point (the ``nu``-th
  derivative by its derivative recursion), times the gathered coefficients; a tensor
  product of one such basis per axis for NdBSpline;
- RegularGridInterpolator's linear and nearest methods and interpn: products of the
  distances to the cell's corners (multilinear weights) times the gathered values;
- ``extrapolate`` False (or out of bounds with a fill value) is np.where with NaN (the fill
  value, which may carry derivatives), 'periodic' is np.mod into the base interval.

Construction inside f, from data that carry derivatives (``y`` of CubicSpline, PPoly's
``c``, BSpline's ``c``, make_interp_spline, make_lsq_spline, interp1d, values of
RegularGridInterpolator and interpn, boundary values in bc_type, fill values): SciPy's
constructor runs first on the plain values, which validates the arguments and sets the
object up as SciPy does (knots, axes, defaults, errors); then the coefficients are computed
again from the engine's arrays, as compositions:

- CubicSpline's slopes solve SciPy's tridiagonal system (every bc_type; 'periodic' its
  cyclic system) with the right-hand side built from y as SciPy builds it; interpolating
  and least-squares B-splines solve the collocation system (and the normal equations)
  built from the same B-spline basis. These solves are the one linear entry of this
  module, `along`: a constant matrix's solve (LAPACK's banded solve; SuperLU for the
  cyclic systems) or product, along the first axis, whose transpose is the solve with the
  transposed matrix (the product by it): exact adjoints, no dense matrix;
- PchipInterpolator and Akima1DInterpolator are nonlinear in y: their slope formulas,
  whose branches (signs, zero slopes, Akima's cutoff) are value-only decisions.

The objects built this way are SciPy's classes (isinstance holds) with coefficients that
are engine arrays; their ``__call__`` and ``derivative`` (PPoly's through its own code,
BSpline's as FITPACK's splder written in compositions) work on them; methods written in
compiled code (``antiderivative``, ``integrate``, ``roots``, ``solve``) refuse them, as
any SciPy function does, naming the method.

Refused with an error naming the call: complex data, knots, breakpoints, grids and
interp1d's x that carry derivatives (they must be constants), interp1d with NaN in its
data, a BPoly whose coefficients carry derivatives, RegularGridInterpolator's recursive
methods ('pchip', '*_legacy') and interpn's 'splinef2d' (FITPACK).

Values on engine arrays equal SciPy's up to rounding (the same formulas, a different
order of operations), except RegularGridInterpolator's spline coefficients from values
that carry derivatives: SciPy solves their tensor-product system iteratively (gcrotmk,
relative tolerance 1e-5), cyad exactly, one axis at a time.
"""
import copy as _copy
import functools
import itertools
import math
import operator as _operator

import numpy as np

from cyad._primitives import scipy_dispatch
from cyad._primitives._table import Linear, is_engine_array
from cyad._primitives.custom import EntryFunction, value_only

# -- helpers ----------------------------------------------------------------------------------

# the types of the usual arguments of a plain call, passed over without a closer look
_PLAIN = scipy_dispatch.PLAIN


def _holds_engine_array(x):
    """Whether x (not of a `_PLAIN` type) is an engine's array, or a tuple (a short list)
    holding one: bc_type's pairs, fill values, coordinate tuples."""
    if is_engine_array(x):
        return True
    kind = type(x)
    if kind is tuple or (kind is list and len(x) <= 4):
        return any(type(y) not in _PLAIN and _holds_engine_array(y) for y in x)
    return False


def _values(x):
    """The plain values of x: an engine's array's (of any depth of nesting), the items of a
    tuple or list taken alike; x itself otherwise."""
    while is_engine_array(x):
        value = getattr(x, "value", None)
        x = x.values if value is None else value
    if type(x) in (tuple, list):
        return type(x)(_values(y) for y in x)
    return x


def _identity(x, *args, **kwargs):
    # (an engine-holding object's ``_asarray``: its arrays as they are)
    return x


def _as_float(x):
    """x as float64 (an engine's array keeps its derivatives)."""
    if is_engine_array(x):
        if x.dtype.kind == "c":
            raise TypeError("cyad: scipy.interpolate on complex data is not supported on "
                            "arrays carrying derivatives")
        return x if x.dtype == np.float64 else x.astype(np.float64)
    return np.asarray(x, dtype=np.float64)


def _data(x):
    """Data of an interpolator (y, c, values): an engine's array as float64, else an
    ndarray as SciPy makes it (float64 or complex128)."""
    if is_engine_array(x):
        return _as_float(x)
    x = np.asarray(x)
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64, copy=False)


def _column(v, ndim):
    """A 1-D array of one entry per point, shaped (M, 1, ...) against `ndim` axes."""
    return np.reshape(v, np.shape(v) + (1,) * (ndim - 1))


def _to_axis(out, x_ndim, axis):
    """Values of shape x_shape + trailing moved so that x's axes stand at `axis` (SciPy's
    transposition of a spline's result)."""
    if axis == 0:
        return out
    order = list(range(np.ndim(out)))
    order = order[x_ndim:x_ndim + axis] + order[:x_ndim] + order[x_ndim + axis:]
    return np.transpose(out, order)


def _refuse_complex(data, what):
    if not is_engine_array(data) and np.asarray(data).dtype.kind == "c":
        raise TypeError(f"cyad: {what} of complex data is not supported at points carrying "
                        "derivatives")


def _points(x):
    """Evaluation points: float64, flattened; with their shape."""
    if not is_engine_array(x):
        x = np.asarray(x)
        if x.dtype.kind == "c":
            raise TypeError("cyad: complex points are not supported on arrays carrying "
                            "derivatives")
    x = _as_float(x)
    return np.reshape(x, (-1,)), np.shape(x)


# -- the intervals: value-only functions ------------------------------------------------------

def _ppoly_interval_value(breaks, x):
    m = breaks.shape[0] - 1
    if breaks[-1] >= breaks[0]:     # x[i] <= x < x[i + 1], the last interval closed
        i = np.searchsorted(breaks, x, side="right") - 1
    else:                           # x[i + 1] < x <= x[i], the last interval closed
        i = m - np.searchsorted(breaks[::-1], x, side="left")
    return np.clip(i, 0, m - 1)


def _bspline_interval_value(t, x, *, k):
    n = t.shape[0] - k - 1          # t[l] <= x < t[l + 1], k <= l < n
    return np.clip(np.searchsorted(t, x, side="right") - 1, k, n - 1)


def _nearest_value(grid, x):
    i = _ppoly_interval_value(grid, x)
    distance = (x - grid[i]) / (grid[i + 1] - grid[i])
    return np.where(distance <= 0.5, i, i + 1)


def _outside_value(x, low, high):
    return (x < low) | (x > high)


def _below_value(x, low):
    return x < low


def _missing_value(xi):
    return np.any(np.isnan(xi), axis=-1)


ppoly_interval = value_only(_ppoly_interval_value)
bspline_interval = value_only(_bspline_interval_value)
nearest_index = value_only(_nearest_value)
outside = value_only(_outside_value)
below = value_only(_below_value)
missing = value_only(_missing_value)


# -- a constant matrix along the first axis: the one linear entry -----------------------------

class BandedSolve:
    """Solves with a constant banded matrix, stored as scipy.linalg.solve_banded reads it
    (``ab[upper + i - j, j] = A[i, j]``)."""

    def __init__(self, ab, lower, upper):
        self.ab, self.lower, self.upper = ab, lower, upper
        self.rows = ab.shape[1]
        self._adjoint = None

    @classmethod
    def of_entries(cls, rows, columns, values, n):
        """The n x n matrix of the given entries (repeated ones summed)."""
        rows, columns = np.asarray(rows, np.intp), np.asarray(columns, np.intp)
        lower = int(max(np.max(rows - columns, initial=0), 0))
        upper = int(max(np.max(columns - rows, initial=0), 0))
        ab = np.zeros((lower + upper + 1, n))
        np.add.at(ab, (upper + rows - columns, columns), values)
        return cls(ab, lower, upper)

    def apply(self, b):
        from scipy.linalg import solve_banded
        return solve_banded((self.lower, self.upper), self.ab, b, check_finite=False)

    def adjoint(self):
        if self._adjoint is None:
            lower, upper, n = self.lower, self.upper, self.rows
            ab = np.zeros_like(self.ab)
            for d in range(-lower, upper + 1):   # A[i, i + d] = A^T[i + d, i]
                start, stop = max(0, -d), min(n, n - d)
                ab[lower + d, start:stop] = self.ab[upper - d, start + d:stop + d]
            self._adjoint = BandedSolve(ab, upper, lower)
            self._adjoint._adjoint = self
        return self._adjoint


class SparseSolve:
    """Solves with a constant sparse matrix (SuperLU, factorized once)."""

    def __init__(self, matrix=None, *, lu=None, rows=None, trans="N"):
        if lu is None:
            from scipy.sparse import csc_array
            from scipy.sparse.linalg import splu
            lu, rows = splu(csc_array(matrix)), matrix.shape[0]
        self.lu, self.rows, self.trans = lu, rows, trans

    def apply(self, b):
        return self.lu.solve(b, trans=self.trans)

    def adjoint(self):
        return SparseSolve(lu=self.lu, rows=self.rows, trans="T" if self.trans == "N" else "N")


class Product:
    """The product by a constant sparse matrix."""

    def __init__(self, matrix):
        self.matrix = matrix.tocsr()
        self.rows = matrix.shape[0]
        self._adjoint = None

    def apply(self, b):
        return self.matrix @ b

    def adjoint(self):
        if self._adjoint is None:
            self._adjoint = Product(self.matrix.T)
            self._adjoint._adjoint = self
        return self._adjoint


def _along_bind(b, *, operator):
    return (b,), {"operator": operator}


def _along_impl(b, extra=0, *, operator):
    # (a tangent's lanes, trailing, are more columns of the same map)
    if is_engine_array(b):
        return along(b, operator=operator)
    b = np.asarray(b, dtype=np.float64)
    columns = np.ascontiguousarray(b.reshape(b.shape[0], -1))
    if columns.shape[1] == 0:
        out = np.zeros((operator.rows, 0))
    else:
        out = np.asarray(operator.apply(columns), dtype=np.float64)
    return out.reshape((operator.rows,) + b.shape[1:])


def _along_transpose(cotangent, shapes, *, operator):
    return (along(cotangent, operator=operator.adjoint()),)


def _along_coupled_axes(*, operator):
    return (0,)


_along_entry = Linear("spline_system", {"bind": _along_bind, "impl": _along_impl,
                                        "transpose": _along_transpose})
_along_entry.recorded_as = "a scipy.interpolate linear system"
_along_entry.coupled_axes = _along_coupled_axes
along = EntryFunction(_along_entry)
along.__doc__ = """operator applied along the first axis of b (its other axes: columns)."""


# -- B-spline bases ---------------------------------------------------------------------------

def basis(t, k, x, ell, nu=0):
    """The nu-th derivatives of the k + 1 B-splines of degree k (knots t) that do not
    vanish on the interval ``t[ell] <= x < t[ell + 1]``, B_{ell-k} ... B_{ell}, at the
    points x: a list of k + 1 arrays of x's shape (SciPy's de Boor recursion, _deBoor_D).
    x may be an engine's array; t and ell are plain."""
    h = [1.0]
    for j in range(1, k + 1):
        derivative = j > k - nu
        previous, h = h, [0.0] * (j + 1)
        for n in range(1, j + 1):
            right, left = t[ell + n], t[ell + n - j]
            span = right - left
            inverse = np.divide(1.0, span, out=np.zeros_like(span), where=span != 0)
            if derivative:
                w = previous[n - 1] * (j * inverse)
                h[n - 1] = h[n - 1] - w
                h[n] = w
            else:
                w = previous[n - 1] * inverse
                h[n - 1] = h[n - 1] + w * (right - x)
                h[n] = w * (x - left)
    return h


def _basis_entries(t, k, x, ell, nu=0):
    """Plain basis values at plain points: an (M, k + 1) array."""
    h = basis(t, k, x, ell, nu)
    return np.stack([np.broadcast_to(np.asarray(v, float), np.shape(x)) for v in h], axis=-1)


def _bspline_evaluate(t, c, k, x, nu, extrapolate):
    """The spline (knots t, coefficients c of shape (n, ...), degree k) or its nu-th
    derivative at the points x (1-D): (len(x), ...)."""
    nu = _operator.index(nu)
    if nu < 0:
        raise ValueError(f"derivative order must be non-negative, got nu={nu}")
    n = t.shape[0] - k - 1
    trailing = np.shape(c)[1:]
    if extrapolate == "periodic":
        x = t[k] + np.mod(x - t[k], t[n] - t[k])
        extrapolate = False
    if nu > k:
        return np.zeros(np.shape(x) + trailing)
    ell = np.asarray(bspline_interval(t, x, k=k))
    h = basis(t, k, x, ell, nu)
    start = ell - k
    result = None
    for a in range(k + 1):
        term = _column(h[a], 1 + len(trailing)) * c[start + a]
        result = term if result is None else result + term
    if not extrapolate:
        out = np.asarray(outside(x, t[k], t[n]))
        result = np.where(_column(out, 1 + len(trailing)), np.nan, result)
    return result


def _ndbspline_evaluate(t, c, k, xi, nu, extrapolate):
    """A tensor-product spline (knots t[d], degrees k[d], coefficients c of shape
    (n_0, ..., n_{d-1}, ...)) at the points xi (M, d): (M, ...)."""
    ndim = len(t)
    nu = (0,) * ndim if nu is None else tuple(_operator.index(v) for v in nu)
    if len(nu) != ndim or any(v < 0 for v in nu):
        raise ValueError(f"invalid number of derivative orders nu={nu} for ndim={ndim}.")
    trailing = np.shape(c)[ndim:]
    columns = [xi[:, d] for d in range(ndim)]
    if any(v > kd for v, kd in zip(nu, k)):
        return np.zeros((np.shape(xi)[0],) + trailing)
    starts, bases = [], []
    out = None
    for d in range(ndim):
        td, kd, x = t[d], k[d], columns[d]
        n = td.shape[0] - kd - 1
        ell = np.asarray(bspline_interval(td, x, k=kd))
        starts.append(ell - kd)
        bases.append(basis(td, kd, x, ell, nu[d]))
        if not extrapolate:
            beyond = np.asarray(outside(x, td[kd], td[n]))
            out = beyond if out is None else out | beyond
    result = None
    for corner in itertools.product(*(range(kd + 1) for kd in k)):
        weight = None
        for d, a in enumerate(corner):
            weight = bases[d][a] if weight is None else weight * bases[d][a]
        term = _column(weight, 1 + len(trailing)) * c[tuple(s + a for s, a in
                                                             zip(starts, corner))]
        result = term if result is None else result + term
    if out is not None:
        result = np.where(_column(out, 1 + len(trailing)), np.nan, result)
    return result


def _find_interval_plain(t, k, x):
    return _bspline_interval_value(t, np.atleast_1d(np.asarray(x, float)), k=k)


def interpolation_system(x, t, k, left_orders=(), right_orders=()):
    """The collocation matrix of make_interp_spline (rows: the derivatives of orders
    `left_orders` at x[0], the values at x, the derivatives `right_orders` at x[-1]) as
    a banded solve."""
    nt = t.shape[0] - k - 1
    rows, columns, entries = [], [], []

    def add(first_row, points, nu):
        ell = _find_interval_plain(t, k, points)
        values = _basis_entries(t, k, np.atleast_1d(np.asarray(points, float)), ell, nu)
        r = first_row + np.arange(len(ell))
        rows.append(np.repeat(r, k + 1))
        columns.append((ell[:, None] - k + np.arange(k + 1)).ravel())
        entries.append(values.ravel())

    for row, nu in enumerate(left_orders):
        add(row, x[:1], nu)
    add(len(left_orders), x, 0)
    for row, nu in enumerate(right_orders):
        add(nt - len(right_orders) + row, x[-1:], nu)
    return BandedSolve.of_entries(np.concatenate(rows), np.concatenate(columns),
                                  np.concatenate(entries), nt)


def periodic_system(x, t, k):
    """make_interp_spline's periodic system (SciPy's full one: continuity of the first k - 1
    derivatives across the ends, then the values at x), solved by sparse LU."""
    from scipy.sparse import coo_array
    n = x.shape[0]
    nt = n + k - 1
    rows, columns, entries = [], [], []
    for i in range(k - 1):
        first = _basis_entries(t, k, x[:1], np.array([k]), i + 1)[0]
        last = _basis_entries(t, k, x[-1:], np.array([nt]), i + 1)[0][:-1]
        rows += [np.full(k + 1, i), np.full(k, i)]
        columns += [np.arange(k + 1), np.arange(nt - k, nt)]
        entries += [first, -last]
    ell = _find_interval_plain(t, k, x)
    values = _basis_entries(t, k, x, ell, 0)
    rows.append(np.repeat(np.arange(n) + k - 1, k + 1))
    columns.append((ell[:, None] - k + np.arange(k + 1)).ravel())
    entries.append(values.ravel())
    matrix = coo_array((np.concatenate(entries), (np.concatenate(rows),
                                                  np.concatenate(columns))), shape=(nt, nt))
    return SparseSolve(matrix)


# -- boundary conditions ----------------------------------------------------------------------

def _derivative_conditions(bc_type, trailing):
    """make_interp_spline's bc_type as ((orders, values) at the start, at the end), values
    as given (they may carry derivatives), and whether it is periodic."""
    if bc_type is None or (isinstance(bc_type, str) and bc_type in ("not-a-knot",
                                                                     "periodic")):
        return ((), ()), ((), ()), bc_type == "periodic"
    if isinstance(bc_type, str):
        left = right = bc_type
    else:
        left, right = bc_type

    def parsed(conditions):
        if conditions is None:
            return (), ()
        if isinstance(conditions, str):
            return ((1,), (np.zeros(trailing),)) if conditions == "clamped" else \
                ((2,), (np.zeros(trailing),))
        orders, values = zip(*conditions)
        return tuple(int(o) for o in orders), tuple(values)

    return parsed(left), parsed(right), False


def _rows_of(values, trailing):
    """Boundary values, each of the data's trailing shape, stacked (rows of a rhs)."""
    return np.stack([np.broadcast_to(_as_float(v) if is_engine_array(v) else
                                     np.asarray(v, float), trailing) for v in values])


# -- B-splines built inside f -----------------------------------------------------------------

def interpolating_coefficients(x, y, t, k, bc_type=None):
    """make_interp_spline's coefficients of y (interpolation axis first) with knots t."""
    trailing = np.shape(y)[1:]
    (lo, lv), (ro, rv), periodic = _derivative_conditions(bc_type, trailing)
    n = x.shape[0]
    if k == 0 or (k == 1 and t.shape[0] == n + 2 and not lo and not ro
                  and np.array_equal(t, np.r_[x[0], x, x[-1]])):
        return y
    if periodic:
        # the last value is the first (SciPy reads y[:-1])
        rhs = np.concatenate([np.zeros((k - 1,) + trailing), y[:-1], y[:1]])
        return along(rhs, operator=periodic_system(x, t, k))
    pieces = []
    if lo:
        pieces.append(_rows_of(lv, trailing))
    pieces.append(y)
    if ro:
        pieces.append(_rows_of(rv, trailing))
    rhs = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
    return along(rhs, operator=interpolation_system(x, t, k, lo, ro))


def lsq_coefficients(x, y, t, k, w):
    """make_lsq_spline's coefficients: the normal equations, B^T W^2 B c = B^T W^2 y."""
    from scipy.sparse import csr_array, diags_array
    m = x.shape[0]
    nt = t.shape[0] - k - 1
    ell = _find_interval_plain(t, k, x)
    values = _basis_entries(t, k, x, ell, 0)
    rows = np.repeat(np.arange(m), k + 1)
    columns = (ell[:, None] - k + np.arange(k + 1)).ravel()
    design = csr_array((values.ravel(), (rows, columns)), shape=(m, nt))
    weights = np.ones(m) if w is None else np.asarray(w, float) ** 2
    weighted = (design.T @ diags_array(weights)).tocsr()
    normal = (weighted @ design).tocoo()
    system = BandedSolve.of_entries(normal.row, normal.col, normal.data, nt)
    return along(along(y, operator=Product(weighted)), operator=system)


def _constant(value, what, call):
    """Refuse `value` (x, knots, weights of a construction) carrying derivatives."""
    if _holds_engine_array(value):
        raise TypeError(f"cyad: {call}'s {what} must be constants; its data may carry "
                        "derivatives")


def _with_engine_data(spline, name, value):
    """`spline` holding an engine's array as its `name` (``_c``, ``_values``)."""
    setattr(spline, name, value)
    spline._asarray = _identity
    return spline


def make_interp_spline(original, x, y, k=3, t=None, bc_type=None, axis=0,
                       check_finite=True):
    _constant((x, t), "x and t", "make_interp_spline")
    spline = original(x, _values(y), k, t, _values(bc_type), axis, check_finite)
    if not (is_engine_array(y) or _holds_engine_array(bc_type)):
        return spline
    y = _data(y)
    y = np.moveaxis(y, spline.axis, 0)
    x = np.asarray(_values(x), float)
    c = interpolating_coefficients(x, y, spline._t, spline.k, bc_type)
    return _with_engine_data(spline, "_c", c)


def make_lsq_spline(original, x, y, t, k=3, w=None, axis=0, check_finite=True, **kwargs):
    _constant((x, t, w), "x, t and w", "make_lsq_spline")
    spline = original(x, _values(y), t, k, w, axis, check_finite, **kwargs)
    if not is_engine_array(y):
        return spline
    y = np.moveaxis(_data(y), spline.axis, 0)
    c = lsq_coefficients(np.asarray(x, float), y, spline._t, spline.k, w)
    return _with_engine_data(spline, "_c", c)


def bspline_init(original, self, t, c, k, extrapolate=True, axis=0):
    if is_engine_array(t):
        raise TypeError("cyad: a BSpline's knots must be constants; its coefficients may "
                        "carry derivatives")
    original(self, t, _values(c), k, extrapolate, axis)
    _with_engine_data(self, "_c", np.moveaxis(_data(c), self.axis, 0))


def bspline_construct_fast(original, cls, t, c, k, extrapolate=True, axis=0):
    spline = original(cls, _values(t), _values(c), k, extrapolate, axis)
    return _with_engine_data(spline, "_c", c) if is_engine_array(c) else spline


def bspline_call(original, self, x, nu=0, extrapolate=None):
    if extrapolate is None:
        extrapolate = self.extrapolate
    _refuse_complex(self._c, "a BSpline")
    points, shape = _points(x)
    out = _bspline_evaluate(self._t, self._c, self.k, points, nu, extrapolate)
    out = np.reshape(out, shape + np.shape(self._c)[1:])
    return _to_axis(out, len(shape), self.axis)


def bspline_derivative(original, self, nu=1):
    """BSpline.derivative of engine coefficients: FITPACK's splder as compositions (the
    differences of the coefficients over the knots' spans, SciPy's padding kept)."""
    if nu < 0:
        raise TypeError("cyad: BSpline.antiderivative (derivative with nu < 0) is not "
                        "supported when the coefficients carry derivatives")
    t, c, k = self._t, self._c, self.k
    if nu > k:
        raise ValueError(f"Order of derivative (n = {nu!r}) must be <= order of spline "
                         f"(k = {k!r})")
    trailing = np.shape(c)[1:]
    pad = t.shape[0] - np.shape(c)[0]
    if pad > 0:
        c = np.concatenate([c, np.zeros((pad,) + trailing)])
    for _ in range(nu):
        span = t[k + 1:-1] - t[1:-k - 1]
        if np.any(span == 0):
            raise ValueError("The spline has internal repeated knots and is not "
                             f"differentiable {nu} times")
        c = (c[1:-1 - k] - c[:-2 - k]) * (k / _column(span, 1 + len(trailing)))
        c = np.concatenate([c, np.zeros((k,) + trailing)])
        t, k = t[1:-1], k - 1
    return type(self).construct_fast(t, c, k, extrapolate=self.extrapolate, axis=self.axis)


# -- piecewise polynomials --------------------------------------------------------------------

def _ppoly_evaluate(c, breaks, x, nu, extrapolate):
    """The piecewise polynomial (c of shape (k + 1, m, ...)) or its nu-th derivative at
    the points x (1-D): (len(x), ...)."""
    nu = _operator.index(nu)
    if nu < 0:
        raise ValueError("Order of derivative cannot be negative")
    order = np.shape(c)[0]
    trailing = np.shape(c)[2:]
    if extrapolate == "periodic":
        x = breaks[0] + np.mod(x - breaks[0], breaks[-1] - breaks[0])
        extrapolate = False
    if nu >= order:
        return np.zeros(np.shape(x) + trailing)
    i = np.asarray(ppoly_interval(breaks, x))
    local = c[:, i]                                   # (k + 1, M, ...)
    s = _column(x - breaks[i], 1 + len(trailing))
    result = None
    for power in range(order - 1, nu - 1, -1):        # Horner's rule in s
        factor = math.perm(power, nu)
        term = local[order - 1 - power]
        term = term * float(factor) if factor != 1 else term
        result = term if result is None else result * s + term
    if not extrapolate:
        low, high = min(breaks[0], breaks[-1]), max(breaks[0], breaks[-1])
        out = np.asarray(outside(x, low, high))
        result = np.where(_column(out, 1 + len(trailing)), np.nan, result)
    return result


def _ppoly_like(self, c):
    """self (a PPoly set up by SciPy on plain values) holding the engine's coefficients c
    (shape (k + 1, m, ...))."""
    return _with_engine_data(self, "_c", c)


def ppoly_call(original, self, x, nu=0, extrapolate=None):
    from scipy.interpolate import BPoly, PPoly
    if isinstance(self, BPoly):
        if is_engine_array(self._c):
            raise TypeError("cyad: a BPoly whose coefficients carry derivatives is not "
                            "supported (build a PPoly)")
        converted = PPoly.from_bernstein_basis(self, extrapolate=self.extrapolate)
        converted.axis = self.axis
        return ppoly_call(original, converted, x, nu, extrapolate)
    if extrapolate is None:
        extrapolate = self.extrapolate
    _refuse_complex(self._c, "a PPoly")
    points, shape = _points(x)
    out = _ppoly_evaluate(self._c, self._x, points, nu, extrapolate)
    out = np.reshape(out, shape + np.shape(self._c)[2:])
    return _to_axis(out, len(shape), self.axis)


def ppoly_init(original, self, c, x, extrapolate=None, axis=0):
    if is_engine_array(x):
        raise TypeError("cyad: a PPoly's breakpoints must be constants; its coefficients "
                        "may carry derivatives")
    original(self, _values(c), x, extrapolate, axis)
    c = _data(c)
    if axis != 0:
        c = np.moveaxis(np.moveaxis(c, axis + 1, 0), axis + 1, 0)
    _ppoly_like(self, c)


def ppoly_construct_fast(original, cls, c, x, extrapolate=None, axis=0):
    ppoly = original(cls, _values(c), x, extrapolate, axis)
    return _ppoly_like(ppoly, c) if is_engine_array(c) else ppoly


def _prepared(x, y, axis):
    """x, its steps, and y (interpolation axis first, float64) of a cubic interpolator
    that SciPy has validated."""
    x = np.asarray(_values(x), dtype=np.float64)
    y = _as_float(y)
    y = np.moveaxis(y, axis % np.ndim(y), 0)
    return x, np.diff(x), y


def hermite_coefficients(dx, y, dydx):
    """CubicHermiteSpline's coefficients (4, n - 1, ...) of values y and slopes dydx."""
    dxr = _column(dx, np.ndim(y))
    slope = np.diff(y, axis=0) / dxr
    t = (dydx[:-1] + dydx[1:] - 2 * slope) / dxr
    return np.stack([t / dxr, (slope - dydx[:-1]) / dxr - t, dydx[:-1], y[:-1]])


def hermite_init(original, self, x, y, dydx, axis=0, extrapolate=None):
    _constant(x, "x", type(self).__name__)
    original(self, x, _values(y), _values(dydx), axis, extrapolate)
    x, dx, y = _prepared(x, y, axis)
    dydx = np.moveaxis(_as_float(dydx), axis % np.ndim(y), 0)
    _ppoly_like(self, hermite_coefficients(dx, y, dydx))


def _cubic_conditions(bc_type, trailing):
    """CubicSpline's bc_type as two conditions: 'not-a-knot', 'periodic' or (order, value)
    (the value as given: it may carry derivatives)."""
    if isinstance(bc_type, str):
        bc_type = (bc_type, bc_type)
    conditions = []
    for bc in bc_type:
        if isinstance(bc, str):
            if bc == "clamped":
                bc = (1, np.zeros(trailing))
            elif bc == "natural":
                bc = (2, np.zeros(trailing))
        else:
            bc = (int(bc[0]), bc[1])
        conditions.append(bc)
    return conditions


def cubic_spline_slopes(x, dx, y, bc_type):
    """CubicSpline's slopes at x: SciPy's system for y (interpolation axis first)."""
    n = x.shape[0]
    trailing = np.shape(y)[1:]
    dxr = _column(dx, np.ndim(y))
    slope = np.diff(y, axis=0) / dxr
    start, end = _cubic_conditions(bc_type, trailing)
    if n == 2:
        if isinstance(start, str):
            start = (1, slope[0])
        if isinstance(end, str):
            end = (1, slope[0])
    if n == 3 and start == "not-a-knot" and end == "not-a-knot":
        rows = [0, 0, 1, 1, 1, 2, 2]
        columns = [0, 1, 0, 1, 2, 1, 2]
        entries = [1, 1, dx[1], 2 * (dx[0] + dx[1]), dx[0], 1, 1]
        b = np.stack([2 * slope[0], 3 * (dxr[0] * slope[1] + dxr[1] * slope[0]),
                      2 * slope[1]])
        return along(b, operator=BandedSolve.of_entries(rows, columns, entries, 3))
    if n == 3 and start == "periodic":
        t = np.sum(slope / dxr, axis=0) / np.sum(1.0 / dxr, axis=0)
        return np.broadcast_to(t, (n,) + trailing)
    if start == "periodic":
        return _periodic_slopes(dx, dxr, slope)
    middle = 3 * (dxr[1:] * slope[:-1] + dxr[:-1] * slope[1:])
    i = np.arange(1, n - 1)
    rows = [i, i, i]
    columns = [i, i + 1, i - 1]
    entries = [2 * (dx[:-1] + dx[1:]), dx[:-1], dx[1:]]
    if start == "not-a-knot":
        d = x[2] - x[0]
        first = ((dxr[0] + 2 * d) * dxr[1] * slope[0] + dxr[0] ** 2 * slope[1]) / d
        rows.append([0, 0])
        columns.append([0, 1])
        entries.append([dx[1], d])
    elif start[0] == 1:
        first = _boundary_value(start[1], trailing)
        rows.append([0])
        columns.append([0])
        entries.append([1.0])
    else:
        first = -0.5 * _boundary_value(start[1], trailing) * dx[0] ** 2 + 3 * (y[1] - y[0])
        rows.append([0, 0])
        columns.append([0, 1])
        entries.append([2 * dx[0], dx[0]])
    if end == "not-a-knot":
        d = x[-1] - x[-3]
        last = (dxr[-1] ** 2 * slope[-2] + (2 * d + dxr[-1]) * dxr[-2] * slope[-1]) / d
        rows.append([n - 1, n - 1])
        columns.append([n - 1, n - 2])
        entries.append([dx[-2], d])
    elif end[0] == 1:
        last = _boundary_value(end[1], trailing)
        rows.append([n - 1])
        columns.append([n - 1])
        entries.append([1.0])
    else:
        last = 0.5 * _boundary_value(end[1], trailing) * dx[-1] ** 2 + 3 * (y[-1] - y[-2])
        rows.append([n - 1, n - 1])
        columns.append([n - 1, n - 2])
        entries.append([2 * dx[-1], dx[-1]])
    b = np.concatenate([np.reshape(first, (1,) + trailing) * np.ones((1,) + trailing),
                        middle, np.reshape(last, (1,) + trailing) * np.ones((1,) + trailing)])
    system = BandedSolve.of_entries(np.concatenate(rows), np.concatenate(columns),
                                    np.concatenate(entries), n)
    return along(b, operator=system)


def _boundary_value(value, trailing):
    if is_engine_array(value):
        return np.broadcast_to(_as_float(value), trailing)
    return np.broadcast_to(np.asarray(value, float), trailing)


def _periodic_slopes(dx, dxr, slope):
    """The periodic spline's slopes: SciPy's cyclic tridiagonal system of n - 1 unknowns
    (the last slope is the first), solved whole."""
    from scipy.sparse import coo_array
    size = dx.shape[0]
    i = np.arange(size)
    previous = (i - 1) % size
    rows = np.concatenate([i, i, i])
    columns = np.concatenate([i, previous, (i + 1) % size])
    entries = np.concatenate([2 * (dx[previous] + dx), dx, dx[previous]])
    matrix = coo_array((entries, (rows, columns)), shape=(size, size))
    b = 3 * (dxr * slope[previous] + dxr[previous] * slope)
    s = along(b, operator=SparseSolve(matrix))
    return np.concatenate([s, s[:1]])


def cubic_spline_init(original, self, x, y, axis=0, bc_type="not-a-knot", extrapolate=None):
    _constant(x, "x", type(self).__name__)
    original(self, x, _values(y), axis, _values(bc_type), extrapolate)
    x, dx, y = _prepared(x, y, axis)
    if y.size == 0:
        return
    s = cubic_spline_slopes(x, dx, y, bc_type)
    _ppoly_like(self, hermite_coefficients(dx, y, s))


# -- PCHIP and Akima: nonlinear in y ----------------------------------------------------------

def _interior_flat_value(mk):
    smk = np.sign(mk)
    return (smk[1:] != smk[:-1]) | (mk[1:] == 0) | (mk[:-1] == 0)


def _edge_choice_value(d, m0, m1):
    mask = np.sign(d) != np.sign(m0)
    mask2 = (np.sign(m0) != np.sign(m1)) & (np.abs(d) > 3.0 * np.abs(m0))
    return np.where(mask, 1, np.where(mask2, 2, 0))


interior_flat = value_only(_interior_flat_value)
edge_choice = value_only(_edge_choice_value)


def _pchip_edge(h0, h1, m0, m1):
    d = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1)
    choice = np.asarray(edge_choice(d, m0, m1))
    return np.where(choice == 1, 0.0, np.where(choice == 2, 3.0 * m0, d))


def pchip_slopes(x, y):
    """PchipInterpolator's slopes (SciPy's _find_derivatives), its branches value-only."""
    hk = _column(np.diff(x), np.ndim(y))
    mk = np.diff(y, axis=0) / hk
    if np.shape(y)[0] == 2:
        return np.broadcast_to(mk, np.shape(y)) * 1.0
    flat = np.asarray(interior_flat(mk))
    w1 = 2 * hk[1:] + hk[:-1]
    w2 = hk[1:] + 2 * hk[:-1]
    low = np.where(flat, 1.0, mk[:-1])
    high = np.where(flat, 1.0, mk[1:])
    mean = (w1 / low + w2 / high) / (w1 + w2)
    inner = np.where(flat, 0.0, 1.0 / mean)
    first = _pchip_edge(hk[0], hk[1], mk[0], mk[1])
    last = _pchip_edge(hk[-1], hk[-2], mk[-1], mk[-2])
    return np.concatenate([first[None], inner, last[None]])


def pchip_init(original, self, x, y, axis=0, extrapolate=None):
    _constant(x, "x", type(self).__name__)
    original(self, x, _values(y), axis, extrapolate)
    x, dx, y = _prepared(x, y, axis)
    _ppoly_like(self, hermite_coefficients(dx, y, pchip_slopes(x, y)))


def _akima_defined_value(f12):
    top = np.max(f12) if f12.size > 0 else -np.inf
    return f12 > 1e-9 * top


akima_defined = value_only(_akima_defined_value)


def akima_slopes(dx, y, method):
    """Akima1DInterpolator's slopes (akima and makima), the cutoff value-only."""
    dxr = _column(dx, np.ndim(y))
    if np.shape(y)[0] == 2:
        return np.broadcast_to((y[1:] - y[:-1]) / dxr, np.shape(y)) * 1.0
    inner = np.diff(y, axis=0) / dxr
    m1 = 2.0 * inner[0] - inner[1]
    m0 = 2.0 * m1 - inner[0]
    m_2 = 2.0 * inner[-1] - inner[-2]
    m_1 = 2.0 * m_2 - inner[-1]
    m = np.concatenate([m0[None], m1[None], inner, m_2[None], m_1[None]])
    t = 0.5 * (m[3:] + m[:-3])
    dm = np.abs(np.diff(m, axis=0))
    if method == "makima":
        pm = np.abs(m[1:] + m[:-1])
        f1 = dm[2:] + 0.5 * pm[2:]
        f2 = dm[:-2] + 0.5 * pm[:-2]
    else:
        f1 = dm[2:]
        f2 = dm[:-2]
    f12 = f1 + f2
    defined = np.asarray(akima_defined(f12))
    safe = np.where(defined, f12, 1.0)
    return np.where(defined, m[1:-2] + (f2 / safe) * (m[2:-1] - m[1:-2]), t)


def akima_init(original, self, x, y, axis=0, *, method="akima", extrapolate=None):
    _constant(x, "x", type(self).__name__)
    original(self, x, _values(y), axis, method=method, extrapolate=extrapolate)
    x, dx, y = _prepared(x, y, axis)
    _ppoly_like(self, hermite_coefficients(dx, y, akima_slopes(dx, y, method)))


# -- interp1d ---------------------------------------------------------------------------------

def _broadcast_fill(value, shape):
    """A fill value as interp1d's setter makes it: raveled, of one entry or of `shape`'s."""
    value = _as_float(value) if is_engine_array(value) else np.asarray(value)
    if np.size(value) != 1 and np.shape(value) != shape:
        value = np.ones(shape) * value
    return np.reshape(value, (-1,))


def interp1d_init(original, self, x, y, kind="linear", axis=-1, copy=True, bounds_error=None,
                  fill_value=np.nan, assume_sorted=False):
    if is_engine_array(x):
        raise TypeError("cyad: interp1d's x must be constant; its y and fill_value may carry "
                        "derivatives")
    original(self, x, _values(y), kind, axis, copy, bounds_error, _values(fill_value),
             assume_sorted)
    if np.isnan(self.x).any() or np.isnan(_values(self._y)).any():
        raise TypeError("cyad: interp1d with NaN in its data is not supported on arrays "
                        "carrying derivatives")
    if is_engine_array(y):
        y = _data(y)
        if not assume_sorted:
            order = np.argsort(np.asarray(x), kind="mergesort")
            y = np.take(y, order, axis=axis)
        self.y = y
        moved = np.moveaxis(y, self._y_axis, 0)
        self._y = np.reshape(moved, (np.shape(moved)[0], -1))
        if self._kind == "spline":
            spline = _copy.copy(self._spline)
            c = interpolating_coefficients(self.x, self._y, spline._t, spline.k)
            self._spline = _with_engine_data(spline, "_c", c)
        if _is_extrapolate(fill_value) and kind == "previous":
            self._fill_value_above = np.reshape(np.take(y, -1, axis=self.axis), (-1,))
        elif _is_extrapolate(fill_value) and kind == "next":
            self._fill_value_below = np.reshape(np.take(y, 0, axis=self.axis), (-1,))
    if not self._extrapolate and _holds_engine_array(fill_value):
        shape = self.y.shape[:self.axis] + self.y.shape[self.axis + 1:] or (1,)
        if isinstance(fill_value, tuple) and len(fill_value) == 2:
            below, above = fill_value
        else:
            below = above = fill_value
        self._fill_value_below = _broadcast_fill(below, shape)
        self._fill_value_above = _broadcast_fill(above, shape)
        self._fill_value_orig = fill_value
    self._cyad_engine = True


def _is_extrapolate(fill_value):
    return isinstance(fill_value, str) and fill_value == "extrapolate"


def interp1d_call(original, self, x):
    points, shape = _points(x)
    y = self._call(self, points)
    if not self._extrapolate:
        low = np.asarray(below(points, self.x[0]))
        high = np.asarray(outside(points, -np.inf, self.x[-1]))
        if self.bounds_error:
            values = np.asarray(_values(points))
            if np.any(low):
                raise ValueError(f"A value ({values[np.argmax(values < self.x[0])]}) in x_new "
                                 "is below the interpolation range's minimum value "
                                 f"({self.x[0]}).")
            if np.any(high):
                raise ValueError(f"A value ({values[np.argmax(values > self.x[-1])]}) in x_new "
                                 "is above the interpolation range's maximum value "
                                 f"({self.x[-1]}).")
        if np.shape(y)[0] > 0:
            # (np.interp's result, of 1-D data, has no axis of columns)
            y = np.where(_column(low, np.ndim(y)), self._fill_value_below, y)
            y = np.where(_column(high, np.ndim(y)), self._fill_value_above, y)
    y = np.reshape(y, shape + self._y_extra_shape)
    if self._y_axis != 0 and shape != ():
        nx, ny = len(shape), len(self._y_extra_shape)
        order = (list(range(nx, nx + self._y_axis)) + list(range(nx))
                 + list(range(nx + self._y_axis, nx + ny)))
        y = np.transpose(y, order)
    return y


# -- regular grids ----------------------------------------------------------------------------

def _coordinates(xi, ndim):
    """xi as SciPy's _ndim_coords_from_arrays makes it, for engine arrays: (..., ndim)."""
    if isinstance(xi, tuple) and len(xi) == 1:
        xi = xi[0]
    if isinstance(xi, tuple):
        shape = np.broadcast_shapes(*(np.shape(p) for p in xi))
        return np.stack([np.broadcast_to(_as_float(p), shape) for p in xi], axis=-1)
    if not is_engine_array(xi):
        from scipy.interpolate._interpnd import _ndim_coords_from_arrays
        return np.asarray(_ndim_coords_from_arrays(xi, ndim=ndim), dtype=float)
    xi = _as_float(xi)
    if xi.ndim == 1:
        xi = np.reshape(xi, (-1, ndim))
    return xi


_RECURSIVE = ("slinear_legacy", "cubic_legacy", "quintic_legacy", "pchip")


def _grid_spline(rgi, method):
    """The NdBSpline of `method` for rgi's values (its coefficients from the values, one
    axis at a time, when they carry derivatives)."""
    values = rgi._values
    if not is_engine_array(values):
        return rgi._spline if method == rgi.method else rgi._construct_spline(method)
    spline = rgi._spline if method == rgi.method and rgi._spline is not None \
        else _knots_of(rgi._grid, np.shape(values), rgi._SPLINE_DEGREE_MAP[method])
    if is_engine_array(spline._c):
        return spline
    c = values
    for d, (t, k) in enumerate(zip(spline.t, spline.k)):
        system = interpolation_system(np.asarray(rgi._grid[d]), t, k)
        c = np.moveaxis(along(np.moveaxis(c, d, 0), operator=system), 0, d)
    return _with_engine_data(_copy.copy(spline), "_c", c)


def _knots_of(grid, shape, k):
    """An NdBSpline with make_ndbspl's knots for a grid (its coefficients zero)."""
    from scipy.interpolate._ndbspline import make_ndbspl
    return make_ndbspl(grid, np.zeros(shape), k)


def rgi_init(original, self, points, values, method="linear", bounds_error=True,
             fill_value=np.nan, **kwargs):
    engine_values = is_engine_array(values)
    if _holds_engine_array(points):
        raise TypeError("cyad: a grid's points must be constants; its values and fill_value "
                        "may carry derivatives")
    if engine_values and method in _RECURSIVE:
        raise TypeError(f"cyad: RegularGridInterpolator's method {method!r} (SciPy's "
                        "per-point recursive evaluation) is not supported with values "
                        "carrying derivatives; use 'cubic' or 'quintic'")
    plain = _values(values)
    if engine_values and method in self._SPLINE_METHODS_ndbspl:
        # the spline SciPy would build is built again from the engine's values
        # (SciPy's spline of the values is not built: cyad solves for it exactly)
        original(self, points, plain, "linear", bounds_error, _values(fill_value))
        self.method = method
        self._validate_grid_dimensions(points, method)
    else:
        original(self, points, plain, method, bounds_error, _values(fill_value), **kwargs)
    if engine_values:
        values = _as_float(values)
        if self._descending_dimensions:
            values = np.flip(values, axis=self._descending_dimensions)
        _with_engine_data(self, "_values", values)
        if method in self._SPLINE_METHODS_ndbspl:
            self._spline = None
            self._spline = _grid_spline(self, method)
    if is_engine_array(fill_value):
        self.fill_value = _as_float(fill_value)
    self._cyad_engine = True


def _grid_intervals(grid, x):
    """RegularGridInterpolator's cell of each point along one axis, and the distance into
    it (a length-one axis: its one point, distance 0)."""
    if grid.shape[0] == 1:
        index = np.zeros(np.shape(x), dtype=np.intp)
        return index, index, x * 0.0
    i = np.asarray(ppoly_interval(grid, x))
    return i, i + 1, (x - grid[i]) / (grid[i + 1] - grid[i])


def rgi_call(original, self, xi, method=None, *, nu=None):
    method = self.method if method is None else method
    if method not in self._ALL_METHODS:
        raise ValueError(f"Method '{method}' is not defined")
    if nu is not None and method not in self._SPLINE_METHODS_ndbspl:
        raise ValueError(f"Can only compute derivatives for methods "
                         f"{self._SPLINE_METHODS_ndbspl}, got {method =}.")
    if method in _RECURSIVE:
        raise TypeError(f"cyad: RegularGridInterpolator's method {method!r} (SciPy's "
                        "per-point recursive evaluation) is not supported on arrays carrying "
                        "derivatives; use 'cubic' or 'quintic'")
    grid = self._grid
    ndim = len(grid)
    _refuse_complex(self._values, "a RegularGridInterpolator")
    xi = _coordinates(xi, ndim)
    if np.shape(xi)[-1] != ndim:
        raise ValueError("The requested sample points xi have dimension "
                         f"{np.shape(xi)[-1]} but this RegularGridInterpolator has "
                         f"dimension {ndim}")
    xi_shape = np.shape(xi)
    xi = np.reshape(xi, (-1, ndim))
    columns = [xi[:, d] for d in range(ndim)]
    if method != self.method and method in self._SPLINE_METHODS:
        self._validate_grid_dimensions(grid, method)
    if self.bounds_error:
        for d, p in enumerate(columns):
            if np.any(np.asarray(outside(p, grid[d][0], grid[d][-1]))):
                raise ValueError(
                    f"One of the requested xi is out of bounds in dimension {d}")
    values = self._values
    trailing = np.shape(values)[ndim:]
    if method in ("linear", "nearest"):
        result = None
        if method == "nearest":
            index = tuple(np.zeros(np.shape(p), np.intp) if g.shape[0] == 1 else
                          np.asarray(nearest_index(g, p)) for g, p in zip(grid, columns))
            result = values[index]
        else:
            cells = [_grid_intervals(g, p) for g, p in zip(grid, columns)]
            for corner in itertools.product((0, 1), repeat=ndim):
                index = tuple(cell[a] for cell, a in zip(cells, corner))
                weight = None
                for cell, a in zip(cells, corner):
                    w = cell[2] if a else 1.0 - cell[2]
                    weight = w if weight is None else weight * w
                term = values[index] * _column(weight, 1 + len(trailing))
                result = term if result is None else result + term
    else:
        spline = _grid_spline(self, method)
        result = _ndbspline_evaluate(spline.t, spline._c, spline.k, xi, nu,
                                     spline.extrapolate)
    if not self.bounds_error and self.fill_value is not None:
        out = None
        for g, p in zip(grid, columns):
            beyond = np.asarray(outside(p, g[0], g[-1]))
            out = beyond if out is None else out | beyond
        result = np.where(_column(out, 1 + len(trailing)), self.fill_value, result)
    nans = np.asarray(missing(xi))
    if np.any(nans):
        result = np.where(_column(nans, 1 + len(trailing)), np.nan, result)
    return np.reshape(result, xi_shape[:-1] + trailing)


def ndbspline_init(original, self, t, c, k, *, extrapolate=None):
    original(self, t, _values(c), k, extrapolate=extrapolate)
    _with_engine_data(self, "_c", _data(c))


def ndbspline_call(original, self, xi, *, nu=None, extrapolate=None):
    extrapolate = self.extrapolate if extrapolate is None else bool(extrapolate)
    _refuse_complex(self._c, "an NdBSpline")
    ndim = len(self.t)
    xi = _coordinates(xi, ndim)
    if np.shape(xi)[-1] != ndim:
        raise ValueError(f"Shapes: xi.shape={np.shape(xi)} and ndim={ndim}")
    shape = np.shape(xi)
    out = _ndbspline_evaluate(self.t, self._c, self.k, np.reshape(xi, (-1, ndim)), nu,
                              extrapolate)
    return np.reshape(out, shape[:-1] + np.shape(self._c)[ndim:])


def interpn(original, points, values, xi, method="linear", bounds_error=True,
            fill_value=np.nan):
    if method == "splinef2d":
        raise TypeError("cyad: interpn's method 'splinef2d' (FITPACK) is not supported on "
                        "arrays carrying derivatives; use 'cubic'")
    from scipy.interpolate import RegularGridInterpolator
    interpolator = RegularGridInterpolator(points, values, method=method,
                                           bounds_error=bounds_error, fill_value=fill_value)
    return interpolator(xi)


# -- the wrappers -----------------------------------------------------------------------------

def _dispatching(original, version, holds=None, bound=False):
    """SciPy's method (function) `original`, calling cyad's `version(original, ...)` when an
    argument is an engine's array or `holds(self)` says the object holds one."""

    if bound:
        @functools.wraps(original)
        def wrapper(self, *args, **kwargs):
            # (the loops inline: this look costs every plain call of SciPy's method)
            if holds is not None and holds(self):
                return version(original, self, *args, **kwargs)
            for x in args:
                if type(x) not in _PLAIN and _holds_engine_array(x):
                    return version(original, self, *args, **kwargs)
            if kwargs:
                for x in kwargs.values():
                    if type(x) not in _PLAIN and _holds_engine_array(x):
                        return version(original, self, *args, **kwargs)
            return original(self, *args, **kwargs)
    else:
        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            for x in args:
                if type(x) not in _PLAIN and _holds_engine_array(x):
                    return version(original, *args, **kwargs)
            if kwargs:
                for x in kwargs.values():
                    if type(x) not in _PLAIN and _holds_engine_array(x):
                        return version(original, *args, **kwargs)
            return original(*args, **kwargs)

    wrapper.__cyad_dispatching__ = True
    return wrapper


def _evaluating(original, version, holds):
    """SciPy's evaluation method `original` (``__call__(self, x, ...)``, where only the
    points x may be an engine's array), calling cyad's `version(original, ...)` when they
    are one or `holds(self)` says the object holds one: a wrapper of the least work, as it
    costs every plain evaluation."""

    @functools.wraps(original)
    def wrapper(self, x, *args, **kwargs):
        if (type(x) in _PLAIN or not _holds_engine_array(x)) and not holds(self):
            return original(self, x, *args, **kwargs)
        return version(original, self, x, *args, **kwargs)

    wrapper.__cyad_dispatching__ = True
    return wrapper


def _holds_c(self):
    return type(self._c) is not np.ndarray


def _marked(self):
    return self.__dict__.get("_cyad_engine", False)


def _methods(interpolate):
    """(class, attribute, cyad's version, holds): the methods that get a wrapper."""
    from scipy.interpolate._interpolate import _PPolyBase
    from scipy.interpolate._ndbspline import NdBSpline
    return [
        (_PPolyBase, "__call__", ppoly_call, _holds_c),
        (interpolate.PPoly, "__init__", ppoly_init, None),
        (interpolate.CubicHermiteSpline, "__init__", hermite_init, None),
        (interpolate.CubicSpline, "__init__", cubic_spline_init, None),
        (interpolate.PchipInterpolator, "__init__", pchip_init, None),
        (interpolate.Akima1DInterpolator, "__init__", akima_init, None),
        (interpolate.BSpline, "__init__", bspline_init, None),
        (interpolate.BSpline, "__call__", bspline_call, _holds_c),
        (interpolate.BSpline, "derivative", bspline_derivative, _holds_c),
        (interpolate.interp1d, "__init__", interp1d_init, None),
        (interpolate.interp1d, "__call__", interp1d_call, _marked),
        (interpolate.RegularGridInterpolator, "__init__", rgi_init, None),
        (interpolate.RegularGridInterpolator, "__call__", rgi_call, _marked),
        (NdBSpline, "__init__", ndbspline_init, None),
        (NdBSpline, "__call__", ndbspline_call, _holds_c),
    ]


_CLASS_METHODS = (("_PPolyBase", "construct_fast", ppoly_construct_fast),
                  ("BSpline", "construct_fast", bspline_construct_fast))

FUNCTIONS = {"make_interp_spline": make_interp_spline, "make_lsq_spline": make_lsq_spline,
             "interpn": interpn}


def install(module):
    """Put the wrappers on scipy.interpolate's classes, and in the module its functions'."""
    if module.__name__ != "scipy.interpolate":
        return
    from scipy.interpolate import _interpolate
    for cls, name, version, holds in _methods(module):
        original = getattr(cls, name)
        if getattr(original, "__cyad_dispatching__", False):
            continue
        scipy_dispatch.replace(cls, name, _evaluating(original, version, holds)
                               if name == "__call__" else
                               _dispatching(original, version, holds, bound=True))
    for owner, name, version in _CLASS_METHODS:
        cls = getattr(_interpolate, owner, None) or getattr(module, owner)
        original = cls.__dict__[name].__func__
        if getattr(original, "__cyad_dispatching__", False):
            continue
        scipy_dispatch.replace(cls, name, classmethod(_dispatching(original, version, bound=True)))
    for name, version in FUNCTIONS.items():
        original = getattr(module, name, None)
        if original is None or getattr(original, "__cyad_dispatching__", False):
            continue
        scipy_dispatch.replace(module, name, _dispatching(original, version))
