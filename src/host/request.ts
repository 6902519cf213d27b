/**
 * The extension's side of a request to the engine process: the pipeline's request
 * ({@link AskParams}) made from the `reposnap.*` settings at the time of asking, so that the
 * engine process never reads the settings. Plain TypeScript, no `vscode` import.
 */
import type { ReposnapSettings } from '../config/settings';
import type { QuotedFile } from '../context/quoted';
import type { AskParams, CompleteParams, ModelSpec } from './protocol';

/** What a request names besides the settings: the thread, the folder, the question, the model file, the cache folder. */
export interface AskTarget {
  /** The chat thread (or explanation) the question belongs to. */
  threadId: string;
  /** The thread whose turns `threadId` starts from while it has none (an explanation continued in chat). */
  forkFrom?: string;
  /** Absolute path of the repository (workspace folder) to pack. */
  repo: string;
  /** The question; '' with `prepareOnly`. */
  question: string;
  /** The resolved model file (its `gpuLayers` is `reposnap.GPULayers`, its RPC servers `reposnap.RPCServers`). */
  modelPath: string;
  /** The folder's cache store folder; none: no caching. */
  cacheDir?: string;
  /** Only bring the cached repository prefix up to date (the file watcher). */
  prepareOnly?: boolean;
  /** Files open in the window's editors, relative to `repo`, sorted; used by the ranked packing only (asked, or chosen by auto). */
  recentFiles?: string[];
  /** The file whose code the question quotes (an explanation's document and its whole text): `AskRequest.quoted`. */
  quoted?: QuotedFile;
}

/**
 * The request for `target` under `settings` (`withFilesExclude`'s, for the folder): SnapKV options,
 * context size (`0`: the model's default, sent as none), answer length, engine options, follow-up
 * mode and packing. The retrieval share and the open files apply to the ranked packing only,
 * which `auto` may choose (smallest-first sends share 0 and no files). Pure.
 */
export function askParams(settings: ReposnapSettings, target: AskTarget): AskParams {
  const s = settings;
  const ranked = s.packing !== 'smallest-first';
  const model: ModelSpec = { path: target.modelPath, gpuLayers: s.GPULayers, ...(s.RPCServers.length > 0 ? { rpcServers: [...s.RPCServers] } : {}) };
  return {
    threadId: target.threadId,
    ...(target.forkFrom !== undefined ? { forkFrom: target.forkFrom } : {}),
    repo: target.repo,
    question: target.question,
    model,
    snap: { enabled: s.snap, window: s.window, budget: s.budget, kernel: s.kernel, pooling: s.pooling, allocation: s.budgetAllocation, scorer: s.scorer, prior: s.prior, priorBonus: s.priorBonus },
    ...(s.contextSize > 0 ? { contextSize: s.contextSize } : {}),
    maxTokens: s.maxTokens,
    maxFileBytes: s.maxFileBytes,
    session: { flashAttention: s.flashAttention, kvCacheType: s.KVCacheType },
    followUp: s.followUpMode,
    afterEdit: s.afterEdit,
    pack: { include: s.include, exclude: s.exclude, packing: s.packing, order: s.order, ...(ranked ? { recentFiles: target.recentFiles ?? [] } : {}) },
    retrievalShare: ranked ? s.retrievalShare : 0,
    ...(target.cacheDir !== undefined ? { cacheDir: target.cacheDir } : {}),
    ...(target.prepareOnly !== undefined ? { prepareOnly: target.prepareOnly } : {}),
    ...(target.quoted !== undefined ? { quoted: target.quoted } : {}),
  };
}

/**
 * The plain completion request (src/pipeline/complete.ts) of a Language Model Chat Provider
 * request under `settings`: the model file, its layers, the context size (`0`: the model's
 * default, sent as none), the answer length (the caller's `maxTokens` when given, else
 * `reposnap.maxTokens`) and the engine options. Pure.
 */
export function completeParams(settings: ReposnapSettings, modelPath: string, messages: CompleteParams['messages'], maxTokens?: number): CompleteParams {
  const s = settings;
  return {
    model: { path: modelPath, gpuLayers: s.GPULayers, ...(s.RPCServers.length > 0 ? { rpcServers: [...s.RPCServers] } : {}) },
    messages,
    ...(s.contextSize > 0 ? { contextSize: s.contextSize } : {}),
    maxTokens: maxTokens ?? s.maxTokens,
    session: { flashAttention: s.flashAttention, kvCacheType: s.KVCacheType },
  };
}
