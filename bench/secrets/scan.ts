/**
 * bench/secrets: the secret scan's cost and reports over large corpora of real code that hold
 * no real secrets (this checkout's node_modules, llama.cpp's sources under
 * native/build/llama.cpp), with and without the generic credential rule, side by side.
 *
 *   node --import tsx bench/secrets/scan.ts [--out bench/results/secrets-generic.json] DIR…
 *
 * Every regular file under each DIR (symlinks not followed, `.git` not entered) is read and
 * classified as the packer does (`readTextFile`: at most 256 KiB, not binary, minified or
 * generated); each text file is then scanned by `findSecret` without the generic rule
 * (`genericCredentials: false`, the rules before it) and with it, in alternating order from
 * file to file so that neither gets the warmer caches, and by `findCredentialAssignments`
 * alone. Times are sums of per-file wall times [ms]; ms/MB divides by the text's UTF-8 size.
 * Each report is listed by file, line, rule and (for the generic rule) the key and the value's
 * length and entropy, never the value itself (so that this results file holds no
 * credential-shaped string).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { findCredentialAssignments, shannonEntropy } from '../../src/context/credentials';
import { readTextFile } from '../../src/context/filter';
import { findSecret, GENERIC_CREDENTIAL_RULE } from '../../src/context/secrets';
import { loadAverages } from '../machine';

/** Every regular file under `dir`, depth first, `.git` skipped, symlinks not followed. */
function* filesUnder(dir: string): Generator<string> {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== '.git') yield* filesUnder(p);
    } else if (e.isFile()) yield p;
  }
}

/** One report of `findSecret` or of the generic rule. */
interface Hit {
  file: string;
  line: number;
  rule: string;
  key?: string;
  valueChars?: number;
  entropyBits?: number;
}

/** The line (1-based) of `offset` in `text`. */
function lineOf(text: string, offset: number): number {
  let n = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

async function scanCorpus(dir: string) {
  let files = 0;
  let textFiles = 0;
  let bytes = 0;
  let before = 0;
  let after = 0;
  let genericOnly = 0;
  const reportsBefore: Hit[] = [];
  const reportsAfter: Hit[] = [];
  const generic: Hit[] = [];
  for (const abs of filesUnder(dir)) {
    files++;
    const verdict = await readTextFile(abs);
    if (verdict.kind !== 'text') continue;
    textFiles++;
    const rel = path.relative(dir, abs).split(path.sep).join('/');
    const text = verdict.text;
    bytes += Buffer.byteLength(text, 'utf8');
    const runBefore = async () => {
      const t = performance.now();
      const r = await findSecret(text, rel, { genericCredentials: false });
      before += performance.now() - t;
      return r;
    };
    const runAfter = async () => {
      const t = performance.now();
      const r = await findSecret(text, rel);
      after += performance.now() - t;
      return r;
    };
    let rb;
    let ra;
    if (textFiles % 2 === 0) {
      rb = await runBefore();
      ra = await runAfter();
    } else {
      ra = await runAfter();
      rb = await runBefore();
    }
    if (rb !== undefined) reportsBefore.push({ file: rel, line: rb.line, rule: rb.rule });
    if (ra !== undefined) reportsAfter.push({ file: rel, line: ra.line, rule: ra.rule });
    const t = performance.now();
    const assignments = findCredentialAssignments(text);
    genericOnly += performance.now() - t;
    for (const a of assignments) {
      const value = text.slice(a.start, a.end);
      generic.push({ file: rel, line: lineOf(text, a.start), rule: GENERIC_CREDENTIAL_RULE, key: a.key, valueChars: value.length, entropyBits: Math.round(shannonEntropy(value) * 100) / 100 });
    }
  }
  const mb = bytes / 1e6;
  const round = (x: number) => Math.round(x * 10) / 10;
  return {
    dir,
    files,
    textFiles,
    textMB: Math.round(mb * 100) / 100,
    msBefore: round(before),
    msAfter: round(after),
    msPerMBBefore: round(before / mb),
    msPerMBAfter: round(after / mb),
    msGenericRuleAlone: round(genericOnly),
    msPerMBGenericRuleAlone: round(genericOnly / mb),
    filesReportedBefore: reportsBefore.length,
    filesReportedAfter: reportsAfter.length,
    genericAssignments: generic.length,
    filesWithGenericAssignments: new Set(generic.map((g) => g.file)).size,
    reportsBefore,
    reportsAfter,
    generic,
  };
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({ options: { out: { type: 'string' } }, allowPositionals: true });
  if (positionals.length === 0) {
    console.error('usage: node --import tsx bench/secrets/scan.ts [--out FILE] DIR…');
    process.exit(2);
  }
  await findSecret('warm up the rules\n');
  const loadStart = loadAverages();
  const corpora = [];
  for (const dir of positionals) {
    const r = await scanCorpus(path.resolve(dir));
    corpora.push({ ...r, dir });
    console.log(
      `${dir}: ${r.textFiles}/${r.files} text files, ${r.textMB} MB; findSecret ${r.msPerMBBefore} ms/MB without the generic rule, ${r.msPerMBAfter} with it ` +
        `(generic rule alone ${r.msPerMBGenericRuleAlone} ms/MB); files reported ${r.filesReportedBefore} -> ${r.filesReportedAfter}; generic assignments ${r.genericAssignments} in ${r.filesWithGenericAssignments} files`,
    );
  }
  const meta = { date: new Date().toISOString(), node: process.version, loadavgStart: loadStart, loadavgEnd: loadAverages(), command: `node --import tsx bench/secrets/scan.ts ${process.argv.slice(2).join(' ')}` };
  if (values.out !== undefined) fs.writeFileSync(values.out, JSON.stringify({ meta, corpora }, null, 2) + '\n');
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
