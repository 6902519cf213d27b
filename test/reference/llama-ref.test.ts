/**
 * Tests of the float64 llama reference (./llama-ref), its GGUF reader and the
 * SnapKV helpers. The reference is validated against an independent
 * implementation: llama.cpp through node-llama-cpp's prebuilt CPU binary.
 *
 * Run: cd /work/main && node --import tsx --test test/reference/*.test.ts
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GGMLType, GGUFFile, GGUFValueType, halfToFloat } from './gguf';
import { encodeGGUF, floatToHalf } from './gguf-writer';
import type { GGUFWriteEntry } from './gguf-writer';
import {
  LlamaReference, argmax, cloneState, keptToVisible, pool1d, snapkvRawScores, snapkvScores, snapkvSelect, softmax,
} from './llama-ref';
import type { AttentionCapture, RefState } from './llama-ref';
import { writeSyntheticLlama } from './synthetic-llama';

const MODEL = '/work/shared/models/stories260K.gguf';
const MODEL_SHA256 = '270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d';
/** Max |Δp| allowed vs llama.cpp for F32 weights and an F32 KV cache (observed ≈ 2e-6). */
const TOL_P_F32 = 1e-4;
/** Max |Δp| allowed vs llama.cpp for F16 weights (ggml rounds activations to F16 for F16 matmuls; observed ≈ 2.3e-3). */
const TOL_P_F16 = 1e-2;
const STORY =
  'Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. ' +
  'One day, she saw a big red ball under a tree. She ran to the ball and wanted to play with it, but a small dog came ' +
  'and took the ball away. Lily was sad and started to cry.';

const tmp = mkdtempSync(join(tmpdir(), 'llama-ref-'));
const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  // Synchronous part first: the process may exit while the native disposals below are awaited.
  rmSync(tmp, { recursive: true, force: true });
  for (const c of cleanups.reverse()) await c();
});

// ---- node-llama-cpp (ESM, loaded lazily; one Llama instance for the whole file) ----
type NLC = typeof import('node-llama-cpp', { with: { 'resolution-mode': 'import' } });
let nlcPromise: Promise<{ nlc: NLC; llama: Awaited<ReturnType<NLC['getLlama']>> }> | undefined;
function getNlc(): Promise<{ nlc: NLC; llama: Awaited<ReturnType<NLC['getLlama']>> }> {
  nlcPromise ??= (async () => {
    const nlc = await import('node-llama-cpp');
    const llama = await nlc.getLlama({ gpu: false, build: 'never', logLevel: nlc.LlamaLogLevel.error });
    cleanups.push(() => llama.dispose());
    return { nlc, llama };
  })();
  return nlcPromise;
}

/** Loads a model in llama.cpp with one sequence, F32 KV cache, no flash attention, 1 thread. */
async function llamaCppSequence(modelPath: string) {
  const { llama } = await getNlc();
  const model = await llama.loadModel({ modelPath });
  const context = await model.createContext({
    contextSize: 256, threads: 1, flashAttention: false,
    experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32',
  });
  cleanups.push(() => model.dispose());
  return { model, context, sequence: context.getSequence() };
}

/** Comparison of one reference distribution (from logits [n_vocab]) with llama.cpp's probabilities. */
function compare(refLogits: Float64Array, llamaProbs: Map<number, number>) {
  assert.equal(llamaProbs.size, refLogits.length, 'llama.cpp returned a full-vocabulary distribution');
  const p = softmax(refLogits);
  let maxDp = 0;
  for (let v = 0; v < p.length; v++) maxDp = Math.max(maxDp, Math.abs(p[v]! - (llamaProbs.get(v) ?? 0)));
  const refTop = argmax(refLogits);
  const sorted = Array.from(p).sort((a, b) => b - a);
  const llamaTop = llamaProbs.keys().next().value as number;
  return { maxDp, refTop, llamaTop, refMargin: sorted[0]! - sorted[1]! };
}

