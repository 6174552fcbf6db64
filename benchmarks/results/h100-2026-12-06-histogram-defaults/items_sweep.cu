#include <cstdio>
#include <cstdlib>
#define B 256u
template<int IT>__global__ void h(unsigned n,const unsigned*x,unsigned*o){__shared__ unsigned s[B];
for(unsigned b=threadIdx.x;b<B;b+=blockDim.x)s[b]=0;__syncthreads();
size_t base=(size_t)blockIdx.x*blockDim.x*IT;
for(unsigned k=0;k<IT;++k){size_t i=base+(size_t)k*blockDim.x+threadIdx.x;if(i<n)atomicAdd(&s[x[i]%B],1u);}
__syncthreads();for(unsigned b=threadIdx.x;b<B;b+=blockDim.x){unsigned c=s[b];if(c)atomicAdd(&o[b],c);}}
template<int IT>void t(unsigned n,int T,unsigned*x,unsigned*o){unsigned g=(n+T*IT-1)/(T*IT);cudaEvent_t a,b;cudaEventCreate(&a);cudaEventCreate(&b);
for(int r=0;r<20;r++)h<IT><<<g,T>>>(n,x,o);cudaEventRecord(a);int R=500;for(int r=0;r<R;r++)h<IT><<<g,T>>>(n,x,o);cudaEventRecord(b);cudaEventSynchronize(b);
float ms;cudaEventElapsedTime(&ms,a,b);unsigned hb[B];cudaMemset(o,0,4*B);h<IT><<<g,T>>>(n,x,o);cudaMemcpy(hb,o,4*B,cudaMemcpyDeviceToHost);
unsigned long long s=0;for(int i=0;i<B;i++)s+=hb[i];printf("n=%u T=%d items=%d grid=%u: %.2f us/launch (%.0f GB/s) sum ok %d\n",n,T,IT,g,ms*1e3/R,4.0*n/(ms*1e-3/R)/1e9,s==n);}
int main(){unsigned N=1u<<26;unsigned*hx=(unsigned*)malloc(4ull*N);for(unsigned i=0;i<N;i++)hx[i]=rand()&255;unsigned*x,*o;cudaMalloc(&x,4ull*N);cudaMalloc(&o,4*B);cudaMemcpy(x,hx,4ull*N,cudaMemcpyHostToDevice);
for(unsigned n:{1u<<20,1u<<22,1u<<24,1u<<26})for(int T:{256,512}){t<1>(n,T,x,o);t<4>(n,T,x,o);t<8>(n,T,x,o);t<16>(n,T,x,o);t<32>(n,T,x,o);t<64>(n,T,x,o);}}
