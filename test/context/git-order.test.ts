/**
 * The `'git'` prompt order (context/pack-order.ts, issue 30): files unchanged since `HEAD` by their
 * git history, rarely or long-unchanged ones first; files edited since the last commit and new
 * files last, by mtime; no git work tree: mtime order. git runs on real repositories made here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { utimes, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { historiesOf, parseLog, readGitHistory } from '../../src/context/git-history';
import { changeScore, orderFiles } from '../../src/context/pack-order';
import { makeRepo, pack } from './fixtures';

/** Runs git in `cwd` with a fixed identity and commit time `seconds` (author and committer). */
function git(cwd: string, args: string[], seconds = 1_000_000_000): string {
  const date = `@${seconds} +0000`;
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com', GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date, GIT_CONFIG_NOSYSTEM: '1', HOME: cwd },
  });
}

/** Commits `files` (path → content) at `seconds`. */
async function commit(root: string, files: Record<string, string>, seconds: number): Promise<void> {
  for (const [rel, text] of Object.entries(files)) await writeFile(path.join(root, rel), text);
  git(root, ['add', '-A']);
  git(root, ['commit', '-q', '-m', `at ${seconds}`], seconds);
}

const touch = (root: string, rel: string, seconds: number): Promise<void> => utimes(path.join(root, rel), seconds, seconds);
const paths = (r: { files: { path: string }[] }): string[] => r.files.map((f) => f.path);
const prompt = (r: { sections: { text: string }[] }): string => r.sections.map((s) => s.text).join('');

test('git order: committed files by last change, oldest first, whatever their mtimes; edited and new files last', async (t) => {
  const root = await makeRepo(t, {});
  git(root, ['init', '-q', '-b', 'main']);
  await commit(root, { 'b.ts': 'b1\n', 'c.ts': 'c1\n', 'a b.ts': 'space1\n' }, 1000);
  await commit(root, { 'c.ts': 'c2\n' }, 2000);
  await commit(root, { 'a b.ts': 'space2\n' }, 3000);
  // mtimes say the opposite of the history (a fresh checkout would say nothing at all)
  await touch(root, 'a b.ts', 10);
  await touch(root, 'c.ts', 20);
  await touch(root, 'b.ts', 30);
  assert.deepEqual(paths(await pack(root, { order: 'mtime' })), ['a b.ts', 'c.ts', 'b.ts']);
  const before = await pack(root, { order: 'git' });
  assert.equal(before.order, 'git');
  assert.deepEqual(paths(before), ['b.ts', 'c.ts', 'a b.ts'], 'last changed in commits 1, 2 and 3');

  // an edit (saved, not committed) moves the file last; a new, untracked file goes after it by mtime
  await writeFile(path.join(root, 'b.ts'), 'b2\n');
  await touch(root, 'b.ts', 40);
  await writeFile(path.join(root, 'new.ts'), 'n\n');
  await touch(root, 'new.ts', 50);
  const edited = await pack(root, { order: 'git' });
  assert.deepEqual(paths(edited), ['c.ts', 'a b.ts', 'b.ts', 'new.ts']);

  // committing both keeps the prompt as it was: the commit costs no prefill
  git(root, ['add', '-A']);
  git(root, ['commit', '-q', '-m', 'b and new'], 4000);
  const committed = await pack(root, { order: 'git' });
  assert.deepEqual(paths(committed), ['c.ts', 'a b.ts', 'b.ts', 'new.ts']);
  assert.equal(prompt(committed), prompt(edited));
});

test('git order without a git work tree is mtime order, and says so', async (t) => {
  const root = await makeRepo(t, { 'a.ts': 'a\n', 'b.ts': 'b\n' });
  await touch(root, 'a.ts', 200);
  await touch(root, 'b.ts', 100);
  assert.equal(await readGitHistory(root), undefined);
  const r = await pack(root, { order: 'git' });
  assert.equal(r.order, 'mtime');
  assert.deepEqual(paths(r), ['b.ts', 'a.ts']);
});

