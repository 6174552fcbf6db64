"""Apply a tuned configuration: make the chosen values the defaults in `workbench.toml`.

A tunable's default is the first value of its array in `[kernel.tunables]`, so applying a value
swaps it with the first (or puts it first when the array lacks it). Only those characters of the
file change: comments, spacing, the other values and every other line stay as the user wrote them.
The edited text is parsed again (same manifest loader) before it replaces the file, atomically.

Which result is applied (`choose_slot`, `winner_config`; the command line and the window alike):
the winner of a backend × device the tunables affect. A slot where every configuration built the
same code (`ranking.NO_EFFECT`) is refused, and so is one without a unique winner (a tie set);
without a slot named, the one slot the tunables affect is chosen. Only the tunables that change
that slot's build are written."""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError

_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-\s\"']+?)\s*\]\]?\s*(#.*)?$")
#: A TOML number as written in an array (decimal, float, exponent, underscores, hex/oct/bin).
_NUMBER = re.compile(
    r"[-+]?(?:0x[0-9A-Fa-f_]+|0o[0-7_]+|0b[01_]+|(?:\d[\d_]*)?\.?\d[\d_]*(?:[eE][-+]?\d+)?|inf|nan)"
)


class ApplyError(WorkbenchError):
    pass


def _affected(best: dict[str, dict[str, Any]]) -> list[str]:
    from workbench.profile.tuning.ranking import NO_EFFECT

    return [slot for slot, b in best.items() if b["verdict"] != NO_EFFECT]


def choose_slot(best: dict[str, dict[str, Any]], slot: str | None) -> str:
    """The backend × device whose winner is applied: `slot`, or (None / "") the one the tunables
    affect, preferring the one with a winner; a clear `ApplyError` otherwise."""
    from workbench.profile.tuning.ranking import NO_EFFECT

    if not best:
        raise ApplyError("no verified configuration to apply")
    affected = _affected(best)
    if not slot:
        if not affected:
            raise ApplyError(
                f"the tunables have no effect on {', '.join(best)} (every configuration builds the same "
                "code): nothing to apply"
            )
        winners = [s for s in affected if best[s]["winner"] is not None]
        if len(affected) == 1 or len(winners) == 1:
            slot = affected[0] if len(affected) == 1 else winners[0]
        else:
            raise ApplyError(
                f"the tunables affect several backends × devices; name one (--apply BACKEND@DEVICE): "
                f"{', '.join(affected)}"
            )
    if slot not in best:
        raise ApplyError(f"no ranked configuration for {slot!r}; ranked: {', '.join(best)}")
    chosen = best[slot]
    if chosen["verdict"] == NO_EFFECT:
        names = ", ".join(chosen["no_effect"]) or "the tunables"
        backend = slot.split("@", 1)[0]
        others = ", ".join(s for s in affected if s != slot) or "none swept"
        raise ApplyError(
            f"{slot}: {names} {'has' if len(chosen['no_effect']) == 1 else 'have'} no effect on {backend} "
            f"(every configuration builds the same code), so it has no best; slots they affect: {others}"
        )
    if chosen["winner"] is None:
        raise ApplyError(f"{slot} has no unique winner ({chosen['note']}); rerun with more --rounds or "
                         "choose from the tie set yourself")  # fmt: skip
    return slot


def winner_config(chosen: dict[str, Any]) -> dict[str, Any]:
    """The winner's values of the tunables that change this slot's build (the others stay)."""
    return {k: v for k, v in chosen["winner"].items() if k not in chosen.get("no_effect", ())}


def _tunables_lines(lines: list[str], kernel_index: int) -> tuple[int, int]:
    """(first, end) line indices of `[kernel.tunables]` of the `kernel_index`-th `[[kernel]]`."""
    kernels = -1
    start = None
    for i, line in enumerate(lines):
        match = _HEADER.match(line)
        if not match:
            continue
        name = re.sub(r"\s+", "", match.group(1))
        if start is not None:
            return start, i
        if line.lstrip().startswith("[[") and name == "kernel":
            kernels += 1
        elif name == "kernel.tunables" and kernels == kernel_index:
            start = i + 1
    if start is None:
        raise ApplyError(f"no [kernel.tunables] table for kernel #{kernel_index + 1} in workbench.toml")
    return start, len(lines)


