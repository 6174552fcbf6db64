"""Files outside the database that sessions read and write: export targets, import bundles (Qt-free).

An export never destroys what its target is: it writes a temporary file in the target's folder and
then links it in as a *new* name (`os.link` fails if something appeared there meanwhile), or, only
when told it may (`--overwrite`), renames it over an existing *regular file*. Devices (`/dev/full`),
FIFOs, sockets, folders and symbolic links are refused with what they are, and stay as they were:
the target is examined with `lstat` (a link is not followed) and looked at again just before the
rename.

An import reads only a regular file no bigger than `MAX_BUNDLE_BYTES`, checked with `stat` before
anything is opened (opening a FIFO would wait for a writer; `/dev/zero` never ends) and again on the
open descriptor (`O_NONBLOCK`), and parses JSON only after a scan found it nested no deeper than
`MAX_DEPTH` (Python's parser recurses: 200,000 levels end in a RecursionError) and holding no more
than `MAX_CONTAINERS` objects and arrays (their overhead, some 60 bytes each against 2 bytes of
text, is what could blow up): what is parsed then takes a few times the file's size at most.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import WorkbenchError

#: The largest bundle `sessions import` reads (256 MiB, some 50,000 runs of 200 samples); export
#: a bigger history in parts (`sessions export ID...`).
MAX_BUNDLE_BYTES = 256 * 1024 * 1024
#: How deep objects and arrays may nest in a bundle (a real one nests about 8 deep).
MAX_DEPTH = 64
#: How many objects and arrays a bundle may hold (a run holds some 30).
MAX_CONTAINERS = 8_000_000

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


class ExportError(WorkbenchError):
    """An export or import could not be done; the message names the file."""


def kind_of(mode: int) -> str:
    """What a file of this mode is, in words ("a regular file", "a character device", ...)."""
    for test, words in _KINDS:
        if test(mode):
            return words
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def _target_info(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror or exc}") from None


def refuse_unless_regular(path: Path, info: os.stat_result | None = None) -> None:
    """`ExportError` when something other than a regular file is at `path` (a link not followed);
    nothing there, or a regular file, passes."""
    info = info or _target_info(path)
    if info is None or stat.S_ISREG(info.st_mode):
        return
    what = kind_of(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        with contextlib.suppress(OSError):
            what += f" (to {os.readlink(path)})"
    how = "name a file" if stat.S_ISDIR(info.st_mode) else "name a new file or a regular file"
    raise ExportError(
        f"refusing to write {path}: it is {what}, not a regular file; it was left untouched — {how}"
    )


def write_file(path: str | Path, text: str, *, overwrite: bool = False) -> None:
    """Write `text` to a new regular file at `path`, or replace the regular file there when
    `overwrite`; anything else at `path` is refused (`ExportError`) and left as it was. A
    failed write leaves no temporary file and the old target whole."""
    path = Path(path).expanduser()
    before = _target_info(path)
    if before is not None:
        refuse_unless_regular(path, before)
        if not overwrite:
            raise ExportError(
                f"refusing to write {path}: the file exists and was left untouched — pass --overwrite "
                "to replace it, or name a new file"
            )
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        if before is None:
            _link_new(tmp, path)
        else:
            os.chmod(tmp, stat.S_IMODE(before.st_mode))
            now = _target_info(path)  # the target may have been swapped meanwhile
            if now is None or (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino):
                raise ExportError(
                    f"refusing to write {path}: it changed while the export was written; it was "
                    "left as it is now — try again"
                )
            os.replace(tmp, path)
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _link_new(tmp: Path, path: Path) -> None:
    """Give `tmp` the name `path` only if nothing has that name (a hard link never replaces)."""
    try:
        os.link(tmp, path, follow_symlinks=False)
    except FileExistsError:
        info = _target_info(path)
        if info is not None:
            refuse_unless_regular(path, info)
        raise ExportError(
            f"refusing to write {path}: a file of that name appeared while the export was written; "
            "it was left untouched — pass --overwrite to replace it"
        ) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        # A file system without hard links (FAT, some FUSE): create the name exclusively instead.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
        try:
            with os.fdopen(fd, "wb") as out, open(tmp, "rb") as src:
                out.write(src.read())
        except BaseException:
            with contextlib.suppress(OSError):
                path.unlink()
            raise


def read_bounded(path: str | Path, *, limit: int = MAX_BUNDLE_BYTES) -> str:
    """The text of the regular file at `path` (symbolic links followed), refused before reading
    when it is anything else or bigger than `limit` bytes."""
    path = Path(path).expanduser()
    try:
        info = os.stat(path)
    except OSError as exc:
        raise ExportError(f"cannot read {path}: {exc.strerror or exc}") from None
    _check_readable(path, info, limit)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise ExportError(f"cannot read {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as file:
        _check_readable(path, os.fstat(fd), limit)  # what was opened, not what was stat'ed
        data = file.read(limit + 1)
    if len(data) > limit:
        raise ExportError(f"{path} grew past {_mib(limit)} while it was read; nothing was imported")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ExportError(f"{path} is not UTF-8 text (byte {exc.start}); nothing was imported") from None


def _check_readable(path: Path, info: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise ExportError(
            f"refusing to read {path}: it is {kind_of(info.st_mode)}, not a regular file; nothing "
            "was imported"
        )
    if info.st_size > limit:
        raise ExportError(
            f"refusing to read {path}: {info.st_size} bytes, more than the {_mib(limit)} an import "
            "reads; nothing was imported — export fewer runs per bundle (`sessions export ID...`)"
        )


def _mib(n: int) -> str:
    return f"{n / 2**20:g} MiB"


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)


_BRACKETS = np.frombuffer(b"[]{}", dtype=np.uint8)


def parse_json(text: str, where: str | Path) -> Any:
    """`json.loads(text)` once a scan found it nested at most `MAX_DEPTH` deep with at most
    `MAX_CONTAINERS` objects and arrays; `ExportError` naming `where` otherwise."""
    depth, containers = nesting(text)
    if depth > MAX_DEPTH:
        raise ExportError(
            f"{where} nests objects and arrays {depth} deep, more than the {MAX_DEPTH} a bundle may; "
            "nothing was imported"
        )
    if containers > MAX_CONTAINERS:
        raise ExportError(
            f"{where} holds {containers} objects and arrays, more than the {MAX_CONTAINERS} a bundle "
            "may; nothing was imported"
        )
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ExportError(f"{where} is not JSON: {exc}") from None
    except RecursionError:  # cannot happen after the scan; kept so no input ends in a traceback
        raise ExportError(f"{where} nests too deep to read; nothing was imported") from None


def nesting(text: str) -> tuple[int, int]:
    """(deepest nesting, number of objects and arrays) of JSON text, strings left out; scanned in
    C (a regex, `translate`, numpy), never by a recursive parser."""
    codes = np.frombuffer(_STRING.sub("", text).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    brackets = codes[np.isin(codes, _BRACKETS)]
    if not len(brackets):
        return 0, 0
    opens = (brackets == ord("[")) | (brackets == ord("{"))
    steps = np.where(opens, 1, -1).astype(np.int32)
    return int(np.cumsum(steps).max()), int(opens.sum())
