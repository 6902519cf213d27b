/**
 * Workspace values that weaken what RepoSnap keeps out (issue 29, item 3): a repository's own
 * `.vscode/settings.json` (or a folder's, in a multi-root workspace) setting `reposnap.exclude`
 * negations that bring back a file excluded as a secret (`'!.env'`, `'!*.pem'`), or
 * `reposnap.maxFileBytes`. Such a value is not used until the user accepts it, once, in a
 * confirmation that says what it changes (the extension's settings accessor shows it and keeps
 * the answer in the workspace's state); until then the user's own value (or the default) applies.
 *
 * Plain TypeScript, no `vscode`: the decision is made here and tested directly; the accessor
 * (accessor.ts) only asks and remembers.
 */
import { createExcludeMatcher, SECRET_EXCLUDES } from '../context/globs';
import { DEFAULT_SETTINGS, type ReposnapSettings, type SettingPlaces } from './settings';

/** The places of the two guarded settings, as `WorkspaceConfiguration.inspect` returns them. */
export interface GuardedPlaces {
  exclude: SettingPlaces<unknown> | undefined;
  maxFileBytes: SettingPlaces<unknown> | undefined;
}

/** One workspace value waiting for the user's word. */
export interface WorkspaceOverride {
  /** The setting, without `reposnap.`. */
  key: 'exclude' | 'maxFileBytes';
  /** What is accepted: the key and the workspace value, so that a changed value is asked about again. */
  id: string;
  /** The confirmation's text: which value, what it changes, and that it is ignored until allowed. */
  message: string;
  /** For `exclude`: the negations that re-include secrets (ignored until accepted). */
  negations?: string[];
}

/** A file path that `pattern` (gitignore syntax, no `!`) matches: `*` as `x`, `**​/` dropped, a directory pattern's file `x` inside. */
function samplePath(pattern: string): string {
  const p = pattern.replace(/^\//, '').replace(/^(\*\*\/)+/, '').replace(/\/\*\*\//g, '/').replace(/\*+/g, 'x');
  return p.endsWith('/') ? `${p}x` : p;
}

/** A sample file of every secret exclude, built once. */
let secretSamples: readonly string[] | undefined;

/**
 * The secret excludes `negation` (a `!pattern`) brings back: for each sample file of a
 * `SECRET_EXCLUDES` pattern, and the negation's own sample, that the secret rules exclude and the
 * secret rules followed by the negation do not, the secret rule's mark (`secret exclude '.env'`).
 * Empty for a negation that re-includes no secret, and for a pattern that cannot be compiled
 * (reported by `readSettings`' caller as an invalid pattern).
 */
export function secretsReincluded(negation: string): string[] {
  if (!negation.startsWith('!')) return [];
  secretSamples ??= SECRET_EXCLUDES.map(samplePath);
  let secrets;
  let withNegation;
  try {
    secrets = createExcludeMatcher([], { defaults: false });
    withNegation = createExcludeMatcher([negation], { defaults: false });
  } catch {
    return [];
  }
  if (secrets === undefined || withNegation === undefined) return [];
  const marks = new Set<string>();
  for (const sample of [...secretSamples, samplePath(negation.slice(1))]) {
    const before = secrets.test(sample);
    if (before.ignored && !withNegation.ignores(sample)) marks.add(before.rule?.mark ?? sample);
  }
  return [...marks];
}

/** A byte count for people: `256 KiB`, `50 MiB`, `900 bytes`. */
function bytesText(n: number): string {
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

/** The workspace value of a setting: the folder's when set, else the workspace's. */
function workspaceValueOf(places: SettingPlaces<unknown> | undefined): unknown {
  return places?.workspaceFolderValue !== undefined ? places.workspaceFolderValue : places?.workspaceValue;
}

/**
 * The workspace values of `reposnap.exclude` and `reposnap.maxFileBytes` that need the user's
 * confirmation (see the module comment), whether accepted or not: an `exclude` value whose
 * negations re-include a secret exclude (`secretsReincluded`), and a `maxFileBytes` value other
 * than the user's own (or the default). A malformed value is left to `readSettings`, which
 * replaces it by the default.
 */
export function workspaceOverrides(places: GuardedPlaces): WorkspaceOverride[] {
  const overrides: WorkspaceOverride[] = [];
  const exclude = workspaceValueOf(places.exclude);
  if (Array.isArray(exclude) && exclude.every((p) => typeof p === 'string')) {
    const risky = (exclude as string[]).map((p) => p.trim()).filter((p) => secretsReincluded(p).length > 0);
    if (risky.length > 0) {
      const marks = [...new Set(risky.flatMap(secretsReincluded))];
      overrides.push({
        key: 'exclude',
        id: `exclude:${JSON.stringify(risky)}`,
        negations: risky,
        message:
          `This workspace's settings set reposnap.exclude ${risky.map((p) => `'${p}'`).join(', ')}, which bring${risky.length === 1 ? 's' : ''} back files RepoSnap keeps out as secrets ` +
          `(${marks.join(', ')}): they would be read into the model's prompt and its cache on disk. RepoSnap ignores ${risky.length === 1 ? 'this pattern' : 'these patterns'} until you allow ${risky.length === 1 ? 'it' : 'them'}.`,
      });
    }
  }
  const bytes = workspaceValueOf(places.maxFileBytes);
  const own = typeof places.maxFileBytes?.globalValue === 'number' ? places.maxFileBytes.globalValue : DEFAULT_SETTINGS.maxFileBytes;
  if (typeof bytes === 'number' && Number.isInteger(bytes) && bytes >= 1 && bytes !== own) {
    overrides.push({
      key: 'maxFileBytes',
      id: `maxFileBytes:${bytes}`,
      message:
        `This workspace's settings set reposnap.maxFileBytes to ${bytesText(bytes)} (yours: ${bytesText(own)}), so that ${bytes > own ? 'larger' : 'only smaller'} files are packed` +
        `${bytes > own ? ': very large files cost time and memory to read and parse' : ''}. RepoSnap uses ${bytesText(own)} until you allow it.`,
    });
  }
  return overrides;
}

/**
 * `settings` (as `readSettings` read them) with every override of `overrides` whose `id` is not
 * in `accepted` undone: its `exclude` negations dropped, its `maxFileBytes` replaced by the user's
 * own value (or the default). Pure.
 */
export function withoutUnaccepted(settings: ReposnapSettings, places: GuardedPlaces, overrides: readonly WorkspaceOverride[], accepted: ReadonlySet<string>): ReposnapSettings {
  let result = settings;
  for (const o of overrides) {
    if (accepted.has(o.id)) continue;
    if (o.key === 'exclude') {
      const drop = new Set(o.negations ?? []);
      result = { ...result, exclude: result.exclude.filter((p) => !drop.has(p)) };
    } else {
      const own = places.maxFileBytes?.globalValue;
      result = { ...result, maxFileBytes: typeof own === 'number' && Number.isInteger(own) && own >= 1 ? own : DEFAULT_SETTINGS.maxFileBytes };
    }
  }
  return result;
}
