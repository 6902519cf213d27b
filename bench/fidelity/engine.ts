/**
 * Engine glue of the fidelity benchmark: one session that prefills a prompt once, saves the
 * uncompressed sequence (`llama_state_seq_get_data`), and restores it for every policy × budget
 * instead of prefilling again; window-score capture; compaction; teacher forcing.
 *
 * After `stateSet` the EngineSession's own position counter is 0, so this class tracks the
 * position itself and decodes through the session's native handle (`decode(tokens, pos)`);
 * `snap` and `compact` do not depend on that counter.
 */
import type { EngineModel } from '../../src/engine/model';
import type { KvCacheType } from '../../src/engine/native';
import { createSession, type EngineSession, type SnapParams, type SnapResult } from '../../src/engine/session';

/** A saved sequence: llama.cpp's state bytes and the next position. */
export interface Snapshot {
  /** `llama_state_seq_get_data` of seq 0 (cells, positions, K and V). */
  state: Buffer;
  /** Next position to decode at [tokens]. */
  position: number;
  /** Logits of the last decoded token [n_vocab] (a copy). */
  lastLogits: Float32Array;
}

/** Settings of the benchmark's session. */
export interface ForcerOptions {
  /** Context size [cells]. Default 2048 (stories260K's training context). */
  contextSize?: number;
  /** Threads for decode and prefill. Default 1 (the machine is shared). */
  threads?: number;
  /** KV cache type. Default f32 (the engine's most exact setting). */
  kvCacheType?: KvCacheType;
}

/**
 * One llama.cpp session (f32 cache unless told otherwise, flash attention off: the engine's most
 * exact setting) used for every measurement of the benchmark.
 */
export class TeacherForcer {
  readonly session: EngineSession;
  /** Next position of the sequence [tokens]. */
  position = 0;
  private armed = 0;

  constructor(readonly model: EngineModel, opts: ForcerOptions = {}) {
    const threads = opts.threads ?? 1;
    this.session = createSession(model, {
      contextSize: opts.contextSize ?? 2048,
      snapWindow: 0,
      threads,
      threadsBatch: threads,
      flashAttention: 'off',
      kvCacheType: opts.kvCacheType ?? 'f32',
    });
  }

  /**
   * Layers SnapKV compacts, as the engine's last snap reported them (`SnapResult.nLayer`): every
   * layer, or for an interleaved sliding-window model (Gemma 3) the global layers only (issue 17).
   * Unknown (null) before the first {@link windowScores} or {@link snap}.
   */
  private snapLayers: number | null = null;

  /**
   * KV heads per layer and the layers SnapKV compacts (kept positions and window scores are
   * [nLayer][nHeadKv][…]): the model's layers, or its global layers for an interleaved
   * sliding-window model once a snap has reported them.
   */
  get shape(): { nLayer: number; nHeadKv: number } {
    return { nLayer: this.snapLayers ?? this.model.info.nLayer, nHeadKv: this.model.info.nHeadKv };
  }

  /** Empties the sequence. */
  clear(): void {
    this.session.clear();
    this.position = 0;
  }

  /**
   * Arms the window-query capture for w (0 disarms); the next decoded tokens fill it. Re-arming
   * with another w drops the captured queries.
   */
  arm(window: number): void {
    if (window === this.armed) return;
    if (window > 0) this.session.armSnap(window);
    else this.session.native.snapCapture(0, 0);
    this.armed = window;
  }

  /** Decodes tokens at the current position (chunks of 512) and returns the last token's logits (a copy). */
  async extend(tokens: readonly number[]): Promise<Float32Array> {
    if (tokens.length === 0) throw new Error('extend needs at least one token');
    const chunk = this.session.batchSize;
    for (let i = 0; i < tokens.length; i += chunk) {
      const part = Int32Array.from(tokens.slice(i, i + chunk));
      const last = i + part.length >= tokens.length;
      await this.session.native.decode(part, this.position, 0, last ? 'last' : 'none');
      this.position += part.length;
    }
    return Float32Array.from(this.session.native.logits(-1));
  }

  /** Decodes one token (teacher forcing) and returns its logits [n_vocab] (a copy). */
  async step(token: number): Promise<Float32Array> {
    await this.session.native.decode(Int32Array.of(token), this.position, 0, 'last');
    this.position += 1;
    return Float32Array.from(this.session.native.logits(-1));
  }

