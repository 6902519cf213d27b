// RepoSnap addon: Session (llama_context) — decode, sampling, state, memory. See common.h.
#include "session.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace reposnap_addon {

void Session::Init(Napi::Env env, Napi::Object exports) {
    Napi::Function f = DefineClass(env, "Session", {
        InstanceMethod("decode",       &Session::Decode),
        InstanceMethod("cancelDecode", &Session::CancelDecode),
        InstanceMethod("logits",       &Session::Logits),
        InstanceMethod("setSampler",   &Session::SetSampler),
        InstanceMethod("sample",       &Session::Sample),
        InstanceMethod("snapCapture",  &Session::SnapCapture),
        InstanceMethod("snap",         &Session::Snap),
        InstanceMethod("snapScore",    &Session::SnapScore),
        InstanceMethod("compactKept",  &Session::CompactKept),
        InstanceMethod("snapKeyNorms", &Session::SnapKeyNorms),
        InstanceMethod("stateGet",     &Session::StateGet),
        InstanceMethod("stateSet",     &Session::StateSet),
        InstanceMethod("snapKept",     &Session::SnapKept),
        InstanceMethod("snapScores",   &Session::SnapScores),
        InstanceMethod("kvStats",      &Session::KvStats),
        InstanceMethod("seqPosMax",    &Session::SeqPosMax),
        InstanceMethod("seqRm",        &Session::SeqRm),
        InstanceMethod("seqCp",        &Session::SeqCp),
        InstanceMethod("clear",        &Session::Clear),
        InstanceMethod("setThreads",   &Session::SetThreads),
        InstanceMethod("dispose",      &Session::Dispose),
    });
    exports.Set("Session", f);
}

// new Session(model, { contextSize, batchSize, ubatchSize, seqMax, threads, threadsBatch, flashAttention, typeK, typeV, swaFull })
Session::Session(const Napi::CallbackInfo & info) : Napi::ObjectWrap<Session>(info) {
    auto env = info.Env();
    if (info.Length() < 1 || !info[0].IsObject()) {
        throw Napi::TypeError::New(env, "new Session(model, options)");
    }
    Model * m = Model::Unwrap(info[0].As<Napi::Object>());
    m->check(env);
    model_ref = Napi::Persistent(info[0].As<Napi::Object>());
    model = m;

    Napi::Object o = info.Length() > 1 && info[1].IsObject() ? info[1].As<Napi::Object>() : Napi::Object::New(env);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx           = (uint32_t) opt<int32_t>(o, "contextSize", 4096);
    cp.n_batch         = (uint32_t) opt<int32_t>(o, "batchSize", 512);
    cp.n_ubatch        = (uint32_t) opt<int32_t>(o, "ubatchSize", 512);
    cp.n_seq_max       = (uint32_t) opt<int32_t>(o, "seqMax", 1);
    cp.n_threads       = opt<int32_t>(o, "threads", cp.n_threads);
    cp.n_threads_batch = opt<int32_t>(o, "threadsBatch", cp.n_threads_batch);
    cp.kv_unified      = true;
    cp.no_perf         = true;
    const std::string fa = opt<std::string>(o, "flashAttention", "auto");
    cp.flash_attn_type = fa == "on" ? LLAMA_FLASH_ATTN_TYPE_ENABLED : fa == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED : LLAMA_FLASH_ATTN_TYPE_AUTO;
    cp.type_k = parse_type(env, opt<std::string>(o, "typeK", "f16"));
    cp.type_v = parse_type(env, opt<std::string>(o, "typeV", "f16"));
    cp.swa_full = opt<bool>(o, "swaFull", cp.swa_full);

    ctx = llama_init_from_model(m->model, cp);
    if (!ctx) {
        throw Napi::Error::New(env, "failed to create the context (context size too large for memory, or an unsupported KV cache type: quantized V needs flash attention)");
    }
    // cancelDecode(): ggml's CPU backend polls this after each graph node of a decode
    llama_set_abort_callback(ctx, decode_cancel_requested, &cancel);
    batch = llama_batch_init((int32_t) cp.n_batch, 0, 1);
    n_batch = (int32_t) cp.n_batch;
    smpl = llama_sampler_init_greedy();
}

