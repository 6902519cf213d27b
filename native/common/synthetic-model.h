// Synthetic llama models of a chosen shape with seeded random weights, created in memory by
// llama.cpp's own llama_model_init_from_user (shared by the addon's createSyntheticModel and
// native/bench/snapkv-bench.cpp). Weights do not change speed; shapes do.
#pragma once

#include "gguf.h"
#include "llama.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace reposnap {

struct synthetic_shape {
    uint32_t  n_layer   = 8;
    uint32_t  n_embd    = 1024;
    uint32_t  n_head    = 16;
    uint32_t  n_head_kv = 4;
    uint32_t  n_ff      = 2816;
    uint32_t  n_vocab   = 32000;
    uint32_t  n_ctx     = 131072;
    float     rope_freq_base = 10000.0f;
    ggml_type wtype     = GGML_TYPE_F16; // 2-D weights; norms stay F32
    uint32_t  seed      = 1;
    std::string arch    = "llama";       // another architecture for guard tests (bloom: ALiBi, gemma2: SWA, qwen2vl: M-RoPE)
    uint32_t  n_swa     = 0;             // sliding window (gemma2, gemma3, cohere2, gpt-oss)
    uint32_t  n_expert      = 4;         // gpt-oss only: experts per layer (n_ff is each expert's FFN width)
    uint32_t  n_expert_used = 2;         // gpt-oss only: experts routed per token
    int32_t   swa_pattern   = -1;        // attention.sliding_window_pattern (the period; 0: every layer sliding); -1: not written (the architecture's default)
    float     sink_logit    = NAN;       // gpt-oss only: every learned attention sink (blk.N.attn_sinks) set to this logit; NaN: random like the other weights
    std::vector<float> sink_logits;      // gpt-oss only, before sink_logit: the sinks per query head h ([n_head], every layer) or per (layer, head) ([n_layer*n_head], layer-major); empty: sink_logit
};

// A SentencePiece-style vocabulary of n tokens: <unk>, <s>, </s>, the 256 byte tokens, then dummy
// pieces; enough for tokenizers (ours, node-llama-cpp's) to load and round-trip bytes.
inline void add_spm_vocab(gguf_context * meta, uint32_t n_vocab) {
    std::vector<std::string> toks = { "<unk>", "<s>", "</s>" };
    std::vector<int32_t> types = { 2, 3, 3 };
    for (int b = 0; b < 256; ++b) {
        char buf[8];
        snprintf(buf, sizeof(buf), "<0x%02X>", b);
        toks.push_back(buf);
        types.push_back(6);
    }
    for (uint32_t i = (uint32_t) toks.size(); i < n_vocab; ++i) {
        toks.push_back("\xe2\x96\x81w" + std::to_string(i));
        types.push_back(1);
    }
    std::vector<float> scores(n_vocab);
    std::vector<const char *> ptrs;
    for (uint32_t i = 0; i < n_vocab; ++i) {
        scores[i] = -(float) i;
        ptrs.push_back(toks[i].c_str());
    }
    gguf_set_val_str(meta, "tokenizer.ggml.model", "llama");
    gguf_set_arr_str(meta, "tokenizer.ggml.tokens", ptrs.data(), ptrs.size());
    gguf_set_arr_data(meta, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores.data(), scores.size());
    gguf_set_arr_data(meta, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types.data(), types.size());
    gguf_set_val_u32(meta, "tokenizer.ggml.bos_token_id", 1);
    gguf_set_val_u32(meta, "tokenizer.ggml.eos_token_id", 2);
    gguf_set_val_u32(meta, "tokenizer.ggml.unknown_token_id", 0);
}

