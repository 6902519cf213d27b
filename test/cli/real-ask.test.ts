/**
 * `reposnap ask` on a real model, as a user runs it: SmolLM2-135M-Instruct (fetched by
 * `npm run models`) answers a question about four of this repository's source files with the
 * default settings (SnapKV on, B = 1024, window 32, kernel 7, max pooling, the model's chat
 * template), in a 2,304-token context so that the prompt (L ≈ 1,650) is longer than B (the packer
 * keeps 256 tokens free for the answer whatever --max-tokens says, so the 2,048 of earlier
 * versions now holds three of the four files).
 *
 * What only a real model produces, asserted: the answer repeats the identifier asked about
 * (`defaultCacheRoot`, 16 characters of code no story model spells), names a file path in this
 * repository's style (`src/…`), is English (five or more distinct common English words), and stays
 * one assistant turn (with the plain-text layout SmolLM2 went on with an invented "Question:"). Not
 * asserted: that the path is the right one. SmolLM2-135M names src/cache/location.ts or another
 * path depending on the files' pack order (least recently modified first), at full attention as
 * with SnapKV; the test logs which.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { checkRealModel } from '../helpers/models';

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'reposnap.js');
const FILES = ['src/cache/location.ts', 'src/engine/errors.ts', 'src/host/debounce.ts', 'src/host/watcher.ts'];
const ENGLISH = ['the', 'is', 'in', 'a', 'an', 'of', 'to', 'and', 'that', 'it', 'which', 'this', 'function', 'file', 'defined', 'defines', 'returns', 'used'];

/** Parses `stats: k=v …` into a record. */
function parseStats(stderr: string): Record<string, string> {
  const line = stderr.split('\n').find((l) => l.startsWith('stats: '));
  assert.ok(line, `no stats line in:\n${stderr}`);
  return Object.fromEntries(line.slice('stats: '.length).split(' ').map((kv) => kv.split('=') as [string, string]));
}

test('SmolLM2 answers a question about this repository in English, with SnapKV on and B < L', () => {
  const model = checkRealModel();
  const args = ['ask', '--no-cache', '--repo', ROOT, '--model', model, '--context-size', '2304', '--max-tokens', '48'];
  for (const f of FILES) args.push('--include', f);
  const r = spawnSync(process.execPath, [BIN, ...args, 'Which file defines the function defaultCacheRoot?'], { encoding: 'utf8', timeout: 180_000 });
  assert.equal(r.status, 0, r.stderr);
  const answer = r.stdout;
  const s = parseStats(r.stderr);
  const statsLine = r.stderr.split('\n').find((l) => l.startsWith('stats: '))!;
  console.log(`# answer: ${JSON.stringify(answer)}`);
  console.log(`# ${statsLine}`);

  const L = Number(s.L);
  const B = Number(s.B);
  assert.equal(s.snap, 'on');
  assert.equal(B, 1024, 'the default budget');
  assert.ok(L > B && L <= 2304 - 48, `L = ${L}: the four files should make the prompt longer than B = 1024 and leave the answer its room`);
  assert.equal(s.files, String(FILES.length), 'every included file is packed');
  assert.equal(s.ratio, (B / L).toFixed(2));
  const [before, after] = s.n_kv!.split('->').map(Number);
  assert.ok(after! < before!, `decoding attends to fewer cells after SnapKV (${s.n_kv})`);

  assert.match(answer, /defaultCacheRoot/, 'the answer names the function asked about');
  // one assistant turn: without its chat template the model ran on into an invented next question
  assert.doesNotMatch(answer, /^\s*Question:/m, 'the answer invents a follow-up question');
  const cited = /\bsrc\/[A-Za-z0-9_/.-]+/.exec(answer);
  assert.ok(cited, 'the answer names a file path under src/');
  const words = new Set(answer.toLowerCase().match(/[a-z]+/g) ?? []);
  const english = ENGLISH.filter((w) => words.has(w));
  assert.ok(english.length >= 5, `English words in the answer: ${english.join(', ')}`);
  console.log(`# cited ${cited[0]} (defined in src/cache/location.ts: ${cited[0].startsWith('src/cache/location') ? 'right' : 'wrong'})`);
});
