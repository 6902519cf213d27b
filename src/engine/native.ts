/**
 * Loads the RepoSnap N-API addon (native/addon, built by native/build.mjs) and types its surface.
 * The addon wraps the patched llama.cpp; see native/patches for the SnapKV change.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { NativeBackendLoad } from './backends';
import { EngineError } from './errors';

/** Model metadata, read from the GGUF through llama.cpp (`llama_model_*`). */
export interface NativeModelInfo {
  description: string;
  architecture?: string;
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  nEmbd: number;
  nCtxTrain: number;
  /** Sliding-window size; 0 when the model attends to the whole context. */
  nSwa: number;
  nVocab: number;
  bos: number;
  eos: number;
  /** Whether the tokenizer adds BOS by itself. */
  addBos: boolean;
  sizeBytes: number;
  nParams: number;
  /** Jinja chat template from the GGUF metadata, or null. */
  chatTemplate: string | null;
}

/** `llama_model` handle. */
export interface NativeModel {
  info(): NativeModelInfo;
  tokenize(text: string, addSpecial: boolean, parseSpecial: boolean): Int32Array;
  /** Raw bytes of one token's piece (may end inside a UTF-8 character). */
  tokenToPiece(token: number, renderSpecial: boolean): Buffer;
  detokenize(tokens: Int32Array, renderSpecial: boolean): string;
  isEog(token: number): boolean;
  /** llama.cpp's built-in template engine; null when the model has no template it knows. */
  applyChatTemplate(messages: { role: string; content: string }[], addAssistant: boolean): string | null;
  dispose(): void;
}

/** Options of `llama_init_from_model` that RepoSnap exposes. */
export interface NativeSessionOptions {
  contextSize?: number;
  batchSize?: number;
  ubatchSize?: number;
  seqMax?: number;
  threads?: number;
  threadsBatch?: number;
  flashAttention?: 'on' | 'off' | 'auto';
  typeK?: KvCacheType;
  typeV?: KvCacheType;
  /** `llama_context_params.swa_full` (see {@link SessionOptions.swaFull}). Default true. */
  swaFull?: boolean;
}

/** KV cache element types (ggml type names). Quantized V needs flash attention. */
export type KvCacheType = (typeof KV_CACHE_TYPES)[number];

/**
 * Every KV cache type the engine accepts, by ggml's type names: the float types first, then the
 * block-quantized ones, whose V cache llama.cpp allows only with flash attention
 * (`llama_init_from_model` refuses it otherwise).
 */
export const KV_CACHE_TYPES = Object.freeze(['f32', 'f16', 'bf16', 'q8_0', 'q4_0', 'q4_1', 'q5_0', 'q5_1'] as const);

/** Whether a KV cache type is block-quantized (not f32, f16 or bf16). Pure. */
export function isQuantizedKvType(type: KvCacheType): boolean {
  return type !== 'f32' && type !== 'f16' && type !== 'bf16';
}

/** Budget allocations: TypeScript policies since issue 16 (src/engine/policies), re-exported for the settings. */
export type { BudgetAllocation } from './policies/compose';

/**
 * `enum llama_snapkv_status` of the patched llama.h (native/patches), by name, as the addon exports
 * it (`snapStatus`): `ok` compacted, `noop` nothing to do (L ≤ B); the `err*` values are negative and
 * leave the cache unchanged: `errParams` invalid parameters, `errMemory` the context's memory is not
 * a plain or interleaved sliding-window KV cache (hybrid, recurrent), `errModel` unsupported attention
 * (sliding window in every layer, chunked attention, ALiBi, multi-position RoPE, soft-capping, MLA), `errLayout` cells shared with another sequence, a pending
 * shift or head sizes that split quantization blocks, `errWindow` window queries not captured,
 * `errCompute` graph allocation or compute failed.
 */
export interface NativeSnapStatus {
  readonly ok: number;
  readonly noop: number;
  readonly errParams: number;
  readonly errMemory: number;
  readonly errModel: number;
  readonly errLayout: number;
  readonly errWindow: number;
  readonly errCompute: number;
}

