// Runs the interop scripts against the SDK reference servers, to validate
// the scripts themselves (e.g. after bumping an SDK version).
// Usage: npm run selftest
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const plan = [
  ['refserver/v1.mjs', ['interop-v1.mjs', 'interop-v03.mjs']],
  ['refserver/v03.mjs', ['interop-v03.mjs']],
];

async function startServer(script) {
  const child = spawn(process.execPath, [join(root, script)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const timer = setTimeout(() => child.kill(), 10_000);
  const [chunk] = await once(child.stdout, 'data');
  clearTimeout(timer);
  return { child, url: String(chunk).trim().split('\n')[0] };
}

let failed = 0;
for (const [server, scripts] of plan) {
  const { child, url } = await startServer(server);
  try {
    for (const script of scripts) {
      process.stdout.write(`== ${script} against ${server} (${url})\n`);
      const r = spawnSync(process.execPath, [join(root, script), url], { stdio: 'inherit', timeout: 120_000 });
      if (r.status !== 0) failed++;
    }
  } finally {
    child.kill();
  }
}
process.stdout.write(failed ? `selftest: ${failed} script run(s) failed\n` : 'selftest: ok\n');
process.exit(failed ? 1 : 0);
