"""The Python state a function reads, as a tape records it: checked before a replay.

A tape runs f once: what f reads besides x - a global or closure variable, an attribute
of the object a method is bound to - is frozen at the record. When cyad chooses the tape
engine by default (no engine= named), every call first compares that state with what it
was at the record, and records f anew when it differs, so that the default engine never
answers from stale state.

What is compared: the contents of f's closure cells and the globals its code names (and
the code of functions and lambdas inside it), followed into the functions they hold up
to DEPTH levels, and the attributes of the plain objects among them (an argument holder,
the object a method is bound to). Objects are compared by identity, numbers, strings and
tuples of them by value (a rebound name, a new number, other extra arguments are seen;
an array changed in place is the tape's own check, cyad/_tape_engine.pyx). State f
reaches otherwise (an attribute of an attribute, a function called through a container)
is not seen: there, name engine="tape" knowingly, or engine="dual".
"""
import types

DEPTH = 3

_VALUES = (int, float, complex, bool, str, bytes, type(None))


cdef class PythonState:
    """What f reads of Python state, recorded now; `changed()` compares it again."""

    cdef list _reads           # (getter, the object or value read)
    cdef set _seen

    def __init__(self, f):
        self._reads = []
        self._seen = set()
        self._visit(f, DEPTH)

    cpdef bint changed(self):
        # compiled loops: a prepared call with out= allocates nothing, this check included
        cdef Py_ssize_t i
        cdef tuple read
        for i in range(len(self._reads)):
            read = <tuple>self._reads[i]
            if not _same(read[0](), read[1]):
                return True
        return False

    def _note(self, read, depth, attributes=True):
        value = read()
        self._reads.append((read, value))
        if isinstance(value, (types.FunctionType, types.MethodType)):
            self._visit(value, depth - 1)
        elif attributes and _plain_object(value):
            for name in _attributes(value):
                self._note(lambda value=value, name=name: getattr(value, name, None), depth,
                           attributes=False)

    def _visit(self, f, depth):
        if depth <= 0 or id(f) in self._seen:
            return
        self._seen.add(id(f))
        if isinstance(f, types.MethodType):
            self._note(lambda f=f: f.__self__, depth)
            f = f.__func__
        if not isinstance(f, types.FunctionType):
            return
        for cell in f.__closure__ or ():
            self._note(lambda cell=cell: _contents(cell), depth)
        self._code(f.__code__, f.__globals__, depth)

    def _code(self, code, namespace, depth):
        for name in code.co_names:
            if name in namespace:
                self._note(lambda name=name: namespace.get(name), depth)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                self._code(const, namespace, depth)


cdef bint _same(object current, object recorded) except -1:
    cdef Py_ssize_t i
    if current is recorded:
        return True
    if type(current) is tuple and type(recorded) is tuple:
        if len(<tuple>current) != len(<tuple>recorded):
            return False
        for i in range(len(<tuple>current)):
            if not _same((<tuple>current)[i], (<tuple>recorded)[i]):
                return False
        return True
    return (isinstance(current, _VALUES) and type(current) is type(recorded)
            and current == recorded)


def _plain_object(value):
    # an instance of a Python class (not a module, function, class, array or number)
    return not isinstance(value, (types.ModuleType, type, _VALUES, tuple, list, dict)) and (
        hasattr(value, "__dict__") or hasattr(type(value), "__slots__")) and not hasattr(
        value, "__array_interface__")


def _attributes(value):
    names = list(getattr(value, "__dict__", {}))
    for cls in type(value).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
    return [n for n in names if n not in ("__dict__", "__weakref__")]


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:   # an empty cell
        return None
