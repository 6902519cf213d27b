/**
 * The extension applies VS Code's `files.exclude`: the settings a question is asked with
 * (`withFilesExclude`, what `EngineService` sends for the workspace folder) reach the engine's
 * pack options (`toAskRequest`) and leave those files out, while a `!pattern` in
 * `reposnap.exclude` still brings one back.
 *
 * What only a real VS Code can show is the one line in `EngineService.askSettings` that reads
 * the value (`vscode.workspace.getConfiguration('files', folder.uri).get('exclude')`); every step
 * after it runs here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readSettings, withFilesExclude, type ConfigurationSource } from '../../src/config/settings';
import type { EngineModel } from '../../src/engine/model';
import { toAskRequest } from '../../src/host/engine';
import type { AskParams } from '../../src/host/protocol';
import { askParams } from '../../src/host/request';
import { makeRepo, manifest, pack } from './fixtures';

const source = (values: Record<string, unknown>): ConfigurationSource => ({ get: <T>(k: string) => values[k] as T | undefined });

test("files.exclude reaches the engine's pack options; reposnap.exclude comes after it", async (t) => {
  const root = await makeRepo(t, {
    'src/main.ts': 'export const main = 1;\n',
    'src/gen/out.ts': 'export const gen = 1;\n',
    'logs/app.log': 'log\n',
    'keep.log': 'keep\n',
    'tmp/scratch.txt': 'scratch\n',
    'notes.md': 'notes\n',
  });
  const { settings } = readSettings(source({ exclude: ['!keep.log', 'notes.md'] }));
  // VS Code's default-style setting: `true` keys apply, `false` and `{ when }` do not
  const filesExclude = { '**/*.log': true, 'src/gen': true, '**/tmp': false, '**/*.md': { when: '$(basename).txt' } };

  const asked = withFilesExclude(settings, filesExclude);
  assert.deepEqual(asked.exclude, ['**/*.log', '/src/gen', '!keep.log', 'notes.md']);
  assert.deepEqual(settings.exclude, ['!keep.log', 'notes.md'], 'the live settings are not modified');
  assert.equal(withFilesExclude(settings, undefined), settings);

  const params: AskParams = askParams(asked, { threadId: 't', repo: root, question: 'q', modelPath: '/m.gguf' });
  // the model is only carried through by toAskRequest, never used on this path
  const request = toAskRequest(params, undefined as unknown as EngineModel, new AbortController().signal);
  assert.deepEqual(request.pack?.exclude, asked.exclude);

  const result = await pack(root, { ...request.pack });
  assert.deepEqual(manifest(result).files, ['keep.log', 'src/main.ts', 'tmp/scratch.txt']);
  assert.deepEqual(manifest(result).ignored, [['logs/app.log', 'excluded'], ['notes.md', 'excluded'], ['src/gen/', 'excluded']]);
});
