/**
 * Moves the values of renamed `reposnap.*` settings to their new keys, once, on activation.
 *
 * VS Code has no per-setting title: the Settings editor derives it from the key's last segment
 * (`wordifyKey` in VS Code's settingsTreeModels.ts, as in the code-server 4.139.1 that .ci/e2e.sh
 * runs: a space goes before a capital that follows a lower-case letter or digit, and between a run
 * of capitals and a capital followed by a lower-case letter; the first letter is capitalized; only
 * a fixed list of acronyms (css, html, scss, less, json, js, ts, ie, id, php, scm) is upper-cased),
 * so `reposnap.gpu` showed as "Gpu" and `reposnap.gpuLayers` as "Gpu Layers" (issue 14, §5).
 * The keys are now `reposnap.GPU` ("GPU"), `reposnap.GPULayers` ("GPU Layers"), `reposnap.KVCacheType`
 * ("KV Cache Type", was "Kv Cache Type") and `reposnap.RPCServers` ("RPC Servers", was "Rpc Servers"); the old keys
 * stay declared in package.json as deprecated, so that a settings.json still holding them shows
 * the hint.
 *
 * For each renamed key and each place a value can be set (user settings, workspace settings,
 * and, in a multi-root workspace, each folder's settings): a value of the old key is copied to
 * the new key at the same place, unless the new key already has a value there (the new one
 * wins), and the old key is removed there. Once the old values are gone nothing happens on
 * later activations; the one-line notice is shown only when something moved.
 */
import * as vscode from 'vscode';

/** One renamed setting: keys without the `reposnap.` prefix. */
export interface RenamedSetting {
  /** The key as it was (`gpu`). */
  from: string;
  /** The key now (`GPU`). */
  to: string;
}

/** The renamed `reposnap.*` settings (issue 14, §5: titles "GPU", not "Gpu"; likewise "KV", "RPC"). */
export const RENAMED_SETTINGS: readonly RenamedSetting[] = [
  { from: 'gpu', to: 'GPU' },
  { from: 'gpuLayers', to: 'GPULayers' },
  { from: 'kvCacheType', to: 'KVCacheType' },
  { from: 'rpcServers', to: 'RPCServers' },
];

/** What {@link migrateRenamedSettings} did: one entry per (renamed key, place) that held an old value. */
export interface SettingMove {
  from: string;
  to: string;
  /** `user settings`, `workspace settings`, or `folder settings of <folder name>`. */
  where: string;
  /** The old value, copied to the new key (false: the new key already had a value there, kept). */
  copied: boolean;
}

/** The value a configuration holds at exactly one place, from `inspect`. */
type Place = 'globalValue' | 'workspaceValue' | 'workspaceFolderValue';

/**
 * Moves every value of an old key of {@link RENAMED_SETTINGS} to its new key at the same place
 * (see the file's comment), then shows one information message naming what moved. `log` gets
 * one line per move, and one per failed write (a write that VS Code refuses, for instance a
 * folder value of a window-scoped setting, is logged and skipped; the others still move).
 * Returns the moves; an empty list when no old key holds a value (every activation after the
 * first).
 */
export async function migrateRenamedSettings(log: (line: string) => void): Promise<SettingMove[]> {
  const places: { where: string; place: Place; target: vscode.ConfigurationTarget; scope?: vscode.Uri }[] = [
    { where: 'user settings', place: 'globalValue', target: vscode.ConfigurationTarget.Global },
  ];
  const folders = vscode.workspace.workspaceFolders ?? [];
  if (folders.length > 0) places.push({ where: 'workspace settings', place: 'workspaceValue', target: vscode.ConfigurationTarget.Workspace });
  // in a single-folder window the folder's settings are the workspace settings: only a multi-root
  // workspace (a .code-workspace file) has folder settings of their own
  if (vscode.workspace.workspaceFile) {
    for (const f of folders) places.push({ where: `folder settings of ${f.name}`, place: 'workspaceFolderValue', target: vscode.ConfigurationTarget.WorkspaceFolder, scope: f.uri });
  }
  const moves: SettingMove[] = [];
  for (const p of places) {
    const config = vscode.workspace.getConfiguration('reposnap', p.scope);
    for (const { from, to } of RENAMED_SETTINGS) {
      const old = config.inspect(from)?.[p.place];
      if (old === undefined) continue;
      const copied = config.inspect(to)?.[p.place] === undefined;
      try {
        if (copied) await config.update(to, old, p.target);
        await config.update(from, undefined, p.target);
      } catch (e) {
        log(`settings: could not move reposnap.${from} to reposnap.${to} in the ${p.where}: ${e instanceof Error ? e.message : String(e)}`);
        continue;
      }
      moves.push({ from, to, where: p.where, copied });
      log(`settings: reposnap.${from} ${copied ? `moved to reposnap.${to}` : `removed (reposnap.${to} is already set)`} in the ${p.where}`);
    }
  }
  if (moves.length > 0) void vscode.window.showInformationMessage(migrationNotice(moves));
  return moves;
}

/**
 * The one-line notice for `moves` (not empty): the renamed keys, each once, and the places, each
 * once, in the order they were moved. Example: "RepoSnap: reposnap.gpu is now reposnap.GPU; your
 * value was moved (user settings)."
 */
export function migrationNotice(moves: readonly SettingMove[]): string {
  const renames = [...new Set(moves.map((m) => `reposnap.${m.from} is now reposnap.${m.to}`))];
  const wheres = [...new Set(moves.map((m) => m.where))];
  const values = moves.length === 1 ? 'your value was' : 'your values were';
  return `RepoSnap: ${renames.join(', ')}; ${values} moved (${wheres.join(', ')}).`;
}
