"""Custom derivative rules: `custom_derivative` makes a function cyad differentiates by
rules its author gives, for what cyad cannot see into (a call into a C library, an
iterative solver, a SciPy function with no rule).

Design. A primitive entry of the table (`cyad._primitives._table`) is already a custom
rule: bind, impl, a JVP and a VJP written in table operations, so that the engines run
it at any order. `custom_derivative(f)` makes a `CustomFunction` that carries such an
entry of its own (``__cyad_entry__``, found by `entry_of`; kept on the function rather
than in the shared table, so that defining one in a loop or a thread touches no shared
state). Called with plain arrays it is f itself. Called with an engine's arrays (dual
arrays, tracers) it hands itself to their ``__array_function__``, as NumPy does for a
NumPy function, and the engine runs its entry as it runs any primitive: ``impl`` (f) on
the values, the JVP rule for forward mode (the dual engine, the tape's forward lanes),
the VJP rule for reverse mode (the tape's gradients, and the first half of its Hessians).

The spelling is JAX's (``@f.defjvp``, ``f.defvjp``), with cyad's table in place of
JAX's residuals: a VJP rule recomputes what it needs from the primals, as
ChainRules' ``rrule`` closes over them. cyad asks for both rules rather than deriving
the VJP by transposing the JVP (JAX's way): a rule of any code gives no linear program
to transpose. An engine that needs a rule the function lacks raises TypeError naming
the function and the rule.

Rules.
- ``jvp(primals, tangents, **params) -> (out, tangent_out)``: primals are the
  positional arguments not in ``nondiff_argnames`` (the operands), params the others
  by name (and the keyword-only ones). Each tangent has its primal's shape (zeros for
  a constant operand) and tangent_out has out's shape (a tuple of them for a function
  of several outputs); the engine calls the rule once per direction. With
  ``lanes=True`` the rule takes the table's convention instead: every tangent has a
  LEADING axis of directions, or is None for a constant operand, and the rule is
  called once for all directions (faster; the rule must broadcast over that axis).
- ``vjp(primals, cotangent, **params) -> cotangents``: one cotangent per operand, of
  its shape (None for zero), from the cotangent of out.

Orders. A rule written in NumPy operations that cyad differentiates (the table's, or
other custom functions) runs on the engines' arrays, so its derivative is taken again:
every order. A rule written with code cyad cannot see into (np.asarray, a C call, an
iterative solver) is declared ``order=1``: cyad then runs it on plain values only, as a
function of its own without rules, and a second-order derivative of f raises TypeError
naming f and its declared order, never a silently wrong number.

C functions. A C function callable from Python (ctypes, cffi) gets its rules the same
way: wrap the call and its derivative calls in Python functions, f and the rules, with
``order=1`` unless the derivative C functions have rules too.
"""
import copy
import functools
import inspect
import itertools
import types

import numpy as np

from cyad._primitives._table import Constant, Primitive, is_engine_array

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)

_FORWARD = ("forward mode (engine='dual'; engine='tape' for pushforwards, derivatives and "
            "Jacobians by columns)")
_REVERSE = ("reverse mode (engine='tape' for gradients, pullbacks, Hessians, HVPs and "
            "Jacobians by rows)")


def _engine_array_in(values):
    for v in values:
        if is_engine_array(v):
            return v
    return None


def _call(function, args, kwargs):
    """A custom or value-only function's call: handed to the engines of the engine arrays
    among its arguments, as NumPy hands a NumPy function to ``__array_function__`` (each
    type in turn, with all of them: a dual array defers to a tracer of a nested
    recording); else ``function.fun`` itself."""
    first = {}
    for v in itertools.chain(args, kwargs.values()):
        if is_engine_array(v):
            first.setdefault(type(v), v)
    if not first:
        return function.fun(*args, **kwargs)
    types = tuple(first)
    for kind, x in first.items():
        result = kind.__array_function__(x, function, types, args, kwargs)
        if result is not NotImplemented:
            return result
    raise TypeError(f"cyad: no engine takes {function!r} on arrays of types "
                    f"{', '.join(t.__name__ for t in types)}")


