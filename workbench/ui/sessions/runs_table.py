"""The Sessions panel's runs list: a model that reads the store a page at a time, and its view.

`RunsModel` (a `QAbstractTableModel`) holds the runs loaded so far, newest first; the view asks
for the next page (`canFetchMore`/`fetchMore`, `paging.page`) as it scrolls towards the end, so
a database of 100,000 runs costs one page to show. A recording arriving adds only the runs newer
than the first row (`update`: `paging.newer`, rows inserted at the top, the selection kept); the
filters changing reloads the first page (`load`). Nothing is refilled and no column is sized to
its contents: the columns have fixed widths from the font, set once.

`RunsTable` (a `QTableView`) shows the columns that matter (`MATTER`: kernel, backend, device,
median, verdict, flags such as "busy") in a dock of a 1280×800 window, and the run id (`#`) where
there is room for it too (the kernel's tooltip names the run, and the baseline's kernel is
starred, either way); the others come from the header's context menu (`set_column_shown`). Each row's run id is its `Qt.ItemDataRole.UserRole`, so
selection and export read ids, never texts. Texts come from `workbench.result_text`,
`workbench.units` and the sessions `wording`, the one colour (a failed verdict) from
`workbench.ui.theme`.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QPoint, QSize, Qt, Signal
from PySide6.QtGui import QAction, QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QMenu, QStyle, QTableView, QWidget

from workbench.profile.sessions import paging
from workbench.profile.sessions.conditions import series_text
from workbench.profile.sessions.paging import RunFilter
from workbench.profile.sessions.wording import kernel_ref, marked, run_ref
from workbench.result_text import cell_of, row_verdict, verdict_tone
from workbench.ui import theme
from workbench.units import format_time

RUN_COLUMNS = (
    "#", "kernel", "backend", "device", "median", "verified", "flags",
    "time (UTC)", "IQR", "n", "sources", "series",
)  # fmt: skip
#: The columns always shown until the user picks others (header menu): what ran, how it went.
MATTER = RUN_COLUMNS[1:7]
#: The columns shown by default: `MATTER`, and the id where the list is wide enough for it.
SHOWN = RUN_COLUMNS[:7]
_COLUMN = {name: i for i, name in enumerate(RUN_COLUMNS)}
#: Each column's width: room for this text (or its title) in the view's font. The kernel column
#: takes what is left over, at least `KERNEL_MIN`: the list asks for that much width
#: (`minimumSizeHint`), so the window's default layout gives its dock room for `MATTER`.
WIDTH_OF = {
    "#": "000000", "backend": "rust-cuda", "device": "wgpu:0", "median": "999.999 ms",
    "verified": "reference", "flags": "busy", "time (UTC)": "2026-12-01 00:00:00", "IQR": "999.999 µs",
    "n": "10000", "sources": "0123456789", "series": "10/10",
}  # fmt: skip
KERNEL_MIN = "warp_reduce"
#: Room around a cell's text (the style's margins) and a title's (its sort arrow's room).
CELL_PAD, TITLE_PAD = 10, 12
_RIGHT = {"#", "median", "IQR", "n"}
_AlignRight = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
_AlignLeft = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter


def verified_text(run: dict[str, Any]) -> str:
    """A recorded run's verdict cell, as the results table and `sessions list` show it."""
    return cell_of(row_verdict(run))


def kernel_text(run: dict[str, Any]) -> str:
    """The kernel, after its project when the two are named apart (`wording.kernel_ref`, as the
    Compare tab's baseline line names it)."""
    return kernel_ref(run)


def _cells(run: dict[str, Any], extra: dict[str, Any]) -> tuple[str, ...]:
    """A run's row, column by column (`RUN_COLUMNS`; the model stars the baseline's kernel)."""
    return (
        str(run["id"]), kernel_text(run), run["backend"], run["device"],
        format_time(run["median_s"], "–"), verified_text(run), ", ".join(extra.get("condition_flags") or ()),
        str(run["time"]).replace("T", " ").rstrip("Z"), format_time(run["iqr_s"], "–"), str(run["n"] or "–"),
        (run["snapshot_hash"] or "")[:10], series_text(extra.get("series")),
    )  # fmt: skip


