// Hand-written WGSL scan, pass 1 (src/lib.rs's scan_body): each workgroup of 256 invocations
// scans a tile of 2304 u32 (9 per invocation) into y, and writes the tile's total to sums[tile].
// The tile is read striped into workgroup memory (round k: element k * 256 + t by invocation t),
// each invocation scans its run of 9 consecutive elements there, 32 invocations rake the 256 run
// totals (8 each), one scans the 32 rake totals, and the tile goes out striped, each element with
// the offsets of its run and rake added. Pass 2 is scan_add.wgsl.
//
// The fixed-count loops are written out (a call per round), as nvcc unrolls reference/scan.cu's:
// naga, wgpu's WGSL compiler, gives every loop a 64-bit iteration counter (force_loop_bounding),
// which kept NVIDIA's Vulkan driver from unrolling the reduction's and matmul's loops
// (benchmarks/results/wgsl-spirv/README.md). The loop form is kept as
// benchmarks/wgsl_variants/scan/v0_loop.wgsl.
struct Params {
    n: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@group(0) @binding(3) var<storage, read_write> sums: array<u32>;

// 9 elements an invocation: odd, so a warp's runs (t * 9 + j, one j at a time) hit 32 banks.
var<workgroup> items: array<u32, 2304>;
var<workgroup> runs: array<u32, 256>;
var<workgroup> rakes: array<u32, 32>;

// Round k of the striped read: element base + k * 256 + t, 0 past n.
fn load(base: u32, k: u32, t: u32) {
    let i = base + k * 256u + t;
    var v = 0u;
    if (i < params.n) {
        v = x[i];
    }
    items[k * 256u + t] = v;
}

// Element j of invocation t's run: the running sum so far, stored in place.
fn scan_item(run: u32, t: u32, j: u32) -> u32 {
    let e = t * 9u + j;
    let sum = run + items[e];
    items[e] = sum;
    return sum;
}

// Run j of raker t's 8: its offset within the rake (an exclusive scan, in place: raker t alone
// touches runs[t * 8u ..][.. 8]).
fn rake_item(rake: u32, t: u32, j: u32) -> u32 {
    let e = t * 8u + j;
    let run = runs[e];
    runs[e] = rake;
    return rake + run;
}

// Rake r's total becomes the total of the rakes before it (an exclusive scan, one rake a call).
fn rake_exclusive(total: u32, r: u32) -> u32 {
    let rake = rakes[r];
    rakes[r] = total;
    return total + rake;
}

// Round k of the striped write: element e's run scan plus the offsets of its run (e / 9) and
// of that run's rake.
fn store(base: u32, k: u32, t: u32) {
    let i = base + k * 256u + t;
    if (i < params.n) {
        let e = k * 256u + t;
        let run = e / 9u;
        y[i] = items[e] + runs[run] + rakes[run / 8u];
    }
}

// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large grids on
// wgpu"); spare workgroups (tile >= ceil(n / 2304)) write nothing.
@compute @workgroup_size(256)
fn scan(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let t = lid.x;
    let tile = wid.x + groups.x * (wid.y + groups.y * wid.z);
    let base = tile * 2304u;
    load(base, 0u, t);
    load(base, 1u, t);
    load(base, 2u, t);
    load(base, 3u, t);
    load(base, 4u, t);
    load(base, 5u, t);
    load(base, 6u, t);
    load(base, 7u, t);
    load(base, 8u, t);
    workgroupBarrier();
    var run = scan_item(0u, t, 0u);
    run = scan_item(run, t, 1u);
    run = scan_item(run, t, 2u);
    run = scan_item(run, t, 3u);
    run = scan_item(run, t, 4u);
    run = scan_item(run, t, 5u);
    run = scan_item(run, t, 6u);
    run = scan_item(run, t, 7u);
    run = scan_item(run, t, 8u);
    runs[t] = run;
    workgroupBarrier();
    if (t < 32u) {
        var rake = rake_item(0u, t, 0u);
        rake = rake_item(rake, t, 1u);
        rake = rake_item(rake, t, 2u);
        rake = rake_item(rake, t, 3u);
        rake = rake_item(rake, t, 4u);
        rake = rake_item(rake, t, 5u);
        rake = rake_item(rake, t, 6u);
        rake = rake_item(rake, t, 7u);
        rakes[t] = rake;
    }
    workgroupBarrier();
    if (t == 0u) {
        var total = rake_exclusive(0u, 0u);
        total = rake_exclusive(total, 1u);
        total = rake_exclusive(total, 2u);
        total = rake_exclusive(total, 3u);
        total = rake_exclusive(total, 4u);
        total = rake_exclusive(total, 5u);
        total = rake_exclusive(total, 6u);
        total = rake_exclusive(total, 7u);
        total = rake_exclusive(total, 8u);
        total = rake_exclusive(total, 9u);
        total = rake_exclusive(total, 10u);
        total = rake_exclusive(total, 11u);
        total = rake_exclusive(total, 12u);
        total = rake_exclusive(total, 13u);
        total = rake_exclusive(total, 14u);
        total = rake_exclusive(total, 15u);
        total = rake_exclusive(total, 16u);
        total = rake_exclusive(total, 17u);
        total = rake_exclusive(total, 18u);
        total = rake_exclusive(total, 19u);
        total = rake_exclusive(total, 20u);
        total = rake_exclusive(total, 21u);
        total = rake_exclusive(total, 22u);
        total = rake_exclusive(total, 23u);
        total = rake_exclusive(total, 24u);
        total = rake_exclusive(total, 25u);
        total = rake_exclusive(total, 26u);
        total = rake_exclusive(total, 27u);
        total = rake_exclusive(total, 28u);
        total = rake_exclusive(total, 29u);
        total = rake_exclusive(total, 30u);
        total = rake_exclusive(total, 31u);
        if (tile < arrayLength(&sums)) {
            sums[tile] = total;
        }
    }
    workgroupBarrier();
    store(base, 0u, t);
    store(base, 1u, t);
    store(base, 2u, t);
    store(base, 3u, t);
    store(base, 4u, t);
    store(base, 5u, t);
    store(base, 6u, t);
    store(base, 7u, t);
    store(base, 8u, t);
}
