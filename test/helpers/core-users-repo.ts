/**
 * The ranked packing's small fixture repository, shared by the tests that ask the tiny model about
 * it: `src/core.ts` (the function `coreTotal` and 60 comment lines) and `src/use0.ts` …
 * `src/use39.ts`, each importing and calling `coreTotal`, so PageRank puts core.ts first and the
 * forty users compete for the rest of a small budget (their definitions go to the repository map,
 * their bodies to retrieval).
 */
import fs from 'node:fs';
import path from 'node:path';

/** How many `useN.ts` files {@link writeCoreUsersRepo} writes. */
export const CORE_USERS = 40;

/** Writes the fixture into `repo` (created with its `src` folder if missing); files only, no git. */
export function writeCoreUsersRepo(repo: string): void {
  fs.mkdirSync(path.join(repo, 'src'), { recursive: true });
  fs.writeFileSync(path.join(repo, 'src', 'core.ts'), `export function coreTotal(xs: number[]): number {\n  return xs.reduce((a, b) => a + b, 0);\n}\n${'// core notes\n'.repeat(60)}`);
  for (let i = 0; i < CORE_USERS; i++) {
    fs.writeFileSync(path.join(repo, 'src', `use${i}.ts`), `import { coreTotal } from './core';\nexport function use${i}(): number {\n  return coreTotal([${i}, ${i + 1}]);\n}\n`);
  }
}
