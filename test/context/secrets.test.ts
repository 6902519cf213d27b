/**
 * Secrets stay out of the pack: credential files by name (`SECRET_EXCLUDES`, never read) and
 * any file whose content holds a secret (`'secret'`), each listed with its reason; the user's
 * overrides bring one back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { anyCasePattern, SECRET_BACKUP_SUFFIXES, SECRET_EXCLUDES } from '../../src/context/globs';
import { FileSecretVerdicts, findSecret, secretDetail } from '../../src/context/secrets';
import { fakeSecrets, randomChars } from './fake-secrets';
import { detailOf, makeRepo, manifest, pack } from './fixtures';

/**
 * The credential files of the report, with the rule of `SECRET_EXCLUDES` that must
 * exclude each (the first entry the walk meets: an excluded directory is one entry).
 */
const CREDENTIAL_FILES: Record<string, string> = {
  '.env': '.env',
  '.env.local': '.env.*',
  'id_rsa': 'id_rsa',
  '.ssh/': '.ssh/',
  'certs/server.pem': '*.pem',
  'certs/server.key': '*.key',
  '.npmrc': '.npmrc',
  'home/.aws/credentials': '**/.aws/credentials',
  '.netrc': '.netrc',
  '.git-credentials': '.git-credentials',
  'home/.docker/config.json': '**/.docker/config.json',
  '.pypirc': '.pypirc',
  'credentials.json': 'credentials.json',
  'kubeconfig': 'kubeconfig',
  'home/.kube/config': '**/.kube/config',
  'infra/terraform.tfstate': '*.tfstate',
  'services/api/.env.production': '.env.*',
};

/** The fixture: every credential file (with harmless content: only the name must matter) and two ordinary files. */
function credentialTree(): Record<string, string> {
  const tree: Record<string, string> = { 'README.md': '# demo\n', 'src/app.ts': 'export const app = 1;\n' };
  for (const p of Object.keys(CREDENTIAL_FILES)) tree[p.endsWith('/') ? p + 'id_ed25519' : p] = 'value\n';
  return tree;
}

test('credential files are excluded by name, whatever defaultExcludes says, and never read', async (t) => {
  const root = await makeRepo(t, credentialTree());
  for (const defaultExcludes of [true, false]) {
    const result = await pack(root, { defaultExcludes });
    assert.deepEqual(manifest(result).files, ['README.md', 'src/app.ts']);
    assert.deepEqual(result.skipped, []);
    const expected = Object.entries(CREDENTIAL_FILES)
      .map(([p, rule]) => ({ path: p.replace(/\/$/, ''), isDirectory: p.endsWith('/'), reason: 'excluded', detail: `secret exclude '${rule}'` }))
      .sort((a, b) => (a.path < b.path ? -1 : 1));
    assert.deepEqual(result.ignored, expected);
  }
  assert.ok(Object.isFrozen(SECRET_EXCLUDES));
});

test('credential file names match in any letter case, also without ignoreCase: .ENV, Credentials.json, server.PEM; the caller\'s negation still brings one back', async (t) => {
  const root = await makeRepo(t, {
    '.ENV': 'DB_PASSWORD=value\n',
    'prod.Env': 'value\n',
    'Credentials.json': '{}\n',
    'certs/server.PEM': 'value\n',
    '.NETRC': 'value\n',
    'SSH/.SSH/id_ed25519': 'value\n',
    'src/env.ts': 'export const env = 1;\n',
  });
  const result = await pack(root);
  assert.deepEqual(manifest(result).files, ['src/env.ts']);
  assert.deepEqual(
    result.ignored.map((e) => [e.path, e.detail]),
    [
      ['.ENV', "secret exclude '.env'"],
      ['.NETRC', "secret exclude '.netrc'"],
      ['Credentials.json', "secret exclude 'credentials.json'"],
      ['SSH/.SSH', "secret exclude '.ssh/'"],
      ['certs/server.PEM', "secret exclude '*.pem'"],
      ['prod.Env', "secret exclude '*.env'"],
    ],
  );
  const back = await pack(root, { exclude: ['!.ENV'] });
  assert.deepEqual(manifest(back).files, ['.ENV', 'src/env.ts']);
  assert.equal(anyCasePattern('**/.aws/credentials'), '**/.[aA][wW][sS]/[cC][rR][eE][dD][eE][nN][tT][iI][aA][lL][sS]');
  assert.equal(anyCasePattern('client_secret*.json'), '[cC][lL][iI][eE][nN][tT]_[sS][eE][cC][rR][eE][tT]*.[jJ][sS][oO][nN]');
});

