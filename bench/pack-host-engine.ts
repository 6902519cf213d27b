/**
 * The engine process of bench/pack-host (not a benchmark on its own): the real `EngineHost`
 * request loop over IPC, as `src/host/main.ts` runs it, with the model left unloaded and an
 * answerer that runs only the packing path of `reposnap ask`: `packRepository` with the request's
 * pack options (the ranked packing with the process's TagsCache), its progress as `pack` events,
 * the `packed` event, and stats whose context report lists every file (full attention). So the
 * extension host receives what a real question sends it until prefill, for a repository of any
 * size, without a model. Tokens are approximate (bytes / 4) in a 28,000-token budget.
 */
import { packRepository } from '../src/context/pack';
import { EngineHost } from '../src/host/engine';
import { parseToHost, type FromHost } from '../src/host/protocol';
import type { AskStats } from '../src/pipeline/ask';
import { contextReport } from '../src/pipeline/context-report';

const approximate = (text: string): number => Math.ceil(Buffer.byteLength(text, 'utf8') / 4);

// no model: this harness measures the packing path, not inference
(EngineHost.prototype as unknown as { loadModel: () => Promise<unknown> }).loadModel = async () => ({});

function send(m: FromHost): void {
  if (process.connected) process.send!(m);
}

const host = new EngineHost(send, async (req, onEvent) => {
  const t0 = performance.now();
  const pack = await packRepository(req.repo, {
    ...req.pack,
    tokenBudget: 28_000,
    countTokens: approximate,
    ...(req.signal !== undefined ? { signal: req.signal } : {}),
    onProgress: (p) => onEvent({ kind: 'pack', ...p }),
  });
  const headTokens = 10;
  const L = headTokens + pack.totalTokens + 50;
  onEvent({ kind: 'packed', pack, promptTokens: L });
  const stats = {
    L,
    prefixTokens: L - 50,
    B: L,
    ratio: 1,
    files: pack.files.length,
    skipped: pack.skipped.length,
    droppedTurns: 0,
    packMs: performance.now() - t0,
    context: contextReport({ pack, headTokens, L, attention: { kind: 'full' } }),
  };
  return stats as unknown as AskStats;
});
process.on('message', (raw) => {
  const msg = parseToHost(raw);
  if (msg === undefined) return;
  host.receive(msg);
  if (msg.type === 'shutdown') process.exit(0);
});
process.on('disconnect', () => process.exit(0));
send({ type: 'ready', pid: process.pid, addon: 'none (bench/pack-host harness)' });
