"""The Tuning panel: hot-reload a kernel's tunables, sweep them in the background, apply the best.

- one control per tunable (its allowed values): changing one sets the bridge's tunables and runs
  at once (the LiveLoop rebuilds what the configuration changes; each configuration is its own
  cached build);
- "Sweep" runs the configurations a strategy chooses (grid: every one; random; or a search:
  annealing, genetic, diff_evo, tpe, cmaes, within a budget of evaluations and/or seconds; the
  Convergence tab draws its best so far against evaluations beside random search's expectation)
  on a `BackgroundSweep` (core,
  Qt-free; its own thread, workers and sessions connection), whose events arrive here through a
  queued signal; progress and Cancel; every configuration is verified, recorded (a second sweep
  resumes) and measured in interleaved rounds, ranked on the spread between rounds
  (`profile/ranking.py`): identical builds are one point, the best is a winner only beyond noise,
  else the tie set; a failed one is flagged in the table and never ranked, a skipped one (runtime
  unavailable) is shown as skipped;
- the plot shows time against the parameters (`profile/tuning/tuning_view.py` says what): a line
  per backend × device for one tunable, a heatmap of the chosen backend × device for two (ticks
  that are the tunables' values, a colour bar in the timing's unit, each cell's value on hover and
  printed when few, identical builds labelled ≡A, ≡B…), opened on a backend × device the tunables
  affect; failed configurations in a lane under it; the verdict (winner beyond noise, or the tie
  set) written above;
- "Apply" writes the winner of a backend × device the tunables affect into workbench.toml as the
  defaults (only those values; `profile/apply.choose_slot` refuses a slot without one); when it
  is disabled, the reason is written beside it;
- "Cluster" chooses where a sweep's configurations run: none (this machine's workers, the
  default), `local:N`, `tcp://HOST:PORT` or `hosts:NAME[,NAME…]`; the text goes to the core the
  command line's `--cluster` uses (`cluster.connect.parse`, then `cluster.dispatch.open_dispatcher`
  on the sweep's thread); a spec the parser refuses is framed in the control with its message
  and no sweep starts;
- "Size sweep" runs a size range (`n=2^10..2^20`) and draws GB/s against the size, one curve per
  backend × device, with each device's measured copy ceiling as a dashed line.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, Signal, SignalInstance
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.errors import WorkbenchError
from workbench.profile.tuning import ranking, strategies, tuning_view
from workbench.profile.tuning.apply import choose_slot
from workbench.profile.tuning.events import (
    SweepDone,
    SweepEntries,
    SweepEvent,
    SweepFinished,
    SweepNote,
    SweepSearched,
)
from workbench.remote.hosts import HostStore
from workbench.ui import theme
from workbench.ui.layout_fit import wrap_within
from workbench.ui.plots.lanes import FailureLane
from workbench.ui.plots.size_sweep_plot import SizeSweepPlot
from workbench.ui.theme import PLOT_BACKGROUND as BACKGROUND
from workbench.ui.theme import SERIES as PALETTE
from workbench.units import format_time

log = logging.getLogger(__name__)

FAILED = theme.FAILED_MARK
#: The Cluster control's first item: no cluster, this machine's run workers (the default).
NO_CLUSTER = "none"
CLUSTER_TIP = (
    "where a sweep's configurations run: none (here, the default), local:N (N Dask workers here), "
    "tcp://HOST:PORT (a running Dask scheduler) or hosts:NAME[,NAME…] (one worker per device of each "
    "registered host, over ssh); as `workbench tune --cluster`"
)
COLUMNS = ("configuration", "backend @ device", "verified", "median", "95% CI", "rank")


def _config_text(config: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())


def _rank_text(entry: dict[str, Any], best: dict[str, Any] | None) -> str:
    """The table's rank cell: FAILED, skipped, not ranked, best, same build, tied, or nothing."""
    kind = ranking.outcome(entry)
    if kind == "failed":
        return f"FAILED: {entry.get('error') or entry.get('verdict') or 'not verified'}"
    if kind == "skipped":
        return f"skipped: {entry.get('error') or 'runtime unavailable'}"
    if kind != "ok":
        return f"not ranked: {entry.get('verdict') or 'not verified'}"
    if not best:
        return ""
    config = entry["config"]
    if best["verdict"] == ranking.NO_EFFECT:
        return f"one build for all: {', '.join(best['no_effect']) or 'the tunables'} no effect"
    if best["winner"] == config:
        return "best"
    if best["winner"] is not None and config in best["same_build_as"]:
        return "best (same build)"
    if config in best["ties"] or config in best["same_build_as"]:
        return "tied (no unique winner)"
    if any(config == t["config"] or config in t["same_build_as"] for t in best["tied_with"]):
        return "tied (no unique winner)"
    return ""


