/**
 * Several sequences in one context: compacting one leaves the other's cache bit-identical, and a
 * sequence whose cells are shared with another is refused (guard).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { loadAddon } from '../../src/engine/native';
import { checkTinyModel, STORY } from '../helpers/models';
import { enginePrecision } from '../helpers/precision';

let model: EngineModel;
let a: Int32Array;
let b: Int32Array;

before(async () => {
  model = await loadModel(checkTinyModel());
  a = model.tokenize(STORY, { addSpecial: true });
  b = model.tokenize('One day a cat found a box. The cat jumped in the box and slept all day. ' + STORY.slice(0, 400), { addSpecial: true });
});
after(() => model.dispose());

function twoSeqSession() {
  return new (loadAddon().Session)(model.native, { contextSize: 2048, seqMax: 2, threads: 1, threadsBatch: 1, flashAttention: 'off', typeK: 'f32', typeV: 'f32' });
}

async function prefill(s: ReturnType<typeof twoSeqSession>, seq: number, toks: Int32Array) {
  for (let i = 0; i < toks.length; i += 256) await s.decode(toks.subarray(i, Math.min(toks.length, i + 256)), i, seq, 'last');
}

test('compacting one sequence leaves the other bit-identical', async () => {
  const next = model.tokenize(' The end of the story.');
  const run = async (compact: boolean) => {
    const s = twoSeqSession();
    try {
      s.snapCapture(0, 16);
      await prefill(s, 0, a);
      await prefill(s, 1, b);
      const before = await s.stateGet(1);
      if (compact) {
        const r = await s.snap(0, { window: 16, budget: 64, kernel: 5, pooling: 'max' });
        assert.equal(r.status, 0, r.error);
        assert.equal(s.kvStats(0).cells, 64);
        assert.equal(s.kvStats(1).cells, b.length);
      }
      // sequence 1's cells, positions, K and V, byte for byte
      assert.ok((await s.stateGet(1)).equals(before), 'the state of sequence 1 changed');
      const out: Float32Array[] = [];
      for (let i = 0; i < next.length; i++) {
        await s.decode(next.subarray(i, i + 1), b.length + i, 1, 'last');
        out.push(s.logits(-1));
      }
      return out;
    } finally {
      s.dispose();
    }
  };
  const plain = await run(false);
  const compacted = await run(true);
  // the freed cells change where llama.cpp places sequence 1's next tokens (the first free cell),
  // which reorders the attention sums: equal up to float rounding, not bit for bit
  let maxDiff = 0;
  for (let i = 0; i < plain.length; i++) {
    for (let v = 0; v < plain[i]!.length; v++) maxDiff = Math.max(maxDiff, Math.abs(plain[i]![v]! - compacted[i]![v]!));
  }
  assert.ok(maxDiff < 1e-4, `sequence 1's logits moved by ${maxDiff}`); // f32 rounding of logits of magnitude ~10
});

test('a sequence that shares cells with another is refused, and nothing changes', async () => {
  const s = twoSeqSession();
  try {
    s.snapCapture(0, 16);
    await prefill(s, 0, a);
    s.seqCp(0, 1, 0, -1); // llama_memory_seq_cp: sequence 1 now shares every cell of sequence 0
    const before = s.kvStats(0);
    const r = await s.snap(0, { window: 16, budget: 64, kernel: 5, pooling: 'max' });
    assert.ok(r.status < 0);
    assert.match(r.error, /shares KV cells with another sequence/);
    assert.deepEqual(s.kvStats(0), before);
  } finally {
    s.dispose();
  }
});

test('a sequence whose cells are interleaved with another compacts like a contiguous one', async () => {
  const next = model.tokenize(' The end.');
  const run = async (interleave: boolean, snap: boolean) => {
    const s = twoSeqSession();
    try {
      s.snapCapture(0, 16);
      // 8 tokens at a time in both runs, so that the two differ only in where the cells are (a
      // backend may pick other kernels for other batch sizes: ggml-vulkan does, so a prefill in
      // ubatches of 256 differs from one in ubatches of 8 by f16 rounding there)
      for (let i = 0; i < a.length; i += 8) {
        await s.decode(a.subarray(i, Math.min(a.length, i + 8)), i, 0, 'last');
        // interleaved: 8 tokens of each sequence in turn, so sequence 0's cells are 0-7, 16-23, …
        if (interleave && i < b.length) await s.decode(b.subarray(i, Math.min(b.length, i + 8)), i, 1, 'last');
      }
      let kept: number[] = [];
      if (snap) {
        const r = await s.snap(0, { window: 16, budget: 64, kernel: 5, pooling: 'max' });
        assert.equal(r.status, 0, r.error);
        kept = Array.from(s.snapKept());
      }
      const out: Float32Array[] = [];
      for (let i = 0; i < next.length; i++) {
        await s.decode(next.subarray(i, i + 1), a.length + i, 0, 'last');
        out.push(s.logits(-1));
      }
      return { kept, out };
    } finally {
      s.dispose();
    }
  };
  const maxDiff = (x: Float32Array[], y: Float32Array[]) => {
    let d = 0;
    for (let i = 0; i < x.length; i++) for (let v = 0; v < x[i]!.length; v++) d = Math.max(d, Math.abs(x[i]![v]! - y[i]![v]!));
    return d;
  };
  // the layout's own effect on the uncompressed cache: f32 rounding on the CPU (sums over a longer
  // row of cells: measured 1.3e-5); an engine with f16 matmul operands picks other kernels for the
  // longer interleaved cache (measured on lavapipe: 7.4e-3), so the compacted caches are held to that
  const layoutNoise = maxDiff((await run(false, false)).out, (await run(true, false)).out);
  if (enginePrecision() === 'f32') assert.ok(layoutNoise < 1e-4, `the cell layout alone moves the logits by ${layoutNoise}`);
  const contiguous = await run(false, true);
  const interleaved = await run(true, true);
  assert.deepEqual(interleaved.kept, contiguous.kept, 'the same positions are kept');
  const d = maxDiff(contiguous.out, interleaved.out);
  assert.ok(d < 1e-4 + 2 * layoutNoise, `max |Δlogit| ${d} (the layout alone: ${layoutNoise})`);
  console.log(`# interleaved vs contiguous: max |Δlogit| ${d.toExponential(2)} compacted, ${layoutNoise.toExponential(2)} uncompressed`);
});
