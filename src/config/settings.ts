/**
 * The `reposnap.*` settings: one typed record, its defaults, and one accessor that reads and
 * validates them from any configuration source (VS Code's `WorkspaceConfiguration`, or a plain
 * object in tests). Plain TypeScript: no `vscode` import, so the engine host and tests use it too.
 * package.json `contributes.configuration` declares the same keys with the same defaults
 * (test/extension/settings.test.ts checks that they agree).
 */
import { excludesFromVsCodeSetting } from '../context/globs';
import { PACKING_OPTIONS, type PackingOption } from '../context/packing';
import { PACK_ORDERS, type PackOrder } from '../context/pack-order';
import { AFTER_EDIT_STRATEGIES, type AfterEdit } from '../context/erratum';
import { KV_CACHE_TYPES, type BudgetAllocation, type KvCacheType } from '../engine/native';
import { parseRpcServers } from '../engine/rpc';
import { BUDGET_ALLOCATIONS, budgetBelowWindow, SNAP_DEFAULTS, SNAP_LIMITS, SNAP_POOLINGS, SNAP_PRIORS, SNAP_SCORERS, type SnapPooling, type SnapPrior, type SnapScorer } from './snap-options';

/** GPU backends RepoSnap's engine can be built for, plus `auto` (detect) and `cpu`. */
export type GpuChoice = 'auto' | 'cuda' | 'vulkan' | 'metal' | 'cpu';

/**
 * How a follow-up question in a thread is answered (docs/cache.md): `resnap` re-runs SnapKV on
 * the uncompressed repository prefix for every question (query-aware, slower); `continue`
 * decodes on the thread's compressed cache (fast, tuned to the first question).
 */
export type FollowUpMode = 'resnap' | 'continue';

/** Every `reposnap.*` setting, typed and validated. */
export interface ReposnapSettings {
  /** GGUF file path, or a model URI (`hf:user/repo:quant`, `https://…`) resolved by node-llama-cpp. */
  model: string;
  /** Folder that downloaded models go to; empty = the extension's global storage. */
  modelDirectory: string;
  /** Which engine build to run the model on (`reposnap.GPU`; was `reposnap.gpu`, see migrate.ts). */
  GPU: GpuChoice;
  /**
   * Layers offloaded to the GPU (ignored by the CPU engine); a large number offloads all
   * (`reposnap.GPULayers`; was `reposnap.gpuLayers`, see migrate.ts).
   */
  GPULayers: number;
  /** Compress the prompt's KV cache with SnapKV (false: full attention). */
  snap: boolean;
  /** SnapKV budget B [cells per layer and KV head], observation window included. */
  budget: number;
  /** SnapKV observation window w [tokens]. */
  window: number;
  /** SnapKV pooling over the prefix scores. */
  pooling: SnapPooling;
  /** SnapKV pooling kernel [tokens], odd. */
  kernel: number;
  /** How the SnapKV budget is shared among layers and KV heads (uniform = SnapKV; adakv, pyramid: same total, more cells). */
  budgetAllocation: BudgetAllocation;
  /** What ranks the prompt's tokens (`reposnap.scorer`): SnapKV's window attention, the query-agnostic key norms, or a key-norm base topped up by SnapKV. */
  scorer: SnapScorer;
  /** A prior over SnapKV's scores (`reposnap.prior`): none, or the code-aware prior (definitions and the question's identifiers). */
  prior: SnapPrior;
  /** The code prior's bonus β, in multiples of each head's mean score (`reposnap.priorBonus`). */
  priorBonus: number;
  /** Context size [tokens]; 0 = the model's training context, at most 8192. */
  contextSize: number;
  /** Answer length limit [tokens]. */
  maxTokens: number;
  /** llama.cpp flash attention. */
  flashAttention: 'auto' | 'on' | 'off';
  /** KV cache element type (K and V); quantized V needs flash attention (`reposnap.KVCacheType`; was `reposnap.kvCacheType`, see migrate.ts). */
  KVCacheType: KvCacheType;
  /** How follow-up questions in a thread are answered. */
  followUpMode: FollowUpMode;
  /** Globs of files to pack (empty = every file not ignored). */
  include: string[];
  /** Globs of files never packed, on top of `.gitignore`. */
  exclude: string[];
  /** Files larger than this [bytes] are not packed. */
  maxFileBytes: number;
  /**
   * How files are chosen when the repository does not fit (`PackOptions.packing`, issue 15):
   * `auto` (default), smallest-first when every file fits in full, else ranked with retrieval;
   * `smallest-first`, the smallest files in full; `ranked`, a file tree, the highest-PageRank
   * files in full (favouring the files open in editors) and a repository map of the others.
   */
  packing: PackingOption;
  /**
   * The order of the files in the prompt (`PackOptions.order`, context/pack-order.ts, issue 30):
   * `git`, rarely changed files first by git history (no git: `mtime`); `mtime`, least recently
   * modified first; `path`. An edit re-reads the prompt from the edited file's position on.
   */
  order: PackOrder;
  /**
   * The next question after an edit (`AskRequest.afterEdit`, pipeline/after-edit.ts, issue 30):
   * `exact`, the repository packed again (prefilled from the first changed token); `erratum`, the
   * cached prompt kept and the new text of each changed file added after it; `erratum-diff`, a
   * unified diff of each instead. An erratum is used only when it prefills fewer tokens. Default
   * `exact`: in bench/edits both errata gave an answer with the old name after a rename on
   * Qwen2.5-Coder where `exact` gave none (docs/benchmarks.md).
   */
  afterEdit: AfterEdit;
  /**
   * With `packing: 'ranked'` (or `'auto'` when it chooses ranked): the share of the context, in
   * [0, 1), kept for the question's retrieved chunks of files not in full
   * (`AskRequest.retrievalShare`); 0 = no retrieval.
   */
  retrievalShare: number;
  /** Show an "Explain" CodeLens above functions, methods and classes. */
  codeLens: boolean;
  /**
   * llama.cpp RPC servers ("host:port", `reposnap rpc-server`) the model's `GPULayers` layers are
   * spread over (src/engine/rpc.ts); empty: this machine's devices (`reposnap.RPCServers`; was
   * `reposnap.rpcServers`, see migrate.ts).
   */
  RPCServers: string[];
}

