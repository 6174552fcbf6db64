// Hand-written CUDA C++ scan, the same computation as src/lib.rs: the inclusive prefix sum of n
// unsigned ints in two launches. `scan`: each block of 256 threads scans a tile of 2304 elements
// (9 per thread: read striped into shared memory, each thread's run of 9 scanned serially, 32
// threads rake the 256 run totals, one thread scans the 32 rake totals, the tile goes out striped
// with its run's and rake's offsets added) and writes the tile's total; `scan_add`: each block
// reduces the totals before its tile and adds them to its 2304 elements.
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
    unsigned int run = 0u;
    for (unsigned int j = 0u; j < ITEMS; j++) {
        run += items[t * ITEMS + j];
        items[t * ITEMS + j] = run;
    }
    runs[t] = run;
    __syncthreads();
    if (t < RAKERS) {
        // Raker t alone reads and writes runs[t * RAKE ..][.. RAKE]: in place, exclusive.
        unsigned int rake = 0u;
        for (unsigned int j = 0u; j < RAKE; j++) {
            unsigned int run = runs[t * RAKE + j];
            runs[t * RAKE + j] = rake;
            rake += run;
        }
        rakes[t] = rake;
    }
    __syncthreads();
    if (t == 0u) {
        // Exclusive: rakes[r] becomes the total of the rakes before r.
        unsigned int total = 0u;
        for (unsigned int r = 0u; r < RAKERS; r++) {
            unsigned int rake = rakes[r];
            rakes[r] = total;
            total += rake;
        }
        sums[tile] = total;
    }
    __syncthreads();
    // Element e: its run's scan, plus the offsets of its run (e / ITEMS) and of that run's rake.
    for (unsigned int k = 0u; k < ITEMS; k++) {
        size_t i = base + k * BLOCK + t;
        if (i < n) {
            unsigned int e = k * BLOCK + t;
            unsigned int run = e / ITEMS;
            y[i] = items[e] + runs[run] + rakes[run / RAKE];
        }
    }
}

extern "C" __global__ void scan_add(unsigned int n, const unsigned int *sums, unsigned int *y) {
    __shared__ unsigned int total[BLOCK];
    unsigned int t = threadIdx.x;
    unsigned int tile = blockIdx.x;
    unsigned int part = 0u;
    for (unsigned int k = t; k < tile; k += BLOCK) {
        part += sums[k];
    }
    total[t] = part;
    __syncthreads();
    for (unsigned int stride = BLOCK / 2u; stride > 0u; stride >>= 1) {
        if (t < stride) {
            total[t] += total[t + stride];
        }
        __syncthreads();
    }
    unsigned int offset = total[0];
    size_t base = (size_t)tile * TILE;
    for (unsigned int k = 0u; k < ITEMS; k++) {
        size_t i = base + k * BLOCK + t;
        if (i < n) {
            y[i] += offset;
        }
    }
}
