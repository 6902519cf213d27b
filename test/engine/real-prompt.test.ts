/**
 * The prompt layout on a real chat model: SmolLM2-135M-Instruct's template (ChatML, which
 * llama.cpp's built-in list recognizes) frames the repository and the question, so the answer is
 * the assistant's turn. Expected strings are ChatML written out by hand, not rendered by the engine.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { promptLayout, SYSTEM_PROMPT, tokenizeLayout } from '../../src/prompt/prompt';
import { checkRealModel } from '../helpers/models';

let model: EngineModel;

before(async () => {
  model = await loadModel(checkRealModel());
});
after(() => model.dispose());

test('SmolLM2 gets its chat template (ChatML), not the plain-text fallback', () => {
  const layout = promptLayout(model);
  assert.deepEqual(layout, {
    head: `<|im_start|>system\n${SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\n`,
    between: '\n\nQuestion: ',
    tail: '<|im_end|>\n<|im_start|>assistant\n',
    afterAnswer: '<|im_end|>\n<|im_start|>user\nQuestion: ',
    templated: true,
  });
});

test('the template\'s markers become SmolLM2\'s special tokens, and the answer ends at <|im_end|>', () => {
  const t = tokenizeLayout(model, promptLayout(model));
  const imStart = model.tokenize('<|im_start|>', { parseSpecial: true });
  const imEnd = model.tokenize('<|im_end|>', { parseSpecial: true });
  assert.equal(imStart.length, 1, '<|im_start|> is one token');
  assert.equal(imEnd.length, 1, '<|im_end|> is one token');
  assert.equal(t.head[0], imStart[0], 'the prompt opens with <|im_start|>');
  assert.deepEqual(Array.from(t.tail.slice(0, 1)), [imEnd[0]], 'the question ends with <|im_end|>');
  assert.equal(t.tail.filter((x) => x === imStart[0]).length, 1, 'then the assistant turn opens');
  assert.ok(model.isEndOfGeneration(imEnd[0]!), '<|im_end|> ends generation');
});
