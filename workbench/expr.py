"""A small safe evaluator for the manifest's size, launch and metric expressions (no `eval`)."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping

Number = int | float


class ExprError(ValueError):
    """An expression that does not parse or cannot be evaluated; the message says why."""


def _ceil_div(a: Number, b: Number) -> int:
    if b == 0:
        raise ExprError("ceil_div by zero")
    return -(-int(a) // int(b))


def _log2(x: Number) -> Number:
    if x <= 0:
        raise ExprError(f"log2 of non-positive value {x}")
    value = math.log2(x)
    return int(value) if value.is_integer() else value


FUNCTIONS = {
    "ceil_div": _ceil_div,
    "min": min,
    "max": max,
    "log2": _log2,
    "pow2": lambda x: 2 ** int(x),
    "sqrt": math.sqrt,
    "ceil": math.ceil,
    "floor": math.floor,
    "int": int,
    "abs": abs,
}

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_MAX_POW = 64


def parse(text: str | Number) -> ast.expr:
    """Parse an expression, rejecting anything but arithmetic, names and known calls."""
    if isinstance(text, bool):
        raise ExprError("expected a number or an expression, not a boolean")
    if isinstance(text, int | float):
        return ast.Constant(text)
    if not isinstance(text, str) or not text.strip():
        raise ExprError("expected a number or an expression string")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"cannot parse {text!r}: {exc.msg}") from None
    _check(tree.body, text)
    return tree.body


def _check(node: ast.AST, text: str) -> None:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ExprError(f"in {text!r}: only numbers are allowed as literals")
    elif isinstance(node, ast.Name):
        pass
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        _check(node.left, text)
        _check(node.right, text)
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        _check(node.operand, text)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        if node.func.id not in FUNCTIONS:
            known = ", ".join(sorted(FUNCTIONS))
            raise ExprError(f"in {text!r}: unknown function {node.func.id!r}; known: {known}")
        for arg in node.args:
            _check(arg, text)
    else:
        raise ExprError(f"in {text!r}: {type(node).__name__} is not allowed in an expression")


def names(text: str | Number) -> set[str]:
    """The symbol names an expression uses (function names excluded)."""
    tree = parse(text)
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}
    found = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return found - called


def evaluate(text: str | Number, symbols: Mapping[str, Number]) -> Number:
    """Evaluate an expression with the given symbols."""
    tree = parse(text)
    return _eval(tree, symbols, str(text))


def evaluate_int(text: str | Number, symbols: Mapping[str, Number]) -> int:
    """Evaluate an expression that must give a whole number (lengths, grid sizes)."""
    value = evaluate(text, symbols)
    if isinstance(value, float):
        if not value.is_integer():
            raise ExprError(f"{text!r} gives {value}, expected a whole number")
        value = int(value)
    return value


def _eval(node: ast.AST, symbols: Mapping[str, Number], text: str) -> Number:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in symbols:
            known = ", ".join(sorted(symbols)) or "none"
            raise ExprError(f"in {text!r}: unknown name {node.id!r}; known names: {known}")
        return symbols[node.id]
    if isinstance(node, ast.BinOp):
        left = _eval(node.left, symbols, text)
        right = _eval(node.right, symbols, text)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_POW:
            raise ExprError(f"in {text!r}: exponent {right} is too large")
        try:
            return _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise ExprError(f"in {text!r}: division by zero") from None
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, symbols, text))
    if isinstance(node, ast.Call):
        args = [_eval(arg, symbols, text) for arg in node.args]
        try:
            return FUNCTIONS[node.func.id](*args)
        except ExprError:
            raise
        except (TypeError, ValueError) as exc:
            raise ExprError(f"in {text!r}: {node.func.id}: {exc}") from None
    raise ExprError(f"in {text!r}: unsupported expression")
