"""Rooms of one job (issue 38, item 3): no module of the workbench is over `LIMIT` lines, except
the ones named in `WAITING`, each with the split it waits for.

A module that grows past the limit fails here with its size: split it (one job per module), or,
when the split cannot happen now, name it in `WAITING` with the split it waits for. An entry
whose module has come back under the limit (or is gone) fails too, so the list never lies.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "workbench"
LIMIT = 500

#: Module (relative to the repository) -> the split it waits for.
WAITING: dict[str, str] = {}


def _sizes() -> dict[str, int]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        with path.open(encoding="utf-8") as f:
            out[path.relative_to(REPO).as_posix()] = sum(1 for _ in f)
    return out


def test_no_module_is_over_the_limit_unless_it_names_the_split_it_waits_for():
    over = {name: n for name, n in _sizes().items() if n > LIMIT and name not in WAITING}
    assert not over, (
        f"modules over {LIMIT} lines: "
        + ", ".join(f"{name} ({n})" for name, n in over.items())
        + " — split them, or name each in WAITING with the split it waits for"
    )


@pytest.mark.parametrize("name", sorted(WAITING))
def test_each_waiting_module_is_still_over_the_limit(name):
    sizes = _sizes()
    assert name in sizes, f"{name} is gone: remove it from WAITING"
    assert sizes[name] > LIMIT, f"{name} is {sizes[name]} lines now: remove it from WAITING"
    assert WAITING[name].strip(), f"{name}: say which split it waits for"
