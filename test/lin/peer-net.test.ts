// The chaos run's peer links on loopback, without leasehold: a link i->j forwards to j, a cut one carries
// nothing, a restored one works again after a reconnect, a lossy one resets its connections, and the
// YAML line tells node i to dial its peers through its own links.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../integration/harness.js';
import { SimRng } from '../sim/rng.js';
import { PeerNet } from './peer-net.js';

let echo: Server;
let echoAddress = '';
let net: PeerNet;

beforeAll(async () => {
  echo = createServer((s) => s.pipe(s));
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', () => r()));
  echoAddress = `127.0.0.1:${(echo.address() as { port: number }).port}`;
  net = await PeerNet.create(['a', 'b', 'c'], new SimRng(1));
  net.pointAt(() => echoAddress);
});
afterAll(async () => {
  await net.close();
  await new Promise<void>((r) => echo.close(() => r()));
});

function linkAddress(from: string, to: string): string {
  const m = new RegExp(`${to}: "([^"]+)"`).exec(net.overridesYaml(from));
  if (!m) throw new Error(`no ${from}->${to} in ${net.overridesYaml(from)}`);
  return m[1]!;
}

/** Connects through a link and collects what comes back. */
async function through(from: string, to: string): Promise<{ socket: Socket; received: () => string; closed: () => boolean }> {
  const [host, port] = linkAddress(from, to).split(':');
  const socket = connect(Number(port), host!);
  let got = '';
  let closed = false;
  socket.on('data', (d: Buffer) => (got += d.toString()));
  socket.on('error', () => {});
  socket.on('close', () => (closed = true));
  await new Promise<void>((r) => socket.once('connect', () => r()));
  return { socket, received: () => got, closed: () => closed };
}

describe('PeerNet', () => {
  it("names one link per peer in each node's peerDialOverrides, never the node itself", () => {
    expect(net.overridesYaml('a')).toMatch(/^peerDialOverrides: \{ b: "127\.0\.0\.1:\d+", c: "127\.0\.0\.1:\d+" \}$/);
    expect(linkAddress('a', 'b')).not.toBe(linkAddress('b', 'a'));
  });

  it('forwards; a cut link (one direction only) carries nothing; restored, a new connection works', async () => {
    const c1 = await through('a', 'b');
    c1.socket.write('hello');
    await waitFor('the echo through a->b', () => c1.received() === 'hello', 3000, 10);
    net.cut([['a', 'b']]);
    c1.socket.write('lost');
    const other = await through('b', 'a'); // the reverse direction is a link of its own: still open
    other.socket.write('back');
    await waitFor('the echo through b->a', () => other.received() === 'back', 3000, 10);
    expect(c1.received()).toBe('hello');
    net.restore([['a', 'b']]);
    await waitFor('the cut connection to be reset (it lost bytes)', () => c1.closed(), 3000, 10);
    const c2 = await through('a', 'b');
    c2.socket.write('again');
    await waitFor('the echo through the restored link', () => c2.received() === 'again', 3000, 10);
    c2.socket.destroy();
    other.socket.destroy();
  });

  it('a lossy link resets its connections; healAll ends the loss', async () => {
    net.loss([['a', 'c']], 1);
    const c = await through('a', 'c');
    c.socket.write('x');
    await waitFor('the lossy connection to be reset', () => c.closed(), 3000, 10);
    expect(net.stats().lossResets).toBeGreaterThan(0);
    net.healAll();
    const ok = await through('a', 'c');
    ok.socket.write('y');
    await waitFor('the echo after healAll', () => ok.received() === 'y', 3000, 10);
    ok.socket.destroy();
  });
});
