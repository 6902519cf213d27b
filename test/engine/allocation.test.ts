/**
 * Non-uniform budget allocations (AdaKV, PyramidKV) on the real tiny model, checked against
 * independent computations: the per-head budgets obey each method's definition on the float64
 * reference's pooled scores, the same total budget is kept, and decoding on the compacted cache
 * (each head's unused cells hidden by the per-head mask) matches a float64 forward pass that
 * shows each head exactly its own kept keys. The per-head mask survives a state file and is gone
 * once its cells are reused.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { SnapRefusedError } from '../../src/engine/errors';
import type { EngineModel } from '../../src/engine/model';
import type { BudgetAllocation } from '../../src/engine/native';
import { createSession, type EngineSession } from '../../src/engine/session';
import { loadStory } from '../helpers/story';
import { keptToVisible, LlamaReference, snapkvScores } from '../reference/llama-ref';

let model: EngineModel;
let ref: LlamaReference;
let prompt: number[];
let continuation: number[];

before(async () => {
  ({ model, ref, prompt, continuation } = await loadStory());
});
after(() => model.dispose());

const W = 16;
const B = 64;
const KERNEL = 5;
/** Pooled-score tolerance of the f32 engine against the float64 reference (flash attention off). */
const SCORE_TOL = 1e-4;

/** Splits a −1 padded [nLayer][nHeadKv][C] layout into per-head kept lists. */
function rowsOf(kept: Int32Array, nLayer: number, nHeadKv: number, C: number): number[][][] {
  const rows: number[][][] = [];
  for (let l = 0; l < nLayer; l++) {
    rows.push([]);
    for (let h = 0; h < nHeadKv; h++) {
      const r = Array.from(kept.subarray((l * nHeadKv + h) * C, (l * nHeadKv + h + 1) * C));
      const n = r.indexOf(-1) < 0 ? C : r.indexOf(-1);
      assert.ok(r.slice(n).every((p) => p === -1), 'padding only at the end');
      rows[l]!.push(r.slice(0, n));
    }
  }
  return rows;
}

function session(): EngineSession {
  return createSession(model, { contextSize: 1024, flashAttention: 'off', kvCacheType: 'f32', snapWindow: W, threads: 1, threadsBatch: 1 });
}

/** Max |Δlogit| of the session's teacher-forced continuation against the reference with `rows` visible (null: all). */
async function deviation(s: EngineSession, rows: number[][][] | null): Promise<number> {
  const state = ref.prefill(prompt);
  const visible = rows ? keptToVisible(rows) : undefined;
  let maxDiff = 0;
  for (let i = 0; i < continuation.length; i++) {
    const got = await s.step(continuation[i]!);
    const expect = ref.decode(state, continuation[i]!, prompt.length + i, visible);
    for (let v = 0; v < expect.length; v++) maxDiff = Math.max(maxDiff, Math.abs(got[v]! - expect[v]!));
  }
  return maxDiff;
}

async function snapWith(allocation: BudgetAllocation) {
  const s = session();
  await s.prefill(prompt);
  const r = await s.snap({ window: W, budget: B, kernel: KERNEL, pooling: 'max', allocation, keepScores: true });
  const rows = rowsOf(s.snapKept(), r.nLayer, r.nHeadKv, r.B);
  return { s, r, rows };
}

/** Lowest reference score a head kept in its prefix, highest it dropped. */
function boundary(scores: Float64Array, kept: readonly number[]): { minKept: number; maxDropped: number } {
  const set = new Set(kept);
  let minKept = Infinity;
  let maxDropped = -Infinity;
  for (let p = 0; p < scores.length; p++) {
    if (set.has(p)) minKept = Math.min(minKept, scores[p]!);
    else maxDropped = Math.max(maxDropped, scores[p]!);
  }
  return { minKept, maxDropped };
}

