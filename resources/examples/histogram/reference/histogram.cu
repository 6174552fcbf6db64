// Hand-written CUDA C++ histogram, the same computation as src/lib.rs: each block counts
// `items` elements per thread into a private histogram in shared memory (atomicAdd on
// __shared__), then adds its non-zero bins to the global one (atomicAdd on global memory).
// `items` is the manifest's tunable (the workbench passes -Ditems=VALUE); 32 without it.
#ifndef items
#define items 32
#endif
#define BINS 256u

extern "C" __global__ void histogram(unsigned int n, const unsigned int *x, unsigned int *bins) {
    __shared__ unsigned int local_bins[BINS];
    // Shared memory starts undefined: zero the private bins first.
    for (unsigned int b = threadIdx.x; b < BINS; b += blockDim.x) {
        local_bins[b] = 0u;
    }
    __syncthreads();
    size_t base = (size_t)blockIdx.x * blockDim.x * items;
    for (unsigned int k = 0; k < items; ++k) {
        size_t i = base + (size_t)k * blockDim.x + threadIdx.x;
        if (i < n) {
            atomicAdd(&local_bins[x[i] % BINS], 1u);
        }
    }
    __syncthreads();
    for (unsigned int b = threadIdx.x; b < BINS; b += blockDim.x) {
        unsigned int count = local_bins[b];
        if (count != 0u) {
            atomicAdd(&bins[b], count);
        }
    }
}
