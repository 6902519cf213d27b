/**
 * The ranked packing (issue 15): file tree, files in full by PageRank, repository map; exact
 * budgets, a question-independent prefix, edit-stable sections, parses cached by content.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { test } from 'node:test';
import { fitSection } from '../../src/context/budget';
import { TagsCache } from '../../src/context/map/cache';
import { createTagsParser, type TagsParser } from '../../src/context/map/tags';
import { fileTreeLines, formatFileTree } from '../../src/context/map/tree';
import { formatMapBlock } from '../../src/context/map/repomap';
import { packRepository, withRetrievalSkips, type PackOptions } from '../../src/context/pack';
import { retrieveChunks } from '../../src/context/retrieve/retrieve';
import { fakeSecrets } from './fake-secrets';
import { makeRepo, quarterChars } from './fixtures';

const parser = createTagsParser();

/** A repository where `core.ts` is the largest file and every other file uses it. */
function repo(): Record<string, string> {
  const filler = (n: number) => Array.from({ length: n }, (_, i) => `// note ${i}: nothing to see here, just a long comment line`).join('\n');
  return {
    'src/core.ts': `export function computeTotals(items: number[]): number {\n  return items.reduce((a, b) => a + b, 0);\n}\n${filler(14)}\n`,
    'src/app.ts': `import { computeTotals } from './core';\nexport function runApp(): number {\n  return computeTotals([1, 2]);\n}\n`,
    'src/cli.ts': `import { computeTotals } from './core';\nexport function runCli(): number {\n  return computeTotals([3]);\n}\n`,
    'src/web.ts': `import { computeTotals } from './core';\nexport const handler = (): number => computeTotals([4]);\n`,
    'lib/extra.py': `def lonely_helper(x):\n    return x\n\n\nclass Unused:\n    pass\n${'# padding line for size\n'.repeat(30)}`,
    'README.md': 'A tiny repository.\n',
  };
}

function ranked(root: string, options: Partial<PackOptions> = {}) {
  return packRepository(root, { tokenBudget: 500, countTokens: quarterChars, packing: 'ranked', tagsCache: new TagsCache({ parser }), ...options });
}

test('the file tree lists files by directory, root as ./, names with spaces quoted; a large directory takes several lines', () => {
  const lines = fileTreeLines(['src/b.ts', 'README.md', 'src/a b.ts', 'src/sub/c.ts', 'a.json']);
  assert.equal(
    formatFileTree(lines.map((l) => l.line), 0, 0),
    'Repository file tree (one directory per line: its files)\n```\n./: README.md a.json\nsrc/: "a b.ts" b.ts\nsrc/sub/: c.ts\n```\n',
  );
  assert.equal(formatFileTree([lines[0]!.line], 3, 2).split('\n').at(-3), '… 3 more files in 2 directories');
  const many = fileTreeLines(Array.from({ length: 20 }, (_, i) => `d/f${String(i).padStart(2, '0')}.c`));
  assert.deepEqual(many.map((l) => l.paths.length), [16, 4]);
  assert.equal(many[1]!.line, 'd/: f16.c f17.c f18.c f19.c\n');
});

test('a map block lists each definition as line: signature', async () => {
  const tags = await parser.parse('def a():\n    pass\n\nclass B:\n    def c(self):\n        pass\n', 'python');
  assert.equal(formatMapBlock('pkg/m.py', tags.definitions), 'pkg/m.py:\n  1: def a():\n  4: class B:\n  5: def c(self):\n');
});

test('ranked packing keeps the most referenced file in full where smallest-first drops it, maps the rest, and respects every budget exactly', async (t) => {
  const root = await makeRepo(t, repo());
  const smallest = await packRepository(root, { tokenBudget: 500, countTokens: quarterChars });
  assert.ok(!smallest.files.some((f) => f.path === 'src/core.ts'), 'smallest-first drops the largest file');

  const r = await ranked(root);
  assert.equal(r.packing, 'ranked');
  assert.deepEqual(r.sections.map((s) => s.kind), ['tree', ...r.files.map(() => 'file'), 'map']);
  assert.ok(r.files.some((f) => f.path === 'src/core.ts'), 'PageRank keeps the file everything references');
  for (const s of r.sections) assert.equal(s.tokens, quarterChars(s.text), `${s.kind} tokens are counted on the whole section`);
  assert.equal(r.totalTokens, r.sections.reduce((n, s) => n + s.tokens, 0));
  assert.ok(r.totalTokens <= 500, `${r.totalTokens} <= 500`);
  assert.ok(r.sections[0]!.tokens <= 50, 'the tree within 10 %');
  // every parsed file not in full is in the map or said to be over budget
  const inFull = new Set(r.files.map((f) => f.path));
  const map = r.sections.at(-1)!.text;
  for (const m of r.mapped) {
    assert.ok(!inFull.has(m.path));
    assert.ok(map.includes(`\n${m.path}:\n`), `${m.path} in the map`);
  }
  for (const s of r.skipped.filter((s) => r.mapped.some((m) => m.path === s.path))) assert.match(s.detail ?? '', /repository map only/);
  assert.equal(r.sections[0]!.text, 'Repository file tree (one directory per line: its files)\n```\n./: README.md\nlib/: extra.py\nsrc/: app.ts cli.ts core.ts web.ts\n```\n');
});

