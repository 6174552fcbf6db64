// Hand-written WGSL subgroup reduction, the same computation as src/lib.rs: each workgroup of 256
// invocations sums 4096 consecutive elements into partial[workgroup]; each invocation first adds
// its 16 elements (16 loads, 256 apart: each load of the workgroup reads consecutive elements),
// then each subgroup folds its values with subgroupShuffleDown (the adapter's subgroup_size
// lanes: 32 on NVIDIA, 8 on llvmpipe), lane 0 of each subgroup stores the subgroup's sum, one
// barrier, and invocation 0 adds them.
//
// The subgroup builtins and subgroupShuffleDown need the wgpu feature 'subgroup' (naga's SUBGROUP
// capability; the WGSL spec's `enable subgroups;` is not parsed by this naga yet, so there is
// none): an adapter without it (llvmpipe's GL adapter, for one) cannot run this shader, and the
// run says so for that device.

struct Params {
    n: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> partial: array<f32>;

// One sum per subgroup: 256 for the smallest subgroups WGSL allows (4 lanes gives 64).
var<workgroup> sums: array<f32, 256>;

// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large grids on
// wgpu"); spare workgroups load zeros and write nothing.
@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_index) t: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) size: u32,
) {
    let block = wid.x + groups.x * (wid.y + groups.y * wid.z);
    let first = block * 4096u + t;
    var value = 0.0;
    // Every element of the block below n (all but the last block): the loads need no test.
    let full = (block + 1u) * 4096u <= params.n;
    if (full) {
        // k = 0 .. 15 written out: x[first + k * 256u], added in the same order as the Rust body's
        // and the .cu's loop (which LLVM and nvcc unroll). As a loop, naga bounds it with its own
        // counter and the NVIDIA driver then issues the loads one a trip: 511 µs against cuda-c's
        // 347 µs on an H100 at n = 2^28; written out, 338 µs (benchmarks/wgsl_variants/warp_reduce/,
        // results/wgsl-variants-warp_reduce-h100/).
        value += x[first + 0u];
        value += x[first + 256u];
        value += x[first + 512u];
        value += x[first + 768u];
        value += x[first + 1024u];
        value += x[first + 1280u];
        value += x[first + 1536u];
        value += x[first + 1792u];
        value += x[first + 2048u];
        value += x[first + 2304u];
        value += x[first + 2560u];
        value += x[first + 2816u];
        value += x[first + 3072u];
        value += x[first + 3328u];
        value += x[first + 3584u];
        value += x[first + 3840u];
    } else {
        // The last block: each load tested.
        for (var k = 0u; k < 16u; k++) {
            let i = first + k * 256u;
            if (i < params.n) {
                value += x[i];
            }
        }
    }
    for (var offset = size / 2u; offset > 0u; offset /= 2u) {
        value += subgroupShuffleDown(value, offset);
    }
    if (lane == 0u) {
        sums[t / size] = value;
    }
    workgroupBarrier();
    if (t == 0u && block < arrayLength(&partial)) {
        var total = 0.0;
        for (var k = 0u; k < 256u / size; k++) {
            total += sums[k];
        }
        partial[block] = total;
    }
}
