/**
 * The engine process's request handler: keeps one loaded model (loaded on first use, reused
 * across questions, replaced when another model is asked for), answers `ask` requests one at a
 * time in arrival order, and cancels them through an AbortSignal. The pipeline is a black box:
 * {@link answer} is the one place that calls it.
 */
import path from 'node:path';
import { CacheStore } from '../cache/store';
import { processTagsCache } from '../context/map/cache';
import { loadModel, type EngineModel } from '../engine/model';
import type { PackResult } from '../context/pack';
import { askRepository, type AskEvent, type AskRequest, type AskStats, type OptionNames } from '../pipeline/ask';
import { complete, countTokens } from '../pipeline/complete';
import {
  cacheOutcome,
  toWireError,
  toWireEvent,
  type AskParams,
  type CompleteParams,
  type FromHost,
  type ModelSpec,
  type ToHost,
  type WireAskEvent,
} from './protocol';

/** The pipeline entry the engine calls; swap it for the cached pipeline in one place. */
export type Answerer = (req: AskRequest, onEvent: (e: AskEvent) => void) => Promise<AskStats>;

/** The pipeline the engine runs. */
export const answer: Answerer = askRepository;

/** The extension's names for what error messages ask the user to change: its settings, never CLI flags. */
export const SETTING_NAMES: OptionNames = { contextSize: 'the reposnap.contextSize setting', maxTokens: 'the reposnap.maxTokens setting', answerRoom: 'the reposnap.maxTokens setting' };

/** One store per cache folder, opened on first use (warnings go to the engine's stderr log). */
const stores = new Map<string, CacheStore>();
function storeFor(dir: string | undefined): CacheStore | undefined {
  if (!dir) return undefined;
  let store = stores.get(dir);
  if (!store) {
    store = CacheStore.open(dir, { onWarning: (m) => process.stderr.write(`reposnap: cache: ${m}\n`) });
    stores.set(dir, store);
  }
  return store;
}

/**
 * The pipeline's request of a wire request: the request as sent, with the loaded model, the
 * folder's cache store, the abort signal, the extension's option names, and with the ranked
 * or auto packing the process's tags cache (`processTagsCache`), and the cache root (the parent of
 * `cacheDir`, as `CacheStore.fingerprintMemo` takes it) left out of the pack wherever it lies. The answer room is the
 * `reposnap.maxTokens` setting (`maxTokens`): a setting, the same for every question, so the
 * packed prefix does not change between questions, and every answer fits the room kept for it.
 */
export function toAskRequest(params: AskParams, model: EngineModel, signal: AbortSignal): AskRequest {
  const { model: _file, cacheDir, pack, ...request } = params;
  return {
    ...request,
    answerRoom: request.maxTokens,
    model,
    signal,
    optionNames: SETTING_NAMES,
    pack: { ...pack, ...(pack.packing === 'ranked' || pack.packing === 'auto' ? { tagsCache: processTagsCache() } : {}), ...(cacheDir ? { cacheDirs: [path.dirname(cacheDir)] } : {}) },
    store: storeFor(cacheDir),
  };
}

/** A queued request: a question, a plain completion, or a token count that needs its model loaded. */
type Job = { id: string; controller: AbortController } & (
  | { kind: 'ask'; params: AskParams }
  | { kind: 'complete'; params: CompleteParams }
  | { kind: 'countTokens'; model: ModelSpec; texts: string[] }
);

/** The key of a loaded model: its file, layers offloaded and RPC servers. */
function modelKey(spec: ModelSpec): string {
  return `${spec.path}\0${spec.gpuLayers}\0${(spec.rpcServers ?? []).join(',')}`;
}

/** Request loop of one engine process. `send` posts a message to the extension host. */
export class EngineHost {
  private model: { key: string; model: EngineModel } | undefined;
  private readonly queue: Job[] = [];
  /**
   * Per repository and cache folder: the pack whose prefix the last answered (or prepared)
   * question left in the cache, the base of the next question's erratum (`AskRequest.editBase`).
   */
  private readonly editBases = new Map<string, PackResult>();
  private running: Job | undefined;

  constructor(
    private readonly send: (m: FromHost) => void,
    private readonly run: Answerer = answer,
  ) {}

