// RepoSnap engine: the N-API face of the patched llama.cpp.
// One Model (llama_model) and any number of Sessions (llama_context + one sequence's sampler).
// Long work (model load, decode of a chunk, SnapKV) runs on libuv's thread pool through
// Napi::AsyncWorker and returns a Promise; a Session runs one operation at a time (the
// TypeScript layer serialises them).
#include <napi.h>

#include "llama.h"
#include "synthetic-model.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

bool g_verbose = false;

void log_callback(ggml_log_level level, const char * text, void *) {
    if (g_verbose || level == GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
    }
}

std::once_flag g_init;

void backend_init() {
    std::call_once(g_init, [] {
        const char * v = getenv("REPOSNAP_VERBOSE");
        g_verbose = v && atoi(v) > 0;
        llama_log_set(log_callback, nullptr);
        llama_backend_init();
    });
}

ggml_type parse_type(const Napi::Env & env, const std::string & name) {
    if (name == "f32")  return GGML_TYPE_F32;
    if (name == "f16")  return GGML_TYPE_F16;
    if (name == "bf16") return GGML_TYPE_BF16;
    if (name == "q8_0") return GGML_TYPE_Q8_0;
    if (name == "q4_0") return GGML_TYPE_Q4_0;
    if (name == "q4_1") return GGML_TYPE_Q4_1;
    if (name == "q5_0") return GGML_TYPE_Q5_0;
    if (name == "q5_1") return GGML_TYPE_Q5_1;
    throw Napi::TypeError::New(env, "unknown KV cache type '" + name + "' (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1)");
}

template <typename T>
T opt(const Napi::Object & o, const char * key, T def);

template <>
int32_t opt(const Napi::Object & o, const char * key, int32_t def) {
    return o.Has(key) && o.Get(key).IsNumber() ? o.Get(key).As<Napi::Number>().Int32Value() : def;
}
template <>
double opt(const Napi::Object & o, const char * key, double def) {
    return o.Has(key) && o.Get(key).IsNumber() ? o.Get(key).As<Napi::Number>().DoubleValue() : def;
}
template <>
bool opt(const Napi::Object & o, const char * key, bool def) {
    return o.Has(key) && o.Get(key).IsBoolean() ? o.Get(key).As<Napi::Boolean>().Value() : def;
}
template <>
std::string opt(const Napi::Object & o, const char * key, std::string def) {
    return o.Has(key) && o.Get(key).IsString() ? o.Get(key).As<Napi::String>().Utf8Value() : def;
}

// { status, error, L, B, nLayer, nHeadKv, ms, kept } of a compaction (llama_snapkv_compact*); B = cells held
// after it, kept = rows kept over all layers and KV heads
Napi::Object snap_result(Napi::Env env, int32_t status, const std::string & error, const llama_snapkv_result & res) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("status",  status);
    o.Set("error",   error);
    o.Set("L",       res.n_before);
    o.Set("B",       res.n_after);
    o.Set("nLayer",  res.n_layer);
    o.Set("nHeadKv", res.n_head_kv);
    o.Set("ms",      res.t_ms);
    o.Set("kept",    (double) res.n_kept);
    return o;
}

//
// Model
//

class Model : public Napi::ObjectWrap<Model> {
public:
    static Napi::FunctionReference ctor;

    static void Init(Napi::Env env, Napi::Object exports) {
        Napi::Function f = DefineClass(env, "Model", {
            InstanceMethod("info",              &Model::Info),
            InstanceMethod("tokenize",          &Model::Tokenize),
            InstanceMethod("tokenToPiece",      &Model::TokenToPiece),
            InstanceMethod("detokenize",        &Model::Detokenize),
            InstanceMethod("isEog",             &Model::IsEog),
            InstanceMethod("applyChatTemplate", &Model::ApplyChatTemplate),
            InstanceMethod("dispose",           &Model::Dispose),
        });
        ctor = Napi::Persistent(f);
        exports.Set("Model", f);
    }