test('the decayed commit count: Σ 0.5^(k/H) over the commits (k = 0 for HEAD) that changed the file', async (t) => {
  const root = await makeRepo(t, {});
  git(root, ['init', '-q', '-b', 'main']);
  await commit(root, { 'often.ts': '1\n', 'once.ts': '1\n' }, 1000); // k = 3
  await commit(root, { 'often.ts': '2\n' }, 2000); // k = 2
  await commit(root, { 'often.ts': '3\n' }, 3000); // k = 1
  await commit(root, { 'other.ts': '1\n' }, 4000); // k = 0
  const history = await readGitHistory(root);
  assert.ok(history);
  assert.equal(history.commits, 4);
  assert.deepEqual(history.files.get('often.ts')?.indices, [1, 2, 3]);
  assert.equal(changeScore(history, 'often.ts', 2), 0.5 ** 0.5 + 0.5 ** 1 + 0.5 ** 1.5);
  assert.equal(changeScore(history, 'once.ts', 2), 0.5 ** 1.5);
  assert.equal(changeScore(history, 'never.ts', 2), 0);
  const files = ['often.ts', 'once.ts', 'other.ts'].map((p) => ({ path: p, mtimeMs: 0 }));
  // by count: once (0.35) < other (1) < often (1.56); by last change: once (k 3) < often (k 1) < other (k 0)
  assert.deepEqual(paths(await orderFiles(root, files, 'git', { rank: 'decayed-count', halfLife: 2 })), ['once.ts', 'other.ts', 'often.ts']);
  assert.deepEqual(paths(await orderFiles(root, files, 'git', { rank: 'last-change' })), ['once.ts', 'often.ts', 'other.ts']);
});

test('the history is read from the packed folder down, relative to it, a merge by its first-parent change', async (t) => {
  const root = await makeRepo(t, {});
  git(root, ['init', '-q', '-b', 'main']);
  execFileSync('mkdir', ['-p', path.join(root, 'pkg')]);
  await commit(root, { 'pkg/x.ts': 'x1\n', 'top.ts': 't\n' }, 1000);
  git(root, ['checkout', '-q', '-b', 'side']);
  await commit(root, { 'pkg/y.ts': 'y1\n' }, 2000);
  git(root, ['checkout', '-q', 'main']);
  await commit(root, { 'pkg/x.ts': 'x2\n' }, 3000);
  git(root, ['merge', '-q', '--no-ff', '-m', 'merge side', 'side'], 4000);
  const history = await readGitHistory(path.join(root, 'pkg'));
  assert.ok(history);
  assert.deepEqual([...history.files.keys()].sort(), ['x.ts', 'y.ts']);
  // y.ts reached main with the merge (k = 0), not with the side branch's older commit
  assert.deepEqual(history.files.get('y.ts')?.indices, [0]);
  assert.deepEqual(history.files.get('x.ts')?.indices, [1, 2]);
  assert.deepEqual([...history.headBlobs.keys()].sort(), ['x.ts', 'y.ts']);
});

test('parseLog reads `git log -z --name-only --format=%x01%ct` output, names with spaces and newlines too', () => {
  const out = '\x011700000002\0\nsrc/a b.ts\0odd\nname.ts\0\x011700000001\0\x011700000000\0\nsrc/a b.ts\0';
  const commits = parseLog(out);
  assert.deepEqual(commits, [
    { timeMs: 1_700_000_002_000, paths: ['src/a b.ts', 'odd\nname.ts'] },
    { timeMs: 1_700_000_001_000, paths: [] },
    { timeMs: 1_700_000_000_000, paths: ['src/a b.ts'] },
  ]);
  const h = historiesOf(commits);
  assert.deepEqual(h.get('src/a b.ts'), { commits: 2, newest: 0, lastChangeMs: 1_700_000_002_000, indices: [0, 2] });
});
