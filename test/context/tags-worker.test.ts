/**
 * The tags parser runs on a worker thread (issue 29, item 7): the packing thread waits for a long
 * parse without running it (its event loop stays idle, so Ctrl+C, SIGTERM and Stop are seen at
 * once), the worker's tags are the in-thread parser's on every fixture language, an aborted parse no
 * longer keeps the process alive, a worker that dies rejects what it was parsing, and `reposnap
 * pack` on a file of 40K definitions stops within a second of SIGTERM, wherever it is.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';
import { grammarForPath } from '../../src/context/map/languages';
import { createInThreadTagsParser, createTagsParser } from '../../src/context/map/tags';
import { createWorkerTagsParser, tagsWorkerScript } from '../../src/context/map/tags-worker-client';

const ROOT = path.resolve(__dirname, '..', '..');
const FIXTURES = path.join(__dirname, 'tags-fixtures');
const oneLiners = (n: number): string => Array.from({ length: n }, (_, i) => `export function f${i}() { return ${i}; }`).join('\n');

test('the worker gives the in-thread parser\'s tags on every fixture language', async () => {
  assert.ok(tagsWorkerScript()?.endsWith('tags-worker-tsx.cjs'), 'from the sources, the tsx bootstrap');
  const worker = createTagsParser();
  const inThread = createInThreadTagsParser();
  const files = fs.readdirSync(FIXTURES);
  assert.ok(files.length >= 8);
  for (const f of files) {
    const grammar = grammarForPath(f.replace(/\.txt$/, ''))!;
    assert.ok(grammar, f);
    const text = fs.readFileSync(path.join(FIXTURES, f), 'utf8');
    const [a, b] = await Promise.all([worker.parse(text, grammar), inThread.parse(text, grammar)]);
    assert.ok(a.definitions.length > 0, f);
    assert.deepEqual(a, b, f);
  }
});

test('while the worker parses 40K definitions, this thread\'s event loop is idle', async () => {
  const parser = createTagsParser();
  await parser.parse('const warm = 1;', 'typescript');
  const before = performance.eventLoopUtilization();
  const tags = await parser.parse(oneLiners(40_000), 'typescript');
  const elu = performance.eventLoopUtilization(before);
  assert.equal(tags.definitions.length, 40_000);
  assert.equal(tags.definitions[39_999]!.name, 'f39999');
  // on this thread (before: the parse ran here) the loop is busy the whole time, utilization ~1
  assert.ok(elu.utilization < 0.5, `event loop utilization ${elu.utilization.toFixed(2)} over ${elu.active.toFixed(0)} + ${elu.idle.toFixed(0)} ms`);
});

test('an aborted parse no longer keeps the process alive', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(__dirname, 'fixtures', 'parse-abort-child.ts')], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'aborted\n', 'the process waited for the parse');
});

test('a worker that dies rejects its pending parse, and the next parse starts a new one', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-worker-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const script = path.join(dir, 'dies.cjs');
  // dies on its first request; a second start (a new worker) answers
  fs.writeFileSync(script, `const { parentPort } = require('node:worker_threads'); const fs = require('node:fs'); const mark = ${JSON.stringify(path.join(dir, 'started'))};
const first = !fs.existsSync(mark); fs.writeFileSync(mark, '');
parentPort.on('message', (m) => { if (first) process.exit(7); parentPort.postMessage({ id: m.id, tags: { grammar: m.grammar, definitions: [], references: [['again', 1]] } }); });`);
  const parser = createWorkerTagsParser(script);
  await assert.rejects(parser.parse('x', 'typescript'), /the tree-sitter worker stopped \(exit code 7\)/);
  assert.deepEqual((await parser.parse('x', 'typescript')).references, [['again', 1]]);
});

test('reposnap pack of a 40K-definition file stops within a second of SIGTERM, wherever it is', async (t) => {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-40k-'));
  t.after(() => fs.rmSync(repo, { recursive: true, force: true }));
  fs.writeFileSync(path.join(repo, 'big.ts'), oneLiners(40_000));
  fs.writeFileSync(path.join(repo, 'main.ts'), 'import { f1 } from "./big";\nexport const x = f1();\n');
  for (const delay of [400, 900, 1400, 1900]) {
    const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'reposnap.js'), 'pack', '--repo', repo, '--max-file-bytes', '4000000', '--budget', '2000', '--packing', 'ranked'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    // killed before the CLI listens (node still starting) is an exit by the signal itself
    const exited = new Promise<number | string | null>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
    const sent = await Promise.race([new Promise<number>((r) => setTimeout(() => r(performance.now()), delay)), exited.then(() => undefined)]);
    if (sent === undefined) continue; // done before the signal: nothing to stop
    child.kill('SIGTERM');
    const code = await exited;
    const ms = performance.now() - sent;
    assert.ok(code === 143 || code === 'SIGTERM' || code === 0, `exit ${code}: ${stderr}`);
    assert.ok(ms < 1000, `SIGTERM after ${delay} ms: exited ${ms.toFixed(0)} ms later`);
  }
});

test('parses sharing one signal leave no abort listener behind once settled (a pack of many files)', async () => {
  const parser = createTagsParser();
  const controller = new AbortController();
  const added: string[] = [];
  const removed: string[] = [];
  const add = controller.signal.addEventListener.bind(controller.signal);
  const remove = controller.signal.removeEventListener.bind(controller.signal);
  controller.signal.addEventListener = ((type: string, fn: EventListener, o?: AddEventListenerOptions) => (added.push(type), add(type, fn, o))) as typeof controller.signal.addEventListener;
  controller.signal.removeEventListener = ((type: string, fn: EventListener, o?: EventListenerOptions) => (removed.push(type), remove(type, fn, o))) as typeof controller.signal.removeEventListener;
  await Promise.all(Array.from({ length: 12 }, (_, i) => parser.parse(`export const c${i} = ${i};`, 'typescript', { signal: controller.signal })));
  assert.equal(added.length, 12);
  assert.equal(removed.length, 12, 'every listener removed (11 left would warn MaxListenersExceeded)');
});
