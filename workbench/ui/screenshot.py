"""Saving a picture of a widget (the whole window for `workbench gui --screenshot`)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QApplication, QWidget

from workbench.errors import WorkbenchError


def save_screenshot(widget: QWidget, path: str | Path) -> Path:
    """Render `widget` (works offscreen) and write it as a PNG; returns the path written."""
    path = Path(path)
    QApplication.processEvents()  # let pending layout and paint events land first
    pixmap = widget.grab()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WorkbenchError(f"cannot create {path.parent}: {exc}") from exc
    if pixmap.isNull() or not pixmap.save(str(path), "PNG"):
        raise WorkbenchError(f"cannot write the screenshot to {path}")
    return path
