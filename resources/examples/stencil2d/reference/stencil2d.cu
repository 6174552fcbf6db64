// Hand-written CUDA C++ 5-point stencil, the same computation as src/lib.rs: Kernel Tuner's
// tutorial kernel (stencil_kernel: x_new = (c + w + e + s + n) / 5 on the interior) with the
// block and a one-point halo staged in shared memory first, and the boundary copied. block_size_x
// and block_size_y are the manifest's tunables, Kernel Tuner's names (-Dblock_size_x=...).
#ifndef block_size_x
#define block_size_x 32
#endif
#ifndef block_size_y
#define block_size_y 8
#endif

extern "C" __global__ void stencil2d(unsigned int width, unsigned int height, const float *x_old, float *x_new) {
    const unsigned int row = block_size_x + 2;
    __shared__ float tile[(block_size_y + 2) * (block_size_x + 2)];
    unsigned int x0 = blockIdx.x * block_size_x, y0 = blockIdx.y * block_size_y;
    for (unsigned int k = threadIdx.y * block_size_x + threadIdx.x; k < row * (block_size_y + 2);
         k += block_size_x * block_size_y) {
        unsigned int tx = k % row, ty = k / row;
        bool inside = x0 + tx >= 1 && y0 + ty >= 1 && x0 + tx - 1 < width && y0 + ty - 1 < height;
        tile[k] = inside ? x_old[(size_t)(y0 + ty - 1) * width + x0 + tx - 1] : 0.0f;
    }
    __syncthreads();
    unsigned int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
    if (x < width && y < height) {
        unsigned int at = (threadIdx.y + 1) * row + threadIdx.x + 1;
        float c = tile[at];
        float value = c;  // the boundary keeps its value
        if (x > 0 && y > 0 && x + 1 < width && y + 1 < height) {
            value = (c + tile[at - 1] + tile[at + 1] + tile[at + row] + tile[at - row]) / 5.0f;
        }
        x_new[(size_t)y * width + x] = value;
    }
}
