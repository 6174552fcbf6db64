"""The wgpu device a kernel meets: the features it is opened with, one list for run and build.

The wgpu runtime opens each adapter with every feature of `WANTED_FEATURES` the adapter has; the
build's naga validator (`shader_check`) opens its device through the same `open_device`, so a
shader is validated with exactly what the device will grant when it runs (push constants,
subgroups, f16, 64-bit types). naga names what a shader lacks as a capability
(`Capabilities(IMMEDIATES)`) or a WGSL `enable` extension; `explain_missing` turns that into the
wgpu feature, and says whether the runtime requests it and which adapters here have it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

#: Device features requested whenever the adapter has them: what compute modules may need.
WANTED_FEATURES = (
    "timestamp-query",
    "timestamp-query-inside-passes",
    "immediates",
    "shader-f64",
    "shader-int64",
    "shader-f16",
    "shader-float32-atomic",
    "shader-int64-atomic-all-ops",
    "shader-int64-atomic-min-max",
    "subgroup",
    "subgroup-barrier",
)

#: naga validator capability (as its errors spell it) -> the wgpu feature that grants it.
CAPABILITY_FEATURES = {
    "IMMEDIATES": "immediates",
    "FLOAT64": "shader-f64",
    "SHADER_INT64": "shader-int64",
    "SHADER_FLOAT16": "shader-f16",
    "SHADER_FLOAT32_ATOMIC": "shader-float32-atomic",
    "SHADER_INT64_ATOMIC_ALL_OPS": "shader-int64-atomic-all-ops",
    "SHADER_INT64_ATOMIC_MIN_MAX": "shader-int64-atomic-min-max",
    "SUBGROUP": "subgroup",
    "SUBGROUP_BARRIER": "subgroup-barrier",
    "PRIMITIVE_INDEX": "primitive-index",
    "RAY_QUERY": "experimental-ray-query",
    "SHADER_I16": "shader-i16",
}
#: WGSL `enable NAME;` extension -> the wgpu feature that allows it.
EXTENSION_FEATURES = {
    "f16": "shader-f16",
    "subgroups": "subgroup",
    "wgpu_ray_query": "experimental-ray-query",
    "primitive_index": "primitive-index",
    "clip_distances": "clip-distances",
    "dual_source_blending": "dual-source-blending",
}

# naga says it two ways: at validation ("Capability Capabilities(X) is not supported") and where
# a device lacks what a function needs ("Shader requires capability Capabilities(X)").
_CAPABILITY = re.compile(
    r"Capabilit(?:y|ies) Capabilities\(([A-Z0-9_ |]+)\) (?:is|are) not supported"
    r"|requires capability Capabilities\(([A-Z0-9_ |]+)\)"
)
_EXTENSION = re.compile(r"the `(\w+)` extension is not supported")


def granted(adapter_features: Iterable[str]) -> list[str]:
    """The features a device on an adapter with `adapter_features` is opened with."""
    have = set(adapter_features)
    return [f for f in WANTED_FEATURES if f in have]


def open_device(adapter: Any, label: str) -> Any:
    """A device on `adapter` with every wanted feature it has and all of its limits."""
    return adapter.request_device_sync(
        label=label, required_features=granted(adapter.features), required_limits=dict(adapter.limits)
    )


def missing_features(message: str) -> list[tuple[str, str]]:
    """(what naga named, wgpu feature) for each capability or extension naga says is missing."""
    found: list[tuple[str, str]] = []
    for m in _CAPABILITY.finditer(message):
        for name in (n.strip() for n in (m.group(1) or m.group(2)).split("|")):
            found.append((f"naga capability {name}", CAPABILITY_FEATURES.get(name, "")))
    for m in _EXTENSION.finditer(message):
        found.append((f"WGSL `enable {m.group(1)}`", EXTENSION_FEATURES.get(m.group(1), "")))
    return list(dict.fromkeys(found))


def explain_missing(message: str, adapters: dict[str, Iterable[str]]) -> str:
    """What a capability failure means here: the wgpu feature each missing capability needs,
    whether the wgpu runtime requests it, and which adapters (name -> features) have it; "" when
    naga's message names no missing capability."""
    parts = []
    for what, feature in missing_features(message):
        if not feature:
            parts.append(f"{what} has no wgpu feature the workbench knows of")
            continue
        having = [name for name, features in adapters.items() if feature in set(features)]
        where = (f"adapters with it: {', '.join(having)}" if having
                 else f"no wgpu adapter here has it ({', '.join(adapters) or 'no adapter'})")  # fmt: skip
        asked = "" if feature in WANTED_FEATURES else "; the wgpu runtime does not request it"
        parts.append(f"{what} needs the wgpu feature '{feature}': {where}{asked}")
    return "; ".join(parts)


def unsupported_here(message: str, device: str, device_features: Iterable[str]) -> str:
    """Why a device refused a shader for want of a feature, as one sentence that starts "not
    supported on DEVICE" ("" when naga's message names no feature the device lacks): a run on an
    adapter without, say, 'subgroup' says so rather than only quoting naga."""
    have = set(device_features)
    lacking = [
        (what, feature) for what, feature in missing_features(message) if feature and feature not in have
    ]
    if not lacking:
        return ""
    needs = "; ".join(f"{what} needs the wgpu feature '{feature}'" for what, feature in lacking)
    return f"not supported on {device}: {needs}, which this adapter does not have (run it on a wgpu adapter that has it)"
