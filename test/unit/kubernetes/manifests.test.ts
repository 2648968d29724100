// deploy/kubernetes/ (README "Kubernetes"): every manifest is valid against the Kubernetes OpenAPI schema,
// and the parts that must agree do — the ConfigMap's cluster.yaml with `leasehold serve`'s config loader and
// with the pods' DNS names, the probes with the health services the node registers, the ports with what
// the node binds. The rehearsal (test/integration/kubernetes-rehearsal.test.ts) runs what these describe.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { initialMembers, parseConfig, parseAddress } from '../../../src/config/index.js';
import {
  containerPort,
  deployment,
  expandEnvRefs,
  kustomizationResources,
  loadVariant,
  REPO,
  schemaProblems,
  VARIANTS,
  yamlFiles,
  type Manifest,
} from '../../kubernetes/manifests.js';

const HEALTH_READY_SERVICES = ['', 'leasehold.v1.Lock']; // SPEC "Health": SERVING only while the node serves lock calls
const HEALTH_LIVE_SERVICE = 'leasehold.v1.Cluster'; // SERVING while the process answers; no leader needed

describe('the schema check itself', () => {
  const statefulSet = (): Manifest => {
    const m = loadVariant('base').find((x) => x.kind === 'StatefulSet')!;
    return { ...m, object: structuredClone(m.object) };
  };
  it('refuses a wrong type, a missing required field and a field the schema does not define', () => {
    const wrongType = statefulSet();
    (wrongType.object['spec'] as Record<string, unknown>)['replicas'] = 'three';
    expect(schemaProblems(wrongType).join('\n')).toContain('data/spec/replicas must be integer');
    const missing = statefulSet();
    delete (missing.object['spec'] as Record<string, unknown>)['selector'];
    expect(schemaProblems(missing).join('\n')).toContain("must have required property 'selector'".replace(/'/g, ''));
    const typo = statefulSet();
    const probe = (typo.object as { spec: { template: { spec: { containers: { readinessProbe: { grpc: Record<string, unknown> } }[] } } } })
      .spec.template.spec.containers[0]!.readinessProbe.grpc;
    probe['sevice'] = probe['service'];
    delete probe['service'];
    expect(schemaProblems(typo)).toEqual([
      'base/statefulset.yaml StatefulSet/leasehold: unknown field spec.template.spec.containers.0.readinessProbe.grpc.sevice',
    ]);
    expect(schemaProblems({ ...statefulSet(), apiVersion: 'apps/v1beta1' })[0]).toContain('is not a kind these manifests may use');
  });
});

describe.each(VARIANTS)('deploy/kubernetes/%s', (variant) => {
  const d = deployment(variant);
  const sts = d.statefulSet.spec!;
  const pod = sts.template.spec!;
  const c = d.container;
  const grpcPort = containerPort(c, 'grpc');
  const metricsPort = containerPort(c, 'metrics');
  const config = parseConfig(d.clusterYaml, join(d.configMountPath, 'cluster.yaml'));
  const env = Object.fromEntries((c.env ?? []).filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));

  it('every object is valid against the Kubernetes OpenAPI schema, with no field it does not define', () => {
    const manifests = loadVariant(variant);
    expect(manifests.map((m) => m.kind).sort()).toEqual(['ConfigMap', 'PodDisruptionBudget', 'Service', 'Service', 'StatefulSet']);
    expect(manifests.flatMap(schemaProblems)).toEqual([]);
    // `kubectl apply -k` applies what the kustomization lists: every file, and nothing else.
    expect([...kustomizationResources(variant)].sort()).toEqual(yamlFiles(variant));
  });

  it("the ConfigMap's cluster.yaml is what `leasehold serve --config` accepts, for every pod the StatefulSet may run", () => {
    // serve runs `--id $(POD_NAME)` with POD_NAME = metadata.name: the pod's name is its node id.
    const podNameEnv = c.env!.find((e) => e.valueFrom?.fieldRef?.fieldPath === 'metadata.name')!;
    expect(c.command).toEqual(['node', 'dist/src/cli/main.js']);
    expect(c.args).toEqual(['serve', '--config', join(d.configMountPath, 'cluster.yaml'), '--id', `$(${podNameEnv.name})`]);
    const ids = config.nodes.map((n) => n.id);
    const replicas = sts.replicas!;
    expect(ids.length).toBeGreaterThanOrEqual(5); // room to grow 3 -> 5 without editing the ConfigMap
    ids.forEach((id, ordinal) => {
      expect(expandEnvRefs(c.args![4]!, { ...env, [podNameEnv.name]: `${d.statefulSet.metadata!.name}-${ordinal}` })).toBe(id);
    });
    // The initial voters are exactly the pods the StatefulSet starts with; the rest join when added.
    expect(initialMembers(config.nodes).map((n) => n.id)).toEqual(ids.slice(0, replicas));
    expect(replicas).toBe(3);
  });

  it("lists every member under its pod's stable DNS name on the headless Service, at the gRPC port it binds", () => {
    const peers = d.peerService.spec!;
    expect(peers.clusterIP).toBe('None');
    // No pod is ready before there is a leader, and no leader before the members can resolve each other.
    expect(peers.publishNotReadyAddresses).toBe(true);
    expect(sts.podManagementPolicy).toBe('Parallel');
    for (const n of config.nodes) {
      const address = parseAddress(n.address);
      if (typeof address === 'string') throw new Error(address);
      expect(`${address.host}:${address.port}`).toBe(`${n.id}.${d.peerService.metadata!.name}:${grpcPort}`);
      expect(n.listen).toBe(`0.0.0.0:${grpcPort}`);
      // The data dir is the volume from the claim template, as LEASEHOLD_DATA_DIR says.
      expect(n.dataDir).toBe(env['LEASEHOLD_DATA_DIR']);
    }
    const dataMount = c.volumeMounts!.find((v) => v.name === sts.volumeClaimTemplates![0]!.metadata!.name)!;
    expect(dataMount.mountPath).toBe(env['LEASEHOLD_DATA_DIR']);
    // Both Services select the pods and carry the gRPC port.
    for (const svc of [d.peerService, d.clientService]) {
      expect(svc.spec!.selector).toEqual(sts.selector.matchLabels);
      expect(svc.spec!.ports!.map((p) => [p.port, p.targetPort])).toEqual([[grpcPort, 'grpc']]);
    }
    expect(d.clientService.spec!.clusterIP).toBeUndefined(); // a normal Service: only ready pods get clients
    expect(sts.template.metadata!.labels).toMatchObject(sts.selector.matchLabels!);
  });

  it('readiness asks whether this member serves lock calls, liveness only whether the process answers — on the gRPC port', () => {
    const ready = c.readinessProbe!;
    const live = c.livenessProbe!;
    const startup = c.startupProbe!;
    if (variant === 'base') {
      // Kubernetes' native grpc probe, at the port the node serves gRPC on (never the metrics port).
      expect(ready.grpc?.port).toBe(grpcPort);
      expect(HEALTH_READY_SERVICES).toContain(ready.grpc?.service);
      expect(live.grpc).toEqual({ port: grpcPort, service: HEALTH_LIVE_SERVICE });
      expect(startup.grpc).toEqual({ port: grpcPort, service: HEALTH_LIVE_SERVICE });
    } else {
      // TLS: the native probe cannot present a certificate; `leasehold health` runs in the pod over TLS.
      const args = (cmd: string[] | undefined) => {
        expect(cmd?.slice(0, 3)).toEqual(['node', 'dist/src/cli/main.js', 'health']);
        const flag = (name: string) => (cmd!.includes(name) ? cmd![cmd!.indexOf(name) + 1] : undefined);
        expect(flag('--endpoint')).toBe(`localhost:${grpcPort}`);
        for (const f of ['--cacert', '--cert', '--key']) expect(flag(f)).toMatch(/^\/etc\/leasehold\/tls\//);
        return flag('--service') ?? '';
      };
      expect(HEALTH_READY_SERVICES).toContain(args(ready.exec?.command));
      expect(args(live.exec?.command)).toBe(HEALTH_LIVE_SERVICE);
      expect(args(startup.exec?.command)).toBe(HEALTH_LIVE_SERVICE);
    }
    // A liveness that failed during a partition would restart members that are fine: it must tolerate a
    // minute without an answer, and never ask the readiness question.
    expect((live.periodSeconds ?? 10) * (live.failureThreshold ?? 3)).toBeGreaterThanOrEqual(60);
  });

  it('metrics and the dashboard: the scraped port is the one the node serves them on', () => {
    const a = sts.template.metadata!.annotations!;
    expect(a['prometheus.io/scrape']).toBe('true');
    expect(a['prometheus.io/path']).toBe('/metrics');
    expect(Number(a['prometheus.io/port'])).toBe(metricsPort);
    expect(config.metrics.address).toBe(`0.0.0.0:${metricsPort}`);
    expect(metricsPort).not.toBe(grpcPort);
  });

  it('shutdown, disruption, placement, resources and the security context', () => {
    // SIGTERM: a leader hands off within two election timeouts, then drains (0.5 s) and closes its store.
    const handOffMs = 2 * 2 * config.raft.tickMs * config.raft.electionTicks;
    expect((pod.terminationGracePeriodSeconds ?? 30) * 1000).toBeGreaterThanOrEqual(10 * handOffMs);
    expect(d.pdb.spec!.maxUnavailable).toBe(1);
    expect(d.pdb.spec!.selector!.matchLabels).toEqual(sts.selector.matchLabels);
    expect(pod.topologySpreadConstraints!.map((t) => t.topologyKey)).toContain('kubernetes.io/hostname');
    expect(c.resources?.requests?.['memory']).toBeDefined();
    expect(c.resources?.limits?.['memory']).toBeDefined();
    expect(pod.securityContext!.runAsNonRoot).toBe(true);
    expect(pod.securityContext!.runAsUser).toBeGreaterThan(0);
    expect(c.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    // With a read-only root, everything the node writes is on a volume: its data dir, and /tmp.
    const mounts = c.volumeMounts!.filter((v) => !v.readOnly).map((v) => v.mountPath);
    expect(mounts.sort()).toEqual([env['LEASEHOLD_DATA_DIR'], '/tmp'].sort());
    expect(pod.enableServiceLinks).toBe(false); // no LEASEHOLD_* variables from the Service named leasehold
    // The image is this package's version: an upgrade is a new tag (README "Kubernetes: upgrade").
    const version = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
    expect(c.image).toBe(`leasehold:${version}`);
  });
});

describe('the TLS variant is the plaintext one plus TLS, nothing else', () => {
  const base = deployment('base');
  const tls = deployment('tls');
  it('TLS with client certificates and owner binding, the PEM files from the mounted Secret', () => {
    const config = parseConfig(tls.clusterYaml, join(tls.configMountPath, 'cluster.yaml'));
    expect(config.tls?.clientAuth).toBe('require');
    expect(config.auth.ownerBinding).toBe(true);
    const secret = tls.statefulSet.spec!.template.spec!.volumes!.find((v) => v.secret !== undefined)!;
    const mount = tls.container.volumeMounts!.find((v) => v.name === secret.name)!;
    expect(mount.readOnly).toBe(true);
    for (const path of [config.tls!.cert, config.tls!.key, config.tls!.ca]) expect(path.startsWith(`${mount.mountPath}/`)).toBe(true);
  });
  it('the Services, the budget, the members and the rest of the StatefulSet are the same', () => {
    expect(tls.peerService).toEqual(base.peerService);
    expect(tls.clientService).toEqual(base.clientService);
    expect(tls.pdb).toEqual(base.pdb);
    const withoutTls = (yaml: string) => {
      const doc = parseYaml(yaml) as Record<string, unknown>;
      delete doc['tls'];
      delete doc['auth'];
      return doc;
    };
    expect(withoutTls(tls.clusterYaml)).toEqual(withoutTls(base.clusterYaml));
    const plain = (d: typeof base) => {
      const s = structuredClone(d.statefulSet);
      const spec = s.spec!.template.spec!;
      const c = spec.containers[0]!;
      delete c.readinessProbe;
      delete c.livenessProbe;
      delete c.startupProbe;
      spec.volumes = spec.volumes!.filter((v) => v.secret === undefined);
      c.volumeMounts = c.volumeMounts!.filter((m) => m.name !== 'tls');
      return s;
    };
    expect(plain(tls)).toEqual(plain(base));
  });
});
