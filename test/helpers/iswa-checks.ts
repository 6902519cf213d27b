/**
 * The checks every interleaved sliding-window (iSWA) model runs (test/engine/iswa.test.ts for
 * Gemma 3, iswa-archs.test.ts for gpt-oss and Cohere 2), shared so that each architecture is held
 * to the same assertions: keep-all is bit-identical, and B < L matches the uncompressed cache with
 * the dropped global-layer keys hidden (./iswa-state.ts), with exact stats.
 */
import assert from 'node:assert/strict';
import type { EngineSession } from '../../src/engine/session';
import type { SyntheticShape } from '../../src/engine/synthetic';
import { maxAbsDiff, withSnapMask } from './iswa-state';

/** One iSWA model and the prompt its checks run on. */
export interface IswaCase {
  /** The synthetic model's shape (F32 weights; the sessions use an F32 cache). */
  shape: SyntheticShape & { architecture: string; nLayer: number; nEmbd: number; nHead: number; nHeadKv: number; slidingWindow: number };
  /** The global layers by llama.cpp's pattern (llama_hparams::set_swa_pattern: il % period == period − 1). */
  globalLayers: number[];
  /** Prompt tokens [L]. */
  prompt: number[];
  /** Observation window w (the sessions capture it: snapWindow). */
  W: number;
  /** Budget B < L per global (layer, KV head). */
  B: number;
  /** Tokens decoded after the prompt to compare logits. */
  cont: number[];
}

/** K + V bytes of one cell over `layers` layers of the shape: layers · n_head_kv · (d_k + d_v) · 4 (F32 cache, d = nEmbd / nHead). */
export function bytesPerCell(shape: IswaCase['shape'], layers: number): number {
  const headDim = shape.nEmbd / shape.nHead;
  return layers * shape.nHeadKv * (headDim + headDim) * 4;
}

/** Decodes `tokens` one by one on `s` and returns each step's logits ([tokens.length][n_vocab]). */
export async function continueWith(s: EngineSession, tokens: number[]): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  for (const t of tokens) out.push(Float32Array.from(await s.step(t)));
  return out;
}

/**
 * Keep-all (B = L, forced) compacts the global layers only and leaves the logits of `c.cont`
 * bit-identical to the uncompressed cache's. `open` gives a fresh session of the case's model.
 * @throws AssertionError on any difference.
 */
export async function checkKeepAll(c: IswaCase, open: () => EngineSession): Promise<void> {
  const L = c.prompt.length;
  const full = open();
  const kept = open();
  try {
    await full.prefill(c.prompt);
    const lgFull = await continueWith(full, c.cont);
    await kept.prefill(c.prompt);
    const r = await kept.snap({ window: c.W, budget: L, force: true });
    assert.deepEqual([r.compacted, r.L, r.B, r.nLayer, r.nHeadKv], [true, L, L, c.globalLayers.length, c.shape.nHeadKv], 'the global layers are compacted (forced keep-all)');
    assert.equal(maxAbsDiff(await continueWith(kept, c.cont), lgFull), 0);
  } finally {
    full.dispose();
    kept.dispose();
  }
}

/**
 * B < L: every global (layer, KV head) keeps B ascending positions ending with the window, the
 * heads keep different positions, the stats give B cells for the global layers and the sliding
 * layers' window (min(L, n_swa) cells) untouched, the KV bytes before and after exactly, decoding
 * continues at L; and the logits of `c.cont` match the uncompressed cache with each head's dropped
 * keys hidden within `tol`, while differing from the unmasked cache's by more than 10 × tol.
 * Logs both distances, prefixed with the architecture and `label`.
 * @throws AssertionError on any failed check.
 */
export async function checkCompressedMatchesMasked(c: IswaCase, open: () => EngineSession, tol: number, label: string): Promise<void> {
  const { shape, W, B, cont } = c;
  const L = c.prompt.length;
  const nGlobal = c.globalLayers.length;
  const nRows = nGlobal * shape.nHeadKv;
  const win = Math.min(L, shape.slidingWindow);
  const nSwaLayers = shape.nLayer - nGlobal;
  const s = open();
  const full = open();
  const ref = open();
  try {
    await s.prefill(c.prompt);
    const before = s.stats();
    const r = await s.snap({ window: W, budget: B });
    const after = s.stats();
    const kept = s.snapKept();
    assert.deepEqual([r.compacted, r.L, r.B, r.nLayer, r.keptRows], [true, L, B, nGlobal, nRows * B]);
    assert.equal(kept.length, nRows * B, 'kept positions of the global layers only');
    for (let row = 0; row < nRows; row++) {
      const k = Array.from(kept.subarray(row * B, (row + 1) * B));
      assert.deepEqual(k.slice(B - W), Array.from({ length: W }, (_, i) => L - W + i), 'every head keeps the window');
      assert.ok(k.every((p, i) => i === 0 || p > k[i - 1]!), 'ascending');
    }
    const rows = new Set(Array.from({ length: nRows }, (_, row) => kept.subarray(row * B, (row + 1) * B).join(',')));
    assert.ok(rows.size >= 2, 'the heads keep different positions');

    // stats: B for the global layers, the sliding layers' window apart and untouched, KV bytes exact
    assert.deepEqual([before.cells, after.cells], [L, B]);
    assert.deepEqual([before.swaCells, after.swaCells], [win, win], 'the sliding layers hold their window, untouched');
    assert.deepEqual([after.bytesPerCell, after.swaBytesPerCell], [bytesPerCell(shape, nGlobal), bytesPerCell(shape, nSwaLayers)]);
    assert.equal(before.kvBytes, L * bytesPerCell(shape, nGlobal) + win * bytesPerCell(shape, nSwaLayers));
    assert.equal(after.kvBytes, B * bytesPerCell(shape, nGlobal) + win * bytesPerCell(shape, nSwaLayers));
    // decoding continues at L: the memory's last position (read from the sliding cache) is L - 1
    assert.deepEqual([s.position, s.lastPosition()], [L, L - 1]);
    const lg = await continueWith(s, cont);
    assert.equal(s.lastPosition(), L + cont.length - 1);

    await full.prefill(c.prompt);
    const snapFull = await full.snapshot();
    const lgFull = await continueWith(full, cont);
    await ref.restore({ ...snapFull, payload: withSnapMask(snapFull.payload, kept, { L, B, nGlobal, nHeadKv: shape.nHeadKv }) });
    const lgRef = await continueWith(ref, cont);

    const d = maxAbsDiff(lg, lgRef);
    const dFull = maxAbsDiff(lg, lgFull);
    console.log(`# ${shape.architecture}, ${label}: max |Δlogit| vs masked ${d.toExponential(2)}, vs unmasked full ${dFull.toExponential(2)}`);
    assert.ok(d <= tol, `max |Δlogit| vs the masked uncompressed cache = ${d}`);
    assert.ok(dFull > 10 * tol, `compression changed the logits well beyond the bound (max |Δlogit| vs full = ${dFull})`);
  } finally {
    s.dispose();
    full.dispose();
    ref.dispose();
  }
}
