// snapkv-repro: the smallest repro of issue 18's Vulkan fault (see bench/results/vulkan-fault-issue18.md).
// A 2-layer synthetic llama (n_embd 256, 4/2 heads, n_ff 512, vocab 1000, f16 weights and KV cache)
// on the build's devices (NGL, default 99 = all layers): prefill L random tokens with the window
// capture armed (w = 32), then llama_snapkv_compact to B1, then to B2, printing each snap's kept
// positions' hash; no Node.js. Not built by default; from the repository root, after
// REPOSNAP_GPU=vulkan npm run build:native:
//   B=native/build/cmake-vulkan; L=native/build/llama.cpp
//   g++ -O2 -std=c++17 -I native/common -I $L/include -I $L/ggml/include native/bench/snapkv-repro.cpp -o snapkv-repro \
//     $B/llama.cpp/src/libllama.a $B/llama.cpp/ggml/src/libggml.a -ldl $B/llama.cpp/ggml/src/libggml-cpu.a \
//     $B/llama.cpp/ggml/src/ggml-rpc/libggml-rpc.a $B/llama.cpp/ggml/src/ggml-vulkan/libggml-vulkan.a \
//     $B/llama.cpp/ggml/src/libggml-base.a -fopenmp -lpthread -lm -lvulkan
//   GGML_VK_VISIBLE_DEVICES=0 ./snapkv-repro 512 256 64     # args: L B1 B2 [fa=1] [layers=2] [ubatch=256]
// Environment: NGL (layers offloaded), KERNEL, AVG (pooling), MODE2=score|kept (the second operation is
// llama_snapkv_score, or llama_snapkv_compact_kept with the host's positions), LOOPS (contexts created
// one after another), NOCAPTURE (no window capture), DECODE (single-token steps after the prefill).
#include "llama.h"
#include "ggml-backend.h"
#include "synthetic-model.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>
int main(int argc, char ** argv) {
    int L = argc > 1 ? atoi(argv[1]) : 1024, B1 = argc > 2 ? atoi(argv[2]) : 512, B2 = argc > 3 ? atoi(argv[3]) : 128;
    int fa = argc > 4 ? atoi(argv[4]) : 1, layers = argc > 5 ? atoi(argv[5]) : 2, ub = argc > 6 ? atoi(argv[6]) : 256;
    int ngl = getenv("NGL") ? atoi(getenv("NGL")) : 99;
    llama_backend_init();
#ifdef GGML_BACKEND_DL
    ggml_backend_load_all(); // a portable build's backend modules, beside the executable
#endif
    reposnap::synthetic_shape sh;
    sh.n_layer = layers; sh.n_embd = 256; sh.n_head = 4; sh.n_head_kv = 2; sh.n_ff = 512; sh.n_vocab = 1000;
    sh.n_ctx = 4096; sh.rope_freq_base = 500000.0f; sh.wtype = GGML_TYPE_F16;
    llama_model * m = reposnap::make_synthetic_model(sh, ngl);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = L + 128; cp.n_batch = ub; cp.n_ubatch = ub; cp.n_seq_max = 1; cp.kv_unified = true;
    cp.n_threads = 2; cp.n_threads_batch = 2;
    cp.flash_attn_type = fa ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = GGML_TYPE_F16; cp.type_v = GGML_TYPE_F16; cp.no_perf = true;
    const int loops = getenv("LOOPS") ? atoi(getenv("LOOPS")) : 1;
    for (int loop = 0; loop < loops; ++loop) {
    llama_context * c = llama_init_from_model(m, cp);
    if (!getenv("NOCAPTURE") && llama_snapkv_capture(c, 0, 32) != 0) { fprintf(stderr, "capture failed\n"); return 1; }
    llama_batch b = llama_batch_init(ub, 0, 1);
    uint32_t rng = 12345;
    for (int done = 0; done < L; ) {
        const int k = std::min(ub, L - done);
        b.n_tokens = k;
        for (int i = 0; i < k; ++i) { rng = rng*1103515245u + 12345u; b.token[i] = 3 + (rng >> 8) % 997; b.pos[i] = done + i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = i == k - 1; }
        if (llama_decode(c, b) != 0) { fprintf(stderr, "decode failed\n"); return 1; }
        done += k;
    }
    llama_synchronize(c);
    if (getenv("DECODE")) {
        int pos = L;
        for (int t = 0; t < atoi(getenv("DECODE")); ++t) {
            b.n_tokens = 1; b.token[0] = 5 + t; b.pos[0] = pos++; b.n_seq_id[0] = 1; b.seq_id[0][0] = 0; b.logits[0] = 1;
            if (llama_decode(c, b) != 0) { fprintf(stderr, "decode failed\n"); return 1; }
        }
        llama_synchronize(c);
    }
    for (int B : {B1, B2}) {
        if (B <= 0) continue;
        llama_snapkv_params p = llama_snapkv_default_params();
        p.n_budget = B; p.n_window = 32; if (getenv("KERNEL")) p.kernel = atoi(getenv("KERNEL")); if (getenv("AVG")) p.pooling = LLAMA_SNAPKV_POOLING_AVG;
        llama_snapkv_result r = {};
        static std::vector<int32_t> prev; static int prevB = 0;
        const char * mode = getenv("MODE2");
        int st;
        if (B == B2 && mode && !strcmp(mode, "score")) {
            st = llama_snapkv_score(c, 0, p, &r);
        } else if (B == B2 && mode && !strcmp(mode, "kept")) {
            std::vector<int32_t> k2(layers*2*B);
            for (int row = 0; row < layers*2; ++row) for (int j = 0; j < B; ++j) k2[row*B + j] = prev[row*prevB + prevB - B + j];
            // positions as the cells hold them now: slot j of the first snap holds max over rows
            std::vector<int32_t> slot(prevB, -1);
            for (int row = 0; row < layers*2; ++row) for (int j = 0; j < prevB; ++j) slot[j] = std::max(slot[j], prev[row*prevB + j]);
            for (int row = 0; row < layers*2; ++row) for (int j = 0; j < B; ++j) k2[row*B + j] = slot[prevB - B + j];
            st = llama_snapkv_compact_kept(c, 0, B, k2.data(), k2.size(), &r);
        } else {
            st = llama_snapkv_compact(c, 0, p, &r);
        }
        if (B == B1) { prev.resize(layers*2*B); llama_snapkv_get_kept(c, prev.data(), prev.size()); prevB = B; }
        fprintf(stderr, "compact -> %d: status %d n_after %d t %.1f ms\n", B, st, (int) r.n_after, r.t_ms);
        std::vector<int32_t> kept(layers*2*B);
        const int nk = llama_snapkv_get_kept(c, kept.data(), kept.size());
        uint64_t h = 1469598103934665603ull; int unsorted = 0;
        for (size_t i = 0; i < kept.size(); ++i) { h = (h ^ (uint32_t) kept[i])*1099511628211ull; if (i % B && kept[i] <= kept[i-1]) ++unsorted; }
        fprintf(stderr, "kept: n %d hash %016llx unsorted %d first %d %d %d last %d\n", nk, (unsigned long long) h, unsorted, kept[0], kept[1], kept[2], kept[B-1]);
    }
    llama_batch_free(b);
    llama_free(c);
    fprintf(stderr, "loop %d done\n", loop);
    }
    llama_model_free(m);
    fprintf(stderr, "OK\n");
    return 0;
}