class RunsModel(QAbstractTableModel):
    """Recorded runs that pass a `RunFilter`, newest first, loaded a page at a time."""

    def __init__(self, parent: Any = None):
        super().__init__(parent)
        #: The loaded runs (`SessionStore.list_runs` rows), newest first: their ids descend.
        self.runs: list[dict[str, Any]] = []
        self._cells: dict[int, tuple[str, ...]] = {}
        self._bad: set[int] = set()
        self.baseline_id: int | None = None
        self.filter = RunFilter()
        self._store: Any = None
        self._more = False
        #: How many pages were read since the last load (what the tests and benchmark look at).
        self.pages_read = 0

    # ------------------------------------------------------------------ loading
    def load(self, store: Any, runs: RunFilter) -> None:
        """Show the newest page of the runs that pass `runs` (a reset: the view's selection goes)."""
        runs = runs.resolved(store)
        found = paging.page(store, runs)
        extras = paging.conditions(store, [run["id"] for run in found])
        self.beginResetModel()
        self._store, self.filter = store, runs
        self.runs, self._cells, self._bad = [], {}, set()
        self._add(found, extras)
        self._more = len(found) == paging.PAGE
        self.pages_read = 1
        self.endResetModel()

    def update(self) -> bool:
        """Add the runs recorded since the first row at the top; False when there were so many that
        the first page was reloaded instead (a reset)."""
        if self._store is None:
            return True
        after = self.runs[0]["id"] if self.runs else 0
        found = paging.newer(self._store, self.filter, after=after)
        if len(found) >= paging.PAGE:
            self.load(self._store, self.filter)
            return False
        if found:
            extras = paging.conditions(self._store, [run["id"] for run in found])
            self.beginInsertRows(QModelIndex(), 0, len(found) - 1)
            self.runs = found + self.runs
            self._describe(found, extras)
            self.endInsertRows()
        return True

    def canFetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> bool:  # noqa: B008, N802
        return not parent.isValid() and self._more and self._store is not None

    def fetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> None:  # noqa: B008, N802
        if parent.isValid() or not self._more or self._store is None:
            return
        before = self.runs[-1]["id"] if self.runs else None
        found = paging.page(self._store, self.filter, before=before)
        self.pages_read += 1
        self._more = len(found) == paging.PAGE
        if found:
            extras = paging.conditions(self._store, [run["id"] for run in found])
            start = len(self.runs)
            self.beginInsertRows(QModelIndex(), start, start + len(found) - 1)
            self._add(found, extras)
            self.endInsertRows()

    def fetch_until(self, run_id: int, pages: int = 50) -> None:
        """Load pages until run `run_id` (or an older one) is loaded, at most `pages` more."""
        for _ in range(pages):
            if not self._more or (self.runs and self.runs[-1]["id"] <= run_id):
                return
            self.fetchMore()

    def _add(self, runs: list[dict[str, Any]], extras: dict[int, dict[str, Any]]) -> None:
        self.runs.extend(runs)
        self._describe(runs, extras)

    def _describe(self, runs: list[dict[str, Any]], extras: dict[int, dict[str, Any]]) -> None:
        for run in runs:
            self._cells[run["id"]] = _cells(run, extras.get(run["id"]) or {})
            if verdict_tone(row_verdict(run)) == "bad":
                self._bad.add(run["id"])

    # ------------------------------------------------------------------ reading
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.runs)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(RUN_COLUMNS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return RUN_COLUMNS[section]
        return None

    def data(
        self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if not index.isValid():
            return None
        run = self.runs[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if column == _COLUMN["kernel"]:
                return marked(self._cells[run["id"]][column], run["id"] == self.baseline_id)
            return self._cells[run["id"]][column]
        if role == Qt.ItemDataRole.UserRole:
            return run["id"]
        if role == Qt.ItemDataRole.ToolTipRole:
            if run.get("invalid"):  # a poisoned row the store sanitised (bundle_check)
                return "invalid values, shown as –: " + "; ".join(run["invalid"])
            if column == _COLUMN["device"]:
                return run["device_name"] or None
            if column == _COLUMN["kernel"]:
                return f"{run_ref(run['id'])}: {run['project']}/{run['kernel']}"
            return self._cells[run["id"]][column] or None  # an elided text reads in full
        if role == Qt.ItemDataRole.ForegroundRole:
            if column == _COLUMN["verified"] and run["id"] in self._bad:
                return QColor(theme.VERDICT["slower"])
            return None
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return _AlignRight if RUN_COLUMNS[column] in _RIGHT else _AlignLeft
        return None

    def row_of(self, run_id: int) -> int | None:
        """The row of a loaded run (ids descend: a binary search), or None."""
        low, high = 0, len(self.runs)
        while low < high:
            mid = (low + high) // 2
            if self.runs[mid]["id"] > run_id:
                low = mid + 1
            else:
                high = mid
        row = low
        return row if row < len(self.runs) and self.runs[row]["id"] == run_id else None

    def run(self, run_id: int) -> dict[str, Any] | None:
        row = self.row_of(run_id)
        return None if row is None else self.runs[row]

    def ids(self) -> list[int]:
        return [run["id"] for run in self.runs]

    def set_baseline(self, run_id: int | None) -> None:
        """Mark run `run_id` as the baseline (its kernel cell), unmarking the one before."""
        before, self.baseline_id = self.baseline_id, run_id
        for changed in {before, run_id} - {None}:
            row = self.row_of(changed)  # type: ignore[arg-type]
            if row is not None:
                index = self.index(row, _COLUMN["kernel"])
                self.dataChanged.emit(index, index, [Qt.ItemDataRole.DisplayRole])


class RunsTable(QTableView):
    """The recorded runs the panel's filters let through, newest first."""

    #: The current (last selected) run changed: its id.
    currentRunChanged = Signal(int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.runs_model = RunsModel(self)
        self.setModel(self.runs_model)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setWordWrap(False)
        self.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        rows = self.verticalHeader()
        rows.hide()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)  # no row measured for its height
        rows.setDefaultSectionSize(self.fontMetrics().height() + 6)
        header = self.horizontalHeader()
        header.setStretchLastSection(False)
        header.setHighlightSections(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setMinimumSectionSize(24)
        self._set_widths()
        header.setSectionResizeMode(_COLUMN["kernel"], QHeaderView.ResizeMode.Stretch)
        for column, name in enumerate(RUN_COLUMNS):
            self.setColumnHidden(column, name not in SHOWN)
        #: The user showed or hid the id column (header menu): it no longer follows the width.
        self._id_chosen = False
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(self._column_menu)
        header.setToolTip("Right-click to choose the columns")
        self.selectionModel().selectionChanged.connect(lambda *_: self._selection_changed())

    def _set_widths(self) -> None:
        """Fixed widths from the font: the sample text or the title, whichever is wider."""
        header = self.horizontalHeader()
        cell, title = self.fontMetrics(), header.fontMetrics()
        for name, sample in WIDTH_OF.items():
            width = max(cell.horizontalAdvance(sample) + CELL_PAD, title.horizontalAdvance(name) + TITLE_PAD)
            header.resizeSection(_COLUMN[name], width)

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        """Wide enough for the columns that matter (`MATTER`, the kernel column at `KERNEL_MIN`)
        and the vertical scroll bar: what the window's default layout gives the dock at least."""
        return QSize(self._width_for(MATTER), super().minimumSizeHint().height())

    def _width_for(self, names: tuple[str, ...]) -> int:
        header = self.horizontalHeader()
        fixed = sum(header.sectionSize(_COLUMN[name]) for name in names if name != "kernel")
        kernel = self.fontMetrics().horizontalAdvance(KERNEL_MIN) + CELL_PAD
        scroll_bar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        return fixed + kernel + scroll_bar + 2 * self.frameWidth()

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        if not self._id_chosen:  # the id where it fits beside the columns that matter
            self.setColumnHidden(_COLUMN["#"], self.width() < self._width_for(SHOWN))

    # ------------------------------------------------------------------ columns
    def set_column_shown(self, name: str, shown: bool) -> None:
        self._id_chosen = self._id_chosen or name == "#"
        self.setColumnHidden(_COLUMN[name], not shown)

    def shown_columns(self) -> list[str]:
        return [name for c, name in enumerate(RUN_COLUMNS) if not self.isColumnHidden(c)]

    def _column_menu(self, at: QPoint) -> None:
        menu = self.column_menu()
        menu.exec(self.horizontalHeader().mapToGlobal(at))

    def column_menu(self) -> QMenu:
        """Checkable entries, one per column (the kernel always shown)."""
        menu = QMenu(self)
        for column, name in enumerate(RUN_COLUMNS):
            action = QAction(name, menu)
            action.setCheckable(True)
            action.setChecked(not self.isColumnHidden(column))
            action.setEnabled(name != "kernel")
            action.toggled.connect(lambda on, n=name: self.set_column_shown(n, on))
            menu.addAction(action)
        return menu

    # ------------------------------------------------------------------ rows
    def load(self, store: Any, runs: RunFilter) -> None:
        """Show the runs that pass `runs`; the runs selected before stay selected where they are
        still listed, and reloading emits no selection change."""
        selected = self.selected_ids()
        self.selectionModel().blockSignals(True)
        try:
            self.runs_model.load(store, runs)
            for run_id in selected:
                self._select(run_id, add=True)
        finally:
            self.selectionModel().blockSignals(False)

    def update_runs(self) -> None:
        """Add the runs recorded since (`RunsModel.update`); the selection stays."""
        selected = self.selected_ids()
        self.selectionModel().blockSignals(True)
        try:
            if not self.runs_model.update():
                for run_id in selected:
                    self._select(run_id, add=True)
        finally:
            self.selectionModel().blockSignals(False)

    def shown_run(self, run_id: int) -> dict[str, Any] | None:
        """The loaded row of run `run_id`, or None."""
        return self.runs_model.run(run_id)

    def shown_ids(self) -> list[int]:
        """The ids of the rows loaded so far, newest first."""
        return self.runs_model.ids()

    def selected_ids(self) -> list[int]:
        rows = sorted({index.row() for index in self.selectionModel().selectedRows()})
        return [self.runs_model.runs[row]["id"] for row in rows]

    def current_id(self) -> int | None:
        ids = self.selected_ids()
        return ids[-1] if ids else None

    def select_run(self, run_id: int) -> None:
        """Select run `run_id` (loading pages down to it when it is older than the loaded ones)."""
        self.runs_model.fetch_until(run_id)
        self._select(run_id, add=False)

    def _select(self, run_id: int, add: bool) -> None:
        row = self.runs_model.row_of(run_id)
        if row is None:
            return
        flags = self.selectionModel().SelectionFlag
        index = self.runs_model.index(row, 0)
        how = flags.Rows | (flags.Select if add else flags.ClearAndSelect)
        self.selectionModel().select(index, how)
        if not add:
            self.selectionModel().setCurrentIndex(index, flags.NoUpdate)
            self.scrollTo(index)

    def _selection_changed(self) -> None:
        run_id = self.current_id()
        if run_id is not None:
            self.currentRunChanged.emit(run_id)
