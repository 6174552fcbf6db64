// Hand-written WGSL bitonic compare-and-swap step, the same computation as src/lib.rs.
struct Params {
    n: u32,
    j: u32,
    k: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;

// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large grids on
// wgpu"): the linear workgroup comes from num_workgroups, not from global_invocation_id.x.
@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let i = (wid.x + groups.x * (wid.y + groups.y * wid.z)) * 256u + lid.x;
    let l = i ^ params.j;
    // `&` and `|`, not `&&` and `||`: WGSL's `&&` and `||` short-circuit, and naga makes each one
    // an if/else in the SPIR-V (7 conditional branches in this function, 2 with `&` and `|`).
    // Every operand is a plain compare, so evaluating them all gives the same result, and the swap
    // test is no branch on `ascending`, which differs between neighbouring invocations.
    if ((i < params.n) & (l > i) & (l < params.n)) {
        let a = data[i];
        let b = data[l];
        let ascending = (i & params.k) == 0u;
        if ((ascending & (a > b)) | (!ascending & (a < b))) {
            data[i] = b;
            data[l] = a;
        }
    }
}
