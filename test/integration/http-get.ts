// One GET against the node's HTTP endpoint (metrics and dashboard), plain or HTTPS with the given PEM
// files, answering the status, body and the certificate the server presented; a refused connection rejects.
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { TLSSocket } from 'node:tls';

export interface Answer {
  status: number;
  body: string;
  /** CN of the certificate the server presented (HTTPS only). */
  serverCn?: string;
}

export function get(url: string, tls?: { ca: string; cert?: string; key?: string }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const read = (f?: string) => (f === undefined ? undefined : readFileSync(f));
    const opts = tls ? { ca: read(tls.ca), cert: read(tls.cert), key: read(tls.key), timeout: 3000 } : { timeout: 3000 };
    const req = (url.startsWith('https:') ? httpsRequest : httpRequest)(url, opts, (res) => {
      const chunks: Buffer[] = [];
      const cn = tls ? (res.socket as TLSSocket).getPeerCertificate().subject?.CN : undefined;
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), ...(cn ? { serverCn: String(cn) } : {}) }),
      );
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}
