// snapkv-compact-test: the SnapKV patch series on its own, through llama.h only (no RepoSnap code
// but native/common/synthetic-model.h). Built with the engine (native/build.mjs) and run by
// test/engine/native-compact.test.ts; exits 0 when every check holds, 1 otherwise.
//
// On a tiny synthetic llama (3 layers, 4 query heads, 2 KV heads, head size 16, F32 weights and
// F32 K/V cache), flash attention off (transposed V) and on, a prompt of L tokens is decoded and:
//   1. keep-all: llama_snapkv_compact() with B = L (forced) leaves the next token's logits
//      bit-identical to the uncompressed cache's; llama_snapkv_score() before it changes no cell
//      and gives the compaction's own pooled scores, bit for bit;
//   2. same rows for every head: compacting to a subset S equals the uncompressed cache with the
//      other positions removed (llama_memory_seq_rm leaves holes, the positions unchanged);
//   3. per-head rows of different lengths: each (layer, KV head)'s K and V rows in cells [0, C) are
//      byte-equal to that head's rows of the kept positions before compaction, and the state's
//      mask section hides exactly each head's unfilled slots; the next token's logits equal those
//      of the *uncompressed* cache with each head's dropped positions hidden by a per-head mask
//      (the uncompressed state with a version-1 mask section added, loaded into a fresh context),
//      and differ from the unmasked uncompressed cache's (so the masks take effect);
//   4. llama_snapkv_key_norms(): its size query, a wrong dst size and an empty sequence refused
//      with LLAMA_SNAPKV_ERR_PARAMS, and norms equal to those of the K rows the state holds.
// The states are read in upstream llama.cpp's layout (llama_kv_cache::state_write), written out
// below, which also checks that a state without a mask has no extra section.
#include "llama.h"
#include "ggml-backend.h"
#include "synthetic-model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int N_LAYER = 3, N_EMBD = 64, N_HEAD = 4, N_HEAD_KV = 2, HEAD_DIM = N_EMBD/N_HEAD, N_VOCAB = 256;
constexpr int L = 96;                     // prompt tokens
constexpr uint32_t MASK_MAGIC = 0x4D564B53; // "SKVM"
constexpr uint32_t SEQ_STATE_MAGIC = 0xaf143cd8; // llama_context::state_seq_get_data's io_magic, then the i32 seq_id

int g_failed = 0;

void check(bool ok, const std::string & what) {
    printf("%s - %s\n", ok ? "ok" : "FAIL", what.c_str());
    g_failed += !ok;
}

// a state in upstream's layout: per cell its position, per layer and KV head its K and V rows
struct state_view {
    std::vector<int32_t> pos;     // [cells]
    bool v_trans = false;
    std::vector<float> k, v;      // [layer][cell][n_embd_kv] (V transposed back to rows)
    std::vector<uint8_t> mask;    // [cell][layer*N_HEAD_KV + head], empty without a section
    uint32_t mask_version = 0;
    size_t meta_end = 0;          // byte offset after the cell meta
};

bool parse_state(const std::vector<uint8_t> & b, state_view & s, std::string & err) {
    size_t o = 0;
    auto rd = [&](void * dst, size_t n) { if (o + n > b.size()) { throw std::string("truncated at ") + std::to_string(o); } memcpy(dst, b.data() + o, n); o += n; };
    auto u32 = [&]() { uint32_t x; rd(&x, 4); return x; };
    auto u64 = [&]() { uint64_t x; rd(&x, 8); return x; };
    try {
        const int n_embd_kv = N_HEAD_KV*HEAD_DIM;
        if (u32() != SEQ_STATE_MAGIC || u32() != 0) throw std::string("not a state of sequence 0");
        if (u32() != 1) throw std::string("n_stream != 1");
        const uint32_t n = u32();
        s.pos.resize(n);
        for (uint32_t i = 0; i < n; ++i) {
            s.pos[i] = (int32_t) u32();
            if (u32() != 1 || u32() != 0) throw std::string("cell not of sequence 0 alone");
        }
        s.meta_end = o;
        uint32_t v_trans = u32();
        if (v_trans == MASK_MAGIC) {
            s.mask_version = u32();
            const uint32_t stride = u32();
            if (stride != N_LAYER*N_HEAD_KV) throw std::string("mask stride ") + std::to_string(stride);
            s.mask.resize((size_t) n*stride);
            rd(s.mask.data(), s.mask.size());
            v_trans = u32();
        }
        if (v_trans > 1) throw std::string("v_trans ") + std::to_string(v_trans);
        s.v_trans = v_trans;
        if (u32() != N_LAYER) throw std::string("n_layer");
        s.k.resize((size_t) N_LAYER*n*n_embd_kv);
        s.v.resize(s.k.size());
        for (int l = 0; l < N_LAYER; ++l) {
            if (u32() != GGML_TYPE_F32 || u64() != (uint64_t) n_embd_kv*4) throw std::string("K type/row");
            rd(s.k.data() + (size_t) l*n*n_embd_kv, (size_t) n*n_embd_kv*4);
        }
        for (int l = 0; l < N_LAYER; ++l) {
            if (u32() != GGML_TYPE_F32) throw std::string("V type");
            if (!v_trans) {
                if (u64() != (uint64_t) n_embd_kv*4) throw std::string("V row");
                rd(s.v.data() + (size_t) l*n*n_embd_kv, (size_t) n*n_embd_kv*4);
            } else {
                if (u32() != 4 || u32() != (uint32_t) n_embd_kv) throw std::string("V element/channels");
                for (int c = 0; c < n_embd_kv; ++c) {
                    for (uint32_t i = 0; i < n; ++i) {
                        float x;
                        rd(&x, 4);
                        s.v[((size_t) l*n + i)*n_embd_kv + c] = x;
                    }
                }
            }
        }
        if (o != b.size()) throw std::string("trailing bytes");
    } catch (const std::string & e) {
        err = e;
        return false;
    }
    return true;
}

