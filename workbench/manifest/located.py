"""The located reading of a parsed `workbench.toml` (Qt-free): the typed reads every table of the
manifest is made of (a table, a string, a number, a non-negative integer, an expression over the
kernel's symbols, the allowed keys), each failing with a `ManifestError` that names the file, the
line and the key (`tomlpos.KeyLines`). `reader.py` reads the tables with them.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from workbench import expr
from workbench.backends import BACKENDS
from workbench.errors import ManifestError
from workbench.tomlpos import KeyLines, toml_type, toml_value

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def missing_file(path: Path, rel: str) -> str:
    """Why `path` (written `rel` in the manifest) is not a file it can name, in a user's words."""
    try:
        if path.is_dir():
            return f"{rel!r} is a folder, not a file"
        if path.exists():
            return f"{rel!r} is not a regular file (a device, FIFO or socket)"
    except (OSError, ValueError):
        pass
    return f"file {rel!r} does not exist"


def exists(path: Path) -> bool:
    """Whether `path` is a file; a name the OS cannot even look up is not one."""
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long, or with a NUL byte
        return False


class LocatedReader:
    """Typed reads of one parsed manifest, raising errors located by `KeyLines`."""

    def __init__(self, path: Path, text: str):
        self.path = path
        self.lines = KeyLines(text)

    def locate(self, at: tuple) -> tuple[int | None, str]:
        """(line, key as the message names it) of a key path."""
        key = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in at).replace(".[", "[")
        return self.lines.line(at), key

    def fail(self, at: tuple, message: str) -> ManifestError:
        line, key = self.locate(at)
        return ManifestError(self.path, line, key or None, message)

    def table(self, data: dict, at: tuple, key: str, required: bool = False) -> dict:
        value = data.get(key)
        if value is None:
            if required:
                raise self.fail(at, f"missing table [{'.'.join(map(str, (*at, key)))}]")
            return {}
        if not isinstance(value, dict):
            raise self.fail((*at, key), f"expected a table, got {toml_type(value)} {toml_value(value)}")
        return value

    def string(self, data: dict, at: tuple, key: str, default: str | None = None) -> str:
        value = data.get(key, default)
        if value is None:
            raise self.fail((*at, key) if at else (key,), f"missing key {key!r} (a string)")
        if not isinstance(value, str):
            raise self.fail((*at, key), f"expected a string, got {toml_value(value)}")
        return value

    def one_of(
        self, data: dict, at: tuple, key: str, valid: tuple[str, ...], what: str, default: str | None = None
    ) -> str:
        """A string among `valid` ("unknown {what} ...; valid: ..." otherwise)."""
        value = self.string(data, at, key, default)
        if value not in valid:
            raise self.fail((*at, key), f"unknown {what} {toml_value(value)}; valid: {', '.join(valid)}")
        return value

    def flag(self, data: dict, at: tuple, key: str) -> bool:
        """A boolean, false when absent."""
        value = data.get(key, False)
        if not isinstance(value, bool):
            raise self.fail((*at, key), f"expected true or false, got {toml_value(value)}")
        return value

    def number(
        self, data: dict, at: tuple, key: str, default: float | None = None, finite: bool = True
    ) -> float:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail((*at, key), f"expected a number, got {toml_value(value)}")
        if finite and not math.isfinite(value):
            raise self.fail((*at, key), f"expected a finite number, got {toml_value(value)}")
        return value

    def natural(self, value: Any, at: tuple) -> int:
        """`value` when it is a non-negative integer (a boolean is not), else a located error."""
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(at, f"expected a non-negative integer, got {toml_value(value)}")
        return value

    def expression(self, value: Any, at: tuple, symbols: set[str]) -> str:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.fail(at, f"expected a number or an expression string, got {toml_value(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(at, f"expected a finite number, got {toml_value(value)}")
        try:
            used = expr.names(value)
        except expr.ExprError as exc:
            raise self.fail(at, str(exc)) from None
        unknown = used - symbols
        if unknown:
            known = ", ".join(sorted(symbols)) or "none"
            raise self.fail(
                at, f"unknown name {sorted(unknown)[0]!r} in {toml_value(value)}; known names: {known}"
            )
        return str(value)

    def check_keys(self, data: dict, at: tuple, allowed: tuple[str, ...]) -> None:
        for key in data:
            if key not in allowed:
                raise self.fail((*at, key), f"unknown key {key!r}; valid keys: {', '.join(allowed)}")

    def check_backend_keys(self, data: dict, at: tuple, allowed=tuple(BACKENDS)) -> None:
        for key in data:
            if key not in allowed:
                raise self.fail(
                    (*at, key), f"unknown backend {toml_value(key)}; valid backends: {', '.join(allowed)}"
                )
