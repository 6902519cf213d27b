/**
 * What a context costs in memory before llama.cpp allocates it, so that an impossible context
 * size is refused with a clear error instead of an out-of-memory kill minutes later.
 * Sizes follow llama.cpp's allocations: `llama_kv_cache` holds K and V of every layer for every
 * cell ([n_embd_k_gqa, kv_size] per layer, `ggml_row_size` of the cache type), and the compute
 * buffer is reserved for one ubatch (`llama_context::graph_reserve`).
 */
import type { ModelMetadata } from '../models/metadata';
import type { KvCacheType } from './native';

/** Bytes per element of each KV cache type (`ggml_type_size / ggml_blck_size`). */
export const KV_TYPE_BYTES: Record<KvCacheType, number> = {
  f32: 4,
  f16: 2,
  bf16: 2,
  q8_0: 34 / 32,
  q4_0: 18 / 32,
  q4_1: 20 / 32,
  q5_0: 22 / 32,
  q5_1: 24 / 32,
};

/** Inputs of {@link estimateContextBytes}. */
export interface ContextShape {
  /** Cells [tokens]. */
  contextSize: number;
  kvCacheType: KvCacheType;
  /** Whether attention runs fused (no [n_kv, n_ubatch, n_head] score matrix). */
  flashAttention: boolean;
  /** Tokens per ubatch (the engine's batch size, 512 by default). */
  ubatch: number;
  /** SnapKV observation window w [tokens] (its scores are [n_kv, w, n_head] F32), 0 without SnapKV. */
  window: number;
}

/** A lower bound of a context's memory [bytes], by part. */
export interface ContextBytes {
  /** K and V of every layer and cell. */
  kv: number;
  /** The largest intermediate of one ubatch (attention scores without flash attention) and SnapKV's scores. */
  compute: number;
  total: number;
}

/**
 * A lower bound of the memory a context of `shape` needs on top of the weights: the KV cache
 * (exact: n_layer · n_cells · n_head_kv · (d_k + d_v) · bytes per element, cells padded to 256),
 * plus the largest F32 score matrix one ubatch or the SnapKV scoring builds (without flash
 * attention [n_cells, n_ubatch, n_head]; SnapKV [n_cells, w, n_head]).
 */
export function estimateContextBytes(meta: ModelMetadata, shape: ContextShape): ContextBytes {
  const cells = Math.ceil(shape.contextSize / 256) * 256;
  const kv = meta.blockCount * cells * meta.headCountKv * (meta.keyLength + meta.valueLength) * KV_TYPE_BYTES[shape.kvCacheType];
  const scores = Math.max(shape.flashAttention ? 0 : shape.ubatch, shape.window) * cells * meta.headCount * 4;
  return { kv, compute: scores, total: kv + scores };
}
