// Hand-written CUDA C++ tiled matrix multiply, the same computation as src/lib.rs:
// C (m x n) = A (m x k) * B (k x n), row-major, tile x tile tiles in shared memory, k ascending,
// one fused multiply-add per step (written out, so the rounding does not hang on -fmad).
// `tile` is the manifest's tunable (the workbench passes -Dtile=VALUE); 16 without it.
#ifndef tile
#define tile 16
#endif
#define TILE tile

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
