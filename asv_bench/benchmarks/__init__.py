"""cyad's asv suite: one module per operator family.

- pushforward.py: pushforward, value_and_pushforward
- derivative.py:  derivative, value_and_derivative
- gradient.py:    gradient, value_and_gradient
- jacobian.py:    jacobian, value_and_jacobian

Every module times, measures the peak memory of, and counts the allocations per call of its
operators (the `Operator` classes), beside baselines without cyad: the primal function alone
and its derivative written by hand in NumPy (the `Baseline` class). Shared pieces are in
common.py. Second-order operators, when cyad has them, get a module of their own here, built
the same way.
"""
