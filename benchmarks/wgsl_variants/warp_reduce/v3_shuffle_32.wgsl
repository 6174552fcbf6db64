// V3: V1 with the shuffle loop written out for 32-lane subgroups (`if (size == 32u)`: offsets
// 16, 8, 4, 2, 1 literal; the loop kept for other sizes, e.g. llvmpipe's 8, which therefore runs
// V1's code). Why: in WGSL the subgroup size is a runtime value, so the five steps are a loop with
// naga's counter and a shuffle by a register offset, where nvcc unrolls warpSize / 2 = 16 and
// shuffles by immediates. Once per invocation: expected small next to 16 loads, tested to be sure.

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
        // k = 0 .. 15 written out: x[first + k * 256u], added in the same order.
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
    if (size == 32u) {
        // NVIDIA's subgroups: offsets 16, 8, 4, 2, 1 as literals (warpSize is a constant in CUDA).
        value += subgroupShuffleDown(value, 16u);
        value += subgroupShuffleDown(value, 8u);
        value += subgroupShuffleDown(value, 4u);
        value += subgroupShuffleDown(value, 2u);
        value += subgroupShuffleDown(value, 1u);
    } else {
        for (var offset = size / 2u; offset > 0u; offset /= 2u) {
            value += subgroupShuffleDown(value, offset);
        }
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
