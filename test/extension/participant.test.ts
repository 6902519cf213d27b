/**
 * `@reposnap` in VS Code's Chat view (issue 32, item 1), against the `vscode` stand-in: the
 * participant asks through the real chat view provider and thread store (src/chat/view.ts,
 * src/chat/threads.ts), with a scripted engine service in place of the engine process (the
 * engine's own cancellation is tested for real in host.test.ts and lm-engine.test.ts). Covered:
 * one chat session ↔ one RepoSnap thread through `context.history` (edited and removed turns start
 * a new thread), streamed markdown and thinned progress, references by kept share and
 * `path:line` anchors, cancellation reaching the engine's signal, and the error card's actions as
 * `stream.button`s equal to the webview card's.
 */
import { extensionContext, fake, Location, Position, Selection, Uri, workspace } from './fake-vscode';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { cardButtons, cardMarkdown } from '../../src/chat/participant/buttons';
import { chooseThread, participantTurns, type HistoryTurn, type ThreadTurn } from '../../src/chat/participant/history';
import { PARTICIPANT_ID, RepoSnapParticipant } from '../../src/chat/participant/participant';
import { ProgressLines } from '../../src/chat/participant/progress';
import { answerPlaces, packedReferences } from '../../src/chat/participant/references';
import { errorCard } from '../../src/chat/errors';
import { ChatViewProvider, failureCard, progressOf } from '../../src/chat/view';
import { AbortError } from '../../src/engine/errors';
import { EngineRemoteError } from '../../src/host/client';
import type { WireAskEvent, WireAskStats } from '../../src/host/protocol';
import type { ServiceAsk } from '../../src/host/service';
import type { ContextReport } from '../../src/pipeline/context-report';

const ROOT = path.resolve(__dirname, '..', '..');
let tmp: string;
let ws: string;
before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-participant-'));
  ws = path.join(tmp, 'ws');
  fs.mkdirSync(path.join(ws, 'src'), { recursive: true });
  fs.writeFileSync(path.join(ws, 'src', 'cache.ts'), 'export function evict() {}\n'.repeat(20));
  fs.writeFileSync(path.join(ws, 'src', 'main.ts'), 'import { evict } from "./cache";\n'.repeat(5));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

// ---- the pieces ------------------------------------------------------------------------------------

const report = (files: [string, number | null, 'full' | 'map' | 'left-out'][]): ContextReport => ({
  summary: { packedFiles: 2, totalFiles: 3, ignored: 0, fileTokens: 300, promptTokens: 400, attention: 'snapkv', keptPerHead: 128, keptRatio: 0.32 },
  files: files.map(([p, share, status]) => ({ path: p, status, tokens: status === 'left-out' ? null : 100, keptShare: share })),
  sections: [],
});

test('references: the packed files, highest kept share first, left-out files not among them', () => {
  const r = report([['src/a.ts', 0.1, 'full'], ['src/b.ts', 0.7, 'full'], ['big.bin', null, 'left-out'], ['src/c.ts', 0.4, 'map'], ['src/d.ts', null, 'full']]);
  assert.deepEqual(packedReferences(r).map((f) => f.path), ['src/b.ts', 'src/c.ts', 'src/a.ts', 'src/d.ts']);
  assert.deepEqual(packedReferences(r, 2).map((f) => f.keptShare), [0.7, 0.4]);
  assert.deepEqual(packedReferences(undefined), []);
});

test('anchors: the answer\'s path:line places in order, each once, then the files it names without a line that no place points into', () => {
  const text = 'Eviction is in src/cache.ts:12 (see also `src/cache.ts:12:5`), called from main.ts:3 and src/cache.ts#L40; config in package.json, see src/cache.ts.';
  assert.deepEqual(answerPlaces(text), [
    { path: 'src/cache.ts', line: 12 },
    { path: 'main.ts', line: 3 },
    { path: 'src/cache.ts', line: 40 },
    { path: 'package.json' },
  ]);
});