std::vector<uint8_t> get_state(llama_context * ctx) {
    std::vector<uint8_t> b(llama_state_seq_get_size(ctx, 0));
    b.resize(llama_state_seq_get_data(ctx, b.data(), b.size(), 0));
    return b;
}

llama_context * make_ctx(llama_model * model, bool fa) {
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 512;
    cp.n_batch = 512;
    cp.n_ubatch = 512;
    cp.n_seq_max = 1;
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    cp.kv_unified = true;
    cp.no_perf = true;
    cp.type_k = GGML_TYPE_F32;
    cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = fa ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    return llama_init_from_model(model, cp);
}

// decode tokens at positions pos0.. of sequence 0; the logits of the last one
std::vector<float> decode(llama_context * ctx, const std::vector<llama_token> & toks, int pos0) {
    llama_batch batch = llama_batch_init((int32_t) toks.size(), 0, 1);
    for (size_t i = 0; i < toks.size(); ++i) {
        batch.token[i] = toks[i];
        batch.pos[i] = pos0 + (int) i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = i + 1 == toks.size();
    }
    batch.n_tokens = (int32_t) toks.size();
    const int32_t r = llama_decode(ctx, batch);
    llama_batch_free(batch);
    if (r != 0) {
        return {};
    }
    const float * lg = llama_get_logits_ith(ctx, -1);
    return std::vector<float>(lg, lg + N_VOCAB);
}

float max_abs_diff(const std::vector<float> & a, const std::vector<float> & b) {
    if (a.size() != b.size() || a.empty()) return INFINITY;
    float d = 0.0f;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
    return d;
}

// kept rows [layer][head] -> the flat, -1 padded [N_LAYER][N_HEAD_KV][C] array of llama_snapkv_compact_kept()
std::vector<int32_t> flatten(const std::vector<std::vector<std::vector<int32_t>>> & rows, int32_t & C) {
    C = 0;
    for (const auto & layer : rows) for (const auto & r : layer) C = std::max<int32_t>(C, (int32_t) r.size());
    std::vector<int32_t> flat((size_t) N_LAYER*N_HEAD_KV*C, -1);
    for (int l = 0; l < N_LAYER; ++l) for (int h = 0; h < N_HEAD_KV; ++h) std::copy(rows[l][h].begin(), rows[l][h].end(), flat.begin() + ((size_t) l*N_HEAD_KV + h)*C);
    return flat;
}

