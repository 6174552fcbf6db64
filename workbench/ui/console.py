"""An IPython console inside the window, on the same services as the panels (napari-console pattern).

The kernel runs in-process, so code typed here sees the live objects. What it exposes is small
and documented in the banner; `build()` and `run()` call the same core services as the CLI and
block the console (not a thread) until they return, like any IPython cell.
"""

from __future__ import annotations

import os
from typing import Any

from PySide6.QtWidgets import QVBoxLayout, QWidget

from workbench.backends import parse_backends

os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # silence debugpy's frozen-modules warning

BANNER = """\
Rust GPU workbench console (IPython, in-process: these are the window's live objects)

  project                          the open Project (root, manifest, sources)
  results                          the last run's RunResults (backend, device, check, timing, ...)
  outputs                          output arrays of the last run: outputs["wgsl"]["y"] (numpy)
  build(backends=None)             build now -> {backend: BuildResult}; backends: list or "cpu,wgsl"
  run(backends=None, devices=None) build + run now -> RunReport; devices: ["cpu", "wgpu:0"] or "cpu,wgpu:0"

Defaults are the window's selected backends and devices.
"""


def _as_list(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return list(value)


def _backend_names(value: Any) -> list[str] | None:
    """Checked backend names from a list or "cpu,wgsl" (None: the window's selection)."""
    return parse_backends(",".join(_as_list(value))) if value else None


class ConsolePanel(QWidget):
    """A RichJupyterWidget on an in-process kernel whose namespace is the workbench's session API."""

    def __init__(self, bridge, parent: QWidget | None = None):
        super().__init__(parent)
        from qtconsole.inprocess import QtInProcessKernelManager
        from qtconsole.rich_jupyter_widget import RichJupyterWidget

        self.setObjectName("ConsolePanel")
        self.bridge = bridge
        self._closed = False
        self.kernel_manager = QtInProcessKernelManager()
        self.kernel_manager.start_kernel(show_banner=False)
        self.kernel_manager.kernel.gui = "qt"
        self.kernel_client = self.kernel_manager.client()
        self.kernel_client.start_channels()
        self.shell = self.kernel_manager.kernel.shell

        self.widget = RichJupyterWidget(self)
        self.widget.setObjectName("console")
        self.widget.banner = BANNER
        self.widget.kernel_manager = self.kernel_manager
        self.widget.kernel_client = self.kernel_client
        self.widget.enable_calltips = True
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.widget)
        self.setFocusProxy(self.widget)

        self.push(
            {"project": bridge.project, "results": [], "outputs": {}, "build": self._build, "run": self._run}
        )
        self._update_report(bridge.last_report)
        bridge.projectChanged.connect(self._update_project)
        bridge.runFinished.connect(self._update_report)

    # ------------------------------------------------------------------ namespace
    def push(self, variables: dict[str, Any]) -> None:
        """Put names into the console's namespace."""
        self.shell.push(variables)

    def namespace(self) -> dict[str, Any]:
        return self.shell.user_ns

    def execute(self, source: str, hidden: bool = False) -> None:
        """Run code in the console as if typed (shown unless hidden)."""
        self.widget.execute(source, hidden=hidden)

    def _update_project(self, project: Any) -> None:
        self.push({"project": project})

    def _update_report(self, report: Any) -> None:
        if report is None:
            return
        self.push({"results": list(report.results), "outputs": dict(report.outputs or {})})

    def _build(self, backends: Any = None) -> dict[str, Any]:
        """Build now; returns {backend: BuildResult}."""
        return self.bridge.build_blocking(_backend_names(backends))

    def _run(self, backends: Any = None, devices: Any = None) -> Any:
        """Build and run now; returns the RunReport (results and outputs are updated too)."""
        return self.bridge.run_blocking(_backend_names(backends), _as_list(devices))

    # ------------------------------------------------------------------ teardown
    def shutdown(self) -> None:
        """Stop the kernel and its channels and delete the console widgets. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self.bridge.projectChanged.disconnect(self._update_project)
            self.bridge.runFinished.disconnect(self._update_report)
        except (RuntimeError, TypeError):
            pass
        self.kernel_client.stop_channels()
        if self.kernel_manager.has_kernel:
            self.kernel_manager.shutdown_kernel()
        # RichJupyterWidget does not clean these up itself (napari-console does the same).
        self.widget._completion_widget.deleteLater()
        self.widget._call_tip_widget.deleteLater()
        self.widget.deleteLater()

    def closeEvent(self, event) -> None:
        self.shutdown()
        super().closeEvent(event)
