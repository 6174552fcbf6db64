"""Which of several source files a path from another copy of the project names (Qt-free).

Line tables name sources by the absolute path the compiler saw; the artifact folder may have been
built in another copy of the project (a test copy, the GPU host's export). Matching a bare tail
such as `src/lib.rs` is ambiguous since each project carries the kernel API crate as
`gpu_kernel/src/lib.rs`: the rule is the longest common tail of path parts (at least folder and
file), and among equals the shortest candidate (the project's own file before one in a nested crate).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

K = TypeVar("K")


def common_tail(a: Path, b: Path) -> int:
    """How many trailing path parts `a` and `b` share."""
    n = 0
    for x, y in zip(reversed(a.parts), reversed(b.parts), strict=False):
        if x != y:
            break
        n += 1
    return n


def best_match(target: str | Path, candidates: Iterable[tuple[K, str | Path]]) -> K | None:
    """The key of the candidate path `target` most likely names (the same folder and file at least),
    or None."""
    target = Path(target)
    best: tuple[int, int] | None = None
    found = None
    for key, path in candidates:
        path = Path(path)
        tail = common_tail(target, path)
        if tail < 2:
            continue  # at least folder and file: a file name alone is not enough
        score = (tail, -len(path.parts))
        if best is None or score > best:
            best, found = score, key
    return found
