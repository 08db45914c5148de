"""A small, safe arithmetic evaluator for tied (derived) calibration parameters.

``tied:`` entries of a calibration spec give a parameter as an expression of others, e.g.
``0.25 * W`` or ``max(1, round(cores / 2))``. The expression is parsed with :mod:`ast` and only
these nodes are accepted: numbers, names, ``+ - * / // % **``, unary ``+ -``, parentheses and calls
of ``min max abs round sqrt log exp``. Anything else (attributes, subscripts, strings, lambdas,
comprehensions, keyword arguments...) is rejected when the spec is loaded, with a message naming the
construct. Nothing is passed to ``eval``.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping

__all__ = ["ExprError", "check_expr", "eval_expr", "expr_names"]

_BIN = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UN = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCS = {
    "min": min,
    "max": max,
    "abs": abs,
    "round": round,
    "sqrt": math.sqrt,
    "log": math.log,
    "exp": math.exp,
}
_MAX_LEN = 400
_MAX_POW = 64.0


class ExprError(ValueError):
    """An expression that is not allowed or cannot be evaluated."""


def _parse(text: str) -> ast.AST:
    if not isinstance(text, str) or not text.strip():
        raise ExprError("an expression must be a non-empty string")
    if len(text) > _MAX_LEN:
        raise ExprError(f"expression longer than {_MAX_LEN} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ExprError(f"not an arithmetic expression ({e.msg})") from None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Expression, ast.Load, ast.operator, ast.unaryop)):
            continue
        if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
            continue
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UN:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            continue
        if isinstance(node, ast.Name):
            continue
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS or node.keywords:
                raise ExprError(f"only the functions {', '.join(_FUNCS)} may be called (positional arguments)")
            continue
        raise ExprError(f"{type(node).__name__} is not allowed in an expression (numbers, names, + - * / // % **, "
                        f"parentheses, {', '.join(_FUNCS)})")
    return tree


def expr_names(text: str) -> set[str]:
    """The variable names an expression uses (function names excluded)."""
    tree = _parse(text)
    funcs = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in funcs}


def check_expr(text: str, known: set[str]) -> None:
    """Raise :class:`ExprError` unless ``text`` is allowed and uses only ``known`` names."""
    unknown = sorted(expr_names(text) - known)
    if unknown:
        raise ExprError(f"unknown name {unknown[0]!r} (known: {', '.join(sorted(known)) or 'none'})")


def eval_expr(text: str, env: Mapping[str, float]) -> float:
    """Evaluate ``text`` with the names of ``env``; the result is a finite float."""
    tree = _parse(text)

    def ev(n: ast.AST) -> float:
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant):
            return float(n.value)
        if isinstance(n, ast.Name):
            if n.id not in env:
                raise ExprError(f"unknown name {n.id!r}")
            return float(env[n.id])
        if isinstance(n, ast.UnaryOp):
            return _UN[type(n.op)](ev(n.operand))
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            if isinstance(n.op, ast.Pow) and abs(b) > _MAX_POW:
                raise ExprError(f"exponent {b:g} too large (at most {_MAX_POW:g})")
            try:
                return float(_BIN[type(n.op)](a, b))
            except (ZeroDivisionError, OverflowError, ValueError) as e:
                raise ExprError(f"cannot evaluate: {e}") from None
        if isinstance(n, ast.Call):
            args = [ev(a) for a in n.args]
            try:
                return float(_FUNCS[n.func.id](*args))  # type: ignore[union-attr]
            except (TypeError, ValueError, OverflowError) as e:
                raise ExprError(f"cannot evaluate {n.func.id}(): {e}") from None  # type: ignore[union-attr]
        raise ExprError(f"{type(n).__name__} is not allowed")

    v = ev(tree)
    if not math.isfinite(v):
        raise ExprError(f"the expression gives {v}")
    return v
