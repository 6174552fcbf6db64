// Hand-written WGSL tiled matrix multiply, the same computation as src/lib.rs:
// C (m x n) = A (m x k) * B (k x n), row-major, tile x tile tiles in workgroup memory, k ascending,
// one fused multiply-add per step: the algorithm of reference/matmul.cu, line for line.
//
// Why the steps are written out and the tiles are 2-D (issue 13, benchmarks/results/wgsl-spirv/
// README.md): naga, wgpu's WGSL compiler, gives every loop a 64-bit iteration counter
// (force_loop_bounding), which kept NVIDIA's Vulkan driver from unrolling the t loop, and clamps
// every workgroup-array index (UMin), which on a flat index `ty * tile + t` hides the constant
// step offset. With a literal step and 2-D arrays naga clamps only ty and tx, the same values in
// every step. On the H200 at 2048^3 the loop over flat arrays (this file before 2026-12-01, kept
// as benchmarks/wgsl_variants/matmul/v0_loop.wgsl) took 6.60 ms, 3.1x the CUDA C++ reference's
// 2.12 ms; this form 2.25 ms (1.06x; see the arrays below).
struct Params {
    m: u32,
    n: u32,
    k: u32,
}

// The tile edge: the manifest's tunable `tile` (an override, so the workgroup size follows it).
// wgpu resolves overrides before naga writes SPIR-V, so every `tile` condition below reaches the
// driver as a constant and the branches another tile would take are dead code.
override tile: u32 = 16u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

// Room for the largest tile the manifest allows (32 x 32; an override cannot size a nested array);
// a tile uses its first tile rows and columns. On the H200 at 2048^3 this form took 2.251 ms
// (1.06 x cuda-c), exact 16 x 16 arrays 2.109 ms (variant V3, tile 16 only) and rows padded to 48
// floats against bank conflicts 2.385 ms (variant V6): the remaining 6 % is the cost of arrays
// sized for every tile.
var<workgroup> a_tile: array<array<f32, 32>, 32>;
var<workgroup> b_tile: array<array<f32, 32>, 32>;

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
        // fma(): one rounding per step like nvcc's fma.rn.f32 and the Rust logic's fused
        // multiply-add, where the driver fuses it (Vulkan lets it round twice: llvmpipe does).
        if (tile % 8u == 0u) {
            // t = 0 .. tile - 1 ascending, written out in groups of 8 (tile 8, 16, 24 or 32).
            acc = fma(a_tile[ty][0], b_tile[0][tx], acc);
            acc = fma(a_tile[ty][1], b_tile[1][tx], acc);
            acc = fma(a_tile[ty][2], b_tile[2][tx], acc);
            acc = fma(a_tile[ty][3], b_tile[3][tx], acc);
            acc = fma(a_tile[ty][4], b_tile[4][tx], acc);
            acc = fma(a_tile[ty][5], b_tile[5][tx], acc);
            acc = fma(a_tile[ty][6], b_tile[6][tx], acc);
            acc = fma(a_tile[ty][7], b_tile[7][tx], acc);
            if (tile > 8u) {
                acc = fma(a_tile[ty][8], b_tile[8][tx], acc);
                acc = fma(a_tile[ty][9], b_tile[9][tx], acc);
                acc = fma(a_tile[ty][10], b_tile[10][tx], acc);
                acc = fma(a_tile[ty][11], b_tile[11][tx], acc);
                acc = fma(a_tile[ty][12], b_tile[12][tx], acc);
                acc = fma(a_tile[ty][13], b_tile[13][tx], acc);
                acc = fma(a_tile[ty][14], b_tile[14][tx], acc);
                acc = fma(a_tile[ty][15], b_tile[15][tx], acc);
            }
            if (tile > 16u) {
                acc = fma(a_tile[ty][16], b_tile[16][tx], acc);
                acc = fma(a_tile[ty][17], b_tile[17][tx], acc);
                acc = fma(a_tile[ty][18], b_tile[18][tx], acc);
                acc = fma(a_tile[ty][19], b_tile[19][tx], acc);
                acc = fma(a_tile[ty][20], b_tile[20][tx], acc);
                acc = fma(a_tile[ty][21], b_tile[21][tx], acc);
                acc = fma(a_tile[ty][22], b_tile[22][tx], acc);
                acc = fma(a_tile[ty][23], b_tile[23][tx], acc);
            }
            if (tile > 24u) {
                acc = fma(a_tile[ty][24], b_tile[24][tx], acc);
                acc = fma(a_tile[ty][25], b_tile[25][tx], acc);
                acc = fma(a_tile[ty][26], b_tile[26][tx], acc);
                acc = fma(a_tile[ty][27], b_tile[27][tx], acc);
                acc = fma(a_tile[ty][28], b_tile[28][tx], acc);
                acc = fma(a_tile[ty][29], b_tile[29][tx], acc);
                acc = fma(a_tile[ty][30], b_tile[30][tx], acc);
                acc = fma(a_tile[ty][31], b_tile[31][tx], acc);
            }
        } else {
            // Any other tile (a tuning sweep may ask for one): the same steps as a loop.
            for (var t = 0u; t < tile; t = t + 1u) {
                acc = fma(a_tile[ty][t], b_tile[t][tx], acc);
            }
        }
        workgroupBarrier();
    }
    if (row < params.m && col < params.n) {
        c[row * params.n + col] = acc;
    }
}
