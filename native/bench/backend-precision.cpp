// backend-precision: where a GPU backend's forward pass departs from the CPU's, node by node
// (issue 18: why the Vulkan lane's float64-reference tests were off; bench/results/vulkan-precision-issue18.md).
// Loads MODEL twice from the same build: every layer on the build's GPU device (n_gpu_layers 999) and
// every layer on the CPU (n_gpu_layers 0, op_offload off, so no product is sent to the device); prefills
// the same N tokens (BOS, then a fixed pseudo-random sequence) in each with an eval callback
// (llama_context_params.cb_eval, ggml_backend_sched_eval_callback) that keeps every contiguous F32 node
// by name and occurrence; prints, in the CPU graph's order, each node both computed: its op, shape,
// max|x| (CPU), max|Δ| and max|Δ|/max|x|. Flash attention off, f32 K/V cache: the CPU side is then
// exact to f32 rounding, so the relative column is the GPU backend's own rounding. No Node.js. Not
// built by default; from the repository root, after REPOSNAP_GPU=vulkan npm run build:native:
//   B=native/build/cmake-vulkan; L=native/build/llama.cpp
//   g++ -O2 -std=c++17 -I $L/include -I $L/ggml/include native/bench/backend-precision.cpp -o backend-precision \
//     $B/llama.cpp/src/libllama.a $B/llama.cpp/ggml/src/libggml.a -ldl $B/llama.cpp/ggml/src/libggml-cpu.a \
//     $B/llama.cpp/ggml/src/ggml-rpc/libggml-rpc.a $B/llama.cpp/ggml/src/ggml-vulkan/libggml-vulkan.a \
//     $B/llama.cpp/ggml/src/libggml-base.a -fopenmp -lpthread -lm -lvulkan
//   GGML_VK_VISIBLE_DEVICES=0 ./backend-precision ../shared/models/stories260K.gguf 380 [max rows]
// ggml-vulkan's switches apply as usual (e.g. GGML_VK_DISABLE_F16=1: no 16-bit float arithmetic).
#include "llama.h"
#include "ggml.h"
#include "ggml-backend.h"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace {

struct node_values {
    std::string key;      // name#occurrence
    int op;
    int64_t ne[4];
    std::vector<float> x;
};

struct recorder {
    std::vector<node_values> nodes;
    std::map<std::string, int> seen;
};

bool record(ggml_tensor * t, bool ask, void * user) {
    if (ask) return true; // every node: the scheduler computes the graph node by node
    if (t->type != GGML_TYPE_F32 || !ggml_is_contiguous(t)) return true;
    auto * r = static_cast<recorder *>(user);
    const std::string name = t->name;
    node_values v;
    v.key = name + "#" + std::to_string(r->seen[name]++);
    v.op = t->op;
    for (int i = 0; i < 4; i++) v.ne[i] = t->ne[i];
    v.x.resize(ggml_nelements(t));
    ggml_backend_tensor_get(t, v.x.data(), 0, ggml_nbytes(t));
    r->nodes.push_back(std::move(v));
    return true;
}

// One prefill of toks with every layer on the GPU (gpu) or on the CPU; returns the recorded nodes.
recorder run(const char * path, bool gpu, const std::vector<llama_token> & toks) {
    auto mp = llama_model_default_params();
    mp.n_gpu_layers = gpu ? 999 : 0;
    llama_model * m = llama_model_load_from_file(path, mp);
    if (!m) { fprintf(stderr, "cannot load %s\n", path); exit(1); }
    recorder r;
    auto cp = llama_context_default_params();
    cp.n_ctx = 1024; cp.n_batch = 512; cp.n_ubatch = 512;
    cp.cb_eval = record; cp.cb_eval_user_data = &r;
    cp.op_offload = gpu;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = GGML_TYPE_F32; cp.type_v = GGML_TYPE_F32;
    cp.n_threads = 1; cp.n_threads_batch = 1;
    llama_context * c = llama_init_from_model(m, cp);
    if (!c) { fprintf(stderr, "cannot create a context\n"); exit(1); }
    std::vector<llama_token> t = toks;
    if (llama_decode(c, llama_batch_get_one(t.data(), (int32_t) t.size()))) { fprintf(stderr, "decode failed\n"); exit(1); }
    llama_free(c);
    llama_model_free(m);
    return r;
}

} // namespace

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: backend-precision MODEL [n_tokens=380] [rows=all]\n"); return 2; }
    const int n = argc > 2 ? atoi(argv[2]) : 380;
    const size_t rows = argc > 3 ? (size_t) atoi(argv[3]) : SIZE_MAX;
    llama_backend_init();
#ifdef GGML_BACKEND_DL
    ggml_backend_load_all(); // a portable build's backend modules, beside the executable
#endif
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    std::vector<llama_token> toks;
    {
        auto mp = llama_model_default_params();
        mp.n_gpu_layers = 0;
        mp.vocab_only = true;
        llama_model * m = llama_model_load_from_file(argv[1], mp);
        if (!m) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
        const int nv = llama_vocab_n_tokens(llama_model_get_vocab(m));
        toks.push_back(llama_vocab_bos(llama_model_get_vocab(m)));
        for (int i = 1; i < n; i++) toks.push_back(3 + (i * 7919) % (nv - 3));
        llama_model_free(m);
    }
    const recorder cpu = run(argv[1], false, toks);
    const recorder gpu = run(argv[1], true, toks);
    std::map<std::string, const node_values *> by_key;
    for (const auto & v : gpu.nodes) by_key[v.key] = &v;
    printf("%-32s %-12s %-22s %11s %11s %11s\n", "node", "op", "shape", "max|x|", "max|d|", "rel");
    size_t printed = 0;
    for (const auto & a : cpu.nodes) {
        auto it = by_key.find(a.key);
        if (it == by_key.end() || it->second->x.size() != a.x.size()) continue;
        double mx = 0, md = 0;
        for (size_t i = 0; i < a.x.size(); i++) {
            mx = std::max(mx, (double) std::fabs(a.x[i]));
            md = std::max(md, std::fabs((double) a.x[i] - (double) it->second->x[i]));
        }
        char shape[64];
        snprintf(shape, sizeof shape, "%lld,%lld,%lld,%lld", (long long) a.ne[0], (long long) a.ne[1], (long long) a.ne[2], (long long) a.ne[3]);
        printf("%-32s %-12s %-22s %11.3e %11.3e %11.3e\n", a.key.c_str(), ggml_op_name((ggml_op) a.op), shape, mx, md, mx > 0 ? md / mx : 0.0);
        if (++printed >= rows) break;
    }
    return 0;
}
