// RepoSnap addon: Model, the JS face of a llama_model (tokenizer, metadata, chat template).
#pragma once

#include "common.h"

namespace reposnap_addon {

class Model : public Napi::ObjectWrap<Model> {
public:
    static Napi::FunctionReference ctor;

    // registers the class (constructed only by loadModel())
    static void Init(Napi::Env env, Napi::Object exports);

    // new Model(External<llama_model>): takes ownership of the model
    explicit Model(const Napi::CallbackInfo & info);
    ~Model() override;

    llama_model * model = nullptr;
    const llama_vocab * vocab = nullptr;

    // throws when the model was disposed
    void check(const Napi::Env & env) const;

private:
    Napi::Value Info(const Napi::CallbackInfo & info);
    Napi::Value Tokenize(const Napi::CallbackInfo & info);
    Napi::Value TokenToPiece(const Napi::CallbackInfo & info);
    Napi::Value Detokenize(const Napi::CallbackInfo & info);
    Napi::Value IsEog(const Napi::CallbackInfo & info);
    Napi::Value ApplyChatTemplate(const Napi::CallbackInfo & info);
    Napi::Value Dispose(const Napi::CallbackInfo & info);
};

// loadModel(path, { gpuLayers, rpcServers? }) -> Promise<Model> (rpcServers: "host:port" strings, rpc.cpp)
Napi::Value LoadModel(const Napi::CallbackInfo & info);

} // namespace reposnap_addon
