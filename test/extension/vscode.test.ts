/**
 * The @vscode/test-electron suite (test/extension/suite/): the extension in a real VS Code
 * desktop build. An offline build cannot download VS Code, so this runs only where
 * REPOSNAP_VSCODE_PATH points to a VS Code executable; elsewhere it is reported as skipped with
 * the reason (the browser end-to-end test, .ci/e2e.sh, covers the same ground in code-server).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import * as esbuild from 'esbuild';
import { checkTinyModel } from '../helpers/models';

const ROOT = path.resolve(__dirname, '..', '..');
const VSCODE = process.env.REPOSNAP_VSCODE_PATH;
const REASON = VSCODE
  ? undefined
  : 'REPOSNAP_VSCODE_PATH is not set: the @vscode/test-electron suite needs a VS Code executable, which an offline build cannot download (set REPOSNAP_VSCODE_PATH=/path/to/code to run it; .ci/e2e.sh tests the extension in code-server)';
if (REASON) console.log(`test/extension/vscode.test.ts not run: ${REASON}`);

test('the extension in VS Code: activation, commands, a question answered through the command API', { skip: REASON, timeout: 300_000 }, async () => {
  assert.ok(fs.existsSync(VSCODE!), `REPOSNAP_VSCODE_PATH=${VSCODE} does not exist`);
  const { runTests } = await import('@vscode/test-electron');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-vscode-'));
  try {
    execFileSync(process.execPath, [path.join(ROOT, 'build.mjs')], { cwd: ROOT, stdio: 'inherit' });
    const suite = path.join(tmp, 'suite', 'index.js');
    await esbuild.build({ entryPoints: [path.join(__dirname, 'suite', 'index.ts')], outfile: suite, bundle: true, platform: 'node', format: 'cjs', target: 'node20', external: ['vscode'], logLevel: 'warning' });

    const workspace = path.join(tmp, 'workspace');
    fs.mkdirSync(path.join(workspace, '.vscode'), { recursive: true });
    const story = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the sun.\n';
    fs.writeFileSync(path.join(workspace, 'story.md'), story.repeat(20));
    fs.writeFileSync(path.join(workspace, 'add.ts'), 'export function add(a: number, b: number): number {\n  return a + b;\n}\n');
    const user = path.join(tmp, 'user');
    fs.mkdirSync(path.join(user, 'User'), { recursive: true });
    fs.writeFileSync(
      path.join(user, 'User', 'settings.json'),
      JSON.stringify({ 'reposnap.model': checkTinyModel(), 'reposnap.contextSize': 1024, 'reposnap.budget': 256, 'reposnap.window': 16, 'reposnap.maxTokens': 16, 'security.workspace.trust.enabled': false }),
    );
    await runTests({
      vscodeExecutablePath: VSCODE!,
      extensionDevelopmentPath: ROOT,
      extensionTestsPath: suite,
      launchArgs: [workspace, '--user-data-dir', user, '--disable-extensions', '--disable-workspace-trust', '--skip-welcome', '--skip-release-notes'],
      // the KV cache store goes to the run's temporary folder, never to the user's real cache (src/cache/location.ts)
      extensionTestsEnv: { REPOSNAP_CACHE_DIR: path.join(tmp, 'cache') },
    });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
