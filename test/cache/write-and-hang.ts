/**
 * A child process for test/cli/cache.test.ts: opens the store in `argv[2]`, starts saving a
 * prefix entry (taking the folder's lock), writes half of the state file's temporary file,
 * prints `writing`, and hangs there until it is killed: a process killed in the middle of a
 * cache write.
 */
import fs from 'node:fs';
import path from 'node:path';
import { CacheStore } from '../../src/cache/store';
import type { StateHeader } from '../../src/engine/state-file';

const store = CacheStore.open(process.argv[2]!, {
  fs: {
    writeFileAtomic(file, data) {
      // writeFileAtomic's temporary file name (src/engine/state-file.ts)
      const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${Date.now()}.tmp`);
      fs.writeFileSync(tmp, data.subarray(0, data.length >> 1));
      process.stdout.write('writing\n');
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); // until killed
    },
  },
});
const header: StateHeader = { model: 'm', engine: 'e', typeK: 'f16', typeV: 'f16', flashAttention: 'off', nPast: 64, cells: 64, snap: null, createdAt: Date.now() };
store.savePrefix('k', ['0'.repeat(32)], { header, tokens: new Int32Array(64), payload: Buffer.alloc(1 << 20) });
