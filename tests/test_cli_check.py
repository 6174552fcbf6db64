"""`workbench check` and the command line's handling of bad input (exit 2, one message, no traceback)."""

import json
import subprocess
import sys

import pytest

from workbench import __version__
from workbench.backends import parse_backends
from workbench.errors import UnknownBackend
from workbench.project import examples_dir


def workbench(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "workbench", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_version():
    result = workbench("--version")
    assert result.returncode == 0 and __version__ in result.stdout


@pytest.mark.parametrize(
    "name", sorted(p.name for p in examples_dir().iterdir() if (p / "workbench.toml").is_file())
)
def test_check_json_describes_each_example(name):
    result = workbench("check", examples_dir() / name, "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["project"] == name
    kernel = info["kernels"][0]
    assert {"cpu", "nvptx", "rust-gpu", "rust-cuda", "cuda-c", "wgsl"} <= set(kernel["backends"])
    assert kernel["bytes"] > 0 and all(a["name"] for a in kernel["args"])


def test_check_human_output():
    result = workbench("check", examples_dir() / "saxpy")
    assert result.returncode == 0
    assert "kernel saxpy" in result.stdout and "y          inout f32[n = 1048576]" in result.stdout


def test_malformed_manifest_names_file_and_line(example_copy):
    project = example_copy("saxpy")
    manifest = project / "workbench.toml"
    text = manifest.read_text().replace("[kernel.launch]", "[kernel.launch")
    manifest.write_text(text)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if s.startswith("[kernel.launch"))
    result = workbench("check", project)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"workbench.toml:{line}" in result.stderr and "not valid TOML" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_invalid_value_names_key(example_copy):
    project = example_copy("saxpy")
    manifest = project / "workbench.toml"
    manifest.write_text(manifest.read_text().replace('type = "f32"', 'type = "float"', 1))
    result = workbench("check", project)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert 'arg[1].type: unknown type "float"; valid: f32' in result.stderr


def test_missing_manifest_and_missing_path(tmp_path):
    result = workbench("check", tmp_path)
    assert result.returncode == 2 and "has no workbench.toml" in result.stderr
    result = workbench("check", tmp_path / "nowhere")
    assert result.returncode == 2 and "does not exist" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_backend_lists_the_valid_ones():
    with pytest.raises(
        UnknownBackend, match="valid backends: cpu, cpu-sim, nvptx, rust-gpu, rust-cuda, cuda-c, wgsl"
    ):
        parse_backends("cpu,metal")
    assert parse_backends("cpu, wgsl,cpu") == ["cpu", "wgsl"]


def _line(text, needle, after=1):
    return next(i for i, s in enumerate(text.splitlines(), 1) if i >= after and needle in s)


def test_a_buffer_without_binding_is_an_error_at_its_table_while_wgsl_is_a_backend(example_copy):
    project = example_copy("saxpy")
    manifest = project / "workbench.toml"
    text = manifest.read_text().replace("binding = 2\nviews = [4]\n", "")
    manifest.write_text(text)
    table = _line(text, "[[kernel.arg]]", after=_line(text, 'name = "x"') + 1)  # y's table
    result = workbench("check", project)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    (message,) = result.stderr.strip().splitlines()
    assert f"workbench.toml:{table}: kernel[0].arg[3].binding: buffer 'y' has no binding" in message
    assert "manifest OK" not in result.stdout

    # Without a wgpu backend listed (no wgsl reference, no rust-gpu entry) nothing needs it.
    text = text.replace('wgsl = "reference/saxpy.wgsl"\n', "").replace(
        'rust-gpu = "spirv_entry::saxpy_spirv"\n', ""
    )
    manifest.write_text(text)
    result = workbench("check", project)
    assert result.returncode == 0, result.stderr


def test_threads_against_the_wgsl_workgroup_size_name_the_manifest_line(example_copy):
    project = example_copy("reduction")
    manifest = project / "workbench.toml"
    text = manifest.read_text().replace("threads = [256]", "threads = [64]", 1)
    manifest.write_text(text)
    line = _line(text, "threads = [64]")
    shader = (project / "reference" / "reduction.wgsl").read_text()
    size_line = _line(shader, "@workgroup_size(256)")
    result = workbench("check", project)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    (message,) = result.stderr.strip().splitlines()
    assert f"workbench.toml:{line}: kernel[0].launch.threads: threads [64] differ from " in message
    assert f"reference/reduction.wgsl:{size_line} @workgroup_size(256) of entry 'main'" in message

    # A tunable override (saxpy's `@workgroup_size(threads)`) takes the tunable's default; a
    # [kernel.launch.wgsl] table of its own is what wgsl is checked against.
    saxpy = example_copy("saxpy")
    manifest = saxpy / "workbench.toml"
    text = manifest.read_text().replace('threads = ["threads"]', "threads = [128]")
    manifest.write_text(text)
    result = workbench("check", saxpy)
    assert result.returncode == 2
    assert f"workbench.toml:{_line(text, 'threads = [128]')}:" in result.stderr
    assert "threads [128] differ from reference/saxpy.wgsl:16 @workgroup_size(256)" in result.stderr
    manifest.write_text(
        text + '\n[kernel.launch.wgsl]\nthreads = ["threads"]\ngrid = ["ceil_div(n, threads)"]\n'
    )
    result = workbench("check", saxpy)
    assert result.returncode == 0, result.stderr
