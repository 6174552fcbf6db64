"""The process `ncu` profiles: one launch of a run's artifact, inputs and geometry, in the cuda
worker's place (`python -m workbench.run.counters.launch_child REQUEST.json`).

The request names the project, kernel, sizes, tunables, seed, backend, artifact and device; the
launch spec (`run.spec.make_launch_spec`), the inputs (`run.inputs.make_buffer`, the run's seed)
and the runtime (`run.runtimes.get_runtime("cuda")`: prepare, upload, one launch) are the ones the
worker uses, so ncu sees the kernel the run timed. Nothing is timed or checked here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from workbench.project import Project
    from workbench.run.inputs import make_buffer
    from workbench.run.runtimes import get_runtime
    from workbench.run.spec import make_launch_spec

    request = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    project = Project.open(request["project_dir"])
    kernel = project.manifest.kernel(request["kernel"])
    symbols = kernel.symbols(request.get("sizes"), request.get("tunables"))
    index = int(request.get("device_index", 0))
    spec = make_launch_spec(kernel, request["backend"], request["artifact"], symbols, index)
    lengths = kernel.lengths(symbols)
    arrays = {
        b.name: make_buffer(b, lengths[b.name], int(request["seed"]), project.root) for b in kernel.buffers
    }
    runtime = get_runtime(spec["runtime"])
    prepared = runtime.prepare(spec, index)
    try:
        prepared.upload(arrays)
        prepared.launch(1)
    finally:
        prepared.close()
        runtime.close()
    print(f"launched {spec['artifact'].get('entry', kernel.name)} once", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