test('progress: a line per phase, once per packing stage (read and tokenize interleave); prefill its first line, then only at each further 25 %', () => {
  const lines = new ProgressLines();
  const events: WireAskEvent[] = [
    { kind: 'pack', phase: 'walk', done: 1, total: 0 },
    { kind: 'pack', phase: 'read', done: 1, total: 3 },
    { kind: 'pack', phase: 'tokenize', done: 1, total: 0 },
    { kind: 'pack', phase: 'read', done: 2, total: 3 },
    { kind: 'pack', phase: 'tokenize', done: 2, total: 0 },
    { kind: 'packed', files: 3, skipped: 0, promptTokens: 1000, paths: [], notices: [] },
    ...[10, 20, 30, 40, 55, 80, 100].map((p): WireAskEvent => ({ kind: 'prefill', done: p * 10, total: 1000, tokensPerSecond: 500 })),
    { kind: 'snap', L: 1000, B: 256, ms: 12.3, keptPerHead: [] } as unknown as WireAskEvent,
  ];
  const shown = events.map((e) => lines.next(progressOf(e))).filter((x) => x !== undefined);
  assert.deepEqual(shown, [
    'packing the repository: walk 1 files',
    'packing the repository: read 1 / 3 files',
    'packing the repository: tokenize 1 files',
    'packed 3 files (1,000 tokens), prefilling…',
    'prefill 10 % · 500 tok/s',
    'prefill 30 % · 500 tok/s',
    'prefill 55 % · 500 tok/s',
    'prefill 80 % · 500 tok/s',
    'prefill 100 % · 500 tok/s',
    'SnapKV: L 1000 → B 256 in 12.3 ms',
  ]);
});

// ---- history ↔ thread -----------------------------------------------------------------------------

/** A chat history as VS Code hands it over: request turns (`prompt`) and response turns (`result`). */
function history(turns: { prompt: string; command?: string; metadata?: Record<string, unknown>; participant?: string }[]): unknown[] {
  return turns.flatMap((t) => [
    { participant: t.participant ?? PARTICIPANT_ID, prompt: t.prompt, command: t.command, references: [], toolReferences: [] },
    { participant: t.participant ?? PARTICIPANT_ID, response: [], result: { metadata: t.metadata }, command: t.command },
  ]);
}

test('history: the thread of the last answer is continued when the chat shows exactly its turns', () => {
  const thread: ThreadTurn[] = [{ question: 'Where is X?', answerId: 'a1' }, { question: 'And Y?', answerId: 'a2' }];
  const turns = participantTurns(history([
    { prompt: 'Where is X?', metadata: { threadId: 't1', messageId: 'a1' } },
    { prompt: 'hello', participant: 'github.copilot.default' },
    { prompt: 'And Y?', metadata: { threadId: 't1', messageId: 'a2' } },
  ]), PARTICIPANT_ID);
  assert.equal(turns.length, 2, 'another participant\'s turns are not RepoSnap\'s');
  assert.deepEqual(chooseThread(turns, (id) => (id === 't1' ? thread : undefined)), { kind: 'continue', threadId: 't1' });
  assert.deepEqual(chooseThread([], () => thread), { kind: 'new' }, 'a first question starts a thread, without a note');
});

