// V0: the reference WGSL before its full block's loads were written out (2026-12-06; the
// reference, resources/examples/warp_reduce/reference/warp_reduce.wgsl, is now V1's form): the
// full block's 16 loads in a loop (`full && k < 16u`), so naga adds its loop counter to it; the
// CHECK_MODES reruns (no clamps, no loop counter, neither) are of this file, and each other variant
// here changes one thing in it.

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
    var k = 0u;
    // Every element of the block below n (all but the last block): the loads need no test.
    let full = (block + 1u) * 4096u <= params.n;
    for (; full && k < 16u; k++) {
        value += x[first + k * 256u];
    }
    // The last block: each load tested (after a full block, k is 16: none left).
    for (; k < 16u; k++) {
        let i = first + k * 256u;
        if (i < params.n) {
            value += x[i];
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