  /** Handles one message from the extension host. */
  receive(msg: ToHost): void {
    switch (msg.type) {
      case 'ask':
        this.queue.push({ kind: 'ask', id: msg.id, params: msg.params, controller: new AbortController() });
        void this.pump();
        break;
      case 'complete':
        this.queue.push({ kind: 'complete', id: msg.id, params: msg.params, controller: new AbortController() });
        void this.pump();
        break;
      case 'countTokens':
        // the loaded model counts at once, even while a question runs (tokenizing touches no context)
        if (this.model?.key === modelKey(msg.model)) this.sendCounts(msg.id, this.model.model, msg.texts);
        else {
          this.queue.push({ kind: 'countTokens', id: msg.id, model: msg.model, texts: msg.texts, controller: new AbortController() });
          void this.pump();
        }
        break;
      case 'cancel': {
        if (this.running?.id === msg.id) {
          this.running.controller.abort();
        } else {
          const i = this.queue.findIndex((j) => j.id === msg.id);
          if (i >= 0) {
            this.queue.splice(i, 1);
            this.send({ type: 'error', id: msg.id, error: { name: 'AbortError', message: 'cancelled' } });
          }
        }
        break;
      }
      case 'clearCache': {
        const store = storeFor(msg.cacheDir);
        const bytes = store?.stats().totalBytes ?? 0;
        void (store ? store.clear() : Promise.resolve()).then(
          () => this.send({ type: 'cleared', id: msg.id, bytes }),
          (e) => this.send({ type: 'error', id: msg.id, error: toWireError(e) }),
        );
        break;
      }
      case 'shutdown':
        for (const j of this.queue) j.controller.abort();
        this.running?.controller.abort();
        this.model?.model.dispose();
        this.model = undefined;
        break;
    }
  }

  private async pump(): Promise<void> {
    if (this.running) return;
    const job = this.queue.shift();
    if (!job) return;
    this.running = job;
    const emit = (event: WireAskEvent) => this.send({ type: 'event', id: job.id, event });
    try {
      const model = await this.loadModel(job.kind === 'countTokens' ? job.model : job.params.model, emit);
      if (job.kind === 'countTokens') this.sendCounts(job.id, model, job.texts);
      else if (job.kind === 'complete') {
        const { model: _spec, ...rest } = job.params;
        const stats = await complete({ ...rest, model, signal: job.controller.signal }, emit);
        this.send({ type: 'completed', id: job.id, stats });
      } else {
        // the last answered pack of this folder and cache: the base of an erratum after an edit (pipeline/after-edit.ts)
        const baseKey = `${job.params.repo}\0${job.params.cacheDir ?? ''}`;
        const base = this.editBases.get(baseKey);
        let packed: PackResult | undefined;
        const request = { ...toAskRequest(job.params, model, job.controller.signal), ...(base ? { editBase: base } : {}) };
        const stats = await this.run(request, (e) => {
          if (e.kind === 'packed') packed = e.pack;
          emit(toWireEvent(e));
        });
        if (packed && job.params.cacheDir !== undefined) this.editBases.set(baseKey, packed);
        this.send({ type: 'done', id: job.id, stats: { ...stats, cache: cacheOutcome(stats) } });
      }
    } catch (e) {
      const error = job.controller.signal.aborted ? { name: 'AbortError', message: 'cancelled' } : toWireError(e);
      this.send({ type: 'error', id: job.id, error });
      // a question that failed before the cache saved anything leaves no empty folder (the store makes it again on its next write)
      const store = job.kind === 'ask' && job.params.cacheDir ? stores.get(job.params.cacheDir) : undefined;
      if (store) await store.removeIfEmpty();
    } finally {
      this.running = undefined;
      void this.pump();
    }
  }

  /** Answers a `countTokens` request with the model's tokenizer ({@link countTokens}). */
  private sendCounts(id: string, model: EngineModel, texts: string[]): void {
    try {
      this.send({ type: 'counted', id, counts: texts.map((t) => countTokens(model, t)), trainContext: model.info.nCtxTrain });
    } catch (e) {
      this.send({ type: 'error', id, error: toWireError(e) });
    }
  }

  /** The model of a request: the loaded one when it matches, else loads it (disposing the old one). */
  private async loadModel(spec: ModelSpec, emit: (e: WireAskEvent) => void): Promise<EngineModel> {
    const key = modelKey(spec);
    if (this.model?.key === key) return this.model.model;
    this.model?.model.dispose();
    this.model = undefined;
    emit({ kind: 'model', state: 'loading', path: spec.path });
    const t0 = performance.now();
    const model = await loadModel(spec.path, { gpuLayers: spec.gpuLayers, rpcServers: spec.rpcServers ?? [] });
    this.model = { key, model };
    emit({ kind: 'model', state: 'loaded', path: spec.path, ms: performance.now() - t0 });
    return model;
  }
}
