/**
 * The seven token kinds of issue 29, item 2, that secretlint's preset misses are secrets: a JWT,
 * a SendGrid key with `-`, a Twilio API key SID, a DigitalOcean token, a PyPI upload token, a
 * Telegram bot token and a Discord webhook URL, in a comment of code and in a `.env`-style
 * line; near misses of each stay clean.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findSecret } from '../../src/context/secrets';
import { findTokens } from '../../src/context/token-formats';
import { fakeTokens, randomChars } from './fake-secrets';
import { makeRepo, manifest, pack } from './fixtures';

test('each of the seven token kinds is found by its rule, where it starts, in a comment and in an env line', async () => {
  for (const [rule, token] of Object.entries(fakeTokens())) {
    const comment = `export const a = 1;\n// the token: ${token} (rotate it)\n`;
    assert.deepEqual(await findSecret(comment, 'src/a.ts'), { rule, line: 2, column: comment.split('\n')[1]!.indexOf(token) + 1 }, `${rule} in a comment`);
    const env = `# settings\nVALUE=${token}\n`;
    assert.deepEqual(await findSecret(env, 'deploy/app.conf'), { rule, line: 2, column: 7 }, `${rule} in an env line`);
  }
});

test('a pack leaves a file holding any of them out, and no token reaches it', async (t) => {
  const tokens = fakeTokens(40);
  const tree: Record<string, string> = { 'src/ok.ts': 'export const ok = 1;\n' };
  for (const [rule, token] of Object.entries(tokens)) tree[`notes/${rule}.md`] = `See ${token}\n`;
  const root = await makeRepo(t, tree);
  const result = await pack(root, { tokenBudget: 100_000 });
  assert.deepEqual(manifest(result).files, ['src/ok.ts']);
  const everything = JSON.stringify({ ...result, secrets: undefined });
  for (const [rule, token] of Object.entries(tokens)) assert.ok(!everything.includes(token), `${rule} reached the pack`);
});

test('near misses are not tokens: dotted base64 without a JOSE header, SKIP words, short or non-hex ids, other pypi names, versions, Discord URLs without a token', () => {
  const b64url = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');
  const clean = [
    // two JSON objects and a signature, but the header names no alg
    `${b64url({ typ: 'JWT', kid: 'k1' })}.${b64url({ sub: '1' })}.${randomChars(3, 43)}`,
    // a JWT with an empty (unsigned) signature is not a bearer credential a server accepts
    `${b64url({ alg: 'HS256' })}.${b64url({ sub: '1' })}.`,
    'SKIP_THE_LONG_CONSTANT_NAME_FOR_TESTS_1234',
    'S' + 'K' + randomChars(4, 31, '0123456789abcdef'),
    'S' + 'K' + randomChars(5, 32, 'ghijklmnopqrstuvwxyz'),
    'hashSK' + randomChars(6, 32, '0123456789abcdef'),
    'do' + 'p_v1_' + 'x'.repeat(64),
    'pypi-simple-index-package-name-for-the-registry-mirror-of-this-site',
    '2024061512:AAbc',
    'https://discord.com/api/web' + 'hooks/{id}/{token}',
    'S' + 'G.' + 'short.key',
  ];
  for (const text of clean) assert.deepEqual(findTokens(text), [], text);
});
