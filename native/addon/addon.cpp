// RepoSnap engine: the N-API face of the patched llama.cpp — the module's exports.
// common.h: shared helpers and the PromiseWorker; model.cpp: Model and loadModel();
// session.cpp: Session; snapkv.cpp: Session's llama_snapkv_* methods and snapStatus;
// synthetic.cpp: createSyntheticModel(); rpc.cpp: RPC servers for loadModel() and startRpcServer().
#include "backends.h"
#include "common.h"
#include "model.h"
#include "rpc.h"
#include "session.h"

#include "ggml-rpc.h"

#include <string>

namespace reposnap_addon {

Napi::Value CreateSyntheticModel(const Napi::CallbackInfo & info); // synthetic.cpp

namespace {

Napi::Value SystemInfo(const Napi::CallbackInfo & info) {
    backend_init();
    return Napi::String::New(info.Env(), llama_print_system_info());
}

// backends(): this build's ggml backends (registries) in registration order, each with its devices:
// [{ name, variant?, devices: [{ name, description, type: "cpu"|"gpu"|"igpu"|"accel" }] }]; the CPU
// backend of a portable build carries the variant ggml chose (e.g. "haswell"). A GPU backend built
// in but finding no device is listed with no devices; a CPU-only build lists CPU (and RPC).
Napi::Value Backends(const Napi::CallbackInfo & info) {
    backend_init();
    Napi::Env env = info.Env();
    Napi::Array out = Napi::Array::New(env);
    for (size_t r = 0; r < ggml_backend_reg_count(); ++r) {
        ggml_backend_reg_t reg = ggml_backend_reg_get(r);
        Napi::Array devs = Napi::Array::New(env);
        for (size_t i = 0; i < ggml_backend_reg_dev_count(reg); ++i) {
            ggml_backend_dev_t d = ggml_backend_reg_dev_get(reg, i);
            const char * type = "accel";
            switch (ggml_backend_dev_type(d)) {
                case GGML_BACKEND_DEVICE_TYPE_CPU:  type = "cpu";  break;
                case GGML_BACKEND_DEVICE_TYPE_GPU:  type = "gpu";  break;
                case GGML_BACKEND_DEVICE_TYPE_IGPU: type = "igpu"; break;
                default: break;
            }
            Napi::Object dev = Napi::Object::New(env);
            dev.Set("name", ggml_backend_dev_name(d));
            dev.Set("description", ggml_backend_dev_description(d));
            dev.Set("type", type);
            devs.Set(static_cast<uint32_t>(i), dev);
        }
        Napi::Object b = Napi::Object::New(env);
        b.Set("name", ggml_backend_reg_name(reg));
        if (std::string(ggml_backend_reg_name(reg)) == "CPU" && !backend_load().cpu_variant.empty()) {
            b.Set("variant", backend_load().cpu_variant);
        }
        b.Set("devices", devs);
        out.Set(static_cast<uint32_t>(r), b);
    }
    return out;
}

// backendLoad(): how the backends were loaded (backends.h BackendLoad):
// { dynamic, dir, request, cpuVariant, loaded: [file], notes: [line] }
Napi::Value BackendLoadInfo(const Napi::CallbackInfo & info) {
    backend_init();
    Napi::Env env = info.Env();
    const BackendLoad & l = backend_load();
    Napi::Object o = Napi::Object::New(env);
    o.Set("dynamic", l.dynamic);
    o.Set("dir", l.dir);
    o.Set("request", l.request);
    o.Set("cpuVariant", l.cpu_variant);
    Napi::Array loaded = Napi::Array::New(env, l.loaded.size());
    for (size_t i = 0; i < l.loaded.size(); ++i) {
        loaded.Set(static_cast<uint32_t>(i), l.loaded[i]);
    }
    Napi::Array notes = Napi::Array::New(env, l.notes.size());
    for (size_t i = 0; i < l.notes.size(); ++i) {
        notes.Set(static_cast<uint32_t>(i), l.notes[i]);
    }
    o.Set("loaded", loaded);
    o.Set("notes", notes);
    return o;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
    Model::Init(env, exports);
    Session::Init(env, exports);
    exports.Set("loadModel",  Napi::Function::New(env, LoadModel));
    exports.Set("systemInfo", Napi::Function::New(env, SystemInfo));
    exports.Set("backends",   Napi::Function::New(env, Backends));
    exports.Set("backendLoad", Napi::Function::New(env, BackendLoadInfo));
    exports.Set("createSyntheticModel", Napi::Function::New(env, CreateSyntheticModel));
    exports.Set("snapStatus", snap_status(env));
    exports.Set("startRpcServer", Napi::Function::New(env, StartRpcServer));
    exports.Set("rpcProtocol", Napi::String::New(env, std::to_string(RPC_PROTO_MAJOR_VERSION) + "." + std::to_string(RPC_PROTO_MINOR_VERSION) + "." + std::to_string(RPC_PROTO_PATCH_VERSION)));
    exports.Set("rpcLostExitCode", Napi::Number::New(env, RPC_LOST_EXIT_CODE));
    return exports;
}

} // namespace

} // namespace reposnap_addon

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) {
    return reposnap_addon::Init(env, exports);
}

NODE_API_MODULE(reposnap, InitModule)
