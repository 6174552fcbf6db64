// Hand-written WGSL scan, pass 2 (src/lib.rs's scan_add_body): each workgroup reduces the totals
// of the tiles before its own (sums[0 .. tile]) in workgroup memory and adds that offset to its
// 2304 elements of y (9 an invocation, striped as pass 1 writes them). Pass 1 is scan.wgsl.
struct Params {
    n: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> sums: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;

var<workgroup> total: array<u32, 256>;

// Round k of the striped update (written out as scan.wgsl's rounds are: a call a round).
fn add(base: u32, k: u32, t: u32, offset: u32) {
    let i = base + k * 256u + t;
    if (i < params.n) {
        y[i] += offset;
    }
}

@compute @workgroup_size(256)
fn scan_add(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let t = lid.x;
    let tile = wid.x + groups.x * (wid.y + groups.y * wid.z);
    // Spare workgroups of a folded grid (tile >= ceil(n / 2304)) must not read past sums.
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
    let base = tile * 2304u;
    add(base, 0u, t, offset);
    add(base, 1u, t, offset);
    add(base, 2u, t, offset);
    add(base, 3u, t, offset);
    add(base, 4u, t, offset);
    add(base, 5u, t, offset);
    add(base, 6u, t, offset);
    add(base, 7u, t, offset);
    add(base, 8u, t, offset);
}
