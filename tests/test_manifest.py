"""The manifest loader: every bundled example loads; every error names file, line and key."""

from pathlib import Path

import pytest

from workbench.errors import ManifestError
from workbench.manifest import BufferArg, ScalarArg, load_manifest, parse_manifest
from workbench.project import Project, examples_dir

EXAMPLES = examples_dir()

SAXPY = (EXAMPLES / "saxpy" / "workbench.toml").read_text()


@pytest.mark.parametrize(
    "name", sorted(p.name for p in EXAMPLES.iterdir() if (p / "workbench.toml").is_file())
)
def test_every_example_loads(name):
    project = Project.open(EXAMPLES / name)
    assert project.manifest.kernels
    for kernel in project.manifest.kernels:
        symbols = kernel.symbols()
        assert all(n > 0 for n in kernel.lengths(symbols).values())
        threads, grid = kernel.geometry(symbols)
        assert len(threads) == len(grid) == 3
        for backend, rel in kernel.reference.items():
            assert (project.root / rel).is_file(), backend


def test_saxpy_model():
    manifest = load_manifest(EXAMPLES / "saxpy")
    kernel = manifest.kernel("saxpy")
    assert [a.name for a in kernel.args] == ["n", "a", "x", "y"]
    assert isinstance(kernel.args[0], ScalarArg) and isinstance(kernel.args[3], BufferArg)
    assert kernel.args[3].is_output and not kernel.args[2].is_output
    assert kernel.entry_for("cpu") == "saxpy_cpu" and kernel.entry_for("nvptx") == "saxpy"
    symbols = kernel.symbols({"n": 1000})
    assert kernel.lengths(symbols) == {"x": 1000, "y": 1000}
    assert kernel.geometry(symbols) == ((256, 1, 1), (4, 1, 1))
    assert kernel.metric("bytes", symbols) == 12000
    assert kernel.scalar_values(symbols) == {"n": 1000, "a": 2.5}
    with pytest.raises(ValueError, match="no size m"):
        kernel.symbols({"m": 3})


def _error(text: str) -> ManifestError:
    with pytest.raises(ManifestError) as info:
        parse_manifest(text, Path("proj/workbench.toml"))
    return info.value


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize(
    ("old", "new", "key", "fragment"),
    [
        ('direction = "inout"', 'direction = "sideways"', "arg[3].direction", "valid: in, out, inout"),
        (
            'grid = ["ceil_div(n, threads * vector)"]',
            'grid = ["ceil_div(m, threads * vector)"]',
            "launch.grid",
            "known names: n, threads",
        ),
        ('wgsl = "main"', 'metal = "main"', "entry.metal", "valid backends: cpu, cpu-sim, nvptx"),
        ("rtol = 1e-6", 'rtol = "tight"', "check.rtol", "expected a number"),
        ('bytes = "12 * n"', 'bytes = "12 * open(n)"', "metrics.bytes", "unknown function 'open'"),
        ('scalars = "uniform"', 'scalars = "carrier-pigeon"', "wgpu.scalars", "uniform, push, override"),
        (
            'cuda-c = "reference/saxpy.cu"',
            'cuda-c = "reference/missing.cu"',
            "reference.cuda-c",
            "does not exist",
        ),
        ("binding = 2", "binding = 1", "arg[3].binding", "used twice"),
        ('type = "u32"', 'type = "u31"', "arg[0].type", "valid: f32, f64"),
    ],
)
def test_errors_name_file_line_and_key(tmp_path, old, new, key, fragment):
    assert old in SAXPY
    text = SAXPY.replace(old, new, 1)
    # Reference files are checked relative to the manifest: give them a real home.
    (tmp_path / "reference").mkdir()
    (tmp_path / "reference" / "saxpy.cu").write_text("")
    (tmp_path / "reference" / "saxpy.wgsl").write_text("")
    with pytest.raises(ManifestError) as info:
        parse_manifest(text, tmp_path / "workbench.toml")
    error = info.value
    assert error.path.endswith("workbench.toml")
    assert error.key and error.key.endswith(key), error
    assert error.line == SAXPY[: SAXPY.index(old)].count("\n") + 1, error
    assert fragment in error.message


def test_malformed_toml_points_at_the_line():
    text = SAXPY.replace("[kernel.launch]", "[kernel.launch")
    error = _error(text)
    assert error.line == _line_of(text, "[kernel.launch")
    assert "not valid TOML" in error.message
    assert str(error).startswith("proj/workbench.toml:")


def test_structural_errors():
    assert "missing table [project]" in _error('[[kernel]]\nname = "k"\n').message
    assert "at least one kernel" in _error('[project]\nname = "p"\n').message
    no_output = SAXPY.replace('direction = "inout"', 'direction = "in"')
    assert "no output" in _error(no_output).message
    twice = SAXPY.replace('name = "y"', 'name = "x"')
    assert "used twice" in _error(twice).message
    unknown_top = SAXPY + "\n[extras]\nfoo = 1\n"
    error = _error(unknown_top)
    assert error.key == "extras" and error.line == _line_of(unknown_top, "[extras]")


def test_missing_manifest(tmp_path):
    with pytest.raises(ManifestError, match="file not found"):
        load_manifest(tmp_path)


def test_timing_fresh_inputs(tmp_path):
    assert load_manifest(EXAMPLES / "saxpy").kernel().fresh_inputs is False
    text = SAXPY + "\n[kernel.timing]\nfresh_inputs = true\n"
    assert parse_manifest(text, EXAMPLES / "saxpy" / "workbench.toml").kernel().fresh_inputs is True
    with pytest.raises(ManifestError) as info:
        parse_manifest(
            SAXPY + '\n[kernel.timing]\nfresh_inputs = "yes"\n', EXAMPLES / "saxpy" / "workbench.toml"
        )
    error = info.value
    assert error.key.endswith("timing.fresh_inputs") and "expected true or false" in error.message


def test_check_outputs_follow_tunables(tmp_path):
    assert load_manifest(EXAMPLES / "saxpy").kernel().check.outputs_follow_tunables is False
    assert load_manifest(EXAMPLES / "reduction").kernel().check.outputs_follow_tunables is True
    where = EXAMPLES / "saxpy" / "workbench.toml"
    text = SAXPY.replace("[kernel.check]\n", '[kernel.check]\noutputs_follow_tunables = "yes"\n')
    assert text != SAXPY
    with pytest.raises(ManifestError) as info:
        parse_manifest(text, where)
    error = info.value
    assert error.key.endswith("check.outputs_follow_tunables") and "expected true or false" in error.message


def test_buffer_views_are_further_bindings_of_the_same_buffer():
    kernel = load_manifest(EXAMPLES / "saxpy").kernel()
    assert {b.name: (b.binding, b.views) for b in kernel.buffers} == {"x": (1, (3,)), "y": (2, (4,))}
    where = EXAMPLES / "saxpy" / "workbench.toml"
    for old, new, fragment in [
        ("views = [4]", "views = [3]", "binding 3 is used twice"),
        ("views = [4]", "views = [0]", "binding 0 is used twice"),  # the scalars' uniform buffer
        ("views = [4]", 'views = "4"', "expected an array of bindings"),
        ("views = [4]", "views = [-4]", "arg[3].views"),
    ]:
        with pytest.raises(ManifestError) as info:
            parse_manifest(SAXPY.replace(old, new), where)
        assert fragment in f"{info.value.key} {info.value.message}", (new, info.value)
