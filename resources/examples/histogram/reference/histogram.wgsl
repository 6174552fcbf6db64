// Hand-written WGSL histogram, the same computation as src/lib.rs: each workgroup counts `items`
// elements per invocation into a private histogram in workgroup memory (atomicAdd on a
// var<workgroup> array of atomic<u32>), then adds its non-zero bins to the global one (atomicAdd
// on the storage buffer, declared as array<atomic<u32>>: WGSL atomics are types, not operations).
struct Params {
    n: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> bins: array<atomic<u32>>;

// The manifest's tunables: threads per workgroup and elements per invocation.
override threads: u32 = 512u;
override items: u32 = 32u;

const BINS: u32 = 256u;
var<workgroup> local_bins: array<atomic<u32>, 256>;

// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large grids on
// wgpu"): the linear workgroup comes from num_workgroups.
@compute @workgroup_size(threads)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let group = wid.x + groups.x * (wid.y + groups.y * wid.z);
    // Workgroup memory is zeroed in WGSL, but written out as the other backends must.
    for (var b = lid.x; b < BINS; b += threads) {
        atomicStore(&local_bins[b], 0u);
    }
    workgroupBarrier();
    let base = group * threads * items;
    for (var k = 0u; k < items; k++) {
        let i = base + k * threads + lid.x;
        if (i < params.n) {
            atomicAdd(&local_bins[x[i] % BINS], 1u);
        }
    }
    workgroupBarrier();
    for (var b = lid.x; b < BINS; b += threads) {
        let count = atomicLoad(&local_bins[b]);
        if (count != 0u) {
            atomicAdd(&bins[b], count);
        }
    }
}
