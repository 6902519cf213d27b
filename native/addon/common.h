// RepoSnap engine: the N-API face of the patched llama.cpp (shared helpers of the addon's files).
// One Model (model.cpp: llama_model) and any number of Sessions (session.cpp: llama_context + one
// sequence's sampler; snapkv.cpp: its llama_snapkv_* methods). Long work (model load, decode of a
// chunk, SnapKV, state copies) runs on libuv's thread pool through one PromiseWorker and returns a
// Promise; a Session runs one operation at a time (the TypeScript layer serialises them).
#pragma once

#include <napi.h>

#include "llama.h"

#include <atomic>
#include <functional>
#include <string>
#include <utility>

namespace reposnap_addon {

// llama_backend_init(), the log callback and the backends (load_backends, backends.cpp), once per
// process (REPOSNAP_VERBOSE=1: all of llama.cpp's log; else errors only)
void backend_init();

// A session's request to stop its running llama_decode (Session::cancelDecode). `requested` is set
// on the JS thread; `running` is true on the worker thread while llama_decode runs, so that a
// request that lands after a decode (during a SnapKV graph, say) stops nothing else.
struct DecodeCancel {
    std::atomic<bool> requested{false};
    std::atomic<bool> running{false};
};

// llama_set_abort_callback's callback for a DecodeCancel (data): true once a cancel was requested
// while a decode runs; ggml's CPU backend calls it after each graph node and stops the graph
bool decode_cancel_requested(void * data);

// The last "RPC server <endpoint> could not allocate <n> MiB on device <d>" that ggml-rpc logged
// (patch 0013), cleared by the call; empty when there was none. LoadModel reports it as an
// "[rpc:alloc]" error instead of the generic "failed to load the model" (issue 29, item 11).
std::string take_rpc_alloc_failure();

// While alive on a thread, llama.cpp's error lines logged on that thread are dropped once `cancel`
// was requested: the ones a cancelled llama_decode logs ("graph_compute: … failed with error 1",
// "llama_decode: failed to decode, ret = 2"), which RepoSnap reports as a cancellation itself.
class QuietCancelledDecode {
public:
    explicit QuietCancelledDecode(const DecodeCancel * cancel);
    ~QuietCancelledDecode();
    QuietCancelledDecode(const QuietCancelledDecode &) = delete;
    QuietCancelledDecode & operator=(const QuietCancelledDecode &) = delete;
};

// ggml type of a KV cache or weight type name (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1)
// throws Napi::TypeError for another name
ggml_type parse_type(const Napi::Env & env, const std::string & name);

// o[key] when it is of the option's type, else def
template <typename T>
T opt(const Napi::Object & o, const char * key, T def);

template <> int32_t     opt(const Napi::Object & o, const char * key, int32_t def);
template <> double      opt(const Napi::Object & o, const char * key, double def);
template <> bool        opt(const Napi::Object & o, const char * key, bool def);
template <> std::string opt(const Napi::Object & o, const char * key, std::string def);

// The one async worker of the addon: work() runs on libuv's thread pool and returns an R (or
// throws std::exception: the promise is rejected with its message); done(env, r) runs on the JS
// thread and gives the value the promise resolves to. Whatever work() and done() capture lives
// until the worker is deleted, on the JS thread.
template <typename R>
class PromiseWorker : public Napi::AsyncWorker {
public:
    using Work = std::function<R()>;
    using Done = std::function<Napi::Value(Napi::Env, R &)>;

    // queues the work and returns its promise
    static Napi::Promise run(Napi::Env env, Work work, Done done) {
        auto * w = new PromiseWorker(env, std::move(work), std::move(done));
        Napi::Promise p = w->deferred.Promise();
        w->Queue();
        return p;
    }

private:
    PromiseWorker(Napi::Env env, Work work, Done done)
        : Napi::AsyncWorker(env), deferred(Napi::Promise::Deferred::New(env)), work(std::move(work)), done(std::move(done)) {}

    void Execute() override {
        try {
            result = work();
        } catch (const std::exception & e) {
            SetError(e.what());
        }
    }
    void OnOK() override { deferred.Resolve(done(Env(), result)); }
    void OnError(const Napi::Error & e) override { deferred.Reject(e.Value()); }

    Napi::Promise::Deferred deferred;
    Work work;
    Done done;
    R result{};
};

// R of a worker whose promise resolves to undefined
struct none {};

// resolves to undefined
inline Napi::Value resolve_undefined(Napi::Env env, none &) { return env.Undefined(); }

} // namespace reposnap_addon
