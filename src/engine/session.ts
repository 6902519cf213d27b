/**
 * A session: one llama.cpp context holding one sequence (seq 0), with prefill, SnapKV and
 * decode. Mirrors `llama_context`; every long operation reports progress and takes an
 * AbortSignal: a prefill is cancelled between two graph nodes of its ubatch, a generation between tokens.
 */
import { AbortError, ContextOverflowError, EngineError, SnapRefusedError, throwIfAborted } from './errors';
import type { EngineModel } from './model';
import { isQuantizedKvType, loadAddon, type BudgetAllocation, type KvCacheType, type NativeKvStats, type NativeSession, type NativeSnapResult, type NativeSnapStatus } from './native';
import { snapPolicy, type ScoredPolicy, type SnapScorer } from './policies/compose';
import { checkIdentity, decodeStateFile, defaultFingerprintMemo, encodeStateFile, engineVersion, modelFingerprint, StateFileError, writeFileAtomic, type StateHeader, type StateIdentity } from './state-file';
import { decodeThreadsFor, defaultThreads, type ThreadCounts } from './threads';
import fs from 'node:fs';

/** Options of {@link createSession}. */
export interface SessionOptions {
  /** Context size in tokens (KV cells). Default 4096. */
  contextSize?: number;
  /** Tokens per decode call and per ubatch (prefill granularity, cancellation latency). Default 512. */
  batchSize?: number;
  /** Flash attention: 'auto' lets llama.cpp decide. Default 'auto'. */
  flashAttention?: 'on' | 'off' | 'auto';
  /** KV cache element type for K and V. Default 'f16'. Quantized V needs flash attention. */
  kvCacheType?: KvCacheType;
  /** Decode threads (single-token steps). Default: see {@link defaultThreads}. */
  threads?: number;
  /** Prefill threads (batches). Default: see {@link defaultThreads}. */
  threadsBatch?: number;
  /** Observation window w armed for SnapKV capture before prefill (0 = no SnapKV). Default 32. */
  snapWindow?: number;
  /**
   * Interleaved sliding-window models (llama.cpp's `llama_kv_cache_iswa`): `llama_context_params.
   * swa_full`. true (llama.cpp's default): the sliding-window layers' cache has the context's size
   * and keeps the cells its window has passed (masked, still scanned at decode) until their slots
   * are needed. false: it holds GGML_PAD(n_swa + ubatch, 256) cells and reuses the cells the
   * window passed, so a truncation may find the window of its cut gone (`truncate` then throws).
   * SnapKV compacts the global layers' cache alike with either. No effect on other models.
   * Default true.
   */
  swaFull?: boolean;
  /**
   * Where {@link EngineSession.identity} remembers the model file's SHA-256 across processes
   * (`modelFingerprint`'s memo file): the cache the session's states are saved to keeps it at
   * `<cache root>/model-fingerprints.json` (`CacheStore.fingerprintMemo`), so that a `--cache-dir`
   * holds everything written for it; null: this process only, nothing written. Default
   * `defaultFingerprintMemo()` (the default cache root).
   */
  fingerprintMemo?: string | null;
}

/** Progress of a prefill. */
export interface PrefillProgress {
  /** Tokens decoded so far (of this call). */
  done: number;
  total: number;
  /** Tokens per second so far. */
  tokensPerSecond: number;
}