class CustomEntry(Primitive):
    """The primitive-table entry of a custom function: an entry an engine runs like any
    primitive, with a place for what an engine builds from it once (``engine_handlers``)."""

    def __init__(self, name, namespace):
        super().__init__(name, namespace)
        self.engine_handlers = {}


class ValueOnlyEntry(Constant):
    """The constant entry of a value-only function (`value_only`)."""

    def __init__(self, name, namespace):
        super().__init__(name, namespace)
        self.engine_handlers = {}


def _qualified_name(fun):
    module = getattr(fun, "__module__", None)
    name = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or repr(fun)
    return f"{module}.{name}" if module else name


class ValueOnlyFunction:
    """A function whose result carries no derivative (positions, counts, pivots): on an
    engine's arrays it runs on their values, and an engine that records f checks its
    result on every replay, as it does NumPy's value-only functions."""

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.__cyad_entry__ = ValueOnlyEntry(_qualified_name(fun), {"impl": fun})

    def __call__(self, *args, **kwargs):
        return _call(self, args, kwargs)

    def __repr__(self):
        return f"<cyad value-only function {self.__cyad_entry__.name}>"


class EntryFunction:
    """A function of cyad's own that a table entry describes, called with the operands and
    parameters as its ``bind`` gives them: the Fourier transforms' cores, and the linear
    and product entries run on the parts of complex arrays (cyad._complex.functions). On
    plain arrays it is the entry's impl; on an engine's arrays, the engine runs the entry."""

    def __init__(self, entry, bind=None):
        self.fun = entry.impl
        own = copy.copy(entry)
        own.engine_handlers = {}
        if bind is not None:
            own.bind = bind
        self.__cyad_entry__ = own
        self.__name__ = self.__qualname__ = entry.name
        # the names an engine checks a call's arguments by: bind's
        self.__signature__ = inspect.signature(own.bind)

    def __call__(self, *args, **kwargs):
        return _call(self, args, kwargs)

    def __repr__(self):
        return f"<cyad function {self.__name__}>"


def value_only(fun):
    """fun as a function whose result carries no derivative, on every engine."""
    return ValueOnlyFunction(fun)


