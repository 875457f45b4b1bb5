import { basename, dirname } from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1/Ingress';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { parseConfigText } from '../../src/config/load-file.js';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';

/**
 * Checks for tollgate's Kubernetes manifests, shared by the Helm chart's and the kustomize base's tests: each
 * object against the Kubernetes schema (kubernetes-models), and the wiring between them that no schema sees
 * (selectors, ports, probes, volumes, the secrets and config named). Each check returns the problems it found, so
 * a test can also prove that a broken manifest is caught.
 */

// Manifests are untyped YAML; the checks read them defensively (test files may use `any`).
export type K8sObject = Record<string, any>;

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim,
  'apps/v1/Deployment': Deployment,
  'networking.k8s.io/v1/Ingress': Ingress,
};

function describeObject(object: K8sObject): string {
  return `${object.kind}/${object.metadata?.name}`;
}

/**
 * The object against its Kubernetes schema. kubernetes-models has no Prometheus Operator types (and
 * @kubernetes-models/prometheus-operator is not installed), so a ServiceMonitor's shape is checked here by hand:
 * the fields Prometheus Operator requires and the types of those the manifests set.
 */
export function schemaProblems(object: K8sObject): string[] {
  const key = `${object.apiVersion}/${object.kind}`;
  if (key === 'monitoring.coreos.com/v1/ServiceMonitor') return serviceMonitorShapeProblems(object);
  const Model = MODELS[key];
  if (!Model) return [`${describeObject(object)}: no schema for ${key}`];
  if (typeof object.metadata?.name !== 'string' || object.metadata.name === '') return [`${key}: metadata.name is missing`];
  try {
    new Model(object as never).validate();
    return [];
  } catch (err) {
    return [`${describeObject(object)}: ${(err as Error).message}`];
  }
}

function serviceMonitorShapeProblems(object: K8sObject): string[] {
  const problems: string[] = [];
  const where = describeObject(object);
  if (typeof object.metadata?.name !== 'string') problems.push(`${where}: metadata.name is missing`);
  if (!isStringMap(object.spec?.selector?.matchLabels)) problems.push(`${where}: spec.selector.matchLabels must be a map of strings`);
  const endpoints: unknown = object.spec?.endpoints;
  if (!Array.isArray(endpoints) || endpoints.length === 0) problems.push(`${where}: spec.endpoints must be a non-empty list`);
  for (const endpoint of Array.isArray(endpoints) ? (endpoints as K8sObject[]) : []) {
    if (typeof endpoint.port !== 'string') problems.push(`${where}: an endpoint's port must be a Service port name`);
    if (endpoint.path !== undefined && typeof endpoint.path !== 'string') problems.push(`${where}: endpoint path must be a string`);
    if (endpoint.interval !== undefined && !/^(\d+(ms|s|m|h))+$/.test(String(endpoint.interval))) problems.push(`${where}: endpoint interval "${endpoint.interval}" is not a duration`);
    const token = endpoint.bearerTokenSecret as K8sObject | undefined;
    if (token !== undefined && (typeof token.name !== 'string' || typeof token.key !== 'string')) problems.push(`${where}: bearerTokenSecret needs name and key`);
  }
  return problems;
}

function isStringMap(value: unknown): value is Record<string, string> {
  return value !== null && typeof value === 'object' && Object.values(value).every((v) => typeof v === 'string');
}

function ofKind(objects: K8sObject[], kind: string): K8sObject[] {
  return objects.filter((object) => object.kind === kind);
}

function named(objects: K8sObject[], kind: string, name: string): K8sObject | undefined {
  return objects.find((object) => object.kind === kind && object.metadata?.name === name);
}

function labelsMatch(selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean {
  return selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([key, value]) => labels?.[key] === value);
}

export interface WiringOptions {
  /** Secrets and claims the operator makes outside these manifests (an existingSecret, an existingClaim). */
  externalSecrets?: string[];
  externalClaims?: string[];
  /** Data in an emptyDir is accepted (persistence turned off on purpose). */
  ephemeralDataAllowed?: boolean;
}

