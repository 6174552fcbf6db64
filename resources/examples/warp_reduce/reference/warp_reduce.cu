// Hand-written CUDA C++ warp reduction, the same computation as src/lib.rs: each block of 256
// threads sums 4096 consecutive elements into partial[blockIdx.x]; each thread first adds its 16
// elements (PER_THREAD loads, BLOCK apart: a warp's load reads 32 consecutive floats), then each
// warp folds its 32 values with __shfl_down_sync (no shared memory, no __syncthreads), lane 0 of
// each warp stores the warp's sum, one __syncthreads, and thread 0 adds the 8 warp sums.
#define BLOCK 256u
#define PER_THREAD 16u
#define PER_BLOCK (PER_THREAD * BLOCK)

extern "C" __global__ void warp_reduce(unsigned int n, const float *x, float *partial) {
    __shared__ float sums[BLOCK / 32u];
    unsigned int t = threadIdx.x;
    size_t first = (size_t)blockIdx.x * PER_BLOCK + t;
    float value = 0.0f;
    unsigned int k = 0;
    // Every element of the block below n (all but the last block): the loads need no test.
    bool full = ((size_t)blockIdx.x + 1u) * PER_BLOCK <= n;
    for (; full && k < PER_THREAD; ++k) {
        value += x[first + (size_t)k * BLOCK];
    }
    // The last block: each load tested (after a full block, k is PER_THREAD: none left).
    for (; k < PER_THREAD; ++k) {
        size_t i = first + (size_t)k * BLOCK;
        if (i < n) {
            value += x[i];
        }
    }
    for (unsigned int offset = warpSize / 2u; offset > 0u; offset /= 2u) {
        value += __shfl_down_sync(0xffffffffu, value, offset);
    }
    if (t % warpSize == 0u) {
        sums[t / warpSize] = value;
    }
    __syncthreads();
    if (t == 0u) {
        float total = 0.0f;
        for (unsigned int k = 0; k < BLOCK / warpSize; ++k) {
            total += sums[k];
        }
        partial[blockIdx.x] = total;
    }
}
