// Who may read the node's HTTP endpoint (metrics and the dashboard, metrics.ts): it follows the cluster's
// security (SPEC "The metrics address under TLS"). With `tls` it is HTTPS with the node's own certificate;
// where the gRPC port demands a client certificate (tls.clientAuth: require, which owner binding needs),
// so does every path here — the dashboard and its JSON views show every lock's owner and value — except
// GET /metrics when `metrics.openScrape` leaves it to scrapers (its series carry no keys, owners or values:
// README "Metrics").
//
// The handshake only *asks* for a certificate; the check is per request, so a refused browser or curl gets
// a 403 that says what is missing rather than a bare TLS alert, and an open /metrics can share the port.
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { TlsMaterial } from '../../transport/tls.js';

export interface EndpointSecurity {
  /** The node's certificate, key and CA: serve HTTPS. Null: plain HTTP (the cluster runs without TLS). */
  readonly tls: TlsMaterial | null;
  /** Every request must carry a client certificate signed by the cluster CA (but see openScrape). */
  readonly requireClientCertificate: boolean;
  /** GET /metrics is served without a client certificate. */
  readonly openScrape: boolean;
}

export const PLAIN_HTTP: EndpointSecurity = { tls: null, requireClientCertificate: false, openScrape: false };

/** Why `req` may not read `path`, or null when it may. */
export function accessRefusal(req: IncomingMessage, path: string, security: EndpointSecurity): string | null {
  if (!security.requireClientCertificate) return null;
  if (security.openScrape && path === '/metrics') return null;
  const socket = req.socket as Partial<TLSSocket>;
  if (socket.authorized === true) return null;
  const why = socket.getPeerCertificate?.()?.subject
    ? `its certificate was not accepted (${String(socket.authorizationError)})`
    : 'it has none';
  return (
    `a client certificate signed by the cluster CA is required here (tls.clientAuth: require), and ${why}` +
    (security.openScrape ? '; only GET /metrics is open without one (metrics.openScrape)' : '')
  );
}
