// Hand-written WGSL bitonic compare-and-swap step, the same computation as src/lib.rs.
struct Params {
    n: u32,
    j: u32,
    k: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let l = i ^ params.j;
    if (i < params.n && l > i && l < params.n) {
        let a = data[i];
        let b = data[l];
        let ascending = (i & params.k) == 0u;
        if ((ascending && a > b) || (!ascending && a < b)) {
            data[i] = b;
            data[l] = a;
        }
    }
}
