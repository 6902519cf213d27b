/**
 * bench/secrets/labeled: recall and precision of the secret scan (`findSecret`, every rule) on a
 * hand-labelled set of 60+ kinds: one file per credential form a tester listed as missed (glued
 * password keys, INI `key = value`, `.pgpass` lines, Go/TypeScript typed declarations, an
 * environment read's fallback, weak passwords, command-line passwords, URL userinfo), one per
 * token kind (the preset's, RepoSnap's own, the seven of issue 29 each in a comment and in a
 * `.env` line), one per private key kind (issue 29: plain, indented in YAML, in a template
 * string), and one per near miss that must stay clean (placeholders, `bypass`/`compass`,
 * prompts, variables, token look-alikes, code that builds a PEM). Each case has a group
 * (`forms`, `tokens`, `keys`); the counts are printed per group and in all.
 *
 *   node --import tsx bench/secrets/labeled.ts [--json]
 *
 * Values are assembled at run time so that this file holds nothing credential-shaped. Prints
 * true/false positives and negatives, recall = TP / (TP + FN), precision = TP / (TP + FP), and
 * the missed and wrongly reported cases by name. Run on two commits to compare (the corpus counts
 * of bench/secrets/scan.ts measure false positives on real code; this measures recall).
 */
import { findSecret } from '../../src/context/secrets';
import { fakePrivateKeys, fakeSecrets, fakeTokens, randomChars } from '../../test/context/fake-secrets';

/** A weak human password (`hunter` and a doubled digit). */
const weak = (d: number): string => ['hun', 'ter', String(d), String(d)].join('');
/** A strong value: a letter, a digit, a symbol and alphanumerics that vary with `d`. */
const strong = (d: number): string => ['Xq9', '-k2hP', String(d), 'zQw7xY4m'].join('');
/** An alphanumeric value that also reads as an identifier. */
const alnum = (d: number): string => ['k2hP', String(d), 'zQw7xY4mR'].join('');

/** One labelled file: `secret` says whether the scan must report it; `group` where it is counted. */
interface Labeled {
  name: string;
  path: string;
  text: string;
  secret: boolean;
  group: string;
}

const HEX = '0123456789abcdef';
/** `pem`'s lines, each prefixed with `indent`. */
const indented = (pem: string, indent: string): string => pem.trimEnd().split('\n').map((l) => indent + l).join('\n') + '\n';

/** Token kinds: the test fixtures' (fake-secrets.ts), more of the preset's, and the seven of issue 29 in two places each. */
const TOKENS: Labeled[] = [
  ...fakeSecrets().filter((f) => !f.kind.startsWith('private key')).map((f) => ({ name: f.kind, path: f.path, text: f.content })),
  { name: 'Slack webhook', path: 'ops/notify.sh', text: `curl -X POST https://hooks.slack.com/services/T${randomChars(30, 8).toUpperCase()}/B${randomChars(31, 10).toUpperCase()}/${randomChars(32, 24)}\n` },
  { name: 'Hugging Face token', path: 'ml/train.py', text: `login("${'h' + 'f_' + randomChars(33, 34, 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ')}")\n` },
  { name: 'Shopify token', path: 'shop/client.rb', text: `TOKEN = "${'shp' + 'at_' + randomChars(34, 32, HEX)}"\n` },
  { name: 'Databricks token', path: 'jobs/run.py', text: `host_token = "${'da' + 'pi' + randomChars(35, 32, HEX)}"\n` },
  { name: 'Docker Hub PAT', path: 'ci/push.sh', text: `echo ${'dckr' + '_pat_' + randomChars(36, 27)} | docker login -u me --password-stdin\n` },
  { name: 'Grafana service account', path: 'ops/dash.ts', text: `const t = "${'gl' + 'sa_' + randomChars(37, 32) + '_' + randomChars(38, 8, HEX)}";\n` },
  { name: 'Linear API key', path: 'tools/linear.ts', text: `const k = "${'lin' + '_api_' + randomChars(39, 40)}";\n` },
  { name: 'Figma token', path: 'tools/figma.ts', text: `const k = "${'fi' + 'gd_' + randomChars(40, 43)}";\n` },
  { name: 'Notion token', path: 'tools/notion.ts', text: `const k = "${'nt' + 'n_' + randomChars(41, 11, '0123456789') + randomChars(42, 35)}";\n` },
  { name: 'Postgres URL with password', path: 'deploy/db.txt', text: `postgres://app:${randomChars(43, 16)}@db.internal:5432/app\n` },
  { name: 'MySQL URL with password', path: 'deploy/mysql.txt', text: `mysql://app:${randomChars(44, 16)}@db.internal:3306/app\n` },
  { name: 'MongoDB URL with password', path: 'deploy/mongo.txt', text: `mongodb+srv://app:${randomChars(45, 16)}@cluster0.example.net/app\n` },
  { name: 'GitHub OAuth token', path: 'src/oauth.ts', text: `const t = "${'gh' + 'o_' + randomChars(46, 36)}";\n` },
  { name: 'Slack user token', path: 'bots/user.js', text: `const t = "${'xo' + 'xp-' + randomChars(47, 12, '0123456789') + '-' + randomChars(48, 12, '0123456789') + '-' + randomChars(49, 24)}";\n` },
  { name: 'HashiCorp Vault token', path: 'ops/vault.sh', text: `export VAULT_TOKEN=${'hv' + 's.' + randomChars(51, 96)}\n` },
  { name: 'TestPyPI token', path: 'ci/upload.sh', text: `twine upload -p ${'py' + 'pi-AgENdGVzdC5weXBpLm9yZw' + randomChars(52, 160, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_')} dist/*\n` },
  { name: 'DigitalOcean refresh token', path: 'ops/do.json', text: `{"refresh": "${'do' + 'r_v1_' + randomChars(53, 64, HEX)}"}\n` },
  ...Object.entries(fakeTokens(50)).flatMap(([rule, token]) => [
    { name: `${rule} in a comment`, path: 'src/client.ts', text: `export const a = 1;\n// ${token}\n` },
    { name: `${rule} in .env`, path: 'deploy/app.conf', text: `VALUE=${token}\n` },
  ]),
].map((c) => ({ ...c, secret: true, group: 'tokens' }));

