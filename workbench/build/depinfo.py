"""Make-style dep-info files (`cargo`'s `<artifact>.d`, rustc's `deps/*.d`, `nvcc -MD`): the files a
compiler read, which the build cache keys the next build on (docs/contracts.md, "Build keys")."""

from __future__ import annotations

from pathlib import Path


def parse(text: str) -> list[str]:
    """Every prerequisite of every rule, in order, without duplicates.

    Handles line continuations (`\\` at the end of a line), escaped spaces (`\\ `) and comment
    lines (rustc writes `# env-dep:` and `# checksum:` lines)."""
    joined = text.replace("\\\r\n", " ").replace("\\\n", " ")
    found: dict[str, None] = {}
    for line in joined.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        # `target: prereq prereq` -- the first unescaped ": " (or ":" at the end) ends the targets.
        colon = _rule_colon(line)
        if colon < 0:
            continue
        for word in _words(line[colon + 1 :]):
            found.setdefault(word, None)
    return list(found)


def _rule_colon(line: str) -> int:
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch == ":" and (i + 1 == len(line) or line[i + 1] in " \t"):
            return i
        i += 1
    return -1


def _words(text: str) -> list[str]:
    words, current, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in " \t#:\\":
            current.append(text[i + 1])
            i += 2
            continue
        if ch in " \t":
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(ch)
        i += 1
    if current:
        words.append("".join(current))
    return words


def env_reads(text: str) -> set[str]:
    """The environment variables rustc's dep-info says the compiled code read with `env!` /
    `option_env!` (its `# env-dep:NAME[=VALUE]` lines)."""
    return {
        ln[len("# env-dep:") :].split("=", 1)[0] for ln in text.splitlines() if ln.startswith("# env-dep:")
    }


def read(path: Path, cwd: Path | None = None) -> list[Path]:
    """The prerequisites of one dep-info file as absolute paths (relative ones against `cwd`);
    [] when the file is absent or unreadable."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    base = cwd or path.parent
    return [Path(p) if Path(p).is_absolute() else base / p for p in parse(text)]
