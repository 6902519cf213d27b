/**
 * The ranked packing's recent files (issue 15) are the files saved in the window, not its tabs:
 * opening or closing a tab must leave the cached prefix's bytes as they were.
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import { TagsCache } from '../../src/context/map/cache';
import { packRepository } from '../../src/context/pack';
import { RecentSaves, recentFilesIn } from '../../src/host/recent-files';
import { makeRepo, quarterChars } from './fixtures';

/** Two large files, each used by one small file: which large file is in full follows the recent files. */
const FILES = {
  'a/big1.ts': `export function alphaWorker(): number { return 1; }\n${'// a\n'.repeat(120)}`,
  'b/big2.ts': `export function betaWorker(): number { return 2; }\n${'// b\n'.repeat(120)}`,
  'c/use1.ts': 'import { alphaWorker } from "../a/big1";\nexport const useAlpha = () => alphaWorker();\n',
  'd/use2.ts': 'import { betaWorker } from "../b/big2";\nexport const useBeta = () => betaWorker();\n',
};

test('a tab change leaves the prefix bytes as they were; a save steers the ranking', async (t) => {
  const root = await makeRepo(t, FILES);
  const tagsCache = new TagsCache();
  const prefix = async (recentFiles: string[]) => {
    const r = await packRepository(root, { tokenBudget: 290, countTokens: quarterChars, packing: 'ranked', tagsCache, recentFiles });
    return r.sections.map((s) => s.text).join('');
  };
  const abs = (rel: string) => path.join(root, ...rel.split('/'));
  const saves = new RecentSaves();
  saves.noteSaved(abs('c/use1.ts'));

  // the tabs: c/use1.ts open, then d/use2.ts opened too. As recent files (what the service passed
  // before), the tab change changes the prefix: this fixture is sensitive to it
  const tabsBefore = [abs('c/use1.ts')];
  const tabsAfter = [abs('c/use1.ts'), abs('d/use2.ts')];
  assert.notEqual(await prefix(recentFilesIn(root, tabsAfter)), await prefix(recentFilesIn(root, tabsBefore)));

  // the saves do not see tabs: the same recent files, the same prefix bytes
  const before = await prefix(saves.recentIn(root));
  assert.deepEqual(saves.recentIn(root), ['c/use1.ts']);
  assert.equal(await prefix(saves.recentIn(root)), before);
  assert.match(before, /a\/big1\.ts\n```\nexport function alphaWorker/);

  // a save of d/use2.ts makes it recent too (the repository changed anyway)
  saves.noteSaved(abs('d/use2.ts'));
  assert.deepEqual(saves.recentIn(root), ['c/use1.ts', 'd/use2.ts']);
});

test('recent saves: the most recently saved inside the folder, sorted; the oldest forgotten first', () => {
  const root = path.resolve('/repo');
  const saves = new RecentSaves(3);
  for (const p of ['z.ts', 'src/b.ts', 'a.ts', 'src/b.ts']) saves.noteSaved(path.join(root, p));
  saves.noteSaved(path.resolve('/elsewhere/x.ts'));
  // kept (oldest first): z.ts, a.ts, src/b.ts, /elsewhere/x.ts → keep 3 forgets z.ts
  assert.deepEqual(saves.recentIn(root), ['a.ts', 'src/b.ts']);
  // max 1: the latest inside the folder is src/b.ts (saved again after a.ts)
  assert.deepEqual(saves.recentIn(root, 1), ['src/b.ts']);
  assert.deepEqual(saves.recentIn(path.resolve('/other')), []);
  assert.throws(() => saves.recentIn(root, -1), RangeError);
  assert.throws(() => new RecentSaves(0), RangeError);
});