Session::~Session() { release(); }

void Session::check(const Napi::Env & env) const {
    if (!ctx) {
        throw Napi::Error::New(env, "the session was disposed");
    }
}

void Session::release() {
    if (smpl)  { llama_sampler_free(smpl); smpl = nullptr; }
    if (ctx)   { llama_free(ctx); ctx = nullptr; llama_batch_free(batch); }
}

// decode(tokens: Int32Array, pos0, seqId, logits: 'last' | 'all' | 'none') -> Promise<boolean>
// tokens.length <= batchSize; token i gets position pos0 + i. Resolves true when every token was
// decoded; false when cancelDecode() stopped it (llama_decode returned 2: the graph stopped between
// two nodes, and llama.cpp removed the positions of the stopped ubatch from the sequence, from its
// lowest position on; ubatches of this call decoded before it stay: read seqPosMax)
Napi::Value Session::Decode(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    check(env);
    auto toks = info[0].As<Napi::Int32Array>();
    const int32_t pos0 = info[1].As<Napi::Number>().Int32Value();
    const int32_t seq  = info[2].As<Napi::Number>().Int32Value();
    const std::string logits = info[3].As<Napi::String>().Utf8Value();
    const int32_t n = (int32_t) toks.ElementLength();
    if (n < 1 || n > n_batch) {
        throw Napi::RangeError::New(env, "decode: 1 <= tokens.length <= batchSize (" + std::to_string(n_batch) + ")");
    }
    const int32_t n_vocab = llama_vocab_n_tokens(model->vocab);
    batch.n_tokens = n;
    for (int32_t i = 0; i < n; ++i) {
        if (toks[i] < 0 || toks[i] >= n_vocab) {
            throw Napi::RangeError::New(env, "decode: token id out of range");
        }
        batch.token[i]     = toks[i];
        batch.pos[i]       = pos0 + i;
        batch.n_seq_id[i]  = 1;
        batch.seq_id[i][0] = seq;
        batch.logits[i]    = logits == "all" || (logits == "last" && i == n - 1);
    }
    llama_context * c = ctx;
    llama_batch b = batch;
    DecodeCancel * dc = &cancel;
    // a request made before this call (for an earlier decode) does not stop this one
    dc->requested.store(false);
    return PromiseWorker<bool>::run(env,
        [c, b, dc]() {
            int32_t ret;
            {
                QuietCancelledDecode quiet(dc);
                dc->running.store(true);
                ret = llama_decode(c, b);
                dc->running.store(false);
            }
            if (ret == 2) {
                llama_synchronize(c);
                return false; // cancelled (GGML_STATUS_ABORTED)
            }
            if (ret != 0) {
                throw std::runtime_error(ret == 1 ? "the KV cache is full (the prompt does not fit the context)"
                                                  : "llama_decode failed with code " + std::to_string(ret));
            }
            // an asynchronous backend (RPC, CUDA) may still be computing: wait here, on the worker,
            // so that the promise resolves when the batch is done (prefill timings, no JS-thread wait)
            llama_synchronize(c);
            return true;
        },
        [](Napi::Env env, bool & done) -> Napi::Value { return Napi::Boolean::New(env, done); });
}

// cancelDecode(): the running decode (if any) stops after the graph node being computed and its
// promise resolves false; a decode started later is not affected. Callable while a decode runs.
Napi::Value Session::CancelDecode(const Napi::CallbackInfo & info) {
    cancel.requested.store(true);
    return info.Env().Undefined();
}

