#include <cuda.h>
#include <cstdio>
#include <cstdlib>
int main(int c,char**v){cudaFree(0);FILE*f=fopen(v[1],"rb");static char s[1<<16];s[fread(s,1,sizeof s-1,f)]=0;
CUmodule m;CUresult e=cuModuleLoadData(&m,s);if(e){printf("load %d\n",e);return 1;}CUfunction fn;cuModuleGetFunction(&fn,m,"histogram");
unsigned it=atoi(v[2]),T=atoi(v[4]),N=1u<<26;unsigned*h=(unsigned*)malloc(4ull*N);for(unsigned i=0;i<N;i++)h[i]=rand()&255;
CUdeviceptr x,o;cuMemAlloc(&x,4ull*N);cuMemAlloc(&o,1024);cuMemcpyHtoD(x,h,4ull*N);cudaEvent_t a,b;cudaEventCreate(&a);cudaEventCreate(&b);
for(unsigned n:{1u<<20,1u<<22,1u<<24,1u<<26}){unsigned g=(n+T*it-1)/(T*it);void*ar[]={&n,&x,&o};
for(int r=0;r<20;r++)cuLaunchKernel(fn,g,1,1,T,1,1,0,0,ar,0);cudaEventRecord(a);int R=500;
for(int r=0;r<R;r++)cuLaunchKernel(fn,g,1,1,T,1,1,0,0,ar,0);cudaEventRecord(b);cudaEventSynchronize(b);float ms;cudaEventElapsedTime(&ms,a,b);
unsigned hb[256];cuMemsetD32(o,0,256);cuLaunchKernel(fn,g,1,1,T,1,1,0,0,ar,0);cuMemcpyDtoH(hb,o,1024);unsigned long long t=0;for(int i=0;i<256;i++)t+=hb[i];
printf("%s T=%u n=%u items=%u grid=%u: %.2f us/launch sum ok %d\n",v[3],T,n,it,g,ms*1e3/R,t==n);}}
