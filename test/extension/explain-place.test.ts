/**
 * Explain in place (issue 14, section 3): the explanation's comment thread is anchored at the
 * first line of the explained range and the editor scrolls so that it shows; explaining the same
 * symbol twice reuses one thread; the lens reads "RepoSnap: Explain" and carries the symbol's
 * qualified name; the Comments panel is not opened. The real ExplainController and CodeLens
 * provider run against the `vscode` stand-in (fake-vscode.ts) and a scripted engine.
 */
import { fake, Position, Range, SymbolKind, Uri, workspace } from './fake-vscode';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, test } from 'node:test';
import type { ChatViewProvider } from '../../src/chat/view';
import { DEFAULT_SETTINGS } from '../../src/config/settings';
import type { Settings } from '../../src/config/accessor';
import { ExplainCodeLensProvider, EXPLAIN_LENS_TITLE } from '../../src/explain/codelens';
import { ExplainController } from '../../src/explain/comments';
import { anchorLine, explanationKey, needsScroll } from '../../src/explain/placement';
import type { EngineService, ServiceAsk } from '../../src/host/service';
import type { WireAskStats } from '../../src/host/protocol';

const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8'));

const STATS: WireAskStats = {
  L: 2000, prefixTokens: 1900, B: 1024, ratio: 0.512, files: 3, skipped: 0, droppedTurns: 0, packMs: 5, cache: 'miss', reusedTokens: 0,
  prefilledTokens: 2000, restoreMs: 0, restoreReadMs: 0, prefillMs: 1000, prefillTokS: 2000, snapMs: 10, ttftMs: 1100, decodeTokens: 4, decodeMs: 40,
  decodeTokS: 100, nKvBefore: 2048, nKvAfter: 1024, kvBytesBefore: 2e6, kvBytesAfter: 1e6, snap: true, stopReason: 'eos',
};

/** An engine that answers "It adds." to each question, recording the questions; `hold` keeps an answer open. */
function scriptedEngine() {
  const asked: ServiceAsk[] = [];
  const held: (() => void)[] = [];
  const engine = {
    asked,
    hold: false,
    /** Ends every held answer. */
    finish: () => held.splice(0).forEach((release) => release()),
    async ask(q: ServiceAsk): Promise<WireAskStats> {
      asked.push(q);
      q.onEvent?.({ kind: 'token', text: 'It adds.' } as never);
      if (engine.hold) await new Promise<void>((r) => held.push(r));
      return STATS;
    },
  };
  return engine;
}

// a 120-line file: a class from line 50 to line 110 (0-based), longer than the 40-line viewport
const FILE = '/ws/src/shapes.ts';
const TEXT = Array.from({ length: 120 }, (_, i) => (i === 50 ? 'export class Rectangle {' : i === 110 ? '}' : `  // line ${i}`)).join('\n');
const CLASS = new Range(new Position(50, 0), new Position(110, 1)) as never;
/** The test file's URI, typed as VS Code's (the stand-in's Uri has what the controller uses). */
const fileUri = () => Uri.file(FILE) as never;

beforeEach(() => {
  fake.reset();
  workspace.workspaceFolders = [{ uri: Uri.file('/ws'), name: 'ws', index: 0 }];
});

function controller(engine: ReturnType<typeof scriptedEngine>) {
  return new ExplainController(engine as unknown as EngineService, {} as ChatViewProvider);
}

test('explaining a class anchors its thread at the class\'s first line and scrolls that line to the top', async () => {
  // the editor shows lines 60-100: the class's first line (50) is above the viewport, its last (110) below
  const editor = fake.openEditor(FILE, TEXT, 60, 40);
  const engine = scriptedEngine();
  await controller(engine).explain(fileUri(), CLASS, 'Rectangle', 'Rectangle');
  assert.equal(fake.threads.length, 1);
  const t = fake.threads[0]!;
  assert.deepEqual([t.range.start.line, t.range.start.character, t.range.end.line, t.range.end.character], [50, 0, 50, 0]);
  assert.deepEqual(fake.revealed, [{ uri: Uri.file(FILE).toString(), line: 50, type: 3 /* AtTop */ }]);
  assert.equal(editor.visibleRanges[0]!.start.line, 50, 'the thread\'s line is now the first one on screen');
  assert.match(t.comments[0]!.body.value, /^It adds\./);
  assert.equal(t.contextValue, 'reposnap.explained');
  // the question is about the whole class
  assert.match(engine.asked[0]!.question, /^Explain `Rectangle` in src\/shapes\.ts \(lines 51-111\)/);
  // nothing opened the Comments panel
  assert.deepEqual(fake.executed.filter((e) => /comment/i.test(e.command)), []);
});