test('AdaKV: each layer shares n_head_kv·(B − w) prefix slots by score over all heads, each head keeps its safeguard, decode matches float64', async () => {
  const { s, r, rows } = await snapWith('adakv');
  try {
    const L = prompt.length;
    const nKv = r.nHeadKv;
    const refScores = snapkvScores(ref.prefill(prompt), { window: W, kernel: KERNEL, pooling: 'max' });
    const safe = Math.floor(0.2 * (B - W));
    const counts: number[] = [];
    for (let l = 0; l < r.nLayer; l++) {
      let total = 0;
      let lowestPick = Infinity; // the weakest score any head took beyond its safeguard
      let strongestDropped = -Infinity;
      for (let h = 0; h < nKv; h++) {
        const row = rows[l]![h]!;
        assert.deepEqual(row.slice(-W), Array.from({ length: W }, (_, i) => L - W + i), 'the window is kept by every head');
        const prefix = row.slice(0, -W);
        counts.push(prefix.length);
        total += prefix.length;
        assert.ok(prefix.length >= safe, `layer ${l} head ${h}: ${prefix.length} < safeguard ${safe}`);
        const { minKept, maxDropped } = boundary(refScores[l]![h]!, prefix);
        assert.ok(minKept >= maxDropped - 2 * SCORE_TOL, `layer ${l} head ${h}: not a top-k of its own scores`);
        if (prefix.length > safe) lowestPick = Math.min(lowestPick, minKept);
        strongestDropped = Math.max(strongestDropped, maxDropped);
      }
      assert.equal(total, nKv * (B - W), `layer ${l}: the heads share exactly n_head_kv·(B − w)`);
      assert.ok(lowestPick >= strongestDropped - 2 * SCORE_TOL, `layer ${l}: a dropped key (${strongestDropped}) outscores a kept one (${lowestPick})`);
    }
    assert.equal(r.keptRows, r.nLayer * nKv * B, 'same total budget as uniform SnapKV');
    assert.equal(r.B, Math.max(...counts) + W, 'the sequence holds C = the largest per-head budget');
    assert.equal(s.stats().cells, r.B);
    assert.ok(new Set(counts).size > 2, 'the budgets really differ per head');

    const maxDiff = await deviation(s, rows);
    assert.ok(maxDiff <= 1e-3, `max |Δlogit| = ${maxDiff}`);
  } finally {
    s.dispose();
  }
});

test('PyramidKV: per-layer budgets fall linearly to (B − w)/β, n_layer·B in all, decode matches float64', async () => {
  const { s, r, rows } = await snapWith('pyramid');
  try {
    const nKv = r.nHeadKv;
    const nLayer = r.nLayer;
    const refScores = snapkvScores(ref.prefill(prompt), { window: W, kernel: KERNEL, pooling: 'max' });
    const perLayer: number[] = [];
    for (let l = 0; l < nLayer; l++) {
      const n = rows[l]![0]!.length - W;
      for (let h = 0; h < nKv; h++) {
        assert.equal(rows[l]![h]!.length - W, n, `layer ${l}: every head keeps the layer's budget`);
        const { minKept, maxDropped } = boundary(refScores[l]![h]!, rows[l]![h]!.slice(0, -W));
        assert.ok(minKept >= maxDropped - 2 * SCORE_TOL, `layer ${l} head ${h}: not a top-k of its own scores`);
      }
      perLayer.push(n);
    }
    // PyramidKV sec. 3.3 with β = 20: last = (B − w)/β, first = 2(B − w) − last, arithmetic in between
    const last = (B - W) / 20;
    const first = 2 * (B - W) - last;
    const step = (first - last) / (nLayer - 1);
    perLayer.forEach((n, l) => assert.ok(Math.abs(n - (first - l * step)) <= 1, `layer ${l}: ${n} vs ${first - l * step}`));
    assert.equal(perLayer.reduce((a, b) => a + b, 0), nLayer * (B - W));
    assert.equal(r.keptRows, nLayer * nKv * B);
    assert.equal(r.B, perLayer[0]! + W);

    const maxDiff = await deviation(s, rows);
    assert.ok(maxDiff <= 1e-3, `max |Δlogit| = ${maxDiff}`);
  } finally {
    s.dispose();
  }
});

