"""Every operator on the shared test scenarios (tests/scenarios.py), prepared with out=, per
engine: the benchmark a new engine gets by adding its name to the scenarios' ENGINES.

The scenarios are small (n <= 19): these rows measure the per-call overhead of each operator,
function kind and engine; the operator modules beside this one measure how calls scale with n.
"""
import sys
from pathlib import Path

import cyad

from .common import Call, buffers_like, skip

# the scenarios live with the tests, which they also serve
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from scenarios import (  # noqa: E402
    ENGINES,
    OPERATORS,
    SCENARIOS,
    TRACING_ENGINES,
    cotangent,
    tangent,
)

_SCENARIOS = {s.name: s for s in SCENARIOS}
_OPERATORS = {op.name: op for op in OPERATORS}


class Scenario(Call):
    params = [list(_SCENARIOS), list(_OPERATORS), ["python", "c"], ENGINES]
    param_names = ["scenario", "operator", "kind", "engine"]

    def setup(self, scenario, operator, kind, engine):
        s, op = _SCENARIOS[scenario], _OPERATORS[operator]
        if not op.applies(s):
            skip(f"{operator} does not apply to {scenario}")
        if kind != "python" and kind not in s.kinds:
            skip(f"{scenario} has no {kind} form")
        if kind != "python" and engine in TRACING_ENGINES:
            skip(f"engine {engine!r} traces Python callables")
        f, x = s.function(kind), s.x
        run, prepare = getattr(cyad, operator), getattr(cyad, f"prepare_{operator}")
        if op.takes_tangent:
            dx = cotangent(s) if op.cotangent else tangent(s)
            prep = prepare(f, x, dx, engine=engine)
            out = buffers_like(run(f, x, dx, prep=prep, engine=engine))
            self.call = lambda: run(f, x, dx, prep=prep, out=out, engine=engine)
        else:
            prep = prepare(f, x, engine=engine)
            out = buffers_like(run(f, x, prep=prep, engine=engine))
            self.call = lambda: run(f, x, prep=prep, out=out, engine=engine)
