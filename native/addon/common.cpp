// Shared helpers of the addon: backend initialisation, option parsing (see common.h).
#include "common.h"
#include "backends.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <mutex>

namespace reposnap_addon {

namespace {

bool g_verbose = false;

// the cancellable decode running on this thread (QuietCancelledDecode), or null
thread_local const DecodeCancel * t_decode = nullptr;

// the last "RPC server … could not allocate …" line of ggml-rpc (patch 0013), for LoadModel's error
std::mutex g_rpc_alloc_mutex;
std::string g_rpc_alloc_failure;

void log_callback(ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR && strstr(text, "RPC server ") && strstr(text, " could not allocate ")) {
        std::lock_guard<std::mutex> lock(g_rpc_alloc_mutex);
        const char * from = strstr(text, "RPC server ");
        g_rpc_alloc_failure.assign(from, strcspn(from, "\n"));
    }
    if (level == GGML_LOG_LEVEL_ERROR && t_decode && t_decode->requested.load(std::memory_order_relaxed) && !g_verbose) {
        return; // a cancelled decode's own report: the caller says "cancelled"
    }
    if (g_verbose || level == GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
    }
}

std::once_flag g_init;

} // namespace

void backend_init() {
    std::call_once(g_init, [] {
        const char * v = getenv("REPOSNAP_VERBOSE");
        g_verbose = v && atoi(v) > 0;
        llama_log_set(log_callback, nullptr);
        llama_backend_init();
        load_backends();
    });
}

std::string take_rpc_alloc_failure() {
    std::lock_guard<std::mutex> lock(g_rpc_alloc_mutex);
    std::string out;
    out.swap(g_rpc_alloc_failure);
    return out;
}

bool decode_cancel_requested(void * data) {
    const auto * c = static_cast<const DecodeCancel *>(data);
    return c->running.load(std::memory_order_relaxed) && c->requested.load(std::memory_order_relaxed);
}

QuietCancelledDecode::QuietCancelledDecode(const DecodeCancel * cancel) { t_decode = cancel; }

QuietCancelledDecode::~QuietCancelledDecode() { t_decode = nullptr; }

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

} // namespace reposnap_addon