for (const slack of [0, 10]) {
test(`per-head budgets from a policy: the mask hides exactly each head's unused cells (flash attention on and off${slack ? `; ${slack} cells no head fills` : ''})`, async () => {
  const L = prompt.length;
  const C = 48 + slack;
  const nLayer = ref.nLayer;
  const nKv = ref.nHeadKv;
  // head h of layer l keeps 2 + h sinks and the (C − 8·((l + h) % 4) − sinks) most recent tokens
  const rows: number[][][] = [];
  const flat = new Int32Array(nLayer * nKv * C).fill(-1);
  for (let l = 0; l < nLayer; l++) {
    rows.push([]);
    for (let h = 0; h < nKv; h++) {
      const n = C - slack - 8 * ((l + h) % 4);
      const sinks = 2 + h;
      const k = [...Array.from({ length: sinks }, (_, i) => i), ...Array.from({ length: n - sinks }, (_, i) => L - (n - sinks) + i)];
      rows[l]!.push(k);
      flat.set(k, (l * nKv + h) * C);
    }
  }
  for (const fa of ['off', 'on'] as const) {
    const s = createSession(model, { contextSize: 1024, flashAttention: fa, kvCacheType: 'f32', snapWindow: 0, threads: 1 });
    const full = createSession(model, { contextSize: 1024, flashAttention: fa, kvCacheType: 'f32', snapWindow: 0, threads: 1 });
    try {
      await s.prefill(prompt);
      const r = await s.compact(C, flat);
      assert.equal(r.B, C);
      assert.equal(r.keptRows, rows.flat().reduce((a, k) => a + k.length, 0));
      assert.deepEqual(Array.from(s.snapKept()), Array.from(flat));

      // the engine's own full-attention deviation from the reference (flash attention computes in
      // half precision on the CPU) widens the tolerance as in snapkv.test.ts
      await full.prefill(prompt);
      const noise = await deviation(full, null);
      const maxDiff = await deviation(s, rows);
      assert.ok(maxDiff <= 1e-3 + 2 * noise, `flash attention ${fa}: max |Δlogit| = ${maxDiff} (full-attention deviation ${noise})`);
      console.log(`# per-head budgets (slack ${slack}), flash attention ${fa}: max |Δlogit| ${maxDiff.toExponential(2)}, full-attention deviation ${noise.toExponential(2)}`);
    } finally {
      s.dispose();
      full.dispose();
    }
  }
});
}

test('the per-head mask survives a state file, and reused cells are visible to every head again', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-alloc-'));
  const file = path.join(dir, 'adakv.state');
  const { s: a, rows } = await snapWith('adakv');
  const b = session();
  try {
    await a.saveState(file);
    await b.loadState(file);
    assert.equal(b.stats().cells, a.stats().cells);
    for (const t of continuation) {
      const x = Buffer.from((await a.step(t)).buffer);
      const y = Buffer.from((await b.step(t)).buffer);
      assert.ok(x.equals(y), 'decode after reload differs');
    }
    // and the reloaded cache is the masked one, not the C cells fully visible
    b.clear();
    await b.loadState(file);
    assert.ok((await deviation(b, rows)) <= 1e-3);

    // a fresh prompt in the same context reuses the cells: full attention again
    b.clear();
    await b.prefill(prompt);
    assert.ok((await deviation(b, null)) <= 1e-4, 'cleared cells kept their per-head mask');
  } finally {
    a.dispose();
    b.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('per-head budgets: invalid padding and parameters are refused and leave the cache unchanged', async () => {
  const L = prompt.length;
  const C = 32;
  const n = ref.nLayer * ref.nHeadKv * C;
  const valid = new Int32Array(n);
  for (let r = 0; r < n; r += C) for (let j = 0; j < C; j++) valid[r + j] = L - C + j;
  const holey = Int32Array.from(valid);
  holey[3] = -1; // padding before a kept position
  const empty = Int32Array.from(valid);
  empty.fill(-1, 0, C); // a head that keeps nothing
  const s = session();
  try {
    await s.prefill(prompt);
    for (const [name, kept] of [['padding inside a row', holey], ['a head with no kept position', empty]] as const) {
      await assert.rejects(s.compact(C, kept), SnapRefusedError, name);
      assert.equal(s.stats().cells, L, `${name}: cache unchanged`);
    }
    await assert.rejects(s.snap({ window: W, budget: B, allocation: 'adakv', adaAlpha: 1.5 }), /safeguard/);
    await assert.rejects(s.snap({ window: W, budget: B, allocation: 'pyramid', pyramidBeta: 0.5 }), /beta/);
    await assert.rejects(s.snap({ window: W, budget: B, allocation: 'nonsense' as BudgetAllocation }), /allocation/);
    assert.equal(s.stats().cells, L);
    assert.ok((await deviation(s, null)) <= 1e-4, 'refusals changed the cache');
  } finally {
    s.dispose();
  }
});
