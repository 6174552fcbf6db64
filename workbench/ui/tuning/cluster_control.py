"""The Tuning panel's Cluster control: where a sweep's configurations run.

none (this machine's workers, the default), `local:N`, `tcp://HOST:PORT` or `hosts:NAME[,NAME…]`;
the text goes to the core the command line's `--cluster` uses (`cluster.connect.parse`, then
`cluster.dispatch.open_dispatcher` on the sweep's thread); a spec the parser refuses is framed in
the control with its message (`error_label`) and no sweep starts.
"""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QLabel, QWidget

from workbench.remote.hosts import HostStore
from workbench.ui import theme
from workbench.ui.layout_fit import wrap_within

#: The Cluster control's first item: no cluster, this machine's run workers (the default).
NO_CLUSTER = "none"
CLUSTER_TIP = (
    "where a sweep's configurations run: none (here, the default), local:N (N Dask workers here), "
    "tcp://HOST:PORT (a running Dask scheduler) or hosts:NAME[,NAME…] (one worker per device of each "
    "registered host, over ssh); as `workbench tune --cluster`"
)


class ClusterControl(QComboBox):
    """An editable choice of cluster spec, checked as it is typed; `error_label` (the parser's
    message for a refused spec, empty and hidden when the spec is valid) goes where the panel
    puts it, which then calls `check()` once."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("cluster")
        self.setEditable(True)
        self.addItems([NO_CLUSTER, "local:2", *(f"hosts:{n}" for n in HostStore().names())])
        self.editTextChanged.connect(lambda _t: self.check())
        self.error_label = wrap_within(QLabel(""))
        self.error_label.setObjectName("cluster-error")

    def check(self) -> tuple[str | None, str]:
        """(the spec or None for none, the parser's message or ""): a spec the parser
        (`cluster.connect.parse`, the command line's) refuses is framed, its message shown."""
        from workbench.profile.tuning.cluster.connect import ClusterError, parse

        text = self.currentText().strip()
        spec, error = None, ""
        try:
            spec = None if text in ("", NO_CLUSTER) else parse(text).text
        except ClusterError as exc:
            error = str(exc)
        self.lineEdit().setStyleSheet(f"QLineEdit {{ border: 1px solid {theme.ERROR}; }}" if error else "")
        self.setToolTip(error or CLUSTER_TIP)
        self.error_label.setText(error)
        self.error_label.setVisible(bool(error))
        return spec, error

    def spec(self) -> str | None:
        """The spec (None: none, the embedded default); ClusterError when refused."""
        from workbench.profile.tuning.cluster.connect import ClusterError

        spec, error = self.check()
        if error:
            raise ClusterError(error)
        return spec
