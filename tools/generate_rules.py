"""Generate Cython code from cyad's tables: the rule code (cyad/_rules/rules.pxd and the replay's
rule loops) from the rule table cyad/_rules/table.py, the tape's instruction kinds
(cyad/_tape/kinds.pxd) from cyad/_tape/kind_table.py.

Run by the build (cyad/meson.build):

    python generate_rules.py TABLE TEMPLATE OUTPUT

TABLE is loaded by its path (the package around it is not built yet) and TEMPLATE, a
Tempita template (cyad/_rules/rules.pxd.tp, ...), lays out the code from `table`, the module.
For the rule table this script also turns each rule's expressions into Cython statements:
results in an order that respects their references to each other, partials written
through the output pointers of the first column's functions, rules with the same second
derivative sharing one branch.
"""
import argparse
import importlib.util
import re
from pathlib import Path

from Cython.Tempita import Template


def load_table(path):
    """The table module at `path`."""
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    return table


def _reads_and_writes(expression, results):
    # the results an expression reads, and those it writes through a pointer (&da)
    written = set(re.findall(r"&(\w+)", expression)) & set(results)
    read = set(re.findall(r"(?<![&\w])(\w+)", expression)) & set(results)
    return read, written


def first_column(results, pointers):
    """The statements computing a rule's results, given as {name: expression or None}.

    A name in `pointers` is an output pointer of the generated function: it is read and
    written as name[0], and passed on as itself where an expression writes it (&name).
    Each result is computed after those its expression reads, in the given order where
    that leaves a choice; a result whose expression is None must be written through a
    pointer by another's.
    """
    def cython(expression):
        def name(match):
            ampersand, word = match.group(1), match.group(2)
            if word not in pointers:
                return match.group(0)
            return word if ampersand else word + "[0]"
        return re.sub(r"(&)?(?<!\w)(\w+)", name, expression)

    pending = {name: expression for name, expression in results.items() if expression is not None}
    computed = set()
    statements = []
    while pending:
        name = next((name for name, expression in pending.items()
                     if _reads_and_writes(expression, results)[0] <= computed), None)
        if name is None:
            raise ValueError(f"the expressions {pending} read each other in a cycle")
        expression = pending.pop(name)
        computed |= {name} | _reads_and_writes(expression, results)[1]
        target = name + "[0]" if name in pointers else name
        statements.append(f"{target} = {cython(expression)}")
    missing = set(results) - computed
    if missing:
        raise ValueError(f"no expression computes {sorted(missing)}: {results}")
    return "; ".join(statements)


def second_column(results):
    """Statements storing a binary rule's second partials {name: expression}, but zeros."""
    return "; ".join(f"{name}[0] = {expression}" for name, expression in results.items()
                     if expression != "0.0")


def grouped(rules, expression_of):
    """(condition, expression) of the rules whose expression is not 0.0, one per distinct
    expression, in the order of the first rule that has it."""
    groups = {}
    for rule in rules:
        expression = expression_of(rule)
        if expression != "0.0":
            groups.setdefault(expression, []).append(rule.name.upper())
    return [(" or ".join(f"op == {op}" for op in ops), expression)
            for expression, ops in groups.items()]


def render(table, template):
    """The generated text from a table module and the template's text."""
    if not hasattr(table, "UNARY_RULES"):
        return Template(template).substitute(table=table)
    unary = [(rule.name.upper(), first_column({"v": rule.value, "d": rule.d}, {"d"}))
             for rule in table.UNARY_RULES]
    binary = [(rule.name.upper(),
               first_column({"v": rule.value, "da": rule.da, "db": rule.db}, {"da", "db"}))
              for rule in table.BINARY_RULES]
    binary_second = [(rule.name.upper(),
                      second_column({"daa": rule.daa, "dab": rule.dab, "dbb": rule.dbb}))
                     for rule in table.BINARY_RULES]
    return Template(template).substitute(
        table=table, unary=unary, binary=binary,
        unary_second=grouped(table.UNARY_RULES, lambda rule: rule.d2),
        binary_second=[(op, statements) for op, statements in binary_second if statements],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table")
    parser.add_argument("template")
    parser.add_argument("output")
    args = parser.parse_args()
    with open(args.template) as f:
        template = f.read()
    text = render(load_table(args.table), template)
    with open(args.output, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
