"""One `workbench SUBCOMMAND ... --json` in a child process, off the window's thread: the Tests
dock's runs and the lints after a build (`dev_loop`). The window never waits for it: the answer
comes as a signal; a job past its time limit is stopped with everything it started (cargo, a
test binary: `childproc` starts those in sessions of their own, so they are found by parentage)."""

from __future__ import annotations

import json

import psutil
from PySide6.QtCore import QObject, QProcess, QTimer, Signal

from workbench.frozen import python_command


class ChildJob(QObject):
    """Runs one command at a time; `finished(exit_code, report, stderr)`: the JSON object the
    command printed last on stdout (None when it printed none, e.g. it was stopped)."""

    finished = Signal(int, object, str)

    def __init__(self, limit_s: float, parent: QObject | None = None):
        super().__init__(parent)
        self.limit_s = limit_s
        self.proc: QProcess | None = None
        self.timed_out = False
        self._watchdog = QTimer(self)
        self._watchdog.setSingleShot(True)
        self._watchdog.timeout.connect(self._time_is_up)

    def running(self) -> bool:
        return self.proc is not None

    def start(self, *args: str) -> None:
        """Start `workbench ARGS` (stop the one running first with `stop`)."""
        if self.proc is not None:
            raise RuntimeError("a job is running")
        program, *rest = python_command("workbench", *args)
        proc = QProcess(self)
        proc.finished.connect(lambda code, _status, p=proc: self._done(p, code))
        proc.errorOccurred.connect(lambda error, p=proc: self._failed(p, error))
        self.proc, self.timed_out = proc, False
        proc.start(program, rest)
        self._watchdog.start(int(self.limit_s * 1000))

    def stop(self) -> None:
        """Stop the job and every process it started (its answer is dropped)."""
        proc, self.proc = self.proc, None
        self._watchdog.stop()
        if proc is None:
            return
        _kill_tree(int(proc.processId()))
        proc.waitForFinished(2000)
        proc.deleteLater()

    def _time_is_up(self) -> None:
        proc = self.proc
        if proc is not None:
            self.timed_out = True
            _kill_tree(int(proc.processId()))  # `finished` follows

    def _failed(self, proc: QProcess, error) -> None:
        if error == QProcess.ProcessError.FailedToStart and proc is self.proc:
            self.proc = None
            self._watchdog.stop()
            self.finished.emit(-1, None, f"could not start the workbench: {proc.errorString()}")

    def _done(self, proc: QProcess, code: int) -> None:
        if proc is not self.proc:  # stopped: its answer is no longer wanted
            return
        self.proc = None
        self._watchdog.stop()
        out = bytes(proc.readAllStandardOutput()).decode("utf-8", "replace")
        err = bytes(proc.readAllStandardError()).decode("utf-8", "replace")
        proc.deleteLater()
        report = None
        for line in reversed(out.splitlines()):
            if line.startswith("{"):
                try:
                    report = json.loads(line)
                except ValueError:
                    continue
                break
        if self.timed_out:
            err = f"stopped after {self.limit_s:g} s" + (f": {err.strip()}" if err.strip() else "")
        self.finished.emit(code, report, err)


def _kill_tree(pid: int) -> None:
    if pid <= 0:
        return
    try:
        root = psutil.Process(pid)
        procs = [*root.children(recursive=True), root]
    except psutil.Error:
        return
    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            pass
