/**
 * `reposnap` command line: the same pipeline as the extension, headless.
 *   reposnap ask --repo <dir> --model <gguf> "<question>"
 * Argument parsing uses Node's own util.parseArgs (no extra dependency, strict by default).
 */
import { runAsk } from './ask';
import { UsageError } from './usage';

const HELP = `usage: reposnap <command> [options]

commands:
  ask "<question>"   answer a question about a repository (streams the answer to stdout,
                     then one stats line to stderr)

run 'reposnap ask --help' for the options of a command.
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'ask':
      return runAsk(rest);
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

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    const err = e as Error;
    const userFacing = err instanceof UsageError || ['EngineError', 'ModelLoadError', 'ContextOverflowError', 'SnapRefusedError', 'AbortError'].includes(err.name);
    process.stderr.write(`reposnap: error: ${userFacing ? err.message : err.stack ?? String(err)}\n`);
    if (err instanceof UsageError) process.stderr.write(`run 'reposnap --help' for usage\n`);
    process.exitCode = err.name === 'AbortError' ? 130 : err instanceof UsageError ? 2 : 1;
  },
);
