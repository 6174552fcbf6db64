"""A small safe evaluator for the manifest's size, launch and metric expressions (no `eval`).

Bounded so that no expression can hang or exhaust memory: at most `MAX_LENGTH` characters and
`MAX_DEPTH` levels of nesting, exponents (`**`, `pow2`) up to `MAX_EXPONENT`, integers up to
`MAX_INT_BITS` bits, and no result that is not a finite number. Every failure is an `ExprError`
saying which expression and why (division by zero, overflow, a value out of a function's domain).
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping

Number = int | float


class ExprError(ValueError):
    """An expression that does not parse or cannot be evaluated; the message says why."""


def _ceil_div(a: Number, b: Number) -> int:
    a, b = _int(a), _int(b)
    if b == 0:
        raise ExprError("ceil_div: division by zero")
    return -(-a // b)


def _pow2(x: Number) -> int:
    if isinstance(x, float) and not x.is_integer():
        raise ExprError(f"pow2 of {x}: expected a whole number")
    if not 0 <= x <= MAX_EXPONENT:
        raise ExprError(f"pow2 of {_show(x)}: the exponent must be between 0 and {MAX_EXPONENT}")
    return 2 ** int(x)


def _finite(x: Number, function: str) -> Number:
    if isinstance(x, float) and not math.isfinite(x):
        raise ExprError(f"{function} of {x}: not a finite number")
    return x


def _int(x: Number) -> int:
    return int(_finite(x, "int"))


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
    "pow2": _pow2,
    "sqrt": math.sqrt,
    "ceil": lambda x: math.ceil(_finite(x, "ceil")),
    "floor": lambda x: math.floor(_finite(x, "floor")),
    "int": _int,
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
#: Limits that keep every expression quick: exponents, integer size, text length, nesting.
MAX_EXPONENT = 64
MAX_INT_BITS = 128
MAX_LENGTH = 1000
MAX_DEPTH = 32


def _brief(text: str | Number) -> str:
    """An expression quoted for a message, shortened when long."""
    text = str(text)
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")


def _show(value: Number) -> str:
    """A number for a message, shortened when huge."""
    text = str(value)
    return text if len(text) <= 24 else f"{text[:10]}…({len(text)} digits)"


def parse(text: str | Number) -> ast.expr:
    """Parse an expression, rejecting anything but arithmetic, names and known calls."""
    if isinstance(text, bool):
        raise ExprError("expected a number or an expression, not a boolean")
    if isinstance(text, int | float):
        return ast.Constant(text)
    if not isinstance(text, str) or not text.strip():
        raise ExprError("expected a number or an expression string")
    if len(text) > MAX_LENGTH:
        raise ExprError(
            f"expression {text[:20]!r}… is {len(text)} characters long; the limit is {MAX_LENGTH}"
        )
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"cannot parse {_brief(text)}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ExprError(f"cannot parse {text[:20]!r}…: nested too deeply (limit {MAX_DEPTH})") from None
    _check(tree.body, text)
    return tree.body


def _check(node: ast.AST, text: str, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise ExprError(f"in {_brief(text)}: nested more than {MAX_DEPTH} levels deep")
    depth += 1
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ExprError(f"in {_brief(text)}: only numbers are allowed as literals")
    elif isinstance(node, ast.Name):
        pass
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        _check(node.left, text, depth)
        _check(node.right, text, depth)
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        _check(node.operand, text, depth)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        if node.func.id not in FUNCTIONS:
            known = ", ".join(sorted(FUNCTIONS))
            raise ExprError(f"in {_brief(text)}: unknown function {node.func.id!r}; known: {known}")
        for arg in node.args:
            _check(arg, text, depth)
    else:
        raise ExprError(f"in {_brief(text)}: {type(node).__name__} is not allowed in an expression")


def names(text: str | Number) -> set[str]:
    """The symbol names an expression uses (function names excluded)."""
    tree = parse(text)
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}
    found = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return found - called


def evaluate(text: str | Number, symbols: Mapping[str, Number]) -> Number:
    """Evaluate an expression with the given symbols."""
    tree = parse(text)
    try:
        return _eval(tree, symbols, str(text))
    except OverflowError:
        raise ExprError(f"in {_brief(text)}: the value overflows") from None


def evaluate_int(text: str | Number, symbols: Mapping[str, Number]) -> int:
    """Evaluate an expression that must give a whole number (lengths, grid sizes)."""
    value = evaluate(text, symbols)
    if isinstance(value, float):
        if not value.is_integer():
            raise ExprError(f"{_brief(text)} gives {value}, expected a whole number")
        value = int(value)
    return value


def _checked(value: Number, text: str) -> Number:
    """`value` when it is a finite number of bounded size, else an ExprError."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ExprError(f"in {_brief(text)}: gives {value!r}, not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ExprError(f"in {_brief(text)}: gives {value} (overflow or an undefined operation)")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ExprError(
            f"in {_brief(text)}: the value {_show(value)} is too large (over {MAX_INT_BITS} bits)"
        )
    return value


