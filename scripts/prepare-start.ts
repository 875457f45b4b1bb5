import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { buildDashboardIfStale } from './dashboard-build.js';
import { ROOT } from './bundle-sources.js';

/**
 * What `npm start` does before it runs the compiled gateway (`exec node dist/cli.js`): builds the dashboard and
 * dist/ when they are missing or older than their sources, so a fresh clone needs only `npm install && npm start`.
 * Both checks are cheap when nothing changed (a hash of the dashboard's sources, file times of the gateway's).
 */

const dashboard = buildDashboardIfStale();
if (dashboard === 'built') console.log('dashboard: built into dashboard/dist');
else if (dashboard === 'no-vite') console.warn('dashboard: vite is not installed (install without --omit=dev), so the dashboard is not built; the API works and / says how to build it');

function esbuildInstalled(): boolean {
  try {
    createRequire(import.meta.url).resolve('esbuild');
    return true;
  } catch {
    return false;
  }
}

if (esbuildInstalled()) {
  // Imported only here: it imports esbuild, which an install without dev dependencies lacks.
  const { buildGatewayIfStale } = await import('./build.js');
  await buildGatewayIfStale({ declarations: false });
} else if (!existsSync(join(ROOT, 'dist/cli.js'))) {
  console.error('tollgate: dist/ is not built and esbuild (a dev dependency) is not installed: run `npm install` and `npm run build`, then prune');
  process.exit(1);
}
