"""Functions as people write them: several arguments, containers of arrays, auxiliary
outputs, answered by the operators on one flat array (operators.py) with f's other
arguments as inputs of the call, not captured state (bound.pyx)."""
