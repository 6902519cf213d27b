/**
 * A malformed `hf:` URI in `reposnap.model`: the chat's error card gives the message the CLI
 * prints for the same URI (`reposnap ask --model …`, exit 2), titled as what it is, with Open
 * Settings at reposnap.model first; nothing is downloaded and no download notification shows.
 * The chat view runs against the `vscode` stand-in (fake-vscode.ts); the CLI in a child process.
 */
import { extensionContext, fake, Uri, workspace } from './fake-vscode';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { ChatAnswer, ChatViewProvider } from '../../src/chat/view';
import { activate } from '../../src/extension';

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'reposnap.js');

let tmp: string;
before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-model-uri-'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** What `reposnap ask --model <uri>` prints: the error line's message (without `reposnap: error: `). */
function cliMessage(uri: string): string {
  const r = spawnSync(process.execPath, [BIN, 'ask', '--repo', ROOT, '--cache-dir', path.join(tmp, 'cli-cache'), '--model', uri, 'Which file defines defaultCacheRoot?'], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 2, r.stderr);
  const line = r.stderr.split('\n').find((l) => l.startsWith('reposnap: error: '));
  assert.ok(line, r.stderr);
  return line.slice('reposnap: error: '.length);
}

/** The chat's answer to one question with `reposnap.model` set to `uri`. */
async function chatAnswer(uri: string): Promise<ChatAnswer> {
  fake.reset();
  workspace.workspaceFolders = [{ uri: Uri.file(path.join(tmp, 'ws')), name: 'ws', index: 0 }];
  fake.configuration['reposnap.model'] = uri;
  fake.configuration['reposnap.modelDirectory'] = path.join(tmp, 'models');
  const context = extensionContext(ROOT, tmp);
  activate(context as never);
  try {
    const chat = fake.webviewViewProviders.get('reposnap.chat') as ChatViewProvider;
    return await chat.ask('Which file defines defaultCacheRoot?');
  } finally {
    for (const d of context.subscriptions) d.dispose();
  }
}

test('a malformed hf: model URI: the chat card gives the CLI\'s message and Open Settings (reposnap.model), downloads nothing', async () => {
  for (const uri of ['hf:bartowski/SmolLM2 135M', 'hf:justone', 'hf:user/repo/model.bin']) {
    const expected = cliMessage(uri);
    assert.match(expected, /^The model URI ".*" is malformed \(/, 'the premise: the CLI calls it malformed');
    const answer = await chatAnswer(uri);
    assert.equal(answer.cancelled, false);
    assert.deepEqual(answer.errorCard, {
      title: 'The model URI is malformed',
      text: expected,
      actions: [
        { kind: 'openSettings', label: 'Open Settings (reposnap.model)', setting: 'reposnap.model' },
        { kind: 'selectModel', label: 'Select Model File…' },
      ],
    }, uri);
    assert.deepEqual(fake.messages, [], 'no notification');
    assert.equal(fs.existsSync(path.join(tmp, 'models')), false, 'no models folder made, nothing downloaded');
  }
});