/** Accumulates comparisons; asserts the tolerance and top-1 agreement (a disagreement is allowed only on a near tie). */
function checkAll(rows: Array<ReturnType<typeof compare>>, tol: number, what: string) {
  let maxDp = 0;
  let agree = 0;
  for (const [i, r] of rows.entries()) {
    maxDp = Math.max(maxDp, r.maxDp);
    if (r.refTop === r.llamaTop) agree++;
    else assert.ok(r.refMargin < tol, `${what} #${i}: top-1 ${r.refTop} (ref) vs ${r.llamaTop} (llama.cpp) with ref margin ${r.refMargin}`);
  }
  assert.ok(maxDp < tol, `${what}: max |Δp| ${maxDp} ≥ ${tol}`);
  return { maxDp, agree, n: rows.length };
}

function storyPrompt(model: { tokenize(text: string): readonly unknown[] }): number[] {
  const toks = (model.tokenize(STORY) as readonly number[]).slice();
  if (toks[0] !== 1) toks.unshift(1); // BOS
  return toks.slice(0, 100);
}

// ---------------------------------------------------------------------------------------------

test('model file sha256', () => {
  const sha = createHash('sha256').update(readFileSync(MODEL)).digest('hex');
  assert.equal(sha, MODEL_SHA256, `${MODEL} is not the expected stories260K.gguf`);
});

test('gguf reader: stories260K header, metadata and tensor infos', () => {
  const g = GGUFFile.load(MODEL);
  assert.equal(g.version, 3);
  assert.equal(g.alignment, 32); // no general.alignment key → default
  assert.equal(g.dataOffset % 32, 0);
  assert.equal(g.getString('general.architecture'), 'llama');
  assert.equal(g.getNumber('llama.block_count'), 5);
  assert.equal(g.getNumber('llama.attention.head_count_kv'), 4);
  assert.equal(g.getNumber('llama.rope.dimension_count'), 8);
  assert.equal(g.get('llama.rope.freq_base'), undefined);
  assert.equal(Math.fround(1e-5), g.getNumber('llama.attention.layer_norm_rms_epsilon'));
  assert.equal((g.get('tokenizer.ggml.tokens') as string[])[1], '<s>');
  assert.equal(g.metadata.get('tokenizer.ggml.tokens')!.arrayType, GGUFValueType.STRING);
  assert.equal(g.tensors.length, 3 + 5 * 9);
  assert.deepEqual(g.tensor('blk.0.attn_k.weight')!.dims, [64, 32]);
  assert.deepEqual(g.tensor('blk.0.ffn_down.weight')!.dims, [172, 64]);
  assert.ok(g.tensors.every((t) => t.type === GGMLType.F32));
  const w = g.readTensorF64('output_norm.weight');
  assert.equal(w.length, 64);
  assert.ok(w.every(Number.isFinite));
});

