/**
 * The fidelity benchmark on real models (issue 13, item 4): code prompts cut from npm packages
 * (bench/fidelity/code-prompts.ts), the resumable checkpoint (bench/fidelity/checkpoint.ts) and
 * the benchmarks' --model names (bench/models.ts). A word tokenizer (one token per
 * whitespace-separated word, its value the word's length) makes every expected cut countable by hand.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { Checkpoint, measureOrder } from '../../bench/fidelity/checkpoint';
import { codePromptLength, codePrompts, cutPrompt, fileBlock, isReadableSource, promptFiles, readDocument, tokensSha256, type SourceFile } from '../../bench/fidelity/code-prompts';
import { resolveBenchModel } from '../../bench/models';
import { checkRealModel, REAL_MODELS, SMOLLM2, TINY_MODEL } from '../helpers/models';

/** One token per word; the token is the word's length. */
const words = (text: string): number[] => text.split(/\s+/).filter(Boolean).map((w) => w.length);

function tmpDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-fidelity-code-'));
}

test('readable source: a minified line or an inline source map leaves a file out; a source-map comment alone does not', () => {
  assert.equal(isReadableSource('const a = 1;\nfunction f() {\n  return a;\n}\n'), true);
  assert.equal(isReadableSource(`var a=1;${'b=2;'.repeat(120)}\n`), false); // one 488-character line
  assert.equal(isReadableSource(`x();\n//# sourceMappingURL=data:application/json;base64,${'A'.repeat(2000)}\n`), true);
  assert.equal(isReadableSource('\n\n  \n'), false);
});

test('a prompt is cut to exactly L tokens from whole files in order, and names the files it reaches', () => {
  const files: SourceFile[] = [
    { name: 'p/a.js', text: 'one two three' }, // block: "// p/a.js\none two three\n\n" = 5 words
    { name: 'p/b.js', text: 'four five\n' }, // 4 words
    { name: 'p/c.js', text: 'six' }, // 3 words
  ];
  assert.equal(fileBlock(files[0]!), '// p/a.js\none two three\n\n');
  assert.equal(fileBlock(files[1]!), '// p/b.js\nfour five\n\n');
  // 5 + 4 = 9 words: the first 7 end inside b.js
  const cut = cutPrompt(files, words, 7, 1);
  assert.deepEqual(cut.tokens, [2, 6, 3, 3, 5, 2, 6]); // "//" "p/a.js" "one" "two" "three" "//" "p/b.js"
  assert.deepEqual(cut.files, ['p/a.js', 'p/b.js']);
  // exactly the first file
  assert.deepEqual(cutPrompt(files, words, 5, 1).files, ['p/a.js']);
  // every file: 12 words
  assert.equal(cutPrompt(files, words, 12, 1).tokens.length, 12);
  assert.throws(() => cutPrompt(files, words, 13, 1), /3 files hold 12 tokens, fewer than 13/);
  // a large chars-per-token guess reads every file at once and cuts the same tokens
  assert.deepEqual(cutPrompt(files, words, 7, 1000).tokens, cut.tokens);
});

test('prompt lengths are evenly spaced; prompt i starts in document i mod D at a file that moves on each round', () => {
  assert.deepEqual([0, 1, 2, 3].map((i) => codePromptLength(1024, 4096, i, 4)), [1024, 2048, 3072, 4096]);
  assert.equal(codePromptLength(2000, 8000, 0, 1), 2000);
  const f = (n: string): SourceFile => ({ name: n, text: n });
  const docs = [[f('a'), f('b'), f('c')], [f('d'), f('e')]];
  const names = (i: number) => promptFiles(docs, i).map((x) => x.name).join('');
  assert.equal(names(0), 'abcde');
  assert.equal(names(1), 'deabc');
  assert.equal(names(2), 'bcade'); // round 1: start at 1 · ⌈3/3⌉ = 1
  assert.equal(names(3), 'edabc'); // round 1: start at 1 · ⌈2/3⌉ = 1
  assert.equal(names(4), 'cabde'); // round 2: start at 2
  assert.equal(names(5), 'deabc'); // round 2: start at 2 mod 2 = 0
});

