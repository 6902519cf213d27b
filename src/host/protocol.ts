/**
 * The engine host's message protocol: what the extension host sends to the engine child
 * process (`dist/host.js`, forked with `child_process.fork`) and what it sends back, over
 * Node's IPC channel (JSON). Shared by both sides; each side checks what it receives with
 * {@link parseToHost} / {@link parseFromHost} instead of trusting a cast.
 *
 * One engine process serves one window. Requests are answered one at a time in arrival order;
 * `cancel` aborts a running request (inside a prefill's ubatch, between graph nodes, or while decoding) or drops a queued one.
 */
import * as v from 'valibot';
import type { FollowUpMode } from '../config/settings';
import { SnapOptionsSchema } from '../config/snap-options';
import { AFTER_EDIT_STRATEGIES } from '../context/erratum';
import type { PackOptions } from '../context/pack';
import type { SessionOptions } from '../engine/session';
import type { AskEvent, AskRequest, AskStats } from '../pipeline/ask';
import type { CompleteStats } from '../pipeline/complete';

/** The model of a request: a resolved local GGUF file (URIs are resolved before sending). */
export interface ModelSpec {
  path: string;
  /** Layers to offload (ignored by the CPU engine without `rpcServers`). */
  gpuLayers: number;
  /** llama.cpp RPC servers ("host:port") the offloaded layers go to (`reposnap.RPCServers`); absent or empty: none. */
  rpcServers?: string[];
}

/**
 * One question for the engine: the pipeline's request ({@link AskRequest}) as plain data, with
 * what only the engine process holds named instead of carried: the model by its file
 * ({@link ModelSpec}), the cache store by its folder. The extension builds it from the settings
 * (host/request.ts); the engine adds the loaded model, the store, the abort signal and its parse
 * cache (host/engine.ts, `toAskRequest`).
 */
export type AskParams = Pick<AskRequest, 'repo' | 'question' | 'snap' | 'contextSize' | 'maxTokens' | 'maxFileBytes' | 'retrievalShare' | 'forkFrom' | 'prepareOnly' | 'quoted' | 'afterEdit'> & {
  /** The chat thread (or explanation) the question belongs to; the cache store keys follow-ups on it. */
  threadId: string;
  model: ModelSpec;
  /** How a follow-up uses the thread. */
  followUp: FollowUpMode;
  /** The engine options of the question's session. */
  session: Pick<SessionOptions, 'flashAttention' | 'kvCacheType'>;
  /**
   * What to pack: include/exclude globs (`reposnap.*` and VS Code's `files.exclude`), the packing, the order,
   * and with the ranked packing the files open in the window's editors (relative to `repo`,
   * `/`-separated, paths only, never contents, sorted: `PackOptions.recentFiles`).
   */
  pack: Pick<PackOptions, 'include' | 'exclude' | 'packing' | 'order' | 'recentFiles'>;
  /** The folder's cache store folder (one per folder, shared by windows and the CLI: src/cache/window-store.ts); none: no caching. */
  cacheDir?: string;
};

/**
 * A plain chat completion (src/pipeline/complete.ts, the Language Model Chat Provider's requests):
 * messages rendered with the model's chat template, full attention, nothing packed or cached.
 */
export interface CompleteParams {
  model: ModelSpec;
  messages: { role: 'system' | 'user' | 'assistant'; content: string }[];
  /** Context size [tokens]; absent: the model's training context, at most 8192. */
  contextSize?: number;
  /** The longest answer [tokens]. */
  maxTokens: number;
  session: Pick<SessionOptions, 'flashAttention' | 'kvCacheType'>;
}

/** Messages from the extension host to the engine process. */
export type ToHost =
  | { type: 'ask'; id: string; params: AskParams }
  | { type: 'complete'; id: string; params: CompleteParams }
  /** Token counts of `texts` with the model's own tokenizer (loaded when it is not). */
  | { type: 'countTokens'; id: string; model: ModelSpec; texts: string[] }
  | { type: 'cancel'; id: string }
  | { type: 'clearCache'; id: string; cacheDir?: string }
  | { type: 'shutdown' };

