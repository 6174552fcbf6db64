#!/usr/bin/env bash
# The H200 evidence run (issue 13). On the GPU host, from the repository root, with the bundle and
# the artifacts of prepare.sh carried along (.gpu-bundle, .gpu-artifacts):
#
#   T0=$(date +%s); source .gpu-bundle/gpu-host-setup.sh .gpu-bundle
#   EVIDENCE_DEADLINE=$((T0 + 570)) bash benchmarks/gpu_host/evidence.sh
#
# Everything lands in $OUT (default benchmarks/results/evidence-out): steps/*.json (written as each
# step ends), logs/, gpu-tests.log, harness_overhead.json, sass/, h200-<date>.json (the results file,
# assembled from the steps) and README.md (its table). STEPS=a,b picks steps (evidence.py lists them);
# a second call can run the ones the first had no time for.
# Issue 37's wall-clock cpu / plain ratio on 2 free cores (opt-in, ~4 min; .gpu-artifacts/cpu_native
# from prepare.sh): STEPS=cpu-native (EVIDENCE_CPU_NATIVE_CORES=2,all adds an unpinned run).
# Local dry run (no GPU): EVIDENCE_SMALL=1 EVIDENCE_BACKENDS=wgsl WGPU_DEVICE=llvmpipe bash ... .
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
out=${OUT:-$repo/benchmarks/results/evidence-out}
mkdir -p "$out"
py=${PYTHON:-python3}
export PYTHONPATH=$repo${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
{
  echo "evidence run $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname); python $($py -V 2>&1)"
  $py -c 'import pycuda, wgpu; print("pycuda", pycuda.VERSION_TEXT, "wgpu", wgpu.__version__)' 2>&1
  $py -c 'import pynvml; print("nvidia-ml-py", pynvml.__file__)' 2>&1
  for tool in nvcc ptxas cuobjdump ncu nsys nvidia-smi; do echo "$tool: $(command -v $tool || echo absent)"; done
} | tee "$out/host.txt"

$py benchmarks/gpu_host/evidence.py run --out "$out" ${STEPS:+--steps "$STEPS"} 2>&1 | tee -a "$out/evidence.log"

date=$(date -u +%Y-%m-%d)
$py benchmarks/gpu_host/evidence.py assemble "$out" --json "$out/h200-$date.json" 2>&1 | tee -a "$out/evidence.log"
$py benchmarks/gpu_host/results_table.py "$out/h200-$date.json" --out "$out/README.md" 2>&1 | tee -a "$out/evidence.log"
# The results table and the measured ceilings (every stream: copy, read, write, update), up to the next section.
awk '/^## / && !/^## Measured ceilings/ {exit} {print}' "$out/README.md" 2>/dev/null
