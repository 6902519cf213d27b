/**
 * An explanation quotes code from the editor, outside the pack: askRepository refuses it, before
 * anything is prefilled or saved, when the packer would leave the quoted file out for a secret;
 * the same code from a clean file is answered.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { CacheStore } from '../../src/cache/store';
import { SecretRefusedError } from '../../src/context/errors';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { askRepository, DEFAULT_SNAP, type AskEvent } from '../../src/pipeline/ask';
import { randomChars } from '../context/fake-secrets';
import { checkTinyModel } from '../helpers/models';

let model: EngineModel;
let tmp: string;
before(async () => {
  model = await loadModel(checkTinyModel());
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-quoted-ask-'));
});
after(() => {
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Every file under `dir`, relative, sorted. */
function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[]).filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name))).sort();
}

test('an explanation of a clean function in a file with a secret at its bottom is refused before prefill, and nothing is cached; a clean file is explained', async () => {
  const repo = path.join(tmp, 'repo');
  fs.mkdirSync(path.join(repo, 'src'), { recursive: true });
  const fn = 'export function connect() {\n  return open();\n}\n';
  const db = `${fn}const DB_PASSWORD = "hunter2-${randomChars(61, 12)}";\n`;
  fs.writeFileSync(path.join(repo, 'src', 'db.ts'), db);
  fs.writeFileSync(path.join(repo, 'src', 'main.ts'), 'export const main = 1;\n');
  const cacheDir = path.join(tmp, 'cache');
  const store = CacheStore.open(cacheDir, { onWarning: (m) => assert.fail(`unexpected cache warning: ${m}`) });
  const question = `Explain \`connect\` in src/db.ts (lines 1-3)\n\n\`\`\`typescript\n${fn}\`\`\``;
  const events: AskEvent['kind'][] = [];
  const ask = (quoted: { path: string; text: string }) =>
    askRepository({ repo, model, store, question, snap: DEFAULT_SNAP, contextSize: 1024, maxTokens: 2, session: { threads: 2 }, threadId: 'explain:1', quoted }, (e) => events.push(e.kind));
  await assert.rejects(ask({ path: 'src/db.ts', text: db }), (e: Error) => {
    assert.ok(e instanceof SecretRefusedError);
    assert.equal(e.message.split(':')[0], 'src/db.ts is kept out of the prompt (generic-credential secret at line 4, column 22 (generic credential assignment))');
    return true;
  });
  assert.ok(!events.includes('packed') && !events.includes('token'), 'refused before the prompt was built');
  assert.deepEqual(filesUnder(cacheDir).filter((f) => !f.endsWith('.lock')), [], 'nothing saved: no prefix, no thread');
  // an unsaved edit that removes the secret is explained (the quoted text, not the disk's, is decided on)
  const stats = await ask({ path: 'src/db.ts', text: fn });
  await store.flush();
  assert.equal(stats.decodeTokens, 2);
  assert.ok(events.includes('packed'));
});
