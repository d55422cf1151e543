import ctypes
import gc
import importlib.machinery
import importlib.util
import itertools
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

HERE = pathlib.Path(__file__).resolve().parent


def _allocations(fn, loops):
    """Allocator calls made while running fn `loops` times under memray.

    The loop itself allocates nothing (itertools.repeat yields one cached object).
    memray makes CPython create a frame object for every Python-level call while
    it tracks, and a bound method for every call of a C method (to report it to the
    tracker); those records (native stack through call_trace /
    _PyFrame_GetFrameObject, or PyCMethod_New called by trace_call_function) are
    the tracker's own and are left out, as are other threads' that happen to run
    meanwhile: those counted run under this loop, or in cyad's helper threads.
    """
    import memray

    skipped = {memray.AllocatorType.FREE, memray.AllocatorType.MUNMAP,
               memray.AllocatorType.PYMALLOC_FREE}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.bin")
        with memray.Tracker(path, trace_python_allocators=True, native_traces=True):
            for _ in itertools.repeat(None, loops):
                fn()
        count = 0
        # whether a stack's allocations count, per stack (resolving one costs far more than
        # counting: the loop repeats the same few stacks)
        counted = {}
        for record in memray.FileReader(path).get_allocation_records():
            if record.allocator in skipped:
                continue
            key = (record.stack_id, record.native_stack_id, record.native_segment_generation)
            if key not in counted:
                counted[key] = _counted([frame[0] for frame in record.stack_trace()],
                                        [frame[0] for frame in record.native_stack_trace()])
            if counted[key]:
                count += record.n_allocations
    return count


def _counted(python, native):
    # fn's own (its thread's: under this loop; cyad's helper threads running its parts), not
    # the tracker's, nor another thread's that happens to run meanwhile (a library's
    # background work)
    if "call_trace" in native or "_PyFrame_GetFrameObject" in native:
        return False
    if any(frame == "PyCMethod_New" and caller == "trace_call_function"
           for frame, caller in zip(native, native[1:])):
        return False
    return "_allocations" in python or "cyad_helper" in native


@pytest.fixture
def allocations_per_call():
    """Heap allocations per call of fn: counted at two loop lengths and subtracted."""
    pytest.importorskip("memray")

    def measure(fn, short=1000, long=2000):
        fn()
        return (_allocations(fn, long) - _allocations(fn, short)) / (long - short)

    return measure


# -- Cython code built against the installed cyad, once per session ------------------------

# Cython's default directives, as in a user's module (the .pxd files must not depend on
# the directives of the module that cimports them).
_CYTHONIZE = """
import sys
from Cython.Build import cythonize
from setuptools import Extension, setup

setup(
    name=sys.argv[1],
    ext_modules=cythonize([Extension(sys.argv[1], [sys.argv[1] + ".pyx"],
                                     include_dirs=[sys.argv[3]])],
                          include_path=[sys.argv[2]], compiler_directives={"language_level": 3}),
    script_args=["build_ext", "--inplace"],
)
"""


def _load(name, folder):
    path = next(folder / (name + suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES
                if (folder / (name + suffix)).exists())
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(command, cwd, what, environment=None):
    # tools installed beside this Python (meson, ninja) are found even without an activated venv
    env = dict(os.environ, PATH=os.pathsep.join([os.path.dirname(sys.executable),
                                                 os.environ.get("PATH", "")]),
               **(environment or {}))
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        pytest.fail(f"{what} failed:\n{done.stdout}\n{done.stderr}")


def _built_once(tmp_path_factory, name, build):
    """The folder `build(folder)` fills, built once for the whole run: pytest-xdist's
    workers share it (the first builds it, holding a lock; the others wait and load it)."""
    import fcntl

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent      # the run's folder, above each worker's own
    folder = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "built").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            (folder / "built").touch()
    return folder


# The tests' own builds are unoptimised: they check what the code does, not how fast it runs.
_UNOPTIMISED = {"CFLAGS": "-O0"}


@pytest.fixture(scope="session")
def c_hooks(tmp_path_factory):
    """tests/c_hooks.pyx, compiled with cythonize against cyad.get_include()."""
    import cyad
    import numpy

    def build(folder):
        shutil.copy(HERE / "c_hooks.pyx", folder)
        _run([sys.executable, "-c", _CYTHONIZE, "c_hooks", cyad.get_include(),
              numpy.get_include()], folder, "building c_hooks.pyx", _UNOPTIMISED)

    return _load("c_hooks", _built_once(tmp_path_factory, "c_hooks", build))


@pytest.fixture(scope="session")
def example(tmp_path_factory):
    """The user-style project examples/cython, built with its own meson.build."""
    def build(folder):
        shutil.copytree(HERE.parent / "examples" / "cython", folder / "cython")
        meson = [sys.executable, "-m", "mesonbuild.mesonmain"]
        _run(meson + ["setup", "build", "-Doptimization=0"], folder / "cython",
             "meson setup of the example")
        _run(meson + ["compile", "-C", "build"], folder / "cython", "building the example")

    folder = _built_once(tmp_path_factory, "example", build)
    return _load("cyad_examples", folder / "cython" / "build")


@pytest.fixture(scope="module", autouse=True)
def _release_module_memory():
    """After each module, JAX's compiled references are dropped (the modules' caches keep
    the arrays they computed, not the executables) and freed memory is handed back to the
    system: a worker then holds about what its largest module needs, not the sum of all."""
    yield
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.clear_caches()
    gc.collect()
    _LIBC_TRIM(0)


# glibc keeps freed memory for reuse unless asked to return it (elsewhere: nothing to do)
_LIBC_TRIM = getattr(ctypes.CDLL(None), "malloc_trim", lambda pad: 0)
