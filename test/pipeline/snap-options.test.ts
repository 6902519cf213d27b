/**
 * One SnapOptions schema (src/config/snap-options.ts): its defaults are the SnapKV paper's
 * (w 32, B 1024, kernel 7, max pooling; uniform allocation), package.json's settings declare
 * the same defaults and ranges, and the settings, the CLI and the schema reject a budget below
 * the window with one message, each naming the options as its front end does.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { snapOptions } from '../../src/cli/ask';
import { UsageError } from '../../src/cli/usage';
import { DEFAULT_SETTINGS, readSettings } from '../../src/config/settings';
import { parseSnapOptions, SNAP_DEFAULTS, SNAP_LIMITS, SnapOptionsError } from '../../src/config/snap-options';

const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8'));
type Prop = { default: unknown; minimum?: number; maximum?: number; enum?: unknown[] };
const props = Object.assign({}, ...(manifest.contributes.configuration as { properties: Record<string, Prop> }[]).map((c) => c.properties)) as Record<string, Prop>;

test('the defaults are the SnapKV paper\'s: w 32, B 1024, kernel 7, max pooling, uniform allocation, SnapKV\'s scorer, on; no prior (bonus 1 when chosen)', () => {
  assert.deepEqual({ ...SNAP_DEFAULTS }, { enabled: true, window: 32, budget: 1024, kernel: 7, pooling: 'max', allocation: 'uniform', scorer: 'snapkv', prior: 'none', priorBonus: 1 });
});

test("package.json's SnapKV settings declare the schema's defaults and ranges", () => {
  const keys = { snap: 'enabled', window: 'window', budget: 'budget', kernel: 'kernel', pooling: 'pooling', budgetAllocation: 'allocation', scorer: 'scorer', prior: 'prior', priorBonus: 'priorBonus' } as const;
  for (const [setting, option] of Object.entries(keys)) {
    assert.deepEqual(props[`reposnap.${setting}`]!.default, SNAP_DEFAULTS[option], setting);
    assert.deepEqual(DEFAULT_SETTINGS[setting as keyof typeof keys], SNAP_DEFAULTS[option], setting);
  }
  assert.deepEqual([props['reposnap.window']!.minimum, props['reposnap.window']!.maximum], [SNAP_LIMITS.window.min, SNAP_LIMITS.window.max]);
  assert.deepEqual([props['reposnap.kernel']!.minimum, props['reposnap.kernel']!.maximum], [SNAP_LIMITS.kernel.min, SNAP_LIMITS.kernel.max]);
  assert.equal(props['reposnap.budget']!.minimum, SNAP_LIMITS.budget.min);
  assert.deepEqual(props['reposnap.pooling']!.enum, ['max', 'avg']);
  assert.deepEqual(props['reposnap.budgetAllocation']!.enum, ['uniform', 'adakv', 'pyramid']);
  assert.deepEqual(props['reposnap.prior']!.enum, ['none', 'code']);
  assert.deepEqual(props['reposnap.scorer']!.enum, ['snapkv', 'key-norm', 'key-norm-topup']);
  assert.deepEqual([props['reposnap.priorBonus']!.minimum, props['reposnap.priorBonus']!.maximum], [SNAP_LIMITS.priorBonus.min, SNAP_LIMITS.priorBonus.max]);
});

test('the schema fills missing fields with the defaults and names each bad field', () => {
  assert.deepEqual(parseSnapOptions({}), SNAP_DEFAULTS);
  assert.deepEqual(parseSnapOptions({ window: 16, budget: 64, extra: 1 }), { ...SNAP_DEFAULTS, window: 16, budget: 64 });
  assert.throws(() => parseSnapOptions({ kernel: 4 }), (e: Error) => e instanceof SnapOptionsError && /kernel: must be odd/.test(e.message));
  assert.throws(() => parseSnapOptions({ window: 4097 }), /window: /);
  assert.throws(() => parseSnapOptions({ pooling: 'median' }), /pooling: /);
  assert.deepEqual(parseSnapOptions({ prior: 'code', priorBonus: 2.5 }), { ...SNAP_DEFAULTS, prior: 'code', priorBonus: 2.5 });
  assert.throws(() => parseSnapOptions({ prior: 'names' }), /prior: /);
  assert.throws(() => parseSnapOptions({ priorBonus: -1 }), /priorBonus: /);
  assert.throws(() => parseSnapOptions({ budget: 16, window: 64 }), { name: 'SnapOptionsError', message: 'invalid SnapKV options: budget (16) must be at least window (64)' });
  assert.deepEqual(parseSnapOptions({ scorer: 'key-norm' }), { ...SNAP_DEFAULTS, scorer: 'key-norm' });
  assert.throws(() => parseSnapOptions({ scorer: 'expected-attention' }), /scorer: /);
  assert.throws(() => parseSnapOptions({ scorer: 'key-norm', prior: 'code' }), /prior 'code' needs scorer 'snapkv'/);
});

test("the key-norm scorer: the CLI's --scorer, the setting reposnap.scorer, and the code prior refused beside it", () => {
  assert.deepEqual(snapOptions({ scorer: 'key-norm' }), { ...SNAP_DEFAULTS, scorer: 'key-norm' });
  assert.throws(() => snapOptions({ scorer: 'knorm' }), { message: "--scorer must be snapkv, key-norm or key-norm-topup (got 'knorm')" });
  assert.throws(() => snapOptions({ scorer: 'key-norm', prior: 'code' }), { message: "--prior code needs --scorer snapkv (got 'key-norm')" });
  assert.deepEqual(snapOptions({ scorer: 'key-norm-topup' }), { ...SNAP_DEFAULTS, scorer: 'key-norm-topup' });
  assert.throws(() => snapOptions({ scorer: 'key-norm-topup', allocation: 'adakv' }), { message: "--scorer key-norm-topup needs --allocation uniform (got 'adakv')" });
  assert.deepEqual(readSettings({ get: <T>(k: string) => ({ scorer: 'key-norm' })[k] as T | undefined }).settings, { ...DEFAULT_SETTINGS, scorer: 'key-norm' });
  const r = readSettings({ get: <T>(k: string) => ({ scorer: 'key-norm', prior: 'code' })[k] as T | undefined });
  assert.deepEqual([r.settings.scorer, r.settings.prior], ['key-norm', 'none']);
  assert.deepEqual(r.problems, ["reposnap.prior 'code' needs reposnap.scorer 'snapkv' (got 'key-norm'); using no prior"]);
});

test('a budget below the window: one message, named by the settings and by the CLI', () => {
  const r = readSettings({ get: <T>(k: string) => ({ budget: 16, window: 64 })[k] as T | undefined });
  assert.deepEqual(r.problems, ['reposnap.budget (16) must be at least reposnap.window (64); using 1024']);
  assert.throws(() => snapOptions({ budget: '16', window: '64' }), (e: Error) => e instanceof UsageError && e.message === '--budget (16) must be at least --window (64)');
});

test("the CLI's flags: defaults when absent, each value parsed, --no-snap", () => {
  assert.deepEqual(snapOptions({}), SNAP_DEFAULTS);
  assert.deepEqual(snapOptions({ window: '16', budget: '64', kernel: '5', pooling: 'avg', allocation: 'adakv', prior: 'code', 'prior-bonus': '4', 'no-snap': true }), {
    enabled: false,
    window: 16,
    budget: 64,
    kernel: 5,
    pooling: 'avg',
    allocation: 'adakv',
    scorer: 'snapkv',
    prior: 'code',
    priorBonus: 4,
  });
  assert.throws(() => snapOptions({ prior: 'names' }), { message: "--prior must be none or code (got 'names')" });
  assert.throws(() => snapOptions({ 'prior-bonus': '-1' }), { message: "--prior-bonus must be a number from 0 to 1000 (got '-1')" });
  assert.deepEqual(readSettings({ get: <T>(k: string) => ({ prior: 'code', priorBonus: 3 })[k] as T | undefined }).settings, { ...DEFAULT_SETTINGS, prior: 'code', priorBonus: 3 });
  assert.throws(() => snapOptions({ kernel: '4' }), { message: '--kernel must be odd (got 4)' });
  assert.throws(() => snapOptions({ allocation: 'even' }), { message: "--allocation must be uniform, adakv or pyramid (got 'even')" });
  assert.throws(() => snapOptions({ pooling: 'sum' }), { message: "--pooling must be max or avg (got 'sum')" });
});
