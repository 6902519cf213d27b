// snapkv-bench: SnapKV on the model's own backend (CPU, or the GPU of a CUDA/Vulkan/Metal
// build), measured in one run on a synthetic llama created in memory with
// llama_model_init_from_user. No Node.js needed: bench/gpu.sh builds and runs it on a GPU box.
//
//   snapkv-bench [--layers 32] [--embd 4096] [--heads 32] [--kv-heads 8] [--ff 14336]
//                [--vocab 32000] [--wtype q4_0] [--kv f16] [--fa 1] [--ngl 999]
//                [--lengths 32768,131072] [--budgets 2048,1024,256] [--window 32] [--decode 16]
//                [--ubatch 512] [--threads N] [--bandwidth GB/s]
//
// Per L: prefill tok/s; decode ms/token uncompressed; then SnapKV L -> B (its graph runs and KV heads
// per scoring chunk, llama_snapkv_result.n_graphs and n_chunk_heads) for the largest B and
// decode at B, re-snapping to each smaller B in turn (compaction is in place); decode of a plain
// context of B tokens; KV bytes before and after; the key norms of the L cells
// (llama_snapkv_key_norms, the query-agnostic scorers' input: graph wall time of the second of two
// calls, the first allocating its buffers; on the first row of each L). Beside the measured
// speed-up full / at-B it prints the physical bound of a memory-bound decode step,
// (W + KV_L) / (W + KV_B) with W the weight bytes (llama_model_size) and KV_x the sequence's K and
// V bytes (llama_snapkv_get_kv_stats); with --bandwidth, the floor ms/token of reading W + KV once at
// that bandwidth. The peak memory used on the accelerator devices (total - free, sampled with
// ggml_backend_dev_memory after every step; "-" on a CPU-only build). Prints a markdown table.
#include "llama.h"
#include "synthetic-model.h"
#include "ggml-backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Args {
    uint32_t layers = 32, embd = 4096, heads = 32, kv_heads = 8, ff = 14336, vocab = 32000;
    std::string wtype = "q4_0", kv = "f16";
    bool fa = true;
    int ngl = 999, window = 32, decode = 16, ubatch = 512, threads = (int) std::thread::hardware_concurrency();
    double bandwidth_gbs = 0; // device memory bandwidth in GB/s (1e9 bytes/s); 0 = not given
    std::vector<int> lengths = { 32768, 131072 };
    std::vector<int> budgets = { 2048, 1024, 256 };
};

std::vector<int> parse_list(const char * s) {
    std::vector<int> out;
    for (const char * p = s; *p; ) {
        out.push_back(atoi(p));
        const char * c = strchr(p, ',');
        if (!c) break;
        p = c + 1;
    }
    return out;
}

ggml_type type_of(const std::string & s) {
    if (s == "f32") return GGML_TYPE_F32;
    if (s == "f16") return GGML_TYPE_F16;
    if (s == "q8_0") return GGML_TYPE_Q8_0;
    if (s == "q4_0") return GGML_TYPE_Q4_0;
    fprintf(stderr, "unknown type %s\n", s.c_str());
    exit(2);
}

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

llama_model * make_model(const Args & a) {
    reposnap::synthetic_shape sh;
    sh.n_layer = a.layers; sh.n_embd = a.embd; sh.n_head = a.heads; sh.n_head_kv = a.kv_heads;
    sh.n_ff = a.ff; sh.n_vocab = a.vocab; sh.n_ctx = 262144; sh.rope_freq_base = 500000.0f; sh.wtype = type_of(a.wtype);
    return reposnap::make_synthetic_model(sh, a.ngl);
}

struct Ctx {
    llama_context * ctx = nullptr;
    int pos = 0;
};

Ctx make_ctx(llama_model * m, const Args & a, int n_ctx) {
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = a.ubatch;
    cp.n_ubatch = a.ubatch;
    cp.n_seq_max = 1;
    cp.kv_unified = true;
    cp.n_threads = a.threads;
    cp.n_threads_batch = a.threads;
    cp.flash_attn_type = a.fa ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = type_of(a.kv);
    cp.type_v = type_of(a.kv);
    cp.no_perf = true;
    Ctx c;
    c.ctx = llama_init_from_model(m, cp);
    if (!c.ctx) { fprintf(stderr, "context creation failed (n_ctx %d)\n", n_ctx); exit(1); }
    return c;
}

/**
 * Peak bytes in use on the accelerator devices (GPU, integrated GPU) since the start: total - free
 * of each such device (ggml_backend_dev_memory), summed, maximum over every call. -1 when the
 * build has no accelerator device (CPU only).
 */