test('backups of credential files are excluded like them (.env~, config.env.bak, server.PEM.orig, id_rsa.old, vim swap); backups of other files stay', async (t) => {
  const root = await makeRepo(t, {
    '.env~': 'DB_PASSWORD=value\n',
    'config.env.bak': 'DB_PASSWORD=value\n',
    'certs/server.PEM.orig': 'value\n',
    'id_rsa.old': 'value\n',
    'certs/.server.pem.swp': 'value\n',
    'credentials.json~': '{}\n',
    'README.md~': '# old readme\n',
    'src/app.ts.bak': 'export const app = 0;\n',
    'src/app.ts': 'export const app = 1;\n',
  });
  const result = await pack(root);
  assert.deepEqual(manifest(result).files, ['README.md~', 'src/app.ts', 'src/app.ts.bak']);
  assert.deepEqual(
    result.ignored.map((e) => [e.path, e.detail]),
    [
      ['.env~', "secret exclude '.env~'"],
      ['certs/.server.pem.swp', "secret exclude '*.pem.swp'"],
      ['certs/server.PEM.orig', "secret exclude '*.pem.orig'"],
      ['config.env.bak', "secret exclude '*.env.bak'"],
      ['credentials.json~', "secret exclude 'credentials.json~'"],
      ['id_rsa.old', "secret exclude 'id_rsa.old'"],
    ],
  );
  assert.deepEqual(SECRET_BACKUP_SUFFIXES, ['~', '.bak', '.orig', '.old', '.swp']);
  assert.ok(Object.isFrozen(SECRET_BACKUP_SUFFIXES));
});

test('a secret in the content skips the file as "secret", whatever its name, with the rule and line but not the value', async (t) => {
  const secrets = fakeSecrets();
  const tree: Record<string, string> = { 'src/clean.ts': 'export const clean = true;\n' };
  for (const s of secrets) tree[s.path] = s.content;
  // near misses that must stay: identifiers with a token's prefix, a placeholder password
  tree['src/near.ts'] = 'const mode = "sk_live_mode";\nconst prefix = "AIza";\nconst url = "postgres://user:password@localhost/db";\n';
  const root = await makeRepo(t, tree);

  const result = await pack(root);
  assert.deepEqual(manifest(result).files, ['src/clean.ts', 'src/near.ts']);
  const expected = secrets
    .map((s) => ({ path: s.path, reason: 'secret', detail: `${s.rule} secret at line ${s.line}, column ${s.column} (${s.rule === 'stripe' || s.rule === 'google-api-key' ? 'RepoSnap token patterns' : 'secretlint rules'})` }))
    .sort((a, b) => (a.path < b.path ? -1 : 1));
  assert.deepEqual(result.skipped, expected);
  for (const s of secrets) {
    assert.ok(!detailOf(result, s.path).includes(s.secret), `${s.kind}: the detail does not show the secret`);
    assert.ok(result.files.every((f) => !f.text.includes(s.secret)), `${s.kind}: not packed`);
  }
});

