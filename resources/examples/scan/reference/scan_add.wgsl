// Hand-written WGSL scan, pass 2 (src/lib.rs's scan_add_body): each workgroup reduces the totals
// of the tiles before its own (sums[0 .. tile]: partial sums in rounds of 256, 32 invocations
// rake them, 8 each, invocation 0 adds the 32 rake totals) and adds that offset to its 2304
// elements of y (9 an invocation, striped as pass 1 writes them). Pass 1 is scan.wgsl.
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
    // Spare workgroups of a folded grid (tile >= ceil(n / 2304)) must not read past sums (they
    // sum it all and write nothing).
    let before = min(tile, arrayLength(&sums));
    var part = 0u;
    for (var round = 0u; round < before; round += 256u) {
        if (round + t < before) {
            part += sums[round + t];
        }
    }
    total[t] = part;
    workgroupBarrier();
    if (t < 32u) {
        // Invocation t alone reads total[t + 32 j] and writes total[t].
        total[t] = total[t] + total[t + 32u] + total[t + 64u] + total[t + 96u] + total[t + 128u]
            + total[t + 160u] + total[t + 192u] + total[t + 224u];
    }
    workgroupBarrier();
    if (t == 0u) {
        total[0] = total[0] + total[1] + total[2] + total[3] + total[4] + total[5] + total[6]
            + total[7] + total[8] + total[9] + total[10] + total[11] + total[12] + total[13]
            + total[14] + total[15] + total[16] + total[17] + total[18] + total[19] + total[20]
            + total[21] + total[22] + total[23] + total[24] + total[25] + total[26] + total[27]
            + total[28] + total[29] + total[30] + total[31];
    }
    workgroupBarrier();
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
