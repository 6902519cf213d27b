/**
 * The settings accessor: defaults, validation with a message per bad value, and agreement with
 * the `contributes.configuration` that VS Code shows in its settings editor.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { DEFAULT_SETTINGS, readSettings, SETTING_KEYS, type ConfigurationSource } from '../../src/config/settings';

const source = (values: Record<string, unknown>): ConfigurationSource => ({ get: <T>(k: string) => values[k] as T | undefined });
const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8'));

test('no values: every default, no problems', () => {
  const r = readSettings(source({}));
  assert.deepEqual(r.settings, DEFAULT_SETTINGS);
  assert.deepEqual(r.problems, []);
});

test('valid values are read as they are (globs trimmed, empty ones dropped)', () => {
  const r = readSettings(source({ model: ' /m/x.gguf ', budget: 2048, window: 16, pooling: 'avg', kernel: 5, KVCacheType: 'q8_0', followUpMode: 'continue', include: [' src/ ', ''], GPU: 'cuda', codeLens: false }));
  assert.deepEqual(r.problems, []);
  assert.equal(r.settings.model, '/m/x.gguf');
  assert.equal(r.settings.budget, 2048);
  assert.equal(r.settings.window, 16);
  assert.equal(r.settings.pooling, 'avg');
  assert.equal(r.settings.kernel, 5);
  assert.equal(r.settings.KVCacheType, 'q8_0');
  assert.equal(r.settings.followUpMode, 'continue');
  assert.deepEqual(r.settings.include, ['src/']);
  assert.equal(r.settings.GPU, 'cuda');
  assert.equal(r.settings.codeLens, false);
});

test('invalid values fall back to their defaults, one problem line each', () => {
  const r = readSettings(source({ kernel: 4, budget: -1, pooling: 'median', include: 'src/', codeLens: 'yes', GPULayers: 1.5 }));
  assert.equal(r.settings.kernel, 7);
  assert.equal(r.settings.budget, 1024);
  assert.equal(r.settings.pooling, 'max');
  assert.deepEqual(r.settings.include, []);
  assert.equal(r.settings.codeLens, true);
  assert.equal(r.settings.GPULayers, 999);
  assert.equal(r.problems.length, 6);
  assert.ok(r.problems.includes('reposnap.kernel: must be odd, got 4; using 7'), r.problems.join('\n'));
  assert.ok(r.problems.some((p) => p.startsWith('reposnap.pooling: must be one of max, avg, got "median"')));
});

test('a budget below the window is raised (B includes the window)', () => {
  const r = readSettings(source({ budget: 16, window: 64 }));
  assert.equal(r.settings.budget, 1024);
  assert.match(r.problems[0]!, /budget \(16\) must be at least reposnap.window \(64\)/);
});

test('package.json declares exactly these settings, with the same defaults and a description each', () => {
  // contributes.configuration is a list of categories (Model, Answers, Repository, Advanced)
  const categories = manifest.contributes.configuration as { properties: Record<string, { default: unknown; markdownDescription?: string; description?: string; enum?: unknown[] }> }[];
  const props = Object.assign({}, ...categories.map((c) => c.properties)) as (typeof categories)[number]['properties'];
  // renamed keys stay declared as deprecated (src/config/migrate.ts; settings-migrate.test.ts checks them)
  const live = Object.keys(props).filter((k) => !(props[k] as { markdownDeprecationMessage?: string }).markdownDeprecationMessage);
  assert.deepEqual(live.sort(), SETTING_KEYS.map((k) => `reposnap.${k}`).sort());
  for (const k of SETTING_KEYS) {
    const p = props[`reposnap.${k}`]!;
    assert.deepEqual(p.default, DEFAULT_SETTINGS[k], k);
    assert.ok((p.markdownDescription ?? p.description ?? '').length > 20, `${k} has a description`);
    if (p.enum) assert.ok(p.enum.includes(DEFAULT_SETTINGS[k]), `${k}: default is one of the enum`);
  }
});
