/**
 * The engine process's requests behind the Language Model Chat Provider (issue 32, item 2), for
 * real with the tiny model: `countTokens` counts with the model's own tokenizer (the same counts
 * as llama.cpp's tokenizer loaded here, in this process), a plain completion streams the model's
 * greedy continuation of its chat-templated messages, and a cancelled completion stops.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { AbortError } from '../../src/engine/errors';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { createSession } from '../../src/engine/session';
import { EngineClient } from '../../src/host/client';
import type { CompleteParams, WireAskEvent } from '../../src/host/protocol';
import { readModelMetadata } from '../../src/models/metadata';
import { renderMessages } from '../../src/pipeline/complete';
import { checkTinyModel, STORY } from '../helpers/models';

const HOST = path.resolve(__dirname, '..', '..', 'src', 'host', 'main.ts');
let client: EngineClient;
let local: EngineModel;

before(async () => {
  client = new EngineClient({ hostScript: HOST, execArgv: ['--import', 'tsx'] });
  local = await loadModel(checkTinyModel());
});
after(() => {
  client.dispose();
  local.dispose();
});

const spec = () => ({ path: checkTinyModel(), gpuLayers: 0 });

test('countTokens counts with the model\'s own tokenizer: the same counts as llama_tokenize here, and the model\'s training context', async () => {
  const texts = ['', 'Lily', 'Once upon a time, there was a little girl named Lily.', STORY, 'src/cache/location.ts:42 defaultCacheRoot()'];
  const { counts, trainContext } = await client.countTokens(spec(), texts);
  assert.deepEqual(counts, texts.map((t) => local.tokenize(t).length));
  assert.equal(counts[0], 0);
  assert.ok(counts[3]! > 300, `the story is ~380 tokens: ${counts[3]}`);
  // the GGUF header's llama.context_length, read by RepoSnap's own GGUF reader (2048 for stories260K)
  assert.equal(trainContext, (await readModelMetadata(checkTinyModel())).contextLength);
  assert.equal(trainContext, 2048);
});

test('a plain completion streams the greedy continuation of the chat-templated messages, computed here the same way', async () => {
  const messages: CompleteParams['messages'] = [{ role: 'user', content: 'Once upon a time, there was a little girl named Lily.' }];
  const params: CompleteParams = { model: spec(), messages, contextSize: 512, maxTokens: 16, session: { flashAttention: 'auto', kvCacheType: 'f16' } };
  const events: WireAskEvent[] = [];
  const stats = await client.complete(params, { onEvent: (e) => events.push(e) });
  const streamed = events.flatMap((e) => (e.kind === 'token' ? [e.text] : [])).join('');

  // the same prompt and greedy decode in this process
  const { text, templated } = renderMessages(local, messages);
  const tokens = local.tokenize(text, { addSpecial: true, parseSpecial: templated });
  const session = createSession(local, { contextSize: 512, snapWindow: 0, fingerprintMemo: null });
  await session.prefill(tokens);
  let expected = '';
  for await (const piece of session.generate({ maxTokens: 16, sampling: { temperature: 0 } })) expected += piece;
  session.dispose();

  assert.equal(stats.promptTokens, tokens.length);
  assert.equal(stats.decodeTokens, 16);
  assert.ok(expected.length > 0);
  assert.equal(streamed, expected);
  assert.ok(events.some((e) => e.kind === 'prefill' && e.done === e.total), 'prefill progress reached its total');
});

test('a cancelled completion rejects with AbortError and the engine answers the next request', async () => {
  const controller = new AbortController();
  const messages: CompleteParams['messages'] = [{ role: 'user', content: STORY.slice(0, 200) }];
  const params: CompleteParams = { model: spec(), messages, contextSize: 512, maxTokens: 200, session: { flashAttention: 'auto', kvCacheType: 'f16' } };
  let tokens = 0;
  const t0 = performance.now();
  let abortedAt = 0;
  const run = client.complete(params, {
    signal: controller.signal,
    onEvent: (e) => {
      if (e.kind === 'token' && ++tokens === 3) {
        abortedAt = performance.now();
        controller.abort();
      }
    },
  });
  await assert.rejects(run, AbortError);
  const stopMs = performance.now() - abortedAt;
  console.log(`completion: cancelled after ${tokens} tokens, stopped ${stopMs.toFixed(0)} ms after the abort (${(performance.now() - t0).toFixed(0)} ms in all)`);
  assert.ok(tokens < 200, 'it stopped before maxTokens');
  const { counts } = await client.countTokens(spec(), ['Lily']);
  assert.deepEqual(counts, [local.tokenize('Lily').length]);
});