// stateGet(seqId, keepMaskedSliding = false) -> Promise<Buffer>: llama_state_seq_get_data_ext
// (cells, positions, K and V); keepMaskedSliding: LLAMA_STATE_SEQ_FLAGS_SWA_KEEP_MASKED (patch
// 0008: a sliding-window cache writes the cells its window masks too)
Napi::Value Session::StateGet(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    check(env);
    llama_context * c = ctx;
    const llama_seq_id seq = info[0].As<Napi::Number>().Int32Value();
    const llama_state_seq_flags flags = info.Length() > 1 && info[1].IsBoolean() && info[1].As<Napi::Boolean>().Value()
        ? LLAMA_STATE_SEQ_FLAGS_SWA_KEEP_MASKED : LLAMA_STATE_SEQ_FLAGS_NONE;
    return PromiseWorker<std::vector<uint8_t>>::run(env,
        [c, seq, flags]() {
            std::vector<uint8_t> data(llama_state_seq_get_size_ext(c, seq, flags));
            const size_t n = llama_state_seq_get_data_ext(c, data.data(), data.size(), seq, flags);
            if (n == 0 && !data.empty()) {
                throw std::runtime_error("failed to copy the sequence state");
            }
            data.resize(n);
            return data;
        },
        [](Napi::Env env, std::vector<uint8_t> & data) -> Napi::Value {
            return Napi::Buffer<uint8_t>::Copy(env, data.data(), data.size());
        });
}

// stateSet(seqId, Buffer) -> Promise<void>: llama_state_seq_set_data into an empty sequence
Napi::Value Session::StateSet(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    check(env);
    llama_context * c = ctx;
    const llama_seq_id seq = info[0].As<Napi::Number>().Int32Value();
    auto buf = info[1].As<Napi::Buffer<uint8_t>>();
    // keeps the bytes alive while the worker runs (released with the worker, on the JS thread)
    auto ref = std::make_shared<Napi::Reference<Napi::Buffer<uint8_t>>>(Napi::Persistent(buf));
    const uint8_t * data = buf.Data();
    const size_t size = buf.Length();
    return PromiseWorker<none>::run(env,
        [c, seq, ref, data, size]() {
            if (llama_state_seq_set_data(c, data, size, seq) == 0) {
                // a refused SnapKV section (e.g. an unknown version) says why; else the usual causes
                const std::string why = llama_snapkv_last_error(c);
                throw std::runtime_error("llama.cpp rejected the sequence state (" + (why.empty()
                        ? std::string("another model or context settings, or not enough free cells")
                        : why) + ")");
            }
            return none{};
        },
        resolve_undefined);
}

// logits(i) -> Float32Array copy of the logits of output i (-1: last)
Napi::Value Session::Logits(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    check(env);
    const int32_t i = info[0].As<Napi::Number>().Int32Value();
    const float * l = llama_get_logits_ith(ctx, i);
    if (!l) {
        throw Napi::Error::New(env, "no logits for output " + std::to_string(i));
    }
    const int32_t n_vocab = llama_vocab_n_tokens(model->vocab);
    auto out = Napi::Float32Array::New(env, n_vocab);
    memcpy(out.Data(), l, n_vocab*sizeof(float));
    return out;
}

// setSampler({ temperature, topP, seed }): temperature <= 0 is greedy
Napi::Value Session::SetSampler(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    check(env);
    Napi::Object o = info[0].As<Napi::Object>();
    const double temp = opt<double>(o, "temperature", 0.0);
    const double top_p = opt<double>(o, "topP", 1.0);
    const uint32_t seed = (uint32_t) opt<double>(o, "seed", (double) LLAMA_DEFAULT_SEED);
    llama_sampler_free(smpl);
    if (temp <= 0.0) {
        smpl = llama_sampler_init_greedy();
    } else {
        smpl = llama_sampler_chain_init(llama_sampler_chain_default_params());
        if (top_p < 1.0) {
            llama_sampler_chain_add(smpl, llama_sampler_init_top_p((float) top_p, 1));
        }
        llama_sampler_chain_add(smpl, llama_sampler_init_temp((float) temp));
        llama_sampler_chain_add(smpl, llama_sampler_init_dist(seed));
    }
    return env.Undefined();
}

// sample(i = -1) -> token id from output i
Napi::Value Session::Sample(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    check(env);
    const int32_t i = info.Length() > 0 ? info[0].As<Napi::Number>().Int32Value() : -1;
    const llama_token t = llama_sampler_sample(smpl, ctx, i);
    return Napi::Number::New(env, t);
}

