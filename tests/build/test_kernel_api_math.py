"""The kernel API's portable `exp` (what NVPTX kernels get: no libm there), compiled for the host
with rustc from the crate's own source and measured against the correctly rounded e^x."""

from __future__ import annotations

import subprocess

import pytest

from workbench.build.adapters.host_rust import rustc
from workbench.build.toolchains import detect
from workbench.kernel_api import crate_dir

pytestmark = pytest.mark.slow

PROGRAM = """
#[path = "{math}"]
#[allow(dead_code)]
mod math;
fn main() {{
    let (mut worst, mut at, mut checked) = (0i64, 0f32, 0u64);
    // Every 997th f32 bit pattern of the range where e^x is a normal f32, both signs.
    let mut bits = 0u32;
    while bits < 0x42B1_0000 {{
        for x in [f32::from_bits(bits), -f32::from_bits(bits)] {{
            let want = (x as f64).exp() as f32;
            if want.is_normal() && want.is_finite() {{
                let ulps = (math::exp_portable(x).to_bits() as i64 - want.to_bits() as i64).abs();
                if ulps > worst {{ worst = ulps; at = x; }}
                checked += 1;
            }}
        }}
        bits += 997;
    }}
    let edges = [math::exp_portable(f32::NAN).is_nan(), math::exp_portable(100.0) == f32::INFINITY,
                 math::exp_portable(-200.0) == 0.0, math::exp_portable(0.0) == 1.0];
    println!("{{worst}} {{at}} {{checked}} {{}}", edges.iter().all(|e| *e));
}}
"""


def test_portable_exp_is_within_one_ulp_of_the_rounded_value(tmp_path):
    if not detect("cpu").found or rustc() is None:
        pytest.skip("no host rustc: run packaging/bootstrap.sh setup")
    source = tmp_path / "exp_check.rs"
    source.write_text(PROGRAM.format(math=crate_dir() / "src" / "math.rs"))
    binary = tmp_path / "exp_check"
    build = subprocess.run(
        [rustc(), "-O", "--edition", "2021", str(source), "-o", str(binary)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    worst, at, checked, edges = subprocess.run(
        [binary], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    assert int(checked) > 1_000_000
    assert int(worst) <= 1, f"{worst} ULP at x = {at}"
    assert edges == "true"  # NaN, overflow, underflow, e^0
