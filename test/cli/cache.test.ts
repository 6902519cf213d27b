/**
 * The cache store through the CLI, across processes: the second question restores the
 * repository prefix and prefills only the question; an edit keeps the prefix before the edited
 * file; a thread continues after a restart; damaged entries are rebuilt; two processes can
 * write at once; `reposnap stats` and `reposnap cache clear` report and empty the store.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { checkTinyModel, STORY } from '../helpers/models';

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'reposnap.js');
let model: string;
let tmp: string;

before(() => {
  model = checkTinyModel();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-cache-cli-'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A repository of five story files whose path order and modification order agree. */
function makeRepo(name: string): string {
  const repo = path.join(tmp, name);
  fs.mkdirSync(repo, { recursive: true });
  const sentences = STORY.split('. ');
  ['a', 'b', 'c', 'd', 'e'].forEach((n, i) => {
    const f = path.join(repo, `${n}.txt`);
    fs.writeFileSync(f, sentences.slice(i * 2, i * 2 + 6).join('. ') + '.\n');
    const t = new Date(Date.UTC(2026, 0, 1 + i));
    fs.utimesSync(f, t, t);
  });
  return repo;
}

function ask(repo: string, cacheDir: string, question: string, ...extra: string[]) {
  const r = spawnSync(process.execPath, [BIN, 'ask', '--repo', repo, '--model', model, '--cache-dir', cacheDir, '--max-tokens', '8', '--budget', '128', '--window', '16', ...extra, question], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.equal(r.status, 0, r.stderr);
  return { stderr: r.stderr, stats: parseStats(r.stderr) };
}

function parseStats(stderr: string): Record<string, string> {
  const line = stderr.split('\n').find((l) => l.startsWith('stats: '));
  assert.ok(line, `no stats line in:\n${stderr}`);
  return Object.fromEntries(line.slice(7).split(' ').map((kv) => kv.split('=') as [string, string]));
}

test('a second process restores the repository prefix and prefills only the question', () => {
  const repo = makeRepo('reuse');
  const cache = path.join(tmp, 'cache-reuse');
  const first = ask(repo, cache, 'Who found the dog?').stats;
  assert.equal(first.cache, 'miss');
  assert.equal(first.reused, '0');
  assert.equal(first.prefilled, first.L);
  const second = ask(repo, cache, 'Where did Lily play?').stats;
  assert.equal(second.cache, 'hit');
  const questionTokens = Number(second.prefilled);
  assert.equal(Number(second.reused) + questionTokens, Number(second.L));
  assert.ok(questionTokens < 40, `prefilled ${questionTokens} tokens: more than the question`);
  assert.equal(Number(second.B), 128);
});

test('after editing the last file only that file onward is prefilled again (partial hit)', () => {
  const repo = makeRepo('edit');
  const cache = path.join(tmp, 'cache-edit');
  const first = ask(repo, cache, 'Who found the dog?').stats;
  const f = path.join(repo, 'e.txt');
  fs.writeFileSync(f, fs.readFileSync(f, 'utf8').replace('ball', 'kite'));
  const second = ask(repo, cache, 'Who found the dog?').stats;
  assert.equal(second.cache, 'partial');
  const reused = Number(second.reused);
  assert.ok(reused > 0.5 * Number(first.L), `reused only ${reused} of ${first.L}`);
  assert.ok(reused < Number(first.L));
  // the new prefix was saved: asking again is a full hit
  assert.equal(ask(repo, cache, 'Who found the dog?').stats.cache, 'hit');
});

test('a thread continues on its compressed cache after a restart', () => {
  const repo = makeRepo('thread');
  const cache = path.join(tmp, 'cache-thread');
  const first = ask(repo, cache, 'Who found the dog?', '--thread', 'th1').stats;
  const cont = ask(repo, cache, 'What color was the ball?', '--thread', 'th1', '--follow-up', 'continue').stats;
  assert.equal(cont.cache, 'continue');
  assert.equal(cont.snap_ms, '0.00', 'continue does not re-snap');
  // the cache holds B compacted cells + the first answer + the new turn
  assert.ok(Number(cont.reused) > Number(first.B));
  assert.ok(Number(cont.prefilled) < 40);
  const resnap = ask(repo, cache, 'And where did they play?', '--thread', 'th1').stats;
  assert.equal(resnap.cache, 'hit', 'resnap restores the uncompressed repository prefix');
  assert.ok(Number(resnap.L) > Number(first.L), 'the thread\'s earlier turns are part of the re-snapped prompt');
  assert.equal(Number(resnap.B), 128);
});

test('damaged entries are reported once, removed and rebuilt; another cache type never matches', () => {
  const repo = makeRepo('damage');
  const cache = path.join(tmp, 'cache-damage');
  ask(repo, cache, 'Who found the dog?');
  const dir = fs.readdirSync(cache).map((d) => path.join(cache, d))[0]!;
  const [state] = fs.readdirSync(path.join(dir, 'prefix')).filter((f) => f.endsWith('.rsnp'));
  const file = path.join(dir, 'prefix', state!);
  fs.truncateSync(file, Math.floor(fs.statSync(file).size / 2));
  const r = ask(repo, cache, 'Who found the dog?');
  assert.equal(r.stats.cache, 'miss');
  assert.equal(r.stderr.match(/removed a corrupted cache entry/g)?.length, 1, r.stderr);
  assert.equal(ask(repo, cache, 'Who found the dog?').stats.cache, 'hit', 'rebuilt');
  assert.equal(ask(repo, cache, 'Who found the dog?', '--kv-type', 'f32').stats.cache, 'miss', 'an f32 cache is another entry');
});

test('two processes writing the same store at once both answer and leave valid entries', async () => {
  const repo = makeRepo('concurrent');
  const cache = path.join(tmp, 'cache-concurrent');
  const run = (q: string, thread: string) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [BIN, 'ask', '--repo', repo, '--model', model, '--cache-dir', cache, '--max-tokens', '8', '--thread', thread, q]);
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (code) => resolve({ code, stderr }));
    });
  const [a, b] = await Promise.all([run('Who found the dog?', 'x'), run('Where did Lily play?', 'y')]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  assert.doesNotMatch(a.stderr + b.stderr, /corrupted|could not be written/);
  const st = JSON.parse(spawnSync(process.execPath, [BIN, 'stats', '--repo', repo, '--cache-dir', cache, '--json'], { encoding: 'utf8' }).stdout);
  assert.equal(st.entries.filter((e: { kind: string }) => e.kind === 'thread').length, 2);
  assert.ok(st.entries.some((e: { kind: string }) => e.kind === 'prefix'));
  assert.equal(st.counters.misses + st.counters.fullHits, 2);
  assert.equal(ask(repo, cache, 'Who found the dog?').stats.cache, 'hit');
});

test('reposnap stats reports the store and reposnap cache clear empties it', () => {
  const repo = makeRepo('stats');
  const cache = path.join(tmp, 'cache-stats');
  ask(repo, cache, 'Who found the dog?', '--thread', 't');
  ask(repo, cache, 'Who found the dog?');
  const text = spawnSync(process.execPath, [BIN, 'stats', '--repo', repo, '--cache-dir', cache], { encoding: 'utf8' }).stdout;
  assert.match(text, /questions: 1 full hits, 0 partial hits, 1 misses, 0 continued/);
  assert.match(text, /thread t +1 turns +L=\d+ B=128/);
  assert.match(text, /prefix [0-9a-f]{24} +\d+ tokens/);
  const cleared = spawnSync(process.execPath, [BIN, 'cache', 'clear', '--repo', repo, '--cache-dir', cache], { encoding: 'utf8' });
  assert.equal(cleared.status, 0);
  assert.match(cleared.stdout, /cleared 2 entries/);
  const st = JSON.parse(spawnSync(process.execPath, [BIN, 'stats', '--repo', repo, '--cache-dir', cache, '--json'], { encoding: 'utf8' }).stdout);
  assert.deepEqual(st.entries, []);
});
