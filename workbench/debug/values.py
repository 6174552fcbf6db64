"""A local's value as gdb prints it (Rust syntax), shortened for a narrow column: paths dropped
(`gpu_kernel::host::exec::Ctx` → `Ctx`), a struct's pointer and `_`-named fields left out, and the
kernel API's `Ctx` as its workgroup and local id. The full value stays where it is shown in full
(the Debug dock's tooltip, `--json`)."""

from __future__ import annotations

import re

#: Rust paths in a printed value (`core::marker::PhantomData` → `PhantomData`).
_PATH = re.compile(r"\b(?:[A-Za-z_]\w*::)+([A-Za-z_]\w*)")
#: A struct as gdb prints it: `Name<T> {field: value, …}`.
_STRUCT = re.compile(r"^([A-Za-z_][\w<>&\[\], ]*?) \{(.*)\}$", re.DOTALL)
#: Fields kept of the kernel API's types (the rest is the executor's bookkeeping), as renamed.
_KEEP = {"Ctx": (("coords", "group"), ("local", "local"))}


def _fields(body: str) -> list[tuple[str, str]]:
    """`a: 1, b: [2, 3]` as (name, value) pairs, split at the top level's commas only."""
    out, depth, start = [], 0, 0
    for k, char in enumerate(body + ","):
        if char in "[{(<":
            depth += 1
        elif char in "]})>":
            depth -= 1
        elif char == "," and depth == 0:
            name, _, value = body[start:k].strip().partition(": ")
            if name:
                out.append((name, value))
            start = k + 1
    return out


def value_summary(value: str) -> str:
    """The value, short: paths dropped, and for a struct only the fields worth reading."""
    text = _PATH.sub(r"\1", value.strip())
    match = _STRUCT.match(text)
    if match is None:
        return text
    name, fields = match.group(1), _fields(match.group(2))
    if name in _KEEP:
        known = dict(fields)
        kept = [(label, known[field]) for field, label in _KEEP[name] if field in known]
    else:
        kept = [(f, v) for f, v in fields if not f.startswith("_") and not re.fullmatch(r"0x[0-9a-f]+", v)]
    return f"{name} {{{', '.join(f'{f}: {v}' for f, v in kept)}}}"
