"""The complete Python examples (blocks that begin with an import) of the README and of the
user guide (docs/) run as written."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
EXAMPLES = [(page, source) for page in PAGES
            for source in re.findall(r"```python\n(import .*?)```", page.read_text(), flags=re.S)]


@pytest.mark.parametrize("page, source", EXAMPLES,
                         ids=[f"{page.relative_to(ROOT)}-{i}" for i, (page, _) in
                              enumerate(EXAMPLES)])
def test_example_runs(page, source):
    if "cyad.ipopt.problem" in source:
        pytest.importorskip("cyipopt")      # the optional extra ipopt
    exec(compile(source, str(page), "exec"), {})


@pytest.mark.parametrize("page", [ROOT / "README.md", ROOT / "docs" / "guide" / "scipy.md"])
def test_page_has_examples(page):
    assert any(found == page for found, _ in EXAMPLES)
