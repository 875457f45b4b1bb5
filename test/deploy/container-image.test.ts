import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/net.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// The image built by scripts/container/build-image.sh, run the way a cluster runs it: read-only root filesystem,
// an unprivileged user, a fresh /data volume, the config file mounted read-only, keys from the environment, and
// the published port. Building takes minutes (every dependency installed and compiled inside), so this test runs
// the image when it is in the local podman storage and is skipped, saying why, when it is not;
// TOLLGATE_CONTAINER_TESTS=1 makes a missing podman or image a failure instead.

const ROOT = resolve(import.meta.dirname, '../..');
const REQUIRED = process.env.TOLLGATE_CONTAINER_TESTS === '1';
const COMMAND_TIMEOUT_MS = 90_000;

/** podman-env.sh's settings (storage, runtime, limits, image name): the same ones the build used. */
function podmanSettings(): { podman: string[]; runFlags: string[]; image: string } | null {
  const script = 'source scripts/container/podman-env.sh && printf "%s\\0" "${PODMAN[@]}" && printf "\\1\\0" && printf "%s\\0" "${RUN_FLAGS[@]}" && printf "\\1\\0%s" "$IMAGE"';
  const result = spawnSync('bash', ['-c', script], { cwd: ROOT, encoding: 'utf8' });
  if (result.status !== 0) return null;
  const [podman, runFlags, image] = result.stdout.split('\x01\0').map((part) => part.split('\0').filter(Boolean));
  return { podman: podman!, runFlags: runFlags!, image: image![0]! };
}

const SETTINGS = podmanSettings();
const HAS_PODMAN = spawnSync('podman', ['--version']).status === 0;
const HAS_IMAGE = HAS_PODMAN && SETTINGS !== null && spawnSync(SETTINGS.podman[0]!, [...SETTINGS.podman.slice(1), 'image', 'exists', SETTINGS.image]).status === 0;
const RUN = HAS_IMAGE || REQUIRED;
if (!RUN) console.warn(`\nThe container image test is skipped: ${HAS_PODMAN ? `no image ${SETTINGS?.image} (build it with scripts/container/build-image.sh)` : 'podman is not installed'}.\n`);

function podman(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const [command, ...base] = SETTINGS!.podman;
  const result = spawnSync(command!, [...base, ...args], { encoding: 'utf8', timeout: COMMAND_TIMEOUT_MS });
  return { status: result.status, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
}

describe.runIf(RUN)('the container image', { timeout: 120_000 }, () => {
  const name = `tollgate-test-${process.pid}`;
  const adminKey = 'admin-key-for-the-container-test';
  let upstream: ScriptedUpstream;
  let configDir: string;
  let url: string;

  beforeAll(async () => {
    expect(HAS_IMAGE, `podman and the image ${SETTINGS?.image} are required (TOLLGATE_CONTAINER_TESTS=1)`).toBe(true);
    // On every interface: the container reaches this machine at host.containers.internal, not at its loopback.
    upstream = await startOpenAIUpstream({ host: '0.0.0.0', apiKey: 'sk-container-upstream' });
    configDir = mkdtempSync(join(tmpdir(), 'tollgate-container-'));
    writeFileSync(
      join(configDir, 'tollgate.yaml'),
      ['settings:', '  anonymous_access: any', 'routes:', '  chat-default:', '    targets: [{ model: openai/gpt-4o-mini, weight: 1 }]', ''].join('\n'),
    );
    // mkdtemp makes the folder private to root; the gateway's user (10001) must be able to read the file.
    chmodSync(configDir, 0o755);
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const started = podman(
      'run', '--detach', '--name', name, ...SETTINGS!.runFlags,
      '--read-only', '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges',
      '--publish', `127.0.0.1:${port}:8080`,
      '--volume', `${configDir}:/etc/tollgate:ro`,
      '--env', 'TOLLGATE_CONFIG=/etc/tollgate/tollgate.yaml',
      '--env', `TOLLGATE_ADMIN_KEY=${adminKey}`,
      '--env', 'OPENAI_API_KEY=sk-container-upstream',
      '--env', `OPENAI_BASE_URL=http://host.containers.internal:${upstream.port}/v1`,
      SETTINGS!.image,
    );
    expect(started.status, started.stderr).toBe(0);
    // Until /health answers (the image's own start-up: Node, LMDB, the price catalogue).
    const deadline = Date.now() + 60_000;
    for (;;) {
      const answer = await fetch(`${url}/health`).catch(() => null);
      if (answer?.ok) break;
      if (podman('inspect', name, '--format', '{{.State.Running}}').stdout.trim() !== 'true') throw new Error(`the container exited:\n${podman('logs', name).stderr}`);
      if (Date.now() > deadline) throw new Error(`the container did not become healthy:\n${podman('logs', name).stderr}`);
      await new Promise((done) => setTimeout(done, 250));
    }
    // vfs storage copies the whole image for a new container: creating one takes tens of seconds.
  }, 150_000);

  afterAll(async () => {
    if (SETTINGS && RUN) podman('rm', '--force', '--volumes', name);
    await upstream?.close();
    if (configDir) rmSync(configDir, { recursive: true, force: true });
  }, 90_000);

  it('answers /health and passes its own HEALTHCHECK (node fetch inside the image)', async () => {
    const health = (await (await fetch(`${url}/health`)).json()) as { status: string; version: string };
    expect(health.status).toBe('ok');
    const check = podman('healthcheck', 'run', name);
    expect(check.status, check.stdout + check.stderr).toBe(0);
  });

  it('serves a chat completion through a configured route to the upstream, with the key from the environment', async () => {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-default', messages: [{ role: 'user', content: 'Hello from the container test' }] }),
    });
    const text = await response.text();
    expect(response.status, text).toBe(200);
    expect(JSON.parse(text).model).toBe('chat-default');
    const call = upstream.calls.at(-1)!;
    expect(call.body.model).toBe('gpt-4o-mini');
    expect(call.headers.authorization).toBe('Bearer sk-container-upstream');
    // The admin key from the environment guards /api for a client outside the container.
    expect((await fetch(`${url}/api/config`)).status).toBe(401);
    expect((await fetch(`${url}/api/config`, { headers: { authorization: `Bearer ${adminKey}` } })).status).toBe(200);
  });

  it('runs as the unprivileged user and writes only to /data (and /tmp): the root filesystem is read-only', () => {
    const probe = podman('exec', name, 'sh', '-c', 'id -u; touch /app/probe 2>&1; touch /tmp/probe && echo tmp-ok; ls -n /data');
    expect(probe.status, probe.stderr).toBe(0);
    const [uid, ...rest] = probe.stdout.trim().split('\n');
    expect(uid).toBe('10001');
    expect(rest.join('\n')).toContain('Read-only file system');
    expect(rest).toContain('tmp-ok');
    // LMDB and the generated secret key, owned by that user in the fresh volume.
    expect(probe.stdout).toMatch(/-rw------- +1 10001 +10001 .* secret\.key/);
    expect(probe.stdout).toMatch(/10001 +10001 .* tollgate\.lmdb\n/);
  });

  it('stops on SIGTERM by draining, and exits 0', () => {
    const stopped = podman('stop', '--time', '20', name);
    expect(stopped.status, stopped.stderr).toBe(0);
    expect(podman('inspect', name, '--format', '{{.State.ExitCode}}').stdout.trim()).toBe('0');
    expect(podman('logs', name).stdout).toContain('shutdown complete');
  });
});
