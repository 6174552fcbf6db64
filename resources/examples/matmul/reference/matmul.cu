// Hand-written CUDA C++ tiled matrix multiply, the same computation as src/lib.rs:
// C (m x n) = A (m x k) * B (k x n), row-major, tile x tile tiles in shared memory, k ascending,
// one fused multiply-add per step (written out, so the rounding does not hang on -fmad).
// `tile` and `per_thread` are the manifest's tunables (the workbench passes -Dtile=VALUE
// -Dper_thread=VALUE; 16 and 1 without them): per_thread 1 is the tiled form, one element of C per
// thread; 4 or 8 is register blocking, per_thread x per_thread elements per thread (below).
#ifndef tile
#define tile 16
#endif
#ifndef per_thread
#define per_thread 1
#endif
#define TILE tile

#if per_thread == 1

extern "C" __global__ void matmul(unsigned int m, unsigned int n, unsigned int k,
                                  const float *a, const float *b, float *c) {
    __shared__ float a_tile[TILE][TILE];
    __shared__ float b_tile[TILE][TILE];
    unsigned int tx = threadIdx.x, ty = threadIdx.y;
    unsigned int row = blockIdx.y * TILE + ty;
    unsigned int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (unsigned int k0 = 0; k0 < k; k0 += TILE) {
        unsigned int ka = k0 + tx, kb = k0 + ty;
        a_tile[ty][tx] = (row < m && ka < k) ? a[(size_t)row * k + ka] : 0.0f;
        b_tile[ty][tx] = (kb < k && col < n) ? b[(size_t)kb * n + col] : 0.0f;
        __syncthreads();
        for (int t = 0; t < TILE; ++t) {
            acc = fmaf(a_tile[ty][t], b_tile[t][tx], acc);  // what nvcc contracts `acc += a * b` to
        }
        __syncthreads();
    }
    if (row < m && col < n) {
        c[(size_t)row * n + col] = acc;
    }
}

#else
// Register blocking, as src/lib.rs's matmul_blocked_body: block (bx, by) computes the EDGE x EDGE
// block of C at (by * EDGE, bx * EDGE); thread (tx, ty) owns rows ty * 4 + g * 4 * TILE + (0..4)
// and columns tx * 4 + g * 4 * TILE + (0..4) (g < R / 4). Per step of STEP along k the block
// stages A's EDGE x STEP slice (transposed) and B's STEP x EDGE slice with float4 loads (missing
// elements 0), then each thread does R * R fmaf per k from 2 * R / 4 float4 shared reads. Each
// element's chain runs k ascending, one fmaf a step: the same bits as the tiled form.
#define R per_thread
#define EDGE (TILE * R)
#define STEP 8

// Four elements of a row from `base`, `avail` of them existing (the rest 0).
__device__ __forceinline__ float4 quad(const float *x, size_t base, size_t avail, bool aligned) {
    if (aligned && avail >= 4) {
        return *reinterpret_cast<const float4 *>(x + base);
    }
    float4 v;
    v.x = avail > 0 ? x[base] : 0.0f;
    v.y = avail > 1 ? x[base + 1] : 0.0f;
    v.z = avail > 2 ? x[base + 2] : 0.0f;
    v.w = avail > 3 ? x[base + 3] : 0.0f;
    return v;
}

extern "C" __global__ void matmul(unsigned int m, unsigned int n, unsigned int k,
                                  const float *a, const float *b, float *c) {
    __shared__ __align__(16) float a_tile[STEP * EDGE];
    __shared__ __align__(16) float b_tile[STEP * EDGE];
    const unsigned int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TILE + tx;
    const size_t row0 = (size_t)blockIdx.y * EDGE, col0 = (size_t)blockIdx.x * EDGE;
    float acc[R][R];
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
        for (int j = 0; j < R; ++j) acc[i][j] = 0.0f;
    for (size_t k0 = 0; k0 < k; k0 += STEP) {
        for (unsigned int q = tid; q < EDGE * STEP / 4; q += TILE * TILE) {
            unsigned int r = q / (STEP / 4), kq = (q % (STEP / 4)) * 4;
            size_t avail = row0 + r < m && k0 + kq < k ? k - (k0 + kq) : 0;
            float4 v = quad(a, (row0 + r) * k + k0 + kq, avail, k % 4 == 0);
            a_tile[(kq + 0) * EDGE + r] = v.x;
            a_tile[(kq + 1) * EDGE + r] = v.y;
            a_tile[(kq + 2) * EDGE + r] = v.z;
            a_tile[(kq + 3) * EDGE + r] = v.w;
        }
        for (unsigned int q = tid; q < STEP * EDGE / 4; q += TILE * TILE) {
            unsigned int r = q / (EDGE / 4), cq = (q % (EDGE / 4)) * 4;
            size_t avail = k0 + r < k && col0 + cq < n ? n - (col0 + cq) : 0;
            float4 v = quad(b, (k0 + r) * n + col0 + cq, avail, n % 4 == 0);
            *reinterpret_cast<float4 *>(&b_tile[r * EDGE + cq]) = v;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < STEP; ++kk) {
            float av[R], bv[R];
#pragma unroll
            for (int g = 0; g < R / 4; ++g) {
                float4 a4 = *reinterpret_cast<const float4 *>(&a_tile[kk * EDGE + g * 4 * TILE + ty * 4]);
                float4 b4 = *reinterpret_cast<const float4 *>(&b_tile[kk * EDGE + g * 4 * TILE + tx * 4]);
                av[g * 4] = a4.x; av[g * 4 + 1] = a4.y; av[g * 4 + 2] = a4.z; av[g * 4 + 3] = a4.w;
                bv[g * 4] = b4.x; bv[g * 4 + 1] = b4.y; bv[g * 4 + 2] = b4.z; bv[g * 4 + 3] = b4.w;
            }
#pragma unroll
            for (int i = 0; i < R; ++i)
#pragma unroll
                for (int j = 0; j < R; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < R; ++i) {
        size_t row = row0 + (i / 4) * 4 * TILE + ty * 4 + i % 4;
#pragma unroll
        for (int g = 0; g < R / 4; ++g) {
            size_t col = col0 + g * 4 * TILE + tx * 4;
            if (row >= m) continue;
            if (n % 4 == 0 && col + 4 <= n) {
                *reinterpret_cast<float4 *>(&c[row * n + col]) =
                    make_float4(acc[i][g * 4], acc[i][g * 4 + 1], acc[i][g * 4 + 2], acc[i][g * 4 + 3]);
            } else {
#pragma unroll
                for (int t = 0; t < 4; ++t)
                    if (col + t < n) c[row * n + col + t] = acc[i][g * 4 + t];
            }
        }
    }
}
#endif
