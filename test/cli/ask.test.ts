/**
 * `reposnap ask` end to end, as a user runs it: a child process on this project's own source
 * tree with the tiny model. Bad input gets one line on stderr and a non-zero exit, never a stack.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { checkTinyModel } from '../helpers/models';
import { loadAddon } from '../../src/engine/native';
import { isQuietNote } from '../../src/engine/backends';

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'reposnap.js');

function reposnap(...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, REPOSNAP_CACHE_DIR: path.join(os.tmpdir(), 'reposnap-test-cache') } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Parses `stats: k=v …` into a record. */
function parseStats(stderr: string): Record<string, string> {
  const line = stderr.split('\n').find((l) => l.startsWith('stats: '));
  assert.ok(line, `no stats line in:\n${stderr}`);
  return Object.fromEntries(line.slice('stats: '.length).split(' ').map((kv) => kv.split('=') as [string, string]));
}

test('ask answers a question about this repository with SnapKV active (B < L)', () => {
  const model = checkTinyModel();
  const r = reposnap('ask', '--no-cache', '--repo', ROOT, '--model', model, '--max-tokens', '32', 'Where is the SnapKV budget chosen?');
  assert.equal(r.code, 0, r.stderr);
  assert.ok(r.stdout.trim().length > 0, 'empty answer');
  const s = parseStats(r.stderr);
  const L = Number(s.L);
  const B = Number(s.B);
  assert.ok(L > 1024, `L = ${L}: the packed repository should fill most of the 2048-token context`);
  assert.equal(B, 1024, 'default budget');
  assert.ok(B < L);
  assert.equal(s.snap, 'on');
  assert.ok(Number(s.files) > 0);
  assert.equal(s.ratio, (B / L).toFixed(2));
  const [kvBefore, kvAfter] = s.kv_bytes!.split('->').map(Number);
  assert.equal(kvAfter! / kvBefore!, B / L, 'KV bytes shrink by B/L');
});

test('ask --no-snap answers with full attention (B = L), --json prints one JSON object', () => {
  const model = checkTinyModel();
  const r = reposnap('ask', '--no-cache', '--repo', path.join(ROOT, 'src'), '--model', model, '--max-tokens', '8', '--no-snap', '--json', '--verbose', 'What does the packer do?');
  assert.equal(r.code, 0, r.stderr);
  const json = JSON.parse(r.stderr.trim().split('\n').pop()!);
  assert.equal(json.snap, false);
  assert.equal(json.B, json.L);
  assert.equal(json.decodeTokens, 8);
  // the engine it ran on, in the JSON and (--verbose) in one line: the CPU variant the addon reports
  const variant = loadAddon().backendLoad!().cpuVariant;
  assert.ok(variant.length > 0);
  // (a Vulkan module in native/build/gpu finding no device, as on this machine once the Vulkan lane built one, is a quiet note)
  const quiet = loadAddon().backendLoad!().notes.filter((n) => isQuietNote(n, 'auto'));
  assert.deepEqual(json.engine, { build: 'portable', cpuVariant: variant, gpus: [], backends: ['RPC', 'CPU'], notes: [], quietNotes: quiet });
  const notUsed = quiet.length > 0 ? `; not used: ${quiet.join('; ')}` : '';
  assert.ok(r.stderr.split('\n').includes(`reposnap: engine: portable, CPU variant ${variant}; no GPU; backends RPC, CPU${notUsed}`), r.stderr);
});

test('ask --allocation adakv: same total budget, the sequence holds the largest per-head budget in cells', () => {
  const model = checkTinyModel();
  const r = reposnap('ask', '--no-cache', '--repo', ROOT, '--model', model, '--max-tokens', '8', '--allocation', 'adakv', 'Where is the SnapKV budget chosen?');
  assert.equal(r.code, 0, r.stderr);
  const s = parseStats(r.stderr);
  const L = Number(s.L);
  const C = Number(s.B);
  assert.equal(s.snap, 'on');
  // C = the largest per-head budget: at least the uniform B, at most L (one head may keep every prefix key)
  assert.ok(C >= 1024 && C <= L, `cells held ${C}: between the uniform budget and L = ${L}`);
  const [kvBefore, kvAfter] = s.kv_bytes!.split('->').map(Number);
  assert.equal(kvAfter! / kvBefore!, C / L, 'KV bytes follow the cells held');
});