/** Defaults: SnapKV's ({@link SNAP_DEFAULTS}, from the paper: docs/engine.md), the packer's, and the engine's. */
export const DEFAULT_SETTINGS: Readonly<ReposnapSettings> = Object.freeze({
  model: 'hf:Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF:Q4_K_M',
  modelDirectory: '',
  GPU: 'auto',
  GPULayers: 999,
  snap: SNAP_DEFAULTS.enabled,
  budget: SNAP_DEFAULTS.budget,
  window: SNAP_DEFAULTS.window,
  pooling: SNAP_DEFAULTS.pooling,
  kernel: SNAP_DEFAULTS.kernel,
  budgetAllocation: SNAP_DEFAULTS.allocation,
  scorer: SNAP_DEFAULTS.scorer,
  prior: SNAP_DEFAULTS.prior,
  priorBonus: SNAP_DEFAULTS.priorBonus,
  contextSize: 0,
  maxTokens: 512,
  flashAttention: 'auto',
  KVCacheType: 'f16',
  followUpMode: 'resnap',
  include: [],
  exclude: [],
  maxFileBytes: 262144,
  packing: 'auto',
  order: 'mtime',
  afterEdit: 'exact',
  retrievalShare: 0.15,
  codeLens: true,
  RPCServers: [],
} satisfies ReposnapSettings);

/** The keys of {@link ReposnapSettings}, in declaration order. */
export const SETTING_KEYS = Object.keys(DEFAULT_SETTINGS) as (keyof ReposnapSettings)[];

/** The values one setting has at each place, as `WorkspaceConfiguration.inspect` returns them (the fields RepoSnap reads). */
export interface SettingPlaces<T = unknown> {
  /** User settings (on a remote, the remote machine's user settings). */
  globalValue?: T;
  /** Workspace settings: a single folder's `.vscode/settings.json`, or a `.code-workspace` file's. */
  workspaceValue?: T;
  /** A folder's `.vscode/settings.json` in a multi-root workspace. */
  workspaceFolderValue?: T;
}

/** Where settings come from: `vscode.workspace.getConfiguration('reposnap')` fits. */
export interface ConfigurationSource {
  get<T>(key: string): T | undefined;
  /** The value at each place (`WorkspaceConfiguration.inspect`); optional, for plain objects in tests and the CLI. */
  inspect?<T>(key: string): SettingPlaces<T> | undefined;
}

/**
 * Settings a repository's own `.vscode/settings.json` must not set (issue 29, item 3): where the
 * model comes from (a GGUF shipped inside the repository, or a URI that downloads), where models
 * are kept, and the RPC servers the packed repository's computation is sent to. package.json
 * declares them `"scope": "application"`, so VS Code ignores their workspace and folder values
 * (not `machine`: in a remote window, code-server's included, VS Code reads a machine-scoped value
 * from the remote's settings only and ignores the one in the user's own settings.json);
 * `readSettings` ignores those values too when the source can `inspect` (defence in depth, and the
 * same rule for any source). Keys without the `reposnap.` prefix, old names included.
 */
export const USER_ONLY_SETTINGS: readonly string[] = Object.freeze(['model', 'modelDirectory', 'RPCServers', 'rpcServers']);

