"""An IPython console inside the window, on the same services as the panels (napari-console pattern).

The kernel runs in-process, so code typed here sees the live objects. What it exposes is small
and documented in the banner. `build()` and `run()` call the same core services as the CLI on a
thread of their own and return at once with a `Job` (`.done()`, `.result()` waits): the window
keeps drawing, and their results reach the panels like the window's own Run. The console is
themed like the window (dark), and `results` / `outputs` print as short summaries.
"""

from __future__ import annotations

import os
from concurrent.futures import Future
from typing import Any, Protocol, runtime_checkable

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import QVBoxLayout, QWidget

from workbench.backends import parse_backends
from workbench.ui import theme

os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # silence debugpy's frozen-modules warning

BANNER = """\
Rust GPU workbench console (IPython, in-process: these are the window's live objects)

  project                          the open Project (root, manifest, sources)
  results                          the last run's RunResults (backend, device, check, timing, ...)
  outputs                          output arrays of the last run: outputs["wgsl"]["y"] (numpy)
  build(backends=None)             start a build -> Job; .result() is {backend: BuildResult}
  run(backends=None, devices=None) start a build + run -> Job; .result() is the RunReport
                                   backends: list or "cpu,wgsl"; devices: ["cpu", "wgpu:0"] or "cpu,wgpu:0"

build() and run() return at once (the window keeps working); job.done() says whether it
finished, job.result() waits for it. Results reach the panels as the window's own Run does.
Defaults are the window's selected backends and devices.
"""

CONSOLE_STYLE = theme.CONSOLE_STYLE  # the window's dark palette, for its text area and prompts
CONSOLE_SYNTAX_STYLE = "monokai"


class Job:
    """A build or run started from the console: `.done()`, `.result(timeout=None)` (waits; in the
    console this blocks the prompt, not the work), `.cancel()`."""

    def __init__(self, what: str, future: Future, on_result=None, cancel=None):
        self.what = what
        self._future = future
        self._on_result = on_result
        self._cancel = cancel

    def done(self) -> bool:
        return self._future.done()

    def result(self, timeout: float | None = None) -> Any:
        value = self._future.result(timeout)
        if self._on_result is not None:
            self._on_result(value)  # `results` / `outputs` are fresh on the next line already
        return value

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self._future.exception(timeout)

    def cancel(self) -> None:
        """Cancel the work in flight (finished results stay)."""
        if self._cancel is not None and not self.done():
            self._cancel()

    def __repr__(self) -> str:
        if not self._future.done():
            return f"<{self.what} job: running… (.result() waits)>"
        error = self._future.exception()
        if error is not None:
            return f"<{self.what} job: failed: {error}>"
        return f"<{self.what} job: done: {_summary(self._future.result())}>"


def _summary(value: Any) -> str:
    if isinstance(value, dict):  # {backend: BuildResult}
        return ", ".join(f"{name} {getattr(r, 'status', '?')}" for name, r in value.items())
    return repr(value)


class Results(list):
    """The last run's RunResults; prints one short line per result."""

    def __repr__(self) -> str:
        if not self:
            return "[]  (no run yet)"
        return "[\n" + "".join(f"  {r!r},\n" for r in self) + "]"


class Outputs(dict):
    """The last run's output arrays per backend; prints their names, types and lengths."""

    def __repr__(self) -> str:
        parts = []
        for backend, arrays in self.items():
            shapes = ", ".join(
                f"{name}: {a.dtype}[{', '.join(map(str, a.shape))}]" for name, a in arrays.items()
            )
            parts.append(f"  {backend!r}: {{{shapes}}}")
        return "{\n" + ",\n".join(parts) + "\n}" if parts else "{}"


def _as_list(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return list(value)


def _backend_names(value: Any) -> list[str] | None:
    """Checked backend names from a list or "cpu,wgsl" (None: the window's selection)."""
    return parse_backends(",".join(_as_list(value))) if value else None


@runtime_checkable
class ConsoleBridge(Protocol):
    """The bridge members the console uses (`ServiceBridge` has them: tests/ui/test_typed_events.py)."""

    projectChanged: SignalInstance
    runFinished: SignalInstance
    project: Any
    last_report: Any

    def start_build(self, backends: list[str] | None = None) -> Future: ...
    def start_run(self, backends: list[str] | None = None, devices: list[str] | None = None) -> Future: ...
    def cancel(self) -> None: ...


class ConsolePanel(QWidget):
    """A RichJupyterWidget on an in-process kernel whose namespace is the workbench's session API."""

    def __init__(self, bridge: ConsoleBridge, parent: QWidget | None = None):
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
        # IPython's in-process shell is one per process: a new console starts it afresh (empty
        # namespace, In [1]) rather than inheriting an earlier console's session.
        self.shell.reset(new_session=True)

        self.widget = RichJupyterWidget(self)
        self.widget.setObjectName("console")
        self.widget.banner = BANNER
        self.widget.kernel_manager = self.kernel_manager
        self.widget.kernel_client = self.kernel_client
        self.widget.enable_calltips = True
        self.widget.syntax_style = CONSOLE_SYNTAX_STYLE
        self.widget.style_sheet = CONSOLE_STYLE
        self.widget._syntax_style_changed()
        self.widget._style_sheet_changed()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.widget)
        self.setFocusProxy(self.widget)

        self.push(
            {
                "project": bridge.project,
                "results": Results(),
                "outputs": Outputs(),
                "build": self._build,
                "run": self._run,
            }
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
        if self._closed:
            return
        self.push({"results": Results(report.results), "outputs": Outputs(report.outputs or {})})

    def _build(self, backends: Any = None) -> Job:
        """Start a build; returns a Job whose .result() is {backend: BuildResult}."""
        future = self.bridge.start_build(_backend_names(backends))
        return Job("build", future, cancel=self.bridge.cancel)

    def _run(self, backends: Any = None, devices: Any = None) -> Job:
        """Start a build + run; returns a Job whose .result() is the RunReport (and which
        updates `results` and `outputs`, as the window does when the run finishes)."""
        future = self.bridge.start_run(_backend_names(backends), _as_list(devices))
        return Job("run", future, on_result=self._update_report, cancel=self.bridge.cancel)

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