test('a question with nothing of the repository in the prompt is answered with a notice saying so', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-cli-'));
  try {
    fs.writeFileSync(path.join(tmp, 'a.ts'), 'export const a = 1;\n');
    fs.writeFileSync(path.join(tmp, 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    // an include that matches nothing: a.ts is ignored (never read), logo.png too
    const r = reposnap('ask', '--repo', tmp, '--model', checkTinyModel(), '--no-cache', '--context-size', '512', '--max-tokens', '2', '--include', 'src/', 'q');
    assert.equal(r.code, 0, r.stderr);
    assert.ok(
      r.stderr.includes(`reposnap: nothing of the repository is in the prompt (0 left out, 2 ignored; --show-context or 'reposnap pack --list' says why): the answer cannot come from it\n`),
      r.stderr,
    );
    // a file in the prompt: no notice
    const ok = reposnap('ask', '--repo', tmp, '--model', checkTinyModel(), '--no-cache', '--context-size', '512', '--max-tokens', '2', 'q');
    assert.equal(ok.code, 0, ok.stderr);
    assert.ok(!ok.stderr.includes('nothing of the repository'), ok.stderr);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('bad input: one-line errors and non-zero exits, no stack traces', () => {
  const model = checkTinyModel();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-cli-'));
  try {
    const notModel = path.join(tmp, 'not-a-model.gguf');
    fs.writeFileSync(notModel, 'hello, I am text');
    const truncated = path.join(tmp, 'truncated.gguf');
    fs.writeFileSync(truncated, fs.readFileSync(model).subarray(0, 4096));
    // cut inside the tensor data: the whole header, then half of the file
    const cutData = path.join(tmp, 'cut-data.gguf');
    const whole = fs.readFileSync(model);
    fs.writeFileSync(cutData, whole.subarray(0, whole.length >> 1));
    const cases: [string[], number, RegExp][] = [
      [['ask', '--repo', path.join(tmp, 'missing'), '--model', model, 'q'], 2, /repository .* does not exist/],
      [['ask', '--repo', tmp, '--model', path.join(tmp, 'missing.gguf'), 'q'], 2, /model file .* does not exist/],
      [['ask', '--repo', tmp, '--model', notModel, 'q'], 1, /not a GGUF model file/],
      // the tiny model's entry 0, tokenizer.ggml.tokens, is an array of 512 strings whose count ends at byte 24 + 8 + 21 + 4 + 4 + 8 = 69
      [['ask', '--repo', tmp, '--model', truncated, 'q'], 1, /is damaged or truncated: metadata entry 0 \("tokenizer\.ggml\.tokens"\) announces 512 values of at least 8 bytes, more than the 4027 bytes left after byte 69 \(an interrupted download\? fetch it again\)/],
      [['ask', '--repo', tmp, '--model', cutData, 'q'], 1, /^reposnap: error: '.*cut-data\.gguf' is truncated: its tensor '[^']+' starts at byte \d+ but the file has \d+ bytes/],
      // the answer room is an eighth of the context; at 64 tokens no answer room leaves the tiny
      // model's prompt (a 186-token head, 21 for the question 'q') its place: only a larger context helps
      [['ask', '--repo', tmp, '--model', model, '--context-size', '64', 'q'], 1, /^reposnap: error: the context \(64 tokens\) is too small for this model's prompt: the prompt needs at least 207 tokens \(its head, the system prompt and chat template, takes 186; the question 21\), besides the answer's room \(8 tokens by default, --answer-room\): raise --context-size to 236 or more\n/],
      [['ask', '--repo', tmp, '--model', model, '--context-size', '64', '--answer-room', '60', 'q'], 1, /^reposnap: error: the context \(64 tokens\) is too small for this model's prompt: .*, besides --answer-room 60: raise --context-size to 267 or more\n/],
      // at most half of the context
      [['ask', '--repo', tmp, '--model', model, '--context-size', '2048', '--answer-room', '1500', 'q'], 1, /^reposnap: error: --answer-room 1500 is more than half of the context \(2048 tokens; the prompt keeps the other half\): lower --answer-room to 1024 or less, or raise --context-size to 3000 or more\n/],
      [['ask', '--repo', tmp, '--model', model, '--context-size', '266', '--answer-room', '60', 'q'], 1, /: shorten it, lower --answer-room to 59 or less, or raise --context-size to 267 or more\n/],
      [['ask', '--repo', tmp, '--model', model, '--answer-room', 'lots', 'q'], 2, /--answer-room must be an integer/],
      // --thread and --threads are one letter apart: each refuses the other's shape, naming it
      [['ask', '--repo', tmp, '--model', model, '--thread', '4', 'q'], 2, /--thread 4: a thread id of digits only looks like a thread count; for the number of CPU threads use --threads 4/],
      [['ask', '--repo', tmp, '--model', model, '--threads', 'review', 'q'], 2, /--threads must be a number of CPU threads \(got 'review'\); to name a conversation use --thread review/],
      [['ask', '--repo', tmp, '--model', model, '--kernel', '4', 'q'], 2, /--kernel must be odd/],
      [['ask', '--repo', tmp, '--model', model, '--allocation', 'fair', 'q'], 2, /--allocation must be uniform, adakv or pyramid/],
      [['ask', '--repo', tmp, '--model', model], 2, /needs a question/],
      // an unquoted glob the shell expanded: the first name is the glob, the rest would be the question
      [['ask', '--repo', tmp, '--model', model, '--include', 'a.py', 'b.py', 'c.py', 'what does gcd return?'], 2, /^reposnap: error: ask takes one question, got 3 arguments \('b\.py', 'c\.py', 'what does gcd return\?'\): quote the question, and quote globs so that the shell does not expand them \(--include '\*\.py'\)\n/],
      [['ask', '--repo', tmp, '--model', model, 'q1', 'q2', 'q3', 'q4', 'q5'], 2, /got 5 arguments \('q1', 'q2', 'q3', 'q4', …\)/],
      [['ask', '--repo', tmp, '--model', model, '--follow-up', 'continue', 'q'], 2, /^reposnap: error: --follow-up needs --thread <id>: it says how the next question of a thread is answered\n/],
      [['ask', '--repo', tmp, '--model', model, '--thread', 't1', '--follow-up', 'again', 'q'], 2, /--follow-up must be resnap or continue \(got 'again'\)/],
      [['ask', '--repo', tmp, '--model', model, '--no-cache', '--thread', 't1', 'q'], 2, /--thread needs the cache, where its turns are kept: drop --no-cache/],
      [['frobnicate'], 2, /unknown command/],
      // every command's flags go through one strict parser (src/cli/usage.ts parseCommand)
      [['ask', '--repo', tmp, '--model', model, '--frob', 'q'], 2, /Unknown option '--frob'/],
      [['pack', '--repo', tmp, '--frob'], 2, /Unknown option '--frob'/],
      [['stats', '--repo', tmp, '--frob'], 2, /Unknown option '--frob'/],
      [['rpc-server', '--port'], 2, /Option '--port <value>' argument missing/],
      [['ask', '--repo', tmp, '--model', model, '--model-sha256', 'abc', 'q'], 2, /--model-sha256 must be 64 hex digits/],
      [['ask', '--repo', tmp, '--model', model, '--model-sha256', 'f'.repeat(64), 'q'], 2, /does not match the expected SHA-256/],
    ];
    for (const [args, code, pattern] of cases) {
      const r = reposnap(...args);
      assert.equal(r.code, code, `${args.join(' ')}: exit ${r.code}\n${r.stderr}`);
      assert.match(r.stderr, pattern);
      assert.doesNotMatch(r.stderr, /\n\s+at /, `stack trace for ${args.join(' ')}`);
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

/** A repository of 60 small files: more than a 2,048-token context holds, so the budget decides what is packed. */
function manyFilesRepo(dir: string): string {
  const repo = path.join(dir, 'repo');
  fs.mkdirSync(path.join(repo, 'src'), { recursive: true });
  for (let i = 0; i < 60; i++) {
    fs.writeFileSync(path.join(repo, 'src', `part${i}.ts`), `/** Part ${i} of the walk. */\nexport function part${i}(x: number): number {\n  return x * ${i} + ${i * 7};\n}\n`);
  }
  return repo;
}

test('the sizes an --answer-room refusal advises are the ones that work: one token less is refused', () => {
  const model = checkTinyModel();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-cli-'));
  try {
    fs.writeFileSync(path.join(tmp, 'a.ts'), 'export const a = 1;\n');
    const ask = (...flags: string[]) => reposnap('ask', '--repo', tmp, '--model', model, '--no-cache', '--max-tokens', '1', ...flags, 'q');
    // the numbers of the messages above: --context-size 236 (default room), 267 with --answer-room 60, --answer-room 59 at 266, 1024 at 2048
    for (const [ok, refused] of [
      [['--context-size', '236'], ['--context-size', '235']],
      [['--context-size', '267', '--answer-room', '60'], ['--context-size', '266', '--answer-room', '60']],
      [['--context-size', '266', '--answer-room', '59'], ['--context-size', '266', '--answer-room', '60']],
      [['--context-size', '2048', '--answer-room', '1024'], ['--context-size', '2048', '--answer-room', '1025']],
    ] as const) {
      const yes = ask(...ok);
      assert.equal(yes.code, 0, `${ok.join(' ')}: ${yes.stderr}`);
      const no = ask(...refused);
      assert.equal(no.code, 1, `${refused.join(' ')}: ${no.stderr}`);
      assert.match(no.stderr, /--answer-room/);
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('a second ask with another --max-tokens restores the first one\'s prefix; --cache-dir holds the model fingerprints; a failed ask leaves no cache folder', () => {
  const model = checkTinyModel();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-cli-'));
  try {
    const repo = manyFilesRepo(tmp);
    const named = path.join(tmp, 'named');
    const defaultRoot = path.join(tmp, 'default-root');
    const run = (...args: string[]) => {
      const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, REPOSNAP_CACHE_DIR: defaultRoot } });
      return { code: r.status, stdout: r.stdout, stderr: r.stderr };
    };
    // smallest-first: the question part is the question alone (auto would pack this repository
    // ranked and put the retrieval section there too; test/pipeline/auto-packing.test.ts)
    const first = run('ask', '--repo', repo, '--model', model, '--cache-dir', named, '--packing', 'smallest-first', '--max-tokens', '400', 'Which part adds seven?');
    assert.equal(first.code, 0, first.stderr);
    const second = run('ask', '--repo', repo, '--model', model, '--cache-dir', named, '--packing', 'smallest-first', '--max-tokens', '8', 'Which part adds seven?');
    assert.equal(second.code, 0, second.stderr);
    const [a, b] = [parseStats(first.stderr), parseStats(second.stderr)];
    assert.equal(a.cache, 'miss');
    assert.ok(Number(a.skipped) > 0, 'the budget left files out');
    assert.equal(b.cache, 'hit');
    assert.equal(b.files, a.files);
    assert.equal(b.L, a.L);
    assert.ok(Number(b.prefilled) < 100, `prefilled ${b.prefilled} of ${b.L}: only the question part`);
    // everything written for the cache is under the folder named
    assert.deepEqual(fs.readdirSync(named).sort(), [path.basename(fs.readdirSync(named).find((n) => n.startsWith('repo-'))!), 'model-fingerprints.json'].sort());
    const memo = JSON.parse(fs.readFileSync(path.join(named, 'model-fingerprints.json'), 'utf8'));
    assert.equal(memo.entries[0].path, model);
    assert.equal(fs.existsSync(defaultRoot), false, 'nothing under the default cache root');
    const stats = run('stats', '--repo', repo, '--cache-dir', named);
    assert.match(stats.stdout, /questions: 1 full hit, 0 partial hits, 1 miss,/);

    // a model that does not load, and a cache that was never written: no folder for the repository
    const notModel = path.join(tmp, 'not-a-model.gguf');
    fs.writeFileSync(notModel, 'hello, I am text');
    const other = path.join(tmp, 'other');
    const failed = run('ask', '--repo', repo, '--model', notModel, '--cache-dir', other, 'q');
    assert.equal(failed.code, 1);
    assert.equal(fs.existsSync(other) && fs.readdirSync(other).length > 0, false, `left behind: ${fs.existsSync(other) ? fs.readdirSync(other).join(', ') : ''}`);
    assert.match(run('stats', '--repo', repo, '--cache-dir', other).stdout, /^cache .*: none \(nothing is cached for this repository\)\n$/);
    // --no-cache writes nothing at all, not even the model's fingerprint
    const none = run('ask', '--repo', repo, '--model', model, '--no-cache', '--max-tokens', '4', 'q');
    assert.equal(none.code, 0, none.stderr);
    assert.equal(fs.existsSync(defaultRoot), false, '--no-cache wrote under the default cache root');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('Ctrl+C during the answer: "cancelled" on stderr, and the answer\'s line on stdout is ended first', async () => {
  const model = checkTinyModel();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-cli-'));
  try {
    const repo = manyFilesRepo(tmp);
    // the story model runs on past 1,000 tokens here without an end-of-generation token
    const child = spawn(process.execPath, [BIN, 'ask', '--repo', repo, '--model', model, '--no-cache', '--max-tokens', '1000', '--answer-room', '1000', 'Which part adds seven?']);
    let stdout = '';
    let stderr = '';
    let interrupted = false;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
      // the first piece of the answer: interrupt while the model is still writing it
      if (!interrupted && stdout.trim().length > 0) {
        interrupted = true;
        child.kill('SIGINT');
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const [code] = (await once(child, 'close')) as [number | null];
    assert.ok(interrupted, 'the answer started');
    assert.equal(code, 130, stderr);
    assert.equal(stderr.split('\n').at(-2), 'reposnap: error: cancelled');
    assert.doesNotMatch(stderr, /^stats: /m, 'no stats for a cancelled answer');
    assert.ok(stdout.endsWith('\n'), `the answer's last line is ended: ${JSON.stringify(stdout.slice(-40))}`);
    assert.ok(!stdout.endsWith('\n\n') || stdout.trim().length === 0, 'one newline, no blank line');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('every command prints its usage with --help and -h, on stdout, exit 0 (stats had none: --help was an unknown option)', () => {
  for (const [command, usage] of [['ask', 'usage: reposnap ask '], ['pack', 'usage: reposnap pack '], ['stats', 'usage: reposnap stats [--repo <dir>] [--cache-dir <dir>] [--json]\n'], ['cache', 'usage: reposnap cache clear ']] as const) {
    for (const flag of ['--help', '-h']) {
      const r = reposnap(command, flag);
      assert.equal(r.code, 0, `${command} ${flag}: exit ${r.code}\n${r.stderr}`);
      assert.ok(r.stdout.startsWith(usage), `${command} ${flag}: ${r.stdout.slice(0, 80)}`);
      assert.equal(r.stderr, '', `${command} ${flag}`);
    }
  }
});

test('a cache folder other users can write to is refused with one warning, and the answer still comes, uncached (issue 29, item 4)', () => {
  const model = checkTinyModel();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-cli-'));
  try {
    const repo = manyFilesRepo(tmp);
    const shared = path.join(tmp, 'shared-cache');
    fs.mkdirSync(shared);
    fs.chmodSync(shared, 0o777);
    const ask = () => reposnap('ask', '--repo', repo, '--model', model, '--cache-dir', shared, '--packing', 'smallest-first', '--max-tokens', '4', 'Which part adds seven?');
    for (let i = 0; i < 2; i++) {
      const r = ask();
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr.split('\n').filter((l) => l.includes('refusing the cache folder')).length, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`${shared} is writable by other users \\(mode 0777\\)`));
      assert.equal(parseStats(r.stderr).cache, 'miss', 'nothing was saved or read');
    }
    // the repository's folder is made (0700, before the check) but nothing is written in it, and no fingerprint memo
    const inside = fs.readdirSync(shared);
    assert.ok(!inside.includes('model-fingerprints.json'), inside.join(', '));
    for (const n of inside) for (const kind of ['prefix', 'thread']) assert.deepEqual(fs.readdirSync(path.join(shared, n, kind)).filter((f) => !f.endsWith('.lock')), [], `${n}/${kind}`);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
