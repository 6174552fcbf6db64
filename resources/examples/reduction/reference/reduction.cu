// Hand-written CUDA C++ block reduction, the same computation as src/lib.rs: each block of 256
// threads sums 512 consecutive elements into partial[blockIdx.x], folding in the same order.
extern "C" __global__ void reduction(unsigned int n, const float *x, float *partial) {
    __shared__ float scratch[256];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * 512u + tid;
    float lo = i < n ? x[i] : 0.0f;
    float hi = i + 256u < n ? x[i + 256u] : 0.0f;
    scratch[tid] = lo + hi;
    __syncthreads();
    for (unsigned int stride = 128u; stride > 0u; stride >>= 1) {
        if (tid < stride) {
            scratch[tid] += scratch[tid + stride];
        }
        __syncthreads();
    }
    if (tid == 0u) {
        partial[blockIdx.x] = scratch[0];
    }
}