void run(llama_model * model, bool fa) {
    const std::string tag = std::string(" (flash attention ") + (fa ? "on)" : "off)");
    std::vector<llama_token> prompt(L);
    for (int i = 0; i < L; ++i) prompt[i] = (llama_token) ((i*37 + 11) % N_VOCAB);
    const std::vector<llama_token> next = { 42 };
    // the same keys in other cells: F32 attention sums the same terms (in another order when the
    // kept cells are spread out); flash attention on the CPU rounds Q and the partial sums to F16,
    // so its results depend on where the keys lie at F16 resolution
    const float tol = fa ? 1e-2f : 1e-5f;

    // the uncompressed reference
    llama_context * full = make_ctx(model, fa);
    decode(full, prompt, 0);
    const std::vector<uint8_t> s_full = get_state(full);
    const std::vector<float> lg_full = decode(full, next, L);
    state_view v_full;
    std::string err;
    check(parse_state(s_full, v_full, err) && v_full.mask.empty(), "an uncompressed state is upstream's layout, no mask section" + tag + (err.empty() ? "" : ": " + err));
    bool in_order = (int) v_full.pos.size() == L;
    for (int i = 0; in_order && i < L; ++i) in_order = v_full.pos[i] == i;
    check(in_order, "the uncompressed state holds positions 0..L-1 in cells 0..L-1" + tag);

    // 1. keep-all: SnapKV with B = L, forced (L <= B is otherwise nothing to do)
    {
        llama_context * ctx = make_ctx(model, fa);
        const int32_t armed = llama_snapkv_capture(ctx, 0, 16);
        decode(ctx, prompt, 0);
        llama_snapkv_params p = llama_snapkv_default_params();
        p.n_window = 16;
        p.n_budget = L;
        p.force    = true;

        // score only (the start of a caller's own allocation): no cell changes
        llama_snapkv_result res_s = {};
        const int32_t st_s = llama_snapkv_score(ctx, 0, p, &res_s);
        std::vector<float> scored(std::max(0, llama_snapkv_get_scores(ctx, nullptr, 0)));
        llama_snapkv_get_scores(ctx, scored.data(), scored.size());
        check(st_s == LLAMA_SNAPKV_OK && res_s.n_before == L && res_s.n_after == L && scored.size() == (size_t) N_LAYER*N_HEAD_KV*(L - 16),
                "score only: [n_layer][n_head_kv][L - w] scores, the sequence's L cells unchanged" + tag + " " + llama_snapkv_last_error(ctx));

        p.keep_scores = true;
        llama_snapkv_result res = {};
        const int32_t st = llama_snapkv_compact(ctx, 0, p, &res);
        check(armed == LLAMA_SNAPKV_OK && st == LLAMA_SNAPKV_OK && res.n_after == L, "keep-all SnapKV (B = L, forced) compacts" + tag + " " + llama_snapkv_last_error(ctx));
        std::vector<float> kept_scores(std::max(0, llama_snapkv_get_scores(ctx, nullptr, 0)));
        llama_snapkv_get_scores(ctx, kept_scores.data(), kept_scores.size());
        check(kept_scores == scored, "score only: the compaction's own pooled scores, bit for bit" + tag);
        const float d = max_abs_diff(decode(ctx, next, L), lg_full);
        check(d == 0.0f, "keep-all: logits bit-identical to the uncompressed cache" + tag + ", max |dlogit| = " + std::to_string(d));
        llama_free(ctx);
    }

    // 2. the same rows for every head vs the uncompressed cache with the rest removed
    {
        std::vector<int32_t> S;
        for (int p = 0; p < L; ++p) if (p % 3 == 0 || p >= L - 8) S.push_back(p);
        std::vector<std::vector<std::vector<int32_t>>> rows(N_LAYER, std::vector<std::vector<int32_t>>(N_HEAD_KV, S));
        int32_t C = 0;
        const auto flat = flatten(rows, C);
        llama_context * ctx = make_ctx(model, fa);
        decode(ctx, prompt, 0);
        llama_snapkv_result res = {};
        const int32_t st = llama_snapkv_compact_kept(ctx, 0, C, flat.data(), flat.size(), &res);
        check(st == LLAMA_SNAPKV_OK && res.n_before == L && res.n_after == C, "uniform compact_kept: " + std::to_string(L) + " -> " + std::to_string(C) + " cells" + tag + " " + llama_snapkv_last_error(ctx));
        const std::vector<float> lg = decode(ctx, next, L);

        llama_context * holes = make_ctx(model, fa);
        decode(holes, prompt, 0);
        llama_memory_t mem = llama_get_memory(holes);
        for (int p = 0; p < L; ++p) {
            if (!std::binary_search(S.begin(), S.end(), p)) llama_memory_seq_rm(mem, 0, p, p + 1);
        }
        const std::vector<float> lg_holes = decode(holes, next, L);
        const float d = max_abs_diff(lg, lg_holes);
        check(d <= tol, "same rows for every head: logits match the uncompressed cache with the other positions removed" + tag + ", max |dlogit| = " + std::to_string(d));
        llama_free(holes);
        llama_free(ctx);
    }

    // 3. per-head rows of different lengths
    {
        std::vector<std::vector<std::vector<int32_t>>> rows(N_LAYER, std::vector<std::vector<int32_t>>(N_HEAD_KV));
        for (int l = 0; l < N_LAYER; ++l) {
            for (int h = 0; h < N_HEAD_KV; ++h) {
                const int step = 2 + l + 2*h; // 2..7: rows of 14..48 positions
                for (int p = 0; p < L - 1; ++p) if (p % step == 0 || (p + l + h) % 11 == 0) rows[l][h].push_back(p);
                rows[l][h].push_back(L - 1);
            }
        }
        int32_t C = 0;
        const auto flat = flatten(rows, C);
        llama_context * ctx = make_ctx(model, fa);
        decode(ctx, prompt, 0);
        llama_snapkv_result res = {};
        const int32_t st = llama_snapkv_compact_kept(ctx, 0, C, flat.data(), flat.size(), &res);
        int64_t n_rows = 0;
        for (const auto & layer : rows) for (const auto & r : layer) n_rows += (int64_t) r.size();
        check(st == LLAMA_SNAPKV_OK && res.n_after == C && res.n_kept == n_rows, "per-head compact_kept: " + std::to_string(n_rows) + " rows in " + std::to_string(C) + " cells" + tag + " " + llama_snapkv_last_error(ctx));

        state_view v;
        const std::vector<uint8_t> s = get_state(ctx);
        check(parse_state(s, v, err) && (int) v.pos.size() == C && v.mask_version == 1, "the compacted state has C cells and a version-1 mask section" + tag + (err.empty() ? "" : ": " + err));
        if ((int) v.pos.size() == C && !v.mask.empty()) {
            const int n_embd_kv = N_HEAD_KV*HEAD_DIM;
            int bad_rows = 0, bad_mask = 0;
            for (int l = 0; l < N_LAYER; ++l) {
                for (int h = 0; h < N_HEAD_KV; ++h) {
                    const auto & r = rows[l][h];
                    for (int j = 0; j < C; ++j) {
                        bad_mask += v.mask[(size_t) j*N_LAYER*N_HEAD_KV + l*N_HEAD_KV + h] != (j >= (int) r.size());
                        if (j >= (int) r.size()) continue;
                        const size_t dst = ((size_t) l*C + j)*n_embd_kv + h*HEAD_DIM;
                        const size_t src = ((size_t) l*L + r[j])*n_embd_kv + h*HEAD_DIM;
                        bad_rows += memcmp(&v.k[dst], &v_full.k[src], HEAD_DIM*4) != 0;
                        bad_rows += memcmp(&v.v[dst], &v_full.v[src], HEAD_DIM*4) != 0;
                    }
                }
            }
            check(bad_rows == 0, "every head's K and V rows in cells [0, C) are its kept rows, byte for byte" + tag + " (" + std::to_string(bad_rows) + " differ)");
            check(bad_mask == 0, "the mask hides exactly each head's unfilled slots" + tag + " (" + std::to_string(bad_mask) + " wrong)");
            check(v.pos[C - 1] == L - 1, "the last cell keeps the last position, so decoding continues at L" + tag);
        }
        const std::vector<float> lg = decode(ctx, next, L);

        // the masked uncompressed reference: the uncompressed state plus a mask section hiding from
        // each (layer, KV head) the positions it dropped
        std::vector<uint8_t> masked(s_full.begin(), s_full.begin() + v_full.meta_end);
        auto put = [&](uint32_t x) { const uint8_t * p = (const uint8_t *) &x; masked.insert(masked.end(), p, p + 4); };
        put(MASK_MAGIC);
        put(1);
        put(N_LAYER*N_HEAD_KV);
        for (int p = 0; p < L; ++p) {
            for (int l = 0; l < N_LAYER; ++l) {
                for (int h = 0; h < N_HEAD_KV; ++h) {
                    masked.push_back(!std::binary_search(rows[l][h].begin(), rows[l][h].end(), p));
                }
            }
        }
        masked.insert(masked.end(), s_full.begin() + v_full.meta_end, s_full.end());
        llama_context * ref = make_ctx(model, fa);
        const bool loaded = llama_state_seq_set_data(ref, masked.data(), masked.size(), 0) != 0;
        check(loaded, "the masked uncompressed state loads" + tag + " " + llama_snapkv_last_error(ref));
        const std::vector<float> lg_ref = decode(ref, next, L);
        const float d = max_abs_diff(lg, lg_ref);
        const float d_unmasked = max_abs_diff(lg, lg_full);
        check(d <= tol, "per-head rows: logits match the masked uncompressed cache" + tag + ", max |dlogit| = " + std::to_string(d));
        check(d_unmasked > 1e-3f, "and differ from the unmasked uncompressed cache's" + tag + ", max |dlogit| = " + std::to_string(d_unmasked));

        // a version this engine does not know is refused, with a message that says so
        masked[v_full.meta_end + 4] = 2;
        llama_context * fut = make_ctx(model, fa);
        const bool refused = llama_state_seq_set_data(fut, masked.data(), masked.size(), 0) == 0;
        const std::string msg = llama_snapkv_last_error(fut);
        check(refused && msg.find("version 2") != std::string::npos, "a mask section of version 2 is refused: " + msg + tag);
        llama_free(fut);
        llama_free(ref);
        llama_free(ctx);
    }

    // 4. key norms (llama_snapkv_key_norms): the size query, a wrong size and an empty sequence
    //    refused, and the norms of the K rows the uncompressed state holds
    {
        llama_context * ctx = make_ctx(model, fa);
        llama_snapkv_result res = {};
        int32_t st = llama_snapkv_key_norms(ctx, 0, nullptr, 0, &res);
        const std::string empty_err = llama_snapkv_last_error(ctx);
        check(st == LLAMA_SNAPKV_ERR_PARAMS && empty_err.find("holds no cells") != std::string::npos, "key norms of an empty sequence are refused: " + empty_err + tag);
        decode(ctx, prompt, 0);
        st = llama_snapkv_key_norms(ctx, 0, nullptr, 0, &res);
        check(st == LLAMA_SNAPKV_OK && res.n_before == L && res.n_layer == N_LAYER && res.n_head_kv == N_HEAD_KV, "key norms: the size query gives [n_layer][n_head_kv][L]" + tag);
        std::vector<float> norms((size_t) N_LAYER*N_HEAD_KV*L);
        st = llama_snapkv_key_norms(ctx, 0, norms.data(), norms.size() - 1, &res);
        const std::string size_err = llama_snapkv_last_error(ctx);
        check(st == LLAMA_SNAPKV_ERR_PARAMS && size_err.find("dst holds") != std::string::npos, "key norms into a dst of the wrong size are refused: " + size_err + tag);
        st = llama_snapkv_key_norms(ctx, 0, norms.data(), norms.size(), &res);
        double worst = 0.0;
        for (int l = 0; l < N_LAYER; ++l) {
            for (int h = 0; h < N_HEAD_KV; ++h) {
                for (int p = 0; p < L; ++p) {
                    const float * k = &v_full.k[((size_t) l*L + p)*N_HEAD_KV*HEAD_DIM + h*HEAD_DIM];
                    double acc = 0.0;
                    for (int d = 0; d < HEAD_DIM; ++d) acc += (double) k[d]*k[d];
                    const double want = std::sqrt(acc);
                    worst = std::max(worst, std::fabs(norms[((size_t) l*N_HEAD_KV + h)*L + p] - want)/want);
                }
            }
        }
        check(st == LLAMA_SNAPKV_OK && worst < 1e-6, "key norms equal the norms of the state's K rows (max relative difference " + std::to_string(worst) + ")" + tag);
        llama_free(ctx);
    }
    llama_free(full);
}

void quiet(ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR && getenv("SNAPKV_TEST_VERBOSE")) fputs(text, stderr);
}

} // namespace

int main() {
    llama_log_set(quiet, nullptr);
    llama_backend_init();
#ifdef GGML_BACKEND_DL
    ggml_backend_load_all(); // a portable build's backend modules, beside the executable
#endif
    reposnap::synthetic_shape sh;
    sh.n_layer = N_LAYER; sh.n_embd = N_EMBD; sh.n_head = N_HEAD; sh.n_head_kv = N_HEAD_KV;
    sh.n_ff = 128; sh.n_vocab = N_VOCAB; sh.n_ctx = 1024; sh.wtype = GGML_TYPE_F32; sh.seed = 7;
    llama_model * model = reposnap::make_synthetic_model(sh, 0);
    if (!model) {
        fprintf(stderr, "snapkv-compact-test: cannot create the synthetic model\n");
        return 1;
    }
    for (bool fa : { false, true }) {
        run(model, fa);
    }
    llama_model_free(model);
    llama_backend_free();
    printf("%s: %d failed\n", g_failed ? "FAIL" : "PASS", g_failed);
    return g_failed ? 1 : 0;
}
