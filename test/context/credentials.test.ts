/**
 * Generic credential assignments (credentials.ts): a credential-named key given a literal that
 * is not a placeholder is found in every format the packer meets, and a file holding one is left
 * out as `'secret'`; placeholders, references, calls and ordinary code are not. The credential
 * values are generated at run time (fake-secrets.ts), so that no file of this repository holds one.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findCredentialAssignments, isCredentialKey, isPlaceholderValue, keyWords, MIN_ENTROPY_BITS, shannonEntropy } from '../../src/context/credentials';
import { findSecret } from '../../src/context/secrets';
import { randomChars } from './fake-secrets';
import { detailOf, makeRepo, manifest, pack } from './fixtures';

/** A credential value: a letter, a digit and a symbol, then 13 random alphanumerics (seeded). */
const credential = (seed: number): string => `Xq9-${randomChars(seed, 13)}`;

/** An alphanumeric credential (no symbol, so it also reads as an identifier): 13 random alphanumerics and a digit (seeded). */
const alphanumeric = (seed: number): string => `${randomChars(seed, 13)}7`;

/**
 * One kind of assignment: `content` holds the value `value` on 1-based `line`, starting at
 * 1-based `column`, assigned to `key`.
 */
interface Case {
  kind: string;
  path: string;
  content: string;
  key: string;
  value: string;
  line: number;
  column: number;
}

/** Each assignment form the issue names and the others the detector ports, one file each. */
function cases(): Case[] {
  const at = (kind: string, path: string, before: string, key: string, lead: string, value: string, trail: string): Case => ({
    kind,
    path,
    content: `${before}${lead}${value}${trail}\n`,
    key,
    value,
    line: before.split('\n').length,
    column: lead.length + 1,
  });
  return [
    at('dotenv-style line in Python settings', 'config/settings.py', '# settings\n', 'DB_PASSWORD', 'DB_PASSWORD=', `hunter2-${randomChars(1, 10)}`, ''),
    at('Python constant', 'app/conf.py', 'import os\n', 'SECRET_KEY', 'SECRET_KEY = "', credential(2), '"'),
    at('Python annotated constant', 'app/typed.py', '\n', 'SECRET_KEY', "SECRET_KEY: str = '", credential(3), "'"),
    at('Python keyword argument', 'app/db.py', '\n', 'password', 'conn = connect(host="db", password="', credential(4), '")'),
    at('YAML quoted', 'deploy/values.yaml', 'db:\n', 'password', '  password: "', credential(5), '"'),
    at('YAML bare with a comment', 'deploy/app.yml', 'db:\n', 'password', '  password: ', credential(6), '  # prod'),
    at('JSON', 'config/app.json', '{\n', 'apiKey', '  "apiKey": "', credential(7), '"'),
    at('JS/TS const', 'src/keys.ts', '\n', 'SECRET_KEY', "const SECRET_KEY = '", credential(8), "';"),
    at('TS object property', 'src/client.ts', '\n', 'clientSecret', 'export const auth = { clientSecret: `', credential(9), '` };'),
    at('Go short declaration', 'cmd/main.go', 'package main\n', 'apiToken', 'apiToken := "', credential(10), '"'),
    at('Java field', 'src/Main.java', 'class Main {\n', 'dbPassword', '  private String dbPassword = "', credential(11), '";'),
    at('PHP define', 'wp-config.php', '<?php\n', 'DB_PASSWORD', "define('DB_PASSWORD', '", credential(12), "');"),
    at('PHP variable', 'lib/db.php', '<?php\n', 'db_pass', "$db_pass = '", credential(13), "';"),
    at('C #define', 'firmware/wifi.h', '#pragma once\n', 'WIFI_PASSWORD', '#define WIFI_PASSWORD "', credential(14), '"'),
    at('INI', 'conf/app.ini', '[db]\n', 'passwd', 'passwd = ', credential(15), ''),
    at('properties', 'conf/app.properties', '\n', 'spring.datasource.password', 'spring.datasource.password=', credential(16), ''),
    at('shell export', 'scripts/env.sh', '#!/bin/sh\n', 'API_TOKEN', 'export API_TOKEN=', credential(17), ''),
    at('XML element', 'conf/settings.xml', '<server>\n', 'password', '  <password>', credential(18), '</password>'),
    at('Authorization header', 'scripts/call.py', '\n', 'Authorization', 'headers = {"Authorization": "Bearer ', credential(19), '"}'),
    at('comparison with a literal', 'src/login.js', '\n', 'password', 'if (password === "', credential(20), '") grant();'),
    at('default of an environment read', 'app/env.py', '\n', 'SECRET_KEY', 'key = os.environ.get("SECRET_KEY", "', credential(21), '")'),
    at('kebab-case header name', 'conf/proxy.yaml', 'headers:\n', 'x-api-key', '  x-api-key: ', credential(22), ''),
    at('Kubernetes env entry', 'k8s/deploy.yaml', 'env:\n  - name: DB_PASSWORD\n', 'DB_PASSWORD', '    value: ', credential(23), ''),
    at('ECS name/value pair', 'ecs/task.json', '[\n', 'API_TOKEN', '  {"name": "API_TOKEN", "value": "', credential(24), '"}'),
    // alphanumeric values, which also read as identifiers: literals in these forms
    at('Compose KEY=value, alphanumeric', 'deploy/compose.yml', 'services:\n  db:\n    environment:\n', 'POSTGRES_PASSWORD', '      - POSTGRES_PASSWORD=', alphanumeric(25), ''),
    at('shell export, alphanumeric', 'scripts/token.sh', '#!/bin/sh\n', 'API_TOKEN', 'export API_TOKEN=', alphanumeric(26), ''),
    at('YAML bare, alphanumeric', 'deploy/db.yaml', 'db:\n', 'password', '  password: ', alphanumeric(27), ''),
    at('Kubernetes env entry, alphanumeric', 'k8s/api.yaml', 'env:\n  - name: API_KEY\n', 'API_KEY', '    value: ', alphanumeric(28), ''),
  ];
}

