// Endpoint syntax, checked before any channel is opened: grpc-js would turn `localhost` into port 443 and
// fail `http://host:7001` in name resolution, seconds later and with a message that names neither mistake.

/** Why `endpoint` is not a usable `host:port`, with what to write instead; null when it is fine. */
export function endpointProblem(endpoint: string): string | null {
  const e = endpoint.trim();
  if (e === '') return 'an empty endpoint (a stray comma?)';
  const scheme = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(e);
  if (scheme) {
    const rest = scheme[2]!.replace(/\/.*$/, '');
    return `"${e}": give host:port without a scheme or path, e.g. ${rest.includes(':') ? rest : `${rest || 'host'}:7001`}`;
  }
  const bracketed = /^\[([^\]]*)\](?::(.*))?$/.exec(e);
  let host: string;
  let port: string | undefined;
  if (bracketed) {
    host = bracketed[1]!;
    port = bracketed[2];
  } else if ((e.match(/:/g) ?? []).length > 1) {
    return `"${e}": an IPv6 address needs brackets and a port, e.g. [${e}]:7001`;
  } else {
    const i = e.lastIndexOf(':');
    host = i < 0 ? e : e.slice(0, i);
    port = i < 0 ? undefined : e.slice(i + 1);
  }
  if (host === '') return `"${e}": the host is missing, e.g. 127.0.0.1${port ? `:${port}` : ':7001'}`;
  if (port === undefined || port === '') return `"${e}" has no port: did you mean ${bracketed ? `[${host}]` : host}:7001?`;
  if (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535)
    return `"${e}": the port must be a number from 1 to 65535, got "${port}"`;
  if (/[\s/]/.test(host)) return `"${e}": "${host}" is not a host name or IP address`;
  return null;
}

/** Every problem of a list of endpoints, one line each (empty when all are fine). */
export function endpointProblems(endpoints: readonly string[]): string[] {
  return endpoints.map(endpointProblem).filter((p): p is string => p !== null);
}
