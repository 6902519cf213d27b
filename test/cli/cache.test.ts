/**
 * The cache store through the CLI, across processes: the second question restores the
 * repository prefix and prefills only the question; an edit keeps the prefix before the edited
 * file; a thread continues after a restart; damaged entries are rebuilt; two processes can
 * write at once; `reposnap stats` and `reposnap cache clear` report and empty the store.
 * Then what users did to break it: files of the wrong shape, a file where the cache folder
 * belongs, a process killed mid-write, a thread copied from another repository, two questions
 * in one thread at once, and `stats` of a repository that does not exist.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { workspaceCacheDir } from '../../src/cache/location';
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

/** `reposnap ask` in a child process that runs alongside others. */
function askAsync(repo: string, cacheDir: string, question: string, ...extra: string[]) {
  return new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [BIN, 'ask', '--repo', repo, '--model', model, '--cache-dir', cacheDir, '--max-tokens', '8', ...extra, question]);
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

/** Another `reposnap` command (stats, cache clear). */
function reposnap(...args: string[]) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 120_000 });
}

/** The cache's warnings in a command's stderr. */
const cacheWarnings = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('reposnap: cache: '));

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
  // the repository's folder (the cache root also holds model-fingerprints.json)
  const dir = fs.readdirSync(cache).map((d) => path.join(cache, d)).find((d) => fs.statSync(d).isDirectory())!;
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
  const [a, b] = await Promise.all([askAsync(repo, cache, 'Who found the dog?', '--thread', 'x'), askAsync(repo, cache, 'Where did Lily play?', '--thread', 'y')]);
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
  assert.match(text, /questions: 1 full hit, 0 partial hits, 1 miss, 0 continued/);
  assert.match(text, /thread t +1 turn +L=\d+ B=128/);
  assert.match(text, /prefix [0-9a-f]{24} +\d+ tokens/);
  const cleared = spawnSync(process.execPath, [BIN, 'cache', 'clear', '--repo', repo, '--cache-dir', cache], { encoding: 'utf8' });
  assert.equal(cleared.status, 0);
  assert.match(cleared.stdout, /cleared 2 entries/);
  const st = JSON.parse(spawnSync(process.execPath, [BIN, 'stats', '--repo', repo, '--cache-dir', cache, '--json'], { encoding: 'utf8' }).stdout);
  assert.deepEqual(st.entries, []);
});

test('stats counts the prefill saved as reused tokens at the cold prefill time per token of the same key', () => {
  const repo = makeRepo('saved');
  const cache = path.join(tmp, 'cache-saved');
  ask(repo, cache, 'Who found the dog?');
  ask(repo, cache, 'Where did Lily play?');
  const st = JSON.parse(reposnap('stats', '--repo', repo, '--cache-dir', cache, '--json').stdout);
  const [hit, miss] = st.counters.recent;
  assert.equal(miss.outcome, 'miss');
  assert.equal(hit.outcome, 'hit');
  const coldMsPerToken = miss.prefillMs / miss.prefilledTokens;
  assert.ok(Math.abs(st.counters.prefillSavedMs - hit.reusedTokens * coldMsPerToken) < 1e-6 * st.counters.prefillSavedMs);
  // the old definition (reused tokens at the hit's own suffix prefill speed) for comparison
  const oldMs = hit.reusedTokens * (hit.prefillMs / hit.prefilledTokens);
  assert.ok(st.counters.prefillSavedMs < miss.prefillMs, `saved ${st.counters.prefillSavedMs} ms of a ${miss.prefillMs} ms cold prefill (old definition: ${oldMs} ms)`);
  const text = reposnap('stats', '--repo', repo, '--cache-dir', cache).stdout;
  assert.match(text, new RegExp(`~${(st.counters.prefillSavedMs / 1000).toFixed(1).replace('.', '\\.')} s of prefill saved\n`));
});