test('a thread already in the upper half of the screen is not scrolled to', async () => {
  fake.openEditor(FILE, TEXT, 45, 40); // lines 45-85: line 50 is near the top
  await controller(scriptedEngine()).explain(fileUri(), CLASS, 'Rectangle', 'Rectangle');
  assert.deepEqual(fake.revealed, []);
  assert.equal(fake.threads[0]!.range.start.line, 50);
});

test('explaining the same symbol twice reuses its one thread, answered anew; another symbol gets its own', async () => {
  fake.openEditor(FILE, TEXT);
  const engine = scriptedEngine();
  const c = controller(engine);
  await c.explain(fileUri(), CLASS, 'Rectangle', 'Rectangle');
  // lines were added above the class: same symbol, new range
  const moved = new Range(new Position(52, 0), new Position(112, 1)) as never;
  await c.explain(fileUri(), moved, 'Rectangle', 'Rectangle');
  assert.equal(fake.threads.length, 1, 'one thread for the class');
  assert.equal(fake.threads[0]!.range.start.line, 52, 'anchored at the class\'s new first line');
  assert.equal(fake.threads[0]!.comments.length, 1);
  assert.equal(fake.threads[0]!.comments[0]!.body.value.split('It adds.').length - 1, 1, 'the new answer replaced the old one');
  assert.equal(engine.asked.length, 2);
  assert.notEqual(engine.asked[0]!.threadId, engine.asked[1]!.threadId, 'each run is its own engine thread, not a follow-up');
  // a method of the class with the same short name as another symbol elsewhere: its own thread
  await c.explain(fileUri(), new Range(new Position(60, 2), new Position(62, 3)) as never, 'area', 'Rectangle.area');
  assert.equal(fake.threads.length, 2);
});

test('explaining a symbol whose answer still streams only shows it again (no second question)', async () => {
  fake.openEditor(FILE, TEXT);
  const engine = scriptedEngine();
  engine.hold = true;
  const c = controller(engine);
  const first = c.explain(fileUri(), CLASS, 'Rectangle', 'Rectangle');
  await new Promise((r) => setImmediate(r));
  const second = c.explain(fileUri(), CLASS, 'Rectangle', 'Rectangle');
  await new Promise((r) => setImmediate(r));
  try {
    assert.equal(engine.asked.length, 1);
    assert.equal(fake.threads.length, 1);
  } finally {
    engine.finish();
    await Promise.all([first, second]);
  }
});

test('the same selection twice is one thread; a different selection is another', async () => {
  const editor = fake.openEditor(FILE, TEXT);
  const c = controller(scriptedEngine());
  const sel = new Range(new Position(3, 2), new Position(7, 4));
  editor.selection = Object.assign(sel, { active: sel.end }) as never;
  await c.explainSelection();
  await c.explainSelection();
  assert.equal(fake.threads.length, 1);
  assert.equal(fake.threads[0]!.range.start.line, 3);
  const other = new Range(new Position(3, 2), new Position(8, 0));
  editor.selection = Object.assign(other, { active: other.end }) as never;
  await c.explainSelection();
  assert.equal(fake.threads.length, 2);
});

