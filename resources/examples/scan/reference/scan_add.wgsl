// Hand-written WGSL scan, pass 2 (src/lib.rs's scan_add_body): each workgroup reduces the totals
// of the tiles before its own (sums[0 .. tile]) in workgroup memory and adds that offset to its
// 512 elements of y. Pass 1 is scan.wgsl.
struct Params {
    n: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> sums: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;

var<workgroup> total: array<u32, 256>;

@compute @workgroup_size(256)
fn scan_add(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let t = lid.x;
    let tile = wid.x + groups.x * (wid.y + groups.y * wid.z);
    // Spare workgroups of a folded grid (tile >= ceil(n / 512)) must not read past sums.
    let before = select(0u, tile, tile < arrayLength(&sums));
    var part = 0u;
    for (var k = t; k < before; k += 256u) {
        part += sums[k];
    }
    total[t] = part;
    workgroupBarrier();
    for (var stride = 128u; stride > 0u; stride >>= 1u) {
        if (t < stride) {
            total[t] += total[t + stride];
        }
        workgroupBarrier();
    }
    let offset = total[0];
    let i = tile * 512u + t;
    if (i < params.n) {
        y[i] += offset;
    }
    if (i + 256u < params.n) {
        y[i + 256u] += offset;
    }
}