/** Placeholders and ordinary code that must not be reported, one per line. */
const NOT_CREDENTIALS = [
  'password = getPassword()',
  'if (password === confirm) {}',
  'passwordField = "Xq9-k2hP9zQw7xY4m"',
  'secret_name = "Xq9-k2hP9zQw7xY4m"',
  'DB_PASSWORD=',
  'DB_PASSWORD=changeme',
  'DB_PASSWORD=xxxxxxxxxxxx',
  'DB_PASSWORD=<your-password>',
  'DB_PASSWORD=${DB_PASSWORD}',
  'DB_PASSWORD=$DB_PASSWORD_FROM_VAULT',
  'password: "{{ .Values.db.password }}"',
  'password = "%(db_password)s"',
  'password = os.environ["DB_PASSWORD"]',
  'apiKey: process.env.API_KEY,',
  'const password = match.groups?.password;',
  'password: null',
  'password: None',
  'api_key = "example-key-123"',
  'API_KEY=your-api-key-here',
  'password = "aaaaaaaaaaaa"',
  'token = "12345678901234"',
  'secret = read_secret("vault/db1")',
  'token = tokens[i2]',
  'password: string;',
  'public_key = "Xq9-k2hP9zQw7xY4m"',
  'csrf_token = "Xq9-k2hP9zQw7xY4m"',
  'const FAKE_TOKEN = "Xq9-k2hP9zQw7xY4m";',
  "token: 'punctuation.definition.string'",
  'private_key_path: ./keys/server-01.pem',
  'headers = {"Authorization": f"Bearer {api_key}"}',
  'password: "[type=password]"',
  'password: Secret123',
  'monkey = "Xq9-k2hP9zQw7xY4m"',
  'label: "Password", hint: "At least 8 characters"',
  '- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef: {name: db, key: password}',
  '- name: DB_PASSWORD\n  value: ""',
  '- name: DB_HOST\n  value: Xq9-k2hP9zQw7xY4m',
  'token = "Ident(3)"',
  'apiKey = apiKeyV2Client',
  'apiKey: currentApiKey',
  "'Authorization': type1msg",
];

test('the words of a key: camelCase, acronyms, snake_case, kebab-case and dotted paths split, trailing digits dropped', () => {
  assert.deepEqual(keyWords('DBPassword'), ['db', 'password']);
  assert.deepEqual(keyWords('config.apiKey2'), ['config', 'api', 'key']);
  assert.deepEqual(keyWords('x-api-key'), ['x', 'api', 'key']);
  assert.deepEqual(keyWords('SECRET_KEY'), ['secret', 'key']);
  assert.deepEqual(keyWords('$db_pass'), ['db', 'pass']);
});

test('a key names a credential by its last word, or its last two for a key; qualifiers and stand-ins say otherwise', () => {
  for (const key of ['DB_PASSWORD', 'apiKey', 'client_secret', 'access-token', 'PRIVATE_KEY', 'passwd', 'webhookSecret', 'Authorization', 'APIKEY', 'db.pass']) {
    assert.equal(isCredentialKey(key), true, key);
  }
  for (const key of ['passwordField', 'tokenType', 'secret_name', 'public_key', 'csrf_token', 'nextPageToken', 'FAKE_TOKEN', 'exampleApiKey', 'key', 'monkey', 'apiKeyName', 'bypass']) {
    assert.equal(isCredentialKey(key), false, key);
  }
});

