// Hand-written WGSL 5-point stencil, the same computation as src/lib.rs: Kernel Tuner's tutorial
// kernel (x_new = (c + w + e + s + n) / 5 on the interior) with the workgroup's block and a
// one-point halo staged in workgroup memory first, and the boundary copied.
struct Params {
    width: u32,
    height: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x_old: array<f32>;
@group(0) @binding(2) var<storage, read_write> x_new: array<f32>;

// The manifest's tunables (Kernel Tuner's names): the workgroup's width and height.
override block_size_x: u32 = 32u;
override block_size_y: u32 = 8u;

// Room for the largest block and halo the manifest allows ((64 + 2) x (16 + 2)).
var<workgroup> tile: array<f32, 1188>;

@compute @workgroup_size(block_size_x, block_size_y)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let row = block_size_x + 2u;
    let x0 = wid.x * block_size_x;
    let y0 = wid.y * block_size_y;
    for (var k = lid.y * block_size_x + lid.x; k < row * (block_size_y + 2u); k += block_size_x * block_size_y) {
        let tx = k % row;
        let ty = k / row;
        var value = 0.0;
        if (x0 + tx >= 1u && y0 + ty >= 1u && x0 + tx - 1u < params.width && y0 + ty - 1u < params.height) {
            value = x_old[(y0 + ty - 1u) * params.width + x0 + tx - 1u];
        }
        tile[k] = value;
    }
    workgroupBarrier();
    let x = x0 + lid.x;
    let y = y0 + lid.y;
    if (x < params.width && y < params.height) {
        let at = (lid.y + 1u) * row + lid.x + 1u;
        let c = tile[at];
        var value = c;  // the boundary keeps its value
        if (x > 0u && y > 0u && x + 1u < params.width && y + 1u < params.height) {
            value = (c + tile[at - 1u] + tile[at + 1u] + tile[at + row] + tile[at - row]) / 5.0;
        }
        x_new[y * params.width + x] = value;
    }
}