// Tensor data: uniform weights with the variance of N(0, 1/fan_in) from a seeded xorshift, rows
// split over the cores and quantized with ggml_quantize_chunk; identities for the optional tensors
// llama_model_init_from_user creates (zero biases, unit scales, norms and RoPE factors), so the
// model is a plain llama.
inline void synthetic_tensor_data(ggml_tensor * t, void * ud) {
    const auto & sh = *(const synthetic_shape *) ud;
    const std::string name = t->name;
    const int64_t n_per_row = t->ne[0];
    const int64_t nrows = ggml_nrows(t);
    auto ends_with = [&](const char * s) { const size_t n = strlen(s); return name.size() >= n && name.compare(name.size() - n, n, s) == 0; };
    if (ends_with(".bias") || ends_with(".scale") || ends_with(".input_scale") || name.rfind("rope_freqs", 0) == 0 || name.find("norm") != std::string::npos) {
        std::vector<float> v(ggml_nelements(t), ends_with(".bias") ? 0.0f : 1.0f);
        ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
        return;
    }
    if (ends_with("attn_sinks.weight") && !sh.sink_logits.empty()) {
        // blk.<il>.attn_sinks.weight [n_head]: this layer's row of the table
        const int64_t n = ggml_nelements(t);
        const size_t off = sh.sink_logits.size() == (size_t) n ? 0 : (size_t) std::stoi(name.substr(4))*(size_t) n;
        GGML_ASSERT(off + (size_t) n <= sh.sink_logits.size());
        ggml_backend_tensor_set(t, sh.sink_logits.data() + off, 0, ggml_nbytes(t));
        return;
    }
    if (ends_with("attn_sinks.weight") && !std::isnan(sh.sink_logit)) {
        std::vector<float> v(ggml_nelements(t), sh.sink_logit);
        ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
        return;
    }
    const float a = std::sqrt(3.0f/(float) n_per_row);
    const size_t row_bytes = ggml_row_size(t->type, n_per_row);
    std::vector<uint8_t> out(ggml_nbytes(t));
    const int nth = (int) std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> pool;
    for (int th = 0; th < nth; ++th) {
        pool.emplace_back([&, th] {
            std::vector<float> row(n_per_row);
            for (int64_t r = th; r < nrows; r += nth) {
                uint64_t x = 0x9E3779B97F4A7C15ull ^ ((uint64_t) sh.seed << 32) ^ (std::hash<std::string>{}(name) + (uint64_t) r*0x100000001B3ull);
                for (int64_t i = 0; i < n_per_row; ++i) {
                    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                    row[i] = a*(2.0f*(float) (x >> 40)/(float) (1ull << 24) - 1.0f);
                }
                if (t->type == GGML_TYPE_F32) {
                    memcpy(out.data() + r*row_bytes, row.data(), row_bytes);
                } else {
                    ggml_quantize_chunk(t->type, row.data(), out.data() + r*row_bytes, 0, 1, n_per_row, nullptr);
                }
            }
        });
    }
    for (auto & th : pool) th.join();
    ggml_backend_tensor_set(t, out.data(), 0, out.size());
}

// One tensor as llama_model_init_from_user asked for it, with the data synthetic_tensor_data gave it.
struct synthetic_tensor {
    std::string name;
    ggml_type type;
    int64_t ne[GGML_MAX_DIMS];
    std::vector<uint8_t> data;
};

// What make_synthetic_model records for write_synthetic_gguf: the metadata and every tensor.
struct synthetic_record {
    const synthetic_shape * sh = nullptr;
    gguf_context * meta = nullptr; // owned (gguf_free)
    std::vector<synthetic_tensor> tensors;
};

inline void synthetic_tensor_data_recorded(ggml_tensor * t, void * ud) {
    auto & rec = *(synthetic_record *) ud;
    synthetic_tensor_data(t, (void *) rec.sh);
    synthetic_tensor st;
    st.name = t->name;
    st.type = t->type;
    for (int i = 0; i < GGML_MAX_DIMS; ++i) st.ne[i] = t->ne[i];
    st.data.resize(ggml_nbytes(t));
    ggml_backend_tensor_get(t, st.data.data(), 0, st.data.size());
    rec.tensors.push_back(std::move(st));
}

