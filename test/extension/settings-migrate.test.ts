/**
 * The renamed settings (issue 14, §5: the Settings editor titles "GPU", not "Gpu"; "KV Cache Type" and
 * "RPC Servers" likewise):
 * the migration of old values (src/config/migrate.ts) against the `vscode` stand-in, with a
 * configuration that keeps user, workspace and folder values apart as VS Code does; and the
 * package.json declarations: the new keys' titles by VS Code's own key-to-title rule, the old
 * keys deprecated with a hint naming the new key.
 */
import { extensionContext, fake, Uri, workspace } from './fake-vscode';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, test } from 'node:test';
import { migrateRenamedSettings, migrationNotice, RENAMED_SETTINGS } from '../../src/config/migrate';
import { DEFAULT_SETTINGS, SETTING_KEYS } from '../../src/config/settings';
import { activate } from '../../src/extension';

const ROOT = path.resolve(__dirname, '..', '..');
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
type Declared = { type: string; default: unknown; enum?: unknown[]; minimum?: number; markdownDeprecationMessage?: string; deprecationMessage?: string };
const declared = Object.assign({}, ...(manifest.contributes.configuration as { properties: Record<string, Declared> }[]).map((c) => c.properties)) as Record<string, Declared>;

// ---- a configuration with places (ConfigurationTarget: Global 1, Workspace 2, WorkspaceFolder 3) ----
type Values = Record<string, unknown>;
interface Places {
  user: Values;
  workspace: Values;
  folders: Map<string, Values>;
  /** Writes refused as VS Code refuses them: `reposnap.<key>@<target>`. */
  refuse: Set<string>;
  writes: string[];
}
const realGetConfiguration = workspace.getConfiguration;
afterEach(() => {
  workspace.getConfiguration = realGetConfiguration;
  workspace.workspaceFolders = undefined;
  delete (workspace as { workspaceFile?: unknown }).workspaceFile;
});

/** Installs `places` as the stand-in's configuration; `folders` open in the window (multi-root with a workspace file when `multiRoot`). */
function usePlaces(places: Places, folders: string[], multiRoot: boolean): void {
  fake.reset();
  workspace.workspaceFolders = folders.map((name, index) => ({ uri: Uri.file(`/ws/${name}`), name, index }));
  if (multiRoot) (workspace as { workspaceFile?: unknown }).workspaceFile = Uri.file('/ws/all.code-workspace');
  const getConfiguration = (section?: string, scope?: Uri) => {
    const prefix = section ? `${section}.` : '';
    const folder = scope ? places.folders.get(scope.fsPath) : undefined;
    const at = (target: number): Values => {
      if (target === 1) return places.user;
      if (target === 2) return places.workspace;
      if (!folder) throw new Error('fake vscode: a folder write without a folder scope');
      return folder;
    };
    return {
      get: <T>(key: string) => (folder?.[prefix + key] ?? places.workspace[prefix + key] ?? places.user[prefix + key]) as T | undefined,
      inspect: (key: string) => ({ key: prefix + key, globalValue: places.user[prefix + key], workspaceValue: places.workspace[prefix + key], workspaceFolderValue: folder?.[prefix + key] }),
      has: (key: string) => [places.user, places.workspace, folder ?? {}].some((v) => prefix + key in v),
      update: async (key: string, value: unknown, target?: number) => {
        if (places.refuse.has(`${prefix + key}@${target}`)) throw new Error(`Unable to write ${prefix + key} to target ${target}`);
        places.writes.push(`${prefix + key}@${target}=${JSON.stringify(value)}`);
        const values = at(target ?? 1);
        if (value === undefined) delete values[prefix + key];
        else values[prefix + key] = value;
      },
    };
  };
  workspace.getConfiguration = getConfiguration as typeof workspace.getConfiguration;
}

const places = (p: Partial<Places>): Places => ({ user: {}, workspace: {}, folders: new Map(), refuse: new Set(), writes: [], ...p });

