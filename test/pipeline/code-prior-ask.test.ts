/**
 * The code-aware prior through the product's pipeline (`snap.prior: 'code'`, issue 16 item 4) on
 * the tiny model: with a bonus far above any score (β = 1000 × the head's mean, while one score is
 * at most P × the mean, P < 1000 here), every (layer, KV head) keeps every flagged position, so
 * the kept rows must contain the tokens of the one signature line of the repository and of the
 * identifier the question names. The test finds those tokens itself, from the prompt's token
 * pieces as the session holds them.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { askRepository, DEFAULT_SNAP } from '../../src/pipeline/ask';
import { checkTinyModel } from '../helpers/models';

let model: EngineModel;
let tmp: string;
let repo: string;
const SIGNATURE = 'export function fooBarBaz(x: number): number {';

before(async () => {
  model = await loadModel(checkTinyModel());
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-code-prior-'));
  repo = path.join(tmp, 'repo');
  fs.mkdirSync(repo);
  fs.writeFileSync(path.join(repo, 'a.ts'), `${SIGNATURE}\n  return x * 2;\n}\n`);
  // no definitions in the others (statements only): the signature line is the only one
  for (let i = 0; i < 8; i++) fs.writeFileSync(path.join(repo, `part${i}.ts`), `// part ${i} of the walk, nothing defined here\nconsole.log(${i * 7}${i < 2 ? ', fooBarBaz' : ''});\n`);
});
after(() => {
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Positions of the tokens (of `tokens[0…end)`) whose bytes overlap each occurrence of `needle` (whole words when `word`). */
function positionsOf(tokens: readonly number[], end: number, needle: string, word: boolean): number[] {
  const offsets = [0];
  const bytes = Buffer.concat(tokens.slice(0, end).map((t) => {
    const b = model.tokenBytes(t);
    offsets.push(offsets[offsets.length - 1]! + b.length);
    return b;
  }));
  const n = Buffer.from(needle);
  const isWord = (b: number | undefined) => b !== undefined && /[A-Za-z0-9_$]/.test(String.fromCharCode(b));
  const out = new Set<number>();
  for (let at = bytes.indexOf(n); at >= 0; at = bytes.indexOf(n, at + 1)) {
    if (word && (isWord(bytes[at - 1]) || isWord(bytes[at + n.length]))) continue;
    for (let p = 0; p < end; p++) if (offsets[p]! < at + n.length && offsets[p + 1]! > at) out.add(p);
  }
  return [...out].sort((a, b) => a - b);
}

test("snap.prior 'code' keeps the signature line's and the named identifier's tokens in every head", async () => {
  let kept: Int32Array = new Int32Array(0);
  let tokens: number[] = [];
  let shape = { nLayer: 0, nHeadKv: 0 };
  const stats = await askRepository(
    {
      repo,
      question: 'What does `fooBarBaz` return?',
      model,
      snap: { ...DEFAULT_SNAP, window: 8, budget: 96, prior: 'code', priorBonus: 1000 },
      contextSize: 1024,
      maxTokens: 4,
      session: { threads: 1 },
      afterSnap: (s) => {
        kept = s.snapKept();
        tokens = [...s.tokens];
        shape = { nLayer: model.info.nLayer, nHeadKv: model.info.nHeadKv };
      },
    },
    () => {},
  );
  assert.ok(stats.L < 1000 && stats.L > 96, `L = ${stats.L}`);
  assert.equal(stats.B, 96);
  const P = stats.L - 8;
  const signature = positionsOf(tokens, stats.prefixTokens, SIGNATURE, false);
  const identifier = positionsOf(tokens, stats.prefixTokens, 'fooBarBaz', true);
  assert.ok(signature.length > 0 && identifier.length >= 3, `${signature.length} signature, ${identifier.length} identifier tokens`);
  const flagged = [...new Set([...signature, ...identifier])].filter((p) => p < P);
  assert.ok(flagged.length <= 96 - 8, `${flagged.length} flagged positions fit B − w`);
  const rows = shape.nLayer * shape.nHeadKv;
  assert.equal(kept.length, rows * 96);
  for (let r = 0; r < rows; r++) {
    const row = new Set(kept.subarray(r * 96, (r + 1) * 96));
    for (const p of flagged) assert.ok(row.has(p), `layer ${Math.floor(r / shape.nHeadKv)} head ${r % shape.nHeadKv} keeps position ${p}`);
    for (let p = P; p < stats.L; p++) assert.ok(row.has(p), 'the window is kept');
  }
});
