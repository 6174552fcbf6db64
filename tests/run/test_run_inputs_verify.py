"""Inputs from the manifest's initializers, poisoned outputs, and the element-wise comparison."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.manifest import parse_manifest
from workbench.run.inputs import (
    InputError,
    make_inputs,
    poison_mask,
    poisoned,
    verification_inputs,
)
from workbench.run.verify import Tolerance, bad_elements, check_outputs, compare, ulp_distance

MANIFEST = """
[project]
name = "inputs"
[[kernel]]
name = "k"
[kernel.sizes]
n = 1000
[[kernel.arg]]
name = "a"
kind = "buffer"
type = "f32"
length = "n"
init = { kind = "random", low = -2.0, high = 3.0 }
[[kernel.arg]]
name = "b"
kind = "buffer"
type = "f32"
length = "n"
init = { kind = "random", low = -2.0, high = 3.0 }
[[kernel.arg]]
name = "seeded"
kind = "buffer"
type = "f64"
length = "n"
init = { kind = "random", seed = 42 }
[[kernel.arg]]
name = "ints"
kind = "buffer"
type = "u32"
length = "n"
init = { kind = "random", low = -5, high = 9 }
[[kernel.arg]]
name = "ramp"
kind = "buffer"
type = "f32"
length = "n"
init = { kind = "linspace", start = 0.0, stop = 1.0 }
[[kernel.arg]]
name = "c"
kind = "buffer"
type = "i64"
length = "n"
init = { kind = "constant", value = 7 }
[[kernel.arg]]
name = "state"
kind = "buffer"
type = "f32"
length = "n"
direction = "inout"
init = { kind = "npy", path = "state.npy" }
[[kernel.arg]]
name = "out"
kind = "buffer"
type = "f32"
length = "n"
direction = "out"
[kernel.launch]
threads = [64]
grid = ["ceil_div(n, 64)"]
"""


@pytest.fixture
def kernel(tmp_path):
    np.save(tmp_path / "state.npy", np.arange(1000, dtype=np.float64))
    (tmp_path / "workbench.toml").write_text(MANIFEST)
    return parse_manifest(MANIFEST, tmp_path / "workbench.toml").kernel()


def test_initializers_follow_the_manifest_and_the_seed(kernel, tmp_path):
    values = kernel.evaluate(kernel.symbols())
    first = make_inputs(kernel, values, seed=5, root=tmp_path)
    again = make_inputs(kernel, values, seed=5, root=tmp_path)
    other = make_inputs(kernel, values, seed=6, root=tmp_path)
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])  # same seed, same inputs
    assert not np.array_equal(first["a"], other["a"])  # the run seed matters ...
    np.testing.assert_array_equal(first["seeded"], other["seeded"])  # ... unless the buffer has its own
    assert not np.array_equal(first["a"], first["b"])  # two buffers never share their numbers
    assert first["a"].dtype == np.float32 and -2.0 <= first["a"].min() and first["a"].max() <= 3.0
    ints = first["ints"]
    assert ints.dtype == np.uint32 and ints.min() >= 0 and ints.max() <= 9  # clamped to u32
    assert set(np.unique(ints)) == set(range(10))  # integers, both ends included
    np.testing.assert_allclose(first["ramp"], np.linspace(0, 1, 1000, dtype=np.float32))
    assert first["c"].dtype == np.int64 and (first["c"] == 7).all()
    np.testing.assert_array_equal(first["state"], np.arange(1000, dtype=np.float32))
    assert (first["out"] == 0).all()


def test_npy_of_the_wrong_length_is_a_clear_error(kernel, tmp_path):
    np.save(tmp_path / "state.npy", np.zeros(10))
    with pytest.raises(
        InputError, match=r"buffer 'state': .*state.npy holds 10 elements, the buffer needs 1000"
    ):
        make_inputs(kernel, kernel.evaluate(kernel.symbols()), seed=0, root=tmp_path)


def test_verification_inputs_poison_out_buffers_only(kernel, tmp_path):
    inputs = make_inputs(kernel, kernel.evaluate(kernel.symbols()), seed=0, root=tmp_path)
    upload = verification_inputs(kernel, inputs)
    assert poison_mask(upload["out"]).all() and np.isnan(upload["out"]).all()
    np.testing.assert_array_equal(upload["state"], inputs["state"])  # inout: fresh initial values
    assert upload["state"] is not inputs["state"]
    assert not poison_mask(upload["a"]).any()
    ints = poisoned(4, np.uint32)
    assert (ints == 0xDEADBEEF).all() and poison_mask(ints).all()
    # A kernel's own NaN is not mistaken for the poison.
    assert not poison_mask(np.array([np.nan], np.float32)).any()


def test_ulp_distance_through_integer_views():
    x = np.array([1.0, -1.0, 0.0, 1e-30, 3.0e38], np.float32)
    up1 = np.nextafter(x, np.float32(np.inf))
    up3 = np.nextafter(np.nextafter(up1, np.float32(np.inf)), np.float32(np.inf))
    assert ulp_distance(x, up1).tolist() == [1] * 5
    assert ulp_distance(up3, x).tolist() == [3] * 5
    # Across zero: the smallest negative and positive subnormals are 2 ULP apart; -0 equals +0.
    tiny = np.float32(1e-45)
    assert ulp_distance(np.array([-tiny]), np.array([tiny])).tolist() == [2]
    assert ulp_distance(np.array([-0.0], np.float32), np.array([0.0], np.float32)).tolist() == [0]
    d = np.array([1.0, 2.0**60], np.float64)
    assert ulp_distance(d, np.nextafter(d, np.inf)).tolist() == [1, 1]


def test_compare_reports_first_bad_index_errors_and_poison():
    rng = np.random.default_rng(1)
    ref = rng.uniform(-1, 1, 4096).astype(np.float32)
    got = ref.copy()
    got[100] = np.nextafter(got[100], np.float32(np.inf))  # 1 ULP: passes with max_ulp = 1
    got[2000] += 0.5  # a real error
    got[3000:3010] = poisoned(10, np.float32)[0]  # never written
    got[4000] = np.inf
    result = compare(got, ref, rtol=0.0, atol=0.0, max_ulp=1, check_poison=True)
    assert not result["passed"]
    assert result["bad"] == 1 + 10 + 1
    assert result["first_bad_index"] == 2000
    assert result["first_bad"]["got"] == pytest.approx(float(ref[2000]) + 0.5, rel=1e-6)
    assert result["first_bad"]["expected"] == pytest.approx(float(ref[2000]))
    assert result["unwritten"] == 10
    assert result["nan_count"] == 10 and result["inf_count"] == 1
    assert result["max_abs_err"] == pytest.approx(0.5, rel=1e-5)
    assert result["max_ulp_err"] > 1000
    # Without the 1-ULP allowance and with atol = 0 the nudged element fails too.
    strict = compare(got, ref, rtol=0.0, atol=0.0, max_ulp=None, check_poison=True)
    assert strict["first_bad_index"] == 100 and strict["bad"] == 13
    # Tolerances: |a - b| <= atol + rtol * |ref|.
    near = ref * np.float32(1 + 1e-6)
    assert compare(near, ref, rtol=1e-5, atol=0.0)["passed"]
    assert not compare(near, ref, rtol=1e-8, atol=0.0)["passed"]


def test_nans_and_integers():
    ref = np.array([np.nan, np.inf, 1.0], np.float32)
    assert compare(ref.copy(), ref, 0.0, 0.0)["passed"]  # NaN vs NaN and inf vs inf agree
    got = np.array([1.0, np.inf, 1.0], np.float32)
    assert compare(got, ref, 1.0, 1.0)["first_bad_index"] == 0
    a = np.arange(10, dtype=np.int32)
    b = a.copy()
    b[7] += 1
    assert compare(b, a, rtol=0.0, atol=0.0)["first_bad_index"] == 7
    assert compare(b, a, rtol=0.0, atol=1.0)["passed"]  # tolerances may allow integer differences
    big = np.array([2**62, 2**62], np.int64)
    big2 = big.copy()
    big2[1] += 1  # lost in float64, still caught
    assert compare(big2, big, rtol=0.0, atol=1e-6)["first_bad_index"] == 1


def test_check_outputs_summarizes_every_buffer():
    ref = {"y": np.ones(8, np.float32), "z": np.zeros(4, np.uint32)}
    got = {"y": np.ones(8, np.float32), "z": poisoned(4, np.uint32)}
    passed, check = check_outputs(got, ref, 1e-6, 1e-6, None, poisoned=("z",), reference_name="cpu")
    assert not passed
    assert check["reference"] == "cpu"
    assert check["buffers"]["y"]["passed"] and not check["buffers"]["z"]["passed"]
    assert check["unwritten"] == 4 and check["first_bad"]["buffer"] == "z"
    assert check["first_bad_index"] == 0 and check["first_bad"]["unwritten"] is True


def test_bitwise_identical_buffers_pass_with_counts_of_specials():
    """The fast path for identical buffers reports what the full comparison would."""
    values = np.linspace(-3, 3, 10_000, dtype=np.float32)
    values[[10, 20]] = np.nan
    values[30] = np.inf
    result = compare(values, values.copy(), rtol=0.0, atol=0.0, max_ulp=0)
    assert result["passed"] and result["bad"] == 0 and result["first_bad_index"] is None
    assert (result["nan_count"], result["inf_count"], result["max_ulp_err"]) == (2, 1, 0)
    changed = values.copy()
    changed[40] = np.nextafter(changed[40], np.float32(10))
    result = compare(changed, values, rtol=0.0, atol=0.0, max_ulp=0)
    assert result["bad"] == 1 and result["first_bad_index"] == 40 and result["max_ulp_err"] == 1


def test_a_check_against_tiny_or_constant_reference_values_is_weak():
    small = {"y": np.full(100, 1e-8, np.float32) * np.arange(100, dtype=np.float32)}
    zeros = {"y": np.zeros(100, np.float32)}
    passed, check = check_outputs(zeros, small, 0.0, 1e-5, None, reference_name="cpu")
    assert passed and check.weak == "100% of the reference's elements are below atol 1e-05"
    assert check.to_dict()["weak"] == check.weak and check["buffers"]["y"]["weak"]
    constant = {"y": np.full(64, 3.0, np.float32)}
    passed, check = check_outputs(dict(constant), constant, 1e-6, 1e-6, None)
    assert passed and check.weak == "the reference output is constant (3.0)"
    varied = {"y": np.linspace(1.0, 2.0, 64, dtype=np.float32)}
    passed, check = check_outputs(dict(varied), varied, 1e-6, 1e-6, None)
    assert passed and check.weak == "" and "weak" not in check.to_dict()
    # A failed check is a failure, not a weak pass.
    passed, check = check_outputs(zeros, constant, 1e-6, 1e-6, None)
    assert not passed and check.weak == ""


# ---------------------------------------------------------------- issue 15: chunked and parallel


def test_random_inputs_depend_on_seed_and_chunking_not_on_threads(monkeypatch):
    from workbench.manifest import BufferArg, Init
    from workbench.run import inputs as inputs_mod

    monkeypatch.setattr(inputs_mod, "CHUNK", 1000)
    arg = BufferArg("x", "f32", "n", "in", Init("random", low=-2.0, high=3.0))
    ints = BufferArg("k", "i32", "n", "in", Init("random", low=-5, high=5))
    made = {}
    for threads in (1, 3):
        monkeypatch.setattr(inputs_mod, "THREADS", threads)
        made[threads] = (
            inputs_mod.make_buffer(arg, 10_500, 1, "."),
            inputs_mod.make_buffer(ints, 10_500, 1, "."),
        )
    np.testing.assert_array_equal(made[1][0], made[3][0])
    np.testing.assert_array_equal(made[1][1], made[3][1])
    x, k = made[1]
    assert x.dtype == np.float32 and x.min() >= -2.0 and x.max() <= 3.0 and x.std() > 1.0
    assert k.dtype == np.int32 and set(np.unique(k)) == set(range(-5, 6))
    # Every chunk has its own stream: no chunk repeats another.
    assert not np.array_equal(x[:1000], x[1000:2000])
    assert not np.array_equal(inputs_mod.make_buffer(arg, 10_500, 2, "."), x)


def test_linspace_and_npy_inputs_in_chunks(monkeypatch, tmp_path):
    from workbench.manifest import BufferArg, Init
    from workbench.run import inputs as inputs_mod

    monkeypatch.setattr(inputs_mod, "CHUNK", 7)
    lin = inputs_mod.make_buffer(
        BufferArg("l", "f64", "n", "in", Init("linspace", start=-1, stop=4)), 50, 0, "."
    )
    np.testing.assert_allclose(lin, np.linspace(-1, 4, 50), rtol=0, atol=1e-12)
    assert lin[-1] == 4.0
    np.save(tmp_path / "d.npy", np.arange(50, dtype=np.int64))
    data = inputs_mod.make_buffer(
        BufferArg("d", "f32", "n", "in", Init("npy", path="d.npy")), 50, 0, tmp_path
    )
    np.testing.assert_array_equal(data, np.arange(50, dtype=np.float32))


def test_chunked_compare_finds_the_first_bad_element_across_chunks(monkeypatch):
    from workbench.run import verify as verify_mod

    monkeypatch.setattr(verify_mod, "CHUNK", 100)
    ref = np.linspace(1, 2, 1050).astype(np.float32)
    got = ref.copy()
    got[730] += 1.0
    got[250] = np.nan
    got[1049] *= 1.5
    result = verify_mod.compare(got, ref, rtol=1e-6, atol=0.0)
    assert result["bad"] == 3 and not result["passed"]
    assert result["first_bad_index"] == 250 and result["first_bad"]["got"] == "nan"
    assert result["nan_count"] == 1
    assert result["max_abs_err"] == pytest.approx(1.0)
    monkeypatch.setattr(verify_mod, "CHUNK", 1 << 20)
    assert verify_mod.compare(got, ref, rtol=1e-6, atol=0.0) == result  # chunking changes nothing


def test_reference_health_counts_in_chunks(monkeypatch):
    from workbench.run import verify as verify_mod
    from workbench.run.inputs import poison_value

    monkeypatch.setattr(verify_mod, "CHUNK", 64)
    out = np.ones(1000, np.float32)
    out[[3, 500]] = np.inf
    out[999] = np.nan
    out[100:110] = poison_value(np.float32)[0]
    assert verify_mod.health(out, check_poison=True) == {"nan_count": 11, "inf_count": 2, "unwritten": 10}


def test_compare_agrees_with_a_whole_array_oracle(monkeypatch):
    """Only elements whose bits differ are compared in float64: the verdict and every metric must
    equal a plain whole-array computation, written here independently, on outputs that differ
    by rounding (most bits equal), by real errors, by signed zeros, NaNs, infinities and poison."""
    from workbench.run import verify as verify_mod
    from workbench.run.inputs import poison_value

    rng = np.random.default_rng(7)
    n = 5000
    ref = rng.uniform(-2, 2, n).astype(np.float32)
    got = ref.copy()
    nudged = rng.choice(n, 900, replace=False)  # a rounding apart: within max_ulp
    got[nudged] = np.nextafter(got[nudged], np.float32(np.inf))
    wrong = rng.choice(np.setdiff1d(np.arange(n), nudged), 40, replace=False)
    got[wrong] += np.float32(0.5)
    got[[11, 12]], ref[[11, 12]] = np.float32(-0.0), np.float32(0.0)
    got[[20, 21]], ref[[20, 21]] = np.nan, np.nan  # equal NaNs pass
    got[30], ref[30] = np.inf, np.inf
    got[31] = np.inf  # an infinity where a number was expected
    got[4000:4010] = poison_value(np.float32)[0]
    rtol, atol, max_ulp = 1e-6, 1e-7, 2

    g, r = got.astype(np.float64), ref.astype(np.float64)
    finite = np.isfinite(g) & np.isfinite(r)
    with np.errstate(invalid="ignore"):
        diff = np.where(finite, np.abs(g - r), 0.0)
    gi, ri = got.view(np.int32).astype(np.int64), ref.view(np.int32).astype(np.int64)
    ordered_g = np.where(gi < 0, -(gi & 0x7FFFFFFF), gi)
    ordered_r = np.where(ri < 0, -(ri & 0x7FFFFFFF), ri)
    ulps = np.abs(ordered_g - ordered_r)
    poisoned = got.view(np.uint32) == poison_value(np.float32).view(np.uint32)[0]
    ok = (finite & (diff <= atol + rtol * np.abs(r))) | (finite & (ulps <= max_ulp))
    ok |= (np.isnan(g) & np.isnan(r)) | ((g == r) & ~finite)
    bad = ~ok | poisoned

    monkeypatch.setattr(verify_mod, "CHUNK", 256)
    result = verify_mod.compare(got, ref, rtol, atol, max_ulp, check_poison=True)
    assert result["bad"] == int(bad.sum()) > 40
    assert result["first_bad_index"] == int(np.flatnonzero(bad)[0])
    assert result["unwritten"] == 10
    assert result["max_abs_err"] == pytest.approx(float(diff.max()))
    assert result["max_ulp_err"] == int(ulps[finite].max())
    assert result["nan_count"] == int(np.isnan(got).sum()) and result["inf_count"] == 2
    # The mask the plot and the details view mark is the check's own, element for element.
    tolerance = Tolerance(rtol, atol, max_ulp)
    assert np.array_equal(verify_mod.bad_elements(got, ref, tolerance, check_poison=True), bad)
    assert np.array_equal(verify_mod.bad_elements(got, ref, tolerance), ~ok)
    monkeypatch.setattr(verify_mod, "CHUNK", 1 << 18)
    assert verify_mod.compare(got, ref, rtol, atol, max_ulp, check_poison=True) == result
    assert np.array_equal(verify_mod.bad_elements(got, ref, tolerance, check_poison=True), bad)


def test_bad_elements_follow_the_whole_tolerance_and_say_what_cannot_be_compared():
    ref = np.array([1.0, 2.0, np.nan, np.inf, -np.inf, 3.0], np.float32)
    got = ref.copy()
    got[0] = np.nextafter(got[0], np.float32(2))  # 1 ULP
    got[1] = np.nextafter(np.nextafter(got[1], np.float32(3)), np.float32(3))  # 2 ULP
    got[4] = np.inf  # the wrong infinity
    got[5] = np.nan  # a NaN where a number was expected
    assert bad_elements(got, ref, Tolerance()).tolist() == [True, True, False, False, True, True]
    assert bad_elements(got, ref, Tolerance(max_ulp=1)).tolist() == [False, True, False, False, True, True]
    assert bad_elements(got, ref, Tolerance(max_ulp=2)).tolist() == [False, False, False, False, True, True]
    assert bad_elements(got, ref, Tolerance(rtol=1.5e-7)).tolist() == [False, True, False, False, True, True]
    ints = np.arange(6, dtype=np.int32)
    assert np.flatnonzero(bad_elements(ints + (ints == 4), ints, Tolerance())).tolist() == [4]
    assert not bad_elements(ints + (ints == 4), ints, Tolerance(atol=1.0)).any()
    assert bad_elements(ints.astype(np.float32), ints, Tolerance()).all()  # element types differ: all bad
    with pytest.raises(ValueError, match="6 elements with a reference of 5"):
        bad_elements(ints, ints[:5], Tolerance())
    # The tolerance a check was judged with, from its record or JSON.
    _, record = check_outputs({"y": got}, {"y": ref}, 1e-6, 1e-7, 3)
    assert Tolerance.of(record) == Tolerance.of(record.to_dict()) == Tolerance(1e-6, 1e-7, 3)
    assert Tolerance.of(None) == Tolerance(0.0, 0.0, None)


def test_float32_verdicts_at_the_tolerance_match_float64_exactly():
    """The float32 path decides only elements clearly inside the tolerance; differences right at
    atol + rtol * |ref| (either side, within float32 rounding) get the float64 verdict."""
    from workbench.run import verify as verify_mod

    rng = np.random.default_rng(11)
    n = 200_000
    ref = (rng.uniform(-1, 1, n) * 10.0 ** rng.integers(-8, 8, n)).astype(np.float32)
    rtol, atol = 1e-5, 1e-7
    threshold = atol + rtol * np.abs(ref.astype(np.float64))
    # differences from far inside to just outside the threshold, in float64, then rounded
    factor = rng.choice([0.5, 0.999999, 1.0, 1.000001, 1.5], n)
    got = (ref.astype(np.float64) + np.sign(rng.uniform(-1, 1, n)) * threshold * factor).astype(np.float32)
    g, r = got.astype(np.float64), ref.astype(np.float64)
    expected_bad = ~(np.abs(g - r) <= atol + rtol * np.abs(r))
    result = verify_mod.compare(got, ref, rtol, atol, max_ulp=None)
    assert result["bad"] == int(expected_bad.sum()) > 0
    assert result["first_bad_index"] == int(np.flatnonzero(expected_bad)[0])
    assert result["max_abs_err"] == pytest.approx(float(np.abs(g - r).max()), rel=1e-6)
