"""The Python state a function reads, as a tape records it: guarded before a replay.

A tape runs f once: what f reads besides x is frozen at the record. When cyad chooses the
tape engine by default (no engine= named), every call first compares that state with what
it was at the record, and records f anew when it differs, so that the default engine never
answers from stale state. `PythonState` walks what f can reach, from f itself:

    a function          its closure cells, its default arguments (positional and keyword),
                        and - for a function of the user's code, not of a library - the
                        globals its code names (nested functions', lambdas' and
                        comprehensions' code included)
    a bound method      the object it is bound to, and its function
    a Bound             (f with other arguments: cyad/_arguments/bound.pyx) its function;
                        the arrays of the arguments are inputs of every call, not state
    functools.partial   its function, arguments and keywords
    a module            (reached as a global of the user's code, not a library's) the
                        attributes the code names (`config.SCALE`)
    a class             of the user's code: its attributes (class-level numbers, methods,
                        a property's getter, a static or class method's function)
    an object           of a Python class: its attributes (instance dict and slots) and its
                        class (a callable object's __call__ among its methods)
    a tuple, list, dict their items (a list's and a dict's length too; subclasses alike);
                        a set by value
    an ndarray          its contents (compared by the engine with the arrays the tape took
                        as constants: `arrays`)
    a number, a string, None, a NumPy scalar: compared by value

Each read is a `_Read`: where the value was found (a cell, a dict's key, a list's index, an
attribute) and what it was. A read is compared by identity, then (a number, a string) by
value; the reads of a container follow its own, so they run on the container recorded.
What f reaches otherwise - the state of an object of a C extension (a random generator, a
file), what a library's code reads of its own module - is compared by identity only. A state
larger than BUDGET reads, or deeper than DEPTH objects, is not watched: `complete` is False,
and a default tape hands f to the dual engine.
"""
import functools
import site
import sys
import sysconfig
import types

import numpy as np

from cyad import _hints
from cyad._arguments.bound import Bound

from cpython.object cimport PyObject
from cpython.dict cimport PyDict_GetItemWithError
from cpython.list cimport PyList_Check, PyList_GET_SIZE
from cpython.tuple cimport PyTuple_GET_SIZE

cdef extern from "Python.h":
    PyObject* PyCell_GET(object cell)
    PyObject* _PyType_Lookup(object cls, object name)   # (no binding: a classmethod as is)
    PyObject* PyList_GET_ITEM(object lst, Py_ssize_t i)
    Py_ssize_t PyDict_GET_SIZE(object d)

DEPTH = 12         # objects followed from f, one inside another
BUDGET = 100_000   # reads watched at most

_VALUES = (int, float, complex, bool, str, bytes, type(None), np.generic)
_INSTALLED = tuple({*site.getsitepackages(), site.getusersitepackages(),
                    sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})

cdef enum How:
    CELL      # a closure cell's contents
    KEY       # a dict's value at `key` (a namespace of globals, a module's, an instance's)
    ITEM      # a list's item at `index`
    LENGTH    # a list's or dict's length, `index`
    ATTR      # an attribute `key` of `holder` (a slot)
    CLASS     # a class's attribute `key`, as its dict holds it
    WHOLE     # `holder` itself, by value (a set)

cdef object _MISSING = object()


cdef class _Read:
    cdef object holder       # where the value is read (a cell, a dict, a list, an object)
    cdef object key          # the dict key or attribute name
    cdef Py_ssize_t index    # the list index; a LENGTH read's length
    cdef How how
    cdef object recorded     # what was read
    cdef str path            # where, as f's code would name it (`settings['scale']`)
    cdef bint by_value       # compared by value where not the same object

    cdef object current(self):
        cdef PyObject* found
        if self.how == CELL:
            found = PyCell_GET(self.holder)
        elif self.how == KEY:
            found = PyDict_GetItemWithError(self.holder, self.key)
        elif self.how == ITEM:
            if self.index >= PyList_GET_SIZE(self.holder):
                return _MISSING
            found = PyList_GET_ITEM(self.holder, self.index)
        elif self.how == CLASS:
            found = _PyType_Lookup(self.holder, self.key)
        elif self.how == ATTR:
            return getattr(self.holder, self.key, _MISSING)
        else:
            return self.holder
        return _MISSING if found == NULL else <object>found

    cdef bint changed(self) except -1:
        if self.how == LENGTH:
            return self.index != (PyList_GET_SIZE(self.holder) if PyList_Check(self.holder)
                                  else PyDict_GET_SIZE(self.holder))
        current = self.current()
        if current is self.recorded:
            return False
        if self.how == WHOLE:
            return not current == self.recorded
        return not (self.by_value and _equal(current, self.recorded))