/** SnapKV parameters (Li et al. 2024, sec. 4). */
export interface SnapParams {
  /** Observation window w [tokens]: must equal the session's `snapWindow`. */
  window: number;
  /** Budget B [cells per layer and KV head], window included. Either budget or ratio. */
  budget?: number;
  /** Budget as a fraction of L (B = round(ratio·L), at least w). */
  ratio?: number;
  /** Pooling kernel size, odd. Default 7. */
  kernel?: number;
  /** Pooling type. Default 'max'. */
  pooling?: 'max' | 'avg';
  /** Run the compaction even when L ≤ B (keep-all, to verify the operation). */
  force?: boolean;
  /** Keep the pooled scores for {@link EngineSession.snapScores}. */
  keepScores?: boolean;
  /** Budget allocation among layers and KV heads. Default 'uniform' (see {@link BudgetAllocation}). */
  allocation?: BudgetAllocation;
  /** AdaKV safeguard α ∈ [0, 1]: the fraction of B − w every head keeps by its own scores. Default 0.2. */
  adaAlpha?: number;
  /** PyramidKV β ≥ 1: average prefix budget ÷ the last layer's. Default 20. */
  pyramidBeta?: number;
  /**
   * The code-aware prior (policies/code-prior.ts): per sequence position, the flags of a
   * definition's signature line and of an identifier the question names (pipeline/code-prior.ts),
   * and the bonus multiple. Given, the snap scores on the device, adds the bonus in TypeScript and
   * compacts the chosen rows (the path of a non-uniform allocation). Absent: SnapKV alone.
   */
  prior?: { flags: Uint8Array; bonus?: number };
  /**
   * The scorer (see {@link SnapScorer}): 'snapkv' (default), 'key-norm' (−‖k‖₂ of each stored
   * key, `llama_snapkv_key_norms`, allocated in TypeScript and compacted with
   * `llama_snapkv_compact_kept`; the last `window` tokens are kept as SnapKV keeps its window), or
   * 'key-norm-topup' (half of the prefix budget by key norm, the rest by SnapKV's scores).
   */
  scorer?: SnapScorer;
}

/** Outcome of {@link EngineSession.snap}. */
export interface SnapResult {
  /** Tokens (cells) of the sequence before. */
  L: number;
  /** Cells the sequence holds after (== L when nothing was done): the budget B for a uniform
   * allocation, C = the largest per-head budget for a non-uniform one. */
  B: number;
  /** Rows kept over all layers and KV heads (nLayer·nHeadKv·B for a uniform budget). */
  keptRows: number;
  /** False when L ≤ B (nothing to do). */
  compacted: boolean;
  nLayer: number;
  nHeadKv: number;
  /** Wall time of the compaction graph and cell update [ms]. */
  ms: number;
  /** Graph runs of the compaction (see {@link NativeSnapResult.graphs}). */
  graphs: number;
  /** KV heads scored together per scoring chunk (see {@link NativeSnapResult.chunkHeads}). */
  chunkHeads: number;
}

/** Sampling settings for {@link EngineSession.generate}. */
export interface Sampling {
  /** 0 (default) = greedy. */
  temperature?: number;
  /** Nucleus sampling mass, 1 = off. */
  topP?: number;
  seed?: number;
}

/** Options of {@link EngineSession.generate}. */
export interface GenerateOptions {
  maxTokens?: number;
  sampling?: Sampling;
  /** Strings that end generation (not included in the output). */
  stop?: string[];
  signal?: AbortSignal;
}

/** Cache statistics of the session's sequence. */
export interface SessionStats extends NativeKvStats {
  /** Next position (tokens seen by the sequence, compressed or not). */
  nPast: number;
}

/**
 * Creates a session on a loaded model (`llama_init_from_model`, unified KV cache, one sequence).
 * @throws EngineError when the context cannot be created (too large for memory, bad cache type),
 *   and before llama.cpp is asked, naming the type, for a quantized KV cache type (q8_0, q4_0,
 *   q4_1, q5_0, q5_1) with flash attention `'off'`: llama.cpp's quantized V cache needs flash
 *   attention (`llama_init_from_model` refuses it with a log line only).
 */
