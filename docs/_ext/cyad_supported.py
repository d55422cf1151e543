"""The ``supported-functions`` directive: the table of every function cyad differentiates,
one table per module, generated from cyad's rule and primitive tables at build time."""
import itertools

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

COLUMNS = (("function", 3), ("kind", 3), ("orders", 2), ("complex", 1), ("note", 3))


def _table(rows):
    group = nodes.tgroup(cols=len(COLUMNS))
    for _, width in COLUMNS:
        group += nodes.colspec(colwidth=width)

    def line(cells, literal_first):
        row = nodes.row()
        for i, text in enumerate(cells):
            paragraph = nodes.paragraph()
            paragraph += nodes.literal(text=text) if literal_first and i == 0 else nodes.Text(text)
            row += nodes.entry("", paragraph)
        return row

    head = nodes.thead()
    head += line([name for name, _ in COLUMNS], False)
    body = nodes.tbody()
    for row in rows:
        body += line([f"{row.module}.{row.name}", row.kind, row.orders or "—",
                      row.complex or "—", row.note], True)
    group += head
    group += body
    table = nodes.table()
    table += group
    return table


class SupportedFunctions(SphinxDirective):
    def run(self):
        import scipy.linalg  # noqa: F401  (SciPy's functions are named by their public paths)
        import scipy.special  # noqa: F401

        from cyad._reporting.supported import supported_functions

        result = []
        for module, rows in itertools.groupby(supported_functions(), lambda row: row.module):
            rows = list(rows)
            result.append(nodes.rubric(text=f"{module} ({len(rows)} functions)"))
            result.append(_table(rows))
        return result


def setup(app):
    app.add_directive("supported-functions", SupportedFunctions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
