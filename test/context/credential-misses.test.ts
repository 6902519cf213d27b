/**
 * The misses a tester listed for the generic credential detector (credentials.ts), each now
 * caught on a hand-written case, each with the near misses that must stay out: glued password
 * keys, INI `key = value` and `.pgpass` lines, Go and TypeScript typed declarations, an
 * environment read's literal fallback, weak passwords, and passwords on command lines. Values
 * are assembled at run time so that this file holds nothing credential-shaped.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  findCredentialAssignments,
  findKeylessCredentials,
  isConfigFileName,
  isConfigText,
  isCredentialKey,
  isPasswordKey,
  isPlaceholderValue,
  MIN_PASSWORD_CHARS,
  MIN_PASSWORD_ENTROPY_BITS,
  shannonEntropy,
} from '../../src/context/credentials';
import { findSecret } from '../../src/context/secrets';
import { randomChars } from './fake-secrets';
import { makeRepo, manifest, pack } from './fixtures';

/** A strong credential value: a letter, a digit and a symbol, then 13 random alphanumerics (seeded). */
const strong = (seed: number): string => `Xq9-${randomChars(seed, 13)}`;

/** A weak human password, `hunter` and a doubled digit (`hunter22`): 8 characters, 2.75 bits per character. */
const weak = (digit: number): string => ['hun', 'ter', String(digit), String(digit)].join('');

/** The one assignment `text` holds: its value (found from the end, after the key) and key. */
function only(text: string, key: string, value: string): Array<{ start: number; end: number; key: string }> {
  const start = text.lastIndexOf(value);
  assert.ok(start >= 0, `${value} in ${text}`);
  return [{ start, end: start + value.length, key }];
}

test("a reference behind unary operators is code, not a value (axios's request.withCredentials = !!_config.withCredentials); a literal in .env keeps its '!!'", () => {
  // the line from axios 1.21.1's lib/adapters/xhr.js that left the whole file out of the pack
  for (const code of ['request.withCredentials = !!_config.withCredentials;', 'const token = -offset.token;', 'this.apiKey = ~mask;', 'opts.secret = !!getSecret(user);']) {
    assert.deepEqual(findCredentialAssignments(code), [], code);
  }
  assert.equal(isPlaceholderValue('!!_config.withCredentials', true), true);
  // not bare (a .env line's KEY=value, a quoted string): the same characters are a literal
  const value = `!!${strong(41)}`;
  assert.equal(isPlaceholderValue(value, false), false);
  assert.deepEqual(findCredentialAssignments(`API_TOKEN=${value}\n`), only(`API_TOKEN=${value}\n`, 'API_TOKEN', value));
  assert.deepEqual(findCredentialAssignments(`const apiToken = "${value}";`), only(`const apiToken = "${value}";`, 'apiToken', value));
});

test('a weak password is below the generic bounds and above the password bounds, checked by hand', () => {
  // h u n t e r once each, 2 twice: 6·(1/8)·3 + (2/8)·2 = 2.75 bits
  assert.equal(shannonEntropy(weak(2)), 2.75);
  assert.equal(MIN_PASSWORD_CHARS, 6);
  assert.equal(MIN_PASSWORD_ENTROPY_BITS, 2);
  assert.equal(isPlaceholderValue(weak(2), false), true, 'below 3.0 bits for a token or an API key');
  assert.equal(isPlaceholderValue(weak(2), false, true), false, 'a password');
  // r o o t 1 2: 4·(1/6)·log2(6) + (2/6)·log2(3) = 2.2516… bits, 6 characters
  const six = ['ro', 'ot12'].join('');
  assert.ok(Math.abs(shannonEntropy(six) - ((4 / 6) * Math.log2(6) + (2 / 6) * Math.log2(3))) < 1e-12);
  assert.equal(isPlaceholderValue(six, false, true), false);
  assert.equal(isPlaceholderValue(six.slice(1), false, true), true, '5 characters');
  // a a a b b b 1 2: 2·(3/8)·log2(8/3) + 2·(1/8)·3 = 1.8113… bits: a run, not a password
  const run = ['aaa', 'bbb', '12'].join('');
  assert.ok(shannonEntropy(run) < MIN_PASSWORD_ENTROPY_BITS);
  assert.equal(isPlaceholderValue(run, false, true), true);
});