/** How the gateway's Deployment, Service, ConfigMap, Secret, PVC, Ingress and ServiceMonitor fit together. */
export function wiringProblems(objects: K8sObject[], options: WiringOptions = {}): string[] {
  const problems: string[] = [];
  const deployments = ofKind(objects, 'Deployment');
  if (deployments.length !== 1) return [`expected one Deployment, found ${deployments.length}`];
  const deployment = deployments[0]!;
  const spec = deployment.spec ?? {};
  const pod = spec.template?.spec ?? {};
  const podLabels = spec.template?.metadata?.labels as Record<string, string> | undefined;
  const container = (pod.containers ?? [])[0] as K8sObject | undefined;
  if (!container) return ['the Deployment has no container'];

  // LMDB has one writer: one pod, and the old one gone before the new one opens the data.
  if (spec.replicas !== 1) problems.push(`replicas is ${spec.replicas}, expected 1 (LMDB has one writer)`);
  if (spec.strategy?.type !== 'Recreate') problems.push(`strategy is ${spec.strategy?.type ?? 'RollingUpdate (default)'}, expected Recreate`);
  if (!labelsMatch(spec.selector?.matchLabels, podLabels)) problems.push("the Deployment's selector does not match its pod labels");

  const env = new Map<string, K8sObject>(((container.env ?? []) as K8sObject[]).map((variable) => [variable.name as string, variable]));
  const ports = (container.ports ?? []) as K8sObject[];
  const portNumber = (port: unknown): number | undefined => (typeof port === 'number' ? port : ports.find((p) => p.name === port)?.containerPort);
  const listening = Number(env.get('PORT')?.value ?? 8080);
  if (!ports.some((p) => p.containerPort === listening)) problems.push(`no container port is the gateway's PORT ${listening}`);

  for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe'] as const) {
    const check = container[probe] as K8sObject | undefined;
    if (!check) {
      if (probe !== 'startupProbe') problems.push(`no ${probe}`);
      continue;
    }
    if (check.httpGet?.path !== '/health') problems.push(`${probe} asks ${check.httpGet?.path ?? 'no HTTP path'}, not /health`);
    if (portNumber(check.httpGet?.port) !== listening) problems.push(`${probe} asks port ${check.httpGet?.port}, not the gateway's ${listening}`);
  }

  for (const service of ofKind(objects, 'Service')) {
    if (!labelsMatch(service.spec?.selector, podLabels)) problems.push(`${describeObject(service)}: its selector does not match the pod labels`);
    for (const port of (service.spec?.ports ?? []) as K8sObject[]) {
      if (portNumber(port.targetPort ?? port.port) !== listening) problems.push(`${describeObject(service)}: port ${port.name ?? port.port} targets ${port.targetPort}, not the gateway's ${listening}`);
    }
  }

  const volumes = new Map<string, K8sObject>(((pod.volumes ?? []) as K8sObject[]).map((volume) => [volume.name as string, volume]));
  const mounts = (container.volumeMounts ?? []) as K8sObject[];
  const volumeAt = (path: string): K8sObject | undefined => volumes.get(mounts.find((mount) => mount.mountPath === path)?.name);

  const dataDir = env.get('TOLLGATE_DATA_DIR')?.value as string | undefined;
  if (!dataDir) problems.push('TOLLGATE_DATA_DIR is not set');
  else {
    const data = volumeAt(dataDir);
    const claim = data?.persistentVolumeClaim?.claimName as string | undefined;
    if (!data) problems.push(`nothing is mounted at the data dir ${dataDir}`);
    else if (claim) {
      if (!named(objects, 'PersistentVolumeClaim', claim) && !options.externalClaims?.includes(claim)) problems.push(`the data volume's claim ${claim} does not exist`);
    } else if (!(data.emptyDir && options.ephemeralDataAllowed)) problems.push(`the data dir ${dataDir} is not on a PersistentVolumeClaim`);
  }

  const configPath = env.get('TOLLGATE_CONFIG')?.value as string | undefined;
  if (configPath) problems.push(...configProblems(objects, configPath, volumeAt(dirname(configPath)), podEnvironment(objects, container)));

  for (const source of (container.envFrom ?? []) as K8sObject[]) {
    const name = source.secretRef?.name as string | undefined;
    if (name && !named(objects, 'Secret', name) && !options.externalSecrets?.includes(name)) problems.push(`envFrom names Secret ${name}, which does not exist`);
  }
  for (const variable of env.values()) {
    const ref = variable.valueFrom?.secretKeyRef as K8sObject | undefined;
    if (ref && !named(objects, 'Secret', ref.name) && !options.externalSecrets?.includes(ref.name)) problems.push(`${variable.name} names Secret ${ref.name}, which does not exist`);
  }

  problems.push(...securityProblems(pod, container, volumeAt('/tmp')));
  if (!container.resources?.requests) problems.push('the container has no resource requests');

  for (const ingress of ofKind(objects, 'Ingress')) {
    for (const rule of (ingress.spec?.rules ?? []) as K8sObject[]) {
      for (const path of (rule.http?.paths ?? []) as K8sObject[]) {
        const backend = path.backend?.service as K8sObject | undefined;
        const service = backend ? named(objects, 'Service', backend.name) : undefined;
        const servicePorts = (service?.spec?.ports ?? []) as K8sObject[];
        if (!service) problems.push(`${describeObject(ingress)}: backend Service ${backend?.name} does not exist`);
        else if (!servicePorts.some((p) => p.name === backend?.port?.name || p.port === backend?.port?.number)) problems.push(`${describeObject(ingress)}: backend port is not a port of ${backend?.name}`);
      }
    }
  }

  for (const monitor of ofKind(objects, 'ServiceMonitor')) {
    const services = ofKind(objects, 'Service').filter((service) => labelsMatch(monitor.spec?.selector?.matchLabels, service.metadata?.labels));
    if (services.length === 0) problems.push(`${describeObject(monitor)}: selects no Service`);
    for (const endpoint of (monitor.spec?.endpoints ?? []) as K8sObject[]) {
      if (!services.some((service) => ((service.spec?.ports ?? []) as K8sObject[]).some((p) => p.name === endpoint.port))) problems.push(`${describeObject(monitor)}: port ${endpoint.port} is not a named port of the Service`);
      if ((endpoint.path ?? '/metrics') !== '/metrics') problems.push(`${describeObject(monitor)}: scrapes ${endpoint.path}, not /metrics`);
      const token = endpoint.bearerTokenSecret as K8sObject | undefined;
      if (token && !named(objects, 'Secret', token.name) && !options.externalSecrets?.includes(token.name)) problems.push(`${describeObject(monitor)}: bearer token Secret ${token.name} does not exist`);
    }
  }
  return problems;
}

