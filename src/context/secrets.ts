/**
 * Finds high-confidence secrets in a file's text, so that the packer leaves the file out
 * (`'secret'`) instead of putting a credential into the prompt, the model's KV cache and the
 * cache files on disk.
 *
 * The detectors are secretlint's maintained rules, `@secretlint/secretlint-rule-preset-recommend`
 * 12.0.0 (the last release that supports Node 20), run in memory on text already read: no
 * network, no file access, no code from the repository. They look for private key blocks
 * (PEM/OpenSSH, checked for a real key's base64 header), AWS access key IDs and secret access
 * keys, GitHub and GitLab tokens, Slack tokens and webhooks, npm tokens, OpenAI, Anthropic,
 * Groq, Hugging Face, Linear, Notion, Figma, Databricks, Vercel, SendGrid, Shopify, 1Password,
 * HashiCorp Vault, Grafana and Docker Hub tokens, GCP service-account keys, and credentials
 * in URLs (basic auth, database connection strings; placeholders such as `password` or
 * `${VAR}` are not reported). RepoSnap adds one rule of its own for what the preset lacks:
 * private key blocks of every kind (`findPrivateKeyBlocks`, private-keys.ts: the preset misses
 * Ed25519/X25519 PKCS#8, SEC1, encrypted PKCS#8, PGP and indented keys), the token formats of
 * `TOKEN_FORMATS` (token-formats.ts: Stripe secret and restricted keys, Google API keys, …),
 * and generic credential assignments
 * (`DB_PASSWORD = "…"`, `"apiKey": "…"`, `password: …` in YAML, `<password>…</password>`;
 * `findCredentialAssignments`, credentials.ts, ported from gitleaks' `generic-api-key` and
 * detect-secrets' `KeywordDetector`), reported as `'generic-credential'` only when no specific
 * rule found anything in the text. A line marked
 * `secretlint-disable-line` (or `secretlint-disable-next-line` above it, or a block between
 * `secretlint-disable` and `secretlint-enable` comments) is not reported, as in secretlint.
 *
 * The rules are run by `findSecret` itself, through secretlint's rule API (`create(context,
 * options)` → `file(source)` → `context.report` / `context.ignore`), not by `@secretlint/core`:
 * core's profiler records a `performance.mark` and keeps an entry for every rule and file in
 * a process-wide list that is never cleared (a leak in the long-lived engine process) and
 * measures them asynchronously (an unhandled rejection when the marks are gone).
 *
 * Cost, measured on this 2-core machine: 50–100 ms per MB of text, 0.3–0.7 ms per file
 * (llama.cpp's sources, 27 MB in 2,119 files: 50 ms/MB; node_modules, 64 MB in 14,342 files:
 * 59 ms/MB, 4 reports, all credential-shaped strings in test fixtures), and about 100 ms to
 * load the rules once per process. The packer only scans files it is about to tokenize, so
 * the cost is bounded by the token budget. The generic credential rule's share, measured side
 * by side with the other rules (`bench/secrets/scan.ts`, `bench/results/secrets-generic.json`,
 * load 2.9): 5.1–9.7 ms/MB alone; findSecret 26–51 ms/MB without it and 31–62 with it over
 * node_modules, llama.cpp's sources and Python's standard library and Debian's packages (125 MB);
 * its 18 reports there are credential examples in documentation or a secret scanner's source.
 */
import path from 'node:path';
import { findCredentialAssignments, isConfigFileName, isConfigText } from './credentials';
import { findPrivateKeyBlocks } from './private-keys';
import { findTokens, TOKEN_FORMATS } from './token-formats';
import type { SkippedFile } from './types';

/** One secret found in a text. */
export interface SecretFinding {
  /** The rule that found it, without secretlint's package prefix: `'github'`, `'privatekey'`, `'stripe'`, … */
  rule: string;
  /** Where it starts: 1-based line and column (UTF-16 code units). */
  line: number;
  column: number;
}

/** A position as secretlint's rules use it: 1-based line, 0-based column. */
interface Position {
  line: number;
  column: number;
}

/** The source a rule scans (the part of secretlint's `SecretLintSourceCode` the rules use). */
interface RuleSource {
  content: string;
  filePath: string | undefined;
  ext: string;
  contentType: 'text';
  indexToPosition(index: number): Position;
  locationToRange(location: { start: Position; end: Position }): [number, number];
}