test('glued password keys (PGPASSWORD, DBPASS) are password keys; bypass, compass, passthrough, tokenizer and the like are not keys', () => {
  for (const key of ['PGPASSWORD', 'DBPASS', 'MYSQL_PWD', 'REDIS_PASSWD', 'rootpassword', 'SSHPASS', 'adminPassphrase', 'DB_PASSWORD', 'pass', 'db.pass']) {
    assert.equal(isCredentialKey(key), true, key);
    assert.equal(isPasswordKey(key), true, key);
  }
  for (const key of ['bypass', 'BYPASS', 'compass', 'encompass', 'surpass', 'trespass', 'passthrough', 'tokenizer', 'renderpass', 'SSH_ASKPASS', 'getpass', 'OLDPWD', 'NOPASSWD', 'passwords', 'passwordField', 'minipass', 'crc-16-buypass', 'EXPASS', 'keepass']) {
    assert.equal(isCredentialKey(key), false, key);
    assert.equal(isPasswordKey(key), false, key);
  }
  // credential keys that are not passwords keep the generic bounds
  for (const key of ['API_TOKEN', 'client_secret', 'apiKey', 'webhookSecret']) {
    assert.equal(isCredentialKey(key), true, key);
    assert.equal(isPasswordKey(key), false, key);
  }
  for (const [text, key, value] of [
    [`PGPASSWORD=${weak(1)}`, 'PGPASSWORD', weak(1)],
    [`DBPASS=${strong(2)}`, 'DBPASS', strong(2)],
    [`export MYSQL_PWD=${weak(3)}`, 'MYSQL_PWD', weak(3)],
    [`REDIS_PASSWD: "${weak(4)}"`, 'REDIS_PASSWD', weak(4)],
  ] as const) {
    assert.deepEqual(findCredentialAssignments(`${text}\n`), only(text, key, value), text);
  }
  for (const text of [`BYPASS=${strong(5)}`, `compass = "${strong(6)}"`, `SSH_ASKPASS=${weak(7)}`, `OLDPWD=${weak(8)}`, `tokenizer = "${strong(9)}"`, `passthrough: ${strong(10)}`, '"minipass": "^7.1.2",', '    "minipass": "^7.1.2"', '"EXPASS", "*EXPORT",']) {
    assert.deepEqual(findCredentialAssignments(`${text}\n`), [], text);
  }
});

test('weak values of password keys are reported; their placeholders are not, and other credential keys keep the generic bounds', () => {
  for (const [text, key, value] of [
    [`DB_PASSWORD=${weak(2)}`, 'DB_PASSWORD', weak(2)],
    [`password = "${weak(3)}"`, 'password', weak(3)],
    [`  passwd: ${weak(4)}`, 'passwd', weak(4)],
    [`pwd := "${weak(5)}"`, 'pwd', weak(5)],
    [`PASSPHRASE='${weak(6)}'`, 'PASSPHRASE', weak(6)],
    [`<password>${weak(7)}</password>`, 'password', weak(7)],
  ] as const) {
    assert.deepEqual(findCredentialAssignments(`${text}\n`), only(text, key, value), text);
  }
  const placeholders = [
    'DB_PASSWORD=changeme', 'password = "password"', 'pwd=xxx', 'PASS=${DB_PASS}', 'password: <password>', 'password=***', 'password = "********"',
    'DB_PASSWORD=', 'password: true', 'password: false', 'password: null', 'password = None', 'password = "aaaaaaaaaaaa"', 'password = "hunt2"',
    'password: "[type=password]"', 'pass = 12345678', 'password = confirm', 'db_pass: "^7.1.2"', 'password = "v1.2.3"',
  ];
  for (const text of placeholders) assert.deepEqual(findCredentialAssignments(`${text}\n`), [], text);
  for (const text of [`API_TOKEN=${weak(2)}`, `client_secret = "${weak(3)}"`, `apiKey: "${weak(4)}"`, `<token>${weak(5)}</token>`]) {
    assert.deepEqual(findCredentialAssignments(`${text}\n`), [], text);
  }
});

