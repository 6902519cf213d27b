/**
 * Activation on startup with nothing heavy, the status bar item and its actions (issue 14,
 * sections 3 and 5): `activate` runs against the `vscode` stand-in (fake-vscode.ts) and starts
 * no process (the engine starts with the first question); the lens provider, the status item
 * and every contributed command exist right after it; the item is a short icon and state whose
 * click opens a quick pick of Open Chat, Select Model, Cache Stats, Restart Engine, Settings;
 * a keybinding focuses the chat input.
 */
import { extensionContext, fake, Uri, workspace } from './fake-vscode';
import assert from 'node:assert/strict';
import childProcess from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { registerCommands } from '../../src/commands/register';
import { activate } from '../../src/extension';
import { statusBarText } from '../../src/stats/status';
import { STATUS_MENU, STATUS_MENU_COMMAND } from '../../src/stats/status-menu';

const ROOT = path.resolve(__dirname, '..', '..');
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));

const spawned: string[] = [];
const originals = { fork: childProcess.fork, spawn: childProcess.spawn, execFile: childProcess.execFile, exec: childProcess.exec };
let tmp: string;

before(() => {
  // any process started during activation is recorded (and refused)
  for (const name of Object.keys(originals) as (keyof typeof originals)[]) {
    (childProcess as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
      spawned.push(`${name} ${String(args[0])}`);
      throw new Error(`a process was started during activation: ${name} ${String(args[0])}`);
    };
  }
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-activate-'));
});
after(() => {
  Object.assign(childProcess, originals);
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A fresh activation against the stand-in, with a model file set and a workspace folder open. */
function activateFresh() {
  fake.reset();
  workspace.workspaceFolders = [{ uri: Uri.file(path.join(tmp, 'ws')), name: 'ws', index: 0 }];
  fake.configuration['reposnap.model'] = path.join(tmp, 'model.gguf');
  const context = extensionContext(ROOT, tmp);
  const t0 = performance.now();
  activate(context as never);
  return { context, ms: performance.now() - t0 };
}

test('activation registers the lens, the status item and every contributed command, and starts no process', async () => {
  const { context, ms } = activateFresh();
  // measured, not asserted (no timing asserts): printed for the report
  console.log(`activation: activate() took ${ms.toFixed(1)} ms`);
  await new Promise((r) => setTimeout(r, 50)); // anything activation scheduled has run

  assert.deepEqual(spawned, [], 'no process started');
  assert.equal(await fake.commands.get('reposnap.enginePid')!(), undefined, 'no engine');
  assert.equal(fake.codeLensProviders.length, 1, 'the Explain lens provider');
  assert.ok(fake.webviewViewProviders.has('reposnap.chat'));
  const [item] = fake.statusItems;
  assert.equal(fake.statusItems.length, 1);
  assert.ok(item!.visible, 'the status item shows from activation on');
  assert.equal(item!.text, '$(database) RepoSnap: idle');
  assert.equal(item!.command, STATUS_MENU_COMMAND);
  assert.equal(item!.accessibilityInformation?.label, 'RepoSnap: idle, model model');
  const contributed = (manifest.contributes.commands as { command: string }[]).map((c) => c.command).sort();
  assert.deepEqual(contributed.filter((c) => !fake.commands.has(c)), [], 'every contributed command is registered');
  assert.deepEqual([...fake.commands.keys()].filter((c) => !contributed.includes(c)), [], 'every registered command is contributed');
  for (const d of context.subscriptions) d.dispose();
});

test('package.json: activation on startup finished; nothing else needed for the lens and the status item', () => {
  assert.ok(manifest.activationEvents.includes('onStartupFinished'));
});

test('the status item: a short icon and the state (hand-written expectations)', () => {
  assert.equal(statusBarText({ state: 'idle' }, false), '$(database) RepoSnap: idle');
  assert.equal(statusBarText({ state: 'ready' }, false), '$(database) RepoSnap: ready');
  assert.equal(statusBarText({ state: 'prefill', percent: 42.6, tokensPerSecond: 300 }, false), '$(sync~spin) RepoSnap: prefill 43 %');
  assert.equal(statusBarText({ state: 'packing' }, false), '$(sync~spin) RepoSnap: packing');
  assert.equal(statusBarText({ state: 'error', message: 'x' }, false), '$(error) RepoSnap: error');
  assert.equal(statusBarText({ state: 'idle' }, true), '$(circle-slash) RepoSnap: no model');
  assert.equal(statusBarText({ state: 'resolving', detail: 'downloading 12 %' }, true), '$(sync~spin) RepoSnap: downloading 12 %');
  for (const s of ['idle', 'ready', 'answering', 'loading'] as const) assert.ok(statusBarText({ state: s }, false).length <= 32, s);
});

test('clicking the status item offers Open Chat, Select Model, Cache Stats, Restart Engine, Settings, and runs the one chosen', async () => {
  fake.reset();
  const calls: string[] = [];
  const context = { subscriptions: [] as { dispose(): unknown }[] };
  registerCommands(context as never, {
    chat: { focusInput: async () => void calls.push('focusInput') },
    engine: { restart: () => void calls.push('restart') },
    stats: { show: () => void calls.push('stats') },
  } as never);
  const labels = STATUS_MENU.map((a) => a.label.replace(/^\$\([a-z-]+\) /, ''));
  assert.deepEqual(labels, ['Open Chat', 'Select Model', 'Cache Stats', 'Restart Engine', 'Settings']);

  for (const [row, expected] of [
    ['$(comment-discussion) Open Chat', 'focusInput'],
    ['$(graph) Cache Stats', 'stats'],
    ['$(debug-restart) Restart Engine', 'restart'],
  ] as const) {
    fake.answers.quickPick = row;
    calls.length = 0;
    await fake.commands.get(STATUS_MENU_COMMAND)!();
    assert.deepEqual(calls, [expected], row);
  }
  assert.deepEqual(fake.quickPicks.at(-1)!.items.map((i) => i.label), STATUS_MENU.map((a) => a.label));
  fake.answers.quickPick = '$(settings-gear) Settings';
  await fake.commands.get(STATUS_MENU_COMMAND)!();
  assert.deepEqual(fake.executed.at(-1), { command: 'workbench.action.openSettings', args: ['@ext:reposnap.reposnap'] });
  assert.equal(`${manifest.publisher}.${manifest.name}`, 'reposnap.reposnap', 'the settings filter names this extension');
  // dismissed: nothing runs
  fake.answers.quickPick = undefined;
  const before = fake.executed.length;
  await fake.commands.get(STATUS_MENU_COMMAND)!();
  assert.equal(fake.executed.length, before, 'no command ran');
  // every row's command is this extension's (contributed) or VS Code's settings editor
  const contributed = new Set((manifest.contributes.commands as { command: string }[]).map((c) => c.command));
  for (const a of STATUS_MENU) assert.ok(contributed.has(a.command) || a.command === 'workbench.action.openSettings', a.command);
  for (const d of context.subscriptions) d.dispose();
});

test('a keybinding focuses the chat input', () => {
  const kb = (manifest.contributes.keybindings as { command: string; key: string; when?: string }[]).find((k) => k.command === 'reposnap.focusChatInput');
  assert.ok(kb, 'reposnap.focusChatInput has a keybinding');
  assert.equal(kb!.key, 'ctrl+alt+r');
  assert.equal(kb!.when, undefined, 'from anywhere in the window');
});

test('opening the chat view, or the keybinding\'s command, focuses the chat input', async () => {
  const { context } = activateFresh();
  const provider = fake.webviewViewProviders.get('reposnap.chat') as { resolveWebviewView(v: unknown): void };
  const posted: { type: string }[] = [];
  let onMessage: (m: unknown) => void = () => {};
  let onVisible: () => void = () => {};
  const view = {
    visible: true,
    webview: {
      options: {},
      html: '',
      cspSource: 'vscode-resource:',
      asWebviewUri: (u: Uri) => u,
      onDidReceiveMessage: (l: (m: unknown) => void) => ((onMessage = l), { dispose() {} }),
      postMessage: async (m: { type: string }) => void posted.push(m),
    },
    onDidDispose: () => ({ dispose() {} }),
    onDidChangeVisibility: (l: () => void) => ((onVisible = l), { dispose() {} }),
  };
  provider.resolveWebviewView(view);
  // the page loaded (the view was opened): state, then the input gets the focus
  onMessage({ type: 'ready' });
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(posted.map((m) => m.type).filter((t) => t === 'focusInput'), ['focusInput']);
  // hidden, then shown again
  posted.length = 0;
  view.visible = false;
  onVisible();
  view.visible = true;
  onVisible();
  assert.deepEqual(posted.map((m) => m.type), ['focusInput']);
  // the keybinding's command reveals the view, then focuses the input
  posted.length = 0;
  await fake.commands.get('reposnap.focusChatInput')!();
  assert.deepEqual(fake.executed.map((e) => e.command), ['reposnap.chat.focus']);
  assert.deepEqual(posted.map((m) => m.type), ['focusInput']);
  for (const d of context.subscriptions) d.dispose();
});