test('stats of a repository that does not exist fails in one line and creates nothing; neither stats nor clear creates a cache', () => {
  const cache = path.join(tmp, 'cache-nothing');
  const missing = path.join(tmp, 'no-such-repo');
  const r = reposnap('stats', '--repo', missing, '--cache-dir', cache);
  assert.equal(r.status, 2);
  assert.equal(r.stderr.split('\n')[0], `reposnap: error: the repository ${missing} does not exist`);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack');
  assert.equal(r.stdout, '');
  assert.equal(fs.existsSync(cache), false, 'no cache folder was created');
  const repo = makeRepo('no-cache-yet');
  assert.equal(reposnap('stats', '--repo', repo, '--cache-dir', cache).status, 0);
  assert.equal(reposnap('cache', 'clear', '--repo', repo, '--cache-dir', cache).status, 0);
  assert.equal(fs.existsSync(cache), false, 'stats and clear of a repository without a cache create nothing');
  assert.equal(reposnap('cache', 'clear', '--repo', missing, '--cache-dir', cache).status, 2, 'clear of a missing repository without a cache folder');
});

test('index files and stats.json of the wrong shape: ask, stats and cache clear keep working and warn once per file', () => {
  const repo = makeRepo('shapes');
  const cache = path.join(tmp, 'cache-shapes');
  const dir = workspaceCacheDir(cache, repo);
  const shapes: ((x: Record<string, unknown>) => unknown)[] = [
    () => null,
    (x) => ({ ...x, chain: null, turns: null }),
    (x) => ({ ...x, tokens: 'many', L: 'many' }),
    (x) => ({ ...x, id: '../../../../x/y' }),
  ];
  const statsShapes = ['null', '{"recent":null}', '[]', '{"recent":[1]}'];
  /** Real entries (prefix, thread t, stats.json), then each file replaced by a wrong shape of itself. */
  const damage = (i: number) => {
    if (!fs.existsSync(path.join(dir, 'prefix')) || fs.readdirSync(path.join(dir, 'prefix')).length === 0) ask(repo, cache, 'Who found the dog?', '--thread', 't');
    const [prefix] = fs.readdirSync(path.join(dir, 'prefix')).filter((n) => n.endsWith('.json'));
    for (const f of [path.join(dir, 'prefix', prefix!), path.join(dir, 'thread', 't.json')]) {
      fs.writeFileSync(f, JSON.stringify(shapes[i]!(JSON.parse(fs.readFileSync(f, 'utf8')))));
    }
    fs.writeFileSync(path.join(dir, 'stats.json'), statsShapes[i]!);
  };
  for (let i = 0; i < shapes.length; i++) {
    damage(i);
    const st = reposnap('stats', '--repo', repo, '--cache-dir', cache);
    assert.equal(st.status, 0, st.stderr);
    assert.equal(cacheWarnings(st.stderr).length, 3, `shape ${i}: one warning per damaged file:\n${st.stderr}`);
    assert.doesNotMatch(st.stderr, /TypeError|\n\s+at /);
    assert.match(st.stdout, /: 0 entries/);

    damage(i);
    const cleared = reposnap('cache', 'clear', '--repo', repo, '--cache-dir', cache);
    assert.equal(cleared.status, 0, cleared.stderr);
    assert.match(cleared.stdout, /^cleared 0 entries/);
    assert.doesNotMatch(cleared.stderr, /TypeError|\n\s+at /);

    damage(i);
    const r = ask(repo, cache, 'Where did Lily play?', '--thread', 't');
    assert.equal(cacheWarnings(r.stderr).length, 3, `shape ${i}:\n${r.stderr}`);
    assert.equal(r.stats.cache, 'miss', 'the damaged prefix entry was not used');
    const after = JSON.parse(reposnap('stats', '--repo', repo, '--cache-dir', cache, '--json').stdout);
    assert.equal(after.entries.length, 2, 'prefix and thread rebuilt');
    assert.equal(after.entries.find((e: { kind: string }) => e.kind === 'thread').turns.length, 1, 'the damaged transcript started again');
    assert.equal(after.counters.misses, 1, 'counters rebuilt');
  }
});

test('a file where the cache folder belongs: ask answers with one warning, cache clear fails in one line', () => {
  const repo = makeRepo('folder-is-file');
  const cache = path.join(tmp, 'cache-folder-is-file');
  const dir = workspaceCacheDir(cache, repo);
  fs.mkdirSync(cache, { recursive: true });
  fs.writeFileSync(dir, 'not a folder');
  const r = ask(repo, cache, 'Who found the dog?', '--thread', 't');
  assert.equal(r.stats.cache, 'miss');
  assert.equal(cacheWarnings(r.stderr).length, 1, r.stderr);
  const cleared = reposnap('cache', 'clear', '--repo', repo, '--cache-dir', cache);
  assert.equal(cleared.status, 1);
  assert.equal(cleared.stderr, `reposnap: error: cannot clear the cache ${dir}: it is not a folder\n`);
  const st = reposnap('stats', '--repo', repo, '--cache-dir', cache);
  assert.equal(st.status, 0, st.stderr);
  assert.match(st.stdout, /\(disabled\): 0 entries/);
  assert.equal(fs.readFileSync(dir, 'utf8'), 'not a folder', 'the file is left alone');
});

