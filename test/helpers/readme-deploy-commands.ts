import { accessSync, constants, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { allVendors } from '../../src/providers/registry.js';

/**
 * The README's deployment commands (docker/podman, the container scripts, helm, kubectl) cannot run in the test,
 * so each is checked against what it names: scripts exist and are executable, a build argument is one the
 * Dockerfile declares, an environment variable is one tollgate reads, a volume is the image's, a chart or
 * kustomization directory exists and a `--set` path is in the chart's values. Returns the problems and how many
 * commands were checked.
 */
export function checkDeployCommands(text: string, root: string): { checked: number; problems: string[] } {
  const problems: string[] = [];
  let checked = 0;
  const commands = text.replace(/\\\n/g, ' ').split('\n').map((line) => line.replace(/\s#.*$/, '').trim());
  for (const command of commands) {
    const words = command.split(/\s+/).filter(Boolean);
    const envPrefix = words.findIndex((word) => !/^[A-Z_][A-Z0-9_]*=/.test(word));
    const program = words[envPrefix] ?? '';
    for (const assignment of words.slice(0, Math.max(envPrefix, 0))) problems.push(...checkBuildArg(assignment.split('=')[0]!, root));
    if (program.startsWith('scripts/')) {
      checked++;
      try {
        accessSync(join(root, program), constants.X_OK);
      } catch {
        problems.push(`${program} is not an executable file`);
      }
    } else if ((program === 'docker' || program === 'podman') && (words[envPrefix + 1] === 'build' || words[envPrefix + 1] === 'run')) {
      checked++;
      problems.push(...(words[envPrefix + 1] === 'build' ? checkBuild(words, root) : checkRun(words, root)));
    } else if (program === 'helm') {
      checked++;
      problems.push(...checkHelm(words, root));
    } else if (program === 'kubectl') {
      checked++;
      const flag = words.findIndex((word) => word === '-k' || word === '--kustomize' || word === 'kustomize');
      const dir = flag < 0 ? undefined : words[flag + 1];
      if (!dir || !existsSync(join(root, dir, 'kustomization.yaml'))) problems.push(`kubectl: ${dir} has no kustomization.yaml`);
    }
  }
  return { checked, problems };
}

function dockerfileArgs(root: string): string[] {
  return [...readFileSync(join(root, 'Dockerfile'), 'utf8').matchAll(/^ARG\s+([A-Za-z_][A-Za-z0-9_]*)/gm)].map((match) => match[1]!);
}

function checkBuildArg(name: string, root: string): string[] {
  return dockerfileArgs(root).includes(name) ? [] : [`${name} is not an ARG of the Dockerfile`];
}

function checkBuild(words: string[], root: string): string[] {
  const problems: string[] = [];
  if (!existsSync(join(root, 'Dockerfile'))) problems.push('no Dockerfile');
  words.forEach((word, i) => {
    if (word === '--build-arg') problems.push(...checkBuildArg(words[i + 1]!.split('=')[0]!, root));
  });
  return problems;
}

/** Every name tollgate reads from the environment: the TOLLGATE_* names, PORT, HOST, LOG_LEVEL and each vendor's. */
function knownEnvironment(root: string): Set<string> {
  const names = new Set(['PORT', 'HOST', 'LOG_LEVEL']);
  for (const vendor of allVendors()) for (const name of [...vendor.keyEnv, ...vendor.baseUrlEnv, ...(vendor.regionEnv ?? [])]) names.add(name);
  const sources = readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'));
  for (const file of sources) for (const [name] of readFileSync(join(root, 'src', file), 'utf8').matchAll(/\bTOLLGATE_[A-Z_]+/g)) names.add(name);
  return names;
}

function checkRun(words: string[], root: string): string[] {
  const problems: string[] = [];
  const known = knownEnvironment(root);
  const volumes = [...readFileSync(join(root, 'Dockerfile'), 'utf8').matchAll(/^VOLUME\s+\["([^"]+)"\]/gm)].map((match) => match[1]!);
  words.forEach((word, i) => {
    const value = words[i + 1] ?? '';
    if (word === '-e' || word === '--env') {
      const name = value.split('=')[0]!;
      if (!known.has(name)) problems.push(`docker run: tollgate does not read ${name}`);
    }
    if ((word === '-v' || word === '--volume') && !volumes.includes(value.split(':')[1] ?? '')) problems.push(`docker run: ${value} is not the image's volume (${volumes.join(', ')})`);
  });
  return problems;
}

function checkHelm(words: string[], root: string): string[] {
  const problems: string[] = [];
  const chart = words.find((word) => word.startsWith('deploy/helm/'));
  if (!chart || !existsSync(join(root, chart, 'Chart.yaml'))) return [`helm: no chart at ${chart}`];
  const values = parseYaml(readFileSync(join(root, chart, 'values.yaml'), 'utf8')) as Record<string, unknown>;
  words.forEach((word, i) => {
    if (word !== '--set') return;
    const path = words[i + 1]!.split('=')[0]!.split('.');
    // A key under a map the values leave empty (providerKeys, labels) is the user's to name.
    let at: unknown = values;
    for (const key of path) {
      if (at !== null && typeof at === 'object' && Object.keys(at).length === 0) return;
      if (at === null || typeof at !== 'object' || !(key in at)) {
        problems.push(`helm --set ${path.join('.')}: not in ${chart}/values.yaml`);
        return;
      }
      at = (at as Record<string, unknown>)[key];
    }
  });
  return problems;
}
