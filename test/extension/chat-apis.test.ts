/**
 * One extension for hosts with and without VS Code's chat APIs (issue 32, item 4). The `vscode`
 * stand-in (fake-vscode.ts) has no `vscode.chat.createChatParticipant`, `vscode.lm.registerTool`
 * or `vscode.lm.registerLanguageModelChatProvider`: it plays an older host, or a fork without
 * chat, that installed the extension with its engine field lowered. There activation registers
 * the webview chat and everything else, and none of the three; a host with the APIs gets
 * `@reposnap`, "RepoSnap (local)" and the tool under package.json's ids.
 */
import { chat, extensionContext, fake, lm, Uri, workspace } from './fake-vscode';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { chatApis } from '../../src/chat/api-presence';
import { activate } from '../../src/extension';

const ROOT = path.resolve(__dirname, '..', '..');
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-chat-apis-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

function activateFresh() {
  fake.reset();
  workspace.workspaceFolders = [{ uri: Uri.file(path.join(tmp, 'ws')), name: 'ws', index: 0 }];
  fake.configuration['reposnap.model'] = path.join(tmp, 'model.gguf');
  const context = extensionContext(ROOT, tmp);
  activate(context as never);
  return context;
}

test('package.json asks for VS Code 1.104 (the Language Model Chat Provider API was finalized there), and its API types are no newer', () => {
  assert.equal(manifest.engines.vscode, '^1.104.0');
  // vsce refuses a package whose @types/vscode is newer than engines.vscode
  assert.equal(manifest.devDependencies['@types/vscode'], '1.104.0');
  assert.deepEqual(manifest.contributes.chatParticipants.map((p: { id: string }) => p.id), ['reposnap.reposnap']);
  assert.deepEqual(manifest.contributes.chatParticipants[0].commands.map((c: { name: string }) => c.name), ['explain', 'stats', 'new']);
  assert.deepEqual(manifest.contributes.languageModelChatProviders, [{ vendor: 'reposnap', displayName: 'RepoSnap (local)' }]);
  assert.deepEqual(manifest.contributes.languageModelTools.map((t: { name: string }) => t.name), ['reposnap_askRepository']);
  assert.ok(manifest.contributes.languageModelTools[0].tags.includes('read-only'));
});

test('on a host without the chat APIs the extension activates with the webview chat only', () => {
  assert.deepEqual(chatApis({ chat, lm }), { participant: false, modelProvider: false, tools: false });
  assert.deepEqual(chatApis({}), { participant: false, modelProvider: false, tools: false }, 'no namespaces at all (VS Code before 1.90)');
  const context = activateFresh();
  assert.ok(fake.webviewViewProviders.has('reposnap.chat'));
  assert.ok(fake.commands.has('reposnap.ask'));
  for (const d of context.subscriptions) d.dispose();
});

test('on a host with them, @reposnap, the model provider and the tool are registered under package.json\'s ids', () => {
  const registered: string[] = [];
  chat.createChatParticipant = (id: string) => (registered.push(`participant ${id}`), { dispose() {} });
  lm.registerLanguageModelChatProvider = (vendor: string, provider: { provideTokenCount?: unknown }) => (registered.push(`provider ${vendor} ${typeof provider.provideTokenCount}`), { dispose() {} });
  lm.registerTool = (name: string, tool: { prepareInvocation?: unknown }) => (registered.push(`tool ${name} ${typeof tool.prepareInvocation}`), { dispose() {} });
  try {
    const context = activateFresh();
    assert.deepEqual(registered, ['participant reposnap.reposnap', 'provider reposnap function', 'tool reposnap_askRepository function']);
    assert.ok(fake.webviewViewProviders.has('reposnap.chat'), 'the webview chat stays');
    for (const d of context.subscriptions) d.dispose();
  } finally {
    delete chat.createChatParticipant;
    delete lm.registerLanguageModelChatProvider;
    delete lm.registerTool;
  }
});
