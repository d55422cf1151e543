"""The README's complete Python examples (blocks that begin with an import) run as written."""
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
EXAMPLES = re.findall(r"```python\n(import .*?)```", README.read_text(), flags=re.S)


@pytest.mark.parametrize("source", EXAMPLES)
def test_example_runs(source):
    exec(compile(source, str(README), "exec"), {})


def test_readme_has_examples():
    assert EXAMPLES