export function createSession(model: EngineModel, options: SessionOptions = {}): EngineSession {
  const kvType = options.kvCacheType ?? 'f16';
  if (options.flashAttention === 'off' && isQuantizedKvType(kvType)) {
    throw new EngineError(`the quantized KV cache type ${kvType} needs flash attention, which is off: turn flash attention on (or auto), or use an f16, bf16 or f32 KV cache`);
  }
  const addon = loadAddon();
  const threads = defaultThreads();
  const batchSize = options.batchSize ?? 512;
  let native: NativeSession;
  try {
    native = new addon.Session(model.native, {
      contextSize: options.contextSize ?? 4096,
      batchSize,
      ubatchSize: batchSize,
      seqMax: 1,
      threads: options.threads ?? threads.threads,
      threadsBatch: options.threadsBatch ?? threads.threadsBatch,
      flashAttention: options.flashAttention ?? 'auto',
      typeK: options.kvCacheType ?? 'f16',
      typeV: options.kvCacheType ?? 'f16',
      swaFull: options.swaFull ?? true,
    });
  } catch (e) {
    throw new EngineError((e as Error).message);
  }
  const cache = { typeK: options.kvCacheType ?? 'f16', typeV: options.kvCacheType ?? 'f16', flashAttention: options.flashAttention ?? 'auto' };
  const session = new EngineSession(model, native, options.contextSize ?? 4096, batchSize, cache);
  if (options.fingerprintMemo !== undefined) session.fingerprintMemo = options.fingerprintMemo;
  // explicit decode threads are kept as given; the default follows the cache length
  if (options.threads === undefined) session.adaptiveThreads = { threads: threads.threads, threadsBatch: options.threadsBatch ?? threads.threadsBatch };
  const w = options.snapWindow ?? 32;
  const st = native.kvStats(0);
  if (w > 0 && st.swaKvSize > 0 && st.bytesPerCell === 0) {
    // an interleaved sliding-window cache whose base (global-layer) cache holds no layer: llama.cpp's
    // engine would refuse it as a cache sharing its cells (an empty layer list); say why instead
    session.snapUnavailable = {
      message: 'SnapKV refused: the model uses sliding-window attention in every layer (no global layers to compact; each layer already keeps only its window)',
      status: addon.snapStatus.errModel,
    };
  } else if (w > 0) {
    try {
      session.armSnap(w);
    } catch (e) {
      // e.g. a hybrid or recurrent model (its memory is not a KV cache): answer with full attention
      const status = (e as { status?: unknown }).status;
      session.snapUnavailable = { message: (e as Error).message, status: typeof status === 'number' ? status : addon.snapStatus.errMemory };
    }
  }
  return session;
}

/** One sequence in one llama.cpp context. Operations must not overlap (await each). */
export class EngineSession {
  private nPast = 0;
  private busy = false;
  /** The engine's `llama_snapkv_status` values by name. */
  private readonly status: NativeSnapStatus = loadAddon().snapStatus;
  private window = 0;
  /** The sequence's tokens in order (positions 0…nPast−1), compressed or not. */
  private history: number[] = [];
  /** The last snap, recorded in state files. */
  private lastSnap: StateHeader['snap'] = null;
  /** Why SnapKV cannot run in this session (set when arming the capture failed): the message and its {@link NativeSnapStatus} value. */
  snapUnavailable: { message: string; status: number } | undefined;
  /** Scores of the last snap when a policy scored off the fast path (keepScores), else null. */
  private policyScores: Float32Array | null = null;
  /** Default thread counts: decode uses {@link decodeThreadsFor} of the attended cells; undefined = fixed. */
  adaptiveThreads: ThreadCounts | undefined;
  private decodeThreads = 0;
  /** {@link SessionOptions.fingerprintMemo}: the model fingerprint's memo file, or null for none. */
  fingerprintMemo: string | null = defaultFingerprintMemo();

  constructor(
    readonly model: EngineModel,
    readonly native: NativeSession,
    readonly contextSize: number,
    readonly batchSize: number,
    /** Cache settings that change the KV bytes (state files must match them). */
    readonly cache: { typeK: string; typeV: string; flashAttention: string },
  ) {}

  /** Sets the decode thread count for the cells the next single-token step attends to (reads the cache's occupancy: O(cells)). */
  private fitDecodeThreads(): void {
    if (!this.adaptiveThreads) return;
    const t = decodeThreadsFor(this.native.kvStats(0).nKv, this.adaptiveThreads);
    if (t !== this.decodeThreads) {
      this.native.setThreads(t, this.adaptiveThreads.threadsBatch);
      this.decodeThreads = t;
    }
  }

  /** The tokens the sequence has seen, in order. */
  get tokens(): readonly number[] {
    return this.history;
  }

  /** Next position: tokens the sequence has seen. */
  get position(): number {
    return this.nPast;
  }

  /** Arms the SnapKV window capture (`llama_snapkv_capture`) for the next prefill. */
  armSnap(window: number): void {
    this.native.snapCapture(0, window);
    this.window = window;
  }