/**
 * How the cache store served the question's prompt: the whole repository prefix restored (`hit`),
 * part of it (`partial`), nothing (`miss`), the thread's compressed cache continued (`continue`),
 * or caching off (`off`). `miss` when the pipeline reports none.
 */
export type CacheOutcome = 'hit' | 'partial' | 'miss' | 'continue' | 'off';

/**
 * Pipeline progress as sent over IPC: {@link AskEvent} with the `packed` event slimmed down
 * (file counts and paths instead of every file's text).
 */
export type WireAskEvent =
  | Exclude<AskEvent, { kind: 'packed' }>
  | { kind: 'packed'; files: number; skipped: number; promptTokens: number; paths: string[]; notices: string[] }
  | { kind: 'model'; state: 'loading' | 'loaded'; path: string; ms?: number };

/** Stats of an answered question, with the cache outcome the pipeline reported. */
export type WireAskStats = AskStats & { cache: CacheOutcome };

/** A failure, as sent over IPC. `name` keeps the error class (`AbortError`, `ModelLoadError`, …). */
export interface WireError {
  name: string;
  message: string;
}

/** Messages from the engine process to the extension host. */
export type FromHost =
  | {
      type: 'ready';
      pid: number;
      addon: string;
      /** What the engine runs on, one line (src/engine/backends.ts describeEngine); absent when the addon did not load. */
      engine?: string;
      /** GPU backends asked for or found but not used, one line each, with the reason. */
      notes?: string[];
    }
  | { type: 'event'; id: string; event: WireAskEvent }
  | { type: 'done'; id: string; stats: WireAskStats }
  | { type: 'completed'; id: string; stats: CompleteStats }
  /** One count per text of `countTokens`, and the model's training context [tokens] (`n_ctx_train`). */
  | { type: 'counted'; id: string; counts: number[]; trainContext: number }
  | { type: 'cleared'; id: string; bytes: number }
  | { type: 'error'; id: string; error: WireError };

/** Converts a pipeline event to its wire form. */
export function toWireEvent(e: AskEvent): WireAskEvent {
  if (e.kind !== 'packed') return e;
  return {
    kind: 'packed',
    files: e.pack.files.length,
    skipped: e.pack.skipped.length,
    promptTokens: e.promptTokens,
    paths: e.pack.files.map((f) => f.path),
    notices: e.pack.notices.map((n) => n.message),
  };
}

const OUTCOMES: readonly string[] = ['hit', 'partial', 'miss', 'continue', 'off'];

/** The cache outcome in pipeline stats, `miss` when the pipeline reports none (or one this side does not know). */
export function cacheOutcome(stats: AskStats): CacheOutcome {
  const c = (stats as { cache?: unknown }).cache;
  return typeof c === 'string' && OUTCOMES.includes(c) ? (c as CacheOutcome) : 'miss';
}

/** Converts a thrown value to its wire form. */
export function toWireError(e: unknown): WireError {
  if (e instanceof Error) return { name: e.name, message: e.message };
  return { name: 'Error', message: String(e) };
}

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const isStr = (x: unknown): x is string => typeof x === 'string';
const isNum = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