/** Settings read by {@link readSettings}, with a message for each value that was replaced by its default. */
export interface SettingsReading {
  settings: ReposnapSettings;
  /** One line per invalid value (`reposnap.kernel: must be odd, got 4; using 7`). */
  problems: string[];
}

/**
 * Reads every `reposnap.*` setting from `configuration`, checks type and range, and falls back to
 * the default (with a line in `problems`) for a missing or invalid value. A key of
 * `USER_ONLY_SETTINGS` is read from user settings alone when the source can `inspect`: a workspace
 * or folder value of it is never used. The SnapKV keys' ranges and
 * the cross-field rule (the budget is at least the window) are snap-options.ts's.
 */
export function readSettings(configuration: ConfigurationSource): SettingsReading {
  const problems: string[] = [];
  // a machine setting's value from user settings only (USER_ONLY_SETTINGS), never a workspace's
  const source: ConfigurationSource = {
    get: <T>(key: string): T | undefined => {
      if (!USER_ONLY_SETTINGS.includes(key) || configuration.inspect === undefined) return configuration.get<T>(key);
      return configuration.inspect<T>(key)?.globalValue;
    },
  };
  const bad = (key: keyof ReposnapSettings, why: string, got: unknown): void => {
    problems.push(`reposnap.${key}: ${why}, got ${JSON.stringify(got)}; using ${JSON.stringify(DEFAULT_SETTINGS[key])}`);
  };
  const str = (key: keyof ReposnapSettings): string => {
    const v = source.get<unknown>(key);
    if (v === undefined || v === null) return DEFAULT_SETTINGS[key] as string;
    if (typeof v !== 'string') {
      bad(key, 'must be a string', v);
      return DEFAULT_SETTINGS[key] as string;
    }
    return v.trim();
  };
  const oneOf = <T extends string>(key: keyof ReposnapSettings, allowed: readonly T[]): T => {
    const v = source.get<unknown>(key);
    if (v === undefined || v === null) return DEFAULT_SETTINGS[key] as T;
    if (typeof v !== 'string' || !allowed.includes(v as T)) {
      bad(key, `must be one of ${allowed.join(', ')}`, v);
      return DEFAULT_SETTINGS[key] as T;
    }
    return v as T;
  };
  const int = (key: keyof ReposnapSettings, min: number, max = Number.MAX_SAFE_INTEGER, odd = false): number => {
    const v = source.get<unknown>(key);
    if (v === undefined || v === null) return DEFAULT_SETTINGS[key] as number;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      bad(key, `must be an integer in [${min}, ${max === Number.MAX_SAFE_INTEGER ? '∞' : max}]`, v);
      return DEFAULT_SETTINGS[key] as number;
    }
    if (odd && v % 2 === 0) {
      bad(key, 'must be odd', v);
      return DEFAULT_SETTINGS[key] as number;
    }
    return v;
  };
  const bool = (key: keyof ReposnapSettings): boolean => {
    const v = source.get<unknown>(key);
    if (v === undefined || v === null) return DEFAULT_SETTINGS[key] as boolean;
    if (typeof v !== 'boolean') {
      bad(key, 'must be true or false', v);
      return DEFAULT_SETTINGS[key] as boolean;
    }
    return v;
  };
  const share = (key: keyof ReposnapSettings): number => {
    const v = source.get<unknown>(key);
    if (v === undefined || v === null) return DEFAULT_SETTINGS[key] as number;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v >= 1) {
      bad(key, 'must be a number with 0 <= share < 1', v);
      return DEFAULT_SETTINGS[key] as number;
    }
    return v;
  };
  const bonus = (key: keyof ReposnapSettings): number => {
    const v = source.get<unknown>(key);
    if (v === undefined || v === null) return DEFAULT_SETTINGS[key] as number;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < SNAP_LIMITS.priorBonus.min || v > SNAP_LIMITS.priorBonus.max) {
      bad(key, `must be a number in [${SNAP_LIMITS.priorBonus.min}, ${SNAP_LIMITS.priorBonus.max}]`, v);
      return DEFAULT_SETTINGS[key] as number;
    }
    return v;
  };
  const globs = (key: keyof ReposnapSettings): string[] => {
    const v = source.get<unknown>(key);
    if (v === undefined || v === null) return [...(DEFAULT_SETTINGS[key] as string[])];
    if (!Array.isArray(v) || v.some((g) => typeof g !== 'string')) {
      bad(key, 'must be a list of glob strings', v);
      return [...(DEFAULT_SETTINGS[key] as string[])];
    }
    return (v as string[]).map((g) => g.trim()).filter((g) => g.length > 0);
  };
  const endpoints = (key: keyof ReposnapSettings): string[] => {
    const v = source.get<unknown>(key);
    if (v === undefined || v === null) return [...(DEFAULT_SETTINGS[key] as string[])];
    if (!Array.isArray(v) || v.some((e) => typeof e !== 'string')) {
      bad(key, 'must be a list of "host:port" strings', v);
      return [...(DEFAULT_SETTINGS[key] as string[])];
    }
    try {
      return parseRpcServers((v as string[]).filter((e) => e.trim() !== ''));
    } catch (e) {
      bad(key, (e as Error).message, v);
      return [...(DEFAULT_SETTINGS[key] as string[])];
    }
  };

  const settings: ReposnapSettings = {
    model: str('model'),
    modelDirectory: str('modelDirectory'),
    GPU: oneOf<GpuChoice>('GPU', ['auto', 'cuda', 'vulkan', 'metal', 'cpu']),
    GPULayers: int('GPULayers', 0),
    snap: bool('snap'),
    budget: int('budget', SNAP_LIMITS.budget.min, SNAP_LIMITS.budget.max),
    window: int('window', SNAP_LIMITS.window.min, SNAP_LIMITS.window.max),
    pooling: oneOf<SnapPooling>('pooling', SNAP_POOLINGS),
    kernel: int('kernel', SNAP_LIMITS.kernel.min, SNAP_LIMITS.kernel.max, true),
    budgetAllocation: oneOf<BudgetAllocation>('budgetAllocation', BUDGET_ALLOCATIONS),
    scorer: oneOf<SnapScorer>('scorer', SNAP_SCORERS),
    prior: oneOf<SnapPrior>('prior', SNAP_PRIORS),
    priorBonus: bonus('priorBonus'),
    contextSize: int('contextSize', 0),
    maxTokens: int('maxTokens', 1),
    flashAttention: oneOf('flashAttention', ['auto', 'on', 'off']),
    KVCacheType: oneOf<KvCacheType>('KVCacheType', KV_CACHE_TYPES),
    followUpMode: oneOf<FollowUpMode>('followUpMode', ['resnap', 'continue']),
    include: globs('include'),
    exclude: globs('exclude'),
    maxFileBytes: int('maxFileBytes', 1),
    packing: oneOf<PackingOption>('packing', PACKING_OPTIONS),
    order: oneOf<PackOrder>('order', PACK_ORDERS),
    afterEdit: oneOf<AfterEdit>('afterEdit', AFTER_EDIT_STRATEGIES),
    retrievalShare: share('retrievalShare'),
    codeLens: bool('codeLens'),
    RPCServers: endpoints('RPCServers'),
  };
  const belowWindow = budgetBelowWindow(settings.budget, settings.window, { budget: 'reposnap.budget', window: 'reposnap.window' });
  if (belowWindow) {
    settings.budget = Math.max(DEFAULT_SETTINGS.budget, settings.window);
    problems.push(`${belowWindow}; using ${settings.budget}`);
  }
  if (settings.prior === 'code' && settings.scorer !== 'snapkv') {
    settings.prior = 'none';
    problems.push(`reposnap.prior 'code' needs reposnap.scorer 'snapkv' (got '${settings.scorer}'); using no prior`);
  }
  if (settings.scorer === 'key-norm-topup' && settings.budgetAllocation !== 'uniform') {
    settings.budgetAllocation = 'uniform';
    problems.push(`reposnap.scorer 'key-norm-topup' needs reposnap.budgetAllocation 'uniform' (got another); using uniform`);
  }
  return { settings, problems };
}

