/**
 * How the CLI reports a failure: one line for the user (a stack only for an unexpected error), or
 * with `--json` one JSON object with a stable `error.code`, so that scripts can branch on it.
 */
import { AbortError } from '../engine/errors';
import { escapeControls, terminalJson } from './terminal-text';
import { UsageError } from './usage';

/** Stable `error.code` of each user-facing error class (the `--json` error object). */
export const ERROR_CODES: Record<string, string> = {
  UsageError: 'usage',
  EngineError: 'engine',
  ModelLoadError: 'model_load',
  ModelResolveError: 'model_resolve',
  ContextOverflowError: 'context_overflow',
  ContextSizeError: 'context_size',
  QuestionTooLongError: 'question_too_long',
  SnapRefusedError: 'snap_refused',
  RpcError: 'rpc',
  StateFileError: 'state_file',
  PatternError: 'invalid_pattern',
  AbortError: 'cancelled',
};

/** The environment variable that adds an unexpected error's stack to what the CLI prints ({@link debugStacks}). */
export const DEBUG_ENV = 'REPOSNAP_DEBUG';

/** Whether `env` asks for stacks: {@link DEBUG_ENV} set to anything but '' or '0'. */
export function debugStacks(env: NodeJS.ProcessEnv): boolean {
  const v = env[DEBUG_ENV];
  return v !== undefined && v !== '' && v !== '0';
}

/**
 * What the CLI prints for a failure: `reposnap: error: <message>` (control characters escaped,
 * `\uXXXX`), then for a UsageError that is about the command's usage (`showUsage`) a line pointing
 * at `--help`; for an unexpected error (`internal`, a bug) `reposnap: error: internal error:
 * <message>` and a line that says to report it (its stack only with `debug`, see
 * {@link debugStacks}); or with `--json` one object `{"error":{"code","message"}}` on one line
 * (and `stack` for an internal error with `debug`), `code` one of {@link ERROR_CODES}' values or
 * `internal`.
 */
export function formatError(e: unknown, json: boolean, debug = false): string {
  const err = e instanceof Error ? e : new Error(String(e));
  const code = ERROR_CODES[err.name] ?? 'internal';
  // a platform abort (a DOMException's "This operation was aborted") says what RepoSnap's own does
  const message = code === 'cancelled' && !(err instanceof AbortError) ? new AbortError().message : err.message;
  const stack = code === 'internal' && debug && err.stack !== undefined ? err.stack : undefined;
  if (json) return `${terminalJson({ error: { code, message, ...(stack !== undefined ? { stack } : {}) } })}\n`;
  if (code === 'internal') {
    const more = stack ?? `this is a bug in RepoSnap: please report it with the command that failed and what it prints with ${DEBUG_ENV}=1 (the stack trace)`;
    return `reposnap: error: internal error: ${escapeControls(message)}\n${more}\n`;
  }
  // a message that quotes something the user typed, or a path, cannot drive the terminal (paths
  // are quoted by quotePath where the message is made; this catches the rest)
  const lines = [`reposnap: error: ${escapeControls(message)}`];
  if (err instanceof UsageError && err.showUsage) lines.push(`run 'reposnap --help' for usage`);
  return `${lines.join('\n')}\n`;
}

