/**
 * Entry point of the engine process (`dist/host.js`): the extension host forks it with
 * `child_process.fork`, one per window, and talks to it over IPC ({@link ./protocol}). The
 * native addon lives here only, so a native crash or an out-of-memory kills this process, never
 * the extension host. `REPOSNAP_ADDON` (set by the extension from `reposnap.GPU`) picks the
 * engine build.
 */
import path from 'node:path';
import { describeEngine, engineBackends, type EngineBackends } from '../engine/backends';
import { engineDir, loadAddon } from '../engine/native';
import { EngineHost } from './engine';
import { parseToHost, type FromHost } from './protocol';

function send(m: FromHost): void {
  if (process.connected) process.send!(m);
}

if (!process.send) {
  process.stderr.write('reposnap engine host: start it with child_process.fork (it needs an IPC channel)\n');
  process.exit(2);
}

const host = new EngineHost(send);
process.on('message', (raw) => {
  const msg = parseToHost(raw);
  if (!msg) {
    process.stderr.write(`reposnap engine host: malformed message ignored: ${JSON.stringify(raw).slice(0, 200)}\n`);
    return;
  }
  host.receive(msg);
  if (msg.type === 'shutdown') process.exit(0);
});
// The extension host went away (window closed, crash): nothing left to answer.
process.on('disconnect', () => process.exit(0));

const addon = process.env.REPOSNAP_ADDON ?? path.join(engineDir(), 'reposnap.node');
// the engine's backends are loaded once, now (the CPU variant for this CPU, the GPU modules
// REPOSNAP_BACKEND allows): the extension logs what it runs on and says once why a GPU is not used.
// An addon that does not load is reported by the first question that needs it.
let engine: EngineBackends | undefined;
try {
  engine = engineBackends(loadAddon());
} catch (e) {
  process.stderr.write(`reposnap engine host: ${(e as Error).message}\n`);
}
send({ type: 'ready', pid: process.pid, addon, ...(engine ? { engine: describeEngine(engine), notes: engine.notes } : {}) });
