// Hand-written CUDA C++ warp reduction, the same computation as src/lib.rs: each block of 256
// threads sums 512 consecutive elements into partial[blockIdx.x]; each warp folds its 32 values
// with __shfl_down_sync (no shared memory, no __syncthreads), lane 0 of each warp stores the
// warp's sum, one __syncthreads, and thread 0 adds the 8 warp sums.
#define BLOCK 256u

extern "C" __global__ void warp_reduce(unsigned int n, const float *x, float *partial) {
    __shared__ float sums[BLOCK / 32u];
    unsigned int t = threadIdx.x;
    size_t i = (size_t)blockIdx.x * 2u * BLOCK + t;
    float value = (i < n ? x[i] : 0.0f) + (i + BLOCK < n ? x[i + BLOCK] : 0.0f);
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