test('documents are read from an installed package: version, readable .js/.mjs/.ts files in path order, .d.ts and minified files left out', () => {
  const nm = tmpDir();
  const pkg = path.join(nm, 'demo');
  fs.mkdirSync(path.join(pkg, 'lib', 'sub'), { recursive: true });
  fs.writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ name: 'demo', version: '1.2.3' }));
  fs.writeFileSync(path.join(pkg, 'lib', 'z.js'), 'zed z\n//# sourceMappingURL=z.js.map\n');
  fs.writeFileSync(path.join(pkg, 'lib', 'a.ts'), 'alpha beta\n');
  fs.writeFileSync(path.join(pkg, 'lib', 'a.d.ts'), 'declare const x: number;\n');
  fs.writeFileSync(path.join(pkg, 'lib', 'min.js'), `${'x=1;'.repeat(200)}\n`);
  fs.writeFileSync(path.join(pkg, 'lib', 'sub', 'm.mjs'), 'em\n');
  fs.writeFileSync(path.join(pkg, 'lib', 'notes.md'), 'not code\n');
  const doc = readDocument({ package: 'demo', dir: 'lib' }, nm);
  assert.equal(doc.version, '1.2.3');
  assert.deepEqual(doc.files.map((x) => x.name), ['demo/lib/a.ts', 'demo/lib/sub/m.mjs', 'demo/lib/z.js']);
  assert.equal(doc.files[2]!.text, 'zed z\n'); // the source-map line dropped
  assert.throws(() => readDocument({ package: 'missing', dir: '' }, nm), /the package missing is not installed in .* \(run npm ci\)/);
  assert.throws(() => readDocument({ package: 'demo', dir: 'lib/sub/none' }, nm), /no readable source under .*lib\/sub\/none/);
});

test('code prompts: sources, lengths and digests; a corpus too short for L says so', () => {
  const nm = tmpDir();
  const mk = (name: string, version: string, files: Record<string, string>) => {
    const dir = path.join(nm, name);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name, version }));
    for (const [f, t] of Object.entries(files)) fs.writeFileSync(path.join(dir, f), t);
  };
  // 40 words per file block ("// x/f.js" = 2 words + 38)
  const body = (tag: string) => Array.from({ length: 38 }, (_, i) => `${tag}${i}`).join(' ');
  mk('x', '1.0.0', { 'f.js': body('x'), 'g.js': body('y') });
  mk('w', '2.0.0', { 'h.js': body('w') });
  const corpus = [
    { package: 'x', dir: '' },
    { package: 'w', dir: '' },
  ];
  const { prompts, packages } = codePrompts(words, { n: 3, minTokens: 64, maxTokens: 100, nodeModules: nm, corpus });
  assert.deepEqual(packages, ['x@1.0.0: 2 files', 'w@2.0.0: 1 files']);
  assert.deepEqual(
    prompts.map((p) => [p.id, p.tokens.length, p.source, p.files]),
    [
      [0, 64, 'x@1.0.0', ['x/f.js', 'x/g.js']],
      [1, 82, 'w@2.0.0', ['w/h.js', 'x/f.js', 'x/g.js']],
      [2, 100, 'x@1.0.0', ['x/g.js', 'x/f.js', 'w/h.js']], // round 1 starts at file ⌈2/3⌉ = 1
    ],
  );
  // the first tokens: "//" (2) "x/f.js" (6) "x0" (2) …
  assert.deepEqual(prompts[0]!.tokens.slice(0, 3), [2, 6, 2]);
  assert.equal(prompts[0]!.tokensSha256, tokensSha256(prompts[0]!.tokens));
  assert.notEqual(prompts[0]!.tokensSha256, tokensSha256([...prompts[0]!.tokens.slice(0, 63), 99]));
  assert.throws(() => codePrompts(words, { n: 1, minTokens: 121, maxTokens: 121, nodeModules: nm, corpus }), /3 files hold 120 tokens, fewer than 121/);
  assert.throws(() => codePrompts(words, { n: 1, minTokens: 32, maxTokens: 100, nodeModules: nm, corpus }), /need 64 ≤ min ≤ max/);
});

