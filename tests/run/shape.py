"""The shape of a JSON document: every leaf replaced by its type name.

Lists of records keep every item (a run's results differ by backend); lists of plain values keep
their first item only (timing samples)."""

from __future__ import annotations

from typing import Any


def json_shape(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: json_shape(item) for key, item in value.items()}
    if isinstance(value, list):
        if value and isinstance(value[0], dict):
            return [json_shape(item) for item in value]
        return [json_shape(value[0])] if value else []
    if isinstance(value, bool) or value is None:
        return type(value).__name__
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__