test('in a configuration file a bare value after `key = ` is a literal (INI pass = …); in code it stays a reference', async () => {
  const ini = `[client]\nuser = app\npass = ${weak(3)}\npassword = ${strong(4)}\n`;
  const pass = ini.indexOf(weak(3));
  const password = ini.indexOf(strong(4));
  assert.deepEqual(findCredentialAssignments(ini, { config: true }), [
    { start: pass, end: pass + weak(3).length, key: 'pass' },
    { start: password, end: password + strong(4).length, key: 'password' },
  ]);
  // without the config flag the alphanumeric value reads as a variable (the symbol-bearing one is found either way)
  assert.deepEqual(findCredentialAssignments(ini), [{ start: password, end: password + strong(4).length, key: 'password' }]);
  const alnum = `${randomChars(11, 13)}7`;
  for (const name of ['conf/app.ini', 'etc/my.cnf', 'conf/db.conf', 'setup.cfg', 'conf/app.properties', '.pypirc', 'home/.my.cnf', 'CONF/APP.INI']) {
    assert.equal(isConfigFileName(name), true, name);
    assert.deepEqual(await findSecret(`# db\npass = ${alnum}\n`, name), { rule: 'generic-credential', line: 2, column: 8 }, name);
  }
  for (const name of ['src/app.py', 'src/app.ts', 'main.go', 'README.md', 'conf', '.ini/x.py', undefined]) {
    assert.equal(isConfigFileName(name), false, String(name));
  }
  assert.equal(await findSecret(`import os\npass_ = 1\npassword = ${alnum}\n`, 'src/app.py'), undefined, 'a Python variable');
  // an INI file by its first line, whatever its name
  assert.equal(isConfigText('; settings\n\n[database]\npassword = x\n'), true);
  assert.equal(isConfigText('[pypi]\r\npassword = x\r\n'), true);
  assert.equal(isConfigText('import os\n[db]\n'), false);
  assert.equal(isConfigText('x = [1, 2]\n'), false);
  assert.deepEqual(await findSecret(`[db]\npassword = ${alnum}\n`, 'deploy/settings'), { rule: 'generic-credential', line: 2, column: 12 });
});

test('.pgpass lines (host:port:database:user:password) are found at the password; /etc/passwd, compiler positions and IPv6 are not', () => {
  for (const [text, key, value] of [
    [`localhost:5432:app:admin:${weak(2)}`, 'localhost:5432:app:admin', weak(2)],
    [`*:*:*:replicator:${strong(3)}`, '*:*:*:replicator', strong(3)],
    [`echo "db.internal:5432:*:app:${weak(4)}" >> ~/.pgpass`, 'db.internal:5432:*:app', weak(4)],
    [`db:5432:app:admin:${['pa', '\\:', 'ss9', '9x'].join('')}`, 'db:5432:app:admin', ['pa', '\\:', 'ss9', '9x'].join('')],
  ] as const) {
    assert.deepEqual(findKeylessCredentials(`${text}\n`), only(text, key, value), text);
    assert.deepEqual(findCredentialAssignments(`${text}\n`), only(text, key, value), text);
  }
  for (const text of [
    'root:x:0:0:root:/root:/bin/bash',
    'src/main.go:12:5: error: undefined: x',
    'main.go:12:5:error:undefined99',
    'fe80:0:0:0:1',
    '12:30:45:00:99',
    'localhost:5432:*:postgres:postgres',
    'localhost:5432:*:postgres:${PGPASSWORD}',
    'host:port:database:user:password',
    'urn:ietf:params:oauth:grant-type',
  ]) {
    assert.deepEqual(findCredentialAssignments(`${text}\n`), [], text);
  }
});

test('Go and TypeScript typed declarations are found at their values', () => {
  for (const [text, key, value] of [
    [`const apiKey string = "${strong(1)}"`, 'apiKey', strong(1)],
    [`var dbPassword = "${weak(2)}"`, 'dbPassword', weak(2)],
    [`var dbPassword string = "${weak(3)}"`, 'dbPassword', weak(3)],
    [`const apiKey: string = "${strong(4)}";`, 'apiKey', strong(4)],
    [`export const DB_PASSWORD: string = '${weak(5)}';`, 'DB_PASSWORD', weak(5)],
  ] as const) {
    assert.deepEqual(findCredentialAssignments(`${text}\n`), only(text, key, value), text);
  }
  for (const text of ['var apiKey string', 'apiKey string = os.Getenv("API_KEY")', 'if apiKey == expected {', 'var dbPassword string = cfg.Password', 'const apiKey: string = getKey();']) {
    assert.deepEqual(findCredentialAssignments(`${text}\n`), [], text);
  }
});