    Model(const Napi::CallbackInfo & info) : Napi::ObjectWrap<Model>(info) {
        // constructed by LoadModelWorker with an External
        if (info.Length() != 1 || !info[0].IsExternal()) {
            throw Napi::TypeError::New(info.Env(), "use loadModel()");
        }
        model = info[0].As<Napi::External<llama_model>>().Data();
        vocab = llama_model_get_vocab(model);
    }

    ~Model() override {
        if (model) {
            llama_model_free(model);
        }
    }

    llama_model * model = nullptr;
    const llama_vocab * vocab = nullptr;

    void check(const Napi::Env & env) const {
        if (!model) {
            throw Napi::Error::New(env, "the model was disposed");
        }
    }

private:
    Napi::Value Info(const Napi::CallbackInfo & info) {
        auto env = info.Env();
        check(env);
        Napi::Object o = Napi::Object::New(env);
        char buf[512];
        llama_model_desc(model, buf, sizeof(buf));
        o.Set("description", buf);
        o.Set("nLayer",    llama_model_n_layer(model));
        o.Set("nHead",     llama_model_n_head(model));
        o.Set("nHeadKv",   llama_model_n_head_kv(model));
        o.Set("nEmbd",     llama_model_n_embd(model));
        o.Set("nCtxTrain", llama_model_n_ctx_train(model));
        o.Set("nSwa",      llama_model_n_swa(model));
        o.Set("nVocab",    llama_vocab_n_tokens(vocab));
        o.Set("bos",       llama_vocab_bos(vocab));
        o.Set("eos",       llama_vocab_eos(vocab));
        o.Set("addBos",    llama_vocab_get_add_bos(vocab));
        o.Set("sizeBytes", (double) llama_model_size(model));
        o.Set("nParams",   (double) llama_model_n_params(model));
        const char * tmpl = llama_model_chat_template(model, nullptr);
        o.Set("chatTemplate", tmpl ? Napi::Value(Napi::String::New(env, tmpl)) : env.Null());
        if (llama_model_meta_val_str(model, "general.architecture", buf, sizeof(buf)) >= 0) {
            o.Set("architecture", buf);
        }
        return o;
    }

    // tokenize(text, addSpecial, parseSpecial) -> Int32Array
    Napi::Value Tokenize(const Napi::CallbackInfo & info) {
        auto env = info.Env();
        check(env);
        const std::string text = info[0].As<Napi::String>().Utf8Value();
        const bool add_special   = info.Length() > 1 && info[1].ToBoolean();
        const bool parse_special = info.Length() > 2 && info[2].ToBoolean();
        int32_t n = -llama_tokenize(vocab, text.data(), (int32_t) text.size(), nullptr, 0, add_special, parse_special);
        if (n < 0) {
            n = 0;
        }
        auto out = Napi::Int32Array::New(env, n);
        if (n > 0) {
            const int32_t r = llama_tokenize(vocab, text.data(), (int32_t) text.size(), out.Data(), n, add_special, parse_special);
            if (r < 0) {
                throw Napi::Error::New(env, "tokenization failed");
            }
        }
        return out;
    }

    // tokenToPiece(token, renderSpecial) -> Buffer (raw bytes: a piece may end inside a UTF-8 character)
    Napi::Value TokenToPiece(const Napi::CallbackInfo & info) {
        auto env = info.Env();
        check(env);
        const llama_token tok = info[0].As<Napi::Number>().Int32Value();
        const bool special = info.Length() > 1 && info[1].ToBoolean();
        char buf[256];
        int32_t n = llama_token_to_piece(vocab, tok, buf, sizeof(buf), 0, special);
        if (n < 0) {
            std::vector<char> big(-n);
            n = llama_token_to_piece(vocab, tok, big.data(), (int32_t) big.size(), 0, special);
            return Napi::Buffer<char>::Copy(env, big.data(), n);
        }
        return Napi::Buffer<char>::Copy(env, buf, n);
    }

