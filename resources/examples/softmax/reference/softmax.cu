// Hand-written CUDA C++ row softmax, the same computation as src/lib.rs: one block of 256 threads
// per row; the row's max, then the sum of expf(x - max), each a shared-memory tree reduction,
// then y = expf(x - max) / sum. expf is CUDA's precise one (within 2 ULP; nvcc without
// --use_fast_math), not __expf.
#define BLOCK 256u

__device__ float block_reduce(float *red, unsigned int t, bool is_max) {
    for (unsigned int stride = BLOCK / 2u; stride > 0u; stride >>= 1) {
        if (t < stride) {
            float a = red[t], b = red[t + stride];
            red[t] = is_max ? (b > a ? b : a) : a + b;
        }
        __syncthreads();
    }
    float all = red[0];
    __syncthreads();  // every thread has read red[0] before the next sweep writes red[t]
    return all;
}

extern "C" __global__ void softmax(unsigned int rows, unsigned int cols, const float *x, float *y) {
    __shared__ float red[BLOCK];
    unsigned int t = threadIdx.x;
    unsigned int row = blockIdx.x;
    size_t base = (size_t)row * cols;
    float max = -INFINITY;
    for (unsigned int j = t; j < cols; j += BLOCK) {
        float v = x[base + j];
        if (v > max) {
            max = v;
        }
    }
    red[t] = max;
    __syncthreads();
    max = block_reduce(red, t, true);
    float sum = 0.0f;
    for (unsigned int j = t; j < cols; j += BLOCK) {
        sum += expf(x[base + j] - max);
    }
    red[t] = sum;
    __syncthreads();
    float total = block_reduce(red, t, false);
    for (unsigned int j = t; j < cols; j += BLOCK) {
        y[base + j] = expf(x[base + j] - max) / total;
    }
}
