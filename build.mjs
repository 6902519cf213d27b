#!/usr/bin/env node
// Bundles the TypeScript sources with esbuild:
//   dist/cli.js        the `reposnap` command line (bin/reposnap.js loads it)
//   dist/extension.js  the VS Code extension entry point
// `vscode` and `node-llama-cpp` stay external (node-llama-cpp is ESM with native binaries
// and must be loaded from node_modules, as its documentation requires).
import * as esbuild from 'esbuild';

const watch = process.argv.includes('--watch');
const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: true,
  external: ['vscode', 'node-llama-cpp'],
  logLevel: 'warning',
};

const builds = [
  { ...common, entryPoints: ['src/cli/main.ts'], outfile: 'dist/cli.js' },
  { ...common, entryPoints: ['src/extension.ts'], outfile: 'dist/extension.js' },
];

if (watch) {
  for (const b of builds) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
  console.log('[ts] built dist/cli.js, dist/extension.js');
}
