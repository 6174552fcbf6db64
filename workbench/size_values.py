"""The one rule for a problem size the user gives: `workbench run --size NAME=VALUE` (and `tune`,
`sweep`) and the window's size controls read values through it, so a size the command line refuses
the window refuses too, with the same words (Qt-free).

A size is an integer expression without symbols (`65536`, `2**20`, `pow2(16)`), not negative.
"""

from __future__ import annotations

from typing import Any

from workbench import expr
from workbench.errors import WorkbenchError


def known_sizes(kernel: Any = None) -> str:
    """ "; kernel 'saxpy' has sizes: n" (empty without a kernel): what an error adds as a hint."""
    if kernel is None:
        return ""
    return f"; kernel {kernel.name!r} has sizes: {', '.join(kernel.sizes) or 'none'}"


def size_value(name: str, text: str, kernel: Any = None) -> int:
    """The value of size `name` written as `text`; a WorkbenchError names the size and says why."""
    part = f"{name}={text}"
    try:
        number = expr.evaluate_int(text.strip(), {})
    except (expr.ExprError, ValueError) as exc:
        raise WorkbenchError(
            f"--size {part!r}: sizes are integer expressions (e.g. 65536, 2**20, pow2(16)); "
            f"{text.strip()!r} is not one: {exc}{known_sizes(kernel)}"
        ) from None
    if number < 0:
        raise WorkbenchError(f"--size {part!r}: sizes must not be negative")
    return number


def parse_sizes(items: list[str], kernel: Any = None) -> dict[str, int]:
    """`["n=65536", "m=2**10"]` → {"n": 65536, "m": 1024}; errors say what is wrong and, given the
    `kernel`, which sizes and tunables it has."""
    sizes: dict[str, int] = {}
    for item in items:
        for part in item.split(","):
            if not part.strip():
                continue
            name, sep, value = part.partition("=")
            if not sep or not name.strip() or not value.strip():
                raise WorkbenchError(
                    f"--size {part!r}: expected NAME=VALUE, e.g. n=65536{known_sizes(kernel)}"
                )
            sizes[name.strip()] = size_value(name.strip(), value.strip(), kernel)
    return sizes
