// The tree-sitter worker when RepoSnap runs from its sources (tests, `node --import tsx`): a worker
// thread does not inherit tsx's loader, so this loads it, then the TypeScript worker. The bundle
// runs dist/tags-worker.js instead (tags-worker-client.ts tagsWorkerScript).
require('tsx/cjs');
require('./tags-worker.ts');