test('gguf reader: every value type, arrays, custom alignment, F16 tensors, unsupported types', () => {
  const meta: GGUFWriteEntry[] = [
    { key: 'general.alignment', type: GGUFValueType.UINT32, value: 64 },
    { key: 'u8', type: GGUFValueType.UINT8, value: 255 },
    { key: 'i8', type: GGUFValueType.INT8, value: -128 },
    { key: 'u16', type: GGUFValueType.UINT16, value: 65535 },
    { key: 'i16', type: GGUFValueType.INT16, value: -32768 },
    { key: 'u32', type: GGUFValueType.UINT32, value: 4294967295 },
    { key: 'i32', type: GGUFValueType.INT32, value: -2147483648 },
    { key: 'f32', type: GGUFValueType.FLOAT32, value: 0.5 },
    { key: 'bool', type: GGUFValueType.BOOL, value: true },
    { key: 'str', type: GGUFValueType.STRING, value: 'héllo ▁wörld' },
    { key: 'u64', type: GGUFValueType.UINT64, value: 18446744073709551615n },
    { key: 'i64', type: GGUFValueType.INT64, value: -5 },
    { key: 'f64', type: GGUFValueType.FLOAT64, value: Math.PI },
    { key: 'arr', type: GGUFValueType.ARRAY, arrayType: GGUFValueType.INT32, value: [1, -2, 3] },
    { key: 'strs', type: GGUFValueType.ARRAY, arrayType: GGUFValueType.STRING, value: ['a', '', 'b'] },
  ];
  const halfs = [1, -2, 0.5, 65504, 2 ** -24, 0, 3.140625, -0.0001220703125];
  const buf = encodeGGUF(
    meta,
    [
      { name: 'f32t', dims: [3], type: GGMLType.F32, data: [1.5, -2.25, 3] },
      { name: 'f16t', dims: [4, 2], type: GGMLType.F16, data: halfs },
      { name: 'qtensor', dims: [32], type: GGMLType.F32, data: new Float64Array(32) },
    ],
  );
  // Patch qtensor's type to Q8_0 (8): name string, n_dims u32, dims u64 × 1, then the type u32.
  const at = buf.indexOf(Buffer.from('qtensor')) + 'qtensor'.length + 4 + 8;
  assert.equal(buf.readUInt32LE(at), GGMLType.F32);
  buf.writeUInt32LE(8, at);

  const g = GGUFFile.fromBuffer(buf);
  assert.equal(g.alignment, 64);
  assert.equal(g.dataOffset % 64, 0);
  for (const t of g.tensors) assert.equal(t.offset % 64, 0);
  for (const e of meta) {
    const want = e.key === 'i64' ? -5 : e.value;
    assert.deepEqual(g.get(e.key), want, e.key);
    assert.equal(g.metadata.get(e.key)!.type, e.type);
  }
  assert.equal(g.metadata.get('strs')!.arrayType, GGUFValueType.STRING);
  assert.deepEqual(g.tensor('f16t')!.dims, [4, 2]);
  assert.deepEqual(Array.from(g.readTensorF64('f32t')), [1.5, -2.25, 3]);
  assert.deepEqual(Array.from(g.readTensorF64('f16t')), halfs);
  assert.throws(() => g.readTensorF64('qtensor'), /Q8_0.*only F32 and F16/);
  assert.throws(() => g.readTensorF64('nope'), /no tensor named nope/);

  // binary16 decoding by hand
  assert.equal(halfToFloat(0x3c00), 1);
  assert.equal(halfToFloat(0xc000), -2);
  assert.equal(halfToFloat(0x7bff), 65504);
  assert.equal(halfToFloat(0x0001), 2 ** -24);
  assert.equal(halfToFloat(0x03ff), 1023 * 2 ** -24);
  assert.equal(halfToFloat(0x7c00), Infinity);
  assert.ok(Number.isNaN(halfToFloat(0x7e00)));
  assert.ok(Object.is(halfToFloat(0x8000), -0));
  assert.equal(floatToHalf(1 + 2 ** -11), 0x3c00); // tie → even
  assert.equal(floatToHalf(1 + 3 * 2 ** -11), 0x3c02); // tie → even (up)
  assert.equal(floatToHalf(65520), 0x7c00);
});