    // detokenize(Int32Array, renderSpecial) -> string
    Napi::Value Detokenize(const Napi::CallbackInfo & info) {
        auto env = info.Env();
        check(env);
        auto toks = info[0].As<Napi::Int32Array>();
        const bool special = info.Length() > 1 && info[1].ToBoolean();
        std::string out(toks.ElementLength()*8 + 16, '\0');
        int32_t n = llama_detokenize(vocab, toks.Data(), (int32_t) toks.ElementLength(), out.data(), (int32_t) out.size(), false, special);
        if (n < 0) {
            out.resize(-n);
            n = llama_detokenize(vocab, toks.Data(), (int32_t) toks.ElementLength(), out.data(), (int32_t) out.size(), false, special);
        }
        out.resize(std::max(n, 0));
        return Napi::String::New(env, out);
    }

    Napi::Value IsEog(const Napi::CallbackInfo & info) {
        check(info.Env());
        return Napi::Boolean::New(info.Env(), llama_vocab_is_eog(vocab, info[0].As<Napi::Number>().Int32Value()));
    }

    // applyChatTemplate([{role, content}], addAssistant) -> string | null (null: the model has no usable template)
    Napi::Value ApplyChatTemplate(const Napi::CallbackInfo & info) {
        auto env = info.Env();
        check(env);
        const char * tmpl = llama_model_chat_template(model, nullptr);
        if (!tmpl) {
            return env.Null();
        }
        auto arr = info[0].As<Napi::Array>();
        const bool add_ass = info.Length() > 1 && info[1].ToBoolean();
        std::vector<std::string> roles, contents;
        for (uint32_t i = 0; i < arr.Length(); ++i) {
            auto m = arr.Get(i).As<Napi::Object>();
            roles.push_back(m.Get("role").As<Napi::String>().Utf8Value());
            contents.push_back(m.Get("content").As<Napi::String>().Utf8Value());
        }
        std::vector<llama_chat_message> msgs;
        size_t total = 0;
        for (size_t i = 0; i < roles.size(); ++i) {
            msgs.push_back({ roles[i].c_str(), contents[i].c_str() });
            total += contents[i].size();
        }
        std::vector<char> buf(2*total + 1024);
        int32_t n = llama_chat_apply_template(tmpl, msgs.data(), msgs.size(), add_ass, buf.data(), (int32_t) buf.size());
        if (n < 0) {
            return env.Null(); // template not supported by llama.cpp's built-in list
        }
        if ((size_t) n > buf.size()) {
            buf.resize(n);
            n = llama_chat_apply_template(tmpl, msgs.data(), msgs.size(), add_ass, buf.data(), (int32_t) buf.size());
        }
        return Napi::String::New(env, buf.data(), n);
    }

    Napi::Value Dispose(const Napi::CallbackInfo & info) {
        // the sessions hold a reference to this object, so the model outlives them
        if (model) {
            llama_model_free(model);
            model = nullptr;
        }
        return info.Env().Undefined();
    }
};

Napi::FunctionReference Model::ctor;

class LoadModelWorker : public Napi::AsyncWorker {
public:
    LoadModelWorker(Napi::Env env, std::string path, llama_model_params params)
        : Napi::AsyncWorker(env), deferred(Napi::Promise::Deferred::New(env)), path(std::move(path)), params(params) {}

    Napi::Promise promise() { return deferred.Promise(); }

    void Execute() override {
        model = llama_model_load_from_file(path.c_str(), params);
        if (!model) {
            SetError("failed to load the model from '" + path + "' (not a GGUF file, an unsupported architecture, or not enough memory)");
        }
    }

    void OnOK() override {
        auto ext = Napi::External<llama_model>::New(Env(), model);
        deferred.Resolve(Model::ctor.New({ ext }));
    }

