/* CUDA on the CPU, for tests: enough of CUDA's names that g++ builds the generated kernels and
 * runs those that use no shared memory, no barriers and no warp shuffles (pointwise kernels and
 * 'rows_thread' reductions). FT_LAUNCH runs the grid one thread after another, so a kernel whose
 * threads depended on each other would hide its races here: this checks index arithmetic and the
 * fused expressions, not concurrency. The block-reduction helpers compile, and abort if run. */
#ifndef FT_CUDA_ON_CPU_H
#define FT_CUDA_ON_CPU_H
#include <math.h>
#include <stdlib.h>

struct dim3 { unsigned int x, y, z; };
static dim3 threadIdx, blockIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(n)
#define __shared__ static

struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) double2 { double x, y; };

static inline void __syncthreads() { abort(); }
static inline void __threadfence() { abort(); }
template <class T> static inline T __shfl_down_sync(unsigned int, T, int) { abort(); }
template <class T> static inline T atomicAdd(T*, T) { abort(); }
template <class T> static inline T __ldcg(const T*) { abort(); }

/* kernel<<<grid, block>>>(args...), one thread at a time */
#define FT_LAUNCH(kernel, grid, block, ...)                                       \
    do {                                                                          \
        gridDim.x = (grid); blockDim.x = (block);                                 \
        gridDim.y = gridDim.z = blockDim.y = blockDim.z = 1;                      \
        for (blockIdx.x = 0; blockIdx.x < gridDim.x; blockIdx.x++)                \
            for (threadIdx.x = 0; threadIdx.x < blockDim.x; threadIdx.x++)        \
                kernel(__VA_ARGS__);                                              \
    } while (0)
#endif
