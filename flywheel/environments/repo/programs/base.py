"""A correct small program, its tests, and the catalogue of defects the generator can inject into it.

Every defect is a text edit (`old` occurs exactly once in the module source) whose inverse is the
known fix; a "missing feature" removes one function's body (its signature and docstring stay).
Tests are plain `test_*` functions with `assert`, run by flywheel's own runner (no pytest in the
sandbox). The catalogue's own test checks that every defect fails the hidden tests and the
correct program passes them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

KINDS = ("off-by-one", "wrong operator", "missing case", "swapped arguments", "wrong constant", "missing feature")


@dataclass(frozen=True)
class Bug:
    """One injectable defect: replace `old` by `new` in the module; `func` is where it lives."""

    kind: str
    func: str
    old: str
    new: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Bug.kind must be one of {KINDS}, got {self.kind!r}")


@dataclass(frozen=True)
class Program:
    """A correct module `<name>.py`, its visible tests and its hidden tests, with injectable bugs."""

    name: str
    summary: str
    source: str
    visible_test: str
    hidden_test: str
    bugs: tuple[Bug, ...] = ()
    features: tuple[str, ...] = field(default=())
    """Functions (or `Class.method`) whose body a "missing feature" task removes."""

    @property
    def module_path(self) -> str:
        return f"{self.name}.py"

    @property
    def visible_path(self) -> str:
        return f"tests/test_{self.name}.py"

    @property
    def hidden_path(self) -> str:
        return f"tests/hidden/test_{self.name}_hidden.py"

    def defects(self) -> list[Bug]:
        """Every defect: the catalogued bugs, then one missing feature per listed function."""
        return list(self.bugs) + [Bug("missing feature", f, "", "") for f in self.features]


def inject(program: Program, bug: Bug) -> str:
    """The module source with `bug` in it (raises if the catalogue entry no longer matches)."""
    if bug.kind == "missing feature":
        return stub(program.source, bug.func)
    n = program.source.count(bug.old)
    if n != 1:
        raise ValueError(f"{program.name}: bug text {bug.old!r} occurs {n} times in the source (must be once)")
    return program.source.replace(bug.old, bug.new)


def _find(tree: ast.Module, dotted: str) -> ast.FunctionDef:
    scope: list[ast.stmt] = tree.body
    *outer, last = dotted.split(".")
    for name in outer:
        cls = next((n for n in scope if isinstance(n, ast.ClassDef) and n.name == name), None)
        if cls is None:
            raise ValueError(f"no class {name!r}")
        scope = cls.body
    fn = next((n for n in scope if isinstance(n, ast.FunctionDef) and n.name == last), None)
    if fn is None:
        raise ValueError(f"no function {dotted!r}")
    return fn


def stub(source: str, dotted: str) -> str:
    """`source` with the body of function `dotted` replaced by `raise NotImplementedError` (docstring kept)."""
    fn = _find(ast.parse(source), dotted)
    body = fn.body
    keep = 1 if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) else 0
    if keep >= len(body):
        raise ValueError(f"{dotted} has no body to remove")
    lines = source.splitlines(keepends=True)
    first, last = body[keep].lineno - 1, body[-1].end_lineno or body[-1].lineno
    indent = " " * body[keep].col_offset
    return "".join(lines[:first]) + f"{indent}raise NotImplementedError({dotted!r})\n" + "".join(lines[last:])
