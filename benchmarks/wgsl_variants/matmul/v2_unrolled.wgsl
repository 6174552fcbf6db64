// V2: V1 + the inner 16-step loop written out (16 fma lines, constant t, same order).
// Isolates: naga's loop bounding (force_loop_bounding adds a vec2<u32> iteration counter to every
// loop, matmul.spvasm lines 160-170 for this loop) and whether the driver unrolls the t loop.
// The flat-index clamps (UMin(i, 1023)) stay on every workgroup access.
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
        // The t loop written out (t = 0..15, ascending): no loop, so no loop counter from naga.
        acc = fma(a_tile[ty * tile + 0u], b_tile[0u * tile + tx], acc);
        acc = fma(a_tile[ty * tile + 1u], b_tile[1u * tile + tx], acc);
        acc = fma(a_tile[ty * tile + 2u], b_tile[2u * tile + tx], acc);
        acc = fma(a_tile[ty * tile + 3u], b_tile[3u * tile + tx], acc);
        acc = fma(a_tile[ty * tile + 4u], b_tile[4u * tile + tx], acc);
        acc = fma(a_tile[ty * tile + 5u], b_tile[5u * tile + tx], acc);
        acc = fma(a_tile[ty * tile + 6u], b_tile[6u * tile + tx], acc);
        acc = fma(a_tile[ty * tile + 7u], b_tile[7u * tile + tx], acc);
        acc = fma(a_tile[ty * tile + 8u], b_tile[8u * tile + tx], acc);
        acc = fma(a_tile[ty * tile + 9u], b_tile[9u * tile + tx], acc);
        acc = fma(a_tile[ty * tile + 10u], b_tile[10u * tile + tx], acc);
        acc = fma(a_tile[ty * tile + 11u], b_tile[11u * tile + tx], acc);
        acc = fma(a_tile[ty * tile + 12u], b_tile[12u * tile + tx], acc);
        acc = fma(a_tile[ty * tile + 13u], b_tile[13u * tile + tx], acc);
        acc = fma(a_tile[ty * tile + 14u], b_tile[14u * tile + tx], acc);
        acc = fma(a_tile[ty * tile + 15u], b_tile[15u * tile + tx], acc);
        workgroupBarrier();
    }
    if (row < params.m && col < params.n) {
        c[row * params.n + col] = acc;
    }
}
