"""Find the line of a key in TOML text, so manifest errors can point at it.

`tomllib` returns plain dicts without positions; this scanner walks the text once and records the
line of every table header and key, addressed by a path such as ``("kernel", 0, "launch", "grid")``
(array-of-tables entries are indexed). It understands the subset a manifest uses: `[a.b]`,
`[[a]]`, dotted keys and inline tables (whose inner keys map to the inline table's line).
"""

from __future__ import annotations

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
