"""Shared memory between the workbench and its worker processes: anonymous memfd segments.

A `SharedArray` is one numpy array backed by a `memfd_create` file that the caller maps and a
worker maps too (the descriptor travels over a Unix socket with SCM_RIGHTS, see `FdChannel`).
Upload and download are then a device copy from or into the mapping, never a copy through a pipe;
the framed protocol carries only each array's name, dtype and shape (`describe`).

Cleanup needs no code: a memfd has no name in any file system (nothing under /dev/shm), and the
kernel frees its pages when the last descriptor and the last mapping are gone, that is when both
processes have closed it or died (kill -9 included). There is nothing that can be leaked.
"""

from __future__ import annotations

import mmap
import os
import socket
from typing import Any

import numpy as np

#: Prefix of every segment's memfd name (shown as "/memfd:wb-PID-LABEL" in /proc/PID/maps).
NAME_PREFIX = "wb-"


def available() -> bool:
    """True where memfd segments and descriptor passing work (Linux)."""
    return hasattr(os, "memfd_create") and hasattr(socket, "send_fds")


class SharedArray:
    """One 1-D array in its own memfd segment. `array` is the caller's view; `fd` is what a
    worker maps. The segment lives while this object (or a view of `array`) or a worker holds it."""

    def __init__(self, length: int, dtype: Any, label: str = "buffer"):
        self.dtype = np.dtype(dtype)
        self.length = int(length)
        self.nbytes = self.length * self.dtype.itemsize
        self.fd = os.memfd_create(f"{NAME_PREFIX}{os.getpid()}-{label}", os.MFD_CLOEXEC)
        try:
            os.ftruncate(self.fd, max(self.nbytes, 1))
            # A zero-length mmap is refused: map one page and view none of it.
            self._map = mmap.mmap(self.fd, max(self.nbytes, 1))
        except BaseException:
            os.close(self.fd)
            raise
        self.array = np.frombuffer(self._map, self.dtype, count=self.length)

    def describe(self, name: str) -> dict[str, Any]:
        return {"name": name, "dtype": self.dtype.str, "length": self.length}

    def close(self) -> None:
        """Close the descriptor now; the mapping goes with the last view of `array`."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        try:
            self.close()
        except OSError:
            pass


def map_fd(fd: int, dtype: Any, length: int, writable: bool = True) -> np.ndarray:
    """Map a segment received from the other side as an array (the descriptor may be closed
    afterwards: the mapping keeps the segment alive). Read-only maps fault on any write."""
    dtype = np.dtype(dtype)
    nbytes = int(length) * dtype.itemsize
    size = os.fstat(fd).st_size
    if size < nbytes:
        raise ValueError(f"shared segment holds {size} bytes, {length} × {dtype} needs {nbytes}")
    prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
    # MAP_POPULATE: the pages the other side wrote are mapped in one call, not fault by fault.
    flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
    mapped = mmap.mmap(fd, max(nbytes, 1), flags=flags, prot=prot)
    return np.frombuffer(mapped, dtype, count=int(length))


class FdChannel:
    """One end of a Unix socket pair that carries descriptors (SCM_RIGHTS) next to the frame
    stream: the caller sends a request's segments here, then the request's frame on the pipe."""

    #: The most descriptors one request carries (far more buffers than any kernel has).
    MAX_FDS = 256

    def __init__(self, sock: socket.socket):
        self.sock = sock

    @classmethod
    def pair(cls) -> tuple[FdChannel, socket.socket]:
        """(the caller's channel, the socket to hand to the child; close it after spawning)."""
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        child.set_inheritable(True)
        return cls(parent), child

    def send(self, fds: list[int]) -> None:
        socket.send_fds(self.sock, [len(fds).to_bytes(4, "little")], fds)

    def receive(self) -> list[int]:
        data, fds, _flags, _addr = socket.recv_fds(self.sock, 4, self.MAX_FDS)
        if len(data) != 4:
            raise ConnectionError("the descriptor channel closed")
        expected = int.from_bytes(data, "little")
        if len(fds) != expected:
            for fd in fds:
                os.close(fd)
            raise ConnectionError(f"expected {expected} shared segments, received {len(fds)}")
        return list(fds)

    def close(self) -> None:
        self.sock.close()
