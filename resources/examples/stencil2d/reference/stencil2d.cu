// Hand-written CUDA C++ 5-point stencil, the same computation as src/lib.rs: Kernel Tuner's
// tutorial kernel (stencil_kernel: x_new = (c + w + e + s + n) / 5 on the interior) with the
// block and a one-point halo staged in shared memory first, and the boundary copied. Each thread
// computes tile_size_y points of a column (Kernel Tuner's register tiling), each centre value
// read once from shared memory and kept for the points above and below it. block_size_x,
// block_size_y and tile_size_y are the manifest's tunables, Kernel Tuner's names
// (-Dblock_size_x=...).
#ifndef block_size_x
#define block_size_x 64
#endif
#ifndef block_size_y
#define block_size_y 4
#endif
#ifndef tile_size_y
#define tile_size_y 4
#endif

extern "C" __global__ void stencil2d(unsigned int width, unsigned int height, const float *x_old, float *x_new) {
    const unsigned int row = block_size_x + 2, rows = block_size_y * tile_size_y + 2;
    __shared__ float tile[rows * row];
    unsigned int x0 = blockIdx.x * block_size_x, y0 = blockIdx.y * (block_size_y * tile_size_y);
    // Tile point (tx, ty) is grid point (x0 + tx - 1, y0 + ty - 1). The block's columns: thread
    // (x, y) loads column x + 1 of rows y, y + block_size_y, ... (a row of threads loads one
    // contiguous row, no division): whole passes of block_size_y rows, then the partial one
    // (rows % block_size_y = 2 % block_size_y). "Inside the grid" as one wrapping compare per axis.
    unsigned int gx = x0 + threadIdx.x, ty0 = 0;
    for (; ty0 + block_size_y <= rows; ty0 += block_size_y) {
        unsigned int ty = ty0 + threadIdx.y, gy = y0 + ty - 1;
        tile[ty * row + threadIdx.x + 1] = gx < width && gy < height ? x_old[(size_t)gy * width + gx] : 0.0f;
    }
    // The partial pass and the halo's two columns (tile columns 0 and block_size_x + 1: point h of
    // their 2 * rows is column (h % 2) * (block_size_x + 1) of row h / 2, one point each for the
    // first 2 * rows threads). Each load under one condition, its store under the tile test only:
    // no branch, so these loads are issued with the passes' before the first store waits.
    static_assert(2 * rows <= block_size_x * block_size_y, "the halo's columns: one point a thread");
    unsigned int ty = ty0 + threadIdx.y, gy = y0 + ty - 1;
    bool in_tile = ty < rows;
    float value = in_tile && gx < width && gy < height ? x_old[(size_t)gy * width + gx] : 0.0f;
    unsigned int h = threadIdx.y * block_size_x + threadIdx.x;
    unsigned int hx = (h & 1) * (block_size_x + 1), hy = h >> 1, hgx = x0 + hx - 1, hgy = y0 + hy - 1;
    bool halo = h < 2 * rows;
    float halo_value = halo && hgx < width && hgy < height ? x_old[(size_t)hgy * width + hgx] : 0.0f;
    if (in_tile) tile[ty * row + threadIdx.x + 1] = value;
    if (halo) tile[hy * row + hx] = halo_value;
    __syncthreads();
    unsigned int x = x0 + threadIdx.x;
    if (x < width) {
        unsigned int first = y0 + threadIdx.y * tile_size_y;
        unsigned int at = (threadIdx.y * tile_size_y + 1) * row + threadIdx.x + 1;
        float north = tile[at - row], c = tile[at];
#pragma unroll
        for (unsigned int r = 0; r < tile_size_y; r++) {
            unsigned int y = first + r, a = at + r * row;
            float south = tile[a + row];
            // Computed for every point (the tile holds a value at each of the four) and chosen.
            float mean = (c + tile[a - 1] + tile[a + 1] + south + north) / 5.0f;
            if (y < height) {
                bool inside = x > 0 && y > 0 && x + 1 < width && y + 1 < height;
                x_new[(size_t)y * width + x] = inside ? mean : c;  // the boundary keeps its value
            }
            north = c;
            c = south;
        }
    }
}
