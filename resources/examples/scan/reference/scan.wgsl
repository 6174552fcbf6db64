// Hand-written WGSL scan, pass 1 (src/lib.rs's scan_body): each workgroup of 256 invocations
// scans a tile of 512 u32 (two per invocation, then a Hillis-Steele scan of the pair sums in
// workgroup memory) into y, and writes the tile's total to sums[tile]. Pass 2 is scan_add.wgsl.
struct Params {
    n: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@group(0) @binding(3) var<storage, read_write> sums: array<u32>;

var<workgroup> pairs: array<u32, 256>;

// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large grids on
// wgpu"); spare workgroups (tile >= ceil(n / 512)) write nothing.
@compute @workgroup_size(256)
fn scan(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let t = lid.x;
    let tile = wid.x + groups.x * (wid.y + groups.y * wid.z);
    let i = tile * 512u + 2u * t;
    var a = 0u;
    if (i < params.n) {
        a = x[i];
    }
    var b = 0u;
    if (i + 1u < params.n) {
        b = x[i + 1u];
    }
    pairs[t] = a + b;
    workgroupBarrier();
    for (var offset = 1u; offset < 256u; offset *= 2u) {
        var sum = pairs[t];
        if (t >= offset) {
            sum += pairs[t - offset];
        }
        workgroupBarrier();  // every read of this step before any write
        pairs[t] = sum;
        workgroupBarrier();
    }
    if (tile < arrayLength(&sums)) {
        var before = 0u;
        if (t > 0u) {
            before = pairs[t - 1u];
        }
        if (i < params.n) {
            y[i] = before + a;
        }
        if (i + 1u < params.n) {
            y[i + 1u] = before + a + b;
        }
        if (t == 255u) {
            sums[tile] = pairs[t];
        }
    }
}
