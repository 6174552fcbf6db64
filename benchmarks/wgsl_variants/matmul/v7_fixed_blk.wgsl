// V7: the reference as d3dbd7f left it. Isolates: the register-blocked path's workgroup arrays at a
// fixed 256 vec4s each, so the tiled form (per_thread 1) holds 8 KiB of workgroup memory it never
// touches (the reference sizes them by overrides). H200, 2026-12-02, 2048^3: this form 1.34x cuda-c,
// the reference before the blocked path 1.06x.
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

// The tile edge: the manifest's tunable `tile` (an override, so the workgroup size follows it);
// `per_thread` 1 is this tiled form, 4 or 8 the register-blocked one below (`blocked`).
// wgpu resolves overrides before naga writes SPIR-V, so every `tile` condition below reaches the
// driver as a constant and the branches another tile would take are dead code.
override tile: u32 = 16u;
override per_thread: u32 = 1u;

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
    if (per_thread > 1u) {
        blocked(lid.x, lid.y, wid.x, wid.y);
        return;
    }
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

// ---------------------------------------------------------------- register blocking (per_thread 4 or 8)
// As src/lib.rs's matmul_blocked_body and reference/matmul.cu's: workgroup (bx, by) computes the
// edge x edge block of C at (by * edge, bx * edge), edge = tile * per_thread; invocation (tx, ty)
// owns rows ty * 4 + g * 4 * tile + (0..4) and columns tx * 4 + g * 4 * tile + (0..4), g < per_thread / 4.
// Per step of 8 along k the workgroup stages A's edge x 8 slice (k-major) and B's 8 x edge slice in
// vec4 arrays, and each invocation reads them back a vec4 (16 bytes) at a time: per k, 2 (or 4)
// vec4 reads feed 16 (or 64) fused multiply-adds. The accumulators are named vec4s, c<row>_<group>,
// not an array: a function-local array indexed in loops may live in memory. Each element's chain
// runs k ascending, one fma a step, as the tiled form's.
const STEP: u32 = 8u;
// Room for the largest edge the manifest allows (tile * per_thread <= 128): 8 x 128 floats each.
var<workgroup> a_blk: array<vec4<f32>, 256>;
var<workgroup> b_blk: array<vec4<f32>, 256>;

// Element (r, c) of a row-major rows x cols matrix, 0 outside it.
fn a_at(r: u32, c: u32) -> f32 {
    if (r < params.m && c < params.k) {
        return a[r * params.k + c];
    }
    return 0.0;
}

fn b_at(r: u32, c: u32) -> f32 {
    if (r < params.k && c < params.n) {
        return b[r * params.n + c];
    }
    return 0.0;
}

fn store(r: u32, c0: u32, v: vec4<f32>) {
    if (r < params.m) {
        for (var t = 0u; t < 4u; t++) {
            if (c0 + t < params.n) {
                c[r * params.n + c0 + t] = v[t];
            }
        }
    }
}

fn blocked(tx: u32, ty: u32, bx: u32, by: u32) {
    let edge = tile * per_thread;
    let e4 = edge / 4u;
    let row0 = by * edge;
    let col0 = bx * edge;
    let tid = ty * tile + tx;
    var c0_0 = vec4<f32>(0.0);
    var c0_1 = vec4<f32>(0.0);
    var c1_0 = vec4<f32>(0.0);
    var c1_1 = vec4<f32>(0.0);
    var c2_0 = vec4<f32>(0.0);
    var c2_1 = vec4<f32>(0.0);
    var c3_0 = vec4<f32>(0.0);
    var c3_1 = vec4<f32>(0.0);
    var c4_0 = vec4<f32>(0.0);
    var c4_1 = vec4<f32>(0.0);
    var c5_0 = vec4<f32>(0.0);
    var c5_1 = vec4<f32>(0.0);
    var c6_0 = vec4<f32>(0.0);
    var c6_1 = vec4<f32>(0.0);
    var c7_0 = vec4<f32>(0.0);
    var c7_1 = vec4<f32>(0.0);
    for (var k0 = 0u; k0 < params.k; k0 += STEP) {
        for (var q = tid; q < edge * 2u; q += tile * tile) {
            let r = q / 2u;
            let kq = (q % 2u) * 4u;
            for (var t = 0u; t < 4u; t++) {
                a_blk[(kq + t) * e4 + r / 4u][r % 4u] = a_at(row0 + r, k0 + kq + t);
            }
        }
        for (var q = tid; q < edge * 2u; q += tile * tile) {
            let r = q / e4;
            let cq = (q % e4) * 4u;
            let gc = col0 + cq;
            b_blk[r * e4 + q % e4] = vec4<f32>(
                b_at(k0 + r, gc), b_at(k0 + r, gc + 1u), b_at(k0 + r, gc + 2u), b_at(k0 + r, gc + 3u)
            );
        }
        workgroupBarrier();
        for (var kk = 0u; kk < STEP; kk++) {
            let a0 = a_blk[kk * e4 + ty];
            let b0 = b_blk[kk * e4 + tx];
            c0_0 = fma(vec4<f32>(a0.x), b0, c0_0);
            c1_0 = fma(vec4<f32>(a0.y), b0, c1_0);
            c2_0 = fma(vec4<f32>(a0.z), b0, c2_0);
            c3_0 = fma(vec4<f32>(a0.w), b0, c3_0);
            if (per_thread == 8u) {
                let a1 = a_blk[kk * e4 + tile + ty];
                let b1 = b_blk[kk * e4 + tile + tx];
                c0_1 = fma(vec4<f32>(a0.x), b1, c0_1);
                c1_1 = fma(vec4<f32>(a0.y), b1, c1_1);
                c2_1 = fma(vec4<f32>(a0.z), b1, c2_1);
                c3_1 = fma(vec4<f32>(a0.w), b1, c3_1);
                c4_0 = fma(vec4<f32>(a1.x), b0, c4_0);
                c4_1 = fma(vec4<f32>(a1.x), b1, c4_1);
                c5_0 = fma(vec4<f32>(a1.y), b0, c5_0);
                c5_1 = fma(vec4<f32>(a1.y), b1, c5_1);
                c6_0 = fma(vec4<f32>(a1.z), b0, c6_0);
                c6_1 = fma(vec4<f32>(a1.z), b1, c6_1);
                c7_0 = fma(vec4<f32>(a1.w), b0, c7_0);
                c7_1 = fma(vec4<f32>(a1.w), b1, c7_1);
            }
        }
        workgroupBarrier();
    }
    let r0 = row0 + ty * 4u;
    let cc0 = col0 + tx * 4u;
    store(r0 + 0u, cc0, c0_0);
    store(r0 + 1u, cc0, c1_0);
    store(r0 + 2u, cc0, c2_0);
    store(r0 + 3u, cc0, c3_0);
    if (per_thread == 8u) {
        let r1 = r0 + 4u * tile;
        let cc1 = cc0 + 4u * tile;
        store(r0 + 0u, cc1, c0_1);
        store(r0 + 1u, cc1, c1_1);
        store(r0 + 2u, cc1, c2_1);
        store(r0 + 3u, cc1, c3_1);
        store(r1 + 0u, cc0, c4_0);
        store(r1 + 0u, cc1, c4_1);
        store(r1 + 1u, cc0, c5_0);
        store(r1 + 1u, cc1, c5_1);
        store(r1 + 2u, cc0, c6_0);
        store(r1 + 2u, cc1, c6_1);
        store(r1 + 3u, cc0, c7_0);
        store(r1 + 3u, cc1, c7_1);
    }
}
