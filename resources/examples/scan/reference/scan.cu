// Hand-written CUDA C++ scan, the same computation as src/lib.rs: the inclusive prefix sum of n
// unsigned ints in two launches. `scan`: each block of 256 threads scans a tile of 512 elements
// (two per thread, then a Hillis-Steele scan of the pair sums in shared memory) and writes the
// tile's total; `scan_add`: each block reduces the totals before its tile and adds them.
#define BLOCK 256u
#define TILE 512u

extern "C" __global__ void scan(unsigned int n, const unsigned int *x, unsigned int *y, unsigned int *sums) {
    __shared__ unsigned int pairs[BLOCK];
    unsigned int t = threadIdx.x;
    unsigned int tile = blockIdx.x;
    size_t i = (size_t)tile * TILE + 2u * t;
    unsigned int a = i < n ? x[i] : 0u;
    unsigned int b = i + 1u < n ? x[i + 1u] : 0u;
    pairs[t] = a + b;
    __syncthreads();
    for (unsigned int offset = 1u; offset < BLOCK; offset *= 2u) {
        unsigned int sum = pairs[t];
        if (t >= offset) {
            sum += pairs[t - offset];
        }
        __syncthreads();  // every read of this step before any write
        pairs[t] = sum;
        __syncthreads();
    }
    unsigned int before = t > 0u ? pairs[t - 1u] : 0u;
    if (i < n) {
        y[i] = before + a;
    }
    if (i + 1u < n) {
        y[i + 1u] = before + a + b;
    }
    if (t == BLOCK - 1u) {
        sums[tile] = pairs[t];
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
    size_t i = (size_t)tile * TILE + t;
    if (i < n) {
        y[i] += offset;
    }
    if (i + BLOCK < n) {
        y[i + BLOCK] += offset;
    }
}
