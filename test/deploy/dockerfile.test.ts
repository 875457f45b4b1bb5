import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { execForm, instructionsOf, keyValues, parseDockerfile, type Stage } from '../helpers/dockerfile.js';

// The Dockerfile read instruction by instruction: what the image is made of and how it runs, checked without a
// container engine (test/deploy/container-image.test.ts runs the built image where podman can).

const ROOT = resolve(import.meta.dirname, '../..');
const DOCKERFILE = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
const IGNORED = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n').map((line) => line.trim()).filter((line) => line && !line.startsWith('#'));

const build = DOCKERFILE.stages.find((stage) => stage.name === 'build');
const runtime = DOCKERFILE.stages.at(-1)!;

function env(stage: Stage): Map<string, string> {
  return new Map(instructionsOf(stage, 'ENV').flatMap((instruction) => [...keyValues(instruction.args)]));
}

function runLines(stage: Stage): string {
  return instructionsOf(stage, 'RUN').map((instruction) => instruction.args).join('\n');
}

describe('Dockerfile', () => {
  it('builds in one stage and runs in another, both on BASE_IMAGE (a Debian/glibc Node 20 by default)', () => {
    expect(DOCKERFILE.stages.map((stage) => stage.name)).toEqual(['build', 'runtime']);
    expect(DOCKERFILE.stages.map((stage) => stage.from)).toEqual(['${BASE_IMAGE}', '${BASE_IMAGE}']);
    // The native addons (lmdb, hnswlib-node) are built for glibc: not an Alpine/musl image.
    expect(DOCKERFILE.globalArgs.get('BASE_IMAGE')).toMatch(/^node:20(\.\d+)*-(bookworm|bullseye)(-slim)?$/);
  });

  it('the build stage installs from the lock file, builds the dashboard and the gateway, and drops dev dependencies', () => {
    const run = runLines(build!);
    expect(run).toMatch(/\bnpm ci\b/);
    const order = ['npm ci', 'npm run build:dashboard', 'npm run build ', 'npm prune --omit=dev'].map((step) => `${run} `.indexOf(step));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    // Each npm script it runs exists.
    for (const [, script] of run.matchAll(/npm run (\S+)/g)) expect(PACKAGE.scripts, `npm run ${script}`).toHaveProperty([script!]);
    // The compiler for hnswlib-node, in the build stage only.
    expect(run).toMatch(/apt-get install .*\bg\+\+/);
    expect(runLines(runtime)).not.toMatch(/apt-get|npm (ci|install)/);
  });

  it('runs `node dist/cli.js` as a numeric non-root user, with /data as its volume and data dir', () => {
    expect(execForm(instructionsOf(runtime, 'CMD').at(-1)!.args)).toEqual(['node', 'dist/cli.js']);
    const user = instructionsOf(runtime, 'USER').at(-1)!.args;
    expect(user).toMatch(/^\d+(:\d+)?$/);
    expect(Number(user.split(':')[0])).toBeGreaterThan(0);
    expect(execForm(instructionsOf(runtime, 'VOLUME')[0]!.args)).toEqual(['/data']);
    expect(env(runtime).get('TOLLGATE_DATA_DIR')).toBe('/data');
    // The volume's mount point belongs to that user, so a fresh volume is writable for it.
    expect(runLines(runtime)).toContain(`chown ${user} /data`);
  });

  it('listens on the port it exposes, and its health check asks /health there with node (no curl in a slim image)', () => {
    expect(instructionsOf(runtime, 'EXPOSE').map((instruction) => instruction.args)).toEqual([env(runtime).get('PORT')]);
    const healthcheck = instructionsOf(runtime, 'HEALTHCHECK')[0]!.args;
    const command = execForm(healthcheck.slice(healthcheck.indexOf('CMD ') + 4))!;
    expect(command.slice(0, 2)).toEqual(['node', '-e']);
    expect(command[2]).toContain('/health');
    expect(command[2]).toContain('process.env.PORT');
  });

  it('copies only built output into the runtime stage, and fetches nothing from the network', () => {
    const copies = instructionsOf(runtime, 'COPY').map((instruction) => instruction.args);
    expect(copies.every((args) => args.startsWith('--from=build '))).toBe(true);
    const copied = copies.map((args) => args.split(' ')[1]);
    expect(copied).toEqual(expect.arrayContaining(['/app/node_modules', '/app/dist', '/app/dashboard/dist']));
    for (const stage of DOCKERFILE.stages) expect(instructionsOf(stage, 'ADD'), 'ADD (which fetches URLs and unpacks archives): use COPY').toEqual([]);
  });

  it('keeps the build context to sources (.dockerignore)', () => {
    expect(IGNORED).toEqual(expect.arrayContaining(['.git', 'node_modules', 'dist', 'dashboard/dist', 'data']));
  });
});