test('a process killed while writing the cache: the next ask takes its lock over at once, caches, and sweeps its temporary file', async () => {
  const repo = makeRepo('killed');
  const cache = path.join(tmp, 'cache-killed');
  const dir = workspaceCacheDir(cache, repo);
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test', 'cache', 'write-and-hang.ts'), dir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => child.stdout.on('data', (d) => String(d).includes('writing') && resolve()));
  child.kill('SIGKILL');
  await once(child, 'exit');
  const temps = () => [dir, path.join(dir, 'prefix'), path.join(dir, 'thread')].flatMap((d) => fs.readdirSync(d).filter((n) => n.endsWith('.tmp')));
  assert.equal(temps().length, 1, 'the killed writer left its temporary file');
  assert.ok(fs.existsSync(`${dir}.lock`), 'and its lock');

  const r = ask(repo, cache, 'Who found the dog?');
  assert.deepEqual(cacheWarnings(r.stderr), [], 'no ELOCKED, caching stays on');
  assert.deepEqual(temps(), [], 'the temporary file was swept');
  assert.equal(fs.existsSync(`${dir}.lock`), false);
  assert.equal(ask(repo, cache, 'Who found the dog?').stats.cache, 'hit', 'the first ask cached its prefix');
});

test("a thread copied from another repository's cache is not continued: one warning, re-snapped from this repository", () => {
  const a = makeRepo('thread-a');
  const cacheA = path.join(tmp, 'cache-thread-a');
  ask(a, cacheA, 'Who found the dog?', '--thread', 'th');
  const b = path.join(tmp, 'thread-b');
  fs.mkdirSync(b);
  fs.writeFileSync(path.join(b, 'a.txt'), STORY.split('. ').reverse().join('. '));
  const cacheB = path.join(tmp, 'cache-thread-b');
  ask(b, cacheB, 'Who found the dog?');
  for (const ext of ['json', 'rsnp']) fs.copyFileSync(path.join(workspaceCacheDir(cacheA, a), 'thread', `th.${ext}`), path.join(workspaceCacheDir(cacheB, b), 'thread', `th.${ext}`));

  const r = ask(b, cacheB, 'What color was the ball?', '--thread', 'th', '--follow-up', 'continue');
  assert.notEqual(r.stats.cache, 'continue', "the other repository's tokens were reused");
  assert.equal(r.stats.cache, 'hit', "this repository's own cached prefix");
  const warnings = cacheWarnings(r.stderr);
  assert.equal(warnings.length, 1, r.stderr);
  assert.match(warnings[0]!, /the compressed cache of thread th does not belong to this repository's current prefix \(/);
  // the answer saved this repository's thread: the next follow-up continues on it, without a warning
  const next = ask(b, cacheB, 'And then?', '--thread', 'th', '--follow-up', 'continue');
  assert.equal(next.stats.cache, 'continue');
  assert.deepEqual(cacheWarnings(next.stderr), []);
});

test('two questions in one thread at once keep both turns', async () => {
  const repo = makeRepo('same-thread');
  const cache = path.join(tmp, 'cache-same-thread');
  const [a, b] = await Promise.all([askAsync(repo, cache, 'Who found the dog?', '--thread', 'same'), askAsync(repo, cache, 'Where did Lily play?', '--thread', 'same')]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  const index = JSON.parse(fs.readFileSync(path.join(workspaceCacheDir(cache, repo), 'thread', 'same.json'), 'utf8'));
  assert.deepEqual(index.turns.map((t: { question: string }) => t.question).sort(), ['Where did Lily play?', 'Who found the dog?']);
  assert.equal(fs.existsSync(path.join(workspaceCacheDir(cache, repo), 'thread', 'same.lock')), false, 'the thread lock was released');
});
