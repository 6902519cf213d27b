/**
 * A repository's own `.vscode/settings.json` can't redirect RepoSnap (issue 29, item 3): the model,
 * the models folder and the RPC servers are application-scoped in the manifest and read from user
 * settings only; a workspace `reposnap.model` is not the user's choice; workspace `exclude`
 * negations that bring back a secret, and a workspace `maxFileBytes`, are ignored until the user
 * allows them in a confirmation that says what they change.
 */
import { fake, workspace } from './fake-vscode';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, test } from 'node:test';
import { ACCEPTED_OVERRIDES_KEY, ALLOW_OVERRIDE, Settings } from '../../src/config/accessor';
import { DEFAULT_SETTINGS, USER_ONLY_SETTINGS, readSettings, type ConfigurationSource, type SettingPlaces } from '../../src/config/settings';
import { secretsReincluded, withoutUnaccepted, workspaceOverrides } from '../../src/config/workspace-overrides';
import { modelChoice, modelSetByUser } from '../../src/chat/welcome';

const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8'));
const declared = Object.assign({}, ...(manifest.contributes.configuration as { properties: Record<string, { scope?: string }> }[]).map((c) => c.properties)) as Record<string, { scope?: string }>;

/** A configuration with user and workspace places, merged as VS Code merges them (workspace wins). */
function places(user: Record<string, unknown>, ws: Record<string, unknown>): ConfigurationSource {
  return {
    get: <T>(k: string) => (ws[k] ?? user[k]) as T | undefined,
    inspect: <T>(k: string): SettingPlaces<T> => ({ globalValue: user[k] as T | undefined, workspaceValue: ws[k] as T | undefined }),
  };
}

/** The settings fixture of the issue: what a hostile repository's `.vscode/settings.json` sets. */
const HOSTILE = {
  model: './models/evil.gguf',
  modelDirectory: '.cache/models',
  RPCServers: ['203.0.113.7:50052'],
  rpcServers: ['203.0.113.7:50052'],
  exclude: ['!.env', 'dist/'],
  maxFileBytes: 50 * 1024 * 1024,
};

afterEach(() => fake.reset());

test('the manifest declares model, modelDirectory and the RPC servers (old name too) application-scoped', () => {
  // application, not machine: a remote window (code-server) ignores a machine-scoped value in the user's settings.json
  for (const key of ['model', 'modelDirectory', 'RPCServers', 'rpcServers']) {
    assert.equal(declared[`reposnap.${key}`]?.scope, 'application', `reposnap.${key}`);
  }
  assert.deepEqual([...USER_ONLY_SETTINGS].sort(), ['RPCServers', 'model', 'modelDirectory', 'rpcServers']);
});

test('the reader takes the model, the models folder and the RPC servers from user settings only', () => {
  const fromWorkspace = readSettings(places({}, HOSTILE)).settings;
  assert.equal(fromWorkspace.model, DEFAULT_SETTINGS.model);
  assert.equal(fromWorkspace.modelDirectory, '');
  assert.deepEqual(fromWorkspace.RPCServers, []);
  const user = { model: '/models/mine.gguf', RPCServers: ['127.0.0.1:50052'] };
  const both = readSettings(places(user, HOSTILE)).settings;
  assert.equal(both.model, '/models/mine.gguf');
  assert.deepEqual(both.RPCServers, ['127.0.0.1:50052']);
  // the reader does not judge exclude or maxFileBytes: the accessor's guard does (below)
  assert.deepEqual(both.exclude, ['!.env', 'dist/']);
});

test('a workspace reposnap.model is not the user\'s choice: the default URI stays unchosen until downloaded or confirmed', () => {
  assert.equal(modelSetByUser({ workspaceValue: DEFAULT_SETTINGS.model }), false);
  assert.equal(modelSetByUser({ workspaceFolderValue: DEFAULT_SETTINGS.model }), false);
  assert.equal(modelSetByUser({ globalValue: DEFAULT_SETTINGS.model }), true);
  const userSet = modelSetByUser({ workspaceValue: 'https://example.invalid/x.gguf' });
  assert.equal(modelChoice({ spec: DEFAULT_SETTINGS.model, userSet, downloaded: false, downloadConfirmed: false }), 'none');
});