/**
 * The settings a question about one workspace folder is asked with: `exclude` becomes VS Code's
 * `files.exclude` for that folder (its keys whose value is `true`, converted to gitignore syntax
 * by `excludesFromVsCodeSetting`) followed by `reposnap.exclude`, so that a `!pattern` in
 * `reposnap.exclude` can bring back what `files.exclude` hides. `filesExclude` is the setting's raw
 * value as `vscode.workspace.getConfiguration('files', folder.uri).get('exclude')` returns it (not
 * an object: nothing is added). Pure; `settings` is not modified.
 */
export function withFilesExclude(settings: ReposnapSettings, filesExclude: unknown): ReposnapSettings {
  const fromVsCode = excludesFromVsCodeSetting(filesExclude);
  return fromVsCode.length === 0 ? settings : { ...settings, exclude: [...fromVsCode, ...settings.exclude] };
}

/**
 * Settings whose change needs a new engine process (the engine build and the model load once
 * per process); every other setting applies to the next question as is.
 */
export const ENGINE_RESTART_KEYS: readonly (keyof ReposnapSettings)[] = ['GPU'];

/** Settings whose change means the model must be resolved (and maybe downloaded) again. */
export const MODEL_KEYS: readonly (keyof ReposnapSettings)[] = ['model', 'modelDirectory', 'GPULayers', 'RPCServers'];
