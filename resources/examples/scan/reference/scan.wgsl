// Hand-written WGSL scan, pass 1 (src/lib.rs's scan_body): each workgroup of 256 invocations
// scans a tile of 2304 u32 (9 per invocation) into y, and writes the tile's total to sums[tile].
// The tile is read striped into workgroup memory (round k: element k * 256 + t by invocation t),
// each invocation sums its run of 9 consecutive elements there, 32 invocations rake the 256 run
// totals (8 each), each raker sums the rake totals before its own and gives its 8 runs their
// offsets, each invocation scans its run in place from its offset, and the tile goes out striped,
// a copy (CUB's BlockLoad / raking reduce-then-scan BlockScan / BlockStore). Pass 2 is
// scan_add.wgsl.
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

// Element e of a run: the running sum so far (from the run's offset), stored in place.
fn scan_item(run: u32, e: u32) -> u32 {
    let sum = run + items[e];
    items[e] = sum;
    return sum;
}

// Rake r's total, added to `before` where r comes before raker t's rake.
fn rake_before(before: u32, t: u32, r: u32) -> u32 {
    return select(before, before + rakes[r], r < t);
}

// Run j of raker t's 8: its offset in the tile (in place: raker t alone touches
// runs[t * 8u ..][.. 8]).
fn rake_item(before: u32, t: u32, j: u32) -> u32 {
    let e = t * 8u + j;
    let run = runs[e];
    runs[e] = before;
    return before + run;
}

// Round k of the striped write: a copy of the tile as the invocations left it.
fn store(base: u32, k: u32, t: u32) {
    let i = base + k * 256u + t;
    if (i < params.n) {
        y[i] = items[k * 256u + t];
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
    // Invocation t's run of 9 consecutive elements: its total (the run is scanned after the
    // rake, from its offset: reduce, then scan).
    let r = t * 9u;
    runs[t] = items[r] + items[r + 1u] + items[r + 2u] + items[r + 3u] + items[r + 4u]
        + items[r + 5u] + items[r + 6u] + items[r + 7u] + items[r + 8u];
    workgroupBarrier();
    if (t < 32u) {
        let rake = runs[t * 8u] + runs[t * 8u + 1u] + runs[t * 8u + 2u] + runs[t * 8u + 3u]
            + runs[t * 8u + 4u] + runs[t * 8u + 5u] + runs[t * 8u + 6u] + runs[t * 8u + 7u];
        rakes[t] = rake;
    }
    workgroupBarrier();
    if (t < 32u) {
        var before = rake_before(0u, t, 0u);
        before = rake_before(before, t, 1u);
        before = rake_before(before, t, 2u);
        before = rake_before(before, t, 3u);
        before = rake_before(before, t, 4u);
        before = rake_before(before, t, 5u);
        before = rake_before(before, t, 6u);
        before = rake_before(before, t, 7u);
        before = rake_before(before, t, 8u);
        before = rake_before(before, t, 9u);
        before = rake_before(before, t, 10u);
        before = rake_before(before, t, 11u);
        before = rake_before(before, t, 12u);
        before = rake_before(before, t, 13u);
        before = rake_before(before, t, 14u);
        before = rake_before(before, t, 15u);
        before = rake_before(before, t, 16u);
        before = rake_before(before, t, 17u);
        before = rake_before(before, t, 18u);
        before = rake_before(before, t, 19u);
        before = rake_before(before, t, 20u);
        before = rake_before(before, t, 21u);
        before = rake_before(before, t, 22u);
        before = rake_before(before, t, 23u);
        before = rake_before(before, t, 24u);
        before = rake_before(before, t, 25u);
        before = rake_before(before, t, 26u);
        before = rake_before(before, t, 27u);
        before = rake_before(before, t, 28u);
        before = rake_before(before, t, 29u);
        before = rake_before(before, t, 30u);
        before = rake_before(before, t, 31u);
        before = rake_item(before, t, 0u);
        before = rake_item(before, t, 1u);
        before = rake_item(before, t, 2u);
        before = rake_item(before, t, 3u);
        before = rake_item(before, t, 4u);
        before = rake_item(before, t, 5u);
        before = rake_item(before, t, 6u);
        before = rake_item(before, t, 7u);
        if (t == 31u && tile < arrayLength(&sums)) {
            sums[tile] = before;  // the last raker's total is the tile's
        }
    }
    workgroupBarrier();
    // Invocation t's run scanned in place from its offset (invocation t alone has touched
    // items[r ..][.. 9] since the first barrier).
    var run = scan_item(runs[t], r);
    run = scan_item(run, r + 1u);
    run = scan_item(run, r + 2u);
    run = scan_item(run, r + 3u);
    run = scan_item(run, r + 4u);
    run = scan_item(run, r + 5u);
    run = scan_item(run, r + 6u);
    run = scan_item(run, r + 7u);
    run = scan_item(run, r + 8u);
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
