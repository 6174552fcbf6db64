//! Plain Rust versions of the bundled examples' computations, for `benchmarks/cpu_native.py`: what
//! a programmer would write for the CPU without GPU semantics (loops over slices, no workgroups,
//! no barriers), each with the entry name and arguments of the example's cpu entry (without the
//! launch record), so the workbench's cpu runtime runs them as a plain cdylib. `NAME_cpu` runs on
//! one thread; `NAME_threads` splits the outer loop over the cores with `std::thread::scope`.
//!
//! The same results as the kernels (the benchmark checks them against the example's cpu backend
//! with the manifest's tolerances); float sums may associate differently (8 partial sums, so
//! LLVM vectorises them, as a hand-written CPU loop would).
#![allow(clippy::missing_safety_doc, clippy::too_many_arguments)]

use std::slice::{from_raw_parts, from_raw_parts_mut};

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `f(lo, hi)` over `0..n` in one contiguous range per core.
fn split<F: Fn(usize, usize) + Sync>(n: usize, f: F) {
    let parts = cores().min(n.max(1));
    let step = n.div_ceil(parts);
    std::thread::scope(|s| {
        for p in 0..parts {
            let f = &f;
            s.spawn(move || f((p * step).min(n), ((p + 1) * step).min(n)));
        }
    });
}

/// A pointer that may cross threads (each thread writes its own range).
#[derive(Clone, Copy)]
struct Ptr<T>(*mut T);
unsafe impl<T> Send for Ptr<T> {}
unsafe impl<T> Sync for Ptr<T> {}

/// The sum of `x` in eight running sums (vectorised), then their sum.
#[inline(always)]
fn sum8(x: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        for k in 0..8 {
            acc[k] += c[k];
        }
    }
    let mut total = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for v in chunks.remainder() {
        total += v;
    }
    total
}

// ---------------------------------------------------------------- saxpy
#[no_mangle]
pub unsafe extern "C" fn saxpy_cpu(n: u32, a: f32, x: *const f32, y: *mut f32) {
    let (x, y) = (from_raw_parts(x, n as usize), from_raw_parts_mut(y, n as usize));
    for (y, x) in y.iter_mut().zip(x) {
        *y = a * x + *y;
    }
}

#[no_mangle]
pub unsafe extern "C" fn saxpy_threads(n: u32, a: f32, x: *const f32, y: *mut f32) {
    let (x, y) = (Ptr(x as *mut f32), Ptr(y));
    split(n as usize, |lo, hi| {
        let _ = (&x, &y);
        saxpy_cpu((hi - lo) as u32, a, x.0.add(lo), y.0.add(lo))
    });
}

// ---------------------------------------------------------------- reduction
// The example's defaults (vector 4, max_groups 2048): groups = min(ceil(n / 2048), 2048);
// partial[b] sums the 2048-element chunks b, b + groups, b + 2·groups, …
const RED_CHUNK: usize = 2048;
const RED_MAX_GROUPS: usize = 2048;

unsafe fn reduction_range(n: usize, x: &[f32], partial: Ptr<f32>, lo: usize, hi: usize) {
    let groups = n.div_ceil(RED_CHUNK).min(RED_MAX_GROUPS);
    for b in lo..hi {
        let mut sum = 0.0f32;
        let mut base = b * RED_CHUNK;
        while base < n {
            sum += sum8(&x[base..(base + RED_CHUNK).min(n)]);
            base += groups * RED_CHUNK;
        }
        *partial.0.add(b) = sum;
    }
}

#[no_mangle]
pub unsafe extern "C" fn reduction_cpu(n: u32, x: *const f32, partial: *mut f32) {
    let n = n as usize;
    let groups = n.div_ceil(RED_CHUNK).min(RED_MAX_GROUPS);
    reduction_range(n, from_raw_parts(x, n), Ptr(partial), 0, groups);
}