/** Result of `llama_snapkv_compact` (`status`: a {@link NativeSnapStatus} value; < 0: `error` says why). */
export interface NativeSnapResult {
  status: number;
  error: string;
  L: number;
  /** Cells the sequence holds after (C, the largest per-head budget, for a non-uniform allocation). */
  B: number;
  nLayer: number;
  nHeadKv: number;
  ms: number;
  /** Rows kept over all layers and KV heads. */
  kept: number;
  /** Graph runs the request took: 1, or one per group of layers when a single graph would not fit the
   * context's graph size (`llama_snapkv_result.n_graphs`; 0 when no graph ran). */
  graphs: number;
  /** KV heads scored together in a layer's scoring graph, the most over the runs (0: no scoring). */
  chunkHeads: number;
}

/**
 * `llama_snapkv_get_kv_stats`: cache occupancy seen by one sequence. For an interleaved
 * sliding-window model (Gemma 2/3, Cohere 2, gpt-oss: llama.cpp's `llama_kv_cache_iswa`) `cells`,
 * `nKv`, `kvSize` and `bytesPerCell` describe the global layers' cache, the one SnapKV compacts (its
 * B), and the `swa*` fields the sliding-window layers' cache (`llama_snapkv_get_kv_stats_swa`, never
 * compacted: the last n_swa tokens plus up to a ubatch); the `swa*` fields are 0 for other models.
 */
export interface NativeKvStats {
  /** Cells the sequence holds in the (global layers') cache: L before SnapKV, B after. */
  cells: number;
  cellsUsed: number;
  nKv: number;
  kvSize: number;
  /** K + V bytes of one cell over the cache's layers (the global layers only for iSWA). */
  bytesPerCell: number;
  /** Cells the sequence holds in the sliding-window layers' cache (0 without one). */
  swaCells: number;
  /** Cells of the sliding-window layers' cache (0 without one). */
  swaKvSize: number;
  /** K + V bytes of one cell over the sliding-window layers (0 without them). */
  swaBytesPerCell: number;
  /** The sequence's K and V bytes: bytesPerCell·cells + swaBytesPerCell·swaCells (exact). */
  kvBytes: number;
}

/** `llama_context` handle with its batch and sampler. One operation at a time. */
export interface NativeSession {
  /**
   * `llama_decode` of `tokens` (≤ batchSize) at positions pos0…, sequence seqId; keeps the logits
   * of the last token, of all, or of none. Resolves true once decoded; false when {@link cancelDecode}
   * stopped it (llama_decode returned 2, the graph stopped between two nodes): llama.cpp removed the
   * stopped ubatch's positions from the sequence, from its lowest one on (earlier ubatches of the
   * call stay: read {@link seqPosMax}). Rejects when the cache is full or the decode failed.
   */
  decode(tokens: Int32Array, pos0: number, seqId: number, logits: 'last' | 'all' | 'none'): Promise<boolean>;
  /**
   * Stops the running {@link decode} after the graph node being computed (`llama_set_abort_callback`,
   * polled by ggml's CPU backend after each node); its promise resolves false. A decode started
   * after this call, and any other operation, is not affected. Callable while a decode runs.
   */
  cancelDecode(): void;
  logits(i: number): Float32Array;
  setSampler(opts: { temperature?: number; topP?: number; seed?: number }): void;
  sample(i?: number): number;
  /**
   * `llama_snapkv_capture`: arms (window > 0) or disarms (0) the window-query capture.
   * @throws Error with a `status` property (a negative {@link NativeSnapStatus} value) when refused.
   */
  snapCapture(seqId: number, window: number): void;
  /**
   * `llama_snapkv_compact`: SnapKV with the uniform allocation on the device (score, top B − w per
   * (layer, KV head), compact). The fast path of the product's policy.
   */
  snap(
    seqId: number,
    params: {
      window: number;
      budget: number;
      kernel: number;
      pooling: 'max' | 'avg';
      force?: boolean;
      keepScores?: boolean;
    },
  ): Promise<NativeSnapResult>;
  /**
   * `llama_snapkv_score`: SnapKV's pooled window-attention scores alone, read with {@link snapScores}
   * ([nLayer][nHeadKv][L − w], row p = the sequence's p-th lowest position); no cell changes
   * (`B` = L). Status `noop` when L ≤ w.
   */
  snapScore(seqId: number, params: { window: number; kernel: number; pooling: 'max' | 'avg' }): Promise<NativeSnapResult>;
  /** `llama_snapkv_compact_kept`: compacts the given kept positions ([nLayer][nHeadKv][budget], −1 padded rows). */
  compactKept(seqId: number, budget: number, kept: Int32Array): Promise<NativeSnapResult>;
  /**
   * `llama_snapkv_key_norms`: the L2 norm of every stored key row of the sequence's cells, one
   * graph on the cache's backend: `norms` Float32Array [nLayer][nHeadKv][L], row p = the sequence's
   * p-th lowest position (RoPE applied; a quantized cache's keys dequantized first); the layers
   * SnapKV compacts (the global layers of an iSWA model). No capture needed, no cell changes.
   * `status` < 0 (an empty or unknown sequence, an unsupported cache or model): `error` says why
   * and `norms` is empty.
   */
  snapKeyNorms(seqId: number): Promise<NativeSnapResult & { norms: Float32Array }>;
  /**
   * `llama_state_seq_get_data_ext`: the sequence's cells, positions, K and V. keepMaskedSliding:
   * `LLAMA_STATE_SEQ_FLAGS_SWA_KEEP_MASKED` (patch 0008): a sliding-window cache writes the cells
   * its window masks at the last position too (else only the window).
   */
  stateGet(seqId: number, keepMaskedSliding?: boolean): Promise<Buffer>;
  /**
   * `llama_state_seq_set_data` into an empty sequence; rejects when llama.cpp refuses the bytes (the
   * message carries `llama_snapkv_last_error`, e.g. an unknown SnapKV mask section version).
   */
  stateSet(seqId: number, data: Buffer): Promise<void>;
  snapKept(): Int32Array;
  /** Pooled scores of the last `snapScore`, or of the last `snap` with keepScores: [nLayer][nHeadKv][L − w]. */
  snapScores(): Float32Array;
  kvStats(seqId: number): NativeKvStats;
  seqPosMax(seqId: number): number;
  seqRm(seqId: number, p0: number, p1: number): boolean;
  /** `llama_memory_seq_cp`: share positions [p0, p1) of src with dst (p1 < 0: to the end). */
  seqCp(src: number, dst: number, p0: number, p1: number): void;
  clear(): void;
  setThreads(threads: number, threadsBatch: number): void;
  dispose(): void;
}

