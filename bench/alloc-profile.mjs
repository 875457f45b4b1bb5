// Loaded with `--import` into a bench server (plain JavaScript: it loads before tsx): samples every allocation the
// process makes from its first HTTP request on (start-up left out), objects the garbage collector already took
// included (unlike `--heap-prof`, which keeps only what is still alive at exit), counts the requests it served
// meanwhile, and writes the sampling profile when the process exits, into the folder named by
// TOLLGATE_ALLOC_PROFILE_DIR, as alloc-<server script>.<pid>.<requests>req.heapprofile (DevTools opens it).
// `npm run bench -- --alloc-profile` spawns the tollgate servers with it; `npx tsx bench/alloc-summary.ts <file>`
// reads it: the functions that allocate the most per request, where the garbage collector's work comes from.
// With TOLLGATE_ALLOC_MINOR=false the objects young-generation collections took are left out: what is sampled is
// what survived at least one scavenge (and was copied, usually promoted), the allocations that make scavenges slow.
import { subscribe } from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import process from 'node:process';
import { Session } from 'node:inspector';
import { basename, join } from 'node:path';

const dir = process.env.TOLLGATE_ALLOC_PROFILE_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('HeapProfiler.enable');
  let requests = 0;
  subscribe('http.server.request.start', () => {
    // One sample per 16 KiB allocated on average: cheap enough to leave the process's speed about as it is.
    if (requests++ === 0) {
      session.post('HeapProfiler.startSampling', { samplingInterval: 16_384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: process.env.TOLLGATE_ALLOC_MINOR !== 'false' });
    }
  });
  process.once('exit', () => {
    if (requests === 0) return;
    // The in-process session answers synchronously, so the profile is written before the process ends.
    session.post('HeapProfiler.stopSampling', (err, result) => {
      if (err || !result) return;
      const script = basename(process.argv[1] ?? 'node').replace(/\.[a-z]+$/, '');
      writeFileSync(join(dir, `alloc-${script}.${process.pid}.${requests}req.heapprofile`), JSON.stringify(result.profile));
    });
  });
}
