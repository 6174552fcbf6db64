// Hand-written CUDA C++ scan, the same computation as src/lib.rs: the inclusive prefix sum of n
// unsigned ints in two launches. `scan`: each block of 256 threads scans a tile of 2304 elements
// as CUB's BlockLoad / BlockScan (raking, reduce-then-scan) / BlockStore do: 9 per thread, read
// striped into shared memory, each thread sums its run of 9, 32 threads rake the 256 run totals,
// each raker sums the rake totals before its own and gives its 8 runs their offsets, each thread
// scans its run in place from its offset, the tile goes out striped (a copy); it writes the tile's
// total too. `scan_add`: each block reduces the totals before its tile (partial sums in rounds of
// 256, raked by 32 threads, as `scan` rakes its runs) and adds them to its 2304 elements.
#define BLOCK 256u
#define ITEMS 9u  // odd: a warp's runs (t * ITEMS + j, one j at a time) hit 32 different banks
#define TILE (ITEMS * BLOCK)
#define RAKERS 32u
#define RAKE (BLOCK / RAKERS)

extern "C" __global__ void scan(unsigned int n, const unsigned int *x, unsigned int *y, unsigned int *sums) {
    __shared__ unsigned int items[TILE];
    __shared__ unsigned int runs[BLOCK];
    __shared__ unsigned int rakes[RAKERS];
    unsigned int t = threadIdx.x;
    unsigned int tile = blockIdx.x;
    size_t base = (size_t)tile * TILE;
    // Striped: in round k the threads read BLOCK consecutive elements (coalesced).
    for (unsigned int k = 0u; k < ITEMS; k++) {
        size_t i = base + k * BLOCK + t;
        items[k * BLOCK + t] = i < n ? x[i] : 0u;
    }
    __syncthreads();
    // Thread t's run of ITEMS consecutive elements: its total (the run is scanned after the rake,
    // from its offset: reduce, then scan).
    unsigned int run = 0u;
    for (unsigned int j = 0u; j < ITEMS; j++) {
        run += items[t * ITEMS + j];
    }
    runs[t] = run;
    __syncthreads();
    if (t < RAKERS) {
        unsigned int rake = 0u;
        for (unsigned int j = 0u; j < RAKE; j++) {
            rake += runs[t * RAKE + j];
        }
        rakes[t] = rake;
    }
    __syncthreads();
    if (t < RAKERS) {
        // The rakes before t's, then run by run (raker t alone touches runs[t * RAKE ..][.. RAKE]).
        unsigned int before = 0u;
        for (unsigned int r = 0u; r < RAKERS; r++) {
            unsigned int rake = rakes[r];  // every rake read, those from t's on counted as 0
            before += r < t ? rake : 0u;
        }
        for (unsigned int j = 0u; j < RAKE; j++) {
            unsigned int run = runs[t * RAKE + j];
            runs[t * RAKE + j] = before;
            before += run;
        }
        if (t == RAKERS - 1u) {
            sums[tile] = before;  // the last raker's total is the tile's
        }
    }
    __syncthreads();
    // Thread t's run scanned in place from its offset (thread t alone has touched
    // items[t * ITEMS ..][.. ITEMS] since the first barrier).
    run = runs[t];
    for (unsigned int j = 0u; j < ITEMS; j++) {
        run += items[t * ITEMS + j];
        items[t * ITEMS + j] = run;
    }
    __syncthreads();
    // Striped out, a copy (coalesced).
    for (unsigned int k = 0u; k < ITEMS; k++) {
        size_t i = base + k * BLOCK + t;
        if (i < n) {
            y[i] = items[k * BLOCK + t];
        }
    }
}

extern "C" __global__ void scan_add(unsigned int n, const unsigned int *sums, unsigned int *y) {
    __shared__ unsigned int total[BLOCK];
    unsigned int t = threadIdx.x;
    unsigned int tile = blockIdx.x;
    // The totals before this tile, in rounds of BLOCK consecutive ones (one each), then raked: 32
    // threads add 8 of the 256 partial sums each (thread t those at t, t + 32, ...: 32 banks), and
    // thread 0 adds the 32 rake totals. Three barriers.
    unsigned int part = 0u;
    for (unsigned int round = 0u; round < tile; round += BLOCK) {
        if (round + t < tile) {
            part += sums[round + t];
        }
    }
    total[t] = part;
    __syncthreads();
    if (t < RAKERS) {
        unsigned int rake = 0u;
        for (unsigned int j = 0u; j < RAKE; j++) {
            rake += total[t + j * RAKERS];  // thread t alone reads these and writes total[t]
        }
        total[t] = rake;
    }
    __syncthreads();
    if (t == 0u) {
        unsigned int offset = 0u;
        for (unsigned int r = 0u; r < RAKERS; r++) {
            offset += total[r];
        }
        total[0] = offset;
    }
    __syncthreads();
    unsigned int offset = total[0];
    size_t base = (size_t)tile * TILE;
    for (unsigned int k = 0u; k < ITEMS; k++) {
        size_t i = base + k * BLOCK + t;
        if (i < n) {
            y[i] += offset;
        }
    }
}