test('history: a removed last turn (VS Code drops an edited request and what follows) or an edited question starts a new thread, saying which turn', () => {
  const thread: ThreadTurn[] = [{ question: 'Where is X?', answerId: 'a1' }, { question: 'And Y?', answerId: 'a2' }, { question: 'And Z?', answerId: 'a3' }];
  const get = (id: string) => (id === 't1' ? thread : undefined);
  const two: HistoryTurn[] = participantTurns(history([
    { prompt: 'Where is X?', metadata: { threadId: 't1', messageId: 'a1' } },
    { prompt: 'And Y?', metadata: { threadId: 't1', messageId: 'a2' } },
  ]), PARTICIPANT_ID);
  const removed = chooseThread(two, get);
  assert.equal(removed.kind, 'new');
  assert.match(removed.kind === 'new' ? removed.reason! : '', /^Turn 3 of this chat's RepoSnap thread was edited or removed/);

  const edited = participantTurns(history([
    { prompt: 'Where is X?', metadata: { threadId: 't1', messageId: 'a1' } },
    { prompt: 'And W?', metadata: { threadId: 't1', messageId: 'a2' } },
    { prompt: 'And Z?', metadata: { threadId: 't1', messageId: 'a3' } },
  ]), PARTICIPANT_ID);
  const e = chooseThread(edited, get);
  assert.match(e.kind === 'new' ? e.reason! : '', /^Turn 2 /);

  // a turn removed from the middle: the ids no longer line up
  const middle = participantTurns(history([
    { prompt: 'Where is X?', metadata: { threadId: 't1', messageId: 'a1' } },
    { prompt: 'And Z?', metadata: { threadId: 't1', messageId: 'a3' } },
  ]), PARTICIPANT_ID);
  assert.match((chooseThread(middle, get) as { reason: string }).reason, /^Turn 2 /);

  // the thread was deleted in the RepoSnap view
  assert.match((chooseThread(two, () => undefined) as { reason: string }).reason, /no longer exists/);
});

test('history: after /new the next question continues the new, empty thread; /explain\'s turn matches by its answer id', () => {
  const threads: Record<string, ThreadTurn[]> = { t1: [{ question: 'Where is X?', answerId: 'a1' }], t2: [{ question: 'Explain this code from src/a.ts (line 3) …', answerId: 'b1' }] };
  const afterNew = participantTurns(history([
    { prompt: 'Where is X?', metadata: { threadId: 't1', messageId: 'a1' } },
    { prompt: '', command: 'new', metadata: { threadId: 't2', command: 'new' } },
  ]), PARTICIPANT_ID);
  assert.deepEqual(chooseThread(afterNew, (id) => (id === 't2' ? [] : threads[id])), { kind: 'continue', threadId: 't2' });
  const explained = participantTurns(history([{ prompt: 'briefly', command: 'explain', metadata: { threadId: 't2', messageId: 'b1', command: 'explain' } }]), PARTICIPANT_ID);
  assert.deepEqual(chooseThread(explained, (id) => threads[id]), { kind: 'continue', threadId: 't2' });
});

// ---- the participant over the chat view's own ask path ---------------------------------------------

const STATS = (context?: ContextReport): WireAskStats =>
  ({
    L: 400, B: 128, ratio: 0.32, snap: true, files: 2, skipped: 0, droppedTurns: 0, packMs: 5, cache: 'hit', reusedTokens: 380, prefilledTokens: 20,
    restoreMs: 3, restoreReadMs: 2, prefillMs: 40, prefillTokS: 500, snapMs: 2, decodeMs: 100, decodeTokens: 12, decodeTokS: 120, ttftMs: 60, prefixTokens: 380,
    ...(context ? { context } : {}),
  }) as unknown as WireAskStats;

/** A scripted engine service: each question emits `script`'s events, then resolves (or throws). */
function scriptedEngine(script: (q: ServiceAsk) => Promise<WireAskStats>) {
  const asked: ServiceAsk[] = [];
  return {
    asked,
    engine: {
      ask: (q: ServiceAsk) => {
        asked.push(q);
        return script(q);
      },
      modelChoice: () => 'file',
      onDidChangeModelChoice: () => ({ dispose() {} }),
      showLog() {},
    },
  };
}

/** A `ChatResponseStream` that records what was streamed. */
function recordingStream() {
  const calls: { kind: string; value: unknown; title?: string }[] = [];
  const stream = {
    markdown: (v: unknown) => calls.push({ kind: 'markdown', value: v }),
    progress: (v: unknown) => calls.push({ kind: 'progress', value: v }),
    reference: (v: unknown) => calls.push({ kind: 'reference', value: v }),
    anchor: (v: unknown, title?: string) => calls.push({ kind: 'anchor', value: v, title }),
    button: (v: unknown) => calls.push({ kind: 'button', value: v }),
  };
  const markdown = () => calls.filter((c) => c.kind === 'markdown').map((c) => c.value).join('');
  return { calls, stream, markdown };
}

function token() {
  const listeners: (() => void)[] = [];
  return {
    token: { isCancellationRequested: false, onCancellationRequested: (fn: () => void) => (listeners.push(fn), { dispose() {} }) },
    cancel() {
      this.token.isCancellationRequested = true;
      for (const l of listeners) l();
    },
  };
}

function setup(script: (q: ServiceAsk) => Promise<WireAskStats>) {
  fake.reset();
  workspace.workspaceFolders = [{ uri: Uri.file(ws), name: 'ws', index: 0 }];
  const { engine, asked } = scriptedEngine(script);
  const settings = { onDidChange: () => ({ dispose() {} }), get: () => ({ model: '/models/m.gguf' }) };
  const chat = new ChatViewProvider(extensionContext(ROOT, tmp) as never, engine as never, settings as never);
  const participant = new RepoSnapParticipant({ chat, records: () => [], root: () => ws });
  return { chat, participant, asked };
}

const request = (prompt: string, command?: string) => ({ prompt, command, references: [], toolReferences: [] }) as never;

test('a chat session is one RepoSnap thread: the follow-up goes to the first answer\'s thread; an edited turn starts a new one', async () => {
  const answers = ['Eviction is in src/cache.ts:3.', 'It is called from src/main.ts:2.', 'Again.'];
  let n = 0;
  const { chat, participant, asked } = setup(async (q) => {
    q.onEvent?.({ kind: 'token', text: answers[n++]! });
    return STATS(report([['src/main.ts', 0.2, 'full'], ['src/cache.ts', 0.6, 'full']]));
  });
  const t = token();
  const s1 = recordingStream();
  const r1 = await participant.handle(request('Where is the cache evicted?'), { history: [] } as never, s1.stream as never, t.token as never);
  const h1 = [{ participant: PARTICIPANT_ID, prompt: 'Where is the cache evicted?', references: [] }, { participant: PARTICIPANT_ID, response: [], result: r1 }];
  const s2 = recordingStream();
  const r2 = await participant.handle(request('Who calls it?'), { history: h1 } as never, s2.stream as never, t.token as never);
  assert.equal(asked[1]!.threadId, asked[0]!.threadId, 'the follow-up is asked in the same RepoSnap thread');
  assert.equal(r2.metadata!.threadId, r1.metadata!.threadId);
  assert.deepEqual(chat.threadTurns(asked[0]!.threadId)!.map((x) => x.question), ['Where is the cache evicted?', 'Who calls it?']);

  // the user edits the second question: VS Code drops it (and its answer) from the history and sends the edited one
  const s3 = recordingStream();
  await participant.handle(request('Who calls evict?'), { history: h1 } as never, s3.stream as never, t.token as never);
  assert.notEqual(asked[2]!.threadId, asked[0]!.threadId, 'a new RepoSnap thread');
  assert.match(s3.markdown(), /^_Turn 2 of this chat's RepoSnap thread was edited or removed/);
  // the webview's active thread did not change under the user
  assert.notEqual(chat.threadTurns(asked[2]!.threadId), undefined);
});

test('the answer streams as markdown, with progress, references by kept share, path:line anchors, the badge and followups', async () => {
  const { participant } = setup(async (q) => {
    q.onEvent?.({ kind: 'packed', files: 2, skipped: 0, promptTokens: 400, paths: ['src/cache.ts', 'src/main.ts'], notices: [] });
    q.onEvent?.({ kind: 'prefill', done: 400, total: 400, tokensPerSecond: 800 });
    q.onEvent?.({ kind: 'token', text: 'Eviction is in ' });
    q.onEvent?.({ kind: 'token', text: 'src/cache.ts:3; missing.ts:9 is not a file here; src/main.ts calls it.' });
    return STATS(report([['src/main.ts', 0.2, 'full'], ['src/cache.ts', 0.6, 'full'], ['secret.env', null, 'left-out']]));
  });
  const s = recordingStream();
  const result = await participant.handle(request('Where is the cache evicted?'), { history: [] } as never, s.stream as never, token().token as never);
  assert.deepEqual(s.calls.filter((c) => c.kind === 'progress').map((c) => c.value), ['packed 2 files (400 tokens), prefilling…', 'prefill 100 % · 800 tok/s']);
  assert.deepEqual(s.calls.filter((c) => c.kind === 'reference').map((c) => (c.value as Uri).fsPath), [path.join(ws, 'src/cache.ts'), path.join(ws, 'src/main.ts')]);
  const anchors = s.calls.filter((c) => c.kind === 'anchor');
  assert.equal(anchors.length, 2, 'a place whose file does not exist is no anchor');
  assert.equal((anchors[1]!.value as Uri).fsPath, path.join(ws, 'src/main.ts'), 'a file named without a line is anchored at the file');
  assert.equal(anchors[1]!.title, 'src/main.ts');
  const loc = anchors[0]!.value as Location;
  assert.ok(loc instanceof Location);
  assert.equal(loc.uri.fsPath, path.join(ws, 'src/cache.ts'));
  assert.deepEqual([(loc.range as Position).line, (loc.range as Position).character], [2, 0]);
  assert.equal(anchors[0]!.title, 'src/cache.ts:3');
  assert.match(s.markdown(), /^Eviction is in src\/cache\.ts:3; missing\.ts:9 is not a file here; src\/main\.ts calls it\.\n\n\*\*Places:\*\*  · \n\n_L 400/);
  assert.match(s.markdown(), /_L 400 → B 128 \(0\.32\) · prefill 40 ms · snap 2 ms · decode 100 ms · cache hit_$/);
  assert.deepEqual(participant.provideFollowups(result).map((f) => f.label), ['What depends on src/cache.ts:3?', 'Show the cache stats']);
});

test('cancellation: the request\'s token aborts the signal the engine got; the answer is kept as stopped, with no badge', async () => {
  const t = token();
  let aborted = false;
  const { chat, participant, asked } = setup(
    (q) =>
      new Promise((_resolve, reject) => {
        q.onEvent?.({ kind: 'token', text: 'Partial' });
        q.signal!.addEventListener('abort', () => {
          aborted = true;
          reject(new AbortError());
        });
        setTimeout(() => t.cancel(), 10);
      }),
  );
  const s = recordingStream();
  const result = await participant.handle(request('Long question'), { history: [] } as never, s.stream as never, t.token as never);
  assert.ok(aborted, 'the engine\'s signal was aborted');
  assert.equal(s.markdown(), 'Partial');
  assert.equal(typeof result.metadata!.messageId, 'string');
  assert.deepEqual(chat.threadTurns(asked[0]!.threadId)!.length, 1);
});

test('errors: the card the webview shows, its title and text as markdown and its actions as buttons (Retry asks @reposnap again)', async () => {
  const failure = new EngineRemoteError({ name: 'ContextSizeError', message: 'The context size 99999 is above the model\'s training context 2048 (pass --force-context-size)' });
  const { participant } = setup(async () => {
    throw failure;
  });
  const s = recordingStream();
  await participant.handle(request('where is X', 'explain') as never, { history: [] } as never, s.stream as never, token().token as never);
  // no editor is open: /explain says what to do and asks nothing
  assert.match(s.markdown(), /^Open a file and select the code to explain/);

  const s2 = recordingStream();
  await participant.handle(request('Where is X?'), { history: [] } as never, s2.stream as never, token().token as never);
  const card = failureCard(failure);
  assert.deepEqual(card.actions.map((a) => a.label), ['Open Settings (reposnap.contextSize)', 'Retry'], 'the webview card');
  assert.equal(s2.markdown(), cardMarkdown(card));
  assert.equal(s2.markdown(), '**The context size does not fit**\n\nThe context size 99999 is above the model\'s training context 2048');
  assert.deepEqual(s2.calls.filter((c) => c.kind === 'button').map((c) => c.value), [
    { title: 'Open Settings (reposnap.contextSize)', command: 'workbench.action.openSettings', arguments: ['reposnap.contextSize'] },
    { title: 'Retry', command: 'workbench.action.chat.open', arguments: [{ query: '@reposnap Where is X?' }] },
  ]);
});

test('errors as buttons: every card action has a command, a missing model\'s close match included; New Thread opens a new chat', () => {
  const card = errorCard({ name: 'ModelResolveError', message: 'The model file /m/qwen.gguf does not exist', suggestions: ['/m/qwen2.gguf'] });
  assert.deepEqual(cardButtons(card, '@reposnap q'), [
    { title: 'Use qwen2.gguf', command: 'reposnap.useModel', arguments: ['/m/qwen2.gguf'] },
    { title: 'Select Model File…', command: 'reposnap.selectModel' },
    { title: 'Open Settings (reposnap.model)', command: 'workbench.action.openSettings', arguments: ['reposnap.model'] },
  ]);
  const overflow = errorCard({ name: 'ContextOverflowError', message: 'too long' });
  assert.deepEqual(cardButtons(overflow).map((b) => b.command), ['workbench.action.openSettings', 'workbench.action.openSettings', 'workbench.action.chat.newChat']);
  assert.deepEqual(cardButtons(errorCard({ name: 'Error', message: 'x' })).map((b) => b.title), ['Show Log'], 'without the typed query there is no Retry');
});

test('/explain asks about the active selection with the file quoted, in the chat\'s thread', async () => {
  const { participant, asked } = setup(async (q) => {
    q.onEvent?.({ kind: 'token', text: 'It evicts.' });
    return STATS();
  });
  const text = 'export function evict() {}\nexport const x = 1;\n';
  const editor = fake.openEditor(path.join(ws, 'src', 'cache.ts'), text);
  (editor as unknown as { selection: unknown }).selection = new Selection(0, 0, 0, 26);
  const s = recordingStream();
  const result = await participant.handle(request('briefly', 'explain'), { history: [] } as never, s.stream as never, token().token as never);
  assert.equal(asked.length, 1);
  assert.match(asked[0]!.question, /^Explain this code from .*cache\.ts \(line 1\)/);
  assert.match(asked[0]!.question, /```typescript\nexport function evict\(\) \{\}\n```\n\nbriefly$/);
  assert.deepEqual(asked[0]!.quoted, { path: workspace.asRelativePath(Uri.file(path.join(ws, 'src', 'cache.ts'))), text });
  assert.equal(result.metadata!.command, 'explain');
});

test('/stats shows the workspace\'s questions as markdown (summary and the badge of each), /new starts an empty thread the next question continues', async () => {
  const base = { snap: true, files: 2, packMs: 5, prefillTokS: 500, snapMs: 2, decodeTokens: 12, decodeTokS: 120, kvBytesBefore: 4 * 2 ** 20, model: 'm.gguf', source: 'chat' as const };
  const records = [
    { ...base, at: 1, question: 'Where is X?', L: 600, B: 256, ratio: 0.5, prefillMs: 20_000, decodeMs: 2000, ttftMs: 20_500, cache: 'miss' as const, kvBytesAfter: 2 * 2 ** 20 },
    { ...base, at: 2, question: 'And | Y?', L: 620, B: 256, ratio: 0.25, prefillMs: 300, decodeMs: 1500, ttftMs: 500, cache: 'hit' as const, kvBytesAfter: 3 * 2 ** 20 },
  ];
  fake.reset();
  const chat = { ask: async () => assert.fail('nothing is asked'), createThread: () => 'fresh', threadTurns: () => [] };
  const participant = new RepoSnapParticipant({ chat: chat as never, records: () => records, root: () => ws });
  const s = recordingStream();
  await participant.handle(request('', 'stats'), { history: [] } as never, s.stream as never, token().token as never);
  assert.equal(
    s.markdown(),
    [
      '**2 questions** · cache: hit 1, miss 1',
      '',
      '- mean kept ratio B / L: 0.38',
      '- mean time to first token: cold 20.5 s, warm 500 ms',
      '- KV cache saved by SnapKV: 3.0 MiB',
      '',
      '| question | source | stats |',
      '|---|---|---|',
      '| And \\| Y? | chat | L 620 → B 256 (0.25) · prefill 300 ms · snap 2 ms · decode 1.5 s · cache hit |',
      '| Where is X? | chat | L 600 → B 256 (0.50) · prefill 20.0 s · snap 2 ms · decode 2.0 s · cache miss |',
    ].join('\n'),
  );
  const n = recordingStream();
  const result = await participant.handle(request('', 'new'), { history: [] } as never, n.stream as never, token().token as never);
  assert.deepEqual(result.metadata, { threadId: 'fresh', command: 'new' });
  assert.deepEqual(chooseThread(participantTurns(history([{ prompt: '', command: 'new', metadata: result.metadata as Record<string, unknown> }]), PARTICIPANT_ID), () => []), { kind: 'continue', threadId: 'fresh' });
});
