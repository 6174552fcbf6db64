"""`workbench sessions list|show|compare|export|import|check`: browse the recorded runs.

Every sub-command takes `--db FILE` (default: `$WB_SESSIONS_DB`, else the user data folder).
Exit status: 0 on success, 2 on bad input (unknown run, unreadable or unwritable file, a database
that is corrupt or has a newer schema).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from workbench.cli import arg_types
from workbench.errors import WorkbenchError
from workbench.result_text import cell_of, row_verdict
from workbench.units import format_sizes, format_time


def _add_db(parser) -> None:
    parser.add_argument("--db", metavar="FILE", help="sessions database (default: the user data folder)")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sessions",
        help="list, show, compare, export and import recorded runs",
        description="Every `workbench run` and every run in the window is recorded with its "
        "provenance in a SQLite database; these commands browse it.",
    )
    sub = parser.add_subparsers(dest="sessions_command", metavar="ACTION", required=True)

    p = sub.add_parser("list", help="recorded runs, newest first")
    p.add_argument("--kernel", help="only this kernel")
    p.add_argument("--backend", help="only this backend")
    p.add_argument("--device", help="only this device (spec such as cuda:0, or part of its name)")
    p.add_argument("--project", help="only this project")
    p.add_argument(
        "--verified", choices=("yes", "no"), help="only verified (or reference) runs, or only the others"
    )
    p.add_argument("--since", metavar="DATE", help="only runs at or after DATE (YYYY-MM-DD, UTC)")
    p.add_argument(
        "--limit",
        type=arg_types.count(0, arg_types.INTEGER_LIMIT - 1),
        default=1000,
        help="at most this many runs (default 1000; 0: all)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_db(p)

    p = sub.add_parser("show", help="everything recorded about one run")
    p.add_argument("id", type=arg_types.run_id, help="run id (as `sessions list` shows)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_db(p)

    p = sub.add_parser(
        "compare",
        help="change of median between two runs, with a verdict that survives between-process noise",
        description="Ids are run ids, the rows `sessions list` shows (as in show and export): the two "
        "rows are compared; with --invocation each id stands for its whole recorded `workbench run` "
        "and their rows are paired per backend x device. A run recorded with --repeat brings the "
        "other repetitions of its series as further invocations. Runs that measured different "
        "things (kernel, project, sizes, tunables, backend, device, build flags, timing method, L2 "
        "policy) are 'not comparable', with what differs. Verdicts: faster / slower / same / "
        "ambiguous, from a 95% interval of the change in per-invocation medians (widened by the "
        "device's A/A noise floor) against ±--min-effect (docs/compare.md).",
    )
    p.add_argument("baseline", type=arg_types.run_id, help="baseline run id")
    p.add_argument("run", type=arg_types.run_id, help="run id")
    p.add_argument(
        "--invocation", action="store_true",
        help="compare the two ids' whole invocations, row by row per backend x device",
    )  # fmt: skip
    p.add_argument(
        "--force", action="store_true",
        help="compare rows that are not comparable anyway (the differences are still printed)",
    )  # fmt: skip
    p.add_argument(
        "--min-effect", type=_percent, default=None, metavar="PCT",
        help="smallest change worth a verdict, in percent (default 2)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_db(p)

    p = sub.add_parser("export", help="write runs as CSV, a JSON bundle or a Chrome trace")
    p.add_argument(
        "ids", nargs="*", type=arg_types.run_id, metavar="ID", help="runs to export (default: all)"
    )
    p.add_argument(
        "--format", choices=("csv", "json", "chrome-trace"), default=None,
        help="default: csv where -o names a .csv file, else json (a bundle)",
    )  # fmt: skip
    p.add_argument(
        "-o", "--output", metavar="FILE",
        help="write to this new file (default: standard output); devices, FIFOs, sockets, folders, "
        "symbolic links and SQLite databases are refused and left as they are",
    )  # fmt: skip
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="let -o replace an existing regular file (never anything else)",
    )
    _add_db(p)

    p = sub.add_parser(
        "import", help="add a JSON bundle's runs (duplicates skipped by run UUID)",
        description="Reads a regular file of at most 256 MiB, nested at most 64 deep; anything else is "
        "refused before it is read.",
    )  # fmt: skip
    p.add_argument("file", help="a bundle from `sessions export --format json` (or `workbench run --json`)")
    _add_db(p)

    p = sub.add_parser(
        "check", help="SQLite's full integrity check; a sound file loses its damaged mark (exit 1: not sound)"
    )
    _add_db(p)
    parser.set_defaults(func=run)


def run(args) -> int:
    from workbench.profile.sessions.store import SessionStore

    handlers = {
        "list": _list, "show": _show, "compare": _compare, "export": _export, "import": _import,
        "check": _check,
    }  # fmt: skip
    with SessionStore(args.db) as store:
        return handlers[args.sessions_command](store, args)


def _since(text: str | None) -> float | None:
    if not text:
        return None
    for fmt in ("%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            import calendar

            return float(calendar.timegm(time.strptime(text, fmt)))
        except ValueError:
            continue
    raise WorkbenchError(f"--since {text!r}: expected a date such as 2026-12-01")


LIST_KEYS = (
    "id", "time", "project", "kernel", "backend", "device", "device_name", "status", "verified",
    "is_reference", "median_s", "iqr_s", "n", "source_hash", "snapshot_hash", "build_key", "uuid",
    "unverified",
)  # fmt: skip


def _percent(text: str) -> float:
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage such as 2 or 0.5, got {text!r}") from None
    if not 0 <= value < 100:
        raise argparse.ArgumentTypeError(f"expected a percentage from 0 to 100, got {text!r}")
    return value / 100.0


def _list(store, args) -> int:
    runs = store.list_runs(
        kernel=args.kernel, backend=args.backend, device=args.device, project=args.project,
        verified={"yes": True, "no": False}.get(args.verified), since=_since(args.since),
        limit=args.limit or None,
    )  # fmt: skip
    from workbench.profile.sessions.conditions import run_conditions, series_text

    extras = run_conditions(store, [r["id"] for r in runs])
    if args.json:
        listed = [{**{k: r[k] for k in LIST_KEYS}, **extras[r["id"]], **_invalid(r)} for r in runs]
        print(json.dumps({"db": str(store.path), "runs": listed}, indent=1))
        return 0
    print(f"{len(runs)} run(s) in {store.path}; ids are runs (rows); compare --invocation pairs invocations")
    header = ("id", "time", "kernel", "backend", "device", "verified", "median", "IQR", "n", "series", "conditions")  # fmt: skip
    rows = [
        (r["id"], r["time"], f"{r['project']}/{r['kernel']}", r["backend"], r["device"], _verified(r),
         format_time(r["median_s"]), format_time(r["iqr_s"]), r["n"] or "-",
         series_text(extras[r["id"]]["series"]), ", ".join(extras[r["id"]]["condition_flags"]) or "-")
        for r in runs
    ]  # fmt: skip
    print(_table(header, rows))
    for r in runs:
        if r.get("invalid"):
            print(f"run #{r['id']} holds invalid values (shown as -): " + "; ".join(r["invalid"]))
    return 0


def _invalid(run: dict[str, Any]) -> dict[str, Any]:
    """`{"invalid": [...]}` for a row the store found poisoned (`bundle_check.sanitize`), else {}."""
    return {"invalid": run["invalid"]} if run.get("invalid") else {}


def _verified(run: dict[str, Any]) -> str:
    return cell_of(row_verdict(run))


def _table(header: tuple, rows: list[tuple]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    return "\n".join(
        "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    )


def _show(store, args) -> int:
    record = store.get_run(args.id)
    record["diff"] = store.diff(args.id)
    if args.json:
        print(json.dumps(record, indent=1))
        return 0
    detail = record["detail"]
    print(f"run #{record['id']}  {record['time']}  uuid {record['uuid']}")
    print(
        f"  {record['project']} / {record['kernel']} on {record['backend']}, {record['device']} {record['device_name']}"
    )
    print(f"  status {record['status']}, verified {_verified(record)}")
    if record["median_s"] is not None:
        print(
            f"  median {format_time(record['median_s'])}, IQR {format_time(record['iqr_s'])}, "
            f"min {format_time(record['min_s'])}, n {record['n']} ({record['timing_method']})"
        )
    print(
        f"  sizes {format_sizes(record['sizes'])}, tunables {format_sizes(record['tunables'])}, seed {record['seed']}"
    )
    print(f"  toolchain {record['toolchain']}, flags {record['flags']}, build key {record['build_key']}")
    resources = detail.get("resources") or {}
    if resources:
        print("  resources " + ", ".join(f"{k} {v}" for k, v in resources.items()))
    if record.get("counters"):  # `workbench run --counters` or the window's (issue 27): its one line
        print(f"  counters ({record['counters'].get('status')}): {record['counters'].get('message')}")
        earlier = record["counters"].get("earlier") or []
        if earlier:  # taken again later (`SessionStore.add_counters`): the measurements it replaced
            print(
                f"  earlier counters: {len(earlier)} capture(s) kept in the record (sessions export --format json)"
            )
    if record["error"]:
        print(f"  error: {record['error']}")
    for problem in record.get("invalid") or ():
        print(f"  invalid: {problem}")
    print("source diff against the previous recorded run of this kernel:")
    print(record["diff"] or "(no change)")
    return 0


def _compare(store, args) -> int:
    from workbench.profile.sessions.compare import COLUMNS, cells, compare_runs
    from workbench.profile.sessions.noise import MIN_EFFECT
    from workbench.profile.sessions.wording import against

    min_effect = MIN_EFFECT if args.min_effect is None else args.min_effect
    result = compare_runs(
        store, args.baseline, args.run, invocation=args.invocation, force=args.force, min_effect=min_effect
    )
    from workbench.profile.sessions.counters_compare import compare_counters, lines

    counters = compare_counters(store, result["rows"])
    if counters:  # both runs took counters (`run --counters`): additive, under the same rules
        result["counters"] = counters
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"{against(args.run, args.baseline, args.invocation)}; minimum effect {min_effect:.1%}")
    print(f"method: {result['method']}")
    print(_table(COLUMNS, [cells(row) for row in result["rows"]]))
    for row in result["rows"]:
        if row["differs"]:
            label = "compared anyway (--force)" if row["forced"] else "not comparable"
            print(f"{row['backend']} on {row['device']}: {label}; differs in " + "; ".join(row["differs"]))
    for line in lines(counters):
        print(line)
    return 0


def _export(store, args) -> int:
    from workbench.profile.sessions.export import render, write_text
    from workbench.profile.sessions.outside_files import MAX_BUNDLE_BYTES

    if args.format is None:  # `-o runs.csv` alone means CSV: a JSON bundle there would misname it
        args.format = "csv" if args.output and args.output.lower().endswith(".csv") else "json"
    text = render(store, args.format, args.ids)
    if args.output:
        write_text(args.output, text, overwrite=args.overwrite)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    if args.format == "json" and len(text) > MAX_BUNDLE_BYTES:  # characters: at least that many bytes
        print(f"warning: this bundle is larger than the {MAX_BUNDLE_BYTES >> 20} MiB `sessions import` reads; "
              "export the runs in parts (`sessions export ID...`) to bring them into another database",
              file=sys.stderr)  # fmt: skip
    return 0


def _check(store, args) -> int:
    from workbench.profile.sessions.damage_note import note_path
    from workbench.profile.sessions.store import SessionStoreError

    marked = note_path(store.path).exists()
    try:
        result = store.integrity_check()
    except SessionStoreError as exc:  # SQLite may answer "corrupt" instead of listing findings
        if not exc.damaged:
            raise
        result = exc.code
    read_only = " (on a read-only file system: checked as it is, nothing written)" if store.read_only else ""
    note = note_path(store.path)
    if result != "ok":
        stays = "it stays marked damaged" if note.exists() else f"it could not be marked damaged ({note})"
        print(f"{store.path} is not sound: {result}; {stays}{read_only} — keep a copy and try "
              f"`sqlite3 {store.path} .recover`")  # fmt: skip
        return 1
    if marked and note.exists():  # sound, but the mark could not be removed (a read-only mount)
        print(f"{store.path}: ok ({store.count()} runs){read_only}; its damaged mark {note} could not be "
              "removed here — run `workbench sessions check` where its folder is writable, or remove it")  # fmt: skip
        return 0
    lifted = "; the damaged mark was lifted" if marked else ""
    print(f"{store.path}: ok ({store.count()} runs){lifted}{read_only}")
    return 0


def _import(store, args) -> int:
    from workbench.profile.sessions.export import import_bundle

    added, skipped = import_bundle(store, args.file)
    print(f"imported {added} run(s) into {store.path}; {skipped} already there")
    return 0