// The model (nullptr on failure). The shape must outlive the call only. With rec, the metadata and
// the tensors are also recorded there (for write_synthetic_gguf).
inline llama_model * make_synthetic_model(const synthetic_shape & sh, int n_gpu_layers, synthetic_record * rec = nullptr) {
    gguf_context * meta = gguf_init_empty();
    const std::string a = sh.arch;
    auto key = [&](const char * k) { return a + "." + k; };
    gguf_set_val_str(meta, "general.architecture", a.c_str());
    gguf_set_val_str(meta, "general.name", "reposnap-synthetic");
    gguf_set_val_u32(meta, key("vocab_size").c_str(), sh.n_vocab);
    gguf_set_val_u32(meta, key("context_length").c_str(), sh.n_ctx);
    gguf_set_val_u32(meta, key("embedding_length").c_str(), sh.n_embd);
    gguf_set_val_u32(meta, key("feed_forward_length").c_str(), sh.n_ff);
    gguf_set_val_u32(meta, key("block_count").c_str(), sh.n_layer);
    gguf_set_val_u32(meta, key("attention.head_count").c_str(), sh.n_head);
    gguf_set_val_u32(meta, key("attention.head_count_kv").c_str(), sh.n_head_kv);
    gguf_set_val_u32(meta, key("rope.dimension_count").c_str(), sh.n_embd/sh.n_head);
    gguf_set_val_f32(meta, key("rope.freq_base").c_str(), sh.rope_freq_base);
    gguf_set_val_f32(meta, key("attention.layer_norm_rms_epsilon").c_str(), 1e-5f);
    gguf_set_val_f32(meta, key("attention.layer_norm_epsilon").c_str(), 1e-5f);
    if (sh.n_swa > 0) {
        gguf_set_val_u32(meta, key("attention.sliding_window").c_str(), sh.n_swa);
    }
    if (sh.swa_pattern >= 0) {
        gguf_set_val_u32(meta, key("attention.sliding_window_pattern").c_str(), (uint32_t) sh.swa_pattern);
    }
    if (a == "cohere2") {
        // llama_model_cohere2::load_arch_hparams requires the output logit scale
        gguf_set_val_f32(meta, key("logit_scale").c_str(), 1.0f);
    }
    if (a == "gpt-oss") {
        // llama_model_openai_moe: a mixture of experts in every layer (expert FFN width required)
        gguf_set_val_u32(meta, key("expert_count").c_str(), sh.n_expert);
        gguf_set_val_u32(meta, key("expert_used_count").c_str(), sh.n_expert_used);
        gguf_set_val_u32(meta, key("expert_feed_forward_length").c_str(), sh.n_ff);
    }
    // guard tests (test/engine/guards.test.ts): the attention variants SnapKV refuses
    if (a == "llama4") {
        // no sliding_window key: chunked attention (chunks of 8192, 3 chunked layers to 1 full)
        // and a mixture of experts in every layer (interleave step 1)
        gguf_set_val_u32(meta, key("expert_count").c_str(), sh.n_expert);
        gguf_set_val_u32(meta, key("expert_used_count").c_str(), 1);
        gguf_set_val_u32(meta, key("expert_feed_forward_length").c_str(), sh.n_ff);
        gguf_set_val_u32(meta, key("interleave_moe_layer_step").c_str(), 1);
    }
    if (a == "deepseek2") {
        // multi-head latent attention: the cache holds one latent row per layer and token
        // (kv_lora_rank + the RoPE part), 1 KV "head"; dense FFNs only (every block leading)
        const uint32_t n_rot = sh.n_embd/sh.n_head, kv_lora = 64;
        gguf_set_val_u32(meta, key("leading_dense_block_count").c_str(), sh.n_layer);
        gguf_set_val_u32(meta, key("expert_feed_forward_length").c_str(), sh.n_ff);
        gguf_set_val_u32(meta, key("expert_shared_count").c_str(), 0);
        gguf_set_val_u32(meta, key("attention.q_lora_rank").c_str(), 0);
        gguf_set_val_u32(meta, key("attention.kv_lora_rank").c_str(), kv_lora);
        gguf_set_val_u32(meta, key("attention.key_length_mla").c_str(), n_rot + 16);
        gguf_set_val_u32(meta, key("attention.value_length_mla").c_str(), n_rot);
        gguf_set_val_u32(meta, key("attention.key_length").c_str(), kv_lora + n_rot);
        gguf_set_val_u32(meta, key("attention.value_length").c_str(), kv_lora);
        gguf_set_val_u32(meta, key("attention.head_count_kv").c_str(), 1);
    }
    if (a == "mamba" || a == "jamba") {
        // recurrent (Mamba) layers: every layer, or for jamba (hybrid) those with 0 KV heads
        gguf_set_val_u32(meta, key("ssm.conv_kernel").c_str(), 4);
        gguf_set_val_u32(meta, key("ssm.inner_size").c_str(), 2*sh.n_embd);
        gguf_set_val_u32(meta, key("ssm.state_size").c_str(), 16);
        gguf_set_val_u32(meta, key("ssm.time_step_rank").c_str(), std::max(1u, sh.n_embd/16));
    }
    if (a == "jamba") {
        // even layers recurrent, odd layers attention
        std::vector<uint32_t> kv(sh.n_layer);
        for (uint32_t il = 0; il < sh.n_layer; ++il) kv[il] = il % 2 == 1 ? sh.n_head_kv : 0;
        gguf_set_arr_data(meta, key("attention.head_count_kv").c_str(), GGUF_TYPE_UINT32, kv.data(), kv.size());
    }
    if (a == "qwen2vl") {
        const int32_t sections[4] = { (int32_t) (sh.n_embd/sh.n_head/4), (int32_t) (sh.n_embd/sh.n_head/8), (int32_t) (sh.n_embd/sh.n_head/8), 0 };
        gguf_set_arr_data(meta, key("rope.dimension_sections").c_str(), GGUF_TYPE_INT32, sections, 4);
    }
    if (sh.n_vocab >= 259) {
        add_spm_vocab(meta, sh.n_vocab);
    } else {
        gguf_set_val_str(meta, "tokenizer.ggml.model", "no_vocab");
    }
    // the 2-D weights in the chosen type: "override by adding a tensor with the same name but a different type"
    auto add = [&](const std::string & n) {
        ggml_tensor t;
        memset(&t, 0, sizeof(t));
        t.type = sh.wtype;
        ggml_set_name(&t, n.c_str());
        gguf_add_tensor(meta, &t);
    };
    if (sh.wtype != GGML_TYPE_F32 && a == "llama") {
        add("token_embd.weight");
        add("output.weight");
        for (uint32_t il = 0; il < sh.n_layer; ++il) {
            for (const char * w : { "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down" }) {
                add("blk." + std::to_string(il) + "." + w + ".weight");
            }
        }
    }
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = n_gpu_layers;
    llama_model * m = nullptr;
    if (rec) {
        rec->sh = &sh;
        m = llama_model_init_from_user(meta, synthetic_tensor_data_recorded, (void *) rec, mp);
        rec->meta = meta;
    } else {
        m = llama_model_init_from_user(meta, synthetic_tensor_data, (void *) &sh, mp);
        gguf_free(meta);
    }
    return m;
}

