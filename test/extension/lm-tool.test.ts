/**
 * `reposnap_askRepository` for agent mode (issue 32, item 3), against the `vscode` stand-in with a
 * scripted engine service: `prepareInvocation` says what will run and asks no confirmation (the
 * tool only reads), `invoke` returns the answer with the files read by kept share and the badge,
 * each call in its own engine thread; a failure is the error card's title and text; a cancel throws.
 */
import './fake-vscode';
import type { LanguageModelTextPart, LanguageModelToolResult } from './fake-vscode';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AbortError } from '../../src/engine/errors';
import { EngineRemoteError } from '../../src/host/client';
import type { WireAskStats } from '../../src/host/protocol';
import type { ServiceAsk } from '../../src/host/service';
import { AskRepositoryTool } from '../../src/lm/tool';

const never = { isCancellationRequested: false, onCancellationRequested: () => ({ dispose() {} }) } as never;
const stats = {
  L: 612, B: 256, ratio: 0.42, snap: true, files: 2, packMs: 5, prefillMs: 1200, prefillTokS: 500, snapMs: 80, decodeMs: 2300, decodeTokens: 40, decodeTokS: 17, ttftMs: 1300, cache: 'hit',
  context: {
    summary: { packedFiles: 2, totalFiles: 3, ignored: 0, fileTokens: 500, promptTokens: 612, attention: 'snapkv', keptPerHead: 256, keptRatio: 0.42 },
    files: [
      { path: 'src/format.ts', status: 'full', tokens: 200, keptShare: 0.25 },
      { path: 'src/math.ts', status: 'full', tokens: 300, keptShare: 0.5 },
      { path: 'big.bin', status: 'left-out', tokens: null, keptShare: null },
    ],
    sections: [],
  },
} as unknown as WireAskStats;

const textOf = (r: unknown) => ((r as LanguageModelToolResult).content as LanguageModelTextPart[]).map((p) => p.value).join('');

test('prepareInvocation names the question and asks no confirmation (the tool edits nothing)', () => {
  const tool = new AskRepositoryTool({ ask: async () => stats });
  const prepared = tool.prepareInvocation({ input: { question: 'Where is the Rectangle class?' } } as never);
  assert.equal(prepared.invocationMessage, 'Asking RepoSnap about the repository (local model, read-only): "Where is the Rectangle class?"');
  assert.equal((prepared as { confirmationMessages?: unknown }).confirmationMessages, undefined);
});

test('invoke returns the answer, the files read by kept share (left-out files not among them) and the badge, each call its own thread', async () => {
  const asked: ServiceAsk[] = [];
  const tool = new AskRepositoryTool({
    ask: async (q) => {
      asked.push(q);
      q.onEvent?.({ kind: 'token', text: 'src/math.ts defines ' });
      q.onEvent?.({ kind: 'token', text: 'Rectangle.' });
      return stats;
    },
  });
  const r = await tool.invoke({ input: { question: 'Where is the Rectangle class?' } } as never, never);
  assert.equal(
    textOf(r),
    'src/math.ts defines Rectangle.\n\nFiles RepoSnap read (highest kept share first):\n- src/math.ts (50 % kept)\n- src/format.ts (25 % kept)\n\nL 612 → B 256 (0.42) · prefill 1.2 s · snap 80 ms · decode 2.3 s · cache hit',
  );
  await tool.invoke({ input: { question: 'And Circle?' } } as never, never);
  assert.match(asked[0]!.threadId, /^tool:/);
  assert.notEqual(asked[0]!.threadId, asked[1]!.threadId);
});

test('a failure is returned as the error card\'s title and text; a cancel throws', async () => {
  const failing = new AskRepositoryTool({
    ask: async () => {
      throw new EngineRemoteError({ name: 'NoWorkspaceError', message: 'Open a folder first: RepoSnap answers questions about the workspace folder.' });
    },
  });
  assert.equal(textOf(await failing.invoke({ input: { question: 'q' } } as never, never)), 'RepoSnap could not answer: No folder is open. Open a folder first: RepoSnap answers questions about the workspace folder.');
  const cancelled = new AskRepositoryTool({
    ask: async () => {
      throw new AbortError();
    },
  });
  await assert.rejects(cancelled.invoke({ input: { question: 'q' } } as never, never), AbortError);
});