double g_peak_dev = -1;
void sample_dev_memory() {
    double used = 0;
    bool any = false;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        const auto t = ggml_backend_dev_type(d);
        if (t != GGML_BACKEND_DEVICE_TYPE_GPU && t != GGML_BACKEND_DEVICE_TYPE_IGPU) continue;
        size_t free = 0, total = 0;
        ggml_backend_dev_memory(d, &free, &total);
        used += (double) (total - free);
        any = true;
    }
    if (any) g_peak_dev = std::max(g_peak_dev, used);
}

uint32_t g_rng = 12345;
llama_token rand_token(uint32_t n_vocab) { g_rng = g_rng*1103515245u + 12345u; return 3 + (g_rng >> 8) % (n_vocab - 3); }

void feed(Ctx & c, int n, uint32_t n_vocab, int chunk) {
    llama_batch b = llama_batch_init(chunk, 0, 1);
    for (int done = 0; done < n; ) {
        const int k = std::min(chunk, n - done);
        b.n_tokens = k;
        for (int i = 0; i < k; ++i) {
            b.token[i] = rand_token(n_vocab); b.pos[i] = c.pos + i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = i == k - 1;
        }
        if (llama_decode(c.ctx, b) != 0) { fprintf(stderr, "decode failed\n"); exit(1); }
        c.pos += k; done += k;
    }
    llama_batch_free(b);
    llama_synchronize(c.ctx);
    sample_dev_memory();
}

double decode_ms(Ctx & c, int steps, uint32_t n_vocab) {
    feed(c, 1, n_vocab, 1); // warm-up for the new n_kv
    const double t = now_ms();
    for (int i = 0; i < steps; ++i) feed(c, 1, n_vocab, 1);
    return (now_ms() - t)/steps;
}

/**
 * Wall time [ms] of the key-norm graph over seq 0's cells (llama_snapkv_key_norms, result.t_ms,
 * F32 [n_layer][n_head_kv][L] read back to the host): the second of two calls (the first
 * allocates the graph's buffers). Exits on an error status.
 */
double key_norms_ms(Ctx & c) {
    llama_snapkv_result r = {};
    if (llama_snapkv_key_norms(c.ctx, 0, nullptr, 0, &r) < 0) { fprintf(stderr, "key norms: %s\n", llama_snapkv_last_error(c.ctx)); exit(1); }
    std::vector<float> norms((size_t) r.n_layer*r.n_head_kv*r.n_before);
    for (int i = 0; i < 2; ++i) {
        if (llama_snapkv_key_norms(c.ctx, 0, norms.data(), norms.size(), &r) < 0) { fprintf(stderr, "key norms: %s\n", llama_snapkv_last_error(c.ctx)); exit(1); }
    }
    return r.t_ms;
}

/** The sequence's K and V bytes in the cache (bytes per cell x cells, llama_snapkv_get_kv_stats). */
double kv_bytes(Ctx & c) {
    llama_snapkv_kv_stats st = {};
    llama_snapkv_get_kv_stats(c.ctx, 0, &st);
    return (double) st.bytes_per_cell*st.n_cells;
}


} // namespace