/** A translated message: rules pass it to `report`; only `messageId` is used here. */
interface RuleMessage {
  message: string;
  messageId: string;
}

/** The rule context (the part of secretlint's `SecretLintRuleContext` the rules use). */
interface RuleContext {
  sharedOptions: Record<string, never>;
  createTranslator(messages: object): (messageId: string, data?: object) => RuleMessage;
  report(descriptor: { message: RuleMessage; range: readonly [number, number] }): void;
  ignore(descriptor: { message: RuleMessage; range: readonly [number, number]; targetRuleId?: string }): void;
}

/** A secretlint rule (`SecretLintRuleCreator`): `create` returns the handlers for one file. */
interface Rule {
  meta: { id: string };
  create(context: RuleContext, options: object): { file?(source: RuleSource): void | Promise<void> };
}

/** The id of RepoSnap's own rule. */
const OWN_RULE_ID = 'reposnap/secret-tokens';

/** The message id (and `SecretFinding.rule`) of a generic credential assignment (`findCredentialAssignments`). */
export const GENERIC_CREDENTIAL_RULE = 'generic-credential';

/** The message id (and `SecretFinding.rule`) of a private key block (`findPrivateKeyBlocks`). */
export const PRIVATE_KEY_BLOCK_RULE = 'private-key-block';

/**
 * RepoSnap's rule: reports every private key block (`findPrivateKeyBlocks`, as
 * `PRIVATE_KEY_BLOCK_RULE`), every token of `TOKEN_FORMATS` (token-formats.ts), with the format's
 * rule as message id, and, unless the options say `{ genericCredentials: false }`, every generic credential
 * assignment's value (`GENERIC_CREDENTIAL_RULE`), reading bare values as literals in a
 * configuration file (`isConfigFileName` of the file's name, or `isConfigText`).
 */
const ownRule: Rule = {
  meta: { id: OWN_RULE_ID },
  create(context, options) {
    const t = context.createTranslator({});
    const generic = (options as { genericCredentials?: boolean }).genericCredentials ?? true;
    return {
      file(source) {
        for (const { start, end } of findPrivateKeyBlocks(source.content)) context.report({ message: t(PRIVATE_KEY_BLOCK_RULE), range: [start, end] });
        for (const { rule, start, end } of findTokens(source.content)) context.report({ message: t(rule), range: [start, end] });
        if (generic) {
          const config = isConfigFileName(source.filePath) || isConfigText(source.content);
          for (const { start, end } of findCredentialAssignments(source.content, { config })) context.report({ message: t(GENERIC_CREDENTIAL_RULE), range: [start, end] });
        }
      },
    };
  },
};

/** Options per rule id (every rule gets at least `{}`). */
const RULE_OPTIONS: Readonly<Record<string, object>> = {
  // also report AWS access key IDs (AKIA…), not only secret access keys
  '@secretlint/secretlint-rule-aws': { enableIDScanRule: true },
};

let loaded: Promise<Rule[]> | undefined;

/** Loads the preset's rules once per process (an ESM package: dynamic import) and adds RepoSnap's. */
function loadRules(): Promise<Rule[]> {
  if (loaded === undefined) {
    const pending = import('@secretlint/secretlint-rule-preset-recommend').then((preset) => [...(preset.rules as unknown as Rule[]), ownRule]);
    pending.catch(() => (loaded = undefined));
    loaded = pending;
  }
  return loaded;
}

/** Offsets at which each line of `text` starts (line 1 at index 0). */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

/** secretlint's position of `index` in a text with these line starts: 1-based line, 0-based column. */
function positionOf(starts: readonly number[], index: number): Position {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= index) lo = mid;
    else hi = mid - 1;
  }
  return { line: lo + 1, column: index - starts[lo]! };
}

/** Options of `findSecret`. */
export interface FindSecretOptions {
  /**
   * Also report generic credential assignments (`GENERIC_CREDENTIAL_RULE`). Default true;
   * false only to measure the rule's cost and reports against the others (bench/secrets).
   */
  genericCredentials?: boolean;
}

