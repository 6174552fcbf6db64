// V3: V2 with 2-D workgroup arrays array<array<f32, 16>, 16> indexed [ty][t] and [t][tx].
// Isolates: naga's index clamping. With a constant t, naga clamps only the dynamic index (ty or tx,
// the same value in all 16 steps, so the driver computes it once) and the 16 loads become one base
// address plus constant offsets, as in nvcc's code (which reads the a row with LDS.128).
// The reference WGSL since 2026-12-01 is this technique for every tile (32 x 32 arrays, steps in
// groups guarded by tile); V3 keeps exact 16 x 16 arrays, reference/matmul.cu's row stride.
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

// 2-D tiles, exactly tile x tile (as reference/matmul.cu's a_tile[TILE][TILE]).
var<workgroup> a_tile: array<array<f32, tile>, tile>;
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
        a_tile[ty][tx] = va;
        b_tile[ty][tx] = vb;
        workgroupBarrier();
        // The t loop written out (t = 0..15, ascending): no loop, so no loop counter from naga.
        acc = fma(a_tile[ty][0], b_tile[0][tx], acc);
        acc = fma(a_tile[ty][1], b_tile[1][tx], acc);
        acc = fma(a_tile[ty][2], b_tile[2][tx], acc);
        acc = fma(a_tile[ty][3], b_tile[3][tx], acc);
        acc = fma(a_tile[ty][4], b_tile[4][tx], acc);
        acc = fma(a_tile[ty][5], b_tile[5][tx], acc);
        acc = fma(a_tile[ty][6], b_tile[6][tx], acc);
        acc = fma(a_tile[ty][7], b_tile[7][tx], acc);
        acc = fma(a_tile[ty][8], b_tile[8][tx], acc);
        acc = fma(a_tile[ty][9], b_tile[9][tx], acc);
        acc = fma(a_tile[ty][10], b_tile[10][tx], acc);
        acc = fma(a_tile[ty][11], b_tile[11][tx], acc);
        acc = fma(a_tile[ty][12], b_tile[12][tx], acc);
        acc = fma(a_tile[ty][13], b_tile[13][tx], acc);
        acc = fma(a_tile[ty][14], b_tile[14][tx], acc);
        acc = fma(a_tile[ty][15], b_tile[15][tx], acc);
        workgroupBarrier();
    }
    if (row < params.m && col < params.n) {
        c[row * params.n + col] = acc;
    }
}