class CustomFunction:
    """A function with custom derivative rules; made by `custom_derivative`.

    Attributes ``fun``, ``jvp_rule`` and ``vjp_rule`` hold the function and its rules,
    ``operand_names`` the parameters that are differentiated.

    Examples
    --------
    >>> def hypot(x, y):
    ...     return np.hypot(np.asarray(x), np.asarray(y))
    >>> f = cyad.CustomFunction(hypot)
    >>> f.operand_names, f.jvp_rule is None
    (('x', 'y'), True)
    >>> @f.defjvp
    ... def hypot_jvp(primals, tangents):
    ...     (x, y), (tx, ty) = primals, tangents
    ...     r = f(x, y)
    ...     return r, (x * tx + y * ty) / r
    >>> f(3.0, 4.0), cyad.derivative(lambda t: f(3.0 * t, 4.0 * t), 1.0)
    (np.float64(5.0), 5.0)
    """

    # CustomFunction[[params], result] in annotations, as the stubs make it generic
    __class_getitem__ = classmethod(types.GenericAlias)

    def __init__(self, fun, *, order=None, nondiff_argnames=(), lanes=False, check=False,
                 rule_of=None):
        if not callable(fun):
            raise TypeError(f"cyad.custom_derivative: fun must be callable, not "
                            f"{type(fun).__name__}")
        if order not in (None, 1):
            raise ValueError(f"cyad.custom_derivative: order must be None (the rules are "
                             f"written in NumPy operations cyad differentiates: every order) "
                             f"or 1 (first order only), not {order!r}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.order = order
        self.lanes = bool(lanes)
        self.check = bool(check)
        self.jvp_rule = None
        self.vjp_rule = None
        self._checked = set()     # the operands' shapes and dtypes the rules were checked at
        self._rule_of = rule_of   # (custom function, rule name) of a first-order rule's call
        self._signature = signature = inspect.signature(fun)
        nondiff = {nondiff_argnames} if isinstance(nondiff_argnames, str) else \
            set(nondiff_argnames)
        unknown = nondiff.difference(signature.parameters)
        if unknown:
            raise ValueError(f"cyad.custom_derivative: {self._name()} has no parameter "
                             f"{sorted(unknown)[0]!r} (in nondiff_argnames)")
        self._varargs = None   # the name of *args, whose arguments are all operands
        for p in signature.parameters.values():
            if p.kind is p.VAR_KEYWORD:
                raise TypeError(f"cyad.custom_derivative: {self._name()} takes **{p.name}; "
                                "its rules need named parameters (wrap it in a function that "
                                "names them)")
            if p.kind is p.VAR_POSITIONAL:
                self._varargs = p.name
        self.operand_names = tuple(p.name for p in signature.parameters.values()
                                   if p.kind in _POSITIONAL and p.name not in nondiff)

        def bind(*args, **kwargs):
            return self._bind(*args, **kwargs)

        bind.__signature__ = signature   # the names an engine checks a call's arguments by
        self.__cyad_entry__ = CustomEntry(self._name(), {
            "bind": bind, "impl": self._impl, "jvp": self._jvp, "vjp": self._vjp})

    # -- defining the rules --------------------------------------------------------------

    def defjvp(self, rule):
        """Set the JVP rule ``rule(primals, tangents, **params) -> (out, tangent_out)``;
        returns the rule, so that it serves as a decorator."""
        if not callable(rule):
            raise TypeError(f"cyad: the JVP rule of {self._name()} must be callable")
        self.jvp_rule = rule
        return rule

    def defvjp(self, rule):
        """Set the VJP rule ``rule(primals, cotangent, **params) -> cotangents``; returns
        the rule, so that it serves as a decorator."""
        if not callable(rule):
            raise TypeError(f"cyad: the VJP rule of {self._name()} must be callable")
        self.vjp_rule = rule
        return rule

    # -- calls -------------------------------------------------------------------------

    def __call__(self, *args, **kwargs):
        return _call(self, args, kwargs)

    def __repr__(self):
        return f"<cyad custom function {self._name()}>"

    def __get__(self, instance, owner=None):
        # a method: bound like a function
        return self if instance is None else functools.partial(self, instance)

    def _name(self):
        return _qualified_name(self.fun)

    # -- the table entry -----------------------------------------------------------------

    def _bind(self, *args, **kwargs):
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{self._name()}(): {error}") from None
        bound.apply_defaults()
        arguments = bound.arguments
        operands = tuple(arguments[n] for n in self.operand_names)
        if self._varargs is not None:
            operands += tuple(arguments[self._varargs])
        for name, x in zip(self._names_of(operands), operands, strict=True):
            if not (is_engine_array(x) or isinstance(x, (np.ndarray, np.generic, int, float))):
                raise TypeError(f"cyad: argument {name!r} of {self._name()} is a "
                                f"{type(x).__name__}, not an array or a number: a parameter "
                                "that is not differentiated belongs in nondiff_argnames")
        params = {n: v for n, v in arguments.items()
                  if n not in self.operand_names and n != self._varargs}
        return operands, params

    def _names_of(self, operands):
        extra = len(operands) - len(self.operand_names)
        return self.operand_names + tuple(f"{self._varargs}[{i}]" for i in range(extra))

    def _call_arguments(self, operands, params):
        """f's positional and keyword arguments from an entry's operands and params."""
        named = len(self.operand_names)
        arguments = dict(zip(self.operand_names, operands[:named], strict=True))
        arguments.update(params)
        args, kwargs = [], {}
        for p in self._signature.parameters.values():
            if p.kind is p.VAR_POSITIONAL:
                args.extend(operands[named:])
            elif p.kind is p.KEYWORD_ONLY:
                kwargs[p.name] = arguments[p.name]
            else:
                args.append(arguments[p.name])
        return args, kwargs

    def _impl(self, *operands, **params):
        args, kwargs = self._call_arguments(operands, params)
        return self.fun(*args, **kwargs)

    def _missing(self, rule, method, mode):
        if self._rule_of is not None:
            function, of = self._rule_of
            return TypeError(f"cyad: the {of} rule of {function._name()} is declared first "
                             f"order (order=1): a second-order derivative of "
                             f"{function._name()} needs rules written in NumPy operations "
                             "that cyad differentiates")
        return TypeError(f"cyad: {self._name()} has no {rule} rule ({method}), which {mode} "
                         f"needs")

    def _jvp(self, primals, tangents, **params):
        if self.jvp_rule is None:
            raise self._missing("JVP", "defjvp", _FORWARD)
        self._check_rules(primals, params)
        if self.order == 1 and _engine_array_in(list(primals) + list(tangents)) is not None:
            # f's value through its own entry on the engine's arrays; the tangent by the rule
            # on the values, as a function the engine cannot derive again
            args, kwargs = self._call_arguments(primals, params)
            return self(*args, **kwargs), self._first_order_rule("jvp")(primals, tangents, params)
        return self._jvp_plain(primals, tangents, params)

    def _jvp_plain(self, primals, tangents, params):
        if self.lanes:
            out, tangent = self.jvp_rule(tuple(primals), tuple(tangents), **params)
            lanes = next(np.shape(t)[0] for t in tangents if t is not None)
            self._check_tangent(out, tangent, lanes)
            return out, tangent
        return self._jvp_per_lane(self.jvp_rule, primals, tangents, params)

    def _jvp_per_lane(self, rule, primals, tangents, params):
        lanes = next(np.shape(t)[0] for t in tangents if t is not None)
        outs, touts = None, []
        for lane in range(lanes):
            ts = tuple(np.zeros_like(p) if t is None else t[lane]
                       for p, t in zip(primals, tangents, strict=True))
            out, tangent = rule(tuple(primals), ts, **params)
            self._check_tangent(out, tangent, None)
            outs = out
            touts.append(tangent)
        if isinstance(outs, tuple):
            stacked = tuple(np.stack([t[i] for t in touts]) for i in range(len(outs)))
            return outs, type(outs)(*stacked) if hasattr(outs, "_fields") else stacked
        return outs, np.stack(touts)

    def _check_tangent(self, out, tangent, lanes):
        """A rule's tangent(s) against out: of its shape, or with lanes (not None) a leading
        axis of that many directions and a shape that broadcasts to out's."""
        outs = out if isinstance(out, tuple) else (out,)
        tangents = tangent if isinstance(tangent, tuple) else (tangent,)
        if len(outs) != len(tangents):
            raise ValueError(f"cyad: the JVP rule of {self._name()} returned {len(tangents)} "
                             f"tangents for {len(outs)} outputs")
        for o, t in zip(outs, tangents, strict=True):
            if t is None:
                continue
            shape, expected = np.shape(t), np.shape(o)
            if lanes is None:
                ok = shape == expected
            else:
                ok = (len(shape) >= 1 and shape[0] == lanes and len(shape) - 1 <= len(expected)
                      and all(n in (1, m) for n, m in zip(shape[:0:-1], expected[::-1])))
            if not ok:
                raise ValueError(f"cyad: the JVP rule of {self._name()} returned a tangent of "
                                 f"shape {shape} for an output of shape {expected}"
                                 + ("" if lanes is None else
                                    f" (with a leading axis of {lanes} directions, lanes=True)"))

    def _vjp(self, primals, cotangent, **params):
        if self.vjp_rule is None:
            raise self._missing("VJP", "defvjp", _REVERSE)
        self._check_rules(primals, params)
        if self.order == 1 and _engine_array_in(
                list(primals) + list(cotangent if isinstance(cotangent, tuple)
                                     else (cotangent,))) is not None:
            return self._first_order_rule("vjp")(primals, cotangent, params)
        cts = self.vjp_rule(tuple(primals), cotangent, **params)
        return self._checked_cotangents(primals, cts)

    def _checked_cotangents(self, primals, cts):
        if not isinstance(cts, (tuple, list)) or len(cts) != len(primals):
            raise ValueError(f"cyad: the VJP rule of {self._name()} must return a tuple of "
                             f"{len(primals)} cotangents, one per operand "
                             f"({', '.join(self._names_of(primals))})")
        for name, p, ct in zip(self._names_of(primals), primals, cts, strict=True):
            if ct is not None and np.shape(ct) != np.shape(p):
                raise ValueError(f"cyad: the VJP rule of {self._name()} returned a cotangent "
                                 f"of shape {np.shape(ct)} for {name!r} of shape "
                                 f"{np.shape(p)}")
        return tuple(cts)

    # -- the rules checked at their first use -------------------------------------------

    def _check_rules(self, primals, params):
        """At the first use of each shape and dtype of the operands, on any engine: both
        rules the function has, run on the operands' values, return tangents (cotangents)
        of the shapes of its outputs (operands) and of numeric dtypes, so that a rule one
        engine does not use fails where it is declared, not when another engine first needs
        it; with check=True, also the adjoint identity between them."""
        if self._rule_of is not None:
            return
        values = [_value_of(p) for p in primals]
        if _engine_array_in(values) is not None or any(
                _engine_array_in([v]) is not None for v in params.values()):
            return     # (inside a differentiation of the rules themselves: at their values)
        key = tuple((np.shape(v), np.result_type(v).str) for v in values)
        if key in self._checked:
            return
        args, kwargs = self._call_arguments(values, params)
        out = self.fun(*args, **kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        rng = np.random.default_rng(0)
        directions = [rng.standard_normal(np.shape(v)) for v in values]
        weights = [rng.standard_normal(np.shape(o)) for o in outs]
        pushed = pulled = None
        if self.jvp_rule is not None:
            tangents = [d[np.newaxis] for d in directions]
            if self.lanes:
                _, tangent = self._jvp_plain(values, tangents, params)
            else:
                _, tangent = self._jvp_per_lane(self.jvp_rule, values, tangents, params)
            pushed = [t[0] if t is not None else None
                      for t in (tangent if isinstance(tangent, tuple) else (tangent,))]
            self._check_dtypes("JVP rule", "tangent", pushed)
        if self.vjp_rule is not None:
            cotangent = tuple(weights) if isinstance(out, tuple) else weights[0]
            pulled = self._checked_cotangents(
                values, self.vjp_rule(tuple(values), cotangent, **params))
            self._check_dtypes("VJP rule", "cotangent", pulled)
        if self.check and pushed is not None and pulled is not None:
            self._check_adjoint(directions, weights, pushed, pulled)
        self._checked.add(key)

    def _check_dtypes(self, rule, what, results):
        for r in results:
            if r is not None and np.result_type(r).kind not in "biuf":
                raise TypeError(f"cyad: the {rule} of {self._name()} returned a {what} of "
                                f"dtype {np.result_type(r)}, not of numbers")

    def _check_adjoint(self, directions, weights, pushed, pulled):
        # <w, J d> = <J^T w, d> for a random direction d and weights w
        forward = sum(float(np.sum(w * t)) for w, t in zip(weights, pushed) if t is not None)
        reverse = sum(float(np.sum(c * d)) for c, d in zip(pulled, directions) if c is not None)
        scale = max(abs(forward), abs(reverse), 1e-300)
        if abs(forward - reverse) > 1e-6 * scale + 1e-12:
            raise ValueError(f"cyad: the JVP and VJP rules of {self._name()} disagree (check="
                             f"True): <w, jvp(d)> = {forward!r} but <vjp(w), d> = {reverse!r} "
                             "for a random direction d and cotangent w; one of them is wrong")

    # -- rules declared first order -------------------------------------------------------

    def _first_order_rule(self, which):
        """A rule of order 1 run on an engine's arrays: a custom function of its own, without
        rules, that the engine runs on the values; deriving it raises."""
        cache = self.__cyad_entry__.engine_handlers
        key = "first-order " + which
        if key not in cache:
            cache[key] = _FirstOrderRule(self, which)
        return cache[key]


def _value_of(x):
    # an operand's value: a tracer's or a dual array's (its own values), else x
    if not is_engine_array(x):
        return x
    value = getattr(x, "value", None)
    if value is None:
        value = getattr(x, "values", None)
    return x if value is None else value


class _FirstOrderRule:
    """A custom function's first-order rule, called on an engine's arrays."""

    def __init__(self, function, which):
        self.which = which

        def run(*arrays, count, present, params):
            # arrays: the primals, then those of the tangents (cotangents) that are not None
            primals = arrays[:count]
            rest = iter(arrays[count:])
            given = [next(rest) if p else None for p in present]
            if which == "jvp":
                return function._jvp_plain(primals, given, params)[1]
            cotangent = tuple(given) if len(given) > 1 else given[0]
            cts = function._checked_cotangents(
                primals, function.vjp_rule(tuple(primals), cotangent, **params))
            return tuple(np.zeros_like(p) if ct is None else ct
                         for p, ct in zip(primals, cts, strict=True))

        run.__name__ = run.__qualname__ = f"{function.__name__}.{which}"
        run.__module__ = function.__module__
        self.custom = CustomFunction(run, rule_of=(function, which.upper()))

    def __call__(self, primals, given, params):
        if self.which == "vjp" and not isinstance(given, tuple):
            given = (given,)
        present = tuple(g is not None for g in given)
        arrays = list(primals) + [g for g in given if g is not None]
        return self.custom(*arrays, count=len(primals), present=present, params=params)


def custom_derivative(fun=None, *, order=None, nondiff_argnames=(), lanes=False, check=False):
    """Give fun derivative rules of its own: cyad calls them where it meets fun.

    Parameters
    ----------
    fun : callable
        The function. Called with plain arrays, the result is fun itself; called with
        cyad's arrays (inside a function cyad differentiates), cyad runs fun on the values
        and its rules (`defjvp`, `defvjp`) for the derivatives.
    order : {None, 1}, optional
        None (default): the rules are written in NumPy operations cyad differentiates, so
        they serve every order. 1: the rules run on plain values only (any code: a C call,
        an iterative solver); a second-order derivative of fun raises TypeError.
    nondiff_argnames : str or tuple of str, optional
        Positional parameters that are not differentiated (flags, sizes, callables): the
        rules get them by name with the keyword-only parameters.
    lanes : bool, optional
        Whether the JVP rule takes every direction at once, as a leading axis of each
        tangent (None for a constant operand), rather than one direction per call.
    check : bool, optional
        A debug mode: at the first call of each shape, also hold the two rules to each
        other by the adjoint identity, ``<w, jvp(d)> == <vjp(w), d>`` for a random
        direction d and cotangent w (ValueError naming fun where they disagree). Without
        it, the rules' shapes and dtypes are checked there, both rules on every engine.

    Returns
    -------
    CustomFunction
        fun with ``defjvp(rule)`` and ``defvjp(rule)`` (usable as decorators):

        - ``jvp(primals, tangents, **params) -> (out, tangent_out)``, primals the
          differentiated positional arguments, each tangent of its primal's shape and
          tangent_out of out's (a tuple for a tuple of outputs);
        - ``vjp(primals, cotangent, **params) -> cotangents``, a tuple of one per primal
          (None for zero) from the cotangent of out.

        The dual engine needs the JVP rule; engine='tape' needs the VJP rule for reverse
        mode (gradients, Hessians) and the JVP rule for forward mode. A missing one raises
        TypeError naming fun and the rule, when an engine first needs it.

    Raises
    ------
    TypeError
        If fun is not callable or takes ``**kwargs``.
    ValueError
        If order is neither None nor 1, or nondiff_argnames names no parameter of fun.

    Examples
    --------
    A function cyad cannot see into (here np.asarray drops the derivative), with the
    rules of x -> x**3 in NumPy operations, so that they serve every order:

    >>> @cyad.custom_derivative
    ... def cube(x):
    ...     return np.asarray(x) ** 3
    >>> @cube.defjvp
    ... def cube_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return cube(x), 3 * x ** 2 * t
    >>> @cube.defvjp
    ... def cube_vjp(primals, cotangent):
    ...     (x,) = primals
    ...     return (3 * x ** 2 * cotangent,)
    >>> x = np.array([1.0, 2.0])
    >>> cyad.gradient(lambda x: np.sum(cube(x)), x, engine="tape")
    array([ 3., 12.])
    >>> np.diag(cyad.hessian(lambda x: np.sum(cube(x)), x))
    array([ 6., 12.])
    """
    if fun is None:
        return functools.partial(custom_derivative, order=order,
                                 nondiff_argnames=nondiff_argnames, lanes=lanes, check=check)
    return CustomFunction(fun, order=order, nondiff_argnames=nondiff_argnames, lanes=lanes,
                          check=check)
