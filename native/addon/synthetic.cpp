// RepoSnap addon: createSyntheticModel() (native/common/synthetic-model.h). See common.h.
#include "common.h"
#include "synthetic-model.h"

#include <stdexcept>
#include <string>

namespace reposnap_addon {

// createSyntheticModel(path, { nLayer, nEmbd, nHead, nHeadKv, nFf, nVocab, nCtx, ropeFreqBase, weightType: 'f32'|'f16'|'q8_0'|'q4_0', seed, architecture, slidingWindow, nExpert, nExpertUsed, sinkLogit, sinkLogits, swaPattern }) -> Promise<void>
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
    sh.n_expert       = (uint32_t) opt<int32_t>(o, "nExpert", (int32_t) sh.n_expert);
    sh.n_expert_used  = (uint32_t) opt<int32_t>(o, "nExpertUsed", (int32_t) sh.n_expert_used);
    sh.swa_pattern    = opt<int32_t>(o, "swaPattern", -1);
    if (o.Has("sinkLogit")) {
        sh.sink_logit = (float) o.Get("sinkLogit").As<Napi::Number>().DoubleValue();
    }
    if (o.Has("sinkLogits")) {
        Napi::Array a = o.Get("sinkLogits").As<Napi::Array>();
        for (uint32_t i = 0; i < a.Length(); ++i) {
            sh.sink_logits.push_back((float) a.Get(i).As<Napi::Number>().DoubleValue());
        }
        if (sh.sink_logits.size() != sh.n_head && sh.sink_logits.size() != (size_t) sh.n_layer*sh.n_head) {
            throw Napi::RangeError::New(env, "sinkLogits needs n_head or n_layer*n_head values");
        }
    }
    if (sh.n_head == 0 || sh.n_head_kv == 0 || sh.n_embd % sh.n_head != 0 || sh.n_head % sh.n_head_kv != 0) {
        throw Napi::RangeError::New(env, "need n_embd % n_head == 0 and n_head % n_head_kv == 0");
    }
    if (ggml_is_quantized(sh.wtype) && (sh.n_embd % ggml_blck_size(sh.wtype) != 0 || sh.n_ff % ggml_blck_size(sh.wtype) != 0)) {
        throw Napi::RangeError::New(env, "n_embd and n_ff must be whole blocks of the weight type");
    }
    const std::string path = info[0].As<Napi::String>().Utf8Value();
    return PromiseWorker<none>::run(env,
        [path, sh]() {
            // llama_model_save_to_file refuses the interleaved sliding-window architectures whose
            // pattern it cannot write: those are written from the recorded metadata and tensors
            // (gpt-oss and the guard tests' architectures too, so that the file holds exactly the
            // metadata make_synthetic_model set; no pattern key: the loaders' default patterns are
            // the ones the models were built with)
            const bool direct = sh.arch == "gemma3" || sh.arch == "cohere2" || sh.arch == "gpt-oss" ||
                sh.arch == "llama4" || sh.arch == "deepseek2" || sh.arch == "mamba" || sh.arch == "jamba";
            reposnap::synthetic_record rec;
            llama_model * model = reposnap::make_synthetic_model(sh, 0, direct ? &rec : nullptr);
            if (!model) {
                if (rec.meta) gguf_free(rec.meta);
                throw std::runtime_error("llama_model_init_from_user failed for this shape");
            }
            bool written = true;
            if (direct) {
                written = reposnap::write_synthetic_gguf(rec, path.c_str());
            } else {
                llama_model_save_to_file(model, path.c_str());
            }
            llama_model_free(model);
            if (!written) {
                throw std::runtime_error("cannot write " + path);
            }
            return none{};
        },
        resolve_undefined);
}

} // namespace reposnap_addon