test('Shannon entropy in bits per character, checked by hand', () => {
  assert.equal(shannonEntropy(''), 0);
  assert.equal(shannonEntropy('aaaa'), 0);
  assert.equal(shannonEntropy('aabb'), 1);
  assert.equal(shannonEntropy('abcdefgh'), 3);
  // 3/4·log2(4/3) + 1/4·log2(4) = 0.811278…
  assert.ok(Math.abs(shannonEntropy('aaab') - (0.75 * Math.log2(4 / 3) + 0.25 * 2)) < 1e-15);
  // eight distinct characters reach the bound exactly; one repeat falls below it
  assert.equal(shannonEntropy('k2hP9zQw') >= MIN_ENTROPY_BITS, true);
  assert.equal(shannonEntropy('k2hP9zQk') >= MIN_ENTROPY_BITS, false);
  assert.equal(isPlaceholderValue('k2hP9zQw', false), false);
  assert.equal(isPlaceholderValue('k2hP9zQk', false), true);
  assert.equal(isPlaceholderValue('k2hP9zQ', false), true, 'shorter than 8 characters');
});

test('every assignment form is found at its value, with its key, and findSecret reports it as generic-credential there', async () => {
  assert.equal(cases().length, 28);
  for (const seed of [25, 26, 27, 28]) assert.ok(shannonEntropy(alphanumeric(seed)) >= MIN_ENTROPY_BITS && /^[A-Za-z][A-Za-z0-9]+$/.test(alphanumeric(seed)), alphanumeric(seed));
  for (const c of cases()) {
    assert.equal(c.content.split('\n')[c.line - 1]!.indexOf(c.value) + 1, c.column, `${c.kind}: the fixture's column`);
    const found = findCredentialAssignments(c.content);
    const offset = c.content.indexOf(c.value);
    assert.deepEqual(found, [{ start: offset, end: offset + c.value.length, key: c.key }], c.kind);
    assert.deepEqual(await findSecret(c.content, c.path), { rule: 'generic-credential', line: c.line, column: c.column }, c.kind);
  }
});

test('placeholders, templates, references, calls, paths and ordinary code are not credentials', async () => {
  assert.equal(NOT_CREDENTIALS.length, 41);
  for (const line of NOT_CREDENTIALS) {
    assert.deepEqual(findCredentialAssignments(line), [], line);
    assert.equal(await findSecret(`${line}\n`, 'src/x.ts'), undefined, line);
  }
});

test('a token a specific rule knows is reported by that rule, not as a generic credential, wherever it starts', async () => {
  const npm = 'np' + 'm_' + randomChars(31, 36);
  const password = credential(32);
  // the generic credential comes first in the text, the npm token second: the token's rule wins
  assert.deepEqual(await findSecret(`DB_PASSWORD = "${password}"\ntoken = "${npm}"\n`), { rule: 'npm', line: 2, column: 10 });
  assert.deepEqual(await findSecret(`DB_PASSWORD = "${password}"\n`), { rule: 'generic-credential', line: 1, column: 16 });
  // secretlint's disable comments apply to it as to every rule, and the rule can be turned off (for bench/secrets)
  assert.equal(await findSecret(`DB_PASSWORD = "${password}" // secretlint-disable-line\n`), undefined);
  assert.equal(await findSecret(`DB_PASSWORD = "${password}"\n`, 'a.py', { genericCredentials: false }), undefined);
});

test('a file with a generic credential is left out of the pack as a secret, with the rule and where, never the value', async (t) => {
  const all = cases();
  const tree: Record<string, string> = { 'src/clean.ts': 'export const clean = true;\n', 'src/near.py': `${NOT_CREDENTIALS.join('\n')}\n` };
  for (const c of all) tree[c.path] = c.content;
  const root = await makeRepo(t, tree);
  const result = await pack(root);
  assert.deepEqual(manifest(result).files, ['src/clean.ts', 'src/near.py']);
  assert.deepEqual(
    result.skipped,
    all.map((c) => ({ path: c.path, reason: 'secret', detail: `generic-credential secret at line ${c.line}, column ${c.column} (generic credential assignment)` })).sort((a, b) => (a.path < b.path ? -1 : 1)),
  );
  for (const c of all) {
    assert.ok(!detailOf(result, c.path).includes(c.value), `${c.kind}: the detail does not show the value`);
    assert.ok(result.files.every((f) => !f.text.includes(c.value)), `${c.kind}: not packed`);
  }
});
