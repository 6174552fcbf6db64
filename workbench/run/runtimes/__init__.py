"""Runtimes that execute one kernel launch: cpu (ctypes), cuda (pycuda), wgpu (wgpu-py)."""

from workbench.run.runtimes.base import Prepared, Runtime, RuntimeFailure, get_runtime

__all__ = ["Prepared", "Runtime", "RuntimeFailure", "get_runtime"]
