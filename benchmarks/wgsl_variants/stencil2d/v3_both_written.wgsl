// V3: v0_loop with both V1's and V2's changes: the tile's four whole load passes and the four
// points written out, no loop left (the form of the .cu after nvcc unrolls it). Why: naga bounds
// every WGSL loop with its own counter (force_loop_bounding), which kept the NVIDIA driver from
// unrolling warp_reduce's load loop (benchmarks/results/wgsl-variants-warp_reduce-h100/) and
// matmul's and reduction's before it; nvcc unrolls the .cu's. Bit-identical output. Only the
// default block_size_y 4 and tile_size_y 4 are valid here.

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
    // The whole passes written out for the default geometry (block_size_y 4, rows 18): ty0 = 0, 4,
    // 8 and 12 literal; the partial pass below starts at ty0 = 16, where the loop left it.
    {
        let ty = 0u + lid.y;
        let gy = y0 + ty - 1u;
        var value = 0.0;
        if (gx < params.width && gy < params.height) {
            value = x_old[gy * params.width + gx];
        }
        tile[ty * row + lid.x + 1u] = value;
    }
    {
        let ty = 4u + lid.y;
        let gy = y0 + ty - 1u;
        var value = 0.0;
        if (gx < params.width && gy < params.height) {
            value = x_old[gy * params.width + gx];
        }
        tile[ty * row + lid.x + 1u] = value;
    }
    {
        let ty = 8u + lid.y;
        let gy = y0 + ty - 1u;
        var value = 0.0;
        if (gx < params.width && gy < params.height) {
            value = x_old[gy * params.width + gx];
        }
        tile[ty * row + lid.x + 1u] = value;
    }
    {
        let ty = 12u + lid.y;
        let gy = y0 + ty - 1u;
        var value = 0.0;
        if (gx < params.width && gy < params.height) {
            value = x_old[gy * params.width + gx];
        }
        tile[ty * row + lid.x + 1u] = value;
    }
    let ty0 = 16u;
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
        // r = 0 .. 3 written out for the default tile_size_y 4: each point's body as the loop's, with
        // r literal (the same reads, the same additions in the same order).
        {
            let y = first;
            let a = at;
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
        {
            let y = first + 1u;
            let a = at + row;
            let south = tile[a + row];
            let mean = (c + tile[a - 1u] + tile[a + 1u] + south + north) / 5.0;
            if (y < params.height) {
                let inside = x > 0u && y > 0u && x + 1u < params.width && y + 1u < params.height;
                x_new[y * params.width + x] = select(c, mean, inside);  // the boundary keeps its value
            }
            north = c;
            c = south;
        }
        {
            let y = first + 2u;
            let a = at + 2u * row;
            let south = tile[a + row];
            let mean = (c + tile[a - 1u] + tile[a + 1u] + south + north) / 5.0;
            if (y < params.height) {
                let inside = x > 0u && y > 0u && x + 1u < params.width && y + 1u < params.height;
                x_new[y * params.width + x] = select(c, mean, inside);  // the boundary keeps its value
            }
            north = c;
            c = south;
        }
        {
            let y = first + 3u;
            let a = at + 3u * row;
            let south = tile[a + row];
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