Napi::Value Session::KvStats(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    check(env);
    const llama_seq_id seq = info[0].As<Napi::Number>().Int32Value();
    llama_snapkv_kv_stats st = {};
    if (llama_snapkv_get_kv_stats(ctx, seq, &st) < 0) {
        // not a plain KV cache (sliding-window, hybrid): positions only, sizes unknown (0)
        llama_memory_t mem = llama_get_memory(ctx);
        const llama_pos p0 = llama_memory_seq_pos_min(mem, seq);
        const llama_pos p1 = llama_memory_seq_pos_max(mem, seq);
        st.n_cells = p0 < 0 ? 0 : p1 - p0 + 1;
        st.n_cells_used = st.n_cells;
        st.n_kv = -1;
        st.kv_size = (int32_t) llama_n_ctx(ctx);
        st.bytes_per_cell = 0;
    }
    // interleaved sliding-window models: the stats above are the global layers' cache (the one
    // SnapKV compacts); the sliding-window layers' cache is reported beside it (0 cells without one)
    llama_snapkv_kv_stats swa = {};
    if (llama_snapkv_get_kv_stats_swa(ctx, seq, &swa) != LLAMA_SNAPKV_OK) swa = {};
    Napi::Object o = Napi::Object::New(env);
    o.Set("cells",        st.n_cells);
    o.Set("cellsUsed",    st.n_cells_used);
    o.Set("nKv",          st.n_kv);
    o.Set("kvSize",       st.kv_size);
    o.Set("bytesPerCell", (double) st.bytes_per_cell);
    o.Set("swaCells",        swa.n_cells);
    o.Set("swaKvSize",       swa.kv_size);
    o.Set("swaBytesPerCell", (double) swa.bytes_per_cell);
    o.Set("kvBytes",      (double) st.bytes_per_cell*st.n_cells + (double) swa.bytes_per_cell*swa.n_cells);
    return o;
}

Napi::Value Session::SeqPosMax(const Napi::CallbackInfo & info) {
    check(info.Env());
    return Napi::Number::New(info.Env(), llama_memory_seq_pos_max(llama_get_memory(ctx), info[0].As<Napi::Number>().Int32Value()));
}

// seqRm(seq, p0, p1): remove positions [p0, p1) (p1 < 0: to the end); false if the cache cannot do it
Napi::Value Session::SeqRm(const Napi::CallbackInfo & info) {
    check(info.Env());
    const bool ok = llama_memory_seq_rm(llama_get_memory(ctx), info[0].As<Napi::Number>().Int32Value(),
            info[1].As<Napi::Number>().Int32Value(), info[2].As<Napi::Number>().Int32Value());
    return Napi::Boolean::New(info.Env(), ok);
}

// seqCp(src, dst, p0, p1): share positions [p0, p1) of src with dst (llama_memory_seq_cp)
Napi::Value Session::SeqCp(const Napi::CallbackInfo & info) {
    check(info.Env());
    llama_memory_seq_cp(llama_get_memory(ctx), info[0].As<Napi::Number>().Int32Value(), info[1].As<Napi::Number>().Int32Value(),
            info[2].As<Napi::Number>().Int32Value(), info[3].As<Napi::Number>().Int32Value());
    return info.Env().Undefined();
}

Napi::Value Session::Clear(const Napi::CallbackInfo & info) {
    check(info.Env());
    llama_memory_clear(llama_get_memory(ctx), true);
    return info.Env().Undefined();
}

Napi::Value Session::SetThreads(const Napi::CallbackInfo & info) {
    check(info.Env());
    llama_set_n_threads(ctx, info[0].As<Napi::Number>().Int32Value(), info[1].As<Napi::Number>().Int32Value());
    return info.Env().Undefined();
}

Napi::Value Session::Dispose(const Napi::CallbackInfo & info) {
    release();
    model_ref.Reset();
    return info.Env().Undefined();
}

} // namespace reposnap_addon
