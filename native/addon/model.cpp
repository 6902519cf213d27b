// RepoSnap addon: Model (llama_model) and loadModel(). See common.h.
#include "model.h"
#include "rpc.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace reposnap_addon {

Napi::FunctionReference Model::ctor;

void Model::Init(Napi::Env env, Napi::Object exports) {
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

Model::Model(const Napi::CallbackInfo & info) : Napi::ObjectWrap<Model>(info) {
    // constructed by loadModel() with an External
    if (info.Length() != 1 || !info[0].IsExternal()) {
        throw Napi::TypeError::New(info.Env(), "use loadModel()");
    }
    model = info[0].As<Napi::External<llama_model>>().Data();
    vocab = llama_model_get_vocab(model);
}

Model::~Model() {
    if (model) {
        llama_model_free(model);
    }
}

void Model::check(const Napi::Env & env) const {
    if (!model) {
        throw Napi::Error::New(env, "the model was disposed");
    }
}

Napi::Value Model::Info(const Napi::CallbackInfo & info) {
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
Napi::Value Model::Tokenize(const Napi::CallbackInfo & info) {
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
Napi::Value Model::TokenToPiece(const Napi::CallbackInfo & info) {
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
Napi::Value Model::Detokenize(const Napi::CallbackInfo & info) {
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

Napi::Value Model::IsEog(const Napi::CallbackInfo & info) {
    check(info.Env());
    return Napi::Boolean::New(info.Env(), llama_vocab_is_eog(vocab, info[0].As<Napi::Number>().Int32Value()));
}

// applyChatTemplate([{role, content}], addAssistant) -> string | null (null: the model has no usable template)
Napi::Value Model::ApplyChatTemplate(const Napi::CallbackInfo & info) {
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

Napi::Value Model::Dispose(const Napi::CallbackInfo & info) {
    // the sessions hold a reference to this object, so the model outlives them
    if (model) {
        llama_model_free(model);
        model = nullptr;
    }
    return info.Env().Undefined();
}

Napi::Value LoadModel(const Napi::CallbackInfo & info) {
    auto env = info.Env();
    backend_init();
    if (info.Length() < 1 || !info[0].IsString()) {
        throw Napi::TypeError::New(env, "loadModel(path, options)");
    }
    Napi::Object o = info.Length() > 1 && info[1].IsObject() ? info[1].As<Napi::Object>() : Napi::Object::New(env);
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = opt<int32_t>(o, "gpuLayers", 0);
    // rpcServers: ["host:port", …]: the model's layers go to these servers' devices only (gpuLayers
    // of them; the rest, and the token embeddings, stay on this process's CPU)
    std::vector<std::string> rpc_servers;
    if (o.Has("rpcServers") && o.Get("rpcServers").IsArray()) {
        auto a = o.Get("rpcServers").As<Napi::Array>();
        for (uint32_t i = 0; i < a.Length(); ++i) {
            if (!a.Get(i).IsString()) {
                throw Napi::TypeError::New(env, "loadModel: rpcServers must be strings \"host:port\"");
            }
            rpc_servers.push_back(a.Get(i).As<Napi::String>().Utf8Value());
        }
    }
    const std::string path = info[0].As<Napi::String>().Utf8Value();
    return PromiseWorker<llama_model *>::run(env,
        [path, mp, rpc_servers]() mutable {
            std::vector<ggml_backend_dev_t> devs;
            if (!rpc_servers.empty()) {
                devs = rpc_devices(rpc_servers); // throws "[rpc:…] …"
                devs.push_back(nullptr);
                mp.devices = devs.data();
            }
            take_rpc_alloc_failure(); // one from an earlier load is not this one's
            llama_model * model = llama_model_load_from_file(path.c_str(), mp);
            if (!model && !rpc_servers.empty()) {
                // issue 29, item 11: an RPC server out of memory, not a bad model file
                const std::string why = take_rpc_alloc_failure();
                if (!why.empty()) {
                    throw std::runtime_error("[rpc:alloc] " + why + " for the model's layers: load fewer layers there (reposnap.GPULayers, --gpu-layers) or use a server with more memory");
                }
            }
            if (!model) {
                throw std::runtime_error("failed to load the model from '" + path + "' (not a GGUF file, an unsupported architecture, or not enough memory)");
            }
            return model;
        },
        [](Napi::Env env, llama_model *& model) -> Napi::Value {
            return Model::ctor.New({ Napi::External<llama_model>::New(env, model) });
        });
}

} // namespace reposnap_addon
