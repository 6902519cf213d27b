/**
 * bench/secrets/labeled: recall and precision of the secret scan (`findSecret`, every rule) on a
 * small hand-labelled set: one file per credential form a tester listed as missed (glued
 * password keys, INI `key = value`, `.pgpass` lines, Go/TypeScript typed declarations, an
 * environment read's fallback, weak passwords, command-line passwords, URL userinfo) and one per
 * near miss that must stay clean (placeholders, `bypass`/`compass`, prompts, variables).
 *
 *   node --import tsx bench/secrets/labeled.ts [--json]
 *
 * Values are assembled at run time so that this file holds nothing credential-shaped. Prints
 * true/false positives and negatives, recall = TP / (TP + FN), precision = TP / (TP + FP), and
 * the missed and wrongly reported cases by name. Run on two commits to compare (the corpus counts
 * of bench/secrets/scan.ts measure false positives on real code; this measures recall).
 */
import { findSecret } from '../../src/context/secrets';

/** A weak human password (`hunter` and a doubled digit). */
const weak = (d: number): string => ['hun', 'ter', String(d), String(d)].join('');
/** A strong value: a letter, a digit, a symbol and alphanumerics that vary with `d`. */
const strong = (d: number): string => ['Xq9', '-k2hP', String(d), 'zQw7xY4m'].join('');
/** An alphanumeric value that also reads as an identifier. */
const alnum = (d: number): string => ['k2hP', String(d), 'zQw7xY4mR'].join('');

/** One labelled file: `secret` says whether the scan must report it. */
interface Labeled {
  name: string;
  path: string;
  text: string;
  secret: boolean;
}

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
].map((c) => ({ ...c, secret: true }));

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
].map((c) => ({ ...c, secret: false }));

async function main(): Promise<void> {
  const missed: string[] = [];
  const wrong: string[] = [];
  let tp = 0;
  let fp = 0;
  for (const c of [...POSITIVES, ...NEGATIVES]) {
    const found = (await findSecret(c.text, c.path)) !== undefined;
    if (c.secret && found) tp++;
    else if (c.secret) missed.push(c.name);
    else if (found) {
      fp++;
      wrong.push(c.name);
    }
  }
  const fn = missed.length;
  const tn = NEGATIVES.length - fp;
  const result = { positives: POSITIVES.length, negatives: NEGATIVES.length, tp, fn, fp, tn, recall: tp / (tp + fn), precision: tp + fp === 0 ? null : tp / (tp + fp), missed, wronglyReported: wrong };
  if (process.argv.includes('--json')) console.log(JSON.stringify(result));
  else console.log(`recall ${tp}/${tp + fn}, precision ${tp}/${tp + fp}; missed: ${missed.join(', ') || 'none'}; wrongly reported: ${wrong.join(', ') || 'none'}`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