test("an environment read's literal fallback is a value: process.env.X || '…', ?? '…', os.getenv('X', '…'), os.environ.get, or '…'", () => {
  for (const [text, key, value] of [
    [`const key = process.env.API_KEY || "${strong(1)}";`, 'process.env.API_KEY', strong(1)],
    [`const pw = process.env.DB_PASSWORD ?? '${weak(2)}';`, 'process.env.DB_PASSWORD', weak(2)],
    [`key = os.getenv("API_KEY", "${strong(3)}")`, 'API_KEY', strong(3)],
    [`pw = os.environ.get('PGPASSWORD', '${weak(4)}')`, 'PGPASSWORD', weak(4)],
    [`key = os.getenv("API_KEY") or "${strong(5)}"`, 'API_KEY', strong(5)],
    [`token = ENV["GITHUB_TOKEN"] || "${strong(6)}"`, 'GITHUB_TOKEN', strong(6)],
  ] as const) {
    assert.deepEqual(findCredentialAssignments(`${text}\n`), only(text, key, value), text);
  }
  for (const text of [
    'const key = process.env.API_KEY || "";',
    'const key = process.env.API_KEY || fallbackKey;',
    'const key = process.env.API_KEY ?? "${DEFAULT_KEY}";',
    'key = os.getenv("API_KEY", None)',
    'key = os.getenv("API_KEY") or default_key',
    `const t = getToken(user) || "${strong(7)}";`,
    `const t = tokens[i] || "${strong(8)}";`,
    'const mode = process.env.TOKEN_MODE || "xk29-plain-mode";',
  ]) {
    assert.deepEqual(findCredentialAssignments(`${text}\n`), [], text);
  }
});

test('passwords on command lines (mysql -p…, --password, sshpass, openssl pass:, curl -u user:…) are found; prompts, variables and other tools are not', async () => {
  for (const [text, key, value] of [
    [`mysql -uroot -p${weak(1)} app < dump.sql`, '-p', weak(1)],
    [`RUN mysqldump -u root -p'${weak(2)}' app > /backup.sql`, '-p', weak(2)],
    [`\tmariadb -h db -p"${strong(3)}" -e 'select 1'`, '-p', strong(3)],
    [`mysql --password=${weak(4)} app`, '--password', weak(4)],
    [`mysqladmin --password ${weak(5)} status`, '--password', weak(5)],
    [`./deploy --db-password=${strong(6)} --region eu`, '--db-password', strong(6)],
    [`sshpass -p ${weak(7)} ssh deploy@host`, '-p', weak(7)],
    [`openssl pkcs12 -export -passout pass:${weak(8)} -out x.p12`, '-passout', weak(8)],
    [`curl -u admin:${strong(9)} https://ci.internal/api`, '-u', strong(9)],
    [`curl -s --user "deploy:${weak(1)}" https://ci.internal/api`, '--user', weak(1)],
  ] as const) {
    assert.deepEqual(findKeylessCredentials(`${text}\n`), only(text, key, value), text);
    assert.deepEqual(findCredentialAssignments(`${text}\n`), only(text, key, value), text);
  }
  for (const text of [
    'mysql -u root -p app',
    'mysql -u root -p',
    'mysql -uroot -p$MYSQL_ROOT_PASSWORD app',
    'mysql -uroot -p"${MYSQL_PWD}" app',
    'mysql -uroot -p<password> app',
    'mysql -uroot -pYOUR_PASSWORD app',
    'mysql -h db -P 3306 -u app',
    `mkdir -p${weak(2)}`,
    `tar -p${weak(3)} -xf x.tar`,
    'curl -u "$CI_USER:$CI_TOKEN" https://ci.internal/api',
    'curl -u admin: https://ci.internal/api',
    'curl --user-agent "Mozilla/5.0 (X11)" https://example.org',
    'parser.add_argument("--password", help="the database password")',
    '  --password PASSWORD   the password to use',
    'echo "$PW" | docker login --password-stdin -u ci registry',
    'app --password-file /run/secrets/db_password',
    'app --password "$DB_PASSWORD"',
    'app --password=$(cat /run/secrets/db)',
  ]) {
    assert.deepEqual(findCredentialAssignments(`${text}\n`), [], text);
  }
});

