"""The Tuning panel: hot-reload a kernel's tunables, sweep them in the background, apply the best.

- one control per tunable (`controls.py`): changing one sets the bridge's tunables and runs at
  once (the LiveLoop rebuilds what the configuration changes; each configuration is its own
  cached build);
- "Sweep" runs the configurations a strategy chooses (`controls.SweepOptions`) on the sweep runner
  (`runner.py`); progress and Cancel; every configuration is verified, recorded (a second sweep
  resumes) and measured in interleaved rounds, ranked on the spread between rounds (the
  Configurations tab: `table.py`); the plots (`parameter_plot.py`) open on a backend × device the
  tunables affect, the verdict (winner beyond noise, or the tie set) written above;
- "Apply" writes the winner of a backend × device the tunables affect into workbench.toml as the
  defaults (only those values; `profile/apply.choose_slot` refuses a slot without one); when it
  is disabled, the reason is written beside it;
- "Cluster" chooses where a sweep's configurations run (`cluster_control.py`);
- "Size sweep" runs a size range and draws GB/s against the size (`size_tab.py`).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol, runtime_checkable

from PySide6.QtCore import QSignalBlocker, QTimer, Signal, SignalInstance
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.errors import WorkbenchError
from workbench.profile.tuning import ranking, tuning_view
from workbench.profile.tuning.apply import choose_slot
from workbench.profile.tuning.events import (
    SweepEntries,
    SweepEvent,
    SweepFinished,
    SweepNote,
    SweepSearched,
)
from workbench.ui.layout_fit import LinesLabel, keep_room_when_hidden, wrap_within
from workbench.ui.tuning.cluster_control import ClusterControl
from workbench.ui.tuning.controls import SweepOptions, show_config, tunable_control
from workbench.ui.tuning.parameter_plot import (
    ParameterPlot,
    convergence_plot,
    draw_convergence,
    parameter_data,
)
from workbench.ui.tuning.runner import CopyCeilings, SweepRunner, finished_text, searching_text, started_text
from workbench.ui.tuning.size_tab import SizeSweepTab
from workbench.ui.tuning.table import ConfigurationsTable, config_text
from workbench.ui.visibility import WhenSeen

log = logging.getLogger(__name__)

APPLY_TIP = "write the best configuration of the chosen backend × device into workbench.toml"


@runtime_checkable
class TuningBridge(Protocol):
    """The bridge members the tuning panel uses (`ServiceBridge` has them:
    tests/ui/test_typed_events.py)."""

    projectChanged: SignalInstance
    runFinished: SignalInstance  # a hot-reload run's "running …" line goes when it is done
    project: Any
    cache_dir: Any

    def backends(self) -> list[str]: ...
    def devices(self) -> list[str]: ...
    def sizes(self) -> dict[str, int]: ...
    def tunables(self) -> dict[str, int | float]: ...
    def set_tunables(self, tunables: dict[str, int | float] | None) -> None: ...
    def run(self) -> None: ...


class TuningPanel(QWidget):
    """See the module docstring. `bridge` is the window's `ServiceBridge` (None: no live runs)."""

    sweepFinished = Signal(object)  # SweepResult | None
    applied = Signal(object)  # the applied configuration

    def __init__(
        self,
        bridge: TuningBridge | None = None,
        parent: QWidget | None = None,
        *,
        db_path=None,
        timing=None,
        cache_dir=None,
    ):
        super().__init__(parent)
        self.bridge = bridge
        self.db_path = db_path
        self.timing = timing
        if cache_dir is None and bridge is not None:
            cache_dir = bridge.cache_dir
        self.cache_dir = cache_dir
        self.project = None
        self.kernel = None
        self.controls: dict[str, QComboBox] = {}
        self.entries: list[dict[str, Any]] = []
        self.best: dict[str, dict[str, Any]] = {}
        self.evaluations: list[Any] = []  # a search's counted evaluations (`strategies.Evaluation`)
        self._user_slot: str | None = None  # a backend × device the user chose (kept while it exists)
        self.runner = SweepRunner(self._on_event)
        self._size_mode = False
        # A sweep's results are drawn at most once per turn of the event loop, and not while the
        # panel is off screen (drawn when it is shown): each draw re-lays out and repaints the plot.
        self._results_view = WhenSeen(self, lambda: self._redraw(plot_now=False), defer=True)
        # ... and the plot in a turn of its own after the table, verdict and buttons: the loop
        # handles input (and paints) between the two (together they were one 40-50 ms stall).
        self._plot_timer = QTimer(self)
        self._plot_timer.setSingleShot(True)
        self._plot_timer.setInterval(0)
        self._plot_timer.timeout.connect(self._draw_plot)
        self._build_ui()
        if bridge is not None:
            bridge.projectChanged.connect(self.set_project)
            bridge.runFinished.connect(self._run_finished)  # a hot-reload run's "running …" line goes
            if bridge.project is not None:
                self.set_project(bridge.project)

    # ================================================================ construction
    def _build_ui(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.title = wrap_within(QLabel("No kernel with [kernel.tunables]"))  # or a manifest error
        layout.addWidget(self.title)
        self.form = QFormLayout()
        layout.addLayout(self.form)

        #: The strategy, the budgets (evaluations, seconds) and the rounds.
        self.options = SweepOptions()
        o = self.options
        self.strategy, self.budget, self.budget_s, self.rounds = o.strategy, o.budget, o.budget_s, o.rounds
        #: Rounds re-timing a would-be winner side by side with the runner-up before it is named.
        self.confirm_rounds = 2
        self.sweep_button = QPushButton("Sweep")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.apply_button = QPushButton("Apply")
        self.apply_button.setToolTip(APPLY_TIP)
        self.apply_button.setEnabled(False)
        layout.addLayout(self.options.row)
        row = QHBoxLayout()
        self.cluster = ClusterControl()
        #: The parser's message for a refused spec (empty when the spec is valid).
        self.cluster_error = self.cluster.error_label
        row.addWidget(QLabel("cluster"))
        row.addWidget(self.cluster, 1)
        layout.addLayout(row)
        layout.addWidget(self.cluster_error)
        self.cluster.check()
        row = QHBoxLayout()
        for widget in (self.sweep_button, self.cancel_button, self.apply_button):
            row.addWidget(widget)
        #: Why Apply is disabled (empty while it is enabled). This label, the status and the
        #: verdict keep their height whatever their text (`LinesLabel`): the plot under them keeps
        #: its geometry as a sweep's results come (it was re-laid out and repainted at each).
        self.apply_reason = LinesLabel("", lines=3)
        self.apply_reason.setObjectName("apply-reason")
        row.addWidget(self.apply_reason, 1)
        layout.addLayout(row)

        row = QHBoxLayout()
        # Before the first sweep there is nothing to count nor to choose: the bar and the slot
        # chooser are hidden until then (an unlabelled empty bar said nothing).
        self.progress = QProgressBar()
        self.progress.setFormat("%v of %m runs")
        self.progress.setToolTip(
            "runs of the sweep done (rounds × configurations, then the leaders re-timed)"
        )
        self.progress.hide()
        self.status = LinesLabel("", lines=3)  # a sweep error must not widen the window
        self.slot = QComboBox()
        self.slot.setToolTip("backend × device: the heatmap's and Apply's choice")
        self.slot.currentTextChanged.connect(self._slot_chosen)
        self.slot_label = QLabel("backend × device:")
        row.addWidget(self.progress, 1)
        row.addWidget(self.slot_label)
        row.addWidget(self.slot)
        for widget in (self.progress, self.slot_label, self.slot):  # the row's height: the plot's stays
            keep_room_when_hidden(widget)
        self._show_slots()
        layout.addLayout(row)
        layout.addWidget(self.status)
        #: The verdict of the slot shown: the winner beyond noise, or the tie set.
        self.verdict = LinesLabel("", lines=2)
        self.verdict.setObjectName("tuning-verdict")
        layout.addWidget(self.verdict)

        self.tabs = QTabWidget()
        self.time_plot = ParameterPlot()
        self.plot, self.failed_lane = self.time_plot.plot, self.time_plot.failed_lane
        self.table = ConfigurationsTable()
        self.tabs.addTab(self.time_plot, "Time vs parameters")
        self.tabs.addTab(self.table, "Configurations")
        self.convergence_plot = convergence_plot()
        self.tabs.addTab(self.convergence_plot, "Convergence")
        s = self.size_tab = SizeSweepTab()
        self.size_spec, self.size_metric, self.size_button = s.spec, s.metric, s.button
        self.size_view, self.size_plot = s.view, s.view.plot  # log axes, ceilings, failed sizes in a lane
        self.tabs.addTab(self.size_tab, "Size sweep")
        layout.addWidget(self.tabs, 1)

        self.sweep_button.clicked.connect(self.start_sweep)
        self.cancel_button.clicked.connect(self.cancel)
        self.apply_button.clicked.connect(self.apply_best)
        self.size_button.clicked.connect(self.start_size_sweep)

    # ================================================================ project and controls
    def set_project(self, project: Any) -> None:
        self.project = project
        self.kernel = None
        for control in self.controls.values():
            control.deleteLater()
        while self.form.rowCount():
            self.form.removeRow(0)
        self.controls = {}
        if project is None:
            self.title.setText("No project")
            self._update_buttons()
            return
        try:
            self.kernel = project.manifest.kernel(None)
        except (WorkbenchError, KeyError, ValueError) as exc:
            self.title.setText(str(exc))
            return
        self.title.setText(
            f"{self.kernel.name}: {len(self.kernel.tunables)} tunable(s)"
            + (f"; constraints: {', '.join(self.kernel.constraints)}" if self.kernel.constraints else "")
            if self.kernel.tunables
            else f"{self.kernel.name}: no [kernel.tunables] in workbench.toml"
        )
        chosen = self.bridge.tunables() if self.bridge is not None else {}
        for name, values in self.kernel.tunables.items():
            control = tunable_control(name, values, chosen)
            control.currentIndexChanged.connect(lambda _i, n=name: self._on_control(n))
            self.form.addRow(name, control)
            self.controls[name] = control
        sizes = list(self.kernel.sizes)
        if sizes and not self.size_spec.text():
            self.size_spec.setText(f"{sizes[0]}=2^10..2^16")
        self._update_buttons()

    def configuration(self) -> dict[str, Any]:
        return {name: control.currentData() for name, control in self.controls.items()}

    def _on_control(self, name: str) -> None:
        """Hot reload: the new configuration is built (its own cached build) and run at once."""
        if self.bridge is None:
            return
        self.bridge.set_tunables(self.configuration())
        self.status.setText(f"running {config_text(self.configuration())} ({name} changed)")
        self.bridge.run()

    def _run_finished(self, _report: Any = None) -> None:
        """A hot-reload run is over: its "running …" line goes (the Results panel has the result)."""
        if self.status.text().startswith("running "):
            self.status.setText("")

    # ================================================================ sweeps
    def cluster_spec(self) -> str | None:
        """The Cluster control's spec (None: none, the embedded default); ClusterError when refused."""
        return self.cluster.spec()

    def _cluster_or_refuse(self) -> tuple[bool, str | None]:
        """(True, spec) to start; (False, None) with the parser's message in the status line."""
        spec, error = self.cluster.check()
        if error:
            self.status.setText(f"not started: {error}")
        return not error, spec

    def start_sweep(self) -> bool:
        from workbench.profile.tuning.sweep_space import TuneError, plan

        if self.project is None or self.kernel is None or self.runner.running():
            return False
        ok, cluster = self._cluster_or_refuse()
        if not ok:
            return False
        strategy, budget = self.strategy.currentText(), self.budget.value() or None
        budget_s = float(self.budget_s.value()) or None
        try:
            sweep = plan(self.kernel, None, self._sizes(), strategy, budget, budget_s)
        except TuneError as exc:
            self.status.setText(str(exc))
            return False
        self.status.setText(started_text(sweep, strategy, budget, budget_s, cluster))
        self.entries, self.best, self.evaluations = [], {}, []
        self._size_mode = False
        self._draw_convergence()
        self._start(sweep.points, cluster, sweep.search)
        return True

    def start_size_sweep(self) -> bool:
        from workbench.profile.tuning.size_sweep import parse_size_range, size_points
        from workbench.profile.tuning.sweep_space import TuneError

        if self.project is None or self.kernel is None or self.runner.running():
            return False
        ok, cluster = self._cluster_or_refuse()
        if not ok:
            return False
        try:
            name, values = parse_size_range(self.size_spec.text())
            points = size_points(self.kernel, name, values, self._sizes(), self.configuration())
        except TuneError as exc:
            self.status.setText(str(exc))
            return False
        self.size_tab.start(name)
        self._size_mode = True
        self.status.setText(f"size sweep of {name}: {len(points)} point(s)")
        self._start(points, cluster)
        return True

    def _sizes(self) -> dict[str, int] | None:
        return (self.bridge.sizes() or None) if self.bridge is not None else None

    def _start(self, points: list, cluster: str | None = None, search: Any = None) -> None:
        backends = self.bridge.backends() if self.bridge is not None else None
        devices = (self.bridge.devices() or None) if self.bridge is not None else None
        self.progress.setRange(0, len(points))
        self.progress.setValue(0)
        self.progress.show()
        rounds = (1, 0) if self._size_mode else (self.rounds.value(), self.confirm_rounds)
        self.runner.start(
            self.project, self.kernel.name, points, size_mode=self._size_mode, cache_dir=self.cache_dir,
            backends=backends, devices=devices, db_path=self.db_path, timing=self.timing,
            rounds=rounds[0], confirm_rounds=rounds[1], cluster=cluster, search=search,
        )  # fmt: skip
        self._update_buttons()

    def cancel(self) -> None:
        if self.runner.cancel():
            self.status.setText("cancelling…")

    def shutdown(self) -> None:
        """Stop and join a sweep in flight (the window closes)."""
        self.runner.shutdown()

    def running(self) -> bool:
        return self.runner.running()

    def _on_event(self, event: SweepEvent | CopyCeilings) -> None:  # the GUI thread
        if isinstance(event, SweepNote):  # the cluster's: its workers, those refused for the ranking
            self.status.setText(event.text)
        elif isinstance(event, SweepSearched):
            self.evaluations.append(event.evaluation)
            self.status.setText(searching_text(self.strategy.currentText(), event))
            self._draw_convergence()
        elif isinstance(event, SweepEntries):
            self.progress.setRange(0, event.total)
            self.progress.setValue(event.index + 1)
            if self._size_mode:
                self.size_tab.add_entries(event.entries)
            else:
                self.entries, self.best = event.merged, event.best
                self._schedule_redraw()
        elif isinstance(event, CopyCeilings) and self._size_mode:
            self.size_tab.set_ceilings(event.ceilings)
        elif isinstance(event, SweepFinished):
            self.runner.finished()
            result = event.result
            if event.error:
                self.status.setText(f"sweep failed: {event.error}")
            elif result is not None:
                entries = result.entries
                if not self._size_mode:  # the final ranking: after the leaders were re-timed
                    self.entries, self.best = entries, result.best()
                    self._pick_slot()
                    self._redraw()
                self.status.setText(finished_text(result, self.best, self._size_mode))
            self._update_buttons()
            self.sweepFinished.emit(result)

    # ================================================================ drawing
    def _schedule_redraw(self) -> None:
        """Results came: drawn once this turn of the event loop is over (several results of one
        turn: one draw), or when the panel is next on screen."""
        self._results_view.mark()

    def _redraw(self, plot_now: bool = True) -> None:
        """Everything the results show; the plot now or (`plot_now` False) in the next turn."""
        self._results_view.clear()
        slots = sorted({ranking.slot(e) for e in self.entries})
        current = self.slot.currentText()
        wanted = (
            self._user_slot if self._user_slot in slots else tuning_view.pick_slot(self.best, slots, current)
        )
        if [self.slot.itemText(i) for i in range(self.slot.count())] != slots or wanted != current:
            with QSignalBlocker(self.slot):
                self.slot.clear()
                self.slot.addItems(slots)
                if wanted:
                    self.slot.setCurrentText(wanted)
            self._show_slots()
        self._fill_table()
        self._update_buttons()
        slot = self.slot.currentText()
        self.verdict.setText(tuning_view.verdict(self.best.get(slot), slot) if slot else "")
        if plot_now:
            self._draw_plot()
        else:
            self._plot_timer.start()

    def _slot_chosen(self, text: str) -> None:
        """The user chose a backend × device: kept while it exists, even one without effect."""
        self._user_slot = text or None
        self._redraw()

    def _show_slots(self) -> None:
        """The slot chooser and its label, once there is a slot to choose."""
        self.slot_label.setVisible(self.slot.count() > 0)
        self.slot.setVisible(self.slot.count() > 0)

    def plot_data(self) -> dict[str, Any]:
        """What the time-vs-parameters plot shows (`parameter_plot.parameter_data`)."""
        names = list(self.kernel.tunables) if self.kernel is not None else []
        return parameter_data(self.entries, self.best, names, self.slot.currentText())

    def _draw_plot(self) -> None:
        self._plot_timer.stop()
        data = self.plot_data()
        self.verdict.setText(data.get("verdict", ""))
        self.time_plot.draw(data)

    def hover_text(self, x: float, y: float) -> str:
        """The heatmap's tooltip at a point of the plot (`ParameterPlot.hover_text`)."""
        return self.time_plot.hover_text(x, y)

    def convergence_data(self) -> dict[str, list]:
        """The Convergence tab's numbers (`tuning_view.convergence`)."""
        return tuning_view.convergence(self.evaluations)

    def _draw_convergence(self) -> None:
        draw_convergence(self.convergence_plot, self.convergence_data(), self.strategy.currentText())

    def _fill_table(self) -> None:
        self.table.fill(self.entries, self.best)

    def size_plot_data(self) -> dict[str, Any]:
        """What the size-sweep plot shows: {slot: {"x", "gbps" or "median_s"}}, the ceiling per
        slot, the axes, the legend and the failed sizes (`SizeSweepPlot.data`)."""
        return self.size_tab.view.data()

    # ================================================================ apply
    def _pick_slot(self) -> None:
        """After a sweep, show the slot Apply would default to (one the tunables affect)."""
        try:
            slot = choose_slot(self.best, None)
        except WorkbenchError:
            return
        if self.slot.findText(slot) < 0:
            self.slot.addItem(slot)
            self._show_slots()
        with QSignalBlocker(self.slot):
            self.slot.setCurrentText(slot)

    def apply_best(self) -> dict[str, Any] | None:
        from workbench.profile.tuning.apply import apply_config, winner_config

        if self.project is None or self.kernel is None or not self.best:
            return None
        try:
            slot = choose_slot(self.best, self.slot.currentText())
            config = winner_config(self.best[slot])
            apply_config(self.project.manifest.path, self.kernel.name, config)
        except WorkbenchError as exc:
            self.status.setText(f"Apply refused: {exc}")
            return None
        self.status.setText(f"applied {config_text(config)} ({slot}) to workbench.toml (the new defaults)")
        # The controls and the next hot-reload runs follow the applied configuration.
        show_config(self.controls, config)
        if self.bridge is not None:
            self.bridge.set_tunables({**self.bridge.tunables(), **config})
        self.applied.emit(config)
        return config

    def _update_buttons(self) -> None:
        running = self.runner.running()
        has_tunables = self.kernel is not None and bool(self.kernel.tunables)
        self.sweep_button.setEnabled(has_tunables and not running)
        self.size_button.setEnabled(self.kernel is not None and bool(self.kernel.sizes) and not running)
        self.cancel_button.setEnabled(running)
        self.cluster.setEnabled(not running)
        reason = tuning_view.apply_reason(self.best, self.slot.currentText(), running)
        if not has_tunables:
            reason = "no [kernel.tunables] in workbench.toml"
        self.apply_button.setEnabled(reason is None)
        self.apply_button.setToolTip(APPLY_TIP if reason is None else f"Apply is disabled: {reason}")
        self.apply_reason.setText(f"Apply: {reason}" if reason else "")
