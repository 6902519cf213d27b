/**
 * The engine process keeps, per folder and cache, the pack of the last answered question
 * (`EngineHost`, host/engine.ts) and passes it as the next question's `editBase`, the base of an
 * erratum (issue 30); a question without a cache folder leaves none.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_SETTINGS } from '../../src/config/settings';
import type { PackResult } from '../../src/context/pack';
import { EngineHost } from '../../src/host/engine';
import type { FromHost } from '../../src/host/protocol';
import { askParams } from '../../src/host/request';
import type { AskRequest, AskStats } from '../../src/pipeline/ask';
import { checkTinyModel } from '../helpers/models';

test("each question's editBase is the pack the previous answered question of the same folder and cache ran on", async () => {
  const seen: (PackResult | undefined)[] = [];
  let n = 0;
  const fakePack = (i: number) => ({ files: [], skipped: [], notices: [], sections: [], id: i }) as unknown as PackResult;
  const run = async (req: AskRequest, onEvent: Parameters<typeof import('../../src/pipeline/ask').askRepository>[1]): Promise<AskStats> => {
    seen.push(req.editBase);
    onEvent({ kind: 'packed', pack: fakePack(++n), promptTokens: 1 });
    return { L: 1, B: 1, cache: 'miss' } as AskStats;
  };
  const done: string[] = [];
  let finished: () => void = () => {};
  const host = new EngineHost((m: FromHost) => {
    if (m.type === 'done' || m.type === 'error') {
      done.push(m.type);
      finished();
    }
  }, run);
  const ask = (id: string, repo: string, cacheDir?: string) =>
    new Promise<void>((resolve) => {
      finished = resolve;
      const params = askParams(DEFAULT_SETTINGS, { threadId: 't', repo, question: 'q?', modelPath: checkTinyModel(), ...(cacheDir ? { cacheDir } : {}) });
      host.receive({ type: 'ask', id, params });
    });
  await ask('1', '/r', '/c/r');
  await ask('2', '/r', '/c/r');
  await ask('3', '/other', '/c/other');
  await ask('4', '/r', '/c/r');
  await ask('5', '/r');
  await ask('6', '/r');
  host.receive({ type: 'shutdown' });
  assert.deepEqual(done, ['done', 'done', 'done', 'done', 'done', 'done']);
  const ids = seen.map((p) => (p as unknown as { id: number } | undefined)?.id);
  assert.deepEqual(ids, [undefined, 1, undefined, 2, undefined, undefined]);
  assert.equal(askParams(DEFAULT_SETTINGS, { threadId: 't', repo: '/r', question: 'q', modelPath: '/m' }).afterEdit, DEFAULT_SETTINGS.afterEdit);
});