@dataclass(frozen=True)
class _CopyCeilings:
    """A size sweep's devices' copy ceilings (GB/s), measured on the sweep's thread once it is
    done: the panel's own message on its relay, after the sweep's `SweepDone`."""

    ceilings: dict[str, Any]


class _Relay(QObject):
    """Carries sweep events from the sweep thread to the GUI thread (queued connection)."""

    posted = Signal(object)


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
        self.size_data: dict[str, Any] = {}
        self.evaluations: list[Any] = []  # a search's counted evaluations (`strategies.Evaluation`)
        self._search_budget = 0
        self._user_slot: str | None = None  # a backend × device the user chose (kept while it exists)
        self._sweep = None
        self._size_mode = False
        self._relay = _Relay()
        self._relay.posted.connect(self._on_event, Qt.ConnectionType.QueuedConnection)
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

        row = QHBoxLayout()
        self.strategy = QComboBox()
        self.strategy.setObjectName("tuning-strategy")
        for name in strategies.NAMES:
            self.strategy.addItem(name)
            self.strategy.setItemData(self.strategy.count() - 1, strategies.DESCRIPTIONS[name],
                                      Qt.ItemDataRole.ToolTipRole)  # fmt: skip
        self.strategy.setCurrentText("grid")  # every configuration, until a budget asks for a search
        self.strategy.setToolTip(
            "how configurations are chosen (as `workbench tune --strategy`); "
            f"{strategies.DEFAULT} was best in benchmarks/strategies.py under a budget"
        )
        self.budget = QSpinBox()
        self.budget.setObjectName("tuning-budget")
        self.budget.setRange(0, 100000)
        self.budget.setSpecialValueText("all")
        self.budget.setToolTip("at most this many configurations, i.e. evaluations (all: the whole grid)")
        self.budget.valueChanged.connect(self._budget_changed)
        self.budget_s = QSpinBox()
        self.budget_s.setObjectName("tuning-budget-time")
        self.budget_s.setRange(0, 86400)
        self.budget_s.setSuffix(" s")
        self.budget_s.setSpecialValueText("no limit")
        self.budget_s.setToolTip("a search stops choosing configurations after this many seconds")
        self.rounds = QSpinBox()
        self.rounds.setRange(1, 50)
        self.rounds.setValue(3)
        self.rounds.setToolTip("interleaved rounds: every configuration measured once per round")
        #: Rounds re-timing a would-be winner side by side with the runner-up before it is named.
        self.confirm_rounds = 2
        self.sweep_button = QPushButton("Sweep")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.apply_button = QPushButton("Apply")
        self.apply_button.setToolTip(
            "write the best configuration of the chosen backend × device into workbench.toml"
        )
        self.apply_button.setEnabled(False)
        for widget in (QLabel("strategy"), self.strategy, QLabel("budget"), self.budget, self.budget_s,
                       QLabel("rounds"), self.rounds):  # fmt: skip
            row.addWidget(widget)
        row.addStretch(1)
        layout.addLayout(row)
        row = QHBoxLayout()
        self.cluster = QComboBox()
        self.cluster.setObjectName("cluster")
        self.cluster.setEditable(True)
        self.cluster.addItems([NO_CLUSTER, "local:2", *(f"hosts:{n}" for n in HostStore().names())])
        self.cluster.editTextChanged.connect(lambda _t: self._check_cluster())
        #: The parser's message for a refused spec (empty when the spec is valid).
        self.cluster_error = wrap_within(QLabel(""))
        self.cluster_error.setObjectName("cluster-error")
        row.addWidget(QLabel("cluster"))
        row.addWidget(self.cluster, 1)
        layout.addLayout(row)
        layout.addWidget(self.cluster_error)
        self._check_cluster()
        row = QHBoxLayout()
        for widget in (self.sweep_button, self.cancel_button, self.apply_button):
            row.addWidget(widget)
        #: Why Apply is disabled (empty while it is enabled).
        self.apply_reason = wrap_within(QLabel(""))
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
        self.status = wrap_within(QLabel(""))  # a sweep error must not widen the window
        self.slot = QComboBox()
        self.slot.setToolTip("backend × device: the heatmap's and Apply's choice")
        self.slot.currentTextChanged.connect(self._slot_chosen)
        self.slot_label = QLabel("backend × device:")
        row.addWidget(self.progress, 1)
        row.addWidget(self.slot_label)
        row.addWidget(self.slot)
        self._show_slots()
        layout.addLayout(row)
        layout.addWidget(self.status)
        #: The verdict of the slot shown: the winner beyond noise, or the tie set.
        self.verdict = wrap_within(QLabel(""))
        self.verdict.setObjectName("tuning-verdict")
        layout.addWidget(self.verdict)

        self.tabs = QTabWidget()
        self.plot = pg.PlotWidget(background=BACKGROUND)
        self.plot.setLabel("left", "median time", units="s")
        self.plot.addLegend(offset=(-10, 10))
        self.heatmap = pg.ImageItem()
        self.colorbar: pg.ColorBarItem | None = None
        self.cell_labels: list[pg.TextItem] = []
        self.grid_data: dict[str, Any] = {}
        self.plot.scene().sigMouseMoved.connect(self._hover)
        # Failed configurations have no time: a lane of their own under the plot (plots/lanes.py).
        self.failed_lane = FailureLane("tuning_failed_lane", self.plot)
        self.series: dict[str, pg.ScatterPlotItem] = {}
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        scatter = QWidget()
        scatter_layout = QVBoxLayout(scatter)
        scatter_layout.setContentsMargins(0, 0, 0, 0)
        scatter_layout.setSpacing(2)
        scatter_layout.addWidget(self.plot, 1)
        scatter_layout.addWidget(self.failed_lane)
        self.tabs.addTab(scatter, "Time vs parameters")
        self.tabs.addTab(self.table, "Configurations")
        self.convergence_plot = pg.PlotWidget(background=BACKGROUND)
        self.convergence_plot.setLabel("bottom", "evaluations")
        self.convergence_plot.setLabel("left", "best so far", units="s")
        self.convergence_plot.addLegend(offset=(-10, 10))
        self.tabs.addTab(self.convergence_plot, "Convergence")

        size = QWidget()
        size_layout = QVBoxLayout(size)
        row = QHBoxLayout()
        self.size_spec = QLineEdit()
        self.size_spec.setPlaceholderText("n=2^10..2^20  or  n=1024,4096")
        self.size_button = QPushButton("Size sweep")
        self.size_metric = QComboBox()
        self.size_metric.addItems(["GB/s", "time"])
        self.size_metric.currentTextChanged.connect(lambda _t: self._draw_sizes())
        row.addWidget(self.size_spec, 1)
        row.addWidget(self.size_metric)
        row.addWidget(self.size_button)
        size_layout.addLayout(row)
        # Log axes, ceilings and legend outside the data, failed sizes in a lane (plots/size_sweep_plot).
        self.size_view = SizeSweepPlot()
        self.size_plot = self.size_view.plot
        size_layout.addWidget(self.size_view, 1)
        self.tabs.addTab(size, "Size sweep")
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
            control = QComboBox()
            control.setObjectName(f"tunable-{name}")
            for value in values:
                control.addItem(str(value), value)
            if name in chosen and chosen[name] in values:
                control.setCurrentIndex(values.index(chosen[name]))
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
        self.status.setText(f"running {_config_text(self.configuration())} ({name} changed)")
        self.bridge.run()

    def _run_finished(self, _report: Any = None) -> None:
        """A hot-reload run is over: its "running …" line goes (the Results panel has the result)."""
        if self.status.text().startswith("running "):
            self.status.setText("")

    def _budget_changed(self, value: int) -> None:
        """A budget asks for a search: the measured default replaces grid (which would take the
        first N); the user's own choice of strategy stays."""
        if value and self.strategy.currentText() == "grid":
            self.strategy.setCurrentText(strategies.DEFAULT)

    # ================================================================ sweeps
    def _check_cluster(self) -> tuple[str | None, str]:
        """(the Cluster control's spec or None for none, the parser's message or ""): a spec the
        parser (`cluster.connect.parse`, the command line's) refuses is framed, its message shown."""
        from workbench.profile.tuning.cluster.connect import ClusterError, parse

        text = self.cluster.currentText().strip()
        spec, error = None, ""
        try:
            spec = None if text in ("", NO_CLUSTER) else parse(text).text
        except ClusterError as exc:
            error = str(exc)
        self.cluster.lineEdit().setStyleSheet(
            f"QLineEdit {{ border: 1px solid {theme.ERROR}; }}" if error else ""
        )
        self.cluster.setToolTip(error or CLUSTER_TIP)
        self.cluster_error.setText(error)
        self.cluster_error.setVisible(bool(error))
        return spec, error

    def cluster_spec(self) -> str | None:
        """The Cluster control's spec (None: none, the embedded default); ClusterError when refused."""
        from workbench.profile.tuning.cluster.connect import ClusterError

        spec, error = self._check_cluster()
        if error:
            raise ClusterError(error)
        return spec

    def _cluster_or_refuse(self) -> tuple[bool, str | None]:
        """(True, spec) to start; (False, None) with the parser's message in the status line."""
        spec, error = self._check_cluster()
        if error:
            self.status.setText(f"not started: {error}")
        return not error, spec

    def start_sweep(self) -> bool:
        from workbench.profile.tuning.tune import Point, TuneError, space

        if self.project is None or self.kernel is None or self._sweep is not None:
            return False
        ok, cluster = self._cluster_or_refuse()
        if not ok:
            return False
        from workbench.profile.tuning.tune import STRATEGIES, Search

        strategy = self.strategy.currentText()
        budget_s = float(self.budget_s.value()) or None
        try:
            budget = self.budget.value() or None
            sp = space(self.kernel, None, self._sizes(), strategy, budget)
        except TuneError as exc:
            self.status.setText(str(exc))
            return False
        search = None
        if strategy not in STRATEGIES or budget_s is not None:
            search = Search(sp, self._sizes(), strategy, budget, budget_s)
        points = [Point(config, self._sizes()) for config in sp.configs]
        pruned = f"; {len(sp.pruned)} pruned by constraints" if sp.pruned else ""
        if search is not None:
            limit = min(budget or len(sp.configs), len(sp.configs))
            self.status.setText(f"searching ({strategy}) at most {limit} of {len(sp.configs)} configuration(s)"
                                + (f" or {budget_s:g} s" if budget_s else "") + pruned)  # fmt: skip
        else:
            self.status.setText(f"sweeping {len(points)} configuration(s){pruned}")
        if cluster:
            self.status.setText(f"{self.status.text()} on cluster {cluster}")
        self.entries, self.best, self.evaluations = [], {}, []
        self._search_budget = 0
        self._size_mode = False
        self._draw_convergence()
        self._start(points, cluster, search)
        return True

    def start_size_sweep(self) -> bool:
        from workbench.profile.tuning.size_sweep import parse_size_range, size_points
        from workbench.profile.tuning.tune import TuneError

        if self.project is None or self.kernel is None or self._sweep is not None:
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
        self.size_data = {"symbol": name, "curves": {}}
        self._size_mode = True
        self.status.setText(f"size sweep of {name}: {len(points)} point(s)")
        self._start(points, cluster)
        return True

    def _sizes(self) -> dict[str, int] | None:
        return (self.bridge.sizes() or None) if self.bridge is not None else None

    def _start(self, points: list, cluster: str | None = None, search: Any = None) -> None:
        from workbench.profile.tuning.tune import BackgroundSweep

        backends = self.bridge.backends() if self.bridge is not None else None
        devices = (self.bridge.devices() or None) if self.bridge is not None else None
        self.progress.setRange(0, len(points))
        self.progress.setValue(0)
        self.progress.show()
        size_mode = self._size_mode

        def on_event(event: SweepEvent) -> None:  # the sweep thread
            self._relay.posted.emit(event)
            if size_mode and isinstance(event, SweepDone):
                # Measured here, off the GUI thread, before the sweep's thread reports it finished.
                from workbench.profile.tuning.size_sweep import copy_ceilings

                try:
                    ceilings = copy_ceilings({e["device"] for e in event.result.entries}, self.cache_dir)
                except Exception:  # noqa: BLE001 - a guide line only
                    ceilings = {}
                self._relay.posted.emit(_CopyCeilings(ceilings))

        rounds = (1, 0) if size_mode else (self.rounds.value(), self.confirm_rounds)
        self._sweep = BackgroundSweep(
            self.project, self.kernel.name, points, on_event, backends=backends, devices=devices,
            db_path=self.db_path, timing=self.timing, cache_dir=self.cache_dir,
            rounds=rounds[0], confirm_rounds=rounds[1], cluster=cluster, search=search,
        ).start()  # fmt: skip
        self._update_buttons()

    def cancel(self) -> None:
        if self._sweep is not None:
            self._sweep.cancel()
            self.status.setText("cancelling…")

    def shutdown(self) -> None:
        """Stop and join a sweep in flight (the window closes)."""
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep.join(30)
            self._sweep = None

    def running(self) -> bool:
        return self._sweep is not None

    def _on_event(self, event: SweepEvent | _CopyCeilings) -> None:  # the GUI thread
        if isinstance(event, SweepNote):  # the cluster's: its workers, those refused for the ranking
            self.status.setText(event.text)
        elif isinstance(event, SweepSearched):
            self.evaluations.append(event.evaluation)
            self._search_budget = event.budget
            e = event.evaluation
            best = format_time(e.best) if e.best is not None else "none yet"
            self.status.setText(f"searching ({self.strategy.currentText()}): evaluation {e.n} of at most "
                                f"{event.budget}, best so far {best}")  # fmt: skip
            self._draw_convergence()
        elif isinstance(event, SweepEntries):
            self.progress.setRange(0, event.total)
            self.progress.setValue(event.index + 1)
            if self._size_mode:
                self._add_size_entries(event.entries)
            else:
                self.entries, self.best = event.merged, event.best
                self._redraw()
        elif isinstance(event, _CopyCeilings) and self._size_mode:
            self.size_data["ceilings"] = event.ceilings or {}
            self._draw_sizes()
        elif isinstance(event, SweepFinished):
            if self._sweep is not None:
                self._sweep.join(5)
            self._sweep = None
            result = event.result
            if event.error:
                self.status.setText(f"sweep failed: {event.error}")
            elif result is not None:
                entries = result.entries
                if not self._size_mode:  # the final ranking: after the leaders were re-timed
                    self.entries, self.best = entries, result.best()
                    self._pick_slot()
                    self._redraw()
                counts = ranking.counts(entries)
                resumed = sum(1 for e in entries if e.get("resumed"))
                unread = [
                    f"{', '.join(b['no_effect'])} no effect on {slot.split('@', 1)[0]}"
                    for slot, b in self.best.items()
                    if b["no_effect"] and not self._size_mode
                ]
                searched = (result.search or {}) if not self._size_mode else {}
                self.status.setText(
                    ("cancelled: " if result.cancelled else "done: ")
                    + (
                        f"{searched['strategy']} chose {searched['evaluations']} configuration(s); "
                        if searched
                        else ""
                    )
                    + f"{len(entries)} result(s), {counts['failed']} failed, {counts['skipped']} skipped, "
                    + f"{counts['not verified']} not verified, {resumed} resumed from the sessions store"
                    + "".join(f"; {text}" for text in unread)
                )
            self._update_buttons()
            self.sweepFinished.emit(result)

    # ================================================================ drawing
    def _redraw(self) -> None:
        slots = sorted({ranking.slot(e) for e in self.entries})
        current = self.slot.currentText()
        wanted = (
            self._user_slot if self._user_slot in slots else tuning_view.pick_slot(self.best, slots, current)
        )
        if [self.slot.itemText(i) for i in range(self.slot.count())] != slots or wanted != current:
            self.slot.blockSignals(True)
            self.slot.clear()
            self.slot.addItems(slots)
            if wanted:
                self.slot.setCurrentText(wanted)
            self.slot.blockSignals(False)
            self._show_slots()
        self._fill_table()
        self._draw_plot()
        self._update_buttons()

    def _slot_chosen(self, text: str) -> None:
        """The user chose a backend × device: kept while it exists, even one without effect."""
        self._user_slot = text or None
        self._redraw()

    def _show_slots(self) -> None:
        """The slot chooser and its label, once there is a slot to choose."""
        self.slot_label.setVisible(self.slot.count() > 0)
        self.slot.setVisible(self.slot.count() > 0)

    def plot_data(self) -> dict[str, Any]:
        """What the time-vs-parameters plot shows (the numbers, for tests and scripts): for one
        tunable a line per slot ("scatter": x, y), for more a heatmap of the chosen slot (x, y:
        the axes' values; median_s in seconds, NaN where none ranked), and in both the grid of
        the chosen slot (`tuning_view.grid`: ticks, cells, identical builds) and its verdict."""
        names = list(self.kernel.tunables) if self.kernel is not None else []
        slot = self.slot.currentText()
        view = tuning_view.grid(self.entries, slot, names) if names and slot else {}
        verdict = tuning_view.verdict(self.best.get(slot), slot) if slot else ""
        ok = [e for e in self.entries if ranking.rankable(e)]
        failed = [e for e in self.entries if ranking.outcome(e) == "failed"]
        if view.get("mode") == "heatmap":
            x_name, y_name = view["axes"]
            grid = np.array(
                [[np.nan if v is None else v for v in row] for row in view["median_s"]], dtype=float
            )
            finite = grid[np.isfinite(grid)]
            return {"mode": "heatmap", "slot": slot, "tunables": view["axes"], "x": view["values"][0],
                    "y": view["values"][1], "median_s": grid.tolist(), "ticks": view["ticks"],
                    "cells": view["cells"], "same_build": view["same_build"], "over": view["over"],
                    "print_values": view["print_values"], "verdict": verdict,
                    "colorbar": {"label": "median", "units": "s",
                                 "levels": [float(finite.min()), float(finite.max())] if finite.size else None},
                    "failed": [e["config"] for e in failed if ranking.slot(e) == slot]}  # fmt: skip
        name = (view.get("axes") or names or [None])[0]
        series: dict[str, dict[str, list]] = {}
        for e in sorted(ok, key=lambda e: e["config"].get(name, 0)):
            s = series.setdefault(ranking.slot(e), {"x": [], "y": []})
            s["x"].append(e["config"].get(name))
            s["y"].append(e["timing"]["median_s"])
        return {"mode": "scatter", "tunable": name, "series": series, "slot": slot, "verdict": verdict,
                "ticks": [str(v) for v in (view.get("values") or [[]])[0]],
                "cells": view.get("cells", {}), "same_build": view.get("same_build", []),
                "failed": [{"slot": ranking.slot(e), "config": e["config"]} for e in failed]}  # fmt: skip

    def _draw_plot(self) -> None:
        data = self.plot_data()
        self.grid_data = data
        self.plot.clear()
        self.series = {}
        self.cell_labels = []
        legend = self.plot.plotItem.legend
        if legend is not None:
            legend.clear()
        if self.colorbar is not None:
            self.plot.plotItem.layout.removeItem(self.colorbar)
            self.colorbar.setParentItem(None)
            self.colorbar = None
        self.verdict.setText(data.get("verdict", ""))
        bottom, left = self.plot.getAxis("bottom"), self.plot.getAxis("left")
        if data["mode"] == "heatmap":
            grid = np.array(data["median_s"], dtype=float)
            self.heatmap = pg.ImageItem(grid)  # NaN (no ranked result) is left transparent
            # Cell (i, j) spans [i - 0.5, i + 0.5] × [j - 0.5, j + 0.5]: the ticks sit on the cells.
            self.heatmap.setRect(-0.5, -0.5, grid.shape[0], grid.shape[1])
            self.plot.addItem(self.heatmap)
            levels = data["colorbar"]["levels"]
            if levels is not None:
                lo, hi = levels if levels[1] > levels[0] else (levels[0] * 0.99, levels[0] * 1.01 or 1e-9)
                self.colorbar = pg.ColorBarItem(values=(lo, hi), colorMap=pg.colormap.get("viridis"),
                                                interactive=False)  # fmt: skip
                self.colorbar.axis.setLabel("median", units="s")  # SI prefix: the timing's unit
                self.colorbar.setImageItem(self.heatmap, insert_in=self.plot.plotItem)
            x_name, y_name = data["tunables"]
            bottom.setTicks([list(enumerate(data["ticks"][0]))])
            left.setTicks([list(enumerate(data["ticks"][1]))])
            over = f" (best over {', '.join(data['over'])})" if data["over"] else ""
            self.plot.setLabel("bottom", x_name + over)
            self.plot.setLabel("left", y_name, units=None)
            if data["print_values"]:
                for key, cell in data["cells"].items():
                    i, j = (int(k) for k in key.split(","))
                    label = pg.TextItem(
                        cell["text"], color="w", anchor=(0.5, 0.5), fill=pg.mkBrush(0, 0, 0, 110)
                    )
                    label.setPos(i, j)
                    self.plot.addItem(label)
                    self.cell_labels.append(label)
            self.failed_lane.set_failures({})
            return
        # The tunable's values as the manifest writes them ("64", not the axis position's "64.0").
        ticks = list(zip(self._tick_values(data), data["ticks"], strict=True))
        bottom.setTicks([[(float(x), label) for x, label in ticks]] if ticks else None)
        left.setTicks(None)
        self.plot.setLabel("bottom", data["tunable"] or "")
        self.plot.setLabel("left", "median time", units="s")
        for i, (slot, s) in enumerate(sorted(data["series"].items())):
            colour = PALETTE[i % len(PALETTE)]
            item = pg.PlotDataItem(s["x"], s["y"], pen=pg.mkPen(colour, width=1.5), symbol="o", symbolSize=8,
                                   symbolBrush=pg.mkBrush(colour), name=slot)  # fmt: skip
            self.plot.addItem(item)
            self.series[slot] = item
        if data["cells"] and len(data["cells"]) <= tuning_view.PRINT_CELLS:
            values = [float(v) for v in self._tick_values(data)]
            top = max(cell["median_s"] for cell in data["cells"].values())
            for key, cell in data["cells"].items():
                x = values[int(key)]
                # Labels lean inwards: the end values' sideways, the slowest's below its point;
                # centred above, part of them lay outside the plot, which clips them ("1.287 ms"
                # for 61.287 ms at 1280×800).
                side = 0.0 if x == min(values) else 1.0 if x == max(values) else 0.5
                label = pg.TextItem(
                    cell["text"], color=theme.TEXT, anchor=(side, -0.2 if cell["median_s"] == top else 1.2)
                )
                label.setPos(x, cell["median_s"])
                self.plot.addItem(label)
                self.cell_labels.append(label)
        failures: dict[str, list[tuple[float, str]]] = {}
        for f in data["failed"]:
            x = f["config"].get(data["tunable"])
            if isinstance(x, int | float):
                failures.setdefault(f["slot"], []).append((float(x), "failed"))
        self.failed_lane.set_failures(failures)

    @staticmethod
    def _tick_values(data: dict[str, Any]) -> list[Any]:
        return [float(t) if _is_number(t) else i for i, t in enumerate(data["ticks"])]

    def hover_text(self, x: float, y: float) -> str:
        """The tooltip at a point of the plot (view coordinates): the cell's configuration and
        value on a heatmap; "" elsewhere."""
        data = self.grid_data
        if data.get("mode") != "heatmap":
            return ""
        i, j = round(x), round(y)
        if not (0 <= i < len(data["x"]) and 0 <= j < len(data["y"])):
            return ""
        view = {"cells": data["cells"], "axes": data["tunables"], "values": [data["x"], data["y"]],
                "over": data["over"], "same_build": data["same_build"]}  # fmt: skip
        return tuning_view.hover_text(view, (i, j))

    def _hover(self, pos: Any) -> None:
        vb = self.plot.plotItem.vb
        if not vb.sceneBoundingRect().contains(pos):
            return
        point = vb.mapSceneToView(pos)
        self.plot.setToolTip(self.hover_text(point.x(), point.y()))

    def convergence_data(self) -> dict[str, list]:
        """The Convergence tab's numbers (`tuning_view.convergence`)."""
        return tuning_view.convergence(self.evaluations)

    def _draw_convergence(self) -> None:
        data = self.convergence_data()
        plot = self.convergence_plot
        plot.clear()
        if plot.plotItem.legend is not None:
            plot.plotItem.legend.clear()
        points = [(n, b) for n, b in zip(data["n"], data["best"], strict=True) if b is not None]
        if points:
            xs, ys = zip(*points, strict=True)
            plot.addItem(pg.PlotDataItem(list(xs), list(ys), stepMode=None, pen=pg.mkPen(PALETTE[0], width=2),
                                         symbol="o", symbolSize=5, name=self.strategy.currentText()))  # fmt: skip
        if data["random"]:
            plot.addItem(pg.PlotDataItem(list(range(1, len(data["random"]) + 1)), data["random"],
                                         pen=pg.mkPen(PALETTE[1], width=1.5, style=Qt.PenStyle.DashLine),
                                         name="random (expected, from the times measured)"))  # fmt: skip

    def _fill_table(self) -> None:
        self.table.setRowCount(len(self.entries))
        for row, e in enumerate(self.entries):
            slot = ranking.slot(e)
            best = self.best.get(slot)
            timing = e.get("timing") or {}
            rank = _rank_text(e, best)
            ci = timing.get("ci_s")
            verified = {True: "yes", False: "NO"}.get(e["verified"], e.get("verdict") or "-")
            cells = (_config_text(e["config"]), slot, verified,
                     format_time(timing.get("median_s")),
                     f"[{format_time(ci[0])}, {format_time(ci[1])}]" if ci else "-", rank)  # fmt: skip
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if rank.startswith("FAILED"):
                    item.setForeground(pg.mkColor(FAILED))
                self.table.setItem(row, col, item)

    def _add_size_entries(self, entries: list[dict[str, Any]]) -> None:
        name = self.size_data["symbol"]
        for e in entries:
            curve = self.size_data["curves"].setdefault(
                ranking.slot(e), {"x": [], "gbps": [], "median_s": [], "failed": [], "failed_why": []}
            )
            if e["status"] == "ok" and e["verified"] is not False and e.get("gbps"):
                curve["x"].append(e["sizes"][name])
                curve["gbps"].append(e["gbps"])
                curve["median_s"].append((e.get("timing") or {}).get("median_s"))
            else:
                curve["failed"].append(e["sizes"][name])
                curve["failed_why"].append(
                    str(e.get("error") or e.get("verdict") or e["status"]).split("\n")[0]
                )
        self._draw_sizes()

    def _draw_sizes(self) -> None:
        self.size_view.set_data(
            self.size_data, "gbps" if self.size_metric.currentText() == "GB/s" else "median_s"
        )

    def size_plot_data(self) -> dict[str, Any]:
        """What the size-sweep plot shows: {slot: {"x", "gbps" or "median_s"}}, the ceiling per
        slot, the axes, the legend and the failed sizes (`SizeSweepPlot.data`)."""
        return self.size_view.data()

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
        self.slot.blockSignals(True)
        self.slot.setCurrentText(slot)
        self.slot.blockSignals(False)

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
        self.status.setText(f"applied {_config_text(config)} ({slot}) to workbench.toml (the new defaults)")
        # The controls and the next hot-reload runs follow the applied configuration.
        for name, value in config.items():
            control = self.controls.get(name)
            if control is not None and control.findData(value) >= 0:
                control.blockSignals(True)
                control.setCurrentIndex(control.findData(value))
                control.blockSignals(False)
        if self.bridge is not None:
            self.bridge.set_tunables({**self.bridge.tunables(), **config})
        self.applied.emit(config)
        return config

    def _update_buttons(self) -> None:
        running = self._sweep is not None
        has_tunables = self.kernel is not None and bool(self.kernel.tunables)
        self.sweep_button.setEnabled(has_tunables and not running)
        self.size_button.setEnabled(self.kernel is not None and bool(self.kernel.sizes) and not running)
        self.cancel_button.setEnabled(running)
        self.cluster.setEnabled(not running)
        reason = tuning_view.apply_reason(self.best, self.slot.currentText(), running)
        if not has_tunables:
            reason = "no [kernel.tunables] in workbench.toml"
        self.apply_button.setEnabled(reason is None)
        self.apply_button.setToolTip(
            "write the best configuration of the chosen backend × device into workbench.toml"
            if reason is None else f"Apply is disabled: {reason}"
        )  # fmt: skip
        self.apply_reason.setText(f"Apply: {reason}" if reason else "")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
