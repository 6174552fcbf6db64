#!/usr/bin/env bash
# Prepare the H200 evidence run on THIS machine (it has Rust; the GPU host has none):
#   - every example built for cpu, nvptx (sm_90), cuda-c and wgsl, exported to .gpu-artifacts/<example>/;
#   - the real rust-gpu SPIR-V from ../shared/data/rust-gpu-spirv/ wrapped in two small projects
#     (with a cpu cdylib built here as their reference) under .gpu-artifacts/rust-gpu/<name>/;
#   - the WGSL variants of benchmarks/wgsl_variants.py under .gpu-artifacts/wgsl-variants/;
#   - the cpu builds and plain Rust copies of benchmarks/cpu_native.py under .gpu-artifacts/cpu_native/;
#   - the wheel/deb bundle for the offline GPU host in .gpu-bundle/ (../shared/scripts/gpu-host-bundle.sh),
#     plus the nvidia-ml-py wheel (NVML clocks and energy).
# Both folders are git-ignored: pass them to the device run as `carry`. Run from the repository root:
#   bash benchmarks/gpu_host/prepare.sh          (SKIP_BUNDLE=1 to keep an existing .gpu-bundle)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
py=${PYTHON:-$repo/.venv/bin/python}
export PYTHONPATH=$repo${PYTHONPATH:+:$PYTHONPATH}
artifacts=$repo/.gpu-artifacts
shared=$repo/../shared
rm -rf "$artifacts"
mkdir -p "$artifacts"

for ex in $(ls resources/examples | grep -v README); do  # every bundled example
  "$py" -m workbench build "resources/examples/$ex" --backend nvptx,cuda-c,wgsl --target 9.0 \
    --export "$artifacts/$ex"
  # cpu too (the host's x86-64; --target names the GPU's): the scaling step times saxpy with its
  # cpu reference, as `workbench run` does by default
  "$py" -m workbench build "resources/examples/$ex" --backend cpu --export "$artifacts/$ex"
done

# rust-gpu: real cargo-gpu output, not built by us (see ../shared/data/rust-gpu-spirv/README.md).
spirv=$shared/data/rust-gpu-spirv
if [ -d "$spirv" ]; then
  "$py" "$repo/benchmarks/gpu_host/rust_gpu_projects.py" "$spirv" "$artifacts/rust-gpu"
  for name in headless particles; do
    "$py" -m workbench build "$artifacts/rust-gpu/$name/project" --backend cpu,rust-gpu \
      --export "$artifacts/rust-gpu/$name/artifacts"
  done
else
  echo "warning: $spirv is absent: no rust-gpu modules for the GPU host" >&2
fi
# The WGSL variants experiment (benchmarks/wgsl_variants.py): each variant as a wgsl artifact folder
"$py" "$repo/benchmarks/wgsl_variants.py" --prepare "$artifacts/wgsl-variants"
# Issue 37's wall-clock ratio where cores are free (the GPU host has 16 and no cargo): each example's
# cpu build and its plain Rust copies, the plain outputs checked here (evidence.py's cpu-native step)
"$py" "$repo/benchmarks/cpu_native.py" --export "$artifacts/cpu_native" --variants cpu,plain,plain-threads \
  || echo "warning: cpu_native.py --export failed or a plain version differs (see above)" >&2
du -sh "$artifacts"

if [ -z "${SKIP_BUNDLE:-}" ]; then
  bash "$shared/scripts/gpu-host-bundle.sh" "$repo/.gpu-bundle"
fi
# NVML readings (clocks, energy) and pytest (the gpu suite) on the GPU host: pure-Python wheels,
# installed by gpu-host-setup.sh with the others.
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 -d "$repo/.gpu-bundle/whl" \
  nvidia-ml-py pytest pluggy iniconfig packaging pygments \
  || echo "warning: nvidia-ml-py / pytest wheels could not be downloaded" >&2
du -sh "$repo/.gpu-bundle"