test('the checkpoint resumes the prompts measured under the same settings, drops a cut-off line, refuses other settings', () => {
  const file = path.join(tmpDir(), 'sub', 'run.partial.jsonl');
  const config = { model: 'm', fractions: [0.1, 0.5], policies: ['a', 'b'] };
  const first = Checkpoint.open<{ promptId: number; v: number }>(file, config, true); // no file yet: a new one
  assert.equal(first.done.size, 0);
  first.append({ promptId: 3, v: 0.25 });
  first.append({ promptId: 7, v: 1 / 3 });
  fs.appendFileSync(file, '{"promptId":9,"v":'); // a run stopped mid-write

  // the same config with keys in another order resumes
  const again = Checkpoint.open<{ promptId: number; v: number }>(file, { policies: ['a', 'b'], fractions: [0.1, 0.5], model: 'm' }, true);
  assert.deepEqual([...again.done.entries()], [
    [3, { promptId: 3, v: 0.25 }],
    [7, { promptId: 7, v: 1 / 3 }],
  ]);
  again.append({ promptId: 9, v: 2 });
  assert.deepEqual([...Checkpoint.open<{ promptId: number; v: number }>(file, config, true).done.keys()], [3, 7, 9]);

  assert.throws(() => Checkpoint.open(file, { ...config, fractions: [0.1] }, true), /was made with other settings .*: remove it or run without --resume/);
  // without --resume the file starts again
  assert.equal(Checkpoint.open(file, { ...config, fractions: [0.1] }, false).done.size, 0);
  assert.equal(fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length, 1);
  fs.writeFileSync(file, 'not json\n');
  assert.throws(() => Checkpoint.open(file, config, true), /is not a fidelity checkpoint/);
});

test('prompts are measured in bit-reversed order, so that a run stopped early spans short and long prompts', () => {
  // 3 bits: reversed(0..5) = 0, 4, 2, 6, 1, 5
  assert.deepEqual(measureOrder(6), [0, 4, 2, 1, 5, 3]);
  assert.deepEqual(measureOrder(8), [0, 4, 2, 6, 1, 5, 3, 7]);
  assert.deepEqual(measureOrder(1), [0]);
  assert.deepEqual(measureOrder(0), []);
  assert.deepEqual([...measureOrder(24)].sort((a, b) => a - b), Array.from({ length: 24 }, (_, i) => i));
  assert.deepEqual(measureOrder(24).slice(0, 4), [0, 16, 8, 4]);
});

test('--model names: tiny, a real model by alias (sha256 checked), a .gguf path, and a clear error otherwise', () => {
  const tiny = resolveBenchModel('tiny');
  assert.deepEqual({ ...tiny }, { id: 'tiny', short: 'tiny', file: TINY_MODEL, sha256: '270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d', label: 'stories260K' });
  const smol = resolveBenchModel('smollm2');
  assert.deepEqual({ ...smol }, { id: SMOLLM2, short: 'smollm2', file: checkRealModel(SMOLLM2), sha256: REAL_MODELS[SMOLLM2]!.sha256, label: 'SmolLM2-135M-Instruct Q4_1' });
  assert.equal(resolveBenchModel(SMOLLM2).file, smol.file);
  const byPath = resolveBenchModel(TINY_MODEL);
  assert.deepEqual({ ...byPath }, { id: 'stories260K', short: 'stories260K', file: TINY_MODEL, sha256: null, label: 'stories260K.gguf' });
  assert.throws(() => resolveBenchModel('/nowhere/x.gguf'), /--model: \/nowhere\/x\.gguf does not exist/);
  assert.throws(() => resolveBenchModel('gpt5'), /--model: unknown model "gpt5"; use a path to a \.gguf file or one of tiny, smollm2-135m-instruct, smollm2, .*coder/);
});
