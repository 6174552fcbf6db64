// V0: the reference WGSL as it was before 2026-12-01 (resources/examples/matmul/reference/
// matmul.wgsl then): the t loop kept and flat workgroup arrays indexed ty * tile + t, so naga adds a
// loop counter to the t loop and clamps each flat index (UMin(i, 1023)). The slow form the
// variants start from; the reference now writes the steps out over 2-D arrays (V3's technique).
struct Params {
    m: u32,
    n: u32,
    k: u32,
}

// The tile edge: the manifest's tunable `tile` (an override, so the workgroup size follows it).
override tile: u32 = 16u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

// Room for the largest tile the manifest allows (32 x 32); a tile uses its first tile * tile.
var<workgroup> a_tile: array<f32, 1024>;
var<workgroup> b_tile: array<f32, 1024>;

@compute @workgroup_size(tile, tile)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let tx = lid.x;
    let ty = lid.y;
    let row = wid.y * tile + ty;
    let col = wid.x * tile + tx;
    var acc = 0.0;
    for (var k0 = 0u; k0 < params.k; k0 = k0 + tile) {
        let ka = k0 + tx;
        let kb = k0 + ty;
        var va = 0.0;
        if (row < params.m && ka < params.k) {
            va = a[row * params.k + ka];
        }
        var vb = 0.0;
        if (kb < params.k && col < params.n) {
            vb = b[kb * params.n + col];
        }
        a_tile[ty * tile + tx] = va;
        b_tile[ty * tile + tx] = vb;
        workgroupBarrier();
        for (var t = 0u; t < tile; t = t + 1u) {
            // fma(): one rounding per step like nvcc's fma.rn.f32 and the Rust logic's fused
            // multiply-add, where the driver fuses it (Vulkan lets it round twice: llvmpipe does).
            acc = fma(a_tile[ty * tile + t], b_tile[t * tile + tx], acc);
        }
        workgroupBarrier();
    }
    if (row < params.m && col < params.n) {
        c[row * params.n + col] = acc;
    }
}
