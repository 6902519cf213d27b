/**
 * Private keys of every kind are secrets (issue 29, item 1): Ed25519 and X25519 in PKCS#8, EC in
 * SEC1, encrypted PKCS#8, OpenPGP armored secret keys, wherever they sit (a `.txt`, a template
 * string in `.ts`, indented in a Helm `values.yaml`, a `release.asc`), and they never reach a pack.
 * The keys are generated at run time (node:crypto), so this repository holds none.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findSecret } from '../../src/context/secrets';
import { findPrivateKeyBlocks } from '../../src/context/private-keys';
import { fakePrivateKeys } from './fake-secrets';
import { makeRepo, manifest, pack } from './fixtures';

/** A fresh key of each kind (fakePrivateKeys), by kind. */
const keys = (seed: number): Record<string, string> => fakePrivateKeys(seed);

/** `pem`'s lines, each prefixed with `indent`. */
const indented = (pem: string, indent: string): string => pem.trimEnd().split('\n').map((l) => indent + l).join('\n') + '\n';

/** Every kind the issue lists, in every place it lists, as one file each. */
function hostileFiles(): Record<string, string> {
  const k = keys(7);
  const more = keys(9);
  return {
    'notes/ed25519.txt': `the deploy key:\n${k['Ed25519 PKCS#8']}`,
    'notes/x25519.txt': `x25519:\n${k['X25519 PKCS#8']}`,
    'notes/ed448.txt': k['Ed448 PKCS#8']!,
    'notes/sec1.txt': k['EC SEC1']!,
    'notes/encrypted.txt': k['encrypted PKCS#8']!,
    'src/key.ts': `export const key = \`${more['Ed25519 PKCS#8']}\`;\n`,
    'src/key-escaped.ts': `export const key = ${JSON.stringify(more['X25519 PKCS#8'])};\n`,
    'charts/app/values.yaml': `tls:\n  key: |\n${indented(more['EC SEC1']!, '    ')}`,
    'charts/app/values-ed.yaml': `signing:\n  key: |\n${indented(k['Ed25519 PKCS#8']!, '    ')}`,
    'release.asc': k['OpenPGP secret key']!,
    'docs/gpg.md': `Import it:\n\n${indented(more['OpenPGP secret key']!, '    ')}`,
  };
}

test('every private key kind is a secret, wherever it sits: Ed25519/X25519/Ed448 PKCS#8, SEC1, encrypted PKCS#8, PGP, indented, in a template string, JSON-escaped', async () => {
  for (const [name, text] of Object.entries(hostileFiles())) {
    const finding = await findSecret(text, name);
    assert.ok(finding !== undefined, `${name}: not found`);
    assert.match(finding.rule, /^(privatekey|private-key-block)$/, name);
    const beginLine = text.split('\n').findIndex((l) => l.includes('-----BEGIN')) + 1;
    assert.equal(finding.line, beginLine, name);
  }
});

test('a pack leaves every such file out as secret, and no key body reaches it', async (t) => {
  const files = hostileFiles();
  const root = await makeRepo(t, { ...files, 'src/app.ts': 'export const app = 1;\n' });
  const result = await pack(root, { tokenBudget: 100_000 });
  assert.deepEqual(manifest(result).files, ['src/app.ts']);
  assert.deepEqual(
    manifest(result).skipped.sort(),
    Object.keys(files).map((p) => [p, 'secret']).sort(),
  );
  const everything = JSON.stringify({ ...result, secrets: undefined });
  assert.ok(!everything.includes('PRIVATE KEY'), 'an armor line reached the pack');
});

test('code that builds or parses a PEM, and placeholders, are not keys', async () => {
  const begin = '-----BEGIN PRIV' + 'ATE KEY-----';
  const end = '-----END PRIV' + 'ATE KEY-----';
  const clean: Record<string, string> = {
    'src/pem.ts': `const pem = "${begin}\\n" + body + "\\n${end}";\n`,
    'src/re.ts': `const re = /${begin}([\\s\\S]*?)${end}/;\n`,
    'docs/a.md': `${begin}\nMIIE...\n${end}\n`,
    'docs/b.md': `${begin}\n<your key here>\n${end}\n`,
    'docs/c.md': `${begin}\n${'A'.repeat(64)}\n${end}\n`,
    'docs/d.md': `Paste a block that starts with ${begin} into the field.\n`,
  };
  for (const [name, text] of Object.entries(clean)) assert.equal(await findSecret(text, name), undefined, name);
});

test('findPrivateKeyBlocks spans the armor line to the end line and names the label', () => {
  const sec = keys(3)['EC SEC1']!;
  const text = `a\n  ${indented(sec, '  ').trimStart()}b\n`;
  const blocks = findPrivateKeyBlocks(text);
  assert.equal(blocks.length, 1);
  assert.equal(blocks[0]!.label, 'EC PRIV' + 'ATE KEY');
  assert.equal(text.slice(blocks[0]!.start, blocks[0]!.start + 10), '-----BEGIN');
  assert.ok(text.slice(0, blocks[0]!.end).endsWith('-----END EC PRIV' + 'ATE KEY-----'));
});
