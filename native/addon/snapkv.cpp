// RepoSnap addon: Session's SnapKV methods (llama_snapkv_* of native/patches). See common.h.
#include "session.h"

#include <algorithm>
#include <string>
#include <vector>

namespace reposnap_addon {

namespace {

// outcome of a llama_snapkv_* request
struct snap_outcome {
    int32_t status = 0;
    std::string error;
    llama_snapkv_result res = {};
};

// { status, error, L, B, nLayer, nHeadKv, ms, kept, graphs, chunkHeads } of a compaction or a
// scoring; B = cells held after it, kept = rows kept over all layers and KV heads, graphs = graph
// runs it took, chunkHeads = KV heads scored together (0: no scoring)
Napi::Value snap_result(Napi::Env env, snap_outcome & r) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("status",  r.status);
    o.Set("error",   r.error);
    o.Set("L",       r.res.n_before);
    o.Set("B",       r.res.n_after);
    o.Set("nLayer",  r.res.n_layer);
    o.Set("nHeadKv", r.res.n_head_kv);
    o.Set("ms",      r.res.t_ms);
    o.Set("kept",    (double) r.res.n_kept);
    o.Set("graphs",     r.res.n_graphs);
    o.Set("chunkHeads", r.res.n_chunk_heads);
    return o;
}

// runs request(ctx, &res) off the JS thread; resolves to snap_result()
template <typename F>
Napi::Promise snap_run(Napi::Env env, llama_context * ctx, F request) {
    return PromiseWorker<snap_outcome>::run(env,
        [ctx, request]() {
            snap_outcome r;
            r.status = request(ctx, &r.res);
            if (r.status < 0) {
                r.error = llama_snapkv_last_error(ctx);
            }
            return r;
        },
        snap_result);
}

// { window, budget, kernel, pooling: 'max'|'avg', force, keepScores } -> llama_snapkv_params
llama_snapkv_params snap_params(const Napi::Object & o) {
    llama_snapkv_params p = llama_snapkv_default_params();
    p.n_window    = opt<int32_t>(o, "window", p.n_window);
    p.n_budget    = opt<int32_t>(o, "budget", p.n_budget);
    p.kernel      = opt<int32_t>(o, "kernel", p.kernel);
    p.pooling     = opt<std::string>(o, "pooling", "max") == "avg" ? LLAMA_SNAPKV_POOLING_AVG : LLAMA_SNAPKV_POOLING_MAX;
    p.force       = opt<bool>(o, "force", false);
    p.keep_scores = opt<bool>(o, "keepScores", false);
    return p;
}

} // namespace

// snap(seqId, { window, budget, kernel, pooling, force, keepScores }) -> Promise<{status, error, L, B, ...}>:
// llama_snapkv_compact (uniform SnapKV on the device)
Napi::Value Session::Snap(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    check(env);
    const llama_seq_id seq = info[0].As<Napi::Number>().Int32Value();
    const llama_snapkv_params p = snap_params(info[1].As<Napi::Object>());
    return snap_run(env, ctx, [seq, p](llama_context * c, llama_snapkv_result * res) {
        return llama_snapkv_compact(c, seq, p, res);
    });
}

// snapScore(seqId, { window, kernel, pooling }) -> Promise<{status, error, L, B, ...}>: llama_snapkv_score
// (pooled scores only, read with snapScores(); the cells are unchanged)
Napi::Value Session::SnapScore(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    check(env);
    const llama_seq_id seq = info[0].As<Napi::Number>().Int32Value();
    const llama_snapkv_params p = snap_params(info[1].As<Napi::Object>());
    return snap_run(env, ctx, [seq, p](llama_context * c, llama_snapkv_result * res) {
        return llama_snapkv_score(c, seq, p, res);
    });
}