test('old values move to the new keys at the same place, the old keys go, one notice; a second activation does nothing', async () => {
  const p = places({ user: { 'reposnap.gpu': 'cuda', 'reposnap.gpuLayers': 20, 'reposnap.budget': 2048 }, workspace: { 'reposnap.gpuLayers': 8 } });
  usePlaces(p, ['app'], false);
  const lines: string[] = [];
  const moves = await migrateRenamedSettings((l) => lines.push(l));

  assert.deepEqual(p.user, { 'reposnap.GPU': 'cuda', 'reposnap.GPULayers': 20, 'reposnap.budget': 2048 });
  assert.deepEqual(p.workspace, { 'reposnap.GPULayers': 8 });
  assert.deepEqual(moves, [
    { from: 'gpu', to: 'GPU', where: 'user settings', copied: true },
    { from: 'gpuLayers', to: 'GPULayers', where: 'user settings', copied: true },
    { from: 'gpuLayers', to: 'GPULayers', where: 'workspace settings', copied: true },
  ]);
  // a single-folder window: nothing is written at the folder place (its settings are the workspace's)
  assert.ok(p.writes.every((w) => w.endsWith('=undefined') || /@[12]=/.test(w)), p.writes.join(', '));
  assert.deepEqual(fake.messages, [
    { level: 'info', message: 'RepoSnap: reposnap.gpu is now reposnap.GPU, reposnap.gpuLayers is now reposnap.GPULayers; your values were moved (user settings, workspace settings).', options: undefined, items: [] },
  ]);
  assert.equal(lines.length, 3);

  const again = await migrateRenamedSettings((l) => lines.push(l));
  assert.deepEqual(again, []);
  assert.equal(fake.messages.length, 1, 'no second notice');
  assert.equal(lines.length, 3);
});

test('the KV cache type and the RPC servers move too: reposnap.kvCacheType → KVCacheType, reposnap.rpcServers → RPCServers', async () => {
  const p = places({ user: { 'reposnap.kvCacheType': 'q8_0' }, workspace: { 'reposnap.rpcServers': ['127.0.0.1:50052'] } });
  usePlaces(p, ['app'], false);
  const moves = await migrateRenamedSettings(() => {});
  assert.deepEqual(p.user, { 'reposnap.KVCacheType': 'q8_0' });
  assert.deepEqual(p.workspace, { 'reposnap.RPCServers': ['127.0.0.1:50052'] });
  assert.deepEqual(moves, [
    { from: 'kvCacheType', to: 'KVCacheType', where: 'user settings', copied: true },
    { from: 'rpcServers', to: 'RPCServers', where: 'workspace settings', copied: true },
  ]);
  assert.equal(fake.messages[0]!.message, 'RepoSnap: reposnap.kvCacheType is now reposnap.KVCacheType, reposnap.rpcServers is now reposnap.RPCServers; your values were moved (user settings, workspace settings).');
});

test('where the new key already has a value, it is kept and the old one is removed', async () => {
  const p = places({ user: { 'reposnap.gpu': 'vulkan', 'reposnap.GPU': 'cpu' } });
  usePlaces(p, [], false);
  const moves = await migrateRenamedSettings(() => {});
  assert.deepEqual(p.user, { 'reposnap.GPU': 'cpu' });
  assert.deepEqual(moves, [{ from: 'gpu', to: 'GPU', where: 'user settings', copied: false }]);
  assert.deepEqual(p.writes, ['reposnap.gpu@1=undefined']);
  assert.equal(fake.messages[0]!.message, 'RepoSnap: reposnap.gpu is now reposnap.GPU; your value was moved (user settings).');
});

test('multi-root: each folder\'s value moves in that folder; a write VS Code refuses is logged and the others still move', async () => {
  const a = { 'reposnap.gpuLayers': 4 };
  const b = { 'reposnap.gpuLayers': 0, 'reposnap.gpu': 'cpu' };
  const p = places({ folders: new Map<string, Values>([['/ws/a', a], ['/ws/b', b]]), refuse: new Set(['reposnap.GPU@3']) });
  usePlaces(p, ['a', 'b'], true);
  const lines: string[] = [];
  const moves = await migrateRenamedSettings((l) => lines.push(l));
  assert.deepEqual(a, { 'reposnap.GPULayers': 4 });
  assert.deepEqual(b, { 'reposnap.GPULayers': 0, 'reposnap.gpu': 'cpu' }, 'the refused key stays where it was');
  assert.deepEqual(moves.map((m) => `${m.from}@${m.where}`), ['gpuLayers@folder settings of a', 'gpuLayers@folder settings of b']);
  assert.ok(lines.some((l) => l === 'settings: could not move reposnap.gpu to reposnap.GPU in the folder settings of b: Unable to write reposnap.GPU to target 3'), lines.join('\n'));
  assert.equal(fake.messages[0]!.message, 'RepoSnap: reposnap.gpuLayers is now reposnap.GPULayers; your values were moved (folder settings of a, folder settings of b).');
});

test('the notice names each rename and each place once', () => {
  assert.equal(
    migrationNotice([
      { from: 'gpu', to: 'GPU', where: 'user settings', copied: true },
      { from: 'gpu', to: 'GPU', where: 'workspace settings', copied: false },
    ]),
    'RepoSnap: reposnap.gpu is now reposnap.GPU; your values were moved (user settings, workspace settings).',
  );
});

