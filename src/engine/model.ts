/**
 * A loaded GGUF model: tokenizer, metadata, chat template. Wraps `llama_model`.
 */
import { readModelMetadata, type ModelMetadata } from '../models/metadata';
import { ModelLoadError } from './errors';
import { loadAddon, type NativeModel, type NativeModelInfo } from './native';
import { parseRpcServers, rpcErrorFromNative } from './rpc';

/** Options of {@link loadModel}. */
export interface LoadModelOptions {
  /**
   * Layers to offload to the GPU, or with `rpcServers` to the RPC servers (0 = CPU only; a large
   * number = all). Default 0 (or `REPOSNAP_GPU_LAYERS`, see {@link defaultGpuLayers}), or all layers
   * with `rpcServers`.
   */
  gpuLayers?: number;
  /**
   * llama.cpp RPC servers ("host:port", `reposnap rpc-server`) that the offloaded layers are spread
   * over, in proportion to each server's free memory (src/engine/rpc.ts). Empty: this process's devices.
   */
  rpcServers?: readonly string[];
}

/** `gpuLayers` that puts every layer of any model on the RPC servers (llama.cpp caps it at the layer count + 1). */
export const ALL_LAYERS = 999;

/**
 * The default `gpuLayers` without RPC servers: `REPOSNAP_GPU_LAYERS` when set (a whole number >= 0;
 * the engine tests' GPU lane, .ci/vulkan.sh, offloads every layer with it), else 0 (CPU only).
 * @throws ModelLoadError when the variable is set but not a whole number >= 0.
 */
export function defaultGpuLayers(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.REPOSNAP_GPU_LAYERS;
  if (raw === undefined || raw === '') return 0;
  if (!/^\d+$/.test(raw)) throw new ModelLoadError(`REPOSNAP_GPU_LAYERS must be a whole number >= 0 (got '${raw}')`);
  return Number(raw);
}

/** A chat message for the model's chat template. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/**
 * Loads a GGUF model with llama.cpp (`llama_model_load_from_file`), on a worker thread, after
 * checking its header ({@link readModelMetadata}: the GGUF preamble, then values llama.cpp would
 * abort the process on).
 * @throws ModelLoadError when the file is missing, not a GGUF, its metadata is impossible, or
 *   llama.cpp cannot load it; RpcError when an RPC server is malformed, unreachable, busy, of
 *   another protocol version, sends an invalid reply (`reply`) or cannot allocate the layers' memory
 *   (`alloc`).
 */
export async function loadModel(file: string, options: LoadModelOptions = {}): Promise<EngineModel> {
  const rpcServers = parseRpcServers(options.rpcServers ?? []);
  const gpuLayers = options.gpuLayers ?? (rpcServers.length > 0 ? ALL_LAYERS : defaultGpuLayers());
  const meta = await readModelMetadata(file);
  const addon = loadAddon();
  let native: NativeModel;
  try {
    native = await addon.loadModel(file, { gpuLayers, ...(rpcServers.length > 0 ? { rpcServers } : {}) });
  } catch (e) {
    const message = (e as Error).message;
    throw rpcErrorFromNative(message) ?? new ModelLoadError(message);
  }
  return new EngineModel(file, native, meta, gpuLayers, rpcServers);
}

/** A loaded model. Dispose it when done (sessions keep it alive while they exist). */
export class EngineModel {
  /** Metadata (layers, heads, vocabulary, chat template), read once. */
  readonly info: NativeModelInfo;

  constructor(
    readonly path: string,
    readonly native: NativeModel,
    /** The GGUF header's hyperparameters (head sizes for memory estimates). */
    readonly meta: ModelMetadata,
    /** Layers offloaded to a GPU or the RPC servers (0: the KV cache lives in host memory). */
    readonly gpuLayers = 0,
    /** The llama.cpp RPC servers ("host:port") the offloaded layers live on; empty: this process's devices. */
    readonly rpcServers: readonly string[] = [],
  ) {
    this.info = native.info();
  }

  /**
   * Tokenizes text. `addSpecial` adds BOS when the model wants it; `parseSpecial` turns
   * special-token text (e.g. `<|im_start|>`) into the special tokens (use it for templated
   * prompts only, never for repository text).
   */
  tokenize(text: string, { addSpecial = false, parseSpecial = false } = {}): Int32Array {
    return this.native.tokenize(text, addSpecial, parseSpecial);
  }

  /** Text of a token sequence. */
  detokenize(tokens: ArrayLike<number>, renderSpecial = false): string {
    return this.native.detokenize(Int32Array.from(tokens), renderSpecial);
  }

  /** Raw UTF-8 bytes of one token (may be part of a character). */
  tokenBytes(token: number): Buffer {
    return this.native.tokenToPiece(token, false);
  }

  /** Whether the token ends generation (EOS, EOT, …). */
  isEndOfGeneration(token: number): boolean {
    return this.native.isEog(token);
  }

  /**
   * Formats messages with the model's chat template (llama.cpp's built-in templates), or
   * returns null when the model has none that llama.cpp knows.
   */
  applyChatTemplate(messages: ChatMessage[], addAssistant = true): string | null {
    return this.native.applyChatTemplate(messages, addAssistant);
  }

  dispose(): void {
    this.native.dispose();
  }
}