cdef class PythonState:
    """What f reaches of Python state, recorded now; `changed()` compares it again."""

    cdef list _reads
    cdef dict _seen              # id -> the object (held, so that no id is reused)
    cdef readonly list arrays    # the ndarrays reached: their contents are the engine's check
    cdef readonly bint complete  # all f reaches is watched (within BUDGET and DEPTH)
    cdef _Read last_changed      # the read the last `changed()` found changed

    def __init__(self, f):
        self._reads = []
        self._seen = {}
        self.arrays = []
        self.complete = True
        self.last_changed = None
        self._object(f, DEPTH, getattr(f, "__qualname__", "f"))

    cpdef bint changed(self) except -1:
        # compiled loops: a prepared call with out= allocates nothing, this check included
        cdef Py_ssize_t i
        for i in range(len(self._reads)):
            if (<_Read>self._reads[i]).changed():
                self.last_changed = <_Read>self._reads[i]
                return True
        return False

    @property
    def what_changed(self):
        """Where the last comparison found the state changed (None if it found none)."""
        return None if self.last_changed is None else self.last_changed.path

    @property
    def reads(self):
        """How many reads a call compares (the arrays' contents besides)."""
        return len(self._reads)

    cdef _read(self, How how, holder, key, Py_ssize_t index, value, int depth, str path,
               names=()):
        if len(self._reads) >= BUDGET:
            self.complete = False
            return
        cdef _Read read = _Read()
        read.how, read.holder, read.key, read.index = how, holder, key, index
        read.recorded = value
        read.by_value = how == WHOLE or isinstance(value, _VALUES + (tuple,))
        read.path = path
        self._reads.append(read)
        if how in (WHOLE, LENGTH) or isinstance(value, _VALUES):
            return
        if isinstance(value, types.ModuleType):
            if not _library(value.__name__):
                space = vars(value)
                for name in names:
                    if name in space:
                        self._read(KEY, space, name, 0, space[name], depth - 1,
                                   f"{path}.{name}")
            return
        self._object(value, depth - 1, path)

    cdef _object(self, value, int depth, str path):
        if id(value) in self._seen:
            return
        if depth <= 0:
            self.complete = False
            return
        self._seen[id(value)] = value
        if isinstance(value, np.ndarray):
            self.arrays.append(value)
        elif isinstance(value, tuple):
            for i, item in enumerate(value):
                if not isinstance(item, _VALUES):   # (a number of it is compared with it)
                    self._object(item, depth - 1, f"{path}[{i}]")
        elif isinstance(value, list):
            self._read(LENGTH, value, None, len(value), None, depth, f"len({path})")
            for i, item in enumerate(value):
                self._read(ITEM, value, None, i, item, depth, f"{path}[{i}]")
        elif isinstance(value, dict):
            self._dict(value, depth, path)
        elif isinstance(value, (set, frozenset)):
            self._read(WHOLE, value, None, 0, frozenset(value), depth, path)
        elif isinstance(value, types.MethodType):
            self._object(value.__self__, depth - 1, "self")
            self._object(value.__func__, depth - 1, f"{path}.__func__")
        elif isinstance(value, types.FunctionType):
            self._function(value, depth)
        elif isinstance(value, functools.partial):
            self._object(value.func, depth - 1, f"{path}.func")
            self._object(value.args, depth - 1, f"{path}.args")
            self._object(value.keywords, depth - 1, f"{path}.keywords")
        elif isinstance(value, (staticmethod, classmethod)):
            self._object(value.__func__, depth - 1, path)
        elif isinstance(value, property):
            self._object(value.fget, depth - 1, path)
        elif isinstance(value, Bound):   # its leaves are inputs of each call, not state
            self._object(value.function, depth - 1, path)
        elif isinstance(value, type):
            if not _library(value.__module__):
                for name, member in list(vars(value).items()):
                    if not (name.startswith("__") and name.endswith("__")):
                        self._read(CLASS, value, name, 0, member, depth,
                                   f"{value.__qualname__}.{name}")
                    elif name == "__call__":
                        self._object(member, depth - 1, f"{value.__qualname__}.__call__")
        elif _plain_object(value):
            if isinstance(getattr(value, "__dict__", None), dict):
                self._dict(vars(value), depth, path, attributes=True)
            for name in _slots(type(value)):
                self._read(ATTR, value, name, 0, getattr(value, name, _MISSING), depth,
                           f"{path}.{name}")
            self._object(type(value), depth - 1, type(value).__qualname__)

    cdef _dict(self, object value, int depth, str path, bint attributes=False):
        self._read(LENGTH, value, None, len(value), None, depth,
                   f"vars({path})" if attributes else f"len({path})")
        for key in list(value):
            self._read(KEY, value, key, 0, value[key], depth,
                       f"{path}.{key}" if attributes else f"{path}[{key!r}]")

    cdef _function(self, f, int depth):
        name = f.__qualname__
        for variable, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
            self._read(CELL, cell, None, 0, _contents(cell), depth, variable)
        if f.__defaults__:
            self._read(ATTR, f, "__defaults__", 0, f.__defaults__, depth,
                       f"{name}.__defaults__")
        if f.__kwdefaults__:
            self._read(ATTR, f, "__kwdefaults__", 0, f.__kwdefaults__, depth,
                       f"{name}.__kwdefaults__")
        if not _library(f.__globals__.get("__name__")):
            self._code(f.__code__, f.__globals__, depth)

    cdef _code(self, code, dict namespace, int depth):
        names = code.co_names
        for name in names:
            if name in namespace:
                self._read(KEY, namespace, name, 0, namespace[name], depth, name, names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                self._code(const, namespace, depth)


cdef bint _equal(object current, object recorded) except -1:
    # the same value: of one type, equal (NaN equal to NaN); tuples item by item, each
    # the same object or the same value
    cdef Py_ssize_t i
    if type(current) is not type(recorded):
        return False
    if isinstance(recorded, tuple):
        if PyTuple_GET_SIZE(current) != PyTuple_GET_SIZE(recorded):
            return False
        for i in range(PyTuple_GET_SIZE(recorded)):
            if not ((<tuple>current)[i] is (<tuple>recorded)[i]
                    or _equal((<tuple>current)[i], (<tuple>recorded)[i])):
                return False
        return True
    if not isinstance(recorded, _VALUES):   # (a mutable object is watched by identity)
        return False
    if isinstance(recorded, (float, complex, np.inexact)):
        return bool(current == recorded) or (current != current and recorded != recorded)
    return bool(current == recorded)


def _library(module_name):
    """Whether a module is a library's (NumPy, SciPy, cyad, Python's own, or one installed
    into site-packages), whose code's globals are not the user's state."""
    if not module_name:
        return False
    if module_name.partition(".")[0] in _hints.LIBRARIES:
        return True
    path = getattr(sys.modules.get(module_name), "__file__", None) or ""
    return path.startswith(_INSTALLED)


def _plain_object(value):
    # an instance of a Python class (not a module, function, class, array or number, nor
    # an array of cyad's: a tracer of an earlier recording is a stale value, not state)
    return not isinstance(value, (types.ModuleType, type, _VALUES, tuple, list, dict)) and (
        hasattr(value, "__dict__") or hasattr(type(value), "__slots__")) and not hasattr(
        value, "__array_interface__") and not hasattr(type(value), "__cyad_value__")


def _slots(cls):
    names = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
    return [n for n in names if n not in ("__dict__", "__weakref__")]


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:   # an empty cell
        return _MISSING
