// The node's HTTP endpoint under the cluster's security (metrics.ts serveMetrics, http-access.ts), in
// process on loopback with certificates made by openssl for this run: plain HTTP without TLS; with TLS
// HTTPS with the node's certificate; with a required client certificate every path refuses a request
// without one (403 naming what is missing) except GET /metrics when openScrape leaves it to scrapers.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Counter, Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveMetrics, type HttpRoutes, type MetricsServer } from '../../../src/server/observability/metrics.js';
import type { EndpointSecurity } from '../../../src/server/observability/http-access.js';
import { freePorts } from '../../integration/harness.js';
import { makePki, type TestPki } from '../../integration/certs.js';
import { get } from '../../integration/http-get.js';

/** A stand-in dashboard: one JSON view. */
const routes: HttpRoutes = {
  summary: 'the dashboard',
  handle(_req, res, url) {
    if (url.pathname !== '/api/cluster') return false;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"node":"n1"}');
    return true;
  },
};

let pki: TestPki;
let dir = '';
const servers: MetricsServer[] = [];

async function serve(security: (m: { ca: Buffer; cert: Buffer; key: Buffer }) => EndpointSecurity): Promise<number> {
  const [port] = await freePorts(1);
  const registry = new Registry();
  new Counter({ name: 'leasehold_test_total', help: 'x', registers: [registry] });
  const material = { ca: readFileSync(pki.ca), cert: readFileSync(pki.node('n1').cert), key: readFileSync(pki.node('n1').key) };
  servers.push(await serveMetrics(`127.0.0.1:${port!}`, registry, routes, security(material)));
  return port!;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-http-pki-'));
  pki = makePki(dir, ['n1'], ['ops-admin']);
});
afterAll(() => {
  for (const s of servers) s.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the metrics and dashboard endpoint follows the cluster security', () => {
  it('with a required client certificate: plaintext and cert-less requests are refused, /metrics too unless openScrape', async () => {
    const port = await serve((tls) => ({ tls, requireClientCertificate: true, openScrape: false }));
    const base = `https://127.0.0.1:${port}`;
    await expect(get(`http://127.0.0.1:${port}/api/cluster`)).rejects.toThrow(/socket hang up|ECONNRESET/);
    for (const path of ['/api/cluster', '/metrics', '/', '/nowhere']) {
      const bare = await get(`${base}${path}`, { ca: pki.ca });
      expect([path, bare.status]).toEqual([path, 403]);
      expect(bare.body).toBe(
        'forbidden: a client certificate signed by the cluster CA is required here (tls.clientAuth: require), and it has none\n',
      );
    }
    const foreign = await get(`${base}/api/cluster`, { ca: pki.ca, cert: pki.foreign.cert, key: pki.foreign.key });
    expect(foreign.status).toBe(403);
    expect(foreign.body).toMatch(/and its certificate was not accepted \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\)\n$/);
    const admin = { ca: pki.ca, cert: pki.client('ops-admin').cert, key: pki.client('ops-admin').key };
    const served = await get(`${base}/api/cluster`, admin);
    expect([served.status, served.body, served.serverCn]).toEqual([200, '{"node":"n1"}', 'n1']);
    expect((await get(`${base}/metrics`, admin)).body).toMatch(/^# HELP leasehold_test_total/);
  });

  it('openScrape: GET /metrics without a certificate, the dashboard still refused', async () => {
    const port = await serve((tls) => ({ tls, requireClientCertificate: true, openScrape: true }));
    const base = `https://127.0.0.1:${port}`;
    const scrape = await get(`${base}/metrics`, { ca: pki.ca });
    expect(scrape.status).toBe(200);
    expect(scrape.body).toMatch(/^# HELP leasehold_test_total/);
    const view = await get(`${base}/api/cluster`, { ca: pki.ca });
    expect(view.status).toBe(403);
    expect(view.body).toMatch(/and it has none; only GET \/metrics is open without one \(metrics\.openScrape\)/);
  });

  it('TLS without a required client certificate: HTTPS with the node certificate, open; no TLS: plain HTTP', async () => {
    const tlsPort = await serve((tls) => ({ tls, requireClientCertificate: false, openScrape: false }));
    const open = await get(`https://127.0.0.1:${tlsPort}/api/cluster`, { ca: pki.ca });
    expect([open.status, open.serverCn]).toEqual([200, 'n1']);
    const plainPort = await serve(() => ({ tls: null, requireClientCertificate: false, openScrape: false }));
    expect((await get(`http://127.0.0.1:${plainPort}/api/cluster`)).status).toBe(200);
  });
});