test('the user brings files back: an exclude negation for a name, a secretlint-disable comment for content', async (t) => {
  const token = 'gh' + 'p_' + randomChars(21, 36);
  const root = await makeRepo(t, {
    '.env': 'API_KEY=\n',
    '.env.example': 'API_KEY=\n',
    '.ssh/id_ed25519.pub': 'ssh-ed25519 AAAA demo\n',
    'certs/ca.pem': 'certificate\n',
    'test/fixture.ts': `const fake = "${token}"; // secretlint-disable-line\n`,
    'test/other.ts': `const fake = "${token}";\n`,
  });
  const before = await pack(root);
  assert.deepEqual(manifest(before).files, ['test/fixture.ts']);
  assert.deepEqual(manifest(before).skipped, [['test/other.ts', 'secret']]);
  assert.deepEqual(manifest(before).ignored, [['.env', 'excluded'], ['.env.example', 'excluded'], ['.ssh/', 'excluded'], ['certs/ca.pem', 'excluded']]);

  const after = await pack(root, { exclude: ['!.env.example', '!.ssh/', '!*.pem'] });
  assert.deepEqual(manifest(after).files, ['.env.example', '.ssh/id_ed25519.pub', 'certs/ca.pem', 'test/fixture.ts']);
  assert.deepEqual(manifest(after).ignored, [['.env', 'excluded']]);
  assert.deepEqual(manifest(after).skipped, [['test/other.ts', 'secret']]);

  // skipSecrets: false turns both checks off
  const off = await pack(root, { skipSecrets: false });
  assert.deepEqual(manifest(off).files, ['.env', '.env.example', '.ssh/id_ed25519.pub', 'certs/ca.pem', 'test/fixture.ts', 'test/other.ts']);
});

test('findSecret reports the first secret in text order and leaves no performance marks behind', async () => {
  const npm = 'np' + 'm_' + randomChars(31, 36);
  const stripe = 'sk' + '_test_' + randomChars(32, 30);
  const marks = performance.getEntriesByType('mark').length;
  assert.deepEqual(await findSecret(`a\nb = "${stripe}"\nc = "${npm}"\n`), { rule: 'stripe', line: 2, column: 6 });
  assert.deepEqual(await findSecret(`x = "${npm}" + "${stripe}"`), { rule: 'npm', line: 1, column: 6 });
  assert.equal(await findSecret('nothing to see\n'), undefined);
  assert.equal(await findSecret(''), undefined);
  // a disabled block hides what is inside it, not what follows it
  assert.deepEqual(await findSecret(`// secretlint-disable\n"${npm}"\n// secretlint-enable\n"${stripe}"`), { rule: 'stripe', line: 4, column: 2 });
  assert.equal(performance.getEntriesByType('mark').length, marks);
});

test('one decision per file: the whole text is scanned once, a deferred file when first asked about, and a file with a secret is reported as the packer reports it', async () => {
  const token = 'gh' + 'p_' + randomChars(41, 36);
  const dirty = `export function clean() {\n  return 1;\n}\nconst t = "${token}";\n`;
  const verdicts = new FileSecretVerdicts();
  const first = verdicts.check('src/a.ts', dirty);
  assert.equal(verdicts.check('src/a.ts', dirty), first, 'the same decision, not a second scan');
  assert.deepEqual(await first, { rule: 'github', line: 4, column: 12 });
  assert.deepEqual(verdicts.skippedEntry('src/a.ts'), { path: 'src/a.ts', reason: 'secret', detail: 'github secret at line 4, column 12 (secretlint rules)' });
  verdicts.defer('src/b.ts', dirty);
  verdicts.defer('src/c.ts', 'export const c = 1;\n');
  assert.equal(verdicts.skippedEntry('src/b.ts'), undefined, 'deferred: not scanned yet');
  assert.deepEqual(await verdicts.verdictOf('src/b.ts'), { rule: 'github', line: 4, column: 12 });
  assert.equal(await verdicts.verdictOf('src/c.ts'), undefined);
  assert.equal(verdicts.skippedEntry('src/c.ts'), undefined);
  await assert.rejects(verdicts.verdictOf('src/never.ts'), RangeError);
  // another text of a file (an editor's unsaved document) is decided anew and replaces the decision
  assert.equal(await verdicts.check('src/a.ts', 'export const a = 1;\n'), undefined);
  assert.equal(verdicts.skippedEntry('src/a.ts'), undefined);
  assert.deepEqual(await verdicts.check('src/c.ts', `// edited\n${dirty}`), { rule: 'github', line: 5, column: 12 });
  assert.deepEqual(verdicts.skippedEntry('src/c.ts'), { path: 'src/c.ts', reason: 'secret', detail: 'github secret at line 5, column 12 (secretlint rules)' });
  // disabled (skipSecrets: false): every file is clean, nothing is scanned or needed
  const off = new FileSecretVerdicts(false);
  assert.equal(await off.check('src/a.ts', dirty), undefined);
  assert.equal(await off.verdictOf('src/never.ts'), undefined);
  assert.equal(off.skippedEntry('src/a.ts'), undefined);
});

