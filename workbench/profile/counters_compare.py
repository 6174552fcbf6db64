"""Counters compared between recorded runs, under the same rules as their timings (issue 27, item 4).

`sessions compare` pairs rows and decides whether two runs may be compared (`comparable.py`: same
project, kernel, backend, device, sizes …; `--force` overrides). For each pair it compared (or was
forced to), where both runs took counters (`workbench run --counters`), this gives each metric of
the set side by side with the change: a ratio for durations and clocks, points for percentages, and
whether it is beyond the highlight rule (`metrics.differs`). Pairs that were not comparable get
nothing: their counters are no more comparable than their timings. Qt-free.
"""

from __future__ import annotations

from typing import Any

from workbench.profile.store import SessionStore
from workbench.run.counters.metrics import METRICS, differs, format_value


def compare_counters(store: SessionStore, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per compared pair of `compare_runs` rows whose runs both have ok counters."""
    out = []
    for row in rows:
        if not (row.get("comparable") or row.get("forced")) or row.get("baseline_id") is None:
            continue
        a, b = store.counters(row["baseline_id"]), store.counters(row["run_id"])
        if not (a and b and a.get("status") == "ok" and b.get("status") == "ok"):
            continue
        metrics = []
        for metric in METRICS:
            x, y = (a.get("metrics") or {}).get(metric.key), (b.get("metrics") or {}).get(metric.key)
            change = None
            if x is not None and y is not None:
                change = f"{y - x:+.1f} points" if metric.unit == "pct" else (f"×{y / x:.3f}" if x else None)
            metrics.append({
                "key": metric.key, "label": metric.label, "baseline": x, "run": y, "change": change,
                "differs": differs([x, y], metric.key),
                "text": [format_value(metric.key, x), format_value(metric.key, y)],
            })  # fmt: skip
        out.append({
            "backend": row["backend"], "device": row["device"], "baseline_id": row["baseline_id"],
            "run_id": row["run_id"], "metrics": metrics,
            "stalls": [a.get("stalls") or [], b.get("stalls") or []],
        })  # fmt: skip
    return out


def lines(entries: list[dict[str, Any]]) -> list[str]:
    """The CLI's text of `compare_counters`: one block per pair, '*' on a row beyond the rule."""
    text = []
    for entry in entries:
        text.append(
            f"counters, {entry['backend']} on {entry['device']} (#{entry['run_id']} against #{entry['baseline_id']}):"
        )
        for m in entry["metrics"]:
            mark = "*" if m["differs"] else " "
            text.append(
                f"  {mark} {m['label']:<28} {m['text'][0]:>12} → {m['text'][1]:>12}  {m['change'] or ''}".rstrip()
            )
        tops = [", ".join(f"{r} {v:.1f}" for r, v in side[:2]) or "–" for side in entry["stalls"]]
        text.append(f"    top stalls: {tops[0]} → {tops[1]}")
    return text
