/* collide-floor - the floor of the binary collisions' cost on the GPU: include/collide.h's
 * collide_pair alone, on independent pairs whose momenta lie in order (no cell index, no
 * shuffle, no moments, every load coalesced), as many pairs as decks/bench/collide-warm.cfg
 * takes a step (e-e 2.1 M, e-i 4.2 M, i-i 2.1 M pairs of its 1 keV electrons and ions), one
 * thread a pair. Prints the time of a step's pairs in ns per particle-step of that deck's
 * 8.39 M particles (the mean of 10 steps, after 2).
 *
 *   make bin/collide-floor      (CUDA builds; then run bin/collide-floor on the GPU machine) */
#include "collide.h"
#include <cstdio>
#include <vector>

__global__ void __launch_bounds__(256) k_pairs(float2 *uxy1, float2 *uzw1, float2 *uxy2,
                                                    float2 *uzw2, int n, float m1, float m2,
                                                    float q12, collide_par p, collide_cell cc)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    const float2 a = uxy1[t], za = uzw1[t], b = uxy2[t], zb = uzw2[t];
    float u1[3] = {a.x, a.y, za.x}, u2[3] = {b.x, b.y, zb.x};
    rng_stream r;
    collide_rng(&r, &p, t & 511, t >> 9, (unsigned)(t & 15));
    collide_pair(u1, u2, m1, m2, q12, za.y, zb.y, za.y * cc.nmin, &p, &cc, &r);
    uxy1[t] = make_float2(u1[0], u1[1]);
    uzw1[t] = make_float2(u1[2], za.y);
    uxy2[t] = make_float2(u2[0], u2[1]);
    uzw2[t] = make_float2(u2[2], zb.y);
}

static float gauss(unsigned *s)
{
    float a = 0;
    for (int k = 0; k < 12; k++) {
        *s = *s * 1664525u + 1013904223u;
        a += (*s >> 8) * (1.0f / 16777216.0f);
    }
    return a - 6.0f;
}

int main()
{
    const int N = 4194304;
    std::vector<float2> h(4 * N);
    unsigned s = 7;
    float2 *d[4];
    for (int k = 0; k < 4; k++) {
        const float th = k < 2 ? 0.0442f : 0.00103f; /* 0, 1: electrons; 2, 3: ions */
        for (int i = 0; i < N; i++) {
            h[i] = make_float2(th * gauss(&s), th * gauss(&s));
            h[N + i] = make_float2(th * gauss(&s), 1.0f / 16);
        }
        cudaMalloc(&d[k], 2 * N * sizeof(float2));
        cudaMemcpy(d[k], h.data(), 2 * N * sizeof(float2), cudaMemcpyHostToDevice);
    }
    collide_par p = {};
    p.dt = 0.05;
    p.seed = 5;
    p.step = 3;
    collide_scale(1e22, &p.re_kp, &p.lc_kp);
    collide_moments me = {16.0 / 16, 0, 16}, mi = me;
    me.pv = 16.0 / 16 * 1.0 * 3 * 0.0442 * 0.0442;
    mi.pv = 16.0 / 16 * 1836.0 * 3 * 0.00103 * 0.00103;
    collide_cell cee = collide_cell_of(&p, &me, &me, -1, -1, 1, 1, 1);
    collide_cell cei = collide_cell_of(&p, &me, &mi, -1, 1, 1, 1836, 0);
    collide_cell cii = collide_cell_of(&p, &mi, &mi, 1, 1, 1836, 1836, 1);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int rep = 0; rep < 12; rep++) { /* a step: e-e, e-i, i-i; the last 10 timed */
        if (rep == 2)
            cudaEventRecord(e0);
        k_pairs<<<N / 2 / 256, 256>>>(d[0], d[0] + N, d[1], d[1] + N, N / 2, 1, 1, 1, p, cee);
        k_pairs<<<N / 256, 256>>>(d[0], d[0] + N, d[2], d[2] + N, N, 1, 1836, -1, p, cei);
        k_pairs<<<N / 2 / 256, 256>>>(d[2], d[2] + N, d[3], d[3] + N, N / 2, 1836, 1836, 1, p,
                                      cii);
    }
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, e0, e1);
    const double step = ms / 10.0;
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        fprintf(stderr, "collide-floor: %s\n", cudaGetErrorString(e));
        return 1;
    }
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    printf("collide-floor: a step's pairs of collide-warm (8.39 M pairs) alone: %.4f ms, "
           "%.4f ns per particle-step of its 8.39 M particles [%s]\n",
           step, step * 1e6 / 8388608.0, prop.name);
    return 0;
}