/** The environment the gateway's process gets: the Secrets it loads (present here) and its own variables. */
function podEnvironment(objects: K8sObject[], container: K8sObject): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of (container.envFrom ?? []) as K8sObject[]) {
    const secret = source.secretRef?.name ? named(objects, 'Secret', source.secretRef.name) : undefined;
    for (const [key, value] of Object.entries((secret?.data ?? {}) as Record<string, string>)) env[key] = Buffer.from(value, 'base64').toString('utf8');
    Object.assign(env, secret?.stringData ?? {});
  }
  for (const variable of (container.env ?? []) as K8sObject[]) if (typeof variable.value === 'string') env[variable.name] = variable.value;
  return env;
}

/** The config file the gateway reads: mounted from a ConfigMap that has it, and a config the gateway accepts. */
function configProblems(objects: K8sObject[], configPath: string, volume: K8sObject | undefined, env: Record<string, string>): string[] {
  const mapName = volume?.configMap?.name as string | undefined;
  if (!mapName) return [`TOLLGATE_CONFIG is ${configPath}, but no ConfigMap is mounted at ${dirname(configPath)}`];
  const configMap = named(objects, 'ConfigMap', mapName);
  if (!configMap) return [`the config volume's ConfigMap ${mapName} does not exist`];
  const text = configMap.data?.[basename(configPath)] as string | undefined;
  if (text === undefined) return [`ConfigMap ${mapName} has no key ${basename(configPath)}`];
  try {
    const document = parseConfigText(text, `ConfigMap ${mapName}`);
    resolveRuntimeConfig({ api: {}, file: document }, env, 1);
    return [];
  } catch (err) {
    return [`ConfigMap ${mapName}: the gateway would refuse its config: ${(err as Error).message}`];
  }
}

/** Non-root, no privilege escalation, no capabilities, a read-only root with /tmp as the scratch space. */
function securityProblems(pod: K8sObject, container: K8sObject, tmp: K8sObject | undefined): string[] {
  const problems: string[] = [];
  const podContext = pod.securityContext ?? {};
  const context = container.securityContext ?? {};
  if (podContext.runAsNonRoot !== true && context.runAsNonRoot !== true) problems.push('runAsNonRoot is not set');
  const user = context.runAsUser ?? podContext.runAsUser;
  if (user !== undefined && !(Number.isInteger(user) && user > 0)) problems.push(`runAsUser ${user} is root or not a number`);
  if (context.readOnlyRootFilesystem !== true) problems.push('the root filesystem is not read-only');
  if (context.allowPrivilegeEscalation !== false) problems.push('privilege escalation is not turned off');
  if (!(context.capabilities?.drop ?? []).includes('ALL')) problems.push('capabilities are not all dropped');
  if (!tmp?.emptyDir) problems.push('no writable emptyDir at /tmp (the root filesystem is read-only)');
  return problems;
}
