// RepoSnap addon: Session, the JS face of a llama_context with its batch and sampler
// (session.cpp: decode, sampling, state, memory; snapkv.cpp: the llama_snapkv_* methods).
#pragma once

#include "common.h"
#include "model.h"

namespace reposnap_addon {

class Session : public Napi::ObjectWrap<Session> {
public:
    // registers the class
    static void Init(Napi::Env env, Napi::Object exports);

    // new Session(model, { contextSize, batchSize, ubatchSize, seqMax, threads, threadsBatch, flashAttention, typeK, typeV })
    explicit Session(const Napi::CallbackInfo & info);
    ~Session() override;

    llama_context * ctx = nullptr;
    llama_batch batch = {};
    int32_t n_batch = 0;
    llama_sampler * smpl = nullptr;
    Model * model = nullptr;
    // cancelDecode() -> the running decode stops between graph nodes (llama_set_abort_callback,
    // polled by ggml's CPU backend after each node); lives as long as the Session (the callback's data)
    DecodeCancel cancel;
    Napi::ObjectReference model_ref;

    // throws when the session was disposed
    void check(const Napi::Env & env) const;

private:
    void release();

    // session.cpp
    Napi::Value Decode(const Napi::CallbackInfo & info);
    Napi::Value CancelDecode(const Napi::CallbackInfo & info);
    Napi::Value Logits(const Napi::CallbackInfo & info);
    Napi::Value SetSampler(const Napi::CallbackInfo & info);
    Napi::Value Sample(const Napi::CallbackInfo & info);
    Napi::Value StateGet(const Napi::CallbackInfo & info);
    Napi::Value StateSet(const Napi::CallbackInfo & info);
    Napi::Value KvStats(const Napi::CallbackInfo & info);
    Napi::Value SeqPosMax(const Napi::CallbackInfo & info);
    Napi::Value SeqRm(const Napi::CallbackInfo & info);
    Napi::Value SeqCp(const Napi::CallbackInfo & info);
    Napi::Value Clear(const Napi::CallbackInfo & info);
    Napi::Value SetThreads(const Napi::CallbackInfo & info);
    Napi::Value Dispose(const Napi::CallbackInfo & info);

    // snapkv.cpp
    Napi::Value SnapCapture(const Napi::CallbackInfo & info);
    Napi::Value Snap(const Napi::CallbackInfo & info);
    Napi::Value SnapScore(const Napi::CallbackInfo & info);
    Napi::Value CompactKept(const Napi::CallbackInfo & info);
    Napi::Value SnapKeyNorms(const Napi::CallbackInfo & info);
    Napi::Value SnapKept(const Napi::CallbackInfo & info);
    Napi::Value SnapScores(const Napi::CallbackInfo & info);
};

// snapStatus: llama.h's enum llama_snapkv_status by name, so that callers never hard-code its values (snapkv.cpp)
Napi::Object snap_status(Napi::Env env);

} // namespace reposnap_addon