  /** Teacher-forces tokens one by one: logits after each [tokens.length][n_vocab]. */
  async force(tokens: readonly number[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (const t of tokens) out.push(await this.step(t));
    return out;
  }

  /** Saves the sequence. `lastLogits` is what the last extend/step returned. */
  async save(lastLogits: Float32Array): Promise<Snapshot> {
    return { state: await this.session.native.stateGet(0), position: this.position, lastLogits };
  }

  /** Replaces the sequence by a snapshot (the window capture, if armed, is kept as it is). */
  async restore(snap: Snapshot): Promise<void> {
    this.session.clear();
    await this.session.native.stateSet(0, snap.state);
    this.position = snap.position;
  }

  /** Cells the sequence holds. */
  cells(): number {
    return this.session.stats().cells;
  }

  /**
   * Unpooled SnapKV scores of the current (uncompressed) sequence for the armed window w:
   * Float32Array [nLayer][nHeadKv][L − w] (see PolicyInput.windowScores). Runs the engine's
   * SnapKV graph with kernel 1 as a keep-all compaction (bit-identical to the uncompressed cache,
   * positions unchanged), so the sequence is still usable afterwards.
   */
  async windowScores(window: number): Promise<Float32Array> {
    if (this.armed !== window) throw new Error(`the capture is armed for w = ${this.armed}, not ${window}`);
    const L = this.cells();
    const r = await this.session.snap({ window, budget: L, kernel: 1, pooling: 'max', force: true, keepScores: true });
    this.snapLayers = r.nLayer;
    return Float32Array.from(this.session.snapScores());
  }

  /**
   * L2 norms of the current sequence's stored keys (`llama_snapkv_key_norms`): Float32Array
   * [nLayer][nHeadKv][L] (see PolicyInput.keyNorms); the cache is unchanged.
   * @throws Error when the engine refuses (its message).
   */
  async keyNorms(): Promise<Float32Array> {
    const r = await this.session.native.snapKeyNorms(0);
    if (r.status < 0) throw new Error(`key norms refused: ${r.error}`);
    this.snapLayers = r.nLayer;
    return r.norms;
  }

  /** Compacts to the given kept positions [nLayer][nHeadKv][budget]. */
  async compact(budget: number, kept: Int32Array): Promise<void> {
    await this.session.compact(budget, kept);
  }

  /** RepoSnap's own SnapKV (the on-device graph); returns the kept positions [nLayer][nHeadKv][budget]. */
  async snap(window: number, budget: number, kernel: number, pooling: 'max' | 'avg'): Promise<Int32Array> {
    const r = await this.session.snap({ window, budget, kernel, pooling });
    this.snapLayers = r.nLayer;
    return Int32Array.from(this.session.snapKept());
  }

  /** RepoSnap's SnapKV with any {@link SnapParams} (e.g. a budget allocation); returns the engine's result. */
  async snapWith(params: SnapParams): Promise<SnapResult> {
    return this.session.snap(params);
  }

  dispose(): void {
    this.session.dispose();
  }
}

/** Greedy token of logits, never `banned` (e.g. end of sequence). */
export function greedy(logits: ArrayLike<number>, banned: ReadonlySet<number>): number {
  let best = -1;
  for (let i = 0; i < logits.length; i++) if (!banned.has(i) && (best < 0 || logits[i]! > logits[best]!)) best = i;
  return best;
}

/**
 * Full attention's greedy continuation: `n + 1` tokens after a sequence whose last logits are
 * given, with the logits after each of the first n ([n][n_vocab]: step i predicts token i + 1).
 */
export async function greedyContinuation(forcer: TeacherForcer, lastLogits: Float32Array, n: number, banned: ReadonlySet<number>): Promise<{ tokens: number[]; logits: Float32Array[] }> {
  const tokens = [greedy(lastLogits, banned)];
  const logits: Float32Array[] = [];
  for (let i = 0; i < n; i++) {
    const l = await forcer.step(tokens[i]!);
    logits.push(l);
    tokens.push(greedy(l, banned));
  }
  return { tokens, logits };
}
