"""A `multi` grader's `calculate_output`, evaluated without `eval`: an AST walk over numbers, grader names,
`+ - * /`, unary minus, parentheses and `min(...)` / `max(...)`; anything else is refused when the spec is
built, with what was found."""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping

from flywheel.environments.verdict import TaskError

_BIN = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.Div: lambda a, b: a / b}
_FUNCS = {"min": min, "max": max}
MAX_FORMULA_CHARS = 2_000


class Formula:
    """A parsed `calculate_output` over the named graders' scores."""

    def __init__(self, text: str, names: set[str]) -> None:
        if not isinstance(text, str) or not text.strip():
            raise TaskError("multi grader: calculate_output must be a non-empty string")
        if len(text) > MAX_FORMULA_CHARS:
            raise TaskError(f"multi grader: calculate_output longer than {MAX_FORMULA_CHARS} characters")
        try:
            self._tree = ast.parse(text.strip(), mode="eval").body
        except SyntaxError as e:
            raise TaskError(f"multi grader: calculate_output {text!r} is not a formula: {e.msg}") from None
        self.text = text
        self._check(self._tree, names)

    def _check(self, node: ast.AST, names: set[str]) -> None:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise TaskError(f"multi grader: calculate_output names {node.id!r}, which is not one of its "
                                f"graders {sorted(names)}")
            return
        if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
            self._check(node.left, names)
            self._check(node.right, names)
            return
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            self._check(node.operand, names)
            return
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS
                and node.args and not node.keywords):
            for a in node.args:
                self._check(a, names)
            return
        raise TaskError(f"multi grader: calculate_output may use numbers, grader names, + - * /, min() and max(); "
                        f"found {ast.dump(node)[:80]}")

    def __call__(self, scores: Mapping[str, float]) -> float:
        try:
            out = float(self._eval(self._tree, scores))
        except ZeroDivisionError:
            raise TaskError(f"multi grader: calculate_output {self.text!r} divided by zero") from None
        if not math.isfinite(out):
            raise TaskError(f"multi grader: calculate_output {self.text!r} gave {out}")
        return out

    def _eval(self, node: ast.AST, scores: Mapping[str, float]) -> float:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return scores[node.id]
        if isinstance(node, ast.BinOp):
            return _BIN[type(node.op)](self._eval(node.left, scores), self._eval(node.right, scores))
        if isinstance(node, ast.UnaryOp):
            v = self._eval(node.operand, scores)
            return -v if isinstance(node.op, ast.USub) else v
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        return _FUNCS[node.func.id](self._eval(a, scores) for a in node.args)