test('the tree, full and map budgets hold exactly at every budget from 0 to 700 tokens', async (t) => {
  const root = await makeRepo(t, repo());
  const tagsCache = new TagsCache({ parser });
  for (let budget = 0; budget <= 700; budget += 7) {
    const r = await ranked(root, { tokenBudget: budget, tagsCache });
    assert.ok(r.totalTokens <= budget, `budget ${budget}: ${r.totalTokens}`);
    const tree = r.sections.find((s) => s.kind === 'tree');
    // the detailed tree within its 10 % share; the compacted one (no file names) within twice that
    const compacted = tree !== undefined && !tree.text.includes('.ts');
    assert.ok((tree?.tokens ?? 0) <= Math.floor(budget * 0.1) * (compacted ? 2 : 1), `budget ${budget}: tree ${tree?.tokens}`);
    for (const s of r.sections) assert.equal(s.tokens, quarterChars(s.text));
  }
  // a budget the whole repository fits: everything in full, no map
  const all = await ranked(root, { tokenBudget: 100_000, tagsCache });
  assert.equal(all.files.length, 6);
  assert.deepEqual(all.mapped, []);
  assert.ok(!all.sections.some((s) => s.kind === 'map'));
});

test('a tree too large for its share is compacted to a file count per directory rather than left out', async (t) => {
  const root = await makeRepo(t, repo());
  const tagsCache = new TagsCache({ parser });
  const compactText = 'Repository file tree (one directory per line: its files)\n```\n./: 1 file\nlib/: 1 file\nsrc/: 4 files\n```\n';
  // 103 characters: 26 tokens of quarterChars
  assert.equal(compactText.length, 103);
  // at 300 tokens the share is 30: the whole detailed tree takes 33 (129 characters), so it
  // would show one directory of three ("./: README.md" and "… 5 more files in 2 directories",
  // 28 tokens); the compacted tree shows all three directories in 26
  const at300 = await ranked(root, { tokenBudget: 300, tagsCache });
  assert.equal(at300.sections[0]!.kind, 'tree');
  assert.equal(at300.sections[0]!.text, compactText);
  assert.equal(at300.sections[0]!.tokens, 26);
  // at 250 the share is 25, under the compacted tree's 26: it takes up to twice the share (50)
  const at250 = await ranked(root, { tokenBudget: 250, tagsCache });
  assert.equal(at250.sections[0]!.text, compactText);
  assert.ok(at250.totalTokens <= 250);
  // at 120 twice the share is 24: not even the compacted tree fits, and there is none
  const at120 = await ranked(root, { tokenBudget: 120, tagsCache });
  assert.ok(!at120.sections.some((s) => s.kind === 'tree'));
});

test('the prefix is the same bytes for two questions, and an edit of a mapped file changes only the map', async (t) => {
  const root = await makeRepo(t, repo());
  const tagsCache = new TagsCache({ parser });
  const first = await ranked(root, { tagsCache });
  const second = await ranked(root, { tagsCache });
  const prefix = (r: typeof first) => r.sections.map((s) => s.text).join('');
  assert.equal(prefix(second), prefix(first));
  assert.ok(first.mapped.some((m) => m.path === 'lib/extra.py'));

  await writeFile(path.join(root, 'lib/extra.py'), repo()['lib/extra.py']!.replace('def lonely_helper(x):', 'def lonely_helper(x, y):'));
  const edited = await ranked(root, { tagsCache });
  assert.deepEqual(edited.sections.slice(0, -1).map((s) => s.text), first.sections.slice(0, -1).map((s) => s.text));
  assert.notEqual(edited.sections.at(-1)!.text, first.sections.at(-1)!.text);
  assert.match(edited.sections.at(-1)!.text, /1: def lonely_helper\(x, y\):/);
});

