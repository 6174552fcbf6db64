// V4: V3 with the a row read as 4 vec4<f32> loads (what nvcc does with LDS.128), same fma order:
// t = 0..15 ascending, one fma per step, so C stays bit-identical to V0 where the driver fuses.
// No inner loop (no naga loop counter), no per-step clamp (constant indices), vector loads explicit
// so the driver need not prove alignment to widen them.
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

// 2-D tiles, exactly tile x tile; the a row as 4 vec4 (the layout of a_tile[TILE][TILE] in memory).
var<workgroup> a_tile: array<array<vec4<f32>, 4>, tile>;  // row ty: 16 floats as 4 vec4
var<workgroup> b_tile: array<array<f32, tile>, tile>;

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
        a_tile[ty][tx >> 2u][tx & 3u] = va;  // shifts: naga wraps / and % in helper functions
        b_tile[ty][tx] = vb;
        workgroupBarrier();
        // The t loop written out (t = 0..15, ascending): no loop, so no loop counter from naga.
        let a0 = a_tile[ty][0];
        acc = fma(a0.x, b_tile[0][tx], acc);
        acc = fma(a0.y, b_tile[1][tx], acc);
        acc = fma(a0.z, b_tile[2][tx], acc);
        acc = fma(a0.w, b_tile[3][tx], acc);
        let a1 = a_tile[ty][1];
        acc = fma(a1.x, b_tile[4][tx], acc);
        acc = fma(a1.y, b_tile[5][tx], acc);
        acc = fma(a1.z, b_tile[6][tx], acc);
        acc = fma(a1.w, b_tile[7][tx], acc);
        let a2 = a_tile[ty][2];
        acc = fma(a2.x, b_tile[8][tx], acc);
        acc = fma(a2.y, b_tile[9][tx], acc);
        acc = fma(a2.z, b_tile[10][tx], acc);
        acc = fma(a2.w, b_tile[11][tx], acc);
        let a3 = a_tile[ty][3];
        acc = fma(a3.x, b_tile[12][tx], acc);
        acc = fma(a3.y, b_tile[13][tx], acc);
        acc = fma(a3.z, b_tile[14][tx], acc);
        acc = fma(a3.w, b_tile[15][tx], acc);
        workgroupBarrier();
    }
    if (row < params.m && col < params.n) {
        c[row * params.n + col] = acc;
    }
}
