#!/usr/bin/env bash
# Issue 26 item 1, "at the limit": saxpy, reduction and matmul in each variant (limit.py's PLAN)
# at large sizes (n = 2^28; matmul 4096^3) on cuda-c, nvptx and wgsl, each against the ceiling that
# bounds it (copy, read, f32 FMA), measured on the same GPU by `workbench ceilings`' kernels.
#
# Here, once (Rust and nvcc; the GPU host has neither): the artifacts and the offline bundle
#   bash benchmarks/gpu_host/limit.sh prepare          (SKIP_BUNDLE=1 keeps an existing .gpu-bundle)
# There, in one device call from the repository root (< 8 minutes; LIMIT_BUDGET=420 s of runs):
#   bash benchmarks/gpu_host/limit.sh                  carry: .gpu-bundle, .limit-artifacts
# Results in $OUT: limit.json (rewritten after each variant), limit.md (the table), limit.log,
# setup.log. A dry run here on llvmpipe:
#   OUT=/tmp/limit LIMIT_ARGS="--small --devices cpu,wgpu:llvmpipe --backends cpu,wgsl" \
#     LIMIT_SETUP=none bash benchmarks/gpu_host/limit.sh
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
export PYTHONPATH=$repo${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1

if [ "${1:-}" = prepare ]; then
  set -e
  py=${PYTHON:-$repo/.venv/bin/python}
  [ -x "$py" ] || py=python3
  rm -rf .limit-artifacts
  "$py" benchmarks/gpu_host/limit.py prepare --out .limit-artifacts
  du -sh .limit-artifacts
  if [ -z "${SKIP_BUNDLE:-}" ]; then
    bash "$repo/../shared/scripts/gpu-host-bundle.sh" "$repo/.gpu-bundle"
  fi
  exit 0
fi

out=${OUT:-$repo/benchmarks/results/limit-out}
mkdir -p "$out"
if [ "${LIMIT_SETUP:-bundle}" = bundle ]; then
  source .gpu-bundle/gpu-host-setup.sh .gpu-bundle > "$out/setup.log" 2>&1
fi
py=${PYTHON:-python3}
{
  echo "limit run $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname); $($py -V 2>&1)"
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
} 2>&1 | tee "$out/limit.log"
# shellcheck disable=SC2086  # LIMIT_ARGS is a list of options
$py benchmarks/gpu_host/limit.py run --artifacts .limit-artifacts --out "$out" \
  --budget "${LIMIT_BUDGET:-420}" --devices "cuda:0,wgpu:${WGPU_DEVICE:-0}" ${LIMIT_ARGS:-} 2>&1 | tee -a "$out/limit.log"
