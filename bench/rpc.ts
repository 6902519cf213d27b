/**
 * bench/rpc: the same model locally and with its layers on two llama.cpp RPC servers over loopback
 * (`reposnap rpc-server` child processes on 127.0.0.1, issue 18 item 2), in one run: prefill tok/s,
 * SnapKV ms and decode ms/token, alternating local and RPC runs; also checks that both greedy answers
 * are the same tokens. Each server computes with `--threads` threads and the local engine with the
 * same count: the servers hold consecutive layers, so they work one after the other, never at once.
 * Beside wall time it reports the CPU time of this process and the servers per token (user + system):
 * on a shared, loaded machine the RPC engine's three processes get a larger share of the cores than
 * the local engine's one, so its wall times flatter it, while CPU time shows the work it adds.
 *
 *   node --import tsx bench/rpc.ts [--model file.gguf] [--length 1024] [--decode 32] [--threads 1] [--repeats 2] [--out bench/results/rpc-<model>.json]
 *
 * Default model: SmolLM2-135M-Instruct from `npm run models`. The prompt is this repository's
 * README.md tokenized and cut to `--length` tokens.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadModel, type EngineModel } from '../src/engine/model';
import { createSession } from '../src/engine/session';
import { realModelPath, SMOLLM2 } from '../test/helpers/models';
import { startRpcServer, type RpcServerProcess } from '../test/helpers/rpc-servers';
import { machineInfo } from './machine';

/** One measured run. CPU times are this process's plus the servers' (user + system, all threads). */
interface Run {
  where: 'local' | 'rpc';
  prefillMs: number;
  prefillTokS: number;
  prefillCpuMs: number;
  snapMs: number;
  decodeMsPerToken: number;
  decodeCpuMsPerToken: number;
  tokens: number[];
}

/** CPU time [ms] used so far by this process and the given processes (/proc/<pid>/stat utime + stime, 10 ms ticks). */
function cpuMs(pids: number[]): number {
  const own = process.cpuUsage();
  let ms = (own.user + own.system) / 1000;
  for (const pid of pids) {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields 14 and 15 of stat (utime, stime), counted from the state field (3)
    ms += ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  }
  return ms;
}

async function measure(model: EngineModel, where: Run['where'], prompt: number[], nDecode: number, threads: number, pids: number[]): Promise<Run> {
  const s = createSession(model, { contextSize: prompt.length + nDecode + 64, threads, threadsBatch: threads, snapWindow: 32 });
  try {
    const c0 = cpuMs(pids);
    const t0 = performance.now();
    await s.prefill(prompt);
    const prefillMs = performance.now() - t0;
    const prefillCpuMs = cpuMs(pids) - c0;
    const snap = await s.snap({ budget: Math.min(1024, Math.floor(prompt.length / 2)), window: 32, kernel: 7, pooling: 'max' });
    const tokens: number[] = [];
    let logits = s.lastLogits();
    const c1 = cpuMs(pids);
    const t1 = performance.now();
    for (let i = 0; i < nDecode; i++) {
      let best = 0;
      for (let j = 1; j < logits.length; j++) if (logits[j]! > logits[best]!) best = j;
      tokens.push(best);
      logits = await s.step(best);
    }
    const decodeMs = performance.now() - t1;
    const decodeCpuMs = cpuMs(pids) - c1;
    return {
      where,
      prefillMs,
      prefillTokS: prompt.length / (prefillMs / 1000),
      prefillCpuMs,
      snapMs: snap.ms,
      decodeMsPerToken: decodeMs / nDecode,
      decodeCpuMsPerToken: decodeCpuMs / nDecode,
      tokens,
    };
  } finally {
    s.dispose();
  }
}

