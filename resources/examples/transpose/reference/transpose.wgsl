// Hand-written WGSL transpose, the same computation as src/lib.rs: b (n x m) = a (m x n)^T,
// row-major, one tile x tile block per workgroup of tile x block_rows invocations, through a padded
// tile in workgroup memory.
struct Params {
    m: u32,
    n: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> b: array<f32>;

// The manifest's tunables: the tile edge (the workgroup's width), its height, and the padding
// after each tile row (1: a tile column spans every bank; 0: every element of it in one bank).
override tile: u32 = 32u;
override block_rows: u32 = 8u;
override tile_pad: u32 = 1u;

// Room for the largest tile and padding the manifest allows (32 x 33).
var<workgroup> t: array<f32, 1056>;

@compute @workgroup_size(tile, block_rows)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let x = lid.x;
    let stride = tile + tile_pad;
    let col0 = wid.x * tile;
    let row0 = wid.y * tile;
    for (var j = lid.y; j < tile; j += block_rows) {
        let r = row0 + j;
        let c = col0 + x;
        if (r < params.m && c < params.n) {
            t[j * stride + x] = a[r * params.n + c];
        }
    }
    workgroupBarrier();
    for (var j = lid.y; j < tile; j += block_rows) {
        let r = col0 + j;  // element (row0 + x, col0 + j) of a
        let c = row0 + x;
        if (r < params.n && c < params.m) {
            b[r * params.m + c] = t[x * stride + j];
        }
    }
}