test('parses are cached by content: a second pack parses nothing, an edit re-parses only the edited file', async (t) => {
  const root = await makeRepo(t, repo());
  const parsed: string[] = [];
  const counting: TagsParser = { parse: (text, grammar) => (parsed.push(text.split('\n')[1] ?? ''), parser.parse(text, grammar)) };
  const tagsCache = new TagsCache({ parser: counting });
  await ranked(root, { tagsCache });
  assert.equal(parsed.length, 5, 'five source files (README.md has no grammar)');
  await ranked(root, { tagsCache });
  assert.equal(parsed.length, 5);
  await writeFile(path.join(root, 'src/cli.ts'), repo()['src/cli.ts']!.replace('runCli', 'runCommandLine'));
  await ranked(root, { tagsCache });
  assert.deepEqual(parsed.slice(5), ['export function runCommandLine(): number {']);
  assert.equal(tagsCache.parsed, 6);
});

test('recent files pull what they reference into full text', async (t) => {
  const files = {
    'a/big1.ts': `export function alphaWorker(): number { return 1; }\n${'// a\n'.repeat(120)}`,
    'b/big2.ts': `export function betaWorker(): number { return 2; }\n${'// b\n'.repeat(120)}`,
    'c/use1.ts': 'import { alphaWorker } from "../a/big1";\nexport const useAlpha = () => alphaWorker();\n',
    'd/use2.ts': 'import { betaWorker } from "../b/big2";\nexport const useBeta = () => betaWorker();\n',
  };
  const root = await makeRepo(t, files);
  const budget = 300; // room for one of the two large files in full
  const towardsAlpha = await ranked(root, { tokenBudget: budget, recentFiles: ['c/use1.ts'] });
  const towardsBeta = await ranked(root, { tokenBudget: budget, recentFiles: ['d/use2.ts'] });
  assert.ok(towardsAlpha.files.some((f) => f.path === 'a/big1.ts') && !towardsAlpha.files.some((f) => f.path === 'b/big2.ts'));
  assert.ok(towardsBeta.files.some((f) => f.path === 'b/big2.ts') && !towardsBeta.files.some((f) => f.path === 'a/big1.ts'));
});

test('a secret on a definition line keeps the file out of the map, reported as a secret', async (t) => {
  const forge = fakeSecrets().find((s) => s.path === 'src/forge.ts')!;
  const root = await makeRepo(t, { ...repo(), 'src/forge.ts': forge.content + `${'// filler\n'.repeat(200)}` });
  const r = await ranked(root);
  const prompt = r.sections.map((s) => s.text).join('');
  assert.ok(!prompt.includes(forge.secret));
  assert.equal(r.skipped.find((s) => s.path === 'src/forge.ts')?.reason, 'secret');
  assert.ok(!r.mapped.some((m) => m.path === 'src/forge.ts'));
});

test('a secret past the cut of a long signature keeps the file out of the map: the scan reads the whole file, not the cut signature', async (t) => {
  const token = fakeSecrets().find((s) => s.kind === 'GitHub token')!.secret;
  // the definition's line is 230 characters; the token (40) starts at column 185, so the signature
  // cut at 199 characters (and '…') keeps its first 15, too few for the GitHub rule to see a token
  const lead = `export function makeClient(options = { baseUrl: 'https://api.example.com', retries: 3, timeoutMs: 10000, userAgent: 'my-app/1.0 (+https://example.com)', flags: ['a', 'b', 'c'], auth: '`;
  const line = `${lead}${token}' }) {`;
  assert.equal(lead.length + 1, 185);
  assert.ok(line.length > 200);
  const client = `// the client\n${line}\n  return options;\n}\n${'// filler\n'.repeat(200)}`;
  const root = await makeRepo(t, { ...repo(), 'src/client.ts': client, 'src/use.ts': "import { makeClient } from './client';\nexport const c = makeClient();\n" });
  const r = await ranked(root);
  const prompt = r.sections.map((s) => s.text).join('');
  assert.ok(!prompt.includes(token.slice(0, 8)), 'not even the first 8 characters of the token reach the prompt');
  assert.ok(!r.mapped.some((m) => m.path === 'src/client.ts'));
  assert.ok(!r.files.some((f) => f.path === 'src/client.ts'));
  assert.deepEqual(r.skipped.find((s) => s.path === 'src/client.ts'), { path: 'src/client.ts', reason: 'secret', detail: 'github secret at line 2, column 185 (secretlint rules)' });
});