test('activation runs the migration: a user value of reposnap.gpu ends in reposnap.GPU', async () => {
  fake.reset();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-migrate-'));
  try {
    workspace.workspaceFolders = [{ uri: Uri.file(path.join(tmp, 'ws')), name: 'ws', index: 0 }];
    fake.configuration['reposnap.model'] = path.join(tmp, 'model.gguf');
    fake.configuration['reposnap.gpu'] = 'cpu';
    const context = extensionContext(ROOT, tmp);
    activate(context as never);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(fake.configuration['reposnap.GPU'], 'cpu');
    assert.equal(fake.configuration['reposnap.gpu'], undefined);
    assert.ok(fake.messages.some((m) => m.message === 'RepoSnap: reposnap.gpu is now reposnap.GPU; your value was moved (user settings).'), JSON.stringify(fake.messages));
    for (const d of context.subscriptions) d.dispose();
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

// ---- package.json ----------------------------------------------------------------------------------

/**
 * VS Code's key-to-title rule for the Settings editor, transcribed from the code-server that
 * .ci/e2e.sh runs (4.139.1: `wordifyKey` in its workbench bundle, settingsTreeModels.ts); the
 * e2e run checks the title on screen too.
 */
function settingTitle(key: string): string {
  const knownAcronyms = new Set(['css', 'html', 'scss', 'less', 'json', 'js', 'ts', 'ie', 'id', 'php', 'scm']);
  const last = key.slice(key.lastIndexOf('.') + 1);
  return last
    .replace(/\.([a-z0-9])/g, (_, c: string) => ` \u203A ${c.toUpperCase()}`)
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]{1,})([A-Z][a-z])/g, '$1 $2')
    .replace(/^[a-z]/g, (c) => c.toUpperCase())
    .replace(/\b\w+\b/g, (w) => (knownAcronyms.has(w.toLowerCase()) ? w.toUpperCase() : w));
}

test('the Settings editor titles "GPU", "GPU Layers", "KV Cache Type", "RPC Servers"; no live setting\'s title spells an acronym "Gpu", "Kv" or "Rpc"', () => {
  assert.equal(settingTitle('reposnap.gpu'), 'Gpu', 'the old key, as it showed');
  assert.equal(settingTitle('reposnap.gpuLayers'), 'Gpu Layers');
  assert.equal(settingTitle('reposnap.kvCacheType'), 'Kv Cache Type', 'the rule as it is: a lower-case acronym not in its list stays capitalized');
  assert.equal(settingTitle('reposnap.rpcServers'), 'Rpc Servers');
  assert.equal(settingTitle('reposnap.GPU'), 'GPU');
  assert.equal(settingTitle('reposnap.GPULayers'), 'GPU Layers');
  assert.equal(settingTitle('reposnap.KVCacheType'), 'KV Cache Type');
  assert.equal(settingTitle('reposnap.RPCServers'), 'RPC Servers');
  assert.equal(settingTitle('reposnap.maxFileBytes'), 'Max File Bytes');
  const live = Object.keys(declared).filter((k) => !declared[k]!.markdownDeprecationMessage && !declared[k]!.deprecationMessage);
  assert.deepEqual(live.map(settingTitle).filter((t) => /\b(Gpu|Kv|Rpc|Kl|Bm25|Swa)\b/.test(t)), []);
  for (const key of ['GPU', 'GPULayers', 'KVCacheType', 'RPCServers'] as const) assert.ok(SETTING_KEYS.includes(key), key);
});

test('the old keys stay declared, deprecated with a hint naming the new key, with the new key\'s type, enum and default', () => {
  for (const { from, to } of RENAMED_SETTINGS) {
    const old = declared[`reposnap.${from}`];
    const now = declared[`reposnap.${to}`];
    assert.ok(old && now, `${from} and ${to} are declared`);
    assert.ok(!SETTING_KEYS.includes(from as never), `${from} is no longer read`);
    assert.match(old.markdownDeprecationMessage ?? '', new RegExp(`\`#reposnap\\.${to}#\``), from);
    assert.equal(old.deprecationMessage?.includes(`reposnap.${to}`), true, from);
    assert.equal(old.type, now.type);
    assert.deepEqual(old.enum, now.enum);
    assert.deepEqual(old.default, now.default);
    assert.deepEqual(now.default, DEFAULT_SETTINGS[to as keyof typeof DEFAULT_SETTINGS]);
  }
});
