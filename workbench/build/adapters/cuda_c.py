"""`cuda-c`: nvcc compiles the `[kernel.reference] cuda-c` files to PTX (`nvcc -ptx -arch=sm_XX`)."""

from __future__ import annotations

from pathlib import Path

from workbench import childproc
from workbench.build import depinfo
from workbench.build.adapters.base import (
    Adapter,
    AdapterOutput,
    BuildRequest,
    cuda_bin,
    names_in_text,
    sm_arch,
)
from workbench.build.adapters.nvptx import finish_ptx
from workbench.build.diagnostics import parse_nvcc
from workbench.build.install_hints import TOOLCHAIN_HINTS
from workbench.records import ToolchainInfo

HINT = TOOLCHAIN_HINTS["cuda-c"]  # README.md's words (install_hints)


class CudaCAdapter(Adapter):
    name = "cuda-c"

    def detect(self) -> ToolchainInfo:
        nvcc = cuda_bin("nvcc")
        if not nvcc:
            return ToolchainInfo("cuda-c", False, hint=HINT)
        try:
            lines = childproc.capture([nvcc, "--version"], timeout_s=30).stdout
        except (OSError, TimeoutError) as exc:
            return ToolchainInfo("cuda-c", False, path=nvcc, hint=HINT, details={"error": str(exc)})
        release = next((ln.strip() for ln in lines if "release" in ln), "nvcc")
        return ToolchainInfo("cuda-c", True, release, nvcc, details={"ptxas": cuda_bin("ptxas") or ""})

    def skip_reason(self, project) -> str | None:
        if not any("cuda-c" in k.reference for k in project.manifest.kernels):
            return "no [kernel.reference] cuda-c file in workbench.toml"
        return None

    def resolve_target(self, target: str | None) -> str:
        return sm_arch(target)

    def flags(self, project, target, tunables, toolchain) -> list[str]:
        # Tunables become preprocessor macros of their own name (-Dblock_size_x=256), so Kernel
        # Tuner's kernels, which use the names as written, build unchanged.
        return ["-ptx", f"-arch={target}", *(f"-D{k}={v}" for k, v in sorted(tunables.items()))]

    def build(self, req: BuildRequest) -> AdapterOutput:
        root = req.project.root
        kernels = [k for k in req.project.manifest.kernels if "cuda-c" in k.reference]
        output = AdapterOutput(True)
        for rel in dict.fromkeys(k.reference["cuda-c"] for k in kernels):
            out = req.out_dir / (Path(rel).stem + ".ptx")
            # -MD -MF: nvcc's own list of the files it read (headers included), for the cache key.
            dep_file = (req.work_dir or req.out_dir) / (Path(rel).stem + ".d")
            cmd = [req.toolchain.path, *req.flags, rel, "-o", str(out), "-MD", "-MF", str(dep_file)]
            result = req.run(cmd, cwd=root)
            output.inputs.extend([root / rel, *depinfo.read(dep_file, cwd=root)])
            dep_file.unlink(missing_ok=True)
            for diag in parse_nvcc("\n".join(result.stderr + result.stdout), root, root):
                req.diagnostic(diag)
            if result.returncode != 0 or not out.is_file():
                return AdapterOutput(False)
            part = finish_ptx(
                req, out, req.target, self.name, [k for k in kernels if k.reference["cuda-c"] == rel]
            )
            output.ok = output.ok and part.ok
            output.kernels.update(part.kernels)
            output.resources.update(part.resources)
            output.extra.setdefault("entries", []).extend(part.extra.get("entries", []))
        # The project's own files: a system header's words (`unused`, `block`) are not reads.
        own = [p for p in output.inputs if Path(p).resolve().is_relative_to(root.resolve())]
        names = names_in_text(own, list(req.tunables), lambda name: rf"\b{name}\b")
        req.report_unread(names, "use of the macro {name} in the .cu file or its headers")
        return output
