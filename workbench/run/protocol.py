"""The message protocol between the run service and its worker processes.

A message is one frame on a byte stream:

    b"WBF1" | header length (u32, little endian) | payload length (u64) | header | payload

The header is UTF-8 JSON (a dict). Numpy arrays travel raw in the payload, one after another,
described in the header under "arrays": `[{"name", "dtype", "shape", "nbytes"}, ...]`. The protocol
only needs a readable and a writable binary stream (a pipe pair, a socket's files, ssh's stdin and
stdout), so a worker can run on another host unchanged.

Requests carry "op" (hello, devices, prepare, upload, launch, measure, download, close,
shutdown); replies carry the result, or {"error": message} when the request failed. A long
request (measure) may send interim frames {"progress": {...}} before its reply.
"""

from __future__ import annotations

import json
import struct
from typing import Any, BinaryIO

import numpy as np

MAGIC = b"WBF1"
_PREFIX = struct.Struct("<4sIQ")
#: Bounds that catch a garbled stream before it allocates gigabytes.
MAX_HEADER_BYTES = 16 * 1024 * 1024
MAX_PAYLOAD_BYTES = 1 << 40


class ProtocolError(ConnectionError):
    """The stream does not hold a valid frame (garbled, truncated or from a different program)."""


class ProtocolEOF(ProtocolError):
    """The stream ended cleanly between two frames: the other side has gone."""


def _read_exact(
    stream: BinaryIO, size: int, into: memoryview | None = None, frame_start: bool = False
) -> memoryview:
    """Read exactly `size` bytes (into `into` when given); short reads from pipes are retried."""
    buffer = into if into is not None else memoryview(bytearray(size))
    got = 0
    while got < size:
        readinto = getattr(stream, "readinto", None)
        if readinto is not None:
            n = readinto(buffer[got:size])
        else:
            chunk = stream.read(size - got)
            n = len(chunk) if chunk else 0
            buffer[got : got + n] = chunk or b""
        if not n:
            if got == 0 and frame_start:
                raise ProtocolEOF("the other side closed the stream")
            raise ProtocolError(f"stream ended inside a frame ({got} of {size} bytes)")
        got += n
    return buffer


def encode_arrays(arrays: dict[str, np.ndarray] | None) -> tuple[list[dict[str, Any]], list[np.ndarray]]:
    """Header entries and the contiguous arrays to send, in the same order."""
    entries: list[dict[str, Any]] = []
    payloads: list[np.ndarray] = []
    for name, array in (arrays or {}).items():
        array = np.ascontiguousarray(array)
        if array.dtype.hasobject:
            raise TypeError(f"array {name!r} has dtype object; only plain numeric arrays can be sent")
        entries.append(
            {"name": name, "dtype": array.dtype.str, "shape": list(array.shape), "nbytes": array.nbytes}
        )
        payloads.append(array)
    return entries, payloads


def write_message(
    stream: BinaryIO, header: dict[str, Any], arrays: dict[str, np.ndarray] | None = None
) -> None:
    """Write one frame: the header dict and the arrays (by name) as raw payloads; then flush."""
    entries, payloads = encode_arrays(arrays)
    header = dict(header)
    if entries:
        header["arrays"] = entries
    head = json.dumps(header, separators=(",", ":"), allow_nan=True).encode("utf-8")
    total = sum(e["nbytes"] for e in entries)
    stream.write(_PREFIX.pack(MAGIC, len(head), total))
    stream.write(head)
    for array in payloads:
        if array.nbytes:
            stream.write(memoryview(array.reshape(-1)).cast("B"))
    stream.flush()


def read_message(stream: BinaryIO) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read one frame: (header without "arrays", {name: array}). Raises ProtocolEOF at a clean end."""
    magic, head_len, total = _PREFIX.unpack(_read_exact(stream, _PREFIX.size, frame_start=True))
    if magic != MAGIC:
        raise ProtocolError(f"not a workbench frame (starts with {bytes(magic)!r}, expected {MAGIC!r})")
    if head_len > MAX_HEADER_BYTES or total > MAX_PAYLOAD_BYTES:
        raise ProtocolError(f"frame too large (header {head_len} bytes, payload {total} bytes)")
    try:
        header = json.loads(bytes(_read_exact(stream, head_len)).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"frame header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise ProtocolError("frame header is not a JSON object")
    try:
        entries = [_array_entry(e) for e in header.pop("arrays", None) or []]
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"frame header describes its arrays badly: {exc!r}") from None
    if sum(nbytes for _, _, _, nbytes in entries) != total:
        raise ProtocolError("frame payload length does not match its arrays")
    arrays: dict[str, np.ndarray] = {}
    for name, dtype, shape, nbytes in entries:
        array = np.empty(shape, dtype)
        if array.nbytes != nbytes:
            raise ProtocolError(f"array {name!r}: shape and dtype do not match its size")
        if array.nbytes:
            _read_exact(stream, array.nbytes, memoryview(array.reshape(-1)).cast("B"))
        arrays[name] = array
    return header, arrays


def _array_entry(entry: dict[str, Any]) -> tuple[str, np.dtype, tuple[int, ...], int]:
    """(name, dtype, shape, nbytes) of one header "arrays" entry."""
    shape = tuple(int(s) for s in entry["shape"])
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimension in {shape}")
    return str(entry["name"]), np.dtype(entry["dtype"]), shape, int(entry["nbytes"])


class Connection:
    """Both ends of one conversation: requests out on `writer`, replies in from `reader`."""

    def __init__(self, reader: BinaryIO, writer: BinaryIO):
        self.reader = reader
        self.writer = writer

    def send(self, header: dict[str, Any], arrays: dict[str, np.ndarray] | None = None) -> None:
        write_message(self.writer, header, arrays)

    def receive(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return read_message(self.reader)

    def request(
        self, header: dict[str, Any], arrays: dict[str, np.ndarray] | None = None
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Send one request and wait for its reply."""
        self.send(header, arrays)
        return self.receive()