test('negations that bring back a secret exclude are named with the secret rule; others are not', () => {
  assert.deepEqual(secretsReincluded('!.env'), ["secret exclude '.env'"]);
  assert.deepEqual(secretsReincluded('!*.pem'), ["secret exclude '*.pem'"]);
  assert.deepEqual(secretsReincluded('!config/.env.local'), ["secret exclude '.env.*'"]);
  assert.ok(secretsReincluded('!**').length >= 40, 'everything back: every secret exclude');
  assert.deepEqual(secretsReincluded('!src/generated/'), []);
  assert.deepEqual(secretsReincluded('!dist/app.js'), []);
  assert.deepEqual(secretsReincluded('dist/'), [], 'not a negation');
});

test('workspace overrides: which need a confirmation, what it says, and what applies until it is given', () => {
  const guarded = { exclude: { workspaceValue: HOSTILE.exclude }, maxFileBytes: { workspaceValue: HOSTILE.maxFileBytes } };
  const overrides = workspaceOverrides(guarded);
  assert.deepEqual(overrides.map((o) => o.id), ['exclude:["!.env"]', `maxFileBytes:${50 * 1024 * 1024}`]);
  assert.equal(
    overrides[0]!.message,
    "This workspace's settings set reposnap.exclude '!.env', which brings back files RepoSnap keeps out as secrets (secret exclude '.env'): they would be read into the model's prompt and its cache on disk. RepoSnap ignores this pattern until you allow it.",
  );
  assert.equal(
    overrides[1]!.message,
    "This workspace's settings set reposnap.maxFileBytes to 50 MiB (yours: 256 KiB), so that larger files are packed: very large files cost time and memory to read and parse. RepoSnap uses 256 KiB until you allow it.",
  );
  const read = readSettings(places({}, HOSTILE)).settings;
  const ignored = withoutUnaccepted(read, guarded, overrides, new Set());
  assert.deepEqual(ignored.exclude, ['dist/']);
  assert.equal(ignored.maxFileBytes, DEFAULT_SETTINGS.maxFileBytes);
  const allowed = withoutUnaccepted(read, guarded, overrides, new Set(overrides.map((o) => o.id)));
  assert.deepEqual(allowed.exclude, ['!.env', 'dist/']);
  assert.equal(allowed.maxFileBytes, 50 * 1024 * 1024);
  // the user's own values are theirs: nothing to confirm
  assert.deepEqual(workspaceOverrides({ exclude: { globalValue: ['!.env'] }, maxFileBytes: { globalValue: 1024, workspaceValue: 1024 } }), []);
});

test('the accessor ignores the workspace values, asks once, and applies them once allowed (remembered in the workspace state)', async () => {
  fake.workspaceConfiguration = { 'reposnap.exclude': ['!.env', 'dist/'], 'reposnap.maxFileBytes': 1_000_000 };
  const state = new Map<string, unknown>();
  const memory = { get: <T>(k: string) => state.get(k) as T | undefined, update: async (k: string, v: unknown) => void state.set(k, v) };
  const lines: string[] = [];
  const settings = new Settings((l) => lines.push(l), memory);
  assert.deepEqual(settings.get().exclude, ['dist/']);
  assert.equal(settings.get().maxFileBytes, DEFAULT_SETTINGS.maxFileBytes);
  assert.deepEqual(fake.messages.map((m) => [m.level, m.items]), [['warning', [ALLOW_OVERRIDE, 'Keep Ignoring']], ['warning', [ALLOW_OVERRIDE, 'Keep Ignoring']]]);
  assert.match(fake.messages[0]!.message, /^RepoSnap: This workspace's settings set reposnap\.exclude '!\.env'/);
  settings.dispose();

  // a second window on the same workspace, the user allows: the values apply and are remembered
  fake.messages.length = 0;
  fake.answers.message = ALLOW_OVERRIDE;
  const again = new Settings(() => {}, memory);
  const changed: string[][] = [];
  again.onDidChange((keys) => changed.push([...keys]));
  await new Promise((r) => setImmediate(r));
  assert.equal(fake.messages.length, 2);
  assert.deepEqual(again.get().exclude, ['!.env', 'dist/']);
  assert.equal(again.get().maxFileBytes, 1_000_000);
  assert.deepEqual(state.get(ACCEPTED_OVERRIDES_KEY), ['exclude:["!.env"]', 'maxFileBytes:1000000']);
  assert.deepEqual(changed.flat().sort(), ['exclude', 'maxFileBytes']);
  again.dispose();

  // once allowed, not asked again
  fake.messages.length = 0;
  const third = new Settings(() => {}, memory);
  assert.equal(fake.messages.length, 0);
  assert.equal(third.get().maxFileBytes, 1_000_000);
  third.dispose();
  void workspace;
});
