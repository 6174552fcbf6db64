// Hand-written CUDA C++ bitonic compare-and-swap step, the same computation as src/lib.rs.
extern "C" __global__ void bitonic(unsigned int n, unsigned int j, unsigned int k, unsigned int *data) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int l = i ^ j;
    if (i < n && l > i && l < n) {
        unsigned int a = data[i], b = data[l];
        bool ascending = (i & k) == 0;
        if ((ascending && a > b) || (!ascending && a < b)) {
            data[i] = b;
            data[l] = a;
        }
    }
}
