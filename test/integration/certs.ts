// Test certificates, made fresh for each run with openssl (nothing is committed): a cluster CA, one
// certificate per node (CN and DNS SAN = node id, IP SAN 127.0.0.1, usable as server and client), client
// certificates by name, and a second, unrelated CA with a client of its own.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CertFiles {
  cert: string;
  key: string;
}

export interface TestPki {
  dir: string;
  ca: string;
  node(id: string): CertFiles;
  client(name: string): CertFiles;
  /** A client signed by another CA: valid-looking, not trusted by the cluster. */
  foreign: CertFiles & { ca: string };
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function makeCa(dir: string, name: string): { cert: string; key: string } {
  const key = join(dir, `${name}-key.pem`);
  const cert = join(dir, `${name}.pem`);
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
    ],
    dir,
  );
  return { cert, key };
}

function issue(dir: string, ca: { cert: string; key: string }, name: string, sans: string[]): CertFiles {
  const key = join(dir, `${name}-key.pem`);
  const csr = join(dir, `${name}.csr`);
  const cert = join(dir, `${name}.pem`);
  const ext = join(dir, `${name}.ext`);
  writeFileSync(
    ext,
    `basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n${sans.length ? `subjectAltName=${sans.join(',')}\n` : ''}`,
  );
  openssl(
    ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', csr, '-subj', `/CN=${name}`],
    dir,
  );
  openssl(
    ['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-out', cert, '-days', '2', '-extfile', ext],
    dir,
  );
  return { cert, key };
}

export function makePki(dir: string, nodeIds: string[], clients: string[]): TestPki {
  mkdirSync(dir, { recursive: true });
  const ca = makeCa(dir, 'ca');
  const nodes = new Map(nodeIds.map((id) => [id, issue(dir, ca, id, [`DNS:${id}`, 'IP:127.0.0.1'])]));
  const people = new Map(clients.map((c) => [c, issue(dir, ca, c, [])]));
  const otherCa = makeCa(dir, 'other-ca');
  const foreign = { ...issue(dir, otherCa, 'stranger', []), ca: otherCa.cert };
  return {
    dir,
    ca: ca.cert,
    node: (id) => nodes.get(id)!,
    client: (name) => people.get(name)!,
    foreign,
  };
}
