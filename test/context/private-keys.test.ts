/**
 * Private keys of every kind are secrets (issue 29, item 1): Ed25519 and X25519 in PKCS#8, EC in
 * SEC1, encrypted PKCS#8, OpenPGP armored secret keys, wherever they sit (a `.txt`, a template
 * string in `.ts`, indented in a Helm `values.yaml`, a `release.asc`), and they never reach a pack.
 * The keys are generated at run time (node:crypto), so this repository holds none.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { findSecret } from '../../src/context/secrets';
import { findPrivateKeyBlocks } from '../../src/context/private-keys';
import { randomChars } from './fake-secrets';
import { makeRepo, manifest, pack } from './fixtures';

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** A PKCS#8 PEM of a fresh key of `type`. */
function pkcs8(type: 'ed25519' | 'x25519' | 'ed448'): string {
  return crypto.generateKeyPairSync(type as 'ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
}

/** A SEC1 (`EC PRIVATE KEY`) PEM of a fresh P-256 key. */
function sec1(): string {
  return crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'sec1', format: 'pem' }) as string;
}

/** An encrypted PKCS#8 PEM (`ENCRYPTED PRIVATE KEY`) of a fresh Ed25519 key. */
function encryptedPkcs8(): string {
  return crypto.generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'correct horse' }) as string;
}

/**
 * An OpenPGP armored secret key as `gpg --armor --export-secret-keys` writes it (RFC 4880 §6.2):
 * the armor line, a `Comment:` header, a blank line, 64-character base64 lines starting `lQ`
 * (a secret-key packet's tag), a `=XXXX` checksum and the end line.
 */
function pgpSecretKey(seed: number): string {
  const body = ('lQ' + randomChars(seed, 700, BASE64)).match(/.{1,64}/g)!.join('\n');
  const label = 'PGP PRIV' + 'ATE KEY BLOCK';
  return `-----BEGIN ${label}-----\nComment: demo\n\n${body}\n=${randomChars(seed + 1, 4, BASE64)}\n-----END ${label}-----\n`;
}

/** `pem`'s lines, each prefixed with `indent`. */
const indented = (pem: string, indent: string): string => pem.trimEnd().split('\n').map((l) => indent + l).join('\n') + '\n';

/** Every kind the issue lists, in every place it lists, as one file each. */
function hostileFiles(): Record<string, string> {
  const ed = pkcs8('ed25519');
  return {
    'notes/ed25519.txt': `the deploy key:\n${ed}`,
    'notes/x25519.txt': `x25519:\n${pkcs8('x25519')}`,
    'notes/ed448.txt': pkcs8('ed448'),
    'notes/sec1.txt': sec1(),
    'notes/encrypted.txt': encryptedPkcs8(),
    'src/key.ts': `export const key = \`${pkcs8('ed25519')}\`;\n`,
    'src/key-escaped.ts': `export const key = ${JSON.stringify(pkcs8('ed25519'))};\n`,
    'charts/app/values.yaml': `tls:\n  key: |\n${indented(sec1(), '    ')}`,
    'charts/app/values-ed.yaml': `signing:\n  key: |\n${indented(ed, '    ')}`,
    'release.asc': pgpSecretKey(7),
    'docs/gpg.md': `Import it:\n\n    ${pgpSecretKey(9).trimEnd().split('\n').join('\n    ')}\n`,
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
  const sec = sec1();
  const text = `a\n  ${indented(sec, '  ').trimStart()}b\n`;
  const blocks = findPrivateKeyBlocks(text);
  assert.equal(blocks.length, 1);
  assert.equal(blocks[0]!.label, 'EC PRIV' + 'ATE KEY');
  assert.equal(text.slice(blocks[0]!.start, blocks[0]!.start + 10), '-----BEGIN');
  assert.ok(text.slice(0, blocks[0]!.end).endsWith('-----END EC PRIV' + 'ATE KEY-----'));
});