test('reference matches llama.cpp on stories260K: 100-token prompt + 30-token greedy continuation', async (t) => {
  const ref = LlamaReference.load(MODEL);
  const hp = ref.hparams;
  assert.deepEqual(
    [hp.nVocab, hp.nEmbd, hp.nLayer, hp.nHead, hp.nHeadKv, hp.headDim, hp.nFf, hp.nRot, hp.ropeFreqBase, hp.tiedOutput],
    [512, 64, 5, 8, 4, 8, 172, 8, 10000, false],
  );
  const { model, sequence } = await llamaCppSequence(MODEL);
  const prompt = storyPrompt(model);
  assert.equal(prompt.length, 100);
  assert.equal(prompt[0], 1);

  // Prompt: llama.cpp's next-token distribution after every prompt token vs the reference's.
  const out = await sequence.controlledEvaluate(
    prompt.map((tok) => [tok as never, { generateNext: { probabilities: true } }] as const),
  );
  const state = ref.prefill(prompt, { allLogits: true });
  const rows = prompt.map((_, i) => compare(state.allLogits![i]!, out[i]!.next.probabilities! as Map<number, number>));
  const pre = checkAll(rows, TOL_P_F32, 'prompt');
  assert.deepEqual(state.allLogits![prompt.length - 1], state.logits);

  // Greedy continuation (llama.cpp temperature 0 = greedy sampler; probabilities are the plain softmax of its logits).
  const gen: number[] = [];
  const genRows: Array<ReturnType<typeof compare>> = [];
  let refLogits = state.logits;
  let next = out[prompt.length - 1]!.next.probabilities!.keys().next().value as number;
  for (let s = 0; s < 30; s++) {
    assert.equal(argmax(refLogits), next, `greedy step ${s}: reference top-1 differs from llama.cpp`);
    gen.push(next);
    const [r] = await sequence.controlledEvaluate([[next as never, { generateNext: { token: true, probabilities: true } }]]);
    refLogits = ref.decode(state, next, prompt.length + s);
    genRows.push(compare(refLogits, r!.next.probabilities! as Map<number, number>));
    next = r!.next.token as number;
  }
  const dec = checkAll(genRows, TOL_P_F32, 'continuation');
  assert.equal(dec.agree, 30);
  t.diagnostic(`prompt: top-1 agree ${pre.agree}/${pre.n}, max|Δp| ${pre.maxDp.toExponential(2)}; ` +
    `greedy: ${dec.agree}/${dec.n}, max|Δp| ${dec.maxDp.toExponential(2)}; text: ${JSON.stringify(model.detokenize(gen as never[]))}`);

  // Hidden prompt keys: llama.cpp erases cells [a, end) and evaluates a token at position a;
  // the reference hides prompt keys ≥ a in every layer and KV head and decodes at position a.
  const a = 60;
  const x = prompt[75]!;
  await sequence.eraseContextTokenRanges([{ start: a, end: sequence.nextTokenIndex }]);
  assert.equal(sequence.nextTokenIndex, a);
  const [r] = await sequence.controlledEvaluate([[x as never, { generateNext: { probabilities: true } }]]);
  const hidden = ref.decode(ref.prefill(prompt), x, a, (_l, _g, j) => j < a);
  const c = checkAll([compare(hidden, r!.next.probabilities! as Map<number, number>)], TOL_P_F32, 'hidden tail');
  t.diagnostic(`hidden-tail decode: max|Δp| ${c.maxDp.toExponential(2)}`);
});

test('reference matches llama.cpp on a synthetic F16 llama (head size 64, GQA 4/2, tied output, freq_base 50000)', async (t) => {
  const path = join(tmp, 'synthetic-f16.gguf');
  writeSyntheticLlama(path, {
    tokenizerFrom: MODEL, nEmbd: 256, nHead: 4, nHeadKv: 2, nFf: 512, nLayer: 2,
    weightType: 'F16', tiedOutput: true, ropeFreqBase: 50000, seed: 42,
  });
  const ref = LlamaReference.load(path);
  assert.equal(ref.headDim, 64);
  assert.equal(ref.hparams.tiedOutput, true);
  assert.equal(ref.hparams.ropeFreqBase, 50000);
  const { sequence } = await llamaCppSequence(path);
  const rand = (() => { let s = 7; return () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648; })();
  const prompt = [1];
  while (prompt.length < 64) prompt.push(3 + Math.floor(rand() * (ref.nVocab - 3)));
  const out = await sequence.controlledEvaluate(prompt.map((tok) => [tok as never, { generateNext: { probabilities: true } }] as const));
  const state = ref.prefill(prompt, { allLogits: true });
  const res = checkAll(prompt.map((_, i) => compare(state.allLogits![i]!, out[i]!.next.probabilities! as Map<number, number>)), TOL_P_F16, 'synthetic');
  t.diagnostic(`synthetic F16: top-1 agree ${res.agree}/${res.n}, max|Δp| ${res.maxDp.toExponential(2)}`);
});