    void OnError(const Napi::Error & e) override { deferred.Reject(e.Value()); }

private:
    Napi::Promise::Deferred deferred;
    std::string path;
    llama_model_params params;
    llama_model * model = nullptr;
};

// loadModel(path, { gpuLayers }) -> Promise<Model>
Napi::Value LoadModel(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    backend_init();
    if (info.Length() < 1 || !info[0].IsString()) {
        throw Napi::TypeError::New(env, "loadModel(path, options)");
    }
    Napi::Object o = info.Length() > 1 && info[1].IsObject() ? info[1].As<Napi::Object>() : Napi::Object::New(env);
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = opt<int32_t>(o, "gpuLayers", 0);
    auto * w = new LoadModelWorker(env, info[0].As<Napi::String>().Utf8Value(), mp);
    auto p = w->promise();
    w->Queue();
    return p;
}

//
// Session
//

class Session : public Napi::ObjectWrap<Session> {
public:
    static void Init(Napi::Env env, Napi::Object exports) {
        Napi::Function f = DefineClass(env, "Session", {
            InstanceMethod("decode",       &Session::Decode),
            InstanceMethod("logits",       &Session::Logits),
            InstanceMethod("setSampler",   &Session::SetSampler),
            InstanceMethod("sample",       &Session::Sample),
            InstanceMethod("snapCapture",  &Session::SnapCapture),
            InstanceMethod("snap",         &Session::Snap),
            InstanceMethod("compactKept",  &Session::CompactKept),
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

    // new Session(model, { contextSize, batchSize, ubatchSize, seqMax, threads, threadsBatch, flashAttention, typeK, typeV })
    Session(const Napi::CallbackInfo & info) : Napi::ObjectWrap<Session>(info) {
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

        ctx = llama_init_from_model(m->model, cp);
        if (!ctx) {
            throw Napi::Error::New(env, "failed to create the context (context size too large for memory, or an unsupported KV cache type: quantized V needs flash attention)");
        }
        batch = llama_batch_init((int32_t) cp.n_batch, 0, 1);
        n_batch = (int32_t) cp.n_batch;
        smpl = llama_sampler_init_greedy();
    }

    ~Session() override { release(); }

    llama_context * ctx = nullptr;
    llama_batch batch = {};
    int32_t n_batch = 0;
    llama_sampler * smpl = nullptr;
    Model * model = nullptr;
    Napi::ObjectReference model_ref;

    void check(const Napi::Env & env) const {
        if (!ctx) {
            throw Napi::Error::New(env, "the session was disposed");
        }
    }

private:
    void release() {
        if (smpl)  { llama_sampler_free(smpl); smpl = nullptr; }
        if (ctx)   { llama_free(ctx); ctx = nullptr; llama_batch_free(batch); }
    }

    class DecodeWorker : public Napi::AsyncWorker {
    public:
        DecodeWorker(Napi::Env env, Session * s) : Napi::AsyncWorker(env), deferred(Napi::Promise::Deferred::New(env)), s(s) {}
        Napi::Promise::Deferred deferred;
        Session * s;
        int32_t ret = 0;
        void Execute() override {
            ret = llama_decode(s->ctx, s->batch);
            if (ret != 0) {
                SetError(ret == 1 ? "the KV cache is full (the prompt does not fit the context)"
                                  : "llama_decode failed with code " + std::to_string(ret));
            }
        }
        void OnOK() override { deferred.Resolve(Env().Undefined()); }
        void OnError(const Napi::Error & e) override { deferred.Reject(e.Value()); }
    };

    // decode(tokens: Int32Array, pos0, seqId, logits: 'last' | 'all' | 'none') -> Promise<void>
    // tokens.length <= batchSize; token i gets position pos0 + i
    Napi::Value Decode(const Napi::CallbackInfo & info) {
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
        auto * w = new DecodeWorker(env, this);
        auto p = w->deferred.Promise();
        w->Queue();
        return p;
    }

    // logits(i) -> Float32Array copy of the logits of output i (-1: last)
    Napi::Value Logits(const Napi::CallbackInfo & info) {
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
    Napi::Value SetSampler(const Napi::CallbackInfo & info) {
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
    Napi::Value Sample(const Napi::CallbackInfo & info) {
        auto env = info.Env();
        check(env);
        const int32_t i = info.Length() > 0 ? info[0].As<Napi::Number>().Int32Value() : -1;
        const llama_token t = llama_sampler_sample(smpl, ctx, i);
        return Napi::Number::New(env, t);
    }

    Napi::Value SnapCapture(const Napi::CallbackInfo & info) {
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

    // a compaction off the JS thread: llama_snapkv_compact() with p, or (by_kept)
    // llama_snapkv_compact_kept() with p.n_budget and the caller's kept positions
    class CompactWorker : public Napi::AsyncWorker {
    public:
        CompactWorker(Napi::Env env, Session * s, llama_seq_id seq, llama_snapkv_params p, bool by_kept, std::vector<int32_t> kept)
            : Napi::AsyncWorker(env), deferred(Napi::Promise::Deferred::New(env)), s(s), seq(seq), p(p), by_kept(by_kept), kept(std::move(kept)) {}
        Napi::Promise::Deferred deferred;
        Session * s;
        llama_seq_id seq;
        llama_snapkv_params p;
        bool by_kept;
        std::vector<int32_t> kept;
        llama_snapkv_result res = {};
        int32_t status = 0;
        std::string error;
        void Execute() override {
            status = by_kept ? llama_snapkv_compact_kept(s->ctx, seq, p.n_budget, kept.data(), kept.size(), &res)
                             : llama_snapkv_compact(s->ctx, seq, p, &res);
            if (status < 0) {
                error = llama_snapkv_last_error(s->ctx);
            }
        }
        void OnOK() override { deferred.Resolve(snap_result(Env(), status, error, res)); }
        void OnError(const Napi::Error & e) override { deferred.Reject(e.Value()); }
    };

    // snap(seqId, { window, budget, kernel, pooling: 'max'|'avg', force, keepScores,
    //              allocation: 'uniform'|'adakv'|'pyramid', adaAlpha, pyramidBeta }) -> Promise<{status, error, L, B, ...}>
    Napi::Value Snap(const Napi::CallbackInfo & info) {
        auto env = info.Env();
        check(env);
        const llama_seq_id seq = info[0].As<Napi::Number>().Int32Value();
        Napi::Object o = info[1].As<Napi::Object>();
        llama_snapkv_params p = llama_snapkv_default_params();
        p.n_window    = opt<int32_t>(o, "window", p.n_window);
        p.n_budget    = opt<int32_t>(o, "budget", p.n_budget);
        p.kernel      = opt<int32_t>(o, "kernel", p.kernel);
        p.pooling     = opt<std::string>(o, "pooling", "max") == "avg" ? LLAMA_SNAPKV_POOLING_AVG : LLAMA_SNAPKV_POOLING_MAX;
        p.force       = opt<bool>(o, "force", false);
        p.keep_scores = opt<bool>(o, "keepScores", false);
        const std::string alloc = opt<std::string>(o, "allocation", "uniform");
        p.allocation = alloc == "uniform" ? LLAMA_SNAPKV_ALLOC_UNIFORM
                     : alloc == "adakv"   ? LLAMA_SNAPKV_ALLOC_ADAKV
                     : alloc == "pyramid" ? LLAMA_SNAPKV_ALLOC_PYRAMID
                     : (llama_snapkv_allocation) -1; // refused by llama_snapkv_compact() with a clear error
        p.ada_alpha    = (float) opt<double>(o, "adaAlpha", p.ada_alpha);
        p.pyramid_beta = (float) opt<double>(o, "pyramidBeta", p.pyramid_beta);
        auto * w = new CompactWorker(env, this, seq, p, false, {});
        auto pr = w->deferred.Promise();
        w->Queue();
        return pr;
    }

    // compactKept(seqId, budget, kept: Int32Array [n_layer][n_head_kv][budget] positions) -> Promise<{status, ...}>
    Napi::Value CompactKept(const Napi::CallbackInfo & info) {
        auto env = info.Env();
        check(env);
        const llama_seq_id seq = info[0].As<Napi::Number>().Int32Value();
        llama_snapkv_params p = llama_snapkv_default_params();
        p.n_budget = info[1].As<Napi::Number>().Int32Value();
        auto arr = info[2].As<Napi::Int32Array>();
        std::vector<int32_t> kept(arr.Data(), arr.Data() + arr.ElementLength());
        auto * w = new CompactWorker(env, this, seq, p, true, std::move(kept));
        auto pr = w->deferred.Promise();
        w->Queue();
        return pr;
    }

    class StateGetWorker : public Napi::AsyncWorker {
    public:
        StateGetWorker(Napi::Env env, Session * s, llama_seq_id seq)
            : Napi::AsyncWorker(env), deferred(Napi::Promise::Deferred::New(env)), s(s), seq(seq) {}
        Napi::Promise::Deferred deferred;
        Session * s;
        llama_seq_id seq;
        std::vector<uint8_t> data;
        void Execute() override {
            data.resize(llama_state_seq_get_size(s->ctx, seq));
            const size_t n = llama_state_seq_get_data(s->ctx, data.data(), data.size(), seq);
            if (n == 0 && !data.empty()) {
                SetError("failed to copy the sequence state");
            }
            data.resize(n);
        }
        void OnOK() override { deferred.Resolve(Napi::Buffer<uint8_t>::Copy(Env(), data.data(), data.size())); }
        void OnError(const Napi::Error & e) override { deferred.Reject(e.Value()); }
    };

    // stateGet(seqId) -> Promise<Buffer>: llama_state_seq_get_data (cells, positions, K and V)
    Napi::Value StateGet(const Napi::CallbackInfo & info) {
        auto env = info.Env();
        check(env);
        auto * w = new StateGetWorker(env, this, info[0].As<Napi::Number>().Int32Value());
        auto pr = w->deferred.Promise();
        w->Queue();
        return pr;
    }

    class StateSetWorker : public Napi::AsyncWorker {
    public:
        StateSetWorker(Napi::Env env, Session * s, llama_seq_id seq, Napi::Buffer<uint8_t> buf)
            : Napi::AsyncWorker(env), deferred(Napi::Promise::Deferred::New(env)), s(s), seq(seq),
              ref(Napi::Persistent(buf)), data(buf.Data()), size(buf.Length()) {}
        Napi::Promise::Deferred deferred;
        Session * s;
        llama_seq_id seq;
        Napi::Reference<Napi::Buffer<uint8_t>> ref; // keeps the bytes alive while the worker runs
        const uint8_t * data;
        size_t size;
        void Execute() override {
            if (llama_state_seq_set_data(s->ctx, data, size, seq) == 0) {
                // a refused SnapKV section (e.g. an unknown version) says why; else the usual causes
                const std::string why = llama_snapkv_last_error(s->ctx);
                SetError("llama.cpp rejected the sequence state (" + (why.empty()
                        ? std::string("another model or context settings, or not enough free cells")
                        : why) + ")");
            }
        }
        void OnOK() override { deferred.Resolve(Env().Undefined()); }
        void OnError(const Napi::Error & e) override { deferred.Reject(e.Value()); }
    };

    // stateSet(seqId, Buffer) -> Promise<void>: llama_state_seq_set_data into an empty sequence
    Napi::Value StateSet(const Napi::CallbackInfo & info) {
        auto env = info.Env();
        check(env);
        auto * w = new StateSetWorker(env, this, info[0].As<Napi::Number>().Int32Value(), info[1].As<Napi::Buffer<uint8_t>>());
        auto pr = w->deferred.Promise();
        w->Queue();
        return pr;
    }

    Napi::Value SnapKept(const Napi::CallbackInfo & info) {
        auto env = info.Env();
        check(env);
        const int32_t n = llama_snapkv_get_kept(ctx, nullptr, 0);
        auto out = Napi::Int32Array::New(env, std::max(n, 0));
        if (n > 0) llama_snapkv_get_kept(ctx, out.Data(), n);
        return out;
    }

    Napi::Value SnapScores(const Napi::CallbackInfo & info) {
        auto env = info.Env();
        check(env);
        const int32_t n = llama_snapkv_get_scores(ctx, nullptr, 0);
        auto out = Napi::Float32Array::New(env, std::max(n, 0));
        if (n > 0) llama_snapkv_get_scores(ctx, out.Data(), n);
        return out;
    }

    Napi::Value KvStats(const Napi::CallbackInfo & info) {
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

    Napi::Value SeqPosMax(const Napi::CallbackInfo & info) {
        check(info.Env());
        return Napi::Number::New(info.Env(), llama_memory_seq_pos_max(llama_get_memory(ctx), info[0].As<Napi::Number>().Int32Value()));
    }

    // seqRm(seq, p0, p1): remove positions [p0, p1) (p1 < 0: to the end); false if the cache cannot do it
    Napi::Value SeqRm(const Napi::CallbackInfo & info) {
        check(info.Env());
        const bool ok = llama_memory_seq_rm(llama_get_memory(ctx), info[0].As<Napi::Number>().Int32Value(),
                info[1].As<Napi::Number>().Int32Value(), info[2].As<Napi::Number>().Int32Value());
        return Napi::Boolean::New(info.Env(), ok);
    }

    // seqCp(src, dst, p0, p1): share positions [p0, p1) of src with dst (llama_memory_seq_cp)
    Napi::Value SeqCp(const Napi::CallbackInfo & info) {
        check(info.Env());
        llama_memory_seq_cp(llama_get_memory(ctx), info[0].As<Napi::Number>().Int32Value(), info[1].As<Napi::Number>().Int32Value(),
                info[2].As<Napi::Number>().Int32Value(), info[3].As<Napi::Number>().Int32Value());
        return info.Env().Undefined();
    }

    Napi::Value Clear(const Napi::CallbackInfo & info) {
        check(info.Env());
        llama_memory_clear(llama_get_memory(ctx), true);
        return info.Env().Undefined();
    }

    Napi::Value SetThreads(const Napi::CallbackInfo & info) {
        check(info.Env());
        llama_set_n_threads(ctx, info[0].As<Napi::Number>().Int32Value(), info[1].As<Napi::Number>().Int32Value());
        return info.Env().Undefined();
    }

    Napi::Value Dispose(const Napi::CallbackInfo & info) {
        release();
        model_ref.Reset();
        return info.Env().Undefined();
    }
};

class SyntheticModelWorker : public Napi::AsyncWorker {
public:
    SyntheticModelWorker(Napi::Env env, std::string path, reposnap::synthetic_shape shape)
        : Napi::AsyncWorker(env), deferred(Napi::Promise::Deferred::New(env)), path(std::move(path)), shape(shape) {}
    Napi::Promise::Deferred deferred;
    std::string path;
    reposnap::synthetic_shape shape;

    void Execute() override {
        // llama_model_save_to_file refuses the interleaved sliding-window architectures whose
        // pattern it cannot write: those are written from the recorded metadata and tensors
        const bool direct = shape.arch == "gemma3" || shape.arch == "cohere2";
        reposnap::synthetic_record rec;
        llama_model * model = reposnap::make_synthetic_model(shape, 0, direct ? &rec : nullptr);
        if (!model) {
            if (rec.meta) gguf_free(rec.meta);
            SetError("llama_model_init_from_user failed for this shape");
            return;
        }
        if (direct) {
            if (!reposnap::write_synthetic_gguf(rec, path.c_str())) SetError("cannot write " + path);
        } else {
            llama_model_save_to_file(model, path.c_str());
        }
        llama_model_free(model);
    }
    void OnOK() override { deferred.Resolve(Env().Undefined()); }
    void OnError(const Napi::Error & e) override { deferred.Reject(e.Value()); }
};

// createSyntheticModel(path, { nLayer, nEmbd, nHead, nHeadKv, nFf, nVocab, nCtx, ropeFreqBase, weightType: 'f32'|'f16'|'q8_0'|'q4_0', seed }) -> Promise<void>
Napi::Value CreateSyntheticModel(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    backend_init();
    Napi::Object o = info[1].As<Napi::Object>();
    reposnap::synthetic_shape sh;
    sh.n_layer        = (uint32_t) opt<int32_t>(o, "nLayer", (int32_t) sh.n_layer);
    sh.n_embd         = (uint32_t) opt<int32_t>(o, "nEmbd", (int32_t) sh.n_embd);
    sh.n_head         = (uint32_t) opt<int32_t>(o, "nHead", (int32_t) sh.n_head);
    sh.n_head_kv      = (uint32_t) opt<int32_t>(o, "nHeadKv", (int32_t) sh.n_head_kv);
    sh.n_ff           = (uint32_t) opt<int32_t>(o, "nFf", (int32_t) sh.n_ff);
    sh.n_vocab        = (uint32_t) opt<int32_t>(o, "nVocab", (int32_t) sh.n_vocab);
    sh.n_ctx          = (uint32_t) opt<int32_t>(o, "nCtx", (int32_t) sh.n_ctx);
    sh.rope_freq_base = (float) opt<double>(o, "ropeFreqBase", sh.rope_freq_base);
    sh.seed           = (uint32_t) opt<int32_t>(o, "seed", 1);
    sh.wtype          = parse_type(env, opt<std::string>(o, "weightType", "f16"));
    sh.arch           = opt<std::string>(o, "architecture", "llama");
    sh.n_swa          = (uint32_t) opt<int32_t>(o, "slidingWindow", 0);
    if (sh.n_head == 0 || sh.n_head_kv == 0 || sh.n_embd % sh.n_head != 0 || sh.n_head % sh.n_head_kv != 0) {
        throw Napi::RangeError::New(env, "need n_embd % n_head == 0 and n_head % n_head_kv == 0");
    }
    if (ggml_is_quantized(sh.wtype) && (sh.n_embd % ggml_blck_size(sh.wtype) != 0 || sh.n_ff % ggml_blck_size(sh.wtype) != 0)) {
        throw Napi::RangeError::New(env, "n_embd and n_ff must be whole blocks of the weight type");
    }
    auto * w = new SyntheticModelWorker(env, info[0].As<Napi::String>().Utf8Value(), sh);
    auto p = w->deferred.Promise();
    w->Queue();
    return p;
}

// snapStatus: llama.h's enum llama_snapkv_status by name, so that callers never hard-code its values
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

Napi::Value SystemInfo(const Napi::CallbackInfo & info) {
    backend_init();
    return Napi::String::New(info.Env(), llama_print_system_info());
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
    Model::Init(env, exports);
    Session::Init(env, exports);
    exports.Set("loadModel",  Napi::Function::New(env, LoadModel));
    exports.Set("systemInfo", Napi::Function::New(env, SystemInfo));
    exports.Set("createSyntheticModel", Napi::Function::New(env, CreateSyntheticModel));
    exports.Set("snapStatus", snap_status(env));
    return exports;
}

} // namespace

NODE_API_MODULE(reposnap, Init)
