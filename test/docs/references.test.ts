/**
 * Comments and messages point only to documents that ship with the repository: a reference to a
 * design note kept elsewhere (`DESIGN.md`) leaves a reader of the code with nothing to open. The
 * user's documents (README.md, CHANGELOG.md, docs/*.md) link only to files that exist and to
 * headings that exist (GitHub's anchors), and the README stays a page a user reads.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..');
const SOURCES = ['src', 'bench', 'test', 'media/src', 'native/addon', 'native/common', 'native/bench', 'native/build.mjs', 'native/CMakeLists.txt', '.ci', 'build.mjs'];

/** The project's own files under `top`: git's tracked and untracked-but-not-ignored ones (so
 * benchmark downloads such as bench/.repoqa/, ignored by .gitignore, are not scanned). */
function* files(top: string): Generator<string> {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z', '--', top], { cwd: ROOT, encoding: 'utf8' });
  for (const rel of out.split('\0')) {
    if (rel && /\.(ts|mjs|js|cpp|h|sh|txt)$|\/run$/.test(rel) && fs.existsSync(path.join(ROOT, rel))) yield path.join(ROOT, rel);
  }
}

test('every document named in the sources (an upper-case NAME.md) exists in the repository', () => {
  const missing: string[] = [];
  let seen = 0;
  for (const top of SOURCES) {
    for (const file of files(top)) {
      if (file === __filename) continue; // names documents in its own prose
      const text = fs.readFileSync(file, 'utf8');
      for (const m of text.matchAll(/\b([A-Z][A-Z0-9_-]*\.md)\b/g)) {
        seen++;
        if (!fs.existsSync(path.join(ROOT, m[1]!))) missing.push(`${path.relative(ROOT, file)}: ${m[1]}`);
      }
    }
  }
  assert.ok(seen > 0, 'no reference found at all: the scan is broken');
  assert.deepEqual(missing, []);
});

/** The user's documents: README.md and every docs/*.md, relative to the root. */
function userDocs(): string[] {
  const docs = fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`);
  return ['README.md', 'CHANGELOG.md', ...docs];
}

/** A Markdown text without its fenced code blocks (``` or ~~~), each fence's lines blanked so line numbers hold. */
function withoutFences(text: string): string[] {
  let fence: string | undefined;
  return text.split('\n').map((line) => {
    const open = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (fence === undefined && open) {
      fence = open[1]![0]!.repeat(open[1]!.length);
      return '';
    }
    if (fence !== undefined) {
      if (new RegExp(`^\\s{0,3}${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`).test(line)) fence = undefined;
      return '';
    }
    return line;
  });
}

/**
 * The anchor GitHub gives a heading (github-slugger's rules): the heading's text (code spans and
 * link texts kept, markup dropped), lower-cased, every character that is not a letter, mark,
 * digit, connector (`_`), `-` or space removed, spaces turned into `-`.
 */
function githubSlug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a Markdown text's headings, in order; a repeated slug gets `-1`, `-2`, … as on GitHub. */
function anchors(text: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(text)) {
    const h = /^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line);
    if (!h) continue;
    const base = githubSlug(h[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Every relative link target of a Markdown text (inline links, images, reference definitions), with its line. */
function relativeLinks(text: string): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = [];
  withoutFences(text).forEach((raw, i) => {
    const line = raw.replace(/(`+)[^`]*?\1/g, ''); // code spans are text, not links
    const targets = [...line.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
    const def = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(line);
    if (def) targets.push(def[1]!);
    for (const target of targets) {
      if (target === '' || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
      out.push({ line: i + 1, target });
    }
  });
  return out;
}

test("GitHub's heading anchors, as the link check computes them", () => {
  assert.equal(githubSlug('The ranked packing at 20,000 files (bench/pack-large, bench/pack-host)'), 'the-ranked-packing-at-20000-files-benchpack-large-benchpack-host');
  assert.equal(githubSlug("The auto packing's two passes (bench/pack-auto)"), 'the-auto-packings-two-passes-benchpack-auto');
  assert.equal(githubSlug('Gemma 3 270M: interleaved sliding window'), 'gemma-3-270m-interleaved-sliding-window');
  assert.equal(githubSlug('`reposnap ask` and the [cache](cache.md)'), 'reposnap-ask-and-the-cache');
  assert.equal(githubSlug('Code_prior — naïve  spacing'), 'code_prior--naïve--spacing');
  assert.deepEqual([...anchors('# A\n## A\n```\n# not a heading\n```\n### A ###\n')], ['a', 'a-1', 'a-2']);
  assert.deepEqual(relativeLinks('[x](a.md#b) ![p](../c.png "t") `[no](d.md)` [e](https://e.org)\n```\n[f](g.md)\n```\n[r]: h.md\n'), [
    { line: 1, target: 'a.md#b' },
    { line: 1, target: '../c.png' },
    { line: 5, target: 'h.md' },
  ]);
});

test('every relative link and anchor in README.md and docs/*.md resolves', () => {
  const broken: string[] = [];
  let checked = 0;
  for (const doc of userDocs()) {
    const text = fs.readFileSync(path.join(ROOT, doc), 'utf8');
    for (const { line, target } of relativeLinks(text)) {
      checked++;
      const [file, anchor] = target.split('#', 2) as [string, string | undefined];
      const resolved = file === '' ? path.join(ROOT, doc) : path.resolve(path.dirname(path.join(ROOT, doc)), decodeURIComponent(file));
      const where = `${doc}:${line}: ${target}`;
      if (!resolved.startsWith(ROOT + path.sep) || !fs.existsSync(resolved)) {
        broken.push(`${where} (no such file)`);
        continue;
      }
      if (anchor !== undefined && resolved.endsWith('.md') && !anchors(fs.readFileSync(resolved, 'utf8')).has(anchor)) broken.push(`${where} (no such heading)`);
    }
  }
  assert.ok(checked > 50, `only ${checked} links found: the scan is broken`);
  assert.deepEqual(broken, []);
});

test('the README is a user\'s page of at most 260 lines that links every document in docs/', () => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
  assert.ok(lines <= 260, `README.md has ${lines} lines`);
  const linked = new Set(relativeLinks(readme).map((l) => l.target.split('#')[0]));
  assert.deepEqual(userDocs().filter((d) => d.startsWith('docs/') && !linked.has(d)), [], 'docs not linked from the README');
  // the set-up commands CI and a new user run
  assert.match(readme, /^npm ci && npm run build && npm run models -- --model coder && node bin\/reposnap\.js ask --repo \. "[^"]+"$/m);
  assert.match(readme, /^npm test$/m);
  assert.match(fs.readFileSync(path.join(ROOT, '.ci', 'run'), 'utf8'), /^npm test$/m, '.ci/run runs the README\'s test command');
  assert.doesNotMatch(readme, /\bissue \d+|#\d+\b/i, 'no issue numbers in user docs');
});