test('decode: all-visible equals prefill of the longer prompt; hidden keys have no influence', () => {
  const ref = LlamaReference.load(MODEL);
  const prompt = [1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 300, 310, 320, 330, 340];
  const L = prompt.length;
  const base = ref.prefill(prompt);
  assert.equal(base.K.length, 5);
  assert.equal(base.K[0]!.length, 4);
  assert.equal(base.K[0]![0]!.length, L);
  assert.equal(base.Q[0]!.length, 8);
  assert.equal(base.Q[0]![0]!.length, L);
  assert.equal(base.K[0]![0]![0]!.length, 8);

  const s1 = cloneState(base);
  const full = ref.decode(s1, 77, L);
  const longer = ref.prefill([...prompt, 77]).logits;
  for (let v = 0; v < full.length; v++) assert.ok(Math.abs(full[v]! - longer[v]!) < 1e-12);
  assert.equal(s1.K[0]![0]!.length, L + 1);
  assert.equal(base.K[0]![0]!.length, L, 'cloneState isolates the original');

  // Per-(layer, KV head) hiding; garbage in hidden cells must not change anything, including later decode steps.
  const vis = (l: number, g: number, j: number) => (j + l + g) % 3 !== 0;
  const sA = cloneState(base);
  const sB = cloneState(base);
  for (let l = 0; l < 5; l++) for (let g = 0; g < 4; g++) for (let j = 0; j < L; j++) {
    if (!vis(l, g, j)) { sB.K[l]![g]![j]!.fill(1e3); sB.V[l]![g]![j]!.fill(-1e3); }
  }
  for (let s = 0; s < 3; s++) {
    const a = ref.decode(sA, 50 + s, L + s, vis);
    const b = ref.decode(sB, 50 + s, L + s, vis);
    assert.deepEqual(a, b);
    if (s === 0) assert.ok(Math.abs(a[argmax(a)]! - full[argmax(a)]!) > 1e-6, 'hiding keys changes the logits');
  }
});

test('pool1d by hand: kernel 1/2/3/5, max and in-range avg', () => {
  const x = Float64Array.from([1, 5, 2, 8, 3]);
  assert.deepEqual(Array.from(pool1d(x, 1, 'max')), [1, 5, 2, 8, 3]);
  assert.deepEqual(Array.from(pool1d(x, 1, 'avg')), [1, 5, 2, 8, 3]);
  // k=3, p=1: windows [-1..1], [0..2], [1..3], [2..4], [3..5]
  assert.deepEqual(Array.from(pool1d(x, 3, 'max')), [5, 5, 8, 8, 8]);
  const avg3 = Array.from(pool1d(x, 3, 'avg'));
  [(1 + 5) / 2, (1 + 5 + 2) / 3, (5 + 2 + 8) / 3, (2 + 8 + 3) / 3, (8 + 3) / 2].forEach((v, i) => assert.ok(Math.abs(avg3[i]! - v) < 1e-15));
  // k=5, p=2: first window [-2..2] has 3 in-range values
  const avg5 = Array.from(pool1d(x, 5, 'avg'));
  [8 / 3, 16 / 4, 19 / 5, 18 / 4, 13 / 3].forEach((v, i) => assert.ok(Math.abs(avg5[i]! - v) < 1e-15));
  assert.deepEqual(Array.from(pool1d(x, 5, 'max')), [5, 8, 8, 8, 8]);
  // even k=2, p=1: out[j] pools [j-1, j]
  assert.deepEqual(Array.from(pool1d(x, 2, 'max')), [1, 5, 5, 8, 8]);
  assert.deepEqual(Array.from(pool1d(x, 2, 'avg')), [1, 3, 3.5, 5, 5.5]);
  // kernel larger than the input
  assert.deepEqual(Array.from(pool1d(Float64Array.from([2, 4]), 7, 'avg')), [3, 3]);
});

