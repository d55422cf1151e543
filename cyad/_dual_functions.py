"""NumPy functions on dual arrays (the `__array_function__` table)."""
import numpy as np

HANDLED_FUNCTIONS = {}
