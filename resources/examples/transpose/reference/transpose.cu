// Hand-written CUDA C++ transpose, the same computation as src/lib.rs: b (n x m) = a (m x n)^T,
// row-major, one tile x tile block per block of tile x blockDim.y threads through a padded tile in
// shared memory. `tile` and `tile_pad` are the manifest's tunables (-Dtile=..., -Dtile_pad=...).
#ifndef tile
#define tile 32
#endif
#ifndef tile_pad
#define tile_pad 1
#endif

extern "C" __global__ void transpose(unsigned int m, unsigned int n, const float *a, float *b) {
    // tile_pad = 1: row j starts one bank further than row j - 1, so a column spans every bank.
    __shared__ float t[tile][tile + tile_pad];
    unsigned int x = threadIdx.x;
    unsigned int col0 = blockIdx.x * tile, row0 = blockIdx.y * tile;
    for (unsigned int j = threadIdx.y; j < tile; j += blockDim.y) {
        unsigned int r = row0 + j, c = col0 + x;
        if (r < m && c < n) {
            t[j][x] = a[(size_t)r * n + c];
        }
    }
    __syncthreads();
    for (unsigned int j = threadIdx.y; j < tile; j += blockDim.y) {
        unsigned int r = col0 + j, c = row0 + x;  // element (row0 + x, col0 + j) of a
        if (r < n && c < m) {
            b[(size_t)r * m + c] = t[x][j];
        }
    }
}