/** Private key kinds (issue 29), each alone in a `.txt`, and the new kinds also indented in YAML and in a `.ts` template string. */
const KEYS: Labeled[] = [
  ...fakeSecrets().filter((f) => f.kind.startsWith('private key')).map((f) => ({ name: f.kind, path: f.path, text: f.content })),
  ...Object.entries(fakePrivateKeys(60)).map(([kind, pem]) => ({ name: kind, path: kind === 'OpenPGP secret key' ? 'release.asc' : 'notes/key.txt', text: pem })),
  ...Object.entries(fakePrivateKeys(61))
    .filter(([kind]) => kind !== 'RSA PKCS#1' && kind !== 'EC PKCS#8')
    .flatMap(([kind, pem]) => [
      { name: `${kind} indented in values.yaml`, path: 'charts/app/values.yaml', text: `tls:\n  key: |\n${indented(pem, '    ')}` },
      { name: `${kind} in a template string`, path: 'src/key.ts', text: `export const key = \`${pem}\`;\n` },
    ]),
].map((c) => ({ ...c, secret: true, group: 'keys' }));

const POSITIVES: Labeled[] = [
  { name: 'glued PGPASSWORD', path: 'scripts/db.sh', text: `export PGPASSWORD=${strong(1)}\n` },
  { name: 'glued DBPASS', path: 'deploy/app.env.sh', text: `DBPASS=${strong(2)}\n` },
  { name: 'MYSQL_PWD weak', path: 'scripts/mysql.sh', text: `export MYSQL_PWD=${weak(3)}\n` },
  { name: 'REDIS_PASSWD weak', path: 'deploy/redis.yml', text: `REDIS_PASSWD: ${weak(4)}\n` },
  { name: 'INI pass = value', path: 'conf/app.ini', text: `[db]\npass = ${alnum(5)}\n` },
  { name: 'INI password = value', path: 'etc/client.cnf', text: `[client]\npassword = ${alnum(6)}\n` },
  { name: '.pgpass line', path: 'docs/pg.md', text: `    localhost:5432:app:admin:${strong(7)}\n` },
  { name: 'Go typed const', path: 'cmd/main.go', text: `package main\n\nconst apiKey string = "${strong(8)}"\n` },
  { name: 'Go var weak password', path: 'cmd/db.go', text: `package main\n\nvar dbPassword = "${weak(9)}"\n` },
  { name: 'TypeScript typed const', path: 'src/keys.ts', text: `export const apiKey: string = "${strong(1)}";\n` },
  { name: 'process.env fallback', path: 'src/config.js', text: `const key = process.env.API_KEY || "${strong(2)}";\n` },
  { name: 'os.getenv default weak', path: 'app/settings.py', text: `DB_PASSWORD = os.getenv("DB_PASSWORD", "${weak(3)}")\n` },
  { name: 'os.environ.get default', path: 'app/env.py', text: `KEY = os.environ.get("API_KEY", "${strong(4)}")\n` },
  { name: 'weak DB_PASSWORD', path: 'deploy/compose.yml', text: `services:\n  db:\n    environment:\n      - DB_PASSWORD=${weak(5)}\n` },
  { name: 'mysql -p', path: 'Dockerfile', text: `FROM mysql:8\nRUN mysql -uroot -p${weak(6)} < /init.sql\n` },
  { name: 'mysql --password=', path: 'Makefile', text: `load:\n\tmysql --password=${weak(7)} app < dump.sql\n` },
  { name: 'curl -u user:password', path: 'README.md', text: `    curl -u admin:${strong(8)} https://ci.internal/api\n` },
  { name: 'URL userinfo, long TLD', path: 'deploy/hooks.yml', text: `url: https://ci:${weak(9)}@ci.internal/hook\n` },
  { name: 'URL userinfo, basicauth', path: 'deploy/hook.yml', text: `url: https://ci:${weak(1)}@ci.example.com/hook\n` },
].map((c) => ({ ...c, secret: true, group: 'forms' }));
POSITIVES.push(...TOKENS, ...KEYS);