test('snapkvRawScores by hand: window-query sum and GQA mean', () => {
  // head_dim 1 (scale 1), 2 query heads sharing 1 KV head, keys k = [0, 1, 0].
  // head 0: q = 0     → uniform softmax;  head 1: q = ln 2 → weights ∝ (1, 2, 1).
  const k = [[0], [1], [0]].map((v) => Float64Array.from(v));
  const q0 = [0, 0, 0].map((v) => Float64Array.of(v));
  const q1 = [Math.LN2, Math.LN2, Math.LN2].map((v) => Float64Array.of(v));
  const cap: AttentionCapture = { nHead: 2, nHeadKv: 1, headDim: 1, promptLength: 3, Q: [[q0, q1]], K: [[k]] };
  // w = 1 (t = 2): head0 → [1/3, 1/3], head1 → [1/4, 1/2]; mean → [7/24, 5/12]
  const w1 = snapkvRawScores(cap, 1)[0]![0]!;
  assert.equal(w1.length, 2);
  assert.ok(Math.abs(w1[0]! - 7 / 24) < 1e-15 && Math.abs(w1[1]! - 5 / 12) < 1e-15, String(w1));
  // w = 2 (t = 1, 2), prefix = {0}: head0 → 1/2 + 1/3, head1 → 1/3 + 1/4; mean → 17/24
  const w2 = snapkvRawScores(cap, 2)[0]![0]!;
  assert.equal(w2.length, 1);
  assert.ok(Math.abs(w2[0]! - 17 / 24) < 1e-15, String(w2));
  // 4 query heads, 2 KV heads: KV head 0 ← query heads {0, 1}, KV head 1 ← {2, 3} (both q = 0 → uniform).
  const cap2: AttentionCapture = { nHead: 4, nHeadKv: 2, headDim: 1, promptLength: 3, Q: [[q0, q1, q0, q0]], K: [[k, k]] };
  const g2 = snapkvRawScores(cap2, 1)[0]!;
  assert.ok(Math.abs(g2[0]![0]! - 7 / 24) < 1e-15 && Math.abs(g2[0]![1]! - 5 / 12) < 1e-15, String(g2[0]));
  assert.ok(Math.abs(g2[1]![0]! - 1 / 3) < 1e-15 && Math.abs(g2[1]![1]! - 1 / 3) < 1e-15, String(g2[1]));
  // head_dim 4: scale 1/2. One head, q·k = 2 ln 3 for key 0 → weights ∝ (3, 1) at t = 1.
  const cap4: AttentionCapture = {
    nHead: 1, nHeadKv: 1, headDim: 4, promptLength: 2,
    Q: [[[Float64Array.of(0, 0, 0, 0), Float64Array.of(2 * Math.log(3), 0, 0, 0)]]],
    K: [[[Float64Array.of(1, 0, 0, 0), Float64Array.of(0, 0, 0, 0)]]],
  };
  assert.ok(Math.abs(snapkvRawScores(cap4, 1)[0]![0]![0]! - 3 / 4) < 1e-15);
  // pooled = raw followed by pool1d
  const pooled = snapkvScores(cap, { window: 1, kernel: 3, pooling: 'avg' })[0]![0]!;
  assert.ok(Math.abs(pooled[0]! - (7 / 24 + 5 / 12) / 2) < 1e-15);
  assert.throws(() => snapkvRawScores(cap, 0), /window/);
  assert.throws(() => snapkvRawScores(cap, 4), /window/);
});

test('snapkvRawScores by hand: learned attention sinks join each softmax denominator, per query head', () => {
  // the first capture above (keys [0, 1, 0], head 0 q = 0, head 1 q = ln 2), w = 1 (t = 2), with
  // sinks: head 0's e^(ln 3) = 3 → weights (1, 1, 1, sink 3)/6; head 1's e^(ln 4) = 4 → (1, 2, 1, sink 4)/8.
  // Mean over the group → [(1/6 + 1/8)/2, (1/6 + 2/8)/2] = [7/48, 5/24]
  const k = [[0], [1], [0]].map((v) => Float64Array.from(v));
  const q0 = [0, 0, 0].map((v) => Float64Array.of(v));
  const q1 = [Math.LN2, Math.LN2, Math.LN2].map((v) => Float64Array.of(v));
  const cap: AttentionCapture = { nHead: 2, nHeadKv: 1, headDim: 1, promptLength: 3, Q: [[q0, q1]], K: [[k]], sinks: [Float64Array.of(Math.log(3), Math.log(4))] };
  const s = snapkvRawScores(cap, 1)[0]![0]!;
  assert.ok(Math.abs(s[0]! - 7 / 48) < 1e-15 && Math.abs(s[1]! - 5 / 24) < 1e-15, String(s));
  // the sinks belong to query heads: swapped between the heads, head 0 → (1, 1, 1, sink 4)/7 and
  // head 1 → (1, 2, 1, sink 3)/7 → [(1/7 + 1/7)/2, (1/7 + 2/7)/2] = [1/7, 3/14]
  const swapped = snapkvRawScores({ ...cap, sinks: [Float64Array.of(Math.log(4), Math.log(3))] }, 1)[0]![0]!;
  assert.ok(Math.abs(swapped[0]! - 1 / 7) < 1e-15 && Math.abs(swapped[1]! - 3 / 14) < 1e-15, String(swapped));
  // a sink at -1e4 (gpt-oss's "none") leaves the scores without sinks: [7/24, 5/12]
  const none = snapkvRawScores({ ...cap, sinks: [Float64Array.of(-1e4, -1e4)] }, 1)[0]![0]!;
  assert.ok(Math.abs(none[0]! - 7 / 24) < 1e-15 && Math.abs(none[1]! - 5 / 12) < 1e-15, String(none));
});