#[no_mangle]
pub unsafe extern "C" fn reduction_threads(n: u32, x: *const f32, partial: *mut f32) {
    let n = n as usize;
    let (x, partial) = (Ptr(x as *mut f32), Ptr(partial));
    let groups = n.div_ceil(RED_CHUNK).min(RED_MAX_GROUPS);
    split(groups, |lo, hi| {
        let _ = (&x, &partial);
        reduction_range(n, from_raw_parts(x.0, n), partial, lo, hi)
    });
}

// ---------------------------------------------------------------- matmul
// The naive i-j-k loop with a fused multiply-add per step (k ascending, as the kernel).
unsafe fn matmul_rows(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: Ptr<f32>, lo: usize, hi: usize) {
    let _ = m;
    for i in lo..hi {
        for j in 0..n {
            let mut acc = 0.0f32;
            for t in 0..k {
                acc = a[i * k + t].mul_add(b[t * n + j], acc);
            }
            *c.0.add(i * n + j) = acc;
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn matmul_cpu(m: u32, n: u32, k: u32, a: *const f32, b: *const f32, c: *mut f32) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    matmul_rows(m, n, k, from_raw_parts(a, m * k), from_raw_parts(b, k * n), Ptr(c), 0, m);
}

#[no_mangle]
pub unsafe extern "C" fn matmul_threads(m: u32, n: u32, k: u32, a: *const f32, b: *const f32, c: *mut f32) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let (a, b, c) = (Ptr(a as *mut f32), Ptr(b as *mut f32), Ptr(c));
    split(m, |lo, hi| {
        let _ = (&a, &b, &c);
        matmul_rows(m, n, k, from_raw_parts(a.0, m * k), from_raw_parts(b.0, k * n), c, lo, hi)
    });
}

// ---------------------------------------------------------------- softmax
unsafe fn softmax_rows(cols: usize, x: *const f32, y: Ptr<f32>, lo: usize, hi: usize) {
    for r in lo..hi {
        let row = from_raw_parts(x.add(r * cols), cols);
        let out = from_raw_parts_mut(y.0.add(r * cols), cols);
        let max = row.iter().fold(f32::NEG_INFINITY, |m, &v| if v > m { v } else { m });
        let mut sum = 0.0f32;
        for &v in row {
            sum += (v - max).exp();
        }
        for (o, &v) in out.iter_mut().zip(row) {
            *o = (v - max).exp() / sum;
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn softmax_cpu(rows: u32, cols: u32, x: *const f32, y: *mut f32) {
    softmax_rows(cols as usize, x, Ptr(y), 0, rows as usize);
}

#[no_mangle]
pub unsafe extern "C" fn softmax_threads(rows: u32, cols: u32, x: *const f32, y: *mut f32) {
    let (x, y) = (Ptr(x as *mut f32), Ptr(y));
    split(rows as usize, |lo, hi| {
        let _ = (&x, &y);
        softmax_rows(cols as usize, x.0, y, lo, hi)
    });
}

// ---------------------------------------------------------------- bitonic (one compare-exchange step)
unsafe fn bitonic_range(n: u32, j: u32, k: u32, data: Ptr<u32>, lo: u32, hi: u32) {
    for i in lo..hi {
        let l = i ^ j;
        if l > i && l < n {
            let (a, b) = (*data.0.add(i as usize), *data.0.add(l as usize));
            let ascending = i & k == 0;
            if (ascending && a > b) || (!ascending && a < b) {
                *data.0.add(i as usize) = b;
                *data.0.add(l as usize) = a;
            }
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn bitonic_cpu(n: u32, j: u32, k: u32, data: *mut u32) {
    bitonic_range(n, j, k, Ptr(data), 0, n);
}

#[no_mangle]
pub unsafe extern "C" fn bitonic_threads(n: u32, j: u32, k: u32, data: *mut u32) {
    // Ranges aligned to 2·j: each pair (i, i ^ j) falls in one range.
    let data = Ptr(data);
    let block = 2 * j.max(1) as usize;
    let blocks = (n as usize).div_ceil(block);
    split(blocks, |lo, hi| {
        let _ = &data;
        bitonic_range(n, j, k, data, (lo * block).min(n as usize) as u32, (hi * block).min(n as usize) as u32)
    });
}

// ---------------------------------------------------------------- histogram (256 bins, added to `bins`)
fn histogram_of(x: &[u32]) -> [u32; 256] {
    let mut h = [0u32; 256];
    for &v in x {
        h[(v % 256) as usize] += 1;
    }
    h
}

#[no_mangle]
pub unsafe extern "C" fn histogram_cpu(n: u32, x: *const u32, bins: *mut u32) {
    let h = histogram_of(from_raw_parts(x, n as usize));
    let bins = from_raw_parts_mut(bins, 256);
    for (b, c) in bins.iter_mut().zip(h) {
        *b = b.wrapping_add(c);
    }
}

#[no_mangle]
pub unsafe extern "C" fn histogram_threads(n: u32, x: *const u32, bins: *mut u32) {
    let x = from_raw_parts(x, n as usize);
    let parts = std::sync::Mutex::new(Vec::new());
    split(x.len(), |lo, hi| {
        let h = histogram_of(&x[lo..hi]);
        parts.lock().unwrap().push(h);
    });
    let bins = from_raw_parts_mut(bins, 256);
    for h in parts.into_inner().unwrap() {
        for (b, c) in bins.iter_mut().zip(h) {
            *b = b.wrapping_add(c);
        }
    }
}

// ---------------------------------------------------------------- scan (tiles of 2304: inclusive scan, tile sums; then tile offsets)
const SCAN_TILE: usize = 2304;

unsafe fn scan_tiles(n: usize, x: &[u32], y: Ptr<u32>, sums: Ptr<u32>, lo: usize, hi: usize) {
    for tile in lo..hi {
        let mut run = 0u32;
        for i in tile * SCAN_TILE..((tile + 1) * SCAN_TILE).min(n) {
            run = run.wrapping_add(x[i]);
            *y.0.add(i) = run;
        }
        *sums.0.add(tile) = run;
    }
}

#[no_mangle]
pub unsafe extern "C" fn scan_cpu(n: u32, x: *const u32, y: *mut u32, sums: *mut u32) {
    let n = n as usize;
    scan_tiles(n, from_raw_parts(x, n), Ptr(y), Ptr(sums), 0, n.div_ceil(SCAN_TILE));
}

#[no_mangle]
pub unsafe extern "C" fn scan_threads(n: u32, x: *const u32, y: *mut u32, sums: *mut u32) {
    let n = n as usize;
    let (x, y, sums) = (Ptr(x as *mut u32), Ptr(y), Ptr(sums));
    split(n.div_ceil(SCAN_TILE), |lo, hi| {
        let _ = (&x, &y, &sums);
        scan_tiles(n, from_raw_parts(x.0, n), y, sums, lo, hi)
    });
}

unsafe fn scan_add_tiles(n: usize, sums: &[u32], y: Ptr<u32>, lo: usize, hi: usize) {
    let mut offset = sums[..lo].iter().fold(0u32, |a, &b| a.wrapping_add(b));
    for tile in lo..hi {
        for i in tile * SCAN_TILE..((tile + 1) * SCAN_TILE).min(n) {
            *y.0.add(i) = (*y.0.add(i)).wrapping_add(offset);
        }
        offset = offset.wrapping_add(sums[tile]);
    }
}

#[no_mangle]
pub unsafe extern "C" fn scan_add_cpu(n: u32, sums: *const u32, y: *mut u32) {
    let n = n as usize;
    let tiles = n.div_ceil(SCAN_TILE);
    scan_add_tiles(n, from_raw_parts(sums, tiles), Ptr(y), 0, tiles);
}

#[no_mangle]
pub unsafe extern "C" fn scan_add_threads(n: u32, sums: *const u32, y: *mut u32) {
    let n = n as usize;
    let tiles = n.div_ceil(SCAN_TILE);
    let (sums, y) = (Ptr(sums as *mut u32), Ptr(y));
    split(tiles, |lo, hi| {
        let _ = (&sums, &y);
        scan_add_tiles(n, from_raw_parts(sums.0, tiles), y, lo, hi)
    });
}

// ---------------------------------------------------------------- stencil2d (5-point mean inside, boundary kept)
unsafe fn stencil_rows(w: usize, h: usize, x: &[f32], out: Ptr<f32>, lo: usize, hi: usize) {
    for y in lo..hi {
        for xi in 0..w {
            let c = x[y * w + xi];
            let v = if xi > 0 && y > 0 && xi + 1 < w && y + 1 < h {
                (c + x[y * w + xi - 1] + x[y * w + xi + 1] + x[(y + 1) * w + xi] + x[(y - 1) * w + xi]) / 5.0
            } else {
                c
            };
            *out.0.add(y * w + xi) = v;
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn stencil2d_cpu(width: u32, height: u32, x_old: *const f32, x_new: *mut f32) {
    let (w, h) = (width as usize, height as usize);
    stencil_rows(w, h, from_raw_parts(x_old, w * h), Ptr(x_new), 0, h);
}

#[no_mangle]
pub unsafe extern "C" fn stencil2d_threads(width: u32, height: u32, x_old: *const f32, x_new: *mut f32) {
    let (w, h) = (width as usize, height as usize);
    let (x, out) = (Ptr(x_old as *mut f32), Ptr(x_new));
    split(h, |lo, hi| {
        let _ = (&x, &out);
        stencil_rows(w, h, from_raw_parts(x.0, w * h), out, lo, hi)
    });
}

// ---------------------------------------------------------------- transpose (b = aᵀ, a is m × n)
unsafe fn transpose_rows(m: usize, n: usize, a: &[f32], b: Ptr<f32>, lo: usize, hi: usize) {
    for r in lo..hi {
        for c in 0..n {
            *b.0.add(c * m + r) = a[r * n + c];
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn transpose_cpu(m: u32, n: u32, a: *const f32, b: *mut f32) {
    let (m, n) = (m as usize, n as usize);
    transpose_rows(m, n, from_raw_parts(a, m * n), Ptr(b), 0, m);
}

#[no_mangle]
pub unsafe extern "C" fn transpose_threads(m: u32, n: u32, a: *const f32, b: *mut f32) {
    let (m, n) = (m as usize, n as usize);
    let (a, b) = (Ptr(a as *mut f32), Ptr(b));
    split(m, |lo, hi| {
        let _ = (&a, &b);
        transpose_rows(m, n, from_raw_parts(a.0, m * n), b, lo, hi)
    });
}

// ---------------------------------------------------------------- warp_reduce (partial[b] = sum of x[4096·b .. 4096·b + 4096])
unsafe fn warp_blocks(n: usize, x: &[f32], partial: Ptr<f32>, lo: usize, hi: usize) {
    for b in lo..hi {
        *partial.0.add(b) = sum8(&x[b * 4096..((b + 1) * 4096).min(n)]);
    }
}

#[no_mangle]
pub unsafe extern "C" fn warp_reduce_cpu(n: u32, x: *const f32, partial: *mut f32) {
    let n = n as usize;
    warp_blocks(n, from_raw_parts(x, n), Ptr(partial), 0, n.div_ceil(4096));
}

#[no_mangle]
pub unsafe extern "C" fn warp_reduce_threads(n: u32, x: *const f32, partial: *mut f32) {
    let n = n as usize;
    let (x, partial) = (Ptr(x as *mut f32), Ptr(partial));
    split(n.div_ceil(4096), |lo, hi| {
        let _ = (&x, &partial);
        warp_blocks(n, from_raw_parts(x.0, n), partial, lo, hi)
    });
}
