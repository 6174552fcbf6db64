// V0: the reference WGSL as it is on 2026-12-06 (resources/examples/stencil2d/reference/
// stencil2d.wgsl, four points an invocation along y since efef311): the tile's whole load passes
// and the four points kept as loops, so naga adds its loop counter (force_loop_bounding) to each.
// wgsl 282 µs against cuda-c's 204 µs on an H100 at 8192 x 8192 (1.38x; 0.99x before the four
// points: benchmarks/results/h100-2026-12-06-ab-stencil2d/). The CHECK_MODES reruns (no clamps, no
// loop counter, neither) are of this file, and each other variant here changes one thing in it.

// Hand-written WGSL 5-point stencil, the same computation as src/lib.rs: Kernel Tuner's tutorial
// kernel (x_new = (c + w + e + s + n) / 5 on the interior) with the workgroup's block and a
// one-point halo staged in workgroup memory first, and the boundary copied. Each invocation
// computes tile_size_y points of a column, each centre value read once from workgroup memory and
// kept for the points above and below it.
struct Params {
    width: u32,
    height: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x_old: array<f32>;
@group(0) @binding(2) var<storage, read_write> x_new: array<f32>;

// The manifest's tunables (Kernel Tuner's names): the workgroup's width and height, and the
// points an invocation computes along y.
override block_size_x: u32 = 64u;
override block_size_y: u32 = 4u;
override tile_size_y: u32 = 4u;

// Room for the largest block and halo the manifest allows: (block_size_x + 2) x
// (block_size_y * tile_size_y + 2) <= 1188 (its constraint).
var<workgroup> tile: array<f32, 1188>;

@compute @workgroup_size(block_size_x, block_size_y)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let row = block_size_x + 2u;
    let rows = block_size_y * tile_size_y + 2u;
    let x0 = wid.x * block_size_x;
    let y0 = wid.y * (block_size_y * tile_size_y);
    // Tile point (tx, ty) is grid point (x0 + tx - 1, y0 + ty - 1). The block's columns: invocation
    // (x, y) loads column x + 1 of rows y, y + block_size_y, ... (a row of invocations loads one
    // contiguous row, no division): whole passes of block_size_y rows, then the partial one.
    let gx = x0 + lid.x;
    var ty0 = 0u;
    for (; ty0 + block_size_y <= rows; ty0 += block_size_y) {
        let ty = ty0 + lid.y;
        let gy = y0 + ty - 1u;
        var value = 0.0;
        if (gx < params.width && gy < params.height) {
            value = x_old[gy * params.width + gx];
        }
        tile[ty * row + lid.x + 1u] = value;
    }
    // The partial pass and the halo's two columns (tile columns 0 and block_size_x + 1: point h of
    // their 2 * rows is column (h % 2) * (block_size_x + 1) of row h / 2, one point each for the
    // first 2 * rows invocations; the manifest's constraint keeps 2 * rows <= the workgroup).
    let ty = ty0 + lid.y;
    let gy = y0 + ty - 1u;
    let in_tile = ty < rows;
    var value = 0.0;
    if (in_tile && gx < params.width && gy < params.height) {
        value = x_old[gy * params.width + gx];
    }
    let h = lid.y * block_size_x + lid.x;
    let hx = (h & 1u) * (block_size_x + 1u);
    let hy = h >> 1u;
    let halo = h < 2u * rows;
    var halo_value = 0.0;
    if (halo && x0 + hx - 1u < params.width && y0 + hy - 1u < params.height) {
        halo_value = x_old[(y0 + hy - 1u) * params.width + x0 + hx - 1u];
    }
    if (in_tile) {
        tile[ty * row + lid.x + 1u] = value;
    }
    if (halo) {
        tile[hy * row + hx] = halo_value;
    }
    workgroupBarrier();
    let x = x0 + lid.x;
    if (x < params.width) {
        let first = y0 + lid.y * tile_size_y;
        let at = (lid.y * tile_size_y + 1u) * row + lid.x + 1u;
        var north = tile[at - row];
        var c = tile[at];
        for (var r = 0u; r < tile_size_y; r++) {
            let y = first + r;
            let a = at + r * row;
            let south = tile[a + row];
            // Computed for every point (the tile holds a value at each of the four) and chosen.
            let mean = (c + tile[a - 1u] + tile[a + 1u] + south + north) / 5.0;
            if (y < params.height) {
                let inside = x > 0u && y > 0u && x + 1u < params.width && y + 1u < params.height;
                x_new[y * params.width + x] = select(c, mean, inside);  // the boundary keeps its value
            }
            north = c;
            c = south;
        }
    }
}