/** `-----BEGIN PRIVATE KEY-----` / `-----END …`, assembled so that this file holds no armor line. */
const BEGIN = '-----BEGIN PRIV' + 'ATE KEY-----';
const END = '-----END PRIV' + 'ATE KEY-----';

const NEGATIVES: Labeled[] = [
  { name: 'bypass', path: 'src/a.ts', text: `const bypass = "${strong(1)}";\n` },
  { name: 'compass', path: 'src/b.py', text: `compass = "${strong(2)}"\n` },
  { name: 'placeholder changeme', path: 'deploy/c.yml', text: 'DB_PASSWORD=changeme\n' },
  { name: 'template', path: 'deploy/d.yml', text: 'DB_PASSWORD=${DB_PASSWORD}\n' },
  { name: 'weak value, token key', path: 'deploy/e.sh', text: `API_TOKEN=${weak(3)}\n` },
  { name: 'code reference with spaces', path: 'src/f.py', text: `password = ${alnum(4)}\n` },
  { name: 'mysql prompt', path: 'README.md', text: '    mysql -u root -p app\n' },
  { name: 'mysql variable', path: 'Dockerfile', text: 'RUN mysql -uroot -p$MYSQL_ROOT_PASSWORD < /init.sql\n' },
  { name: 'curl variables', path: 'ci.sh', text: 'curl -u "$CI_USER:$CI_TOKEN" https://ci.internal/api\n' },
  { name: 'env fallback empty', path: 'src/g.js', text: 'const key = process.env.API_KEY || "";\n' },
  { name: 'compiler position', path: 'build.log', text: 'main.go:12:5:error:undefined99\n' },
  { name: 'URL placeholder', path: 'docs/h.md', text: 'postgres://user:password@localhost/db\n' },
  { name: 'JOSE-less dotted base64', path: 'src/i.ts', text: `const x = "${Buffer.from('{"typ":"JWT"}').toString('base64url')}.${Buffer.from('{"sub":"1"}').toString('base64url')}.${randomChars(70, 43)}";\n` },
  { name: 'SKIP constant', path: 'src/j.ts', text: 'const SKIP_THE_LONG_CONSTANT_NAME_FOR_TESTS_1234 = 1;\n' },
  { name: 'hash after SK', path: 'src/k.ts', text: `const h = "hashSK${randomChars(71, 32, HEX)}";\n` },
  { name: 'DigitalOcean placeholder', path: 'docs/l.md', text: `DIGITALOCEAN_TOKEN=${'do' + 'p_v1_' + 'x'.repeat(64)}\n` },
  { name: 'pypi package name', path: 'docs/m.md', text: 'pip install pypi-simple-index-package-name-for-the-registry-mirror\n' },
  { name: 'Discord webhook template', path: 'docs/n.md', text: `POST https://discord.com/api/web${'hooks'}/{webhook.id}/{webhook.token}\n` },
  { name: 'code that builds a PEM', path: 'src/o.ts', text: `const pem = "${BEGIN}\\n" + body + "\\n${END}";\n` },
  { name: 'PEM placeholder', path: 'docs/p.md', text: `${BEGIN}\nMIIE...\n${END}\n` },
  { name: 'PEM regular expression', path: 'src/q.ts', text: `const re = /${BEGIN}([\\s\\S]*?)${END}/;\n` },
].map((c) => ({ ...c, secret: false, group: 'near misses' }));

async function main(): Promise<void> {
  const missed: string[] = [];
  const wrong: string[] = [];
  const groups: Record<string, { cases: number; caught: number }> = {};
  let tp = 0;
  let fp = 0;
  for (const c of [...POSITIVES, ...NEGATIVES]) {
    const found = (await findSecret(c.text, c.path)) !== undefined;
    const g = (groups[c.group] ??= { cases: 0, caught: 0 });
    g.cases++;
    if (found) g.caught++;
    if (c.secret && found) tp++;
    else if (c.secret) missed.push(c.name);
    else if (found) {
      fp++;
      wrong.push(c.name);
    }
  }
  const fn = missed.length;
  const tn = NEGATIVES.length - fp;
  const kinds = new Set(POSITIVES.map((c) => c.name.replace(/ (in a comment|in \.env|indented in values\.yaml|in a template string)$/, ''))).size;
  const result = { kinds, positives: POSITIVES.length, negatives: NEGATIVES.length, tp, fn, fp, tn, recall: tp / (tp + fn), precision: tp + fp === 0 ? null : tp / (tp + fp), groups, missed, wronglyReported: wrong };
  if (process.argv.includes('--json')) console.log(JSON.stringify(result));
  else {
    for (const [name, g] of Object.entries(groups)) console.log(`${name}: ${g.caught}/${g.cases} reported`);
    console.log(`${kinds} kinds in ${POSITIVES.length} files, ${NEGATIVES.length} near misses`);
    console.log(`recall ${tp}/${tp + fn}, precision ${tp}/${tp + fp}; missed: ${missed.join(', ') || 'none'}; wrongly reported: ${wrong.join(', ') || 'none'}`);
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
