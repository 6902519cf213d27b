// RepoSnap engine: the N-API face of the patched llama.cpp — the module's exports.
// common.h: shared helpers and the PromiseWorker; model.cpp: Model and loadModel();
// session.cpp: Session; snapkv.cpp: Session's llama_snapkv_* methods and snapStatus;
// synthetic.cpp: createSyntheticModel(); rpc.cpp: RPC servers for loadModel() and startRpcServer().
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

Napi::Object Init(Napi::Env env, Napi::Object exports) {
    Model::Init(env, exports);
    Session::Init(env, exports);
    exports.Set("loadModel",  Napi::Function::New(env, LoadModel));
    exports.Set("systemInfo", Napi::Function::New(env, SystemInfo));
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
