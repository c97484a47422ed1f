"""Safe, vectorised evaluation of constraint expressions such as ``"J * K <= 2106"``.

Only arithmetic (+ - * / // % **), comparisons (chained allowed), ``and``/``or``/``not``,
numbers, the given variable names and the functions min, max, abs, log2 are accepted; anything
else is refused with a message saying what. Variables are NumPy arrays of one shape.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Mapping

import numpy as np

__all__ = ["parse", "evaluate", "ExprError"]


class ExprError(ValueError):
    """An expression is malformed or uses something not allowed."""


_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
        ast.Pow: operator.pow}
_CMP = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
        ast.Eq: operator.eq, ast.NotEq: operator.ne}
_FUNCS = {"min": lambda *a: _fold(np.minimum, a), "max": lambda *a: _fold(np.maximum, a),
          "abs": np.abs, "log2": np.log2}


def _fold(f, args):
    out = args[0]
    for a in args[1:]:
        out = f(out, a)
    return out


def parse(text: str, names: set[str]) -> ast.Expression:
    """Parse and check ``text``; raise `ExprError` naming what is not allowed."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ExprError(f"not a valid expression ({e.msg})") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id not in names and node.id not in _FUNCS:
                raise ExprError(f"unknown name {node.id!r}; known: {sorted(names)}")
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS or node.keywords:
                raise ExprError(f"only the functions {sorted(_FUNCS)} may be called")
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float)) or isinstance(node.value, bool):
                raise ExprError(f"only numbers are allowed as constants, got {node.value!r}")
            if not math.isfinite(node.value):  # e.g. 1e999
                raise ExprError(f"only finite numbers are allowed as constants, got {node.value!r}")
        elif not isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp,
                                   ast.Load, ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd,
                                   *_BIN, *_CMP)):
            raise ExprError(f"{type(node).__name__} is not allowed in an expression")
    return tree


def evaluate(tree: ast.Expression, env: Mapping[str, np.ndarray]):
    """Evaluate a tree from `parse` over arrays in ``env`` (element-wise)."""
    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Name):
            return env[n.id]
        if isinstance(n, ast.BinOp):
            return _BIN[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp):
            v = ev(n.operand)
            return np.logical_not(v) if isinstance(n.op, ast.Not) else (-v if isinstance(n.op, ast.USub) else v)
        if isinstance(n, ast.Compare):
            left = ev(n.left)
            out = True
            for op, right in zip(n.ops, n.comparators):
                r = ev(right)
                out = np.logical_and(out, _CMP[type(op)](left, r))
                left = r
            return out
        if isinstance(n, ast.BoolOp):
            vals = [ev(v) for v in n.values]
            return _fold(np.logical_and if isinstance(n.op, ast.And) else np.logical_or, vals)
        if isinstance(n, ast.Call):
            return _FUNCS[n.func.id](*[ev(a) for a in n.args])
        raise ExprError(f"{type(n).__name__} is not allowed")  # pragma: no cover
    return ev(tree)