test('snapkvSelect by hand: top (B-w) prefix + window, ascending, boundary gap', () => {
  // L = 8, w = 2 → prefix 0..5; B = 5 → keep 3 prefix positions.
  const s = [[Float64Array.from([0.1, 0.9, 0.3, 0.7, 0.3, 0.5])], [Float64Array.from([1, 1, 1, 1, 1, 1])]];
  const sel = snapkvSelect(s, 5, 2, 8);
  assert.deepEqual(sel.kept[0]![0], [1, 3, 5, 6, 7]);
  assert.ok(Math.abs(sel.gap[0]![0]! - (0.5 - 0.3)) < 1e-15);
  assert.deepEqual(sel.kept[1]![0], [0, 1, 2, 6, 7]); // all tied: lower positions win
  assert.equal(sel.gap[1]![0], 0); // … and the gap reports the tie
  const all = snapkvSelect(s, 10, 2, 8);
  assert.deepEqual(all.kept[0]![0], [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.equal(all.gap[0]![0], Infinity);
  assert.deepEqual(snapkvSelect(s, 2, 2, 8).kept[0]![0], [6, 7]);
  assert.throws(() => snapkvSelect(s, 1, 2, 8), /budget/);
  const vis = keptToVisible(sel.kept);
  assert.equal(vis(0, 0, 3), true);
  assert.equal(vis(0, 0, 2), false);
});

test('SnapKV on stories260K: shapes, mass bound, pooling order, selection feeds decode', () => {
  const ref = LlamaReference.load(MODEL);
  const prompt = [1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 300, 310, 320, 330, 340, 350, 360, 370, 380];
  const L = prompt.length;
  const w = 4;
  const state: RefState = ref.prefill(prompt);
  const raw = snapkvRawScores(state, w);
  const mx = snapkvScores(state, { window: w, kernel: 5, pooling: 'max' });
  const av = snapkvScores(state, { window: w, kernel: 5, pooling: 'avg' });
  assert.equal(raw.length, 5);
  for (let l = 0; l < 5; l++) {
    assert.equal(raw[l]!.length, 4);
    for (let g = 0; g < 4; g++) {
      const r = raw[l]![g]!;
      assert.equal(r.length, L - w);
      let sum = 0;
      for (let j = 0; j < r.length; j++) {
        assert.ok(r[j]! >= 0);
        assert.ok(mx[l]![g]![j]! >= r[j]! && mx[l]![g]![j]! >= av[l]![g]![j]!);
        sum += r[j]!;
      }
      assert.ok(sum <= w + 1e-12, 'each window query spreads mass ≤ 1 over the prefix');
    }
  }
  const sel = snapkvSelect(mx, 10, w, L);
  for (const perLayer of sel.kept) for (const k of perLayer) {
    assert.equal(k.length, 10);
    assert.deepEqual(k.slice(-w), [16, 17, 18, 19]);
    assert.deepEqual(k, [...k].sort((a, b) => a - b));
  }
  const logits = ref.decode(cloneState(state), 42, L, keptToVisible(sel.kept));
  assert.equal(logits.length, ref.nVocab);
  assert.ok(logits.every(Number.isFinite));
});
