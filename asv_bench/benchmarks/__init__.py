"""cyad's asv suite: one module per operator family.

- pushforward.py: pushforward, value_and_pushforward
- derivative.py:  derivative, value_and_derivative
- gradient.py:    gradient, value_and_gradient
- jacobian.py:    jacobian, value_and_jacobian
- hessian.py:     hessian, value_gradient_and_hessian
- hvp.py:         hvp, gradient_and_hvp
- scenarios.py:   every operator on the shared test scenarios (tests/scenarios.py), per engine
- tape_replay.py: the compiled replay of tapes written by hand, beside NumPy

Every module times, measures the peak memory of, and counts the allocations per call of its
operators (the `Operator` classes), beside baselines without cyad: the primal function alone
and its derivative written by hand in NumPy (the `Baseline` class). Shared pieces are in
common.py. The second-order modules' C-function rows use examples/cython's Rosenbrock when that
example is installed in the benchmarked environment and carries a second-order function, and
are skipped otherwise.
"""
