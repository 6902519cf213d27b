/**
 * The `auto` packing reads each file once: when it switches to ranked at the first file that does
 * not fit, the ranked pass reuses the texts (and the reads in flight) of the smallest-first pass
 * instead of opening every file again, and its result is still the ranked pack's byte for byte,
 * secrets included. Reads are counted through the injected file system (`PackOptions.fs`).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import path from 'node:path';
import { nodeFs, type ContextFs } from '../../src/context/fsapi';
import { TagsCache } from '../../src/context/map/cache';
import type { PackResult } from '../../src/context/pack';
import { fakeSecrets } from './fake-secrets';
import { makeRepo, pack } from './fixtures';

/** The real file system, counting `open` calls per path relative to `root`. */
function countingFs(root: string): { fs: ContextFs; opens: Map<string, number> } {
  const opens = new Map<string, number>();
  return {
    opens,
    fs: {
      ...nodeFs,
      open: (p, flags) => {
        const rel = path.relative(root, p).split(path.sep).join('/');
        opens.set(rel, (opens.get(rel) ?? 0) + 1);
        return nodeFs.open(p, flags);
      },
    },
  };
}

const github = fakeSecrets().find((s) => s.rule === 'github' && s.path === 'src/client.ts')!;

/**
 * auto-packing.test.ts's repository (126 tokens in sections by ⌈characters / 4⌉) and a 73-byte
 * file with a GitHub token: smaller than src/cli.ts (181 bytes), so the smallest-first pass scans
 * it before src/cli.ts, the largest, is the first not to fit 125 tokens.
 */
const TREE = {
  'src/hash.ts': 'export function hashKey(key: string): string {\n  return key.split("").reverse().join("");\n}\n',
  'src/store.ts': 'import { hashKey } from "./hash";\nexport function saveEntry(key: string): string {\n  return hashKey(key) + "/entry";\n}\n',
  'src/cli.ts': 'import { saveEntry } from "./store";\nimport { hashKey } from "./hash";\nexport function main(args: string[]): void {\n  for (const a of args) console.log(saveEntry(a), hashKey(a));\n}\n',
  'README.md': '# tiny\n\nA store with hashed keys.\n',
  [github.path]: github.content,
};

/** What makes the prompt and what the report lists. */
function promptOf(p: PackResult) {
  return { sections: p.sections, files: p.files, mapped: p.mapped, retrievable: p.retrievable, skipped: p.skipped, totalTokens: p.totalTokens, tokenBudget: p.tokenBudget };
}

test('auto switching to ranked opens every file once, and packs exactly what ranked packs, the secret left out alike', async (t) => {
  const root = await makeRepo(t, TREE);
  assert.equal(Buffer.byteLength(github.content), 73);
  const tagsCache = new TagsCache();
  const autoFs = countingFs(root);
  const reads: number[] = [];
  const auto = await pack(root, {
    tokenBudget: 125,
    packing: 'auto',
    tagsCache,
    fs: autoFs.fs,
    onProgress: (p) => {
      if (p.phase === 'read') reads.push(p.done);
    },
  });
  const rankedFs = countingFs(root);
  const ranked = await pack(root, { tokenBudget: 125, packing: 'ranked', tagsCache, fs: rankedFs.fs });
  assert.deepEqual([auto.packing, auto.auto], ['ranked', true]);
  // each of the five files opened once (before: the four the smallest-first pass read, twice), and
  // the walk's look for .git/info/exclude
  assert.deepEqual([...autoFs.opens].sort(), [['.git/info/exclude', 1], ['README.md', 1], ['src/cli.ts', 1], ['src/client.ts', 1], ['src/hash.ts', 1], ['src/store.ts', 1]]);
  assert.deepEqual([...autoFs.opens].sort(), [...rankedFs.opens].sort());
  // 'read' progress counts up once to the five candidates, never back to 1
  assert.deepEqual(reads, [1, 2, 3, 4, 5]);
  assert.deepEqual(promptOf(auto), promptOf(ranked));
  // the token never reaches the prompt; both report the file as 'secret' with the same detail
  assert.ok(!auto.sections.some((s) => s.text.includes(github.secret)));
  const entry = auto.skipped.find((s) => s.path === github.path);
  assert.deepEqual([entry?.reason, entry], ['secret', ranked.skipped.find((s) => s.path === github.path)]);
  assert.deepEqual(auto.secrets.skippedEntry(github.path), entry);
});

test('auto that stays smallest-first opens every file once too, the secret left out', async (t) => {
  const root = await makeRepo(t, TREE);
  const counting = countingFs(root);
  const auto = await pack(root, { tokenBudget: 126, packing: 'auto', fs: counting.fs });
  const smallest = await pack(root, { tokenBudget: 126, packing: 'smallest-first' });
  assert.deepEqual([auto.packing, auto.totalTokens], ['smallest-first', 126]);
  assert.deepEqual([...counting.opens].sort(), [['.git/info/exclude', 1], ['README.md', 1], ['src/cli.ts', 1], ['src/client.ts', 1], ['src/hash.ts', 1], ['src/store.ts', 1]]);
  assert.deepEqual(promptOf(auto), promptOf(smallest));
  assert.deepEqual(auto.skipped.map((s) => [s.path, s.reason]), [[github.path, 'secret']]);
});
