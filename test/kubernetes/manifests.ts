// The Kubernetes manifests under deploy/kubernetes/, read as kubectl reads them (YAML 1.1, several documents
// a file), checked against the Kubernetes OpenAPI schema (kubernetes-models, no network), and the facts
// the unit checks and the rehearsal (test/integration/kubernetes-rehearsal.test.ts) take from them.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Service } from 'kubernetes-models/v1/Service';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import type { IStatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IService } from 'kubernetes-models/v1/Service';
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import type { IContainer } from 'kubernetes-models/v1/Container';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const DEPLOY_DIR = join(REPO, 'deploy/kubernetes');
/** The plaintext set and the TLS variant. */
export const VARIANTS = ['base', 'tls'] as const;
export type Variant = (typeof VARIANTS)[number];

interface ModelClass {
  new (data: object): { validate(): void };
  prototype: { validate(): void };
}

/** The kinds the manifests may use, by apiVersion/kind. Anything else is an error (a typo in either). */
const MODELS: Record<string, ModelClass> = {
  'apps/v1/StatefulSet': StatefulSet as unknown as ModelClass,
  'v1/ConfigMap': ConfigMap as unknown as ModelClass,
  'v1/Service': Service as unknown as ModelClass,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget as unknown as ModelClass,
};

export interface Manifest {
  file: string;
  apiVersion: string;
  kind: string;
  name: string;
  object: Record<string, unknown>;
}

/** Every object of every .yaml file of a variant (its kustomization.yaml aside), in file order. */
export function loadVariant(variant: Variant): Manifest[] {
  const dir = join(DEPLOY_DIR, variant);
  const out: Manifest[] = [];
  for (const file of yamlFiles(variant)) {
    const text = readFileSync(join(dir, file), 'utf8');
    for (const doc of parseAllDocuments(text, { version: '1.1' })) {
      if (doc.errors.length > 0) throw new Error(`${variant}/${file}: ${doc.errors[0]!.message}`);
      const object = doc.toJS() as Record<string, unknown> | null;
      if (object === null) continue;
      const metadata = (object['metadata'] ?? {}) as { name?: string };
      out.push({
        file: `${variant}/${file}`,
        apiVersion: String(object['apiVersion']),
        kind: String(object['kind']),
        name: String(metadata.name),
        object,
      });
    }
  }
  return out;
}

export function yamlFiles(variant: Variant): string[] {
  return readdirSync(join(DEPLOY_DIR, variant))
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .sort();
}

/** The files a variant's kustomization.yaml lists (`kubectl apply -k` applies exactly these). */
export function kustomizationResources(variant: Variant): string[] {
  const k = parseYaml(readFileSync(join(DEPLOY_DIR, variant, 'kustomization.yaml'), 'utf8'), { version: '1.1' }) as {
    resources: string[];
  };
  return k.resources;
}

/**
 * The problems of one object against the Kubernetes OpenAPI schema: types, enums, required fields (the
 * model's own validator), and every field the schema does not define — what `kubectl apply` refuses with
 * its default strict field validation, and what the OpenAPI schema alone lets through (it does not close its
 * objects). An unknown field is found by watching which keys the schema's validator reads: it reads every
 * property the schema defines, and enumerates the keys of free-form maps (labels, resources.limits, data).
 */
