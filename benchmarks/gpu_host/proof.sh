#!/usr/bin/env bash
# The GPU proof: every example through cuda (nvptx, cuda-c) and wgpu (wgsl) on a GPU host with no Rust,
# from artifacts built on a developer machine, verified against the cpu build (run untimed as reference).
#
# On the developer machine (repo root):
#   for ex in saxpy reduction matmul bitonic; do
#     .venv/bin/workbench build resources/examples/$ex --backend cpu,nvptx,cuda-c,wgsl --export .gpu-artifacts/$ex
#   done
# On the GPU host (repo root, Python with numpy, wgpu and pycuda importable):
#   DEVICE_TAG=h200 OUT=/some/dir bash benchmarks/gpu_host/proof.sh
set -u
out=${OUT:-benchmarks/results}
tag=${DEVICE_TAG:-gpu}
artifacts=${ARTIFACTS:-.gpu-artifacts}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
mkdir -p "$out"

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv \
  > "$out/nvidia-smi-$tag.csv" 2>&1
python3 -m workbench doctor --json > "$out/doctor-$tag.json"
python3 -m workbench doctor

summary() {
  python3 - "$1" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
print(f"{report['project']}/{report['kernel']}")
for r in report["results"]:
    t = r.get("timing") or {}
    tp = r.get("throughput") or {}
    med = f"{t['median_s'] * 1e6:10.1f} us" if t else " " * 13
    gbps = f"{tp['gbps']:8.1f} GB/s" if tp.get("gbps") else " " * 13
    gflops = f"{tp['gflops']:9.1f} GFLOP/s" if tp.get("gflops") else ""
    print(f"  {r['backend']:<7} {r['device'].get('name', '')[:22]:<22} {r['status']:<7} verified={r['verified']!s:<5}"
          f" {med} {gbps} {gflops} {t.get('method', '')} {r.get('error') or ''}")
PY
}

run_example() {
  local ex=$1
  shift
  python3 -m workbench run "resources/examples/$ex" --backend nvptx,cuda-c,wgsl \
    --artifacts "$artifacts/$ex" --json "$@" > "$out/run-$ex-$tag.json"
  echo "exit $? for $ex"
  summary "$out/run-$ex-$tag.json"
}

run_example saxpy --size n=16000000
run_example reduction --size n=16777216
run_example matmul --size m=1024 --size n=1024 --size k=1024
run_example bitonic --size n=8388608

python3 benchmarks/harness_overhead.py --project resources/examples/saxpy --backend nvptx,cuda-c,wgsl \
  --artifacts "$artifacts/saxpy" --size n=16000000 --json "$out/harness_overhead-$tag.json"