test('a small file with a secret that would fit in full is left out as a secret', async (t) => {
  const forge = fakeSecrets().find((s) => s.path === 'src/forge.ts')!;
  const root = await makeRepo(t, { ...repo(), 'src/forge.ts': forge.content });
  const r = await ranked(root, { tokenBudget: 100_000 });
  assert.ok(!r.sections.map((s) => s.text).join('').includes(forge.secret));
  assert.equal(r.skipped.find((s) => s.path === 'src/forge.ts')?.reason, 'secret');
  assert.equal(r.files.length, 6, 'every other file in full');
});

/**
 * A hub every `useN` file calls, `main` calling every `useN` (so they outrank the `kN` constants,
 * which nothing references), and four tiny `kN` files. Section tokens (quarterChars): hub 89,
 * useN 33, kN 10, main 118; the tree 20.
 */
function smallFilesRepo(): Record<string, string> {
  const files: Record<string, string> = {
    'src/hub.ts': `export function hubTotal(xs: number[]): number {\n  return xs.reduce((a, b) => a + b, 0);\n}\n${'// hub notes, long enough to cost tokens\n'.repeat(6)}`,
    'src/main.ts': `${Array.from({ length: 8 }, (_, i) => `import { useTotal${i} } from './use${i}';`).join('\n')}\nexport function main(): number {\n  return ${Array.from({ length: 8 }, (_, i) => `useTotal${i}(${i})`).join(' + ')};\n}\n`,
  };
  for (let i = 0; i < 8; i++) files[`src/use${i}.ts`] = `import { hubTotal } from './hub';\nexport function useTotal${i}(n: number): number {\n  return hubTotal([n, ${i}]);\n}\n`;
  for (let i = 0; i < 4; i++) files[`src/k${i}.ts`] = `export const K${i} = ${i};\n`;
  return files;
}

test('rankedShares.smallest: files by rank within full − smallest, then the smallest files up to full; budgets exact, prefix question-independent', async (t) => {
  const root = await makeRepo(t, smallFilesRepo());
  const tagsCache = new TagsCache({ parser });
  const tokensOf = (r: Awaited<ReturnType<typeof ranked>>, kind: string) => r.sections.filter((s) => s.kind === kind).reduce((n, s) => n + s.tokens, 0);
  // by hand at 300 tokens, smallest 0.2: by rank within floor(300 · 0.4) = 120: tree 20 + hub 89 = 109,
  // no useN (33) fits the 11 left, k0 (10) does: 119; then smallest first within floor(300 · 0.6) = 180:
  // k1, k2, k3 (10 each): 149, and use0 (33, the next smallest) would make 182
  const r = await ranked(root, { tokenBudget: 300, tagsCache, rankedShares: { smallest: 0.2 } });
  assert.deepEqual(r.files.map((f) => f.path), ['src/hub.ts', 'src/k0.ts', 'src/k1.ts', 'src/k2.ts', 'src/k3.ts']);
  assert.equal(tokensOf(r, 'tree'), 20);
  assert.equal(tokensOf(r, 'file'), 89 + 4 * 10);
  assert.ok(r.mapped.some((m) => m.path === 'src/use0.ts'), 'the useN files are in the map');
  assert.ok(r.totalTokens <= 300);
  for (const s of r.sections) assert.equal(s.tokens, quarterChars(s.text));
  // without the share (the default, 0) the same budget keeps useN files by rank and not k1..k3
  const plain = await ranked(root, { tokenBudget: 300, tagsCache });
  assert.ok(plain.files.some((f) => f.path === 'src/use0.ts'));
  assert.ok(!plain.files.some((f) => ['src/k1.ts', 'src/k2.ts', 'src/k3.ts'].includes(f.path)));
  const explicitZero = await ranked(root, { tokenBudget: 300, tagsCache, rankedShares: { smallest: 0 } });
  assert.deepEqual(explicitZero.sections, plain.sections);
  // smallest 0.3 (the fourth packing of bench/repoqa/large), by hand at 300 tokens: by rank within
  // floor(300 · 0.3) = 90: tree 20, hub (89) does not fit, use0 and use1 (33 each, equal rank, path
  // order) do: 86, nothing else fits the 4 left; then smallest first within 180: k0..k3 (10 each):
  // 126, use2 (33): 159, use3 would make 192
  const small = await ranked(root, { tokenBudget: 300, tagsCache, rankedShares: { smallest: 0.3 } });
  assert.deepEqual(small.files.map((f) => f.path).sort(), ['src/k0.ts', 'src/k1.ts', 'src/k2.ts', 'src/k3.ts', 'src/use0.ts', 'src/use1.ts', 'src/use2.ts']);
  assert.equal(tokensOf(small, 'file'), 3 * 33 + 4 * 10);
  // the prefix does not depend on anything but the repository and the options: same bytes twice
  const again = await ranked(root, { tokenBudget: 300, tagsCache, rankedShares: { smallest: 0.2 } });
  assert.equal(again.sections.map((s) => s.text).join(''), r.sections.map((s) => s.text).join(''));
  // every budget holds exactly
  for (let budget = 0; budget <= 700; budget += 7) {
    const b = await ranked(root, { tokenBudget: budget, tagsCache, rankedShares: { smallest: 0.3 } });
    assert.ok(b.totalTokens <= budget, `budget ${budget}: ${b.totalTokens}`);
    assert.equal(b.totalTokens, b.sections.reduce((n, s) => n + s.tokens, 0));
    for (const s of b.sections) assert.equal(s.tokens, quarterChars(s.text));
  }
  await assert.rejects(ranked(root, { rankedShares: { full: 0.5, smallest: 0.6 } }), /rankedShares\.smallest/);
  await assert.rejects(ranked(root, { rankedShares: { smallest: -0.1 } }), /rankedShares\.smallest/);
});