test('placement: anchor line, thread keys, when to scroll (hand-checked cases)', () => {
  const r = { start: { line: 50, character: 0 }, end: { line: 110, character: 1 } };
  assert.equal(anchorLine(r), 50);
  assert.equal(explanationKey('file:///a.ts', r, 'Shape.area'), 'file:///a.ts#symbol:Shape.area');
  assert.equal(explanationKey('file:///a.ts', r), 'file:///a.ts#range:50:0-110:1');
  const view = (top: number, bottom: number) => ({ start: { line: top, character: 0 }, end: { line: bottom, character: 0 } });
  assert.equal(needsScroll(50, view(60, 100)), true, 'above the viewport');
  assert.equal(needsScroll(50, view(0, 40)), true, 'below the viewport');
  assert.equal(needsScroll(50, view(45, 85)), false, 'upper half: 50 ≤ 45 + 20');
  assert.equal(needsScroll(65, view(45, 85)), false, 'the last line of the upper half: 45 + floor(40 / 2) = 65');
  assert.equal(needsScroll(66, view(45, 85)), true, 'lower half');
  assert.equal(needsScroll(50, undefined), true);
});

test('the lens reads "RepoSnap: Explain" and passes the symbol\'s qualified name', async () => {
  fake.openEditor(FILE, TEXT);
  const method = { name: 'area', kind: SymbolKind.Method, range: new Range(60, 2, 62, 3), selectionRange: new Range(60, 2, 60, 6), children: [] };
  const field = { name: 'width', kind: SymbolKind.Field, range: new Range(51, 2, 51, 20), selectionRange: new Range(51, 2, 51, 7), children: [] };
  fake.commandResults.set('vscode.executeDocumentSymbolProvider', [{ name: 'Rectangle', kind: SymbolKind.Class, range: CLASS, selectionRange: CLASS, children: [field, method] }]);
  const settings = { get: () => DEFAULT_SETTINGS, onDidChange: () => ({ dispose() {} }) } as unknown as Settings;
  const lenses = await new ExplainCodeLensProvider(settings).provideCodeLenses(fake.documents.get(Uri.file(FILE).toString()) as never, { isCancellationRequested: false } as never);
  assert.equal(EXPLAIN_LENS_TITLE, 'RepoSnap: Explain');
  assert.deepEqual(
    lenses.map((l) => [l.range.start.line, l.command!.title, l.command!.command, l.command!.arguments![2], l.command!.arguments![3]]),
    [
      [50, 'RepoSnap: Explain', 'reposnap.explainRange', 'Rectangle', 'Rectangle'],
      [60, 'RepoSnap: Explain', 'reposnap.explainRange', 'area', 'Rectangle.area'],
    ],
  );
});

test('package.json: the context menu item reads "RepoSnap: Explain Selection", the Comments panel is not opened, activation on startup', () => {
  const c = manifest.contributes;
  const cmd = (id: string) => c.commands.find((x: { command: string }) => x.command === id);
  // the context menu shows a command's title without its category; the palette shows "category: title"
  const menu = c.menus['editor/context'].map((m: { command: string }) => cmd(m.command));
  assert.deepEqual(menu.map((x: { title: string }) => x.title), ['RepoSnap: Explain Selection']);
  const sel = cmd('reposnap.explainSelection');
  assert.equal(sel.category ? `${sel.category}: ${sel.title}` : sel.title, 'RepoSnap: Explain Selection', 'palette label without "RepoSnap: RepoSnap:"');
  assert.equal(c.configurationDefaults['comments.openView'], 'never');
  assert.ok(manifest.activationEvents.includes('onStartupFinished'));
});

test('"Continue in chat" forks the chat thread from the latest run\'s engine thread; Close removes the one thread', async () => {
  fake.openEditor(FILE, TEXT);
  const engine = scriptedEngine();
  const forks: (string | undefined)[] = [];
  const chat = { newThread: async (_seed: unknown, _title: string, forkedFrom?: string) => void forks.push(forkedFrom) };
  const c = new ExplainController(engine as unknown as EngineService, chat as unknown as ChatViewProvider);
  await c.explain(fileUri(), CLASS, 'Rectangle', 'Rectangle');
  await c.explain(fileUri(), CLASS, 'Rectangle', 'Rectangle');
  await c.continueInChat(fake.threads[0] as never);
  assert.deepEqual(forks, [engine.asked[1]!.threadId], 'the second run, whose answer the thread shows');
  c.close(fake.threads[0] as never);
  assert.equal(fake.threads[0]!.disposed, true);
  // explained again after closing: a new thread
  await c.explain(fileUri(), CLASS, 'Rectangle', 'Rectangle');
  assert.equal(fake.threads.length, 2);
});