// compactKept(seqId, budget, kept: Int32Array [n_layer][n_head_kv][budget] positions) -> Promise<{status, ...}>
Napi::Value Session::CompactKept(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    check(env);
    const llama_seq_id seq = info[0].As<Napi::Number>().Int32Value();
    const int32_t n_budget = info[1].As<Napi::Number>().Int32Value();
    auto arr = info[2].As<Napi::Int32Array>();
    std::vector<int32_t> kept(arr.Data(), arr.Data() + arr.ElementLength());
    return snap_run(env, ctx, [seq, n_budget, kept](llama_context * c, llama_snapkv_result * res) {
        return llama_snapkv_compact_kept(c, seq, n_budget, kept.data(), kept.size(), res);
    });
}

// snapKeyNorms(seqId) -> Promise<{status, error, L, B, nLayer, nHeadKv, ms, kept, norms: Float32Array
// [n_layer][n_head_kv][L]}>: llama_snapkv_key_norms (its size query, then the norms; the cells are unchanged)
Napi::Value Session::SnapKeyNorms(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    check(env);
    const llama_seq_id seq = info[0].As<Napi::Number>().Int32Value();
    struct norms_outcome {
        snap_outcome r;
        std::vector<float> norms;
    };
    return PromiseWorker<norms_outcome>::run(env,
        [c = ctx, seq]() {
            norms_outcome o;
            o.r.status = llama_snapkv_key_norms(c, seq, nullptr, 0, &o.r.res);
            if (o.r.status == LLAMA_SNAPKV_OK) {
                o.norms.resize((size_t) o.r.res.n_layer*o.r.res.n_head_kv*o.r.res.n_before);
                o.r.status = llama_snapkv_key_norms(c, seq, o.norms.data(), o.norms.size(), &o.r.res);
            }
            if (o.r.status < 0) {
                o.r.error = llama_snapkv_last_error(c);
                o.norms.clear();
            }
            return o;
        },
        [](Napi::Env e, norms_outcome & o) -> Napi::Value {
            Napi::Object out = snap_result(e, o.r).As<Napi::Object>();
            auto arr = Napi::Float32Array::New(e, o.norms.size());
            std::copy(o.norms.begin(), o.norms.end(), arr.Data());
            out.Set("norms", arr);
            return out;
        });
}

Napi::Value Session::SnapCapture(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    check(env);
    const int32_t r = llama_snapkv_capture(ctx, info[0].As<Napi::Number>().Int32Value(), info[1].As<Napi::Number>().Int32Value());
    if (r < 0) {
        // status: the llama_snapkv_status (snapStatus) that says why
        Napi::Error err = Napi::Error::New(env, std::string("SnapKV capture: ") + llama_snapkv_last_error(ctx));
        err.Set("status", Napi::Number::New(env, r));
        throw err;
    }
    return env.Undefined();
}

Napi::Value Session::SnapKept(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    check(env);
    const int32_t n = llama_snapkv_get_kept(ctx, nullptr, 0);
    auto out = Napi::Int32Array::New(env, std::max(n, 0));
    if (n > 0) llama_snapkv_get_kept(ctx, out.Data(), n);
    return out;
}

Napi::Value Session::SnapScores(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    check(env);
    const int32_t n = llama_snapkv_get_scores(ctx, nullptr, 0);
    auto out = Napi::Float32Array::New(env, std::max(n, 0));
    if (n > 0) llama_snapkv_get_scores(ctx, out.Data(), n);
    return out;
}

Napi::Object snap_status(Napi::Env env) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("ok",         (int32_t) LLAMA_SNAPKV_OK);
    o.Set("noop",       (int32_t) LLAMA_SNAPKV_NOOP);
    o.Set("errParams",  (int32_t) LLAMA_SNAPKV_ERR_PARAMS);
    o.Set("errMemory",  (int32_t) LLAMA_SNAPKV_ERR_MEMORY);
    o.Set("errModel",   (int32_t) LLAMA_SNAPKV_ERR_MODEL);
    o.Set("errLayout",  (int32_t) LLAMA_SNAPKV_ERR_LAYOUT);
    o.Set("errWindow",  (int32_t) LLAMA_SNAPKV_ERR_WINDOW);
    o.Set("errCompute", (int32_t) LLAMA_SNAPKV_ERR_COMPUTE);
    o.Freeze();
    return o;
}

} // namespace reposnap_addon
