#!/usr/bin/env node
// Bundles the TypeScript sources with esbuild:
//   dist/cli.js            the `reposnap` command line (bin/reposnap.js loads it)
//   dist/extension.js      the VS Code extension entry point
//   dist/host.js           the engine process the extension forks (src/host/main.ts)
//   dist/webview/chat.js   the chat view's page (media/src/chat.ts; markdown-it, highlight.js)
//   dist/webview/stats.js  the cache stats panel's page (media/src/stats.ts; Chart.js)
//   dist/tree-sitter/      web-tree-sitter's runtime wasm and the grammars the repository map
//                          parses with (src/context/map/languages.ts), copied from node_modules
// `vscode` and `node-llama-cpp` stay external (node-llama-cpp is ESM with native binaries
// and must be loaded from node_modules, as its documentation requires).
import * as esbuild from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';

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
const webview = {
  bundle: true,
  platform: 'browser',
  target: 'es2022',
  format: 'iife',
  minify: true,
  sourcemap: false,
  logLevel: 'warning',
};

const builds = [
  { ...common, entryPoints: ['src/cli/main.ts'], outfile: 'dist/cli.js' },
  { ...common, entryPoints: ['src/extension.ts'], outfile: 'dist/extension.js' },
  { ...common, entryPoints: ['src/host/main.ts'], outfile: 'dist/host.js' },
  // the tree-sitter worker thread (src/context/map/tags-worker-client.ts finds it beside the bundle)
  { ...common, entryPoints: ['src/context/map/tags-worker.ts'], outfile: 'dist/tags-worker.js' },
  { ...webview, entryPoints: ['media/src/chat.ts'], outfile: 'dist/webview/chat.js' },
  { ...webview, entryPoints: ['media/src/stats.ts'], outfile: 'dist/webview/stats.js' },
];

// the repository map's tree-sitter wasm files, next to the bundles (src/context/map/tags.ts finds them there)
const grammars = ['typescript', 'tsx', 'javascript', 'python', 'go', 'rust', 'java', 'cpp'];
mkdirSync('dist/tree-sitter', { recursive: true });
copyFileSync('node_modules/web-tree-sitter/web-tree-sitter.wasm', 'dist/tree-sitter/web-tree-sitter.wasm');
for (const g of grammars) copyFileSync(`node_modules/@vscode/tree-sitter-wasm/wasm/tree-sitter-${g}.wasm`, `dist/tree-sitter/tree-sitter-${g}.wasm`);

if (watch) {
  for (const b of builds) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
  console.log(`[ts] built ${builds.map((b) => b.outfile).join(', ')}`);
}