/** Checks a message received by the engine process; returns it typed, or undefined when malformed. */
export function parseToHost(x: unknown): ToHost | undefined {
  if (!isObj(x)) return undefined;
  switch (x.type) {
    case 'ask': {
      const p = x.params;
      if (!isStr(x.id) || !isObj(p)) return undefined;
      if (!isStr(p.threadId) || !isStr(p.repo) || !isStr(p.question) || !isObj(p.model) || !isObj(p.session) || !isObj(p.pack)) return undefined;
      if (!isStr(p.model.path) || !isNum(p.model.gpuLayers)) return undefined;
      if (p.model.rpcServers !== undefined && !(Array.isArray(p.model.rpcServers) && p.model.rpcServers.every(isStr))) return undefined;
      if (!v.is(SnapOptionsSchema, p.snap) || !isNum(p.maxTokens) || !isNum(p.maxFileBytes) || !isNum(p.retrievalShare) || !isStr(p.followUp)) return undefined;
      if (p.contextSize !== undefined && !isNum(p.contextSize)) return undefined;
      if (p.cacheDir !== undefined && !isStr(p.cacheDir)) return undefined;
      if (p.forkFrom !== undefined && !isStr(p.forkFrom)) return undefined;
      if (p.prepareOnly !== undefined && typeof p.prepareOnly !== 'boolean') return undefined;
      if (p.quoted !== undefined && !(isObj(p.quoted) && isStr(p.quoted.path) && isStr(p.quoted.text))) return undefined;
      if (p.afterEdit !== undefined && !(AFTER_EDIT_STRATEGIES as readonly unknown[]).includes(p.afterEdit)) return undefined;
      return x as unknown as ToHost;
    }
    case 'complete': {
      const p = x.params;
      if (!isStr(x.id) || !isObj(p) || !isObj(p.model) || !isStr(p.model.path) || !isNum(p.model.gpuLayers) || !isNum(p.maxTokens) || !isObj(p.session)) return undefined;
      if (p.contextSize !== undefined && !isNum(p.contextSize)) return undefined;
      const roles = ['system', 'user', 'assistant'];
      if (!Array.isArray(p.messages) || !p.messages.every((m) => isObj(m) && isStr(m.content) && roles.includes(m.role as string))) return undefined;
      return x as unknown as ToHost;
    }
    case 'countTokens':
      return isStr(x.id) && isObj(x.model) && isStr(x.model.path) && isNum(x.model.gpuLayers) && Array.isArray(x.texts) && x.texts.every(isStr) ? (x as unknown as ToHost) : undefined;
    case 'cancel':
      return isStr(x.id) ? (x as unknown as ToHost) : undefined;
    case 'clearCache':
      return isStr(x.id) && (x.cacheDir === undefined || isStr(x.cacheDir)) ? (x as unknown as ToHost) : undefined;
    case 'shutdown':
      return { type: 'shutdown' };
    default:
      return undefined;
  }
}

/** Checks a message received from the engine process; returns it typed, or undefined when malformed. */
export function parseFromHost(x: unknown): FromHost | undefined {
  if (!isObj(x)) return undefined;
  switch (x.type) {
    case 'ready':
      return isNum(x.pid) && isStr(x.addon) && (x.engine === undefined || isStr(x.engine)) && (x.notes === undefined || (Array.isArray(x.notes) && x.notes.every(isStr)))
        ? (x as unknown as FromHost)
        : undefined;
    case 'event':
      return isStr(x.id) && isObj(x.event) && isStr(x.event.kind) ? (x as unknown as FromHost) : undefined;
    case 'done':
      return isStr(x.id) && isObj(x.stats) && isNum(x.stats.L) && isNum(x.stats.B) && isStr(x.stats.cache) ? (x as unknown as FromHost) : undefined;
    case 'cleared':
      return isStr(x.id) && isNum(x.bytes) ? (x as unknown as FromHost) : undefined;
    case 'completed':
      return isStr(x.id) && isObj(x.stats) && isNum(x.stats.promptTokens) && isNum(x.stats.decodeTokens) ? (x as unknown as FromHost) : undefined;
    case 'counted':
      return isStr(x.id) && Array.isArray(x.counts) && x.counts.every(isNum) && isNum(x.trainContext) ? (x as unknown as FromHost) : undefined;
    case 'error':
      return isStr(x.id) && isObj(x.error) && isStr(x.error.name) && isStr(x.error.message) ? (x as unknown as FromHost) : undefined;
    default:
      return undefined;
  }
}
