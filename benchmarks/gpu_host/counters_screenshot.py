"""Screenshots of the Counters view from recorded `workbench run --counters --json` output.

    QT_QPA_PLATFORM=offscreen python benchmarks/gpu_host/counters_screenshot.py RUN.json... --out DIR

Each file's counters (e.g. benchmarks/results/counters-h200/run-bitonic.json, taken on the H200)
are shown in the window's CountersView (dark theme) and saved as DIR/counters-<kernel>.png (one
kernel an image: highlights compare its backends, never two kernels).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from PySide6.QtCore import QObject, Signal  # noqa: E402

from workbench.ui.app import create_application  # noqa: E402
from workbench.ui.counters.view import CountersView  # noqa: E402


class _Source(QObject):
    """What the view listens to: the bridge's runFinished signal (no run happens here)."""

    runFinished = Signal(object)
    project = None


def records_of(path: Path) -> dict:
    data = json.loads(path.read_text())
    kernel = data.get("kernel", path.stem)
    return {(f"{kernel} {c['backend']}", c["device"]): c for c in data.get("counters") or []}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    create_application()
    args.out.mkdir(parents=True, exist_ok=True)
    view = CountersView(_Source())
    for path in args.runs:
        records = records_of(path)
        view.show_records(records)
        view.resize(900, 620)
        name = args.out / f"counters-{json.loads(path.read_text()).get('kernel', path.stem)}.png"
        view.grab().save(str(name))
        print(f"wrote {name}")
    view.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
