// Kernels whose register, shared-memory and block-size needs span the occupancy limits, compiled
// to PTX (occupancy_probe.ptx, `nvcc -ptx -arch=sm_90`) for the driver's occupancy answers
// (workbench/build/occupancy_driver.py) and for one `ncu --csv` capture (saxpy, reduce_shared).
// extern "C": the names ncu and the driver see are the PTX entries, as with the Rust builds.

extern "C" __global__ void saxpy(int n, float a, const float *__restrict__ x, float *__restrict__ y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// One partial sum per block of 256 threads, through 1 KiB of static shared memory.
extern "C" __global__ void reduce_shared(const float *__restrict__ in, float *__restrict__ out, int n) {
    __shared__ float part[256];
    int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    float v = 0.0f;
    if (i < n) v = in[i];
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    part[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}

// N accumulators live across a loop: more registers per thread as N grows (spills past 255).
#define PRESSURE(N)                                                                          \
    extern "C" __global__ void pressure_##N(const float *__restrict__ in, float *__restrict__ out, \
                                            int n, int iters) {                              \
        float acc[N];                                                                        \
        _Pragma("unroll") for (int i = 0; i < N; i++) acc[i] = in[(threadIdx.x + i * 37) % n]; \
        for (int k = 0; k < iters; k++) {                                                    \
            _Pragma("unroll") for (int i = 0; i < N; i++) acc[i] = fmaf(acc[i], acc[(i + 1) % N], 1.0f); \
        }                                                                                    \
        float s = 0.0f;                                                                      \
        _Pragma("unroll") for (int i = 0; i < N; i++) s += acc[i] * (float)(i + 1);          \
        out[blockIdx.x * blockDim.x + threadIdx.x] = s;                                      \
    }
PRESSURE(4)
PRESSURE(16)
PRESSURE(28)
PRESSURE(40)
PRESSURE(56)
PRESSURE(72)
PRESSURE(96)
PRESSURE(128)
PRESSURE(168)
PRESSURE(220)

// Static shared memory of B bytes.
#define SHARED(B)                                                                            \
    extern "C" __global__ void shared_##B(float *__restrict__ out) {                         \
        __shared__ float buf[B / 4];                                                         \
        buf[threadIdx.x % (B / 4)] = (float)threadIdx.x;                                     \
        __syncthreads();                                                                     \
        out[blockIdx.x * blockDim.x + threadIdx.x] = buf[(threadIdx.x + 1) % (B / 4)];       \
    }
SHARED(2048)
SHARED(12288)
SHARED(40960)
SHARED(49152)
