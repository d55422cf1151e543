"""The nogil path's overhead and the Python-level overhead of a C-level function.

Run: python -P asv_bench/nogil_overhead.py
Builds asv_bench/nogil/nogil_overhead.pyx against the installed cyad, then prints, for the
copy y <- x at n = 10 and 100: value_and_pushforward_nogil in a nogil loop against the same
copies by hand through a function pointer; the cost of the call through the FunctionWrapper
against a direct call; and from Python, a prepared value_and_pushforward(out=) of the C
copy against an empty compiled function taking the same arguments.
"""
import importlib.util
import pathlib
import shutil
import subprocess
import sys
import tempfile
import timeit

import numpy as np

import cyad

BUILD = """
import sys
from Cython.Build import cythonize
from setuptools import Extension, setup
setup(name="nogil_overhead",
      ext_modules=cythonize([Extension("nogil_overhead", ["nogil_overhead.pyx"],
                                       include_dirs=[sys.argv[2]], extra_compile_args=["-O3"])],
                            include_path=[sys.argv[1]], compiler_directives={"language_level": 3}),
      script_args=["build_ext", "--inplace"])
"""


def build(folder):
    shutil.copy(pathlib.Path(__file__).with_name("nogil") / "nogil_overhead.pyx", folder)
    subprocess.run([sys.executable, "-c", BUILD, cyad.get_include(), np.get_include()],
                   cwd=folder, check=True, capture_output=True)
    path = next(pathlib.Path(folder).glob("nogil_overhead*.so"))
    spec = importlib.util.spec_from_file_location("nogil_overhead", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def best(fn, number=200_000, repeat=7):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main():
    with tempfile.TemporaryDirectory() as folder:
        module = build(folder)
        print("nogil loops (ns per call; best of 7 runs of 1e6 calls):")
        for n in (10, 100):
            runs = np.array([module.per_call(n, 1_000_000) for _ in range(7)]).min(axis=0) * 1e9
            cyad_ns, hand_ns, wrapper_ns, direct_ns = runs
            print(f"  n = {n:3d}: value_and_pushforward_nogil {cyad_ns:6.1f}, by hand {hand_ns:6.1f}"
                  f" (ratio {cyad_ns / hand_ns:.2f}); f through the FunctionWrapper {wrapper_ns:6.1f},"
                  f" direct call {direct_ns:6.1f}")
        print("from Python (ns per call):")
        f = module.copy_function()
        empty = module.empty
        for n in (10, 100):
            x, dx, y = np.arange(n, dtype=float), np.ones(n), np.zeros(n)
            pair = (np.zeros(n), np.zeros(n))
            prep = cyad.prepare_pushforward(f, x, dx, y=y)
            value_and_pushforward = cyad.value_and_pushforward
            t_cyad = best(lambda: value_and_pushforward(f, x, dx, y=y, prep=prep, out=pair))
            t_empty = best(lambda: empty(f, x, dx, y=y, prep=prep, out=pair))
            print(f"  n = {n:3d}: prepared value_and_pushforward(out=) {t_cyad * 1e9:6.0f}; an empty"
                  f" compiled function with the same arguments {t_empty * 1e9:6.0f}"
                  f" (ratio {t_cyad / t_empty:.2f})")


if __name__ == "__main__":
    main()