def _array_span(text: str, name: str, start: int, end: int, lines: list[str]) -> tuple[int, int]:
    """Character offsets of `NAME = [ ... ]`'s brackets (inclusive) within the table's lines."""
    offset = sum(len(line) for line in lines[:start])
    for i in range(start, end):
        match = re.match(rf"^\s*{re.escape(name)}\s*=\s*\[", lines[i])
        if match:
            open_at = offset + match.end() - 1
            depth, j, in_comment = 0, open_at, False
            while j < len(text):
                ch = text[j]
                if in_comment:
                    in_comment = ch != "\n"
                elif ch == "#":
                    in_comment = True
                elif ch == "[":
                    depth += 1
                elif ch == "]":
                    depth -= 1
                    if depth == 0:
                        return open_at, j
                j += 1
            break
        offset += len(lines[i])
    raise ApplyError(f"tunable {name!r} has no `{name} = [...]` line in [kernel.tunables]")


def _tokens(array: str) -> list[tuple[int, int, Any]]:
    """(start, end, value) of each number in an array's text, comments skipped."""
    out = []
    masked = re.sub(r"#[^\n]*", lambda m: " " * len(m.group(0)), array)
    for match in _NUMBER.finditer(masked):
        if not match.group(0) or match.group(0) in "+-":
            continue
        try:
            value = tomllib.loads(f"v = {match.group(0)}")["v"]
        except tomllib.TOMLDecodeError:
            continue
        out.append((match.start(), match.end(), value))
    return out


def _spell(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def set_defaults(text: str, kernel_index: int, config: dict[str, Any]) -> str:
    """`text` with each `config` value first in its tunable's array (see the module docstring)."""
    for name, value in config.items():
        lines = text.splitlines(keepends=True)
        start, end = _tunables_lines(lines, kernel_index)
        open_at, close_at = _array_span(text, name, start, end, lines)
        array = text[open_at + 1 : close_at]
        tokens = _tokens(array)
        if not tokens:
            raise ApplyError(f"tunable {name!r}: no values found in its array")
        first = tokens[0]
        chosen = next((t for t in tokens if t[2] == value), None)
        if chosen is None:
            array = array[: first[0]] + f"{_spell(value)}, " + array[first[0] :]
        elif chosen is not first:
            a, b = array[first[0] : first[1]], array[chosen[0] : chosen[1]]
            array = array[: first[0]] + b + array[first[1] : chosen[0]] + a + array[chosen[1] :]
        text = text[: open_at + 1] + array + text[close_at:]
    return text


def apply_config(manifest_path: str | Path, kernel: str, config: dict[str, Any]) -> str:
    """Rewrite `workbench.toml` so `kernel`'s default tunables are `config`; returns the new text.
    The file is replaced only when the new text loads and has exactly those defaults."""
    from workbench.manifest import load_manifest

    path = Path(manifest_path)
    if path.is_dir():
        path = path / "workbench.toml"
    manifest = load_manifest(path)
    names = [k.name for k in manifest.kernels]
    if kernel not in names:
        raise ApplyError(f"no kernel {kernel!r} in {path}; kernels: {', '.join(names)}")
    target = manifest.kernel(kernel)
    unknown = set(config) - set(target.tunables)
    if unknown:
        raise ApplyError(f"kernel {kernel!r} has no tunable {', '.join(sorted(unknown))}")
    original = path.read_text(encoding="utf-8")
    new = set_defaults(original, names.index(kernel), config)
    if new == original:
        return new
    fd, tmp = tempfile.mkstemp(prefix=".workbench-", suffix=".toml", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(new)
        check = load_manifest(Path(tmp)).kernel(kernel).default_tunables()
        if any(check[n] != v for n, v in config.items()):
            raise ApplyError(
                f"the rewritten workbench.toml has defaults {check}, not {config}; file left as it was"
            )
        os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return new
