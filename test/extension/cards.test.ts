/**
 * First run and errors (issue 14, section 1) and dependable threads (section 2), the logic
 * outside the webview: an error class maps to a card with the actions that fix it, worded for
 * the editor; a missing model file suggests its close matches in that folder; "no model chosen"
 * and the welcome card; one answer at a time in order, a waiting one stoppable; webview
 * messages for card actions and Retry; a question's line breaks kept.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { editorWording, errorCard, errorCardMarkdown, EXPLAIN_CARD_COMMANDS, explainActionCommand } from '../../src/chat/errors';
import { downloadProgressOf, parseFromWebview } from '../../src/chat/protocol';
import { AnswerQueue } from '../../src/chat/queue';
import { renderMarkdown, renderQuestion } from '../../src/chat/render';
import { DEFAULT_MODEL_DOWNLOAD, downloadLabel, formatSize, modelChoice, welcomeCard } from '../../src/chat/welcome';
import { DEFAULT_SETTINGS } from '../../src/config/settings';
import { AbortError } from '../../src/engine/errors';
import { closeModelFiles, editDistance, ModelResolveError, resolveModel } from '../../src/models/resolve';

const kinds = (c: { actions: { kind: string; setting?: string }[] }) => c.actions.map((a) => (a.setting ? `${a.kind}:${a.setting}` : a.kind));

test('each error class maps to its title and actions; the text is the message worded for the editor', () => {
  const cases: [string, string, string, string[]][] = [
    ['ContextSizeError', 'the context size 65536 is above the model\'s training context (8192 tokens), past which its answers degrade: lower --context-size (or pass --force-context-size)',
      'The context size does not fit', ['openSettings:reposnap.contextSize', 'retry']],
    ['QuestionTooLongError', 'the question takes 900 tokens but the room for a question is 300 tokens: shorten it or raise the reposnap.contextSize setting',
      'The question is too long', ['newThread', 'openSettings:reposnap.contextSize']],
    ['ModelLoadError', 'cannot load /m.gguf: not a GGUF file', 'The model could not be loaded', ['selectModel', 'openSettings:reposnap.model', 'showLog']],
    ['PatternError', 'invalid exclude pattern "[abc": \'[\' at column 1 is never closed by \']\'', 'A file pattern is invalid', ['openSettings:reposnap.exclude', 'retry']],
    ['PatternError', 'invalid include pattern "a\\\\": a lone backslash', 'A file pattern is invalid', ['openSettings:reposnap.include', 'retry']],
    ['EngineCrashedError', 'The RepoSnap engine process exited with code 1. The next question starts a new engine.', 'The engine stopped', ['retry', 'showLog']],
    ['EngineCrashedError', 'The RepoSnap engine process was killed (SIGKILL), most often because the system ran out of memory', 'The engine stopped', ['retry', 'openSettings:reposnap.contextSize', 'showLog']],
    ['ModelResolveError', "Cannot download the model 'hf:a/b:Q4': fetch failed", 'The model could not be downloaded', ['retry', 'selectModel', 'showLog']],
    ['ModelResolveError', "The model file '/m/x.gguf' does not exist (reposnap.model).", 'Model file not found', ['selectModel', 'openSettings:reposnap.model']],
    ['ModelResolveError', 'The model URI "hf:a" is malformed (it names no <user>/<repo>): expected hf:<user>/<repo>:<quant>, an https:// URL of a .gguf file, or a local .gguf file.', 'The model URI is malformed', ['openSettings:reposnap.model', 'selectModel']],
    ['ModelResolveError', 'No model is set: set "reposnap.model" to a GGUF file or an hf: URI.', 'No model is set', ['selectModel', 'openSettings:reposnap.model']],
    ['NoWorkspaceError', 'Open a folder first.', 'No folder is open', ['openFolder']],
    ['SecretRefusedError', "config/.env is kept out of the prompt (secret exclude '.env'): RepoSnap does not send a file holding a secret to the model.", 'This file holds a secret', ['openSettings:reposnap.exclude', 'showLog']],
    ['NoModelChosenError', 'No model is chosen yet.', 'Choose a model', ['selectModel', 'downloadModel']],
    ['TypeError', 'x is undefined', 'RepoSnap could not answer', ['retry', 'showLog']],
  ];
  for (const [name, message, title, actions] of cases) {
    const c = errorCard({ name, message });
    assert.equal(c.title, title, name);
    assert.deepEqual(kinds(c), actions, `${name}: ${message}`);
    assert.doesNotMatch(c.text, /--[a-z]/, 'no CLI flag in the text');
  }
  const ctx = errorCard({ name: 'ContextSizeError', message: cases[0]![1] });
  assert.equal(ctx.text, "the context size 65536 is above the model's training context (8192 tokens), past which its answers degrade: lower the reposnap.contextSize setting");
  assert.equal(ctx.actions[0]!.label, 'Open Settings (reposnap.contextSize)');
});

test('editorWording: flags with a setting become the setting, unknown flags stay, the force clause goes', () => {
  assert.equal(editorWording('raise --context-size or lower --max-tokens'), 'raise the reposnap.contextSize setting or lower the reposnap.maxTokens setting');
  assert.equal(editorWording('lower --context-size (or pass --force-context-size)'), 'lower the reposnap.contextSize setting');
  assert.equal(editorWording('see --help; a-b--window stays'), 'see --help; a-b--window stays');
  assert.equal(editorWording('the reposnap.budget setting'), 'the reposnap.budget setting');
});

test('the card as Markdown for a comment: title, escaped text, one command link per action with a command', () => {
  const c = errorCard({ name: 'ModelLoadError', message: 'cannot load a_b*.gguf' });
  const md = errorCardMarkdown(c, (a) => (a.kind === 'showLog' ? 'command:reposnap.showLog' : undefined));
  assert.equal(md, '**The model could not be loaded**\n\ncannot load a\\_b\\*.gguf\n\n[Show Log](command:reposnap.showLog)');
});

test('editDistance: hand-checked Levenshtein distances', () => {
  assert.equal(editDistance('kitten', 'sitting'), 3);
  assert.equal(editDistance('flaw', 'lawn'), 2);
  assert.equal(editDistance('', 'abc'), 3);
  assert.equal(editDistance('abc', ''), 3);
  assert.equal(editDistance('same', 'same'), 0);
  assert.equal(editDistance('Q4_0', 'Q4_1'), 1);
});

test('a missing model file suggests the close GGUF names of its folder, nearest first; the card offers them', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-near-'));
  try {
    for (const f of ['SmolLM2-135M-Instruct.Q4_1.gguf', 'SmolLM2-135M-Instruct.Q8_0.gguf', 'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf', 'SmolLM2-135M-Instruct.Q4_0.txt']) {
      fs.writeFileSync(path.join(dir, f), 'x');
    }
    fs.mkdirSync(path.join(dir, 'SmolLM2-135M-Instruct.Q4_2.gguf')); // a folder, not a file
    const missing = path.join(dir, 'SmolLM2-135M-Instruct.Q4_0.gguf');
    // both SmolLM2 files are one substitution away (1 → 0, 8 → 4); the tie goes by name; the Qwen file is far
    const near = [path.join(dir, 'SmolLM2-135M-Instruct.Q4_1.gguf'), path.join(dir, 'SmolLM2-135M-Instruct.Q8_0.gguf')];
    assert.deepEqual(closeModelFiles(missing), near);
    // a name contained in a file's name is close, however short
    assert.deepEqual(closeModelFiles(path.join(dir, 'smollm2.gguf')).map((f) => path.basename(f)), ['SmolLM2-135M-Instruct.Q4_1.gguf', 'SmolLM2-135M-Instruct.Q8_0.gguf']);
    assert.deepEqual(closeModelFiles(path.join(dir, 'llama-3-8b.gguf')), []);
    assert.deepEqual(closeModelFiles(path.join(dir, 'qwen2.5-coder-1.5b-instruct-q4_k_s.gguf')).map((f) => path.basename(f)), ['qwen2.5-coder-1.5b-instruct-q4_k_m.gguf']);
    assert.deepEqual(closeModelFiles(path.join(dir, 'nowhere', 'x.gguf')), []);
    const err = await resolveModel(missing, { directory: dir }).then(
      () => assert.fail('resolved a missing file'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ModelResolveError);
    assert.deepEqual(err.suggestions, near);
    assert.equal(err.message, `The model file '${missing}' does not exist (reposnap.model). Did you mean 'SmolLM2-135M-Instruct.Q4_1.gguf', 'SmolLM2-135M-Instruct.Q8_0.gguf'?`);
    const card = errorCard({ name: err.name, message: err.message, suggestions: err.suggestions });
    assert.deepEqual(card.actions.slice(0, 2), [
      { kind: 'useModel', label: 'Use SmolLM2-135M-Instruct.Q4_1.gguf', path: near[0] },
      { kind: 'useModel', label: 'Use SmolLM2-135M-Instruct.Q8_0.gguf', path: near[1] },
    ]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('no model chosen: the default URI unset by the user, not downloaded, not confirmed; or an empty setting', () => {
  const uri = DEFAULT_SETTINGS.model;
  const base = { spec: uri, userSet: false, downloaded: false, downloadConfirmed: false };
  assert.equal(modelChoice(base), 'none');
  assert.equal(modelChoice({ ...base, downloaded: true }), 'chosen');
  assert.equal(modelChoice({ ...base, downloadConfirmed: true }), 'chosen');
  assert.equal(modelChoice({ ...base, userSet: true }), 'chosen', 'the user set the URI: their choice');
  assert.equal(modelChoice({ ...base, spec: '/models/x.gguf', userSet: true }), 'chosen');
  assert.equal(modelChoice({ ...base, spec: '  ', userSet: true }), 'none');
  assert.equal(modelChoice({ ...base, spec: '' }), 'none');
});

test('the welcome card: choose a file, or download the default model with its size and licence', () => {
  assert.equal(formatSize(1.12e9), '1.1 GB');
  assert.equal(formatSize(139e6), '139 MB');
  assert.equal(DEFAULT_MODEL_DOWNLOAD.uri, 'hf:Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF:Q4_K_M');
  assert.equal(downloadLabel(), 'Download Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB, Apache-2.0)');
  const c = welcomeCard();
  assert.deepEqual(c.actions, [
    { kind: 'selectModel', label: 'Choose a GGUF file…' },
    { kind: 'downloadModel', label: 'Download Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB, Apache-2.0)' },
  ]);
  assert.equal(errorCard({ name: 'NoModelChosenError', message: 'm', downloadLabel: downloadLabel() }).actions[1]!.label, downloadLabel());
});

test('the answer queue: one at a time in order; a waiting request is told so, and stopping it drops only it', async () => {
  const q = new AnswerQueue();
  const log: string[] = [];
  const releaseA = await q.acquire('A', undefined, () => log.push('A waits'));
  assert.deepEqual(q.keys, ['A']);
  const b = q.acquire('B', undefined, () => log.push('B waits')).then((r) => (log.push('B runs'), r));
  const stopC = new AbortController();
  const c = q.acquire('C', stopC.signal, () => log.push('C waits'));
  const d = q.acquire('D', undefined, () => log.push('D waits')).then((r) => (log.push('D runs'), r));
  assert.deepEqual(log, ['B waits', 'C waits', 'D waits']);
  assert.equal(q.isWaiting('A'), false);
  assert.equal(q.isWaiting('B'), true);
  stopC.abort();
  await assert.rejects(c, AbortError);
  assert.deepEqual(q.keys, ['A', 'B', 'D']);
  releaseA();
  const releaseB = await b;
  assert.deepEqual(q.keys, ['B', 'D']);
  assert.deepEqual(log.slice(3), ['B runs']);
  releaseB();
  (await d)();
  assert.deepEqual(log.slice(3), ['B runs', 'D runs']);
  assert.deepEqual(q.keys, []);
  const aborted = new AbortController();
  aborted.abort();
  await assert.rejects(q.acquire('E', aborted.signal), AbortError);
  assert.deepEqual(q.keys, []);
});

test('webview messages: card actions by answer id and index, Retry by answer id; bad ones rejected', () => {
  assert.deepEqual(parseFromWebview({ type: 'action', messageId: 'm1', index: 2, extra: 'x' }), { type: 'action', messageId: 'm1', index: 2 });
  assert.deepEqual(parseFromWebview({ type: 'retry', messageId: 'm1' }), { type: 'retry', messageId: 'm1' });
  for (const bad of [{ type: 'action', messageId: 'm1', index: -1 }, { type: 'action', messageId: 'm1', index: 1.5 }, { type: 'action', messageId: '', index: 0 },
    { type: 'action', messageId: 'm', index: '0' }, { type: 'retry' }, { type: 'retry', messageId: 3 }]) {
    assert.equal(parseFromWebview(bad), undefined, JSON.stringify(bad));
  }
});

test("a question's line breaks are kept when shown; an answer's follow Markdown", () => {
  assert.equal(renderQuestion('first line\nsecond line'), '<p>first line<br>\nsecond line</p>\n');
  assert.equal(renderMarkdown('first line\nsecond line'), '<p>first line\nsecond line</p>\n', 'the setting does not leak into answers');
});

test('download progress in the chat: percent (floored) and decimal megabytes; the checksum pass says so', () => {
  assert.deepEqual(downloadProgressOf({ phase: 'download', downloadedBytes: 482_300_000, totalBytes: 1_120_000_000 }), {
    phase: 'download', percent: (100 * 482_300_000) / 1_120_000_000, label: 'downloading the model 43 % · 482 / 1,120 MB',
  });
  assert.equal(downloadProgressOf({ phase: 'verify', downloadedBytes: 1_120_000_000, totalBytes: 1_120_000_000 }).label, 'checking the model (SHA-256) 100 % · 1,120 / 1,120 MB');
  assert.deepEqual(downloadProgressOf({ phase: 'download', downloadedBytes: 5_000_000, totalBytes: 0 }), { phase: 'download', label: 'downloading the model · 5 MB' });
});

test('an explanation links its card actions to commands it trusts; Retry and New Thread stay in the chat', () => {
  const card = errorCard({ name: 'ModelResolveError', message: "The model file '/m/a.gguf' does not exist (reposnap.model).", suggestions: ['/m/b.gguf'] });
  const uris = card.actions.map(explainActionCommand);
  assert.deepEqual(uris, [
    `command:reposnap.useModel?${encodeURIComponent('["/m/b.gguf"]')}`,
    'command:reposnap.selectModel',
    `command:workbench.action.openSettings?${encodeURIComponent('["reposnap.model"]')}`,
  ]);
  for (const u of uris) assert.ok(EXPLAIN_CARD_COMMANDS.includes(u!.slice('command:'.length).split('?')[0]!), u);
  assert.equal(explainActionCommand({ kind: 'retry', label: 'Retry' }), undefined);
  assert.equal(explainActionCommand({ kind: 'newThread', label: 'New Thread' }), undefined);
  const md = errorCardMarkdown(errorCard({ name: 'EngineCrashedError', message: 'The engine exited with code 1.' }), explainActionCommand);
  assert.equal(md, '**The engine stopped**\n\nThe engine exited with code 1.\n\n[Show Log](command:reposnap.showLog)');
});
