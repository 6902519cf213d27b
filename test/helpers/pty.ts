/**
 * Ctrl+C typed on a real terminal: `node bin/reposnap.js …args` runs under util-linux `script`
 * (`-q` no banner, `-f` output as it comes, `-e` its exit status), so that stderr is a TTY and
 * the progress line is drawn, and ^C written to the pseudo-terminal makes its line discipline
 * send SIGINT to the command, as a user's Ctrl+C does.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'reposnap.js');

/** `s` as one POSIX shell word. */
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** What {@link ctrlCWhen} saw: the exit code, whether ^C was typed, and the terminal's output (stdout and stderr as a user sees them). */
export interface CtrlCRun {
  code: number | null;
  typed: boolean;
  output: string;
}

/**
 * Runs reposnap with `args` on a pseudo-terminal and types ^C once, as soon as the output holds
 * `when`. A command that runs on for a minute is killed (a hang fails the caller's assertions;
 * this measures nothing).
 * @param env the command's environment (default this process's).
 */
export async function ctrlCWhen(args: readonly string[], when: string, env: NodeJS.ProcessEnv = process.env): Promise<CtrlCRun> {
  const command = [process.execPath, BIN, ...args].map(quote).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'], env });
  let output = '';
  let typed = false;
  child.stdout.on('data', (d: Buffer) => {
    output += d.toString('utf8');
    if (!typed && output.includes(when)) {
      typed = true;
      child.stdin.write('\x03');
    }
  });
  child.stderr.on('data', (d: Buffer) => (output += d.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const [code] = (await once(child, 'close')) as [number | null];
  clearTimeout(timer);
  return { code, typed, output };
}
