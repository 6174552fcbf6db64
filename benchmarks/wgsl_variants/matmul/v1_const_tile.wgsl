// V1: v0_loop.wgsl (the reference WGSL before 2026-12-01) with `const tile = 16u` instead of
// `override tile`. Isolates: a pipeline constant vs a compile-time constant. naga resolves overrides
// before it writes SPIR-V (the captured v0_loop has the literal 16), so V1 emits the same code.
// Only tile = 16 (the manifest's default) is valid for this file.
struct Params {
    m: u32,
    n: u32,
    k: u32,
}

// The tile edge as a compile-time constant (v0_loop's `override tile` at its default).
const tile: u32 = 16u;

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
