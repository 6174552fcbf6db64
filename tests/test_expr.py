import pytest

from workbench import expr


def test_arithmetic_and_functions():
    symbols = {"n": 1000, "block": 256}
    assert expr.evaluate_int("ceil_div(n, block)", symbols) == 4
    assert expr.evaluate("2 * n + 1", symbols) == 2001
    assert expr.evaluate("n // 3 % 7", symbols) == (1000 // 3) % 7
    assert expr.evaluate("-n", symbols) == -1000
    assert expr.evaluate("max(log2(block), 3) + pow2(4)", symbols) == 24
    assert expr.evaluate(42, {}) == 42
    assert expr.names("ceil_div(n, block) * m") == {"n", "block", "m"}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("__import__('os')", "unknown function"),
        ("n.real", "Attribute is not allowed"),
        ("n if n else 1", "IfExp is not allowed"),
        ("'abc'", "only numbers"),
        ("[1, 2]", "List is not allowed"),
        ("1 +", "cannot parse"),
        ("lambda: 1", "Lambda is not allowed"),
    ],
)
def test_rejects_anything_but_arithmetic(text, fragment):
    with pytest.raises(expr.ExprError, match=fragment):
        expr.evaluate(text, {"n": 1})


def test_errors_name_the_problem():
    with pytest.raises(expr.ExprError, match="unknown name 'm'; known names: n"):
        expr.evaluate("m + 1", {"n": 1})
    with pytest.raises(expr.ExprError, match="division by zero"):
        expr.evaluate("n / 0", {"n": 1})
    with pytest.raises(expr.ExprError, match="exponent"):
        expr.evaluate("2 ** 1000", {})
    with pytest.raises(expr.ExprError, match="whole number"):
        expr.evaluate_int("n / 3", {"n": 1})
