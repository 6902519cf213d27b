/**
 * "RepoSnap (local)" in VS Code's model picker (issue 32, item 2), against the `vscode` stand-in
 * and a real engine process with the tiny model: the model list is the configured GGUF file with
 * its real context size, `provideTokenCount` equals llama.cpp's tokenizer loaded in this process
 * (for a string and for a message's parts), and a response streams text parts and stops on its
 * cancellation token.
 */
import { LanguageModelTextPart } from './fake-vscode';
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { DEFAULT_SETTINGS } from '../../src/config/settings';
import { AbortError } from '../../src/engine/errors';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { EngineClient } from '../../src/host/client';
import { completeParams } from '../../src/host/request';
import { contextSizeOf } from '../../src/lm/models';
import { RepoSnapModelProvider, type ProviderEngine } from '../../src/lm/provider';
import { readModelMetadata } from '../../src/models/metadata';
import { checkTinyModel, STORY } from '../helpers/models';

const HOST = path.resolve(__dirname, '..', '..', 'src', 'host', 'main.ts');
let client: EngineClient;
let local: EngineModel;
let provider: RepoSnapModelProvider;
const sizes = { contextSize: 0, maxTokens: 24 };

before(async () => {
  client = new EngineClient({ hostScript: HOST, execArgv: ['--import', 'tsx'] });
  local = await loadModel(checkTinyModel());
  const file = checkTinyModel();
  const settings = () => ({ ...DEFAULT_SETTINGS, GPULayers: 0, ...sizes });
  // what EngineService does with the same client calls (src/host/service.ts countTokens, complete)
  const engine: ProviderEngine = {
    localModelFile: async () => file,
    countTokens: (texts) => client.countTokens(completeParams(settings(), file, []).model, texts),
    complete: (messages, opts) => client.complete(completeParams(settings(), file, messages, opts.maxTokens), opts),
  };
  provider = new RepoSnapModelProvider(engine, () => sizes);
});
after(() => {
  client.dispose();
  local.dispose();
  provider.dispose();
});

test('the picker lists the configured GGUF file with its real context size: the GGUF\'s training context (≤ 8192) or reposnap.contextSize', async () => {
  const meta = await readModelMetadata(checkTinyModel());
  const [m] = await provider.provideLanguageModelChatInformation();
  assert.equal(m!.id, checkTinyModel());
  assert.equal(m!.name, 'stories260K');
  assert.equal(m!.family, 'llama');
  assert.equal(meta.contextLength, 2048);
  assert.equal(m!.maxInputTokens + m!.maxOutputTokens, 2048);
  assert.equal(m!.maxOutputTokens, 24);
  assert.match(m!.tooltip, /SnapKV compresses the KV cache only for @reposnap's repository prompts/);
  sizes.contextSize = 1024;
  const [m2] = await provider.provideLanguageModelChatInformation();
  assert.equal(m2!.maxInputTokens, 1000);
  sizes.contextSize = 0;
  assert.equal(contextSizeOf({ contextLength: 131072 }, 0), 8192, 'the engine\'s default caps a long training context at 8192');
  assert.equal(contextSizeOf({ contextLength: 0 }, 0), 4096);
});

test('provideTokenCount equals the engine\'s tokenizer: a string, and a message\'s text and tool-result parts', async () => {
  for (const text of ['Once upon a time', STORY, 'src/lm/provider.ts:42 provideTokenCount']) {
    assert.equal(await provider.provideTokenCount(undefined as never, text), local.tokenize(text).length, text.slice(0, 20));
  }
  const message = { role: 1, name: undefined, content: [{ value: 'Lily saw a ball. ' }, { callId: 'c1', content: [{ value: 'The ball was red.' }] }] };
  assert.equal(await provider.provideTokenCount(undefined as never, message as never), local.tokenize('Lily saw a ball. The ball was red.').length);
});

test('a response streams the engine\'s text as text parts; its cancellation token stops it', async () => {
  const [m] = await provider.provideLanguageModelChatInformation();
  const parts: unknown[] = [];
  const never = { isCancellationRequested: false, onCancellationRequested: () => ({ dispose() {} }) };
  await provider.provideLanguageModelChatResponse(m!, [{ role: 1, name: undefined, content: [{ value: 'Once upon a time' }] }] as never, { toolMode: 1 } as never, { report: (p) => parts.push(p) }, never as never);
  assert.ok(parts.length > 0);
  assert.ok(parts.every((p) => p instanceof LanguageModelTextPart));

  let cancel: () => void = () => {};
  const token = { isCancellationRequested: false, onCancellationRequested: (fn: () => void) => ((cancel = fn), { dispose() {} }) };
  const got: unknown[] = [];
  const run = provider.provideLanguageModelChatResponse(m!, [{ role: 1, name: undefined, content: [{ value: STORY.slice(0, 200) }] }] as never, { toolMode: 1, modelOptions: { maxTokens: 24 } } as never, { report: (p) => (got.push(p), got.length === 2 && cancel()) }, token as never);
  await assert.rejects(run, AbortError);
  assert.ok(got.length < 24, `stopped after ${got.length} pieces`);
});