export function schemaProblems(m: Manifest): string[] {
  const Model = MODELS[`${m.apiVersion}/${m.kind}`];
  if (!Model) return [`${m.file}: ${m.apiVersion} ${m.kind} is not a kind these manifests may use (${Object.keys(MODELS).join(', ')})`];
  const read = new WeakMap<object, Set<string> | 'every key'>();
  const note = (target: object, key: string | symbol) => {
    if (typeof key !== 'string') return;
    const keys = read.get(target);
    if (keys === 'every key') return;
    if (keys) keys.add(key);
    else read.set(target, new Set([key]));
  };
  const watched = (value: unknown): unknown =>
    value === null || typeof value !== 'object'
      ? value
      : new Proxy(value, {
          get: (t, k, r) => (note(t, k), watched(Reflect.get(t, k, r))),
          has: (t, k) => (note(t, k), Reflect.has(t, k)),
          ownKeys: (t) => (read.set(t, 'every key'), Reflect.ownKeys(t)),
        });
  const model = new Model(m.object);
  try {
    Model.prototype.validate.call(watched(model));
  } catch (err) {
    return [`${m.file} ${m.kind}/${m.name}: ${(err as Error).message}`];
  }
  const unknown: string[] = [];
  const walk = (value: unknown, path: string) => {
    if (value === null || typeof value !== 'object') return;
    const keys = read.get(value);
    for (const key of Object.keys(value)) {
      const at = `${path}.${key}`;
      if (!Array.isArray(value) && keys !== 'every key' && !keys?.has(key))
        unknown.push(`${m.file} ${m.kind}/${m.name}: unknown field ${at.slice(1)}`);
      walk((value as Record<string, unknown>)[key], at);
    }
  };
  walk(model, '');
  return unknown;
}

/** The objects of a variant the tests reason about, each found by kind (and, for Services, by role). */
export interface Deployment {
  statefulSet: IStatefulSet;
  configMap: IConfigMap;
  /** The StatefulSet's serviceName: the headless Service that names each pod. */
  peerService: IService;
  /** The other Service: what clients dial. */
  clientService: IService;
  pdb: IPodDisruptionBudget;
  container: IContainer;
  /** cluster.yaml as the ConfigMap holds it. */
  clusterYaml: string;
  /** Where the ConfigMap is mounted, and so the directory of the config file `serve --config` names. */
  configMountPath: string;
}

export function deployment(variant: Variant): Deployment {
  const all = loadVariant(variant);
  const one = <T>(kind: string, pick: (m: Manifest) => boolean = () => true): T => {
    const found = all.filter((m) => m.kind === kind && pick(m));
    if (found.length !== 1) throw new Error(`${variant}: expected one ${kind}, found ${found.length}`);
    return found[0]!.object as T;
  };
  const statefulSet = one<IStatefulSet>('StatefulSet');
  const peerName = statefulSet.spec!.serviceName;
  const containers = statefulSet.spec!.template.spec!.containers;
  if (containers.length !== 1) throw new Error(`${variant}: expected one container, found ${containers.length}`);
  const container = containers[0]!;
  const configVolume = statefulSet.spec!.template.spec!.volumes?.find((v) => v.configMap !== undefined);
  const configMap = one<IConfigMap>('ConfigMap', (m) => m.name === configVolume?.configMap?.name);
  const mount = container.volumeMounts?.find((v) => v.name === configVolume?.name);
  if (!mount) throw new Error(`${variant}: the ConfigMap's volume is not mounted`);
  const clusterYaml = configMap.data?.['cluster.yaml'];
  if (clusterYaml === undefined) throw new Error(`${variant}: the ConfigMap has no cluster.yaml`);
  return {
    statefulSet,
    configMap,
    peerService: one<IService>('Service', (m) => m.name === peerName),
    clientService: one<IService>('Service', (m) => m.name !== peerName),
    pdb: one<IPodDisruptionBudget>('PodDisruptionBudget'),
    container,
    clusterYaml,
    configMountPath: mount.mountPath,
  };
}

/** The containerPort of the named port. */
export function containerPort(container: IContainer, name: string): number {
  const port = container.ports?.find((p) => p.name === name);
  if (!port) throw new Error(`the container has no port named ${name}`);
  return port.containerPort;
}

/** Kubernetes' $(VAR) expansion of a container's command and args from its environment: `$$` is a
 *  literal `$`, and a reference to a variable that is not defined stays as written. */
export function expandEnvRefs(arg: string, env: Readonly<Record<string, string>>): string {
  return arg.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, name: string | undefined) =>
    name === undefined ? '$' : (env[name] ?? all),
  );
}
