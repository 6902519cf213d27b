// stale-binding: issue 18's fault with plain ggml on the Vulkan backend, no llama.cpp and no SnapKV
// (see bench/results/vulkan-fault-issue18.md).
// Round r: a graph (scale, then soft_max with a mask and sinks: 4 bindings, descriptor set 1) in
// buffer X_r; X_r is freed; then a graph in a new buffer Y_r whose first dispatch (soft_max, set 0)
// rebinds every slot X_r held, so lavapipe drops its last references and frees X_r's resource, and
// whose next dispatches (scale: 2 bindings) reuse set 1. Without patch 0009 set 1 still holds X_r in
// bindings 2-3, and lavapipe takes references on them at execution: a use after free.
// Built against a Vulkan build of the series (REPOSNAP_GPU=vulkan npm run build:native), from the
// repository root:
//   B=native/build/cmake-vulkan; L=native/build/llama.cpp
//   g++ -O2 -g -std=c++17 -I $L/ggml/include native/bench/stale-binding.cpp -o stale-binding \
//     $B/llama.cpp/ggml/src/libggml.a -ldl $B/llama.cpp/ggml/src/libggml-cpu.a $B/llama.cpp/ggml/src/ggml-rpc/libggml-rpc.a \
//     $B/llama.cpp/ggml/src/ggml-vulkan/libggml-vulkan.a $B/llama.cpp/ggml/src/libggml-base.a -fopenmp -lpthread -lm -lvulkan
//   LD_PRELOAD=$PWD/guardmalloc.so GM_MIN=64 GM_QUARANTINE=1900000 GGML_VK_VISIBLE_DEVICES=0 ./stale-binding 6
// (guardmalloc: native/bench/guardmalloc.c.) Without the guard allocator the freed memory is rarely
// reused harmfully in so small a program: 40 rounds passed 3/3 runs with and without 0009.
//   args: rounds (default 20)
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-vulkan.h"
#include <cstdio>
#include <cstdlib>
#include <vector>
static ggml_context * new_ctx() {
    ggml_init_params ip = { 64*ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true };
    return ggml_init(ip);
}
int main(int argc, char ** argv) {
    const int rounds = argc > 1 ? atoi(argv[1]) : 20;
    ggml_backend_t be = ggml_backend_vk_init(0);
    if (!be) { fprintf(stderr, "no Vulkan device\n"); return 1; }
    for (int r = 0; r < rounds; ++r) {
        const int n = 256 + 32*(r % 4);
        { // 4 bindings: src0, mask, sinks, dst
            ggml_context * ctx = new_ctx();
            ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n, 8);
            ggml_tensor * m = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n, 8);
            ggml_tensor * s = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
            ggml_tensor * y = ggml_soft_max_ext(ctx, ggml_scale(ctx, a, 1.0f), m, 0.5f, 0.0f); // sets 0 (scale), 1 (soft_max)
            ggml_soft_max_add_sinks(y, s);
            ggml_cgraph * gf = ggml_new_graph(ctx);
            ggml_build_forward_expand(gf, y);
            ggml_backend_buffer_t X = ggml_backend_alloc_ctx_tensors(ctx, be);
            std::vector<float> v(n*8, 0.25f), one(1, 0.0f);
            ggml_backend_tensor_set(a, v.data(), 0, ggml_nbytes(a));
            ggml_backend_tensor_set(m, v.data(), 0, ggml_nbytes(m));
            ggml_backend_tensor_set(s, one.data(), 0, ggml_nbytes(s));
            ggml_backend_graph_compute(be, gf);
            ggml_backend_synchronize(be);
            ggml_backend_buffer_free(X); // destroys X's VkBuffer: lavapipe frees its pipe_resource
            ggml_free(ctx);
        }
        { // set 0: soft_max (4 bindings, in Y: the last references on X go), set 1: scale (2 bindings; 2-3 stale)
            ggml_context * ctx = new_ctx();
            ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4096);
            ggml_tensor * m = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4096);
            ggml_tensor * s = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
            ggml_tensor * sm = ggml_soft_max_ext(ctx, a, m, 1.0f, 0.0f);
            ggml_soft_max_add_sinks(sm, s);
            ggml_tensor * y = ggml_scale(ctx, ggml_scale(ctx, sm, 0.0f), 2.0f);
            y = ggml_add(ctx, y, ggml_scale(ctx, a, 2.0f)); // 2*a
            ggml_cgraph * gf = ggml_new_graph(ctx);
            ggml_build_forward_expand(gf, y);
            ggml_backend_buffer_t Y = ggml_backend_alloc_ctx_tensors(ctx, be);
            std::vector<float> v(4096, 1.0f), out(4096);
            ggml_backend_tensor_set(a, v.data(), 0, ggml_nbytes(a));
            ggml_backend_tensor_set(m, v.data(), 0, ggml_nbytes(m));
            ggml_backend_tensor_set(s, v.data(), 0, ggml_nbytes(s));
            ggml_backend_graph_compute(be, gf);
            ggml_backend_tensor_get(y, out.data(), 0, ggml_nbytes(y));
            if (out[17] != 2.0f) { fprintf(stderr, "round %d: scale gave %f\n", r, out[17]); return 2; }
            ggml_backend_buffer_free(Y);
            ggml_free(ctx);
        }
    }
    ggml_backend_free(be);
    fprintf(stderr, "OK %d rounds\n", rounds);
    return 0;
}
