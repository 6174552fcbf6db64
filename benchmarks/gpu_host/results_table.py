"""benchmarks/results/README.md from a results file (`evidence.py assemble` output):

    python benchmarks/gpu_host/results_table.py benchmarks/results/h200-<date>.json [--out README.md]

One row per example, size and backend: median, the rate and the share of the roof that binds it
as `workbench run` read it (`throughput.roof`, `workbench.run.ceilings_roof`: GB/s against the
copy, read, write or update ceiling the kernel's traffic selects, or GFLOP/s against the FMA one; a
share over the ceiling flagged, never shown as plain "104 %"); results from before that reading, against
the copy / FMA ceiling (`device_ceilings`) or the theoretical peak (said in the header); registers; then the
cold-L2 median and Nsight Compute's duration where the run has them; each device's measured ceilings
(every memory stream, `ceilings_kernels.STREAMS`, and FMA, with the variant that won each), the rust-gpu
modules, the harness-overhead ratios and the GPU test summary. The table is generated: edit the
results, not it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from workbench.run.ceilings_kernels import STREAMS
from workbench.run.ceilings_roof import ROOF_NAMES

#: Results from before `throughput.roof`: the examples read in GFLOP/s.
COMPUTE_BOUND = {"matmul"}


def _us(seconds: float | None) -> str:
    return "–" if not seconds else f"{seconds * 1e6:,.1f} µs"


def _size(sizes: dict[str, int] | None) -> str:
    if not sizes:
        return "–"
    values = list(sizes.values())
    if len(set(values)) == 1 and len(values) == 3:
        return f"{values[0]}³"
    out = []
    for name, value in sizes.items():
        power = value.bit_length() - 1
        out.append(f"{name}=2^{power}" if value == 1 << power and value >= 1024 else f"{name}={value}")
    return ", ".join(out)


def ceilings(data: dict[str, Any]) -> tuple[float | None, float | None, str]:
    """(GB/s ceiling, GFLOP/s ceiling, what they are)."""
    measured = data.get("device_ceilings") or {}
    if measured.get("copy_gbps") or measured.get("fma_gflops_f32"):
        return (
            measured.get("copy_gbps"),
            measured.get("fma_gflops_f32"),
            "measured ceiling (`workbench ceilings`, of the result's own device)",
        )
    device = data.get("device") or {}
    return (
        device.get("peak_gbps"),
        device.get("peak_gflops"),
        "theoretical peak (no measured ceiling in this run)",
    )


def _rate_and_share(
    r: dict[str, Any],
    tp: dict[str, Any],
    data: dict[str, Any],
    gbps_ceiling: float | None,
    gflops_ceiling: float | None,
) -> tuple[str, str]:
    """The rate and its share of the roof: the run's own reading (`throughput.roof`: the roof its
    traffic selects, "read 98 %"), else the copy / FMA ceiling of older results."""
    roof = tp.get("roof")
    if roof:
        rate_text = f"{roof['achieved']:,.0f} {roof['unit']}"
        name = ROOF_NAMES.get(roof["roof"], roof["roof"])
        share = f"{100 * roof['fraction']:.0f} % of {name}"
        if roof.get("suspect"):
            share += " (over the ceiling: suspect)"
        return rate_text, share
    compute = r["kernel"] in COMPUTE_BOUND
    rate = tp.get("gflops") if compute else tp.get("gbps")
    own = (data.get("ceilings_by_device") or {}).get(r.get("device_spec") or "") or {}
    ceiling = (own.get("fma_gflops_f32") if compute else own.get("copy_gbps")) or (
        gflops_ceiling if compute else gbps_ceiling
    )
    rate_text = "–" if rate is None else f"{rate:,.0f} {'GFLOP/s' if compute else 'GB/s'}"
    return rate_text, "–" if not (rate and ceiling) else f"{100 * rate / ceiling:.0f} %"


def table(data: dict[str, Any]) -> str:
    gbps_ceiling, gflops_ceiling, what = ceilings(data)
    lines = [
        f"| example | size | backend | verified | median | GB/s or GFLOP/s | % of {what} | registers "
        "| median, L2 cold | ncu (defaults / no flush, no clock control) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data.get("results", []):
        tp = r.get("throughput") or {}
        rate_text, share = _rate_and_share(r, tp, data, gbps_ceiling, gflops_ceiling)
        timing = r.get("timing") or {}
        status = {True: "yes", False: "NO", None: "reference" if r.get("status") == "ok" else r.get("status")}
        ncu = r.get("ncu") or {}
        ncu_text = " / ".join(
            _us((ncu.get(k) or {}).get("median_s")) for k in ("ncu_default", "ncu_no_flush_no_clock_control")
        ) if ncu else "–"  # fmt: skip
        lines.append(
            f"| {r['kernel']} | {_size(r.get('sizes'))} | {r['backend']} | {status[r.get('verified')]} "
            f"| {_us(timing.get('median_s'))} | {rate_text} | {share} | {r.get('registers') or '–'} "
            f"| {_us((r.get('l2_cold') or {}).get('median_s'))} | {ncu_text} |"
        )
    return "\n".join(lines)


def _rate(value: float | None) -> str:
    """A ceiling: whole units on a GPU ("2,948"), three digits where it is small (llvmpipe's "0.347")."""
    if not value:
        return "not measured"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def ceilings_table(data: dict[str, Any]) -> list[str]:
    """Lines of each measured device's ceilings: every memory stream in GB/s and the FMA ones in
    GFLOP/s ("not measured": a stream the run's checkout lacks, or whose variants all failed),
    then the variant that won each figure; [] when the run measured none."""
    by_device = data.get("ceilings_by_device") or {}
    if not by_device:
        return []
    lines = [
        "",
        "## Measured ceilings (`workbench ceilings`: each the best of its kernel variants)",
        "",
        "| device | name | "
        + " | ".join(f"{ROOF_NAMES[s]} GB/s" for s in STREAMS)
        + " | FMA f32 GFLOP/s | FMA f64 GFLOP/s | best variants |",
        "|---|---|" + "---|" * len(STREAMS) + "---|---|---|",
    ]
    for spec, c in by_device.items():
        figures = " | ".join(_rate(c.get(f"{s}_gbps")) for s in STREAMS)
        variants = "; ".join(f"{k}: {v}" for k, v in (c.get("variants") or {}).items()) or "–"
        lines.append(
            f"| {spec} | {c.get('name') or '–'} | {figures} | {_rate(c.get('fma_gflops_f32'))} "
            f"| {_rate(c.get('fma_gflops_f64'))} | {variants} |"
        )
    return lines


def _ms(seconds: float | None) -> str:
    return "–" if not seconds else f"{seconds * 1e3:,.2f} ms"


def cpu_native_table(data: dict[str, Any]) -> list[str]:
    """Lines of the cpu-native step (issue 37): per core setting, each row's wall-clock medians of
    the cpu backend and the plain loops and cpu / plain; [] when the run has none."""
    lines: list[str] = []
    for name, run in (data.get("cpu_native") or {}).items():
        cpus = (run.get("cores") or {}).get("cpus") or []
        goal = (run.get("goals") or {}).get("cpu_over_plain")
        lines += ["", f"## The cpu backend against plain Rust, wall clock ({name}: {len(cpus)} CPUs; "
                  f"`benchmarks/cpu_native.py --from-artifacts`; goal cpu / plain ≤ {goal})", "",
                  "| example | size | cpu | plain | plain threads | cpu / plain | cpu / threads | plain check |",
                  "|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for row in run.get("rows") or []:
            kernel = (
                row["example"]
                if row.get("kernel") == row["example"]
                else f"{row['example']}/{row.get('kernel')}"
            )
            if row.get("skipped"):
                lines.append(f"| {kernel} | {row.get('size')} | {row['skipped']} | | | | | |")
                continue
            med = row.get("median_s") or {}
            size = f"{row.get('size')} ({_size(row['sizes'])})" if row.get("sizes") else row.get("size")
            ratios = [row.get(k) for k in ("cpu_over_plain", "cpu_over_plain_threads")]
            lines.append(
                f"| {kernel} | {size} | {_ms(med.get('cpu'))} | {_ms(med.get('plain'))} "
                f"| {_ms(med.get('plain-threads'))} | {' | '.join('–' if r is None else f'{r:.2f}' for r in ratios)} "
                f"| {'passed' if row.get('plain_ok') else 'FAILED'} |"
            )
    return lines


def render(data: dict[str, Any], source: str) -> str:
    device = data.get("device") or {}
    parts = [
        "# Results",
        "",
        f"Generated by `benchmarks/gpu_host/results_table.py` from `{source}`; do not edit by hand.",
        "",
        f"Device: {device.get('name') or (device.get('nvidia_smi') or {}).get('name', 'unknown')}. "
        "Each backend's median comes from `workbench run --json` (CUDA events, wgpu timestamps); "
        "non-reference backends are verified element by element against the reference "
        "(cuda-c at the large sizes).",
        "",
        table(data),
        *ceilings_table(data),
    ]
    modules = data.get("rust_gpu_modules") or []
    if modules:
        parts += ["", "## Real rust-gpu SPIR-V on the Vulkan adapter", "",
                  "| module | size | backend | device | verified | median | GB/s |", "|---|---|---|---|---|---|---|"]  # fmt: skip
        for m in modules:
            tp = m.get("throughput") or {}
            parts.append(
                f"| {m['kernel']} | {_size(m.get('sizes'))} | {m['backend']} | {m.get('device') or '–'} "
                f"| {m.get('verified')} | {_us((m.get('timing') or {}).get('median_s'))} "
                f"| {'–' if tp.get('gbps') is None else format(tp['gbps'], ',.1f')} |"
            )
    harness = data.get("harness_overhead") or {}
    if harness.get("results"):
        parts += ["", "## Harness overhead (workbench median / independent loop median)", "",
                  "| backend | size | workbench | independent | ratio | ncu / nsys |", "|---|---|---|---|---|---|"]  # fmt: skip
        for h in harness["results"]:
            if "ratio" not in h:
                parts.append(f"| {h['backend']} | – | – | – | {h.get('error') or h.get('skipped')} | – |")
                continue
            prof = " / ".join(_us(p.get("median_s")) for p in (h.get("profilers") or {}).values()) or "–"
            parts.append(
                f"| {h['backend']} | {_size(h.get('sizes'))} | {_us(h['workbench_median_s'])} "
                f"| {_us(h['independent_median_s'])} | {h['ratio']:.3f} | {prof} |"
            )
    variants = data.get("wgsl_variants") or {}
    for example, result in variants.items():
        rows = (result or {}).get("results") or []
        if not rows:
            continue
        sizes = ", ".join(f"{k}={v}" for k, v in ((result or {}).get("sizes") or {}).items())
        parts += ["", f"## WGSL variants: {example} ({sizes}; `benchmarks/wgsl_variants.py`, "
                  "`benchmarks/results/wgsl-spirv/README.md`)", "",
                  f"| variant | verified | equal to V0, bit for bit | median | / V0 | / {result.get('reference_backend')} |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        for row in rows:
            ratio = row.get("ratio_to_v0")
            ref = row.get(f"ratio_to_{(result or {}).get('reference_backend')}")
            parts.append(
                f"| {row.get('variant')} | {row.get('verified')} | {row.get('bit_identical_to_v0', '–')} "
                f"| {_us(row.get('median_s'))} | {'–' if ratio is None else format(ratio, '.2f')} "
                f"| {'–' if ref is None else format(ref, '.2f')} |"
            )
    scaling = data.get("run_scaling") or {}
    if scaling:
        parts += ["", "## Runs that scale (saxpy, `benchmarks/run_scaling.py` and the command line)", "",
                  "| run | backends | n | wall | host overhead | peak memory / budget |", "|---|---|---|---|---|---|"]  # fmt: skip
        for name, run in scaling.items():
            if "rows" in run:
                for row in run["rows"] or []:
                    parts.append(
                        f"| run_scaling {name} | {','.join(run.get('backends') or [])} | {_size({'n': row['n']})} "
                        f"| {row['wall_s']:.2f} s | {row['host_s']:.2f} s | {row['memory_ratio']:.2f} |"
                    )
            else:
                parts.append(
                    f"| `{(run.get('command') or '').split(' -m ', 1)[-1]}` | – | – | {run.get('wall_s')} s "
                    f"(user {run.get('user_s')} s) | – | max RSS of one process {run.get('max_rss_mib_one_process')} MiB |"
                )
    parts += cpu_native_table(data)
    tests = data.get("gpu_tests") or {}
    if tests:
        parts += ["", f"GPU test suite (`pytest tests/gpu -m gpu`): {tests.get('summary')}"]
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "README.md"))
    args = parser.parse_args(argv)
    data = json.loads(Path(args.results).read_text())
    Path(args.out).write_text(render(data, Path(args.results).name))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
