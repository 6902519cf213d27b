/**
 * Runs inside VS Code's extension host (launched by test/extension/vscode.test.ts through
 * @vscode/test-electron): activation, the contributed commands, a question answered through the
 * command API with the tiny model, a settings change applied without a reload, and an
 * explanation through the Explain command. Plain node:assert; the first failure rejects `run`.
 */
import assert from 'node:assert/strict';
import * as vscode from 'vscode';

interface ChatAnswer {
  text: string;
  stats?: { L: number; B: number; decodeTokens: number; cache: string };
  error?: string;
}

const steps: [string, () => Promise<void>][] = [];
const step = (name: string, fn: () => Promise<void>) => steps.push([name, fn]);

step('the extension activates on its command and registers every contributed command', async () => {
  const ext = vscode.extensions.getExtension('reposnap.reposnap');
  assert.ok(ext, 'reposnap.reposnap is installed');
  await ext.activate();
  assert.ok(ext.isActive);
  const contributed = (ext.packageJSON.contributes.commands as { command: string }[]).map((c) => c.command);
  const registered = new Set(await vscode.commands.getCommands(true));
  for (const c of contributed) assert.ok(registered.has(c), `${c} is registered`);
});

step('a question is answered through the command API with the tiny model (SnapKV on: B < L)', async () => {
  const r = await vscode.commands.executeCommand<ChatAnswer>('reposnap.ask', 'Who is Lily?');
  assert.ok(r && !r.error, r?.error);
  assert.ok(r.text.length > 0, 'an answer');
  assert.equal(r.stats!.B, 256);
  assert.ok(r.stats!.L > 256, `L = ${r.stats!.L}`);
  const pid = await vscode.commands.executeCommand<number>('reposnap.enginePid');
  assert.ok(typeof pid === 'number' && pid !== process.pid, 'answered in the engine process');
});

step('a settings change applies to the next question without a reload', async () => {
  await vscode.workspace.getConfiguration('reposnap').update('budget', 128, vscode.ConfigurationTarget.Workspace);
  try {
    const r = await vscode.commands.executeCommand<ChatAnswer>('reposnap.ask', 'Where does Lily play?');
    assert.ok(r && !r.error, r?.error);
    assert.equal(r.stats!.B, 128);
  } finally {
    await vscode.workspace.getConfiguration('reposnap').update('budget', undefined, vscode.ConfigurationTarget.Workspace);
  }
});

step('Explain on a range finishes (comment thread) without an error', async () => {
  const [file] = await vscode.workspace.findFiles('**/*.ts', undefined, 1);
  assert.ok(file, 'the workspace has a .ts file');
  await vscode.window.showTextDocument(file);
  await vscode.commands.executeCommand('reposnap.explainRange', file, new vscode.Range(0, 0, 2, 0), 'add');
});

/** Entry point called by VS Code's test runner. */
export async function run(): Promise<void> {
  let failed = 0;
  for (const [name, fn] of steps) {
    try {
      await fn();
      console.log(`ok - ${name}`);
    } catch (e) {
      failed++;
      console.log(`not ok - ${name}\n  ${(e as Error).stack ?? e}`);
    }
  }
  console.log(`${steps.length - failed} passed, ${failed} failed`);
  if (failed > 0) throw new Error(`${failed} of ${steps.length} VS Code extension tests failed`);
}