const median = (xs: number[]): number => {
  const a = [...xs].sort((x, y) => x - y);
  return a.length % 2 ? a[(a.length - 1) / 2]! : (a[a.length / 2 - 1]! + a[a.length / 2]!) / 2;
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { model: { type: 'string' }, length: { type: 'string' }, decode: { type: 'string' }, threads: { type: 'string' }, repeats: { type: 'string' }, out: { type: 'string' } },
  });
  const file = values.model ?? realModelPath(SMOLLM2);
  const L = Number(values.length ?? 1024);
  const nDecode = Number(values.decode ?? 32);
  const threads = Number(values.threads ?? 1);
  const repeats = Number(values.repeats ?? 2);
  const name = path.basename(file).replace(/\.gguf$/, '');
  const out = values.out ?? path.join(__dirname, 'results', `rpc-${name}.json`);

  const servers: RpcServerProcess[] = await Promise.all([startRpcServer({ threads }), startRpcServer({ threads })]);
  const runs: Run[] = [];
  let loadMs: Record<Run['where'], number> = { local: 0, rpc: 0 };
  try {
    let t = performance.now();
    const local = await loadModel(file);
    loadMs.local = performance.now() - t;
    const text = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8');
    const all = Array.from(local.tokenize(text.repeat(Math.ceil((L * 8) / text.length) + 1), { addSpecial: true }));
    const prompt = all.slice(0, L);
    t = performance.now();
    const remote = await loadModel(file, { rpcServers: servers.map((s) => s.endpoint) });
    loadMs.rpc = performance.now() - t;
    try {
      for (let r = 0; r < repeats; r++) {
        const pids = servers.map((x) => x.child.pid!);
        runs.push(await measure(local, 'local', prompt, nDecode, threads, pids));
        runs.push(await measure(remote, 'rpc', prompt, nDecode, threads, pids));
      }
    } finally {
      remote.dispose();
      local.dispose();
    }
  } finally {
    await Promise.all(servers.map((s) => s.kill()));
  }
  const same = runs.every((r) => r.tokens.join(',') === runs[0]!.tokens.join(','));
  const summary = (where: Run['where']) => {
    const rs = runs.filter((r) => r.where === where);
    return {
      prefillTokS: median(rs.map((r) => r.prefillTokS)),
      prefillCpuMsPerToken: median(rs.map((r) => r.prefillCpuMs)) / L,
      snapMs: median(rs.map((r) => r.snapMs)),
      decodeMsPerToken: median(rs.map((r) => r.decodeMsPerToken)),
      decodeCpuMsPerToken: median(rs.map((r) => r.decodeCpuMsPerToken)),
      loadMs: loadMs[where],
    };
  };
  const result = {
    bench: 'bench/rpc.ts',
    date: new Date().toISOString(),
    model: path.basename(file),
    L,
    decodeTokens: nDecode,
    threads,
    servers: 2,
    machine: machineInfo(),
    sameGreedyTokens: same,
    local: summary('local'),
    rpc: summary('rpc'),
    runs: runs.map(({ tokens, ...r }) => ({ ...r, tokens: tokens.length })),
  };
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
  console.log(`model ${result.model}, L = ${L}, decode ${nDecode} tokens, ${threads} thread(s) per engine, 2 loopback RPC servers; load avg ${result.machine.loadavg[0]!.toFixed(1)}; same greedy tokens: ${same}`);
  console.log('| engine | load ms | prefill tok/s | prefill CPU ms/token | SnapKV ms | decode ms/token | decode CPU ms/token |');
  console.log('|---|---|---|---|---|---|---|');
  for (const where of ['local', 'rpc'] as const) {
    const s = result[where];
    console.log(
      `| ${where === 'local' ? 'local CPU' : 'RPC, 2 servers on 127.0.0.1'} | ${s.loadMs.toFixed(0)} | ${s.prefillTokS.toFixed(1)} | ${s.prefillCpuMsPerToken.toFixed(2)} | ${s.snapMs.toFixed(1)} | ${s.decodeMsPerToken.toFixed(2)} | ${s.decodeCpuMsPerToken.toFixed(2)} |`,
    );
  }
  console.log(`wrote ${path.relative(process.cwd(), out)}`);
}

void main();