test('the detail names the detector that found the secret: secretlint\'s preset, RepoSnap\'s token patterns or the generic credential rule', () => {
  assert.equal(secretDetail({ rule: 'github', line: 3, column: 15 }), 'github secret at line 3, column 15 (secretlint rules)');
  assert.equal(secretDetail({ rule: 'basicauth', line: 1, column: 1 }), 'basicauth secret at line 1, column 1 (secretlint rules)');
  assert.equal(secretDetail({ rule: 'stripe', line: 2, column: 6 }), 'stripe secret at line 2, column 6 (RepoSnap token patterns)');
  assert.equal(secretDetail({ rule: 'google-api-key', line: 2, column: 6 }), 'google-api-key secret at line 2, column 6 (RepoSnap token patterns)');
  assert.equal(secretDetail({ rule: 'generic-credential', line: 2, column: 13 }), 'generic-credential secret at line 2, column 13 (generic credential assignment)');
});

test('database credential files, password databases and keychains are excluded by name; id_ed25519 and *.p12 were already; look-alikes stay', async (t) => {
  const files: Record<string, string> = {
    '.pgpass': '.pgpass',
    'home/.pgpass': '.pgpass',
    'AppData/postgresql/pgpass.conf': 'pgpass.conf',
    '.my.cnf': '.my.cnf',
    '.mylogin.cnf': '.mylogin.cnf',
    '.s3cfg': '.s3cfg',
    '.dockercfg': '.dockercfg',
    'vault/Passwords.KDBX': '*.kdbx',
    'vault/old.kdb': '*.kdb',
    'vault/login.keychain-db': '*.keychain-db',
    'vault/work.keychain': '*.keychain',
    'vault/safe.psafe3': '*.psafe3',
    'certs/client.pkcs12': '*.pkcs12',
    'certs/client.p12': '*.p12',
    'keys/id_ed25519': 'id_ed25519',
    '.pgpass.bak': '.pgpass.bak',
  };
  const tree: Record<string, string> = { 'etc/my.cnf': '[mysqld]\nport = 3306\n', 'src/pgpass.ts': 'export const file = 1;\n', 'docs/keychain.md': '# keychain\n' };
  for (const p of Object.keys(files)) tree[p] = 'value\n';
  const root = await makeRepo(t, tree);
  const result = await pack(root);
  assert.deepEqual(manifest(result).files, ['docs/keychain.md', 'etc/my.cnf', 'src/pgpass.ts']);
  assert.deepEqual(
    result.ignored.map((e) => [e.path, e.detail]),
    Object.entries(files)
      .map(([p, rule]) => [p, `secret exclude '${rule}'`])
      .sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
  );
  for (const p of ['.pgpass', 'pgpass.conf', '.my.cnf', '*.kdbx', '*.keychain-db', 'id_ed25519', '*.p12']) assert.ok(SECRET_EXCLUDES.includes(p), p);
});
