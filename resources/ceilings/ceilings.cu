// The CUDA ceiling kernels (`workbench ceilings`): memory streams in every access width and unroll
// the workbench measures, so a ceiling is the best the device did, not one kernel's figure.
//
// Compiled here (no GPU needed) into ceilings.ptx beside this file, which the cuda runtime loads:
//   nvcc -ptx -arch=compute_75 -O3 -o resources/ceilings/ceilings.ptx resources/ceilings/ceilings.cu
// then the header set back to the committed `.version 7.0` / `.target sm_52` (nvcc 13 writes
// 9.0 / sm_75; the test compares the same way):
//   sed -i -e 's/^\.version 9\.0$/.version 7.0/' -e 's/^\.target sm_75$/.target sm_52/' resources/ceilings/ceilings.ptx
// (tests/run/test_ceilings.py checks that ptxas assembles every entry and that the entries are the
// ones `workbench/run/ceilings_kernels.py` names.)
//
// Entries: wb_{copy,read,write,update}_w{4,8,16}_u{1,4}(src, dst, n) where n counts elements of
// the access width (float, float2, float4); write and update never touch src (update rewrites dst
// in place, dst[j] = dst[j] * 0.5 + 1: the roof of an in-place kernel such as a bitonic pass). Each thread strides over the whole grid; `U` independent
// accesses are in flight per thread and iteration. A grid of one thread per element (u1, grid =
// n / 256) is the plain stream; a smaller grid (a few blocks per SM) is the grid-stride form.
// The read stream stores only when the sum is a value the zero-filled input never gives, so the
// loads must happen and no store does.

template <typename V> __device__ __forceinline__ float sum_of(V v);
template <> __device__ __forceinline__ float sum_of<float>(float v) { return v; }
template <> __device__ __forceinline__ float sum_of<float2>(float2 v) { return v.x + v.y; }
template <> __device__ __forceinline__ float sum_of<float4>(float4 v) { return v.x + v.y + v.z + v.w; }

template <typename V> __device__ __forceinline__ V filled(float x);
template <> __device__ __forceinline__ float filled<float>(float x) { return x; }
template <> __device__ __forceinline__ float2 filled<float2>(float x) { return make_float2(x, x); }
template <> __device__ __forceinline__ float4 filled<float4>(float x) { return make_float4(x, x, x, x); }

template <typename V> __device__ __forceinline__ V updated(V v);
template <> __device__ __forceinline__ float updated<float>(float v) { return v * 0.5f + 1.0f; }
template <> __device__ __forceinline__ float2 updated<float2>(float2 v) {
    return make_float2(v.x * 0.5f + 1.0f, v.y * 0.5f + 1.0f);
}
template <> __device__ __forceinline__ float4 updated<float4>(float4 v) {
    return make_float4(v.x * 0.5f + 1.0f, v.y * 0.5f + 1.0f, v.z * 0.5f + 1.0f, v.w * 0.5f + 1.0f);
}

template <typename V, int U>
__device__ __forceinline__ void copy_stream(const V* __restrict__ src, V* __restrict__ dst, unsigned n) {
    unsigned stride = gridDim.x * blockDim.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (U - 1) * stride < n; i += U * stride) {
        V v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = src[i + u * stride];
#pragma unroll
        for (int u = 0; u < U; ++u) dst[i + u * stride] = v[u];
    }
    for (; i < n; i += stride) dst[i] = src[i];
}

template <typename V, int U>
__device__ __forceinline__ void read_stream(const V* __restrict__ src, float* __restrict__ dst, unsigned n) {
    unsigned stride = gridDim.x * blockDim.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc[U];
#pragma unroll
    for (int u = 0; u < U; ++u) acc[u] = 0.0f;
    for (; i + (U - 1) * stride < n; i += U * stride) {
#pragma unroll
        for (int u = 0; u < U; ++u) acc[u] += sum_of(src[i + u * stride]);
    }
    for (; i < n; i += stride) acc[0] += sum_of(src[i]);
    float total = 0.0f;
#pragma unroll
    for (int u = 0; u < U; ++u) total += acc[u];
    if (total == 12345.0f) dst[0] = total;
}

template <typename V, int U>
__device__ __forceinline__ void write_stream(V* __restrict__ dst, unsigned n) {
    unsigned stride = gridDim.x * blockDim.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    V v = filled<V>(1.0f);
    for (; i + (U - 1) * stride < n; i += U * stride) {
#pragma unroll
        for (int u = 0; u < U; ++u) dst[i + u * stride] = v;
    }
    for (; i < n; i += stride) dst[i] = v;
}

template <typename V, int U>
__device__ __forceinline__ void update_stream(V* __restrict__ dst, unsigned n) {
    unsigned stride = gridDim.x * blockDim.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (U - 1) * stride < n; i += U * stride) {
        V v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = dst[i + u * stride];
#pragma unroll
        for (int u = 0; u < U; ++u) dst[i + u * stride] = updated(v[u]);
    }
    for (; i < n; i += stride) dst[i] = updated(dst[i]);
}

#define ENTRIES(V, W, U)                                                                              \
    extern "C" __global__ void wb_copy_w##W##_u##U(const V* src, V* dst, unsigned n) {               \
        copy_stream<V, U>(src, dst, n);                                                               \
    }                                                                                                 \
    extern "C" __global__ void wb_read_w##W##_u##U(const V* src, float* dst, unsigned n) {           \
        read_stream<V, U>(src, dst, n);                                                               \
    }                                                                                                 \
    extern "C" __global__ void wb_write_w##W##_u##U(const V* src, V* dst, unsigned n) {              \
        write_stream<V, U>(dst, n);                                                                   \
    }                                                                                                 \
    extern "C" __global__ void wb_update_w##W##_u##U(const V* src, V* dst, unsigned n) {             \
        update_stream<V, U>(dst, n);                                                                  \
    }

ENTRIES(float, 4, 1)
ENTRIES(float, 4, 4)
ENTRIES(float2, 8, 1)
ENTRIES(float2, 8, 4)
ENTRIES(float4, 16, 1)
ENTRIES(float4, 16, 4)