// Writes a recorded synthetic model as a GGUF file: its metadata and its tensors with their data.
// For the architectures llama_model_save_to_file refuses (llama_model_saver_supports_arch: gemma3,
// cohere2, ..., because it cannot write their sliding-window pattern; their loaders then use the
// architecture's default pattern, the one the synthetic model was built with). Frees rec.meta.
inline bool write_synthetic_gguf(synthetic_record & rec, const char * path) {
    ggml_init_params params = { rec.tensors.size()*ggml_tensor_overhead(), nullptr, true };
    ggml_context * ctx = ggml_init(params);
    for (auto & st : rec.tensors) {
        // a tensor the loader creates twice (TENSOR_DUPLICATED: cohere2's output is its token
        // embedding) is recorded twice with the same data; the file holds it once
        if (gguf_find_tensor(rec.meta, st.name.c_str()) >= 0) {
            continue;
        }
        ggml_tensor * t = ggml_new_tensor(ctx, st.type, GGML_MAX_DIMS, st.ne);
        ggml_set_name(t, st.name.c_str());
        t->data = st.data.data();
        gguf_add_tensor(rec.meta, t);
    }
    const bool ok = gguf_write_to_file(rec.meta, path, false);
    ggml_free(ctx);
    gguf_free(rec.meta);
    rec.meta = nullptr;
    return ok;
}

} // namespace reposnap