test("a URL's userinfo is secretlint's where its rules reach (basicauth, database-connection-string), the generic rule's where they do not", async () => {
  // secretlint's basicauth: http(s)/ftp(s), a password of [-A-Za-z0-9_], a host ending in a 1–6-character top-level domain
  const url = `https://admin:${weak(6)}@ci.example.com/api`;
  assert.deepEqual(await findSecret(`${url}\n`, 'README.md'), { rule: 'basicauth', line: 1, column: 1 });
  assert.deepEqual(await findSecret(`DATABASE_URL=postgres://app:${weak(7)}@db:5432/app\n`, 'deploy/app.yml'), { rule: 'database-connection-string', line: 1, column: 14 });
  // what they pass by: a longer top-level domain, a symbol in the password, another scheme, an empty user
  for (const [text, key, value] of [
    [`https://admin:${weak(1)}@ci.internal/api`, 'https://admin', weak(1)],
    [`https://admin:${strong(2)}.x@ci.example.com/api`, 'https://admin', `${strong(2)}.x`],
    [`CELERY_BROKER=amqp://app:${weak(3)}@mq:5672//`, 'amqp://app', weak(3)],
    [`REDIS_URL=redis://:${weak(4)}@cache:6379/0`, 'redis://', weak(4)],
  ] as const) {
    assert.deepEqual(findCredentialAssignments(`${text}\n`), only(text, key, value), text);
    const column = text.lastIndexOf(value) + 1;
    assert.deepEqual(await findSecret(`${text}\n`, 'deploy/app.conf'), { rule: 'generic-credential', line: 1, column }, text);
  }
  for (const text of [
    'postgres://user:password@localhost/db',
    'https://user:pass@host/x',
    'redis://:${REDIS_PASSWORD}@cache:6379',
    'https://user:<password>@host/x',
    'amqp://guest:guest@localhost:5672/',
    'ssh://git@github.com:22/org/repo.git',
    'url = f"redis://:{password}@{host}:6379"',
    'https://example.com/@scope/pkg',
    "fastURI.parse('uri://us\\xA0er:pa\\uD7FFss@example.com:123/x')",
  ]) {
    assert.deepEqual(findCredentialAssignments(`${text}\n`), [], text);
  }
});

test('files holding the misses are left out of the pack as generic credentials, named as such; their near misses stay', async (t) => {
  const files: Record<string, { content: string; line: number; column: number }> = {
    'scripts/db.sh': { content: `#!/bin/sh\nexport PGPASSWORD=${weak(1)}\npsql -h db app\n`, line: 2, column: 19 },
    'conf/app.ini': { content: `[db]\npass = ${weak(2)}\n`, line: 2, column: 8 },
    'cmd/main.go': { content: `package main\n\nconst apiKey string = "${strong(3)}"\n`, line: 3, column: 24 },
    'src/config.ts': { content: `export const apiKey = process.env.API_KEY || '${strong(4)}';\n`, line: 1, column: 47 },
    'Dockerfile': { content: `FROM mysql:8\nRUN mysql -uroot -p${weak(5)} < /init.sql\n`, line: 2, column: 20 },
    'Makefile': { content: `fetch:\n\tcurl -u ci:${strong(6)} https://ci.internal/x\n`, line: 2, column: 13 },
    'README.md': { content: `# setup\n\n    echo "db:5432:app:app:${weak(7)}" > ~/.pgpass\n`, line: 3, column: 27 },
  };
  const tree: Record<string, string> = {
    'src/near.ts': 'const bypass = "Xq9-k2hP9zQw7xY4m";\nconst key = process.env.API_KEY || "";\n// run mysql -u root -p to be asked for the password\nconst pass = nextPass;\n',
  };
  for (const [p, f] of Object.entries(files)) tree[p] = f.content;
  const root = await makeRepo(t, tree);
  const result = await pack(root);
  assert.deepEqual(manifest(result).files, ['src/near.ts']);
  assert.deepEqual(
    result.skipped,
    Object.entries(files)
      .map(([p, f]) => ({ path: p, reason: 'secret', detail: `generic-credential secret at line ${f.line}, column ${f.column} (generic credential assignment)` }))
      .sort((a, b) => (a.path < b.path ? -1 : 1)),
  );
});