/** The addon's exports. */
export interface NativeAddon {
  /**
   * `llama_model_load_from_file`. `rpcServers` ("host:port"): the model's devices are these llama.cpp
   * RPC servers' (`llama_model_params.devices`), `gpuLayers` of its layers go to them; rejects with
   * `[rpc:<code>] …` when one cannot be used (src/engine/rpc.ts).
   */
  loadModel(path: string, opts: { gpuLayers?: number; rpcServers?: string[] }): Promise<NativeModel>;
  /**
   * `ggml_backend_rpc_start_server` with this build's CPU device (`gpu`: its GPU devices): serves on
   * the calling thread and never returns while serving; throws when it cannot listen or `gpu` finds
   * no GPU. Missing from an engine built before issue 18.
   */
  startRpcServer(opts: { host: string; port: number; threads?: number; cacheDir?: string; gpu?: boolean }): void;
  /** llama.cpp's RPC protocol version of this build ("6.0.0"). */
  rpcProtocol: string;
  /** Exit code of a process that lost an RPC server (src/engine/rpc.ts RPC_LOST_EXIT_CODE). */
  rpcLostExitCode: number;
  Session: new (model: NativeModel, opts: NativeSessionOptions) => NativeSession;
  systemInfo(): string;
  /**
   * This build's ggml backends in registration order, each with its devices (a GPU backend built
   * in but finding no device has none). Missing from an engine built before it was added.
   */
  backends?(): NativeBackend[];
  /**
   * How the backends were loaded (native/addon/backends.cpp): the CPU variant, the GPU modules and why
   * any was not used. Missing from an engine built before portable builds.
   */
  backendLoad?(): NativeBackendLoad;
  /** `enum llama_snapkv_status` by name (frozen). */
  snapStatus: NativeSnapStatus;
  /** Writes a llama GGUF of the given shape with seeded random weights (llama_model_init_from_user). */
  createSyntheticModel(path: string, shape: SyntheticShape): Promise<void>;
}