int main(int argc, char ** argv) {
    Args a;
    for (int i = 1; i < argc; i += 2) {
        const std::string k = argv[i];
        if (k == "-h" || k == "--help" || i + 1 >= argc) {
            fprintf(stderr, "usage: %s [--layers N] [--embd N] [--heads N] [--kv-heads N] [--ff N] [--vocab N] [--wtype f32|f16|q8_0|q4_0]\n"
                            "       [--kv f16|q8_0] [--fa 0|1] [--ngl N] [--lengths L1,L2] [--budgets B1,B2] [--window w] [--decode N] [--ubatch N] [--threads N]\n"
                            "       [--bandwidth GB/s]\n", argv[0]);
            return k == "-h" || k == "--help" ? 0 : 2;
        }
        const char * v = argv[i + 1];
        if      (k == "--layers")   a.layers = atoi(v);
        else if (k == "--embd")     a.embd = atoi(v);
        else if (k == "--heads")    a.heads = atoi(v);
        else if (k == "--kv-heads") a.kv_heads = atoi(v);
        else if (k == "--ff")       a.ff = atoi(v);
        else if (k == "--vocab")    a.vocab = atoi(v);
        else if (k == "--wtype")    a.wtype = v;
        else if (k == "--kv")       a.kv = v;
        else if (k == "--fa")       a.fa = atoi(v) != 0;
        else if (k == "--ngl")      a.ngl = atoi(v);
        else if (k == "--window")   a.window = atoi(v);
        else if (k == "--decode")   a.decode = atoi(v);
        else if (k == "--ubatch")   a.ubatch = atoi(v);
        else if (k == "--threads")  a.threads = atoi(v);
        else if (k == "--bandwidth") a.bandwidth_gbs = atof(v);
        else if (k == "--lengths")  a.lengths = parse_list(v);
        else if (k == "--budgets")  a.budgets = parse_list(v);
        else { fprintf(stderr, "unknown option %s\n", k.c_str()); return 2; }
    }
    std::sort(a.budgets.rbegin(), a.budgets.rend());
    llama_log_set([](ggml_log_level l, const char * t, void *) { if (l == GGML_LOG_LEVEL_ERROR) fputs(t, stderr); }, nullptr);
    llama_backend_init();
#ifdef GGML_BACKEND_DL
    ggml_backend_load_all(); // a portable build's backend modules, beside the executable
#endif

    double t0 = now_ms();
    llama_model * model = make_model(a);
    if (!model) { fprintf(stderr, "model creation failed\n"); return 1; }
    char desc[256];
    llama_model_desc(model, desc, sizeof(desc));
    printf("model: synthetic llama %u layers, n_embd %u, heads %u/%u, n_ff %u, vocab %u, %s weights (%.2fB parameters, created in %.1f s); KV %s; flash attention %d; ngl %d; %s\n",
        a.layers, a.embd, a.heads, a.kv_heads, a.ff, a.vocab, a.wtype.c_str(), llama_model_n_params(model)/1e9, (now_ms() - t0)/1000, a.kv.c_str(), a.fa, a.ngl, llama_print_system_info());
    const double w_bytes = (double) llama_model_size(model);
    printf("weights: %.1f MiB%s\n", w_bytes/1048576.0,
        a.bandwidth_gbs > 0 ? (" ; floor ms/token = (weights + KV) / " + std::to_string((int) a.bandwidth_gbs) + " GB/s").c_str() : "");
    printf("\n| L | prefill tok/s | decode ms/tok full | key norms ms | B | snap ms | snap graphs x KV heads per chunk | snap / prefill | decode ms/tok at B | plain context of B | speed-up full / B | bound (W+KV_L)/(W+KV_B) | floor ms full / B | KV MiB | KV MiB after | peak device MiB |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    fflush(stdout);

    for (int L : a.lengths) {
        Ctx c = make_ctx(model, a, L + 4*a.decode + 64);
        if (llama_snapkv_capture(c.ctx, 0, a.window) != 0) { fprintf(stderr, "capture: %s\n", llama_snapkv_last_error(c.ctx)); return 1; }
        double t = now_ms();
        feed(c, L, a.vocab, a.ubatch);
        const double prefill_ms = now_ms() - t;
        const double kv_before = kv_bytes(c);
        const double full_ms = decode_ms(c, a.decode, a.vocab);
        const double norms_ms = key_norms_ms(c);
        bool first = true;
        for (int B : a.budgets) {
            if (B >= L) continue;
            llama_snapkv_params p = llama_snapkv_default_params();
            p.n_window = a.window;
            p.n_budget = B;
            llama_snapkv_result r = {};
            const int st = llama_snapkv_compact(c.ctx, 0, p, &r);
            if (st < 0) { fprintf(stderr, "snap: %s\n", llama_snapkv_last_error(c.ctx)); return 1; }
            const double at_b = decode_ms(c, a.decode, a.vocab);
            Ctx plain = make_ctx(model, a, B + 4*a.decode + 64);
            feed(plain, B, a.vocab, a.ubatch);
            const double plain_ms = decode_ms(plain, a.decode, a.vocab);
            llama_free(plain.ctx);
            const double kv_after = kv_bytes(c);
            const double bound = (w_bytes + kv_before)/(w_bytes + kv_after);
            char floor_ms[64] = "-";
            if (a.bandwidth_gbs > 0) {
                snprintf(floor_ms, sizeof(floor_ms), "%.3f / %.3f", 1e3*(w_bytes + kv_before)/(a.bandwidth_gbs*1e9), 1e3*(w_bytes + kv_after)/(a.bandwidth_gbs*1e9));
            }
            char peak[32] = "-";
            if (g_peak_dev >= 0) snprintf(peak, sizeof(peak), "%.0f", g_peak_dev/1048576.0);
            char norms[32] = "-";
            if (first) snprintf(norms, sizeof(norms), "%.1f", norms_ms);
            printf("| %d | %.0f | %.2f | %s | %d%s | %.1f | %d x %d | %.3f %% | %.2f | %.2f | %.2fx | %.2fx | %s | %.0f | %.0f | %s |\n",
                L, L/(prefill_ms/1000), full_ms, norms, B, first ? "" : " (re-snap)", r.t_ms, r.n_graphs, r.n_chunk_heads, 100.0*r.t_ms/prefill_ms, at_b, plain_ms, full_ms/at_b,
                bound, floor_ms, kv_before/1048576.0, kv_after/1048576.0, peak);
            fflush(stdout);
            first = false;
        }
        llama_free(c.ctx);
    }
    llama_model_free(model);
    return 0;
}