  private async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.busy) throw new EngineError('the session is busy with another operation');
    this.busy = true;
    try {
      return await fn();
    } finally {
      this.busy = false;
    }
  }

  /**
   * Appends tokens to the sequence (positions nPast…), in chunks of `batchSize`, and keeps the
   * logits of the last token. Cancellation stops the chunk being decoded between two graph nodes
   * (the addon's `cancelDecode`, llama.cpp's abort callback), not at its end: llama.cpp removes the
   * stopped ubatch's positions from the cache, and the tokens decoded before it stay (see
   * `position`, which follows the cache), so the session goes on from there. On an interleaved
   * sliding-window model whose sliding layers lost part of the window of the last kept position
   * (the stopped ubatch took their cells: `swaFull: false`), the sequence is cleared instead
   * (position 0), as {@link truncate} would refuse to cut there. With the default `swaFull: true`
   * a prefill resumed after a cancel computes exactly what an uncancelled one does (the same kept
   * positions and answer: test/engine/cancel.test.ts; Gemma 3 270M too); with `swaFull: false` the
   * sliding layers' cells it writes may lie elsewhere in their cache, so results match up to
   * rounding (the attention sums the same keys in another order).
   * @throws ContextOverflowError when the tokens do not fit the context; AbortError on cancel.
   */
  prefill(tokens: ArrayLike<number>, opts: { onProgress?: (p: PrefillProgress) => void; signal?: AbortSignal } = {}): Promise<void> {
    return this.exclusive(async () => {
      const total = tokens.length;
      if (total === 0) return;
      if (this.nPast + total > this.contextSize) {
        throw new ContextOverflowError(
          `the prompt needs ${this.nPast + total} tokens but the context holds ${this.contextSize}: raise the context size or pack less`,
        );
      }
      const all = Int32Array.from(tokens);
      const t0 = performance.now();
      for (let i = 0; i < total; i += this.batchSize) {
        throwIfAborted(opts.signal);
        const chunk = all.subarray(i, Math.min(total, i + this.batchSize));
        const last = i + chunk.length >= total;
        const cancel = (): void => this.native.cancelDecode();
        opts.signal?.addEventListener('abort', cancel, { once: true });
        let decoded: boolean;
        try {
          decoded = await this.native.decode(chunk, this.nPast, 0, last ? 'last' : 'none');
        } finally {
          opts.signal?.removeEventListener('abort', cancel);
        }
        if (!decoded) {
          this.keepDecodedOf(chunk);
          throw new AbortError();
        }
        this.nPast += chunk.length;
        for (const t of chunk) this.history.push(t);
        const done = i + chunk.length;
        opts.onProgress?.({ done, total, tokensPerSecond: done / ((performance.now() - t0) / 1000) });
      }
    });
  }

  /**
   * After a cancelled decode of `chunk` (at position nPast): takes into the sequence the chunk's
   * tokens llama.cpp kept (its ubatches decoded before the stopped one; it removed the stopped
   * ubatch's positions), or clears the sequence when the sliding-window layers lost part of the
   * window of the last kept position.
   */
  private keepDecodedOf(chunk: Int32Array): void {
    const end = this.native.seqPosMax(0) + 1;
    const kept = Math.max(0, Math.min(chunk.length, end - this.nPast));
    for (const t of chunk.subarray(0, kept)) this.history.push(t);
    this.nPast += kept;
    const st = this.native.kvStats(0);
    if (st.swaKvSize > 0 && this.nPast > 0 && !this.lastSnap && st.swaCells < slidingWindowCells(this.model.meta.architecture, this.model.info.nSwa, this.nPast - 1)) this.clear();
  }

  /**
   * Compresses the sequence's KV cache with the SnapKV policy (src/engine/policies: SnapKV's scorer
   * × the chosen allocation): per layer and KV head, keeps the prefix positions the allocation
   * gives it by pooled window attention, plus the window, compacted into the sequence's first
   * cells. Decoding continues at the same position. The uniform allocation runs on the device
   * (`llama_snapkv_compact`, the fast path); another, or any allocation under the code-aware
   * prior (`params.prior`), scores on the device (`llama_snapkv_score`), allocates in TypeScript
   * and compacts the chosen rows (`llama_snapkv_compact_kept`).
   * @throws SnapRefusedError when a guard refuses or the parameters are invalid (the cache is
   *   unchanged: fall back to full attention).
   */
  snap(params: SnapParams): Promise<SnapResult> {
    return this.exclusive(async () => {
      if (this.snapUnavailable) throw new SnapRefusedError(this.snapUnavailable.message, this.snapUnavailable.status);
      if (params.window !== this.window) {
        throw new SnapRefusedError(`the observation window (${params.window}) differs from the armed capture (${this.window})`, this.status.errParams);
      }
      const L = this.native.kvStats(0).cells;
      const budget = params.budget ?? Math.max(params.window, Math.round((params.ratio ?? 1) * L));
      const kernel = params.kernel ?? 7;
      const pooling = params.pooling ?? 'max';
      let policy: ScoredPolicy;
      try {
        policy = snapPolicy({
          window: params.window,
          kernel,
          pooling,
          allocation: params.allocation,
          adaAlpha: params.adaAlpha,
          pyramidBeta: params.pyramidBeta,
          prior: params.prior,
          scorer: params.scorer,
        });
      } catch (e) {
        throw new SnapRefusedError(`SnapKV refused: ${(e as Error).message}`, this.status.errParams);
      }
      this.policyScores = null;
      const r =
        policy.onDevice || L <= budget
          ? await this.native.snap(0, { window: params.window, budget, kernel, pooling, force: params.force ?? false, keepScores: params.keepScores ?? false })
          : await this.snapByPolicy(policy, L, budget, params.keepScores ?? false);
      if (r.status < 0) {
        // a compaction that failed after some of its graph runs had moved their layers' rows clears
        // the sequence (llama_snapkv_compact): this session's view of it goes too
        if (this.native.kvStats(0).cells !== L) {
          this.clear();
          throw new EngineError(`SnapKV failed and the cache was cleared: ${r.error}`);
        }
        throw new SnapRefusedError(`SnapKV refused: ${r.error}`, r.status);
      }
      if (r.status === this.status.ok) {
        this.lastSnap = {
          L: r.L,
          B: r.B,
          window: params.window,
          budget,
          kernel: params.kernel ?? 7,
          pooling: params.pooling ?? 'max',
          allocation: params.allocation ?? 'uniform',
          ...(params.scorer && params.scorer !== 'snapkv' ? { scorer: params.scorer } : {}),
        };
      }
      return snapResult(r);
    });
  }

  /**
   * A policy's snap off the device fast path: what its scorer reads (SnapKV's pooled scores,
   * `llama_snapkv_score`, when it has a window; the key norms, `llama_snapkv_key_norms`, when it
   * reads them; both for the key-norm top-up), its choice of kept rows, their compaction
   * (`llama_snapkv_compact_kept`). The result's `ms` covers every engine call. Needs the sequence
   * at positions 0…L−1 (scores are indexed by position rank).
   * @returns the compaction's result, or the first refusal (status < 0: the cache is unchanged).
   */
  private async snapByPolicy(policy: ScoredPolicy, L: number, budget: number, keepScores: boolean): Promise<NativeSnapResult> {
    const scorer = policy.scorer;
    const { window, kernel, pooling } = scorer.params as { window: number; kernel: number; pooling: 'max' | 'avg' };
    const what = policy.allocator.id === 'uniform' ? `the ${scorer.id} scorer` : `the ${policy.allocator.id} allocation`;
    const refuse = (error: string): NativeSnapResult => ({ status: this.status.errParams, error, L, B: L, nLayer: 0, nHeadKv: 0, ms: 0, kept: 0, graphs: 0, chunkHeads: 0 });
    if (budget < scorer.protectedTail) {
      // as the engine refuses it for the uniform allocation
      return refuse(scorer.scoreWindow > 0 ? `need 1 <= n_window <= n_budget (n_window = ${window}, n_budget = ${budget})` : `need the budget (${budget}) ≥ the kept tail (${scorer.protectedTail} tokens)`);
    }
    if (this.native.seqPosMax(0) + 1 !== L) return refuse(`${what} needs an uncompacted sequence (positions 0…L−1)`);
    // the key norms first: both reads leave the cache as it is
    const n = scorer.readsKeyNorms ? await this.native.snapKeyNorms(0) : undefined;
    if (n && n.status !== this.status.ok) return n;
    const s = scorer.scoreWindow > 0 ? await this.native.snapScore(0, { window, kernel, pooling }) : undefined;
    if (s && s.status !== this.status.ok) return s;
    const read = s ?? n;
    if (!read) return refuse(`${what} reads neither window scores nor key norms`);
    const scores = s ? this.native.snapScores() : undefined;
    const kept = policy.select({ L, budget, nLayer: read.nLayer, nHeadKv: read.nHeadKv, ...(scores ? { pooledScores: scores } : {}), ...(n ? { keyNorms: n.norms } : {}) });
    const r = await this.native.compactKept(0, kept.length / (read.nLayer * read.nHeadKv), kept);
    if (keepScores && r.status === this.status.ok) this.policyScores = scores ?? n!.norms;
    return { ...r, ms: r.ms + (s?.ms ?? 0) + (n?.ms ?? 0), graphs: r.graphs + (s?.graphs ?? 0) + (n?.graphs ?? 0), chunkHeads: s?.chunkHeads ?? 0 };
  }

  /**
   * Compacts the cache keeping the given positions (`llama_snapkv_compact_kept`): any eviction
   * policy's choice goes through the same on-device compaction as SnapKV.
   * @param kept [nLayer][nHeadKv][budget] positions of the sequence, strictly ascending per head;
   *   a head that keeps fewer ends its row with −1 padding (at least one position each), and its
   *   unused cells are hidden from it by a per-head mask (per-head budgets, {@link BudgetAllocation}).
   * @throws SnapRefusedError when the positions are invalid or a guard refuses (cache unchanged).
   */
  compact(budget: number, kept: Int32Array): Promise<SnapResult> {
    return this.exclusive(async () => {
      const r = await this.native.compactKept(0, budget, kept);
      if (r.status < 0) throw new SnapRefusedError(`compaction refused: ${r.error}`, r.status);
      return snapResult(r);
    });
  }

  /**
   * L2 norm of every stored key row of the sequence (`llama_snapkv_key_norms`, one graph on the
   * cache's backend): `norms` [nLayer][nHeadKv][L], row p = the sequence's p-th lowest position
   * (after a snap: its p-th cell), for the layers SnapKV compacts (an iSWA model's global layers);
   * RoPE applied (a rotation: the norm is the unrotated key's), a quantized cache's keys dequantized.
   * The cache is unchanged.
   * @throws SnapRefusedError when the engine refuses (an empty sequence, an unsupported model or cache).
   */
  keyNorms(): Promise<{ norms: Float32Array; L: number; nLayer: number; nHeadKv: number; ms: number }> {
    return this.exclusive(async () => {
      const r = await this.native.snapKeyNorms(0);
      if (r.status < 0) throw new SnapRefusedError(`key norms refused: ${r.error}`, r.status);
      return { norms: r.norms, L: r.L, nLayer: r.nLayer, nHeadKv: r.nHeadKv, ms: r.ms };
    });
  }

  /** Positions kept by the last snap: [nLayer][nHeadKv][B], ascending original positions, −1 padded
   * where a head kept fewer than B (non-uniform allocation). */
  snapKept(): Int32Array {
    return this.native.snapKept();
  }

  /**
   * Scores of the last snap (keepScores): SnapKV's pooled scores [nLayer][nHeadKv][L − w], its
   * own (before a code prior's bonus); for the key-norm scorer the key norms [nLayer][nHeadKv][L]
   * (‖k‖₂, not negated).
   */
  snapScores(): Float32Array {
    return this.policyScores ?? this.native.snapScores();
  }

  /** Logits of the last decoded token (length n_vocab). */
  lastLogits(): Float32Array {
    return this.native.logits(-1);
  }

  /**
   * Decodes one token at the next position and returns its logits (teacher forcing; used by
   * tests and fidelity benchmarks).
   */
  step(token: number): Promise<Float32Array> {
    return this.exclusive(async () => {
      if (this.nPast + 1 > this.contextSize) throw new ContextOverflowError('the context is full');
      this.fitDecodeThreads();
      await this.native.decode(Int32Array.of(token), this.nPast, 0, 'last');
      this.nPast += 1;
      this.history.push(token);
      return this.native.logits(-1);
    });
  }

  /**
   * Generates text after the prefilled prompt, yielding decoded text pieces as they complete
   * (whole UTF-8 characters). Stops at end-of-generation, a stop string, maxTokens (default
   * 256), the end of the context, or the signal (then it returns quietly).
   */
  async *generate(opts: GenerateOptions = {}): AsyncGenerator<string, GenerateSummary> {
    if (this.busy) throw new EngineError('the session is busy with another operation');
    this.busy = true;
    const decoder = new TextDecoder('utf-8', { fatal: false });
    const maxTokens = opts.maxTokens ?? 256;
    const stops = (opts.stop ?? []).filter((s) => s.length > 0);
    const holdBack = stops.reduce((m, s) => Math.max(m, s.length - 1), 0);
    this.native.setSampler(opts.sampling ?? {});
    // once per answer, not per token: the cache grows by at most maxTokens cells meanwhile
    this.fitDecodeThreads();
    let pending = '';
    let nTokens = 0;
    let reason: GenerateSummary['reason'] = 'maxTokens';
    const t0 = performance.now();
    try {
      while (nTokens < maxTokens) {
        if (opts.signal?.aborted) {
          reason = 'aborted';
          break;
        }
        const token = this.native.sample(-1);
        if (this.model.isEndOfGeneration(token)) {
          reason = 'eog';
          break;
        }
        nTokens++;
        pending += decoder.decode(this.model.tokenBytes(token), { stream: true });
        const hit = firstStop(pending, stops);
        if (hit >= 0) {
          pending = pending.slice(0, hit);
          reason = 'stop';
          break;
        }
        const emit = pending.length - holdBack;
        if (emit > 0) {
          yield pending.slice(0, emit);
          pending = pending.slice(emit);
        }
        if (this.nPast + 1 > this.contextSize) {
          reason = 'contextFull';
          break;
        }
        await this.native.decode(Int32Array.of(token), this.nPast, 0, 'last');
        this.nPast += 1;
        this.history.push(token);
      }
      pending += decoder.decode();
      if (pending.length > 0) yield pending;
    } finally {
      this.busy = false;
    }
    return { tokens: nTokens, ms: performance.now() - t0, reason };
  }

  /** Cache occupancy of the sequence (cells, n_kv, bytes). */
  stats(): SessionStats {
    return { ...this.native.kvStats(0), nPast: this.nPast };
  }

  /** Highest position the cache holds for the sequence (`llama_memory_seq_pos_max`), -1 when empty. */
  lastPosition(): number {
    return this.native.seqPosMax(0);
  }

  /** Empties the cache (positions restart at 0). */
  clear(): void {
    this.native.clear();
    this.nPast = 0;
    this.history = [];
    this.lastSnap = null;
  }

  /**
   * Drops the tokens from position `pos` on (e.g. after a cancelled prefill). On an interleaved
   * sliding-window model the sliding layers' cache must still hold the whole window of position
   * pos − 1 ({@link slidingWindowCells}): a restored state holds the last n_swa positions of its
   * end only (llama.cpp's state_write skips the cells the window masks), and with `swaFull: false`
   * the cells the window passed are reused, so a cut inside may find keys gone that the next tokens
   * attend to. Then the sequence is left cut and this throws: clear it and prefill again.
   * @throws EngineError on a compacted sequence (its cells no longer map to positions one to one),
   *         or when the sliding-window layers lost part of the window of the cut.
   */
  truncate(pos: number): void {
    if (this.lastSnap) throw new EngineError('cannot truncate a compacted sequence');
    if (!this.native.seqRm(0, pos, -1)) throw new EngineError(`cannot truncate the sequence at ${pos}`);
    this.nPast = Math.min(this.nPast, pos);
    this.history.length = Math.min(this.history.length, pos);
    const st = this.native.kvStats(0);
    if (st.swaKvSize > 0 && pos > 0) {
      const need = slidingWindowCells(this.model.meta.architecture, this.model.info.nSwa, pos - 1);
      if (st.swaCells < need) {
        throw new EngineError(`cannot truncate the sequence at ${pos}: the sliding-window layers' cache holds ${st.swaCells} of the ${need} positions of its window (a restored state keeps the last n_swa positions of its end only)`);
      }
    }
  }

  /** What this session's state files record and require. */
  identity(): StateIdentity {
    return { model: modelFingerprint(this.model.path, this.fingerprintMemo), engine: engineVersion(), ...this.cache };
  }

  /**
   * Copies the sequence's cache into memory (`llama_state_seq_get_data_ext`) with its tokens and
   * identity: what a state file holds, without the file.
   * @param opts.cuttable interleaved sliding-window models: the sliding layers' cache writes every
   *   cell of the sequence it holds, not only the window of the last position
   *   (`LLAMA_STATE_SEQ_FLAGS_SWA_KEEP_MASKED`), so that the restored state can be cut
   *   ({@link truncate}) anywhere the cache held the cells (swaFull, the default: a whole prefill).
   *   Costs swaBytesPerCell per extra cell. No effect on other models.
   */
  snapshot(opts: { cuttable?: boolean } = {}): Promise<SessionSnapshot> {
    return this.exclusive(async () => {
      const payload = await this.native.stateGet(0, opts.cuttable ?? false);
      const header: StateHeader = { ...this.identity(), nPast: this.nPast, cells: this.native.kvStats(0).cells, snap: this.lastSnap, createdAt: Date.now() };
      return { header, tokens: Int32Array.from(this.history), payload };
    });
  }

  /**
   * Loads a snapshot into this (empty) session: decoding continues where the snapshot was
   * taken, with identical results.
   * @throws StateFileError for a foreign snapshot (other model, engine, cache settings) or bytes
   *         llama.cpp refuses (nothing is loaded); EngineError when the session is not empty.
   */
  restore(snap: SessionSnapshot, name = 'snapshot'): Promise<StateHeader> {
    return this.exclusive(async () => {
      if (this.nPast !== 0) throw new EngineError('restore needs an empty session');
      const { header, tokens, payload } = snap;
      checkIdentity(header, this.identity(), name);
      if (header.cells > this.contextSize) throw new StateFileError(`${name}: needs ${header.cells} cells, the context holds ${this.contextSize}`);
      try {
        await this.native.stateSet(0, Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength));
      } catch (e) {
        this.native.clear();
        throw new StateFileError(`${name}: ${(e as Error).message}`);
      }
      this.nPast = header.nPast;
      this.history = Array.from(tokens);
      this.lastSnap = header.snap;
      return header;
    });
  }

  /**
   * Saves the sequence (uncompressed or compacted) to a state file, atomically
   * (see state-file.ts for the format). Returns the file's size in bytes.
   * @throws the fs error when the file cannot be written (the old file, if any, is kept).
   */
  async saveState(file: string): Promise<number> {
    const snap = await this.snapshot();
    const bytes = encodeStateFile(snap.header, snap.tokens, snap.payload);
    writeFileAtomic(file, bytes);
    return bytes.length;
  }

  /**
   * Loads a state file into this (empty) session.
   * @throws StateFileError for a truncated, corrupted or foreign file (nothing is loaded);
   *         EngineError when the session is not empty.
   */
  async loadState(file: string): Promise<StateHeader> {
    if (this.nPast !== 0) throw new EngineError('loadState needs an empty session');
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(file);
    } catch (e) {
      throw new StateFileError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? e}`);
    }
    return this.restore(decodeStateFile(bytes, file), file);
  }

  dispose(): void {
    this.native.dispose();
  }
}

/** A sequence's cache in memory: what a state file holds (see state-file.ts). */
export interface SessionSnapshot {
  header: StateHeader;
  tokens: Int32Array;
  payload: Uint8Array;
}

/** How a generation ended. */
export interface GenerateSummary {
  tokens: number;
  ms: number;
  reason: 'eog' | 'stop' | 'maxTokens' | 'contextFull' | 'aborted';
}

function firstStop(text: string, stops: string[]): number {
  let best = -1;
  for (const s of stops) {
    const i = text.indexOf(s);
    if (i >= 0 && (best < 0 || i < best)) best = i;
  }
  return best;
}

export { AbortError };

/** The session-level view of a native compaction result. */
function snapResult(r: NativeSnapResult): SnapResult {
  return { L: r.L, B: r.B, keptRows: r.kept, compacted: r.status === loadAddon().snapStatus.ok, nLayer: r.nLayer, nHeadKv: r.nHeadKv, ms: r.ms, graphs: r.graphs, chunkHeads: r.chunkHeads };
}

/**
 * Positions the sliding-window layers attend to from position p (its window: what
 * `llama_hparams::is_masked_swa` leaves visible): the last n_swa positions up to p for a standard
 * sliding window (p − p0 < n_swa), and the positions of p's own chunk for llama4's chunked
 * attention (p0 ≥ ⌊p / n_swa⌋ · n_swa, its only chunked architecture in llama.cpp).
 */
export function slidingWindowCells(architecture: string, nSwa: number, p: number): number {
  if (p < 0 || nSwa <= 0) return 0;
  return architecture === 'llama4' ? (p % nSwa) + 1 : Math.min(p + 1, nSwa);
}