/** A ggml backend of the engine build (`ggml_backend_reg_name`) and its devices. */
export interface NativeBackend {
  /** `CPU`, `RPC`, `CUDA`, `Vulkan`, `Metal`, … */
  name: string;
  /** The CPU backend of a portable engine: the variant ggml loaded for this CPU (`haswell`, `zen4`, …). */
  variant?: string;
  devices: { name: string; description: string; type: 'cpu' | 'gpu' | 'igpu' | 'accel' }[];
}

/** Shape of a synthetic llama model (see src/engine/synthetic.ts). */
export interface SyntheticShape {
  nLayer?: number;
  nEmbd?: number;
  nHead?: number;
  nHeadKv?: number;
  nFf?: number;
  nVocab?: number;
  nCtx?: number;
  ropeFreqBase?: number;
  weightType?: 'f32' | 'f16' | 'q8_0' | 'q4_0';
  seed?: number;
  /**
   * Another architecture, with llama.cpp's default sliding-window pattern for it (SnapKV compacts
   * the global layers): 'gemma3' (5 local layers to 1 global), 'cohere2' (3 local to 1 global; the
   * global layers use no RoPE), 'gpt-oss' (alternating, sliding layers first; learned attention
   * sinks `blk.N.attn_sinks` and a mixture of experts in every layer), and for guard tests 'bloom'
   * (ALiBi), 'gemma2' (soft-capped logits), 'qwen2vl' (M-RoPE), 'llama4' (chunked attention),
   * 'deepseek2' (multi-head latent attention), 'mamba' (recurrent), 'jamba' (hybrid: recurrent and
   * attention layers).
   */
  architecture?: string;
  /** Sliding-window size (tokens) written to the metadata. */
  slidingWindow?: number;
  /**
   * `attention.sliding_window_pattern` written to the metadata: the period of llama.cpp's
   * `set_swa_pattern` (the last layer of each period is global; 0: every layer sliding). Absent:
   * not written, the architecture's default.
   */
  swaPattern?: number;
  /** gpt-oss only: experts per layer (default 4); `nFf` is each expert's FFN width. */
  nExpert?: number;
  /** gpt-oss only: experts routed per token (default 2). */
  nExpertUsed?: number;
  /**
   * gpt-oss only: every learned attention sink (`blk.N.attn_sinks`, one logit per query head that
   * joins each softmax row's denominator) set to this value; absent: random like the other weights.
   */
  sinkLogit?: number;
  /**
   * gpt-oss only, instead of `sinkLogit`: the sink logit of each query head h (query head h of KV
   * head kv is h = kv · nHead / nHeadKv + g), `nHead` values for every layer or `nLayer · nHead`
   * values layer-major (layer l's head h at l · nHead + h). Another length is a RangeError.
   */
  sinkLogits?: number[];
}

let cached: NativeAddon | undefined;

/**
 * The package root: the folder holding package.json, found upwards from this file
 * (src/engine when run from source, dist when bundled).
 */
export function packageRoot(): string {
  let dir = __dirname;
  for (let i = 0; i < 5; i++) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    dir = path.dirname(dir);
  }
  throw new EngineError('cannot find the RepoSnap package root');
}

/**
 * The folder of the engine (reposnap.node, its libraries, `gpu/`, engine.json): a package's own
 * platform folder, `native/engine/<platform>-<arch>` (scripts/package.mjs puts the target's engine
 * there), when it holds an addon; else the build folder, `native/build` (native/build.mjs).
 * @param root the package root (default {@link packageRoot}).
 */
export function engineDir(root: string = packageRoot()): string {
  const packaged = path.join(root, 'native', 'engine', `${process.platform}-${process.arch}`);
  return fs.existsSync(path.join(packaged, 'reposnap.node')) ? packaged : path.join(root, 'native', 'build');
}

/**
 * Loads the addon once. `REPOSNAP_ADDON` overrides the path (e.g. a CUDA build).
 * @throws EngineError when the addon was not built.
 */
export function loadAddon(): NativeAddon {
  if (cached) return cached;
  const file = process.env.REPOSNAP_ADDON ?? path.join(engineDir(), 'reposnap.node');
  if (!fs.existsSync(file)) {
    throw new EngineError(`the native engine is not built (${file} is missing): run 'npm run build'`);
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  cached = require(file) as NativeAddon;
  return cached;
}
