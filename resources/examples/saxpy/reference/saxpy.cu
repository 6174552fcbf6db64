// Hand-written CUDA C++ SAXPY, the same computation as src/lib.rs. `vector` is the manifest's
// tunable (the workbench passes -Dvector=VALUE; 1 without it): 1 is the plain form, one element
// per thread; 4 moves a float4 (16 bytes, one ld.global.v4.f32) per access, four elements per
// thread, and the last thread does the n % 4 left over one by one.
#ifndef vector
#define vector 1
#endif

extern "C" __global__ void saxpy(unsigned int n, float a, const float *x, float *y) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
#if vector == 4
    size_t first = 4 * (size_t)i;
    if (first + 4 <= n) {
        float4 xv = reinterpret_cast<const float4 *>(x)[i];
        float4 yv = reinterpret_cast<float4 *>(y)[i];
        yv.x = a * xv.x + yv.x;
        yv.y = a * xv.y + yv.y;
        yv.z = a * xv.z + yv.z;
        yv.w = a * xv.w + yv.w;
        reinterpret_cast<float4 *>(y)[i] = yv;
    } else {
        for (size_t j = first; j < n; ++j) {
            y[j] = a * x[j] + y[j];
        }
    }
#else
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
#endif
}
