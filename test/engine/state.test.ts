/**
 * State files: a saved sequence (uncompressed or compacted) reloads into a fresh session and
 * decodes identically; truncated, corrupted and foreign files are refused with a clear error
 * before llama.cpp sees them, and the session stays usable.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { createSession, type EngineSession } from '../../src/engine/session';
import { decodeStateFile, encodeStateFile, StateFileError } from '../../src/engine/state-file';
import { checkTinyModel, STORY } from '../helpers/models';

let model: EngineModel;
let prompt: number[];
let continuation: number[];
let dir: string;

before(async () => {
  model = await loadModel(checkTinyModel());
  prompt = Array.from(model.tokenize(STORY, { addSpecial: true }));
  continuation = Array.from(model.tokenize(' Lily and the dog ran to the big tree.'));
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-state-'));
});

after(() => {
  fs.rmSync(dir, { recursive: true, force: true });
  model.dispose();
});

const opts = { contextSize: 1024, snapWindow: 16, threads: 1, flashAttention: 'off' as const, kvCacheType: 'f16' as const };

async function continueWith(s: EngineSession): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for (const t of continuation) out.push(Buffer.from((await s.step(t)).buffer));
  return out;
}

for (const compacted of [false, true]) {
  test(`a ${compacted ? 'compacted' : 'uncompressed'} sequence reloads and decodes bit-identically`, async () => {
    const file = path.join(dir, `seq-${compacted}.rsnp`);
    const a = createSession(model, opts);
    const b = createSession(model, opts);
    try {
      await a.prefill(prompt);
      if (compacted) assert.equal((await a.snap({ window: 16, budget: 100, kernel: 5 })).B, 100);
      const bytes = await a.saveState(file);
      assert.equal(fs.statSync(file).size, bytes);

      const header = await b.loadState(file);
      assert.equal(header.nPast, prompt.length);
      assert.equal(header.cells, compacted ? 100 : prompt.length);
      assert.deepEqual(header.snap === null, !compacted);
      assert.equal(b.position, prompt.length);
      assert.deepEqual(b.tokens, prompt);
      assert.equal(b.stats().cells, compacted ? 100 : prompt.length);

      const expected = await continueWith(a);
      const got = await continueWith(b);
      for (let i = 0; i < expected.length; i++) assert.ok(expected[i]!.equals(got[i]!), `token ${i} differs after reload`);
    } finally {
      a.dispose();
      b.dispose();
    }
  });
}

test('truncated, corrupted and foreign state files are refused; the session stays usable', async () => {
  const file = path.join(dir, 'good.rsnp');
  const a = createSession(model, opts);
  await a.prefill(prompt.slice(0, 64));
  await a.saveState(file);
  a.dispose();
  const good = fs.readFileSync(file);

  const variants: [string, Buffer, RegExp][] = [];
  variants.push(['truncated', good.subarray(0, good.length - 1000), /checksum mismatch|truncated|past the end/]);
  variants.push(['empty', Buffer.alloc(0), /truncated/]);
  const flipped = Buffer.from(good);
  flipped[Math.floor(flipped.length / 2)]! ^= 0x40;
  variants.push(['corrupted', flipped, /checksum mismatch/]);
  const foreign = decodeStateFile(good);
  variants.push(['other model', encodeStateFile({ ...foreign.header, model: 'f'.repeat(64) }, foreign.tokens, foreign.payload), /another model/]);
  variants.push(['other engine', encodeStateFile({ ...foreign.header, engine: '0.0.0+000000000000' }, foreign.tokens, foreign.payload), /another engine version/]);
  // checksum-valid files whose header parses but has the wrong shape (a writer's bug, a crafted file)
  variants.push(['header null', encodeStateFile(null as never, foreign.tokens, foreign.payload), /header of the wrong shape/]);
  variants.push(['snap of the wrong shape', encodeStateFile({ ...foreign.header, snap: { L: 'many' } as never }, foreign.tokens, foreign.payload), /header of the wrong shape/]);
  variants.push(['nPast missing', encodeStateFile({ ...foreign.header, nPast: undefined } as never, foreign.tokens, foreign.payload), /header of the wrong shape/]);
  variants.push(['not ours', Buffer.from('GGUF this is not a state file at all, but long enough to have a header and checksum'), /bad magic/]);
  // a checksum-valid file whose llama.cpp payload is garbage: llama.cpp itself must refuse it
  variants.push(['garbage payload', encodeStateFile(foreign.header, foreign.tokens, Buffer.alloc(foreign.payload.length, 7)), /rejected|failed/]);

  for (const [name, bytes, pattern] of variants) {
    const f = path.join(dir, `${name.replace(/ /g, '-')}.rsnp`);
    fs.writeFileSync(f, bytes);
    const s = createSession(model, opts);
    try {
      await assert.rejects(s.loadState(f), (e: Error) => e instanceof StateFileError && pattern.test(e.message), name);
      assert.equal(s.position, 0, `${name}: nothing loaded`);
      assert.equal(s.stats().cells, 0, `${name}: no cells left behind`);
      await s.prefill(prompt.slice(0, 16));
      assert.equal(s.stats().cells, 16, `${name}: the session is usable after the refusal`);
    } finally {
      s.dispose();
    }
  }

  const other = createSession(model, { ...opts, kvCacheType: 'f32' });
  try {
    await assert.rejects(other.loadState(file), /another typeK/);
  } finally {
    other.dispose();
  }
});
