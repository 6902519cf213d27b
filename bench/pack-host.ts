/**
 * bench/pack-host: does packing a large repository keep the extension host responsive
 * (issue 15: no work over 50 ms on its thread)? Packing, parsing and ranking run in the engine
 * process (`src/host/main.ts`, forked by `EngineClient`); the extension host receives its
 * progress events and the answer's stats over IPC. This harness is that path with the real
 * `EngineClient` and the real `EngineHost` (bench/pack-host-engine.ts: the model left unloaded,
 * the answerer cut after packing) on a generated repository (bench/pack-large's generator), and
 * measures this process, the stand-in for the extension host:
 *
 *   node --import tsx bench/pack-host.ts [--files 20000] [--out FILE]
 *
 * For each of two questions (cold: the engine's TagsCache empty; warm: filled by the first),
 * while the engine packs: the event-loop delay of this process (`monitorEventLoopDelay`, 5 ms
 * resolution: max and p99, ms), its event-loop utilization and CPU time, the events received,
 * the most CPU time between two turns of its event loop (`loopMonitor`), the longest single
 * event handler (what the service does with an event: the status bar text,
 * and the event serialized as a webview post would), and the time to serialize the final stats
 * (the chat view posts them to its webview, context report included). Also a baseline: the same
 * monitor for 2 s with nothing to do. Writes JSON (default bench/results/pack-large-host.json).
 *
 * The delay includes the OS not scheduling this process when the machine's cores are busy (the
 * engine process packs on one of them): compare it with the baseline.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { DEFAULT_SETTINGS } from '../src/config/settings';
import { EngineClient } from '../src/host/client';
import type { WireAskEvent } from '../src/host/protocol';
import { askParams } from '../src/host/request';
import { generateSourceRepo, loopMonitor } from './pack-large';

/** What one question cost this process. */
interface HostRow {
  run: string;
  /** Wall time of the question [ms]. */
  ms: number;
  eventLoopDelayMaxMs: number;
  eventLoopDelayP99Ms: number;
  /** Most CPU time this process used between two turns of its event loop (`loopMonitor`) [ms]. */
  longestCpuWithoutTurnMs: number;
  /** Share of the time this event loop was busy, in [0, 1]. */
  eventLoopUtilization: number;
  /** CPU time of this process (user + system) [ms]. */
  cpuMs: number;
  events: number;
  /** Longest single event handler [ms]. */
  longestHandlerMs: number;
  /** JSON.stringify of the final stats (the webview post) [ms] and its size [bytes]. */
  statsSerializeMs: number;
  statsBytes: number;
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}

/** The status bar's text for an event (what `EngineService.onProgress` sets, in words). */
function statusText(e: WireAskEvent): string {
  if (e.kind === 'pack') return `RepoSnap: packing ${e.phase === 'read' && e.total ? `${Math.round((100 * e.done) / e.total)} %` : ''}`;
  return `RepoSnap: ${e.kind}`;
}

async function measure(run: string, client: EngineClient, repo: string): Promise<HostRow> {
  const delay = monitorEventLoopDelay({ resolution: 5 });
  const elu0 = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  let events = 0;
  let longestHandlerMs = 0;
  let status = '';
  delay.enable();
  const gaps = loopMonitor();
  const t0 = performance.now();
  const stats = await client.ask(askParams({ ...DEFAULT_SETTINGS, packing: 'ranked' }, { threadId: run, repo, question: 'where are orders computed?', modelPath: '/no-model.gguf' }), {
    onEvent: (e) => {
      const h0 = performance.now();
      events++;
      status = statusText(e);
      JSON.stringify(e); // the chat view posts progress to its webview
      longestHandlerMs = Math.max(longestHandlerMs, performance.now() - h0);
    },
  });
  const s0 = performance.now();
  const posted = JSON.stringify(stats);
  const statsSerializeMs = performance.now() - s0;
  const ms = performance.now() - t0;
  delay.disable();
  const gap = gaps();
  const cpu = process.cpuUsage(cpu0);
  const elu = performance.eventLoopUtilization(elu0);
  if (status === '') throw new Error('no event received');
  return {
    run,
    ms: round(ms),
    eventLoopDelayMaxMs: round(delay.max / 1e6),
    eventLoopDelayP99Ms: round(delay.percentile(99) / 1e6),
    longestCpuWithoutTurnMs: gap.maxCpuGapMs,
    eventLoopUtilization: Math.round(elu.utilization * 1000) / 1000,
    cpuMs: round((cpu.user + cpu.system) / 1000),
    events,
    longestHandlerMs: round(longestHandlerMs),
    statsSerializeMs: round(statsSerializeMs),
    statsBytes: posted.length,
  };
}

async function baseline(ms: number): Promise<{ eventLoopDelayMaxMs: number; eventLoopDelayP99Ms: number }> {
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  await new Promise((resolve) => setTimeout(resolve, ms));
  delay.disable();
  return { eventLoopDelayMaxMs: round(delay.max / 1e6), eventLoopDelayP99Ms: round(delay.percentile(99) / 1e6) };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { files: { type: 'string' }, out: { type: 'string' } } });
  const count = Number(values.files ?? 20_000);
  const out = values.out ?? path.join(__dirname, 'results/pack-large-host.json');
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-bench-pack-host-'));
  const client = new EngineClient({ hostScript: path.join(__dirname, 'pack-host-engine.ts'), execArgv: ['--import', 'tsx'], log: () => undefined });
  try {
    generateSourceRepo(repo, count);
    const idle = await baseline(2000);
    const rows = [await measure('cold', client, repo), await measure('warm', client, repo)];
    const machine = `node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), ${os.platform()} ${os.release()}; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`;
    console.log(JSON.stringify({ files: count, baseline: idle, rows }, null, 2));
    console.log(machine);
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, JSON.stringify({ machine, files: count, baseline: idle, rows }, null, 2) + '\n');
  } finally {
    client.dispose();
    fs.rmSync(repo, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