def _eval(node: ast.AST, symbols: Mapping[str, Number], text: str) -> Number:
    if isinstance(node, ast.Constant):
        return _checked(node.value, text)
    if isinstance(node, ast.Name):
        if node.id not in symbols:
            known = ", ".join(sorted(symbols)) or "none"
            raise ExprError(f"in {_brief(text)}: unknown name {node.id!r}; known names: {known}")
        return symbols[node.id]
    if isinstance(node, ast.BinOp):
        left = _eval(node.left, symbols, text)
        right = _eval(node.right, symbols, text)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ExprError(f"in {_brief(text)}: exponent {_show(right)} is too large (limit {MAX_EXPONENT})")
        if isinstance(node.op, ast.Pow) and left == 0 and right < 0:
            raise ExprError(f"in {_brief(text)}: 0 to a negative power (division by zero)")
        try:
            value = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise ExprError(f"in {_brief(text)}: division by zero") from None
        except OverflowError:
            raise ExprError(f"in {_brief(text)}: the value overflows") from None
        if isinstance(value, complex):
            raise ExprError(f"in {_brief(text)}: a negative number to a fractional power")
        return _checked(value, text)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, symbols, text))
    if isinstance(node, ast.Call):
        args = [_eval(arg, symbols, text) for arg in node.args]
        try:
            return _checked(FUNCTIONS[node.func.id](*args), text)
        except ExprError as exc:
            if str(exc).startswith("in "):
                raise
            raise ExprError(f"in {_brief(text)}: {exc}") from None
        except (TypeError, ValueError) as exc:
            raise ExprError(f"in {_brief(text)}: {node.func.id}: {exc}") from None
        except ZeroDivisionError:
            raise ExprError(f"in {_brief(text)}: {node.func.id}: division by zero") from None
        except OverflowError:
            raise ExprError(f"in {_brief(text)}: {node.func.id}: the value overflows") from None
    raise ExprError(f"in {_brief(text)}: unsupported expression")


# ----------------------------------------------------------------------------- conditions
_COMPARE = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}


def parse_condition(text: str) -> ast.expr:
    """Parse a condition: comparisons of expressions (`block_x * block_y <= 1024`, chains such as
    `8 <= tile <= 32`), joined by `and` / `or`, negated by `not`. Used for tunables' constraints."""
    if not isinstance(text, str) or not text.strip():
        raise ExprError('expected a condition string, such as "block_x * block_y <= 1024"')
    if len(text) > MAX_LENGTH:
        raise ExprError(f"condition {text[:20]!r}… is {len(text)} characters long; the limit is {MAX_LENGTH}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"cannot parse {_brief(text)}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ExprError(f"cannot parse {text[:20]!r}…: nested too deeply (limit {MAX_DEPTH})") from None
    _check_condition(tree.body, text, 0)
    return tree.body


def _check_condition(node: ast.AST, text: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ExprError(f"in {_brief(text)}: nested more than {MAX_DEPTH} levels deep")
    if isinstance(node, ast.BoolOp):
        for value in node.values:
            _check_condition(value, text, depth + 1)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        _check_condition(node.operand, text, depth + 1)
    elif isinstance(node, ast.Compare):
        if not all(type(op) in _COMPARE for op in node.ops):
            raise ExprError(f"in {_brief(text)}: only <, <=, >, >=, ==, != compare")
        for operand in (node.left, *node.comparators):
            _check(operand, text, depth + 1)
    else:
        raise ExprError(f"{_brief(text)} is not a condition: compare with <, <=, >, >=, == or !=")


def condition_names(text: str) -> set[str]:
    """The symbol names a condition uses."""
    tree = parse_condition(text)
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - called


def condition(text: str, symbols: Mapping[str, Number]) -> bool:
    """Whether a condition holds at `symbols`."""
    return _eval_condition(parse_condition(text), symbols, text)


def _eval_condition(node: ast.AST, symbols: Mapping[str, Number], text: str) -> bool:
    if isinstance(node, ast.BoolOp):
        values = (_eval_condition(v, symbols, text) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.UnaryOp):
        return not _eval_condition(node.operand, symbols, text)
    assert isinstance(node, ast.Compare)
    left = _eval(node.left, symbols, text)
    for op, comparator in zip(node.ops, node.comparators, strict=True):
        right = _eval(comparator, symbols, text)
        if not _COMPARE[type(op)](left, right):
            return False
        left = right
    return True
