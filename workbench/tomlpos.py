"""Find the line of a key in TOML text, so manifest errors can point at it.

`tomllib` returns plain dicts without positions; this scanner walks the text once and records the
line of every table header and key, addressed by a path such as ``("kernel", 0, "launch", "grid")``
(array-of-tables entries are indexed). It understands the subset a manifest uses: `[a.b]`,
`[[a]]`, dotted keys and inline tables (whose inner keys map to the inline table's line).
"""

from __future__ import annotations

import json
import math
import re

Path = tuple[str | int, ...]

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*(\]\]?)\s*(#.*)?$")
_KEY = re.compile(
    r"^\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*="
)
_INLINE_KEY = re.compile(r"([A-Za-z0-9_-]+)\s*=")


def _split_key(text: str) -> list[str]:
    return [part.strip().strip("\"'") for part in text.split(".")]


class KeyLines:
    """Line numbers (1-based) of the keys and tables in one TOML document."""

    def __init__(self, text: str):
        self._lines: dict[Path, int] = {}
        counts: dict[Path, int] = {}
        table: Path = ()
        in_multiline = False
        for number, line in enumerate(text.splitlines(), start=1):
            if in_multiline:
                if line.count('"""') % 2 == 1 or line.count("'''") % 2 == 1:
                    in_multiline = False
                continue
            header = _HEADER.match(line)
            if header and not line.lstrip().startswith("#"):
                parts = _split_key(header.group(2))
                if header.group(1) == "[[":
                    base = self._resolve(tuple(parts), counts)
                    index = counts.get(base, 0)
                    counts[base] = index + 1
                    table = (*base, index)
                else:
                    table = self._resolve(tuple(parts), counts)
                self._lines.setdefault(table, number)
                continue
            key = _KEY.match(line)
            if key:
                path = (*table, *_split_key(key.group(1)))
                self._lines.setdefault(path, number)
                rest = line[key.end() :]
                if rest.strip().startswith("{"):
                    for inner in _INLINE_KEY.finditer(rest):
                        self._lines.setdefault((*path, inner.group(1)), number)
                if rest.count('"""') % 2 == 1 or rest.count("'''") % 2 == 1:
                    in_multiline = True

    def _resolve(self, parts: Path, counts: dict[Path, int]) -> Path:
        """Map `[kernel.launch]` to `("kernel", <last index>, "launch")` inside arrays of tables."""
        resolved: list[str | int] = []
        for position, part in enumerate(parts):
            resolved.append(part)
            prefix = tuple(resolved)
            if prefix in counts and position < len(parts) - 1:
                resolved.append(counts[prefix] - 1)
        return tuple(resolved)

    def line(self, path: Path) -> int | None:
        """The line of `path`, or of its nearest enclosing key or table."""
        path = tuple(path)
        while path:
            if path in self._lines:
                return self._lines[path]
            path = path[:-1]
        return None


def toml_error_line(message: str) -> int | None:
    """The line number tomllib puts in its error messages ('... (at line 3, column 7)')."""
    match = re.search(r"at line (\d+)", message)
    return int(match.group(1)) if match else None


def toml_value(value: object, limit: int = 80) -> str:
    """`value` as TOML writes it (`true`, `"text"`, `inf`, `[1, 2]`, `{ kind = "random" }`),
    so messages quote the user's input in the user's own spelling."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
    elif isinstance(value, float):
        if math.isnan(value):
            text = "nan"
        elif math.isinf(value):
            text = "inf" if value > 0 else "-inf"
        else:
            text = repr(value)
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, list | tuple):
        text = "[" + ", ".join(toml_value(v, limit) for v in value) + "]"
    elif isinstance(value, dict):
        inner = ", ".join(f"{k} = {toml_value(v, limit)}" for k, v in value.items())
        text = "{ " + inner + " }" if inner else "{}"
    elif hasattr(value, "isoformat"):
        text = value.isoformat()
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def toml_type(value: object) -> str:
    """TOML's name for the type of a parsed value (`boolean`, `string`, `array`, `table` ...)."""
    if isinstance(value, bool):
        return "boolean"
    for types, name in (
        (str, "string"),
        (int, "integer"),
        (float, "float"),
        (list, "array"),
        (dict, "table"),
    ):
        if isinstance(value, types):
            return name
    return "date/time"


def open_construct_line(text: str, message: str, error_line: int | None) -> int | None:
    """The line where the construct a TOML error is about was opened.

    tomllib reports an unclosed array, inline table or multi-line string where it gave up (often
    lines later, or "at end of document"); this finds the line of the innermost bracket of that
    kind (or the string's opening quotes) still open at that point. None when the message is not
    about an unclosed construct."""
    lines = text.splitlines()
    if "Unclosed array" in message:
        want = "["
    elif "Unclosed inline table" in message:
        want = "{"
    elif "Unterminated string" in message:
        want = '"'
    elif error_line is not None and 0 < error_line <= len(lines) and _HEADER.match(lines[error_line - 1]):
        # A table header read as an array element: the array above it was never closed.
        want, error_line = "[", error_line - 1
    else:
        return None
    stop = len(lines) if error_line is None else min(error_line, len(lines))
    stack: list[tuple[str, int]] = []
    string: tuple[str, int] | None = None  # (closing delimiter, line it opened on)
    for number in range(1, stop + 1):
        line = lines[number - 1]
        # The error line itself is scanned only up to where tomllib stopped (its column is not
        # passed on: the whole line is scanned, which only matters for brackets after the error).
        i = 0
        while i < len(line):
            if string is not None:
                closing = string[0]
                if closing in ('"', '"""') and line[i] == "\\":
                    i += 2
                    continue
                if line.startswith(closing, i):
                    i += len(closing)
                    string = None
                    continue
                i += 1
                continue
            char = line[i]
            if char == "#":
                break
            if line.startswith('"""', i) or line.startswith("'''", i):
                string = (line[i : i + 3], number)
                i += 3
                continue
            if char in "\"'":
                string = (char, number)
            elif char in "[{":
                stack.append((char, number))
            elif char in "]}" and stack:
                stack.pop()
            i += 1
        if string is not None and len(string[0]) == 1:
            string = None  # a one-line string ends with its line (tomllib reports it there)
    if want == '"':
        return string[1] if string is not None else None
    for opened, number in reversed(stack):
        if opened == want:
            return number
    return None
