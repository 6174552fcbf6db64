"""The kernel project manifest (`workbench.toml`): records, the validating reader, evaluation.

`records.py` holds what a manifest says (`Manifest`, `Kernel`, `BufferArg`, ...), `reader.py` turns
the file into them (every error located: file, line, key), `evaluation.py` evaluates a kernel's
expressions at one set of sizes (`Kernel.evaluate`). Callers import from here.
"""

from workbench.manifest.evaluation import (
    FLOAT_MAX,
    INT_RANGES,
    MANIFEST_NAME,
    TYPE_BYTES,
    Values,
    Where,
    fit_scalar,
)
from workbench.manifest.reader import load_manifest, parse_manifest
from workbench.manifest.records import (
    DIRECTIONS,
    ELEMENT_TYPES,
    INIT_KINDS,
    SCALAR_TYPES,
    WGPU_SCALAR_MODES,
    Arg,
    BufferArg,
    Check,
    Init,
    Kernel,
    Launch,
    Manifest,
    ScalarArg,
    WgpuScalars,
)

__all__ = [
    "DIRECTIONS",
    "ELEMENT_TYPES",
    "FLOAT_MAX",
    "INIT_KINDS",
    "INT_RANGES",
    "MANIFEST_NAME",
    "SCALAR_TYPES",
    "TYPE_BYTES",
    "WGPU_SCALAR_MODES",
    "Arg",
    "BufferArg",
    "Check",
    "Init",
    "Kernel",
    "Launch",
    "Manifest",
    "ScalarArg",
    "Values",
    "WgpuScalars",
    "Where",
    "fit_scalar",
    "load_manifest",
    "parse_manifest",
]
