/**
 * A file a question quotes outside the pack (an explanation's document) is decided on as the
 * packer decides on its own files: a credential file by name (the secret excludes, with the
 * caller's negations), or a secret anywhere in its whole current text; the pack's decision for
 * that path is reused for the same text and renewed for an edited one.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { quotedFileRefusal } from '../../src/context/quoted';
import { FileSecretVerdicts } from '../../src/context/secrets';
import { randomChars } from './fake-secrets';
import { makeRepo, pack } from './fixtures';

const password = `hunter2-${randomChars(51, 12)}`;
const leaky = `export function connect() {\n  return open();\n}\nconst DB_PASSWORD = "${password}";\n`;

test('credential files by name are refused with the secret exclude that names them or a folder above; a negation brings one back', async () => {
  const secrets = new FileSecretVerdicts();
  const harmless = 'A=1\n';
  assert.equal(await quotedFileRefusal({ path: '.env', text: harmless }, { secrets }), "secret exclude '.env'");
  assert.equal(await quotedFileRefusal({ path: 'deploy/Prod.ENV', text: harmless }, { secrets }), "secret exclude '*.env'");
  assert.equal(await quotedFileRefusal({ path: 'home/.ssh/config', text: harmless }, { secrets }), "secret exclude '.ssh/'");
  assert.equal(await quotedFileRefusal({ path: 'certs/server.pem.bak', text: harmless }, { secrets }), "secret exclude '*.pem.bak'");
  // outside the repository: matched by its file name alone
  assert.equal(await quotedFileRefusal({ path: '/home/me/project/.env.local', text: harmless }, { secrets }), "secret exclude '.env.*'");
  assert.equal(await quotedFileRefusal({ path: '../other/.netrc', text: harmless }, { secrets }), "secret exclude '.netrc'");
  assert.equal(await quotedFileRefusal({ path: '.env.example', text: harmless }, { secrets, exclude: ['!.env.example'] }), undefined);
  assert.equal(await quotedFileRefusal({ path: 'src/env.ts', text: harmless }, { secrets }), undefined);
  // a non-secret exclude does not refuse: the file is only left out of the pack
  assert.equal(await quotedFileRefusal({ path: 'dist/a.js', text: harmless }, { secrets, exclude: ['dist/'] }), undefined);
});

test('a file with a secret anywhere in its current text is refused with the rule and where, never the value; a disabled decision refuses nothing', async () => {
  const secrets = new FileSecretVerdicts();
  const refusal = await quotedFileRefusal({ path: 'src/db.ts', text: leaky }, { secrets });
  assert.equal(refusal, 'generic-credential secret at line 4, column 22 (generic credential assignment)');
  assert.ok(!refusal.includes(password));
  assert.equal(await quotedFileRefusal({ path: 'src/ok.ts', text: 'export const ok = 1;\n' }, { secrets }), undefined);
  const off = new FileSecretVerdicts(false);
  assert.equal(await quotedFileRefusal({ path: '.env', text: leaky }, { secrets: off }), undefined);
});

test("the pack's own decision is reused for the file on disk, and an unsaved edit that adds a secret is decided on anew", async (t) => {
  const root = await makeRepo(t, { 'src/db.ts': 'export function connect() {\n  return open();\n}\n', 'src/main.ts': 'export const main = 1;\n' });
  const packed = await pack(root);
  assert.deepEqual(packed.files.map((f) => f.path), ['src/db.ts', 'src/main.ts']);
  const disk = 'export function connect() {\n  return open();\n}\n';
  assert.equal(await quotedFileRefusal({ path: 'src/db.ts', text: disk }, { secrets: packed.secrets }), undefined);
  assert.equal(await quotedFileRefusal({ path: 'src/db.ts', text: leaky }, { secrets: packed.secrets }), 'generic-credential secret at line 4, column 22 (generic credential assignment)');
});