test('bad ranked options are refused', async (t) => {
  const root = await makeRepo(t, repo());
  await assert.rejects(ranked(root, { rankedShares: { tree: 2 } }), /rankedShares/);
  await assert.rejects(packRepository(root, { tokenBudget: 1, countTokens: quarterChars, packing: 'largest' as never }), /packing must be/);
});

test('fitSection drops the lowest-priority blocks while the whole section counts more than the budget', async () => {
  // blocks of 2 characters each, joined with '##' (2 more per join): the blocks' own counts
  // (2 + 2 + 2 = 6) fit a budget of 6, the whole text 'a\n##b\n##c\n' (10) does not, 'a\n##b\n' (6) does
  const fitted = await fitSection(['a\n', 'b\n', 'c\n'], (chosen) => chosen.map((i) => ['a\n', 'b\n', 'c\n'][i]).join('##'), 6, (t) => t.length);
  assert.deepEqual(fitted, { text: 'a\n##b\n', tokens: 6, chosen: [0, 1] });
  assert.deepEqual(await fitSection(['abc'], () => 'abc', 2, (t) => t.length), { text: '', tokens: 0, chosen: [] });
});

test('a file neither in full nor in the map is decided on whole when retrieval ranks its chunk: the clean function is not quoted and the file is reported as a secret in place of its over-budget entry', async (t) => {
  const token = fakeSecrets().find((s) => s.kind === 'GitHub token')!;
  // a clean function on lines 1-2, 36 more (a map block too large for the budget), the token on
  // line 40; nothing references the file
  const steps = Array.from({ length: 36 }, (_, i) => `def vault_step_${i}(): pass\n`).join('');
  const vault = `def lonely_vault_open():\n    return "open"\n\n${steps}${token.content.split('\n')[1]}\n`;
  assert.equal(vault.split('\n')[39], token.content.split('\n')[1]);
  const root = await makeRepo(t, { ...repo(), 'lib/vault.py': vault });
  const r = await ranked(root, { tokenBudget: 200 });
  const before = r.skipped.find((s) => s.path === 'lib/vault.py');
  assert.deepEqual(before, { path: 'lib/vault.py', reason: 'over-budget', detail: 'neither in full nor in the repository map (files are chosen by rank)' });
  assert.ok(r.retrievable.some((c) => c.name === 'lonely_vault_open'));
  const retrieved = await retrieveChunks(r.retrievable, 'what does lonely_vault_open return?', { budget: Infinity, countTokens: quarterChars, secrets: r.secrets });
  assert.ok(!retrieved.chunks.some((c) => c.path === 'lib/vault.py'));
  const entry = { path: 'lib/vault.py', reason: 'secret', detail: `github secret at line 40, column ${token.column} (secretlint rules)` };
  assert.deepEqual(retrieved.skipped, [entry]);
  const merged = withRetrievalSkips(r, retrieved.skipped);
  assert.deepEqual(merged.skipped, r.skipped.map((s) => (s.path === 'lib/vault.py' ? entry : s)));
  assert.equal(r.skipped.find((s) => s.path === 'lib/vault.py'), before, 'the pack itself is not changed');
  assert.equal(withRetrievalSkips(r, []), r);
});