/**
 * Scans `text` (a file's decoded content) with every rule and returns the first secret found,
 * in text order, or `undefined` when there is none. A generic credential assignment is
 * returned only when no other rule found anything (a token in `token = "ghp_…"` is reported
 * as `'github'`, where it starts). `name` (the file's path relative to the
 * repository) lets the rules that depend on the file type apply (`.npmrc`, `package.json`,
 * `.json` service-account keys); the file is never opened. The secret's value is not
 * returned, so that it cannot reach a manifest or a log.
 *
 * Errors: rejects only when the rules cannot be loaded (a broken installation).
 */
export async function findSecret(text: string, name?: string, options: FindSecretOptions = {}): Promise<SecretFinding | undefined> {
  const matches = await findSecretMatches(text, name, options);
  const first = matches.find((m) => m.rule !== GENERIC_CREDENTIAL_RULE) ?? matches[0];
  if (first === undefined) return undefined;
  const { line, column } = positionOf(lineStarts(text), first.start);
  return { rule: first.rule, line, column: column + 1 };
}

/** One report of `findSecretMatches`: the rule (as `SecretFinding.rule`) and the range it covers in the text. */
export interface SecretMatch {
  rule: string;
  /** Offsets in the text (UTF-16 code units), `start` inclusive, `end` exclusive. */
  start: number;
  end: number;
}

/**
 * Every report of every rule on `text` that no `secretlint-disable` comment silences, in text
 * order (ties by rule order), generic credential assignments included; `findSecret` picks its
 * answer from these. `name` and `options` as for `findSecret`; the ranges locate the secrets so
 * that a caller can redact them (`redactSecrets`), never to show them.
 *
 * Errors: rejects only when the rules cannot be loaded (a broken installation).
 */
export async function findSecretMatches(text: string, name?: string, options: FindSecretOptions = {}): Promise<SecretMatch[]> {
  const rules = await loadRules();
  const starts = lineStarts(text);
  const ext = name === undefined ? '' : path.posix.extname(name);
  const source: RuleSource = {
    content: text,
    filePath: name,
    // the preset's `.p12` check reads the file from disk by its path: never let it
    ext: ext === '.p12' ? '' : ext,
    contentType: 'text',
    indexToPosition: (index) => positionOf(starts, index),
    locationToRange: ({ start, end }) => [rangeIndex(starts, start, text.length), rangeIndex(starts, end, text.length)],
  };
  const reports: Array<{ ruleId: string; messageId: string; range: readonly [number, number] }> = [];
  const ignores: Array<{ range: readonly [number, number]; targetRuleId?: string }> = [];
  for (const rule of rules) {
    const ruleId = rule.meta.id;
    const context: RuleContext = {
      sharedOptions: {},
      createTranslator: () => (messageId) => ({ message: messageId, messageId }),
      report: ({ message, range }) => void reports.push({ ruleId, messageId: message.messageId, range }),
      ignore: ({ range, targetRuleId }) => void ignores.push({ range, ...(targetRuleId !== undefined ? { targetRuleId } : {}) }),
    };
    const ruleOptions = ruleId === OWN_RULE_ID ? { genericCredentials: options.genericCredentials ?? true } : (RULE_OPTIONS[ruleId] ?? {});
    await rule.create(context, ruleOptions).file?.(source);
  }
  // secretlint's filter: a report inside a disabled range, for that rule or for all ('*')
  const inside = (i: number, [start, end]: readonly [number, number]): boolean => start <= i && i <= end;
  const matches: SecretMatch[] = [];
  for (const report of reports) {
    const ignored = ignores.some(
      (ig) => inside(report.range[0], ig.range) && inside(report.range[1], ig.range) && (ig.targetRuleId === undefined || ig.targetRuleId === '*' || ig.targetRuleId === report.ruleId),
    );
    if (ignored) continue;
    const rule = report.ruleId === OWN_RULE_ID ? report.messageId : report.ruleId.replace(/^@secretlint\/secretlint-rule-/, '');
    matches.push({ rule, start: report.range[0], end: Math.max(report.range[0], report.range[1]) });
  }
  // stable: equal starts keep the rules' order, as findSecret always did
  return matches.sort((a, b) => a.start - b.start);
}

/** The offset of a secretlint position (1-based line, 0-based column), clamped to the text. */
function rangeIndex(starts: readonly number[], position: Position, length: number): number {
  const lineStart = position.line - 1 < starts.length ? starts[position.line - 1]! : length;
  return Math.min(length, lineStart + position.column);
}

