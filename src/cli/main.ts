/**
 * `reposnap` command line: the same pipeline as the extension, headless.
 *   reposnap ask --repo <dir> --model <gguf> "<question>"
 * Argument parsing uses Node's own util.parseArgs (no extra dependency, strict by default).
 */
import { runAsk } from './ask';
import { runCache, runStats } from './cache';
import { debugStacks, formatError } from './errors';
import { interruptExitCode } from './interrupt';
import { runPack } from './pack';
import { runRpcServer } from './rpc-server';
import { UsageError } from './usage';

const HELP = `usage: reposnap <command> [options]

commands:
  ask "<question>"   answer a question about a repository (streams the answer to stdout,
                     then one stats line to stderr)
  stats              the repository's cache: entries, hits, tokens reused, last questions (--json)
  cache clear        empty the repository's cache
  pack               list what would be packed: each file's tokens or why it was left out
  rpc-server         serve this engine's CPU to other machines' 'reposnap ask --rpc' (llama.cpp RPC)

run 'reposnap ask --help' for the options of a command.
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'ask':
      return runAsk(rest);
    case 'stats':
      return runStats(rest);
    case 'cache':
      return runCache(rest);
    case 'pack':
      return runPack(rest);
    case 'rpc-server':
      return runRpcServer(rest);
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(HELP);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command '${command}'`);
  }
}

const argv = process.argv.slice(2);
main(argv).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    const err = e as Error;
    process.stderr.write(formatError(e, argv.includes('--json'), debugStacks(process.env)));
    // a cancelled command: 128 + the signal that cancelled it (130 Ctrl+C, 143 SIGTERM, 129 SIGHUP)
    process.exitCode = err.name === 'AbortError' ? interruptExitCode() : err instanceof UsageError || err.name === 'PatternError' ? 2 : 1;
  },
);
