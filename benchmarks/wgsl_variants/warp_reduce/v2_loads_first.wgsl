// V2: V1 with the 16 loads spelled as 16 `let`s before the 16 adds (the same loads, the adds in
// the same order: bit-identical). Why: if V1 is still slower than cuda-c, this tells whether the
// driver's scheduler leaves loads behind the adds of the ones before (one or few in flight, as
// rustc's NVPTX code did with one tested loop, src/lib.rs) where the SPIR-V already lists the
// loads together; a driver that schedules freely gives V1's time.

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
        // The 16 loads first, then the adds in v0_loop's order (value = 0 + a0 + a1 + ... + a15).
        let a0 = x[first + 0u];
        let a1 = x[first + 256u];
        let a2 = x[first + 512u];
        let a3 = x[first + 768u];
        let a4 = x[first + 1024u];
        let a5 = x[first + 1280u];
        let a6 = x[first + 1536u];
        let a7 = x[first + 1792u];
        let a8 = x[first + 2048u];
        let a9 = x[first + 2304u];
        let a10 = x[first + 2560u];
        let a11 = x[first + 2816u];
        let a12 = x[first + 3072u];
        let a13 = x[first + 3328u];
        let a14 = x[first + 3584u];
        let a15 = x[first + 3840u];
        value += a0;
        value += a1;
        value += a2;
        value += a3;
        value += a4;
        value += a5;
        value += a6;
        value += a7;
        value += a8;
        value += a9;
        value += a10;
        value += a11;
        value += a12;
        value += a13;
        value += a14;
        value += a15;
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
