"""The `WindowSession`'s background probes, each on a thread of its own so the owner's thread never
waits: the default backends (the runtimes' workers are asked), the devices (then the GPU hosts'
over ssh) and the line tables of a build. Each answers through `_post`, as the services do."""

from __future__ import annotations

import threading
from typing import Any

from workbench.project import Project


class SessionProbes:
    """Mixed into `WindowSession` (its state: the project, the run service, `_post`, the threads)."""

    project: Project | None
    run_service: Any
    _closed: bool
    _defaults_thread: threading.Thread | None
    _device_thread: threading.Thread | None
    _line_threads: dict[str, threading.Thread]
    _line_budget: Any

    def _post(self, item: Any) -> None:  # WindowSession's
        raise NotImplementedError

    def _show_default_backends(self) -> None:
        """Find the default backends off the owner's thread (it asks the runtimes' workers)."""
        project = self.project
        if self._closed or project is None:
            return
        if self._defaults_thread is not None and self._defaults_thread.is_alive():
            return

        def work() -> None:
            current = project
            try:
                while current is not None and not self._closed:
                    backends = self.run_service.default_backends(current)
                    if current is self.project:
                        self._post(("default-backends", (current, backends)))
                        return
                    current = self.project  # another project opened meanwhile: its defaults
            except Exception as exc:  # a broken probe: the status bar says so, the window goes on
                self._post(("job-failed", f"could not find the default backends: {exc}"))

        self._defaults_thread = threading.Thread(target=work, name="wb-default-backends", daemon=True)
        self._defaults_thread.start()

    def refresh_devices(self, refresh: bool = False) -> None:
        """List devices on a background thread; `DevicesListed` carries the answer."""
        if self._closed or (self._device_thread is not None and self._device_thread.is_alive()):
            return

        def work() -> None:
            from workbench.run.devices import list_devices

            try:
                info = list_devices(refresh=refresh)
            except Exception as exc:  # a broken probe must reach the user as text
                info = {"error": f"could not list devices: {exc}"}
            self._post(("devices", info))
            if "error" not in info:  # then the GPU hosts' devices, probed over ssh (slower)
                from workbench.remote.hosts import HostStore
                from workbench.remote.probe import all_hosts_devices

                if HostStore().names():
                    self._post(("devices", dict(info, hosts=all_hosts_devices(refresh=refresh))))

        self._device_thread = threading.Thread(target=work, name="wb-list-devices", daemon=True)
        self._device_thread.start()

    def request_line_info(self, artifact_dir: str) -> bool:
        """Build the line tables of an nvptx or cpu build (and an nvptx build's SASS where nvdisasm
        is) in the background (`build.line_info`, `build.sass`); `LineInfoReady` answers. False
        when one is in flight for that folder already."""
        if self._closed or self.project is None or not artifact_dir:
            return False
        thread = self._line_threads.get(artifact_dir)
        if thread is not None and thread.is_alive():
            return False
        from workbench.build.process import Budget

        if self._line_budget is None:
            self._line_budget = Budget()
        project, budget = self.project, self._line_budget

        def work() -> None:
            from workbench.build.sass import ensure_line_views

            try:
                path = ensure_line_views(project, artifact_dir, budget)  # + SASS where nvdisasm is
                self._post(("line-info", (artifact_dir, path, "")))
            except Exception as exc:  # a failed or cancelled build: said in the artifacts view
                self._post(("line-info", (artifact_dir, None, str(exc) or type(exc).__name__)))

        thread = threading.Thread(target=work, name="wb-line-info", daemon=True)
        self._line_threads[artifact_dir] = thread
        thread.start()
        return True