/** RepoSnap's own rules by `SecretFinding.rule`, with the source `secretDetail` names for each; every other rule is secretlint's preset's. */
const OWN_RULE_SOURCES: Readonly<Record<string, string>> = {
  [GENERIC_CREDENTIAL_RULE]: 'generic credential assignment',
  [PRIVATE_KEY_BLOCK_RULE]: 'RepoSnap private key blocks',
  ...Object.fromEntries(TOKEN_FORMATS.map(({ rule }) => [rule, 'RepoSnap token patterns'])),
};

/**
 * The `detail` of a file skipped as `'secret'`: the rule, where, and which detector found it,
 * never the value: `github secret at line 3, column 15 (secretlint rules)`, `stripe secret at …
 * (RepoSnap token patterns)`, `generic-credential secret at … (generic credential assignment)`.
 */
export function secretDetail(finding: SecretFinding): string {
  return `${finding.rule} secret at line ${finding.line}, column ${finding.column} (${OWN_RULE_SOURCES[finding.rule] ?? 'secretlint rules'})`;
}

/**
 * The secret decision on each file of one pack, made once per file on its whole text and
 * followed by every stage that puts any of a file's text into the prompt: files in full, the
 * repository map, question-time retrieval (`retrieveChunks`). A file with a secret anywhere is
 * left out of all of them, reported once as `'secret'` (`skippedEntry`); a clean function of
 * it is never quoted.
 *
 * Files are scanned when a stage is about to use them (`check`), or, for retrieval's
 * candidates, kept unscanned (`defer`) until a question ranks one of their chunks (`verdictOf`):
 * most never are, and scanning every file of a large repository up front costs seconds.
 * Not shared across packs: a file's text can change between two.
 */
export class FileSecretVerdicts {
  private readonly verdicts = new Map<string, { text: string; verdict: Promise<SecretFinding | undefined> }>();
  private readonly deferred = new Map<string, string>();
  private readonly findings = new Map<string, SecretFinding>();

  /** `enabled` false (`PackOptions.skipSecrets: false`): every file is clean and nothing is scanned. */
  constructor(readonly enabled: boolean = true) {}

  /**
   * The decision on the file at `path` (relative to the repository root) whose whole decoded
   * content is `text`: the first secret `findSecret` finds, or `undefined`. Scanned on the
   * first call for `path` (or its deferred text), remembered after; another `text` for the same
   * path (an editor's unsaved document) is scanned anew and its decision replaces the old one.
   * Rejects as `findSecret`.
   */
  check(path: string, text: string): Promise<SecretFinding | undefined> {
    if (!this.enabled) return Promise.resolve(undefined);
    const known = this.verdicts.get(path);
    if (known !== undefined && known.text === text) return known.verdict;
    this.deferred.delete(path);
    const verdict = findSecret(text, path).then((finding) => {
      if (this.verdicts.get(path)?.verdict === verdict) {
        if (finding !== undefined) this.findings.set(path, finding);
        else this.findings.delete(path);
      }
      return finding;
    });
    this.verdicts.set(path, { text, verdict });
    return verdict;
  }

  /** Keeps `text`, the whole content of the file at `path`, for a later `verdictOf(path)`, without scanning it. */
  defer(path: string, text: string): void {
    if (this.enabled && !this.verdicts.has(path)) this.deferred.set(path, text);
  }

  /**
   * The decision on a file given to `check` or `defer` before (scanning a deferred one now).
   * Rejects with a `RangeError` for a path given to neither while enabled, and as `findSecret`.
   */
  verdictOf(path: string): Promise<SecretFinding | undefined> {
    if (!this.enabled) return Promise.resolve(undefined);
    const known = this.verdicts.get(path);
    if (known !== undefined) return known.verdict;
    const text = this.deferred.get(path);
    if (text === undefined) return Promise.reject(new RangeError(`no text of ${path} to decide on: pass it to check or defer first`));
    return this.check(path, text);
  }

  /** The file's entry for `PackResult.skipped` once it was found holding a secret: reason `'secret'`, the rule and where (`secretDetail`). */
  skippedEntry(path: string): SkippedFile | undefined {
    const finding = this.findings.get(path);
    return finding === undefined ? undefined : { path, reason: 'secret', detail: secretDetail(finding) };
  }
}
