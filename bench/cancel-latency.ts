/**
 * bench/cancel-latency: how long `reposnap ask` takes to stop after Ctrl+C during the prefill,
 * as a user sees it. Runs the built CLI (bin/reposnap.js, so `npm run build` first) on a
 * pseudo-terminal (util-linux `script`), waits for the first `prefill:` progress line (the first
 * ubatch is done), waits `delay` ms more, types ^C and measures the time from ^C to the process's
 * exit [ms], for each delay.
 *
 *   node --import tsx bench/cancel-latency.ts [--model smollm2|file.gguf] [--repo dir]
 *        [--context-size 4096] [--delays 100,500,900,1300] [--runs 1]
 *
 * Default: SmolLM2-135M-Instruct (`npm run models`) on this project's src/, --context-size 4096
 * (L ≈ 3.5K tokens), the CLI's defaults otherwise (batch = ubatch = 512 tokens), no cache.
 * Prints one JSON line per run and a summary; writes nothing.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { resolveBenchModel } from './models';

const ROOT = path.resolve(__dirname, '..');
const BIN = path.join(ROOT, 'bin', 'reposnap.js');

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** One run: ms from ^C to exit, the exit code, and the last progress line before ^C. */
async function run(args: string[], delayMs: number): Promise<{ delayMs: number; stopMs: number; code: number | null; at: string; tail: string }> {
  const command = [process.execPath, BIN, ...args].map(quote).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'inherit'] });
  let output = '';
  let typedAt = 0;
  let at = '';
  let armed = false;
  child.stdout.on('data', (d: Buffer) => {
    output += d.toString('utf8');
    if (!armed && /prefill: \d+%/.test(output)) {
      armed = true;
      setTimeout(() => {
        at = (output.match(/prefill: [^\r\n\x1b]*/g) ?? []).at(-1) ?? '';
        typedAt = performance.now();
        child.stdin.write('\x03');
      }, delayMs);
    }
  });
  const [code] = (await once(child, 'close')) as [number | null];
  const stopMs = typedAt > 0 ? performance.now() - typedAt : NaN;
  return { delayMs, stopMs, code, at, tail: output.slice(-80) };
}

async function main() {
  const { values } = parseArgs({ options: { model: { type: 'string' }, repo: { type: 'string' }, 'context-size': { type: 'string' }, delays: { type: 'string' }, runs: { type: 'string' } } });
  const model = resolveBenchModel(values.model ?? 'smollm2').file;
  const repo = values.repo ?? path.join(ROOT, 'src');
  const delays = (values.delays ?? '100,500,900,1300').split(',').map(Number);
  const runs = Number(values.runs ?? 1);
  const args = ['ask', '--repo', repo, '--model', model, '--no-cache', '--context-size', values['context-size'] ?? '4096', '--max-tokens', '8', 'Which file defines the function defaultCacheRoot?'];
  const stops: number[] = [];
  for (let r = 0; r < runs; r++) {
    for (const delay of delays) {
      const res = await run(args, delay);
      console.log(JSON.stringify(res));
      stops.push(res.stopMs);
    }
  }
  const sorted = [...stops].sort((a, b) => a - b);
  console.log(`Ctrl+C → exit [ms]: min ${sorted[0]!.toFixed(0)}, median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)}, max ${sorted.at(-1)!.toFixed(0)} (${stops.length} runs)`);
}

void main();
