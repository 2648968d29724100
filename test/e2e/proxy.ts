// A fault-injecting TCP proxy between a client and one leasehold node, for end-to-end tests.
//
// Modes (switchable at any time; they apply to every connection through the proxy):
//   pass            forward both ways, optionally with a per-direction delay (order kept within a connection);
//   block           a black hole: accept connections, forward nothing, answer nothing. Bytes that were
//                   swallowed leave the HTTP/2 connection corrupt, so leaving `block` resets those connections;
//   hold            keep every byte (both ways) and deliver it all, in order, when the mode changes back to
//                   `pass`: requests that arrive late and out of order with newer ones;
//   drop-responses  forward client->server, swallow server->client; as soon as the server has sent one
//                   answer (a DATA frame with a message — a unary response, or one answer on a Lock/Stream —
//                   or a trailers-only error), reset the client's connection (TCP RST). The request reached the server and was served; only
//                   the answer is lost — the client sees UNAVAILABLE and cannot know the outcome. The mode
//                   arms per connection when a request (HEADERS frame) goes up, so the HTTP/2 handshake of
//                   a fresh connection still completes.
// Loss (`resetChance`, any mode but block): each chunk forwarded in pass mode kills its connection with that
// probability (TCP RST both ways) instead of being delivered. A byte stream cannot lose a chunk and stay valid
// HTTP/2, so a lossy link here is one that keeps dropping connections: what is in flight is lost, and the
// peers reconnect and retransmit (the chaos run's lossy peer links).
//
// Determinism of "drop the response of THIS call": gRPC multiplexes every call of a channel over one HTTP/2
// connection, and HPACK header compression makes frames of one stream undroppable without corrupting the
// others, so the proxy drops at connection granularity: everything the server sends while the mode is on is
// swallowed, and the connection dies at the first complete response. To make that response the one of the
// call under test, the test gives the call a connection of its own: a dedicated LockClient (its own channel)
// pointed at this proxy, with no other call in flight on it (renewals are ttl/3 away, or not started yet).
// The proxy scans the server->client byte stream frame by frame from the connection's first byte (the server
// speaks plain HTTP/2 frames from the start: its preface is a SETTINGS frame), so it always knows where a
// frame begins, whatever the mode was when bytes arrived.
import { createServer, connect, type Server, type Socket } from 'node:net';

export type ProxyMode = 'pass' | 'block' | 'hold' | 'drop-responses';

interface Chunk {
  data: Buffer;
  releaseAt: number;
  /** gRPC calls that begin in this chunk (request HEADERS frames). */
  requests: number;
}

/** One direction of one connection: ordered delivery with an optional delay, and a hold switch. */
class Pipe {
  private readonly queue: Chunk[] = [];
  private timer: NodeJS.Timeout | null = null;
  private lastReleaseAt = 0;
  held = false;

  constructor(
    private readonly out: Socket,
    private readonly delayMs: () => number,
    /** Called with the number of calls that began in each chunk as it is written on. */
    private readonly onWritten: (requests: number) => void = () => {},
  ) {}

  push(data: Buffer, requests = 0): void {
    // Never overtake an earlier chunk, even if the delay was lowered meanwhile.
    const releaseAt = Math.max(Date.now() + this.delayMs(), this.lastReleaseAt);
    this.lastReleaseAt = releaseAt;
    this.queue.push({ data, releaseAt, requests });
    this.drain();
  }

  drain(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.held) return;
    const now = Date.now();
    while (this.queue.length > 0 && this.queue[0]!.releaseAt <= now) {
      const c = this.queue.shift()!;
      if (!this.out.destroyed) {
        this.out.write(c.data);
        this.onWritten(c.requests);
      }
    }
    if (this.queue.length > 0) this.timer = setTimeout(() => this.drain(), this.queue[0]!.releaseAt - now);
  }

  release(): void {
    this.held = false;
    const now = Date.now();
    for (const c of this.queue) c.releaseAt = Math.min(c.releaseAt, now);
    this.lastReleaseAt = Math.min(this.lastReleaseAt, now);
    this.drain();
  }

  clear(): void {
    this.queue.length = 0;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

/**
 * Finds HTTP/2 frame boundaries in one direction of a connection. Counts the calls that start (client->
 * server: a HEADERS frame opening a stream, and every further message on a stream already carrying one —
 * the calls of a Lock/Stream) and the answers that complete (server->client: a DATA frame carrying a
 * message, or a HEADERS with END_STREAM on a stream that sent none — a trailers-only error). A gRPC message
 * of ours fits one DATA frame (16 KiB), so one DATA frame is one message.
 */
class FrameScanner {
  private header = Buffer.alloc(0);
  private payloadLeft = 0;
  /** Streams that carried a DATA frame with a message so far. */
  private readonly dataStreams = new Set<number>();

  /** @param prefaceBytes the client's connection preface ("PRI * HTTP/2.0...", 24 bytes) precedes its frames. */
  constructor(private prefaceBytes = 0) {}

  scan(chunk: Buffer): { headers: number; ends: number } {
    let ends = 0;
    let headers = 0;
    let i = 0;
    if (this.prefaceBytes > 0) {
      const take = Math.min(this.prefaceBytes, chunk.length);
      this.prefaceBytes -= take;
      i = take;
    }
    while (i < chunk.length) {
      if (this.payloadLeft > 0) {
        const take = Math.min(this.payloadLeft, chunk.length - i);
        this.payloadLeft -= take;
        i += take;
        continue;
      }
      const need = 9 - this.header.length;
      const take = Math.min(need, chunk.length - i);
      this.header = Buffer.concat([this.header, chunk.subarray(i, i + take)]);
      i += take;
      if (this.header.length < 9) break;
      const length = this.header.readUIntBE(0, 3);
      const type = this.header[3]!;
      const flags = this.header[4]!;
      const streamId = this.header.readUInt32BE(5) & 0x7fffffff;
      this.header = Buffer.alloc(0);
      this.payloadLeft = length;
      if (streamId === 0) continue;
      // (The payload may still be arriving; by then the sender has committed to the message.)
      if (type === 0 && length > 0) {
        if (this.dataStreams.has(streamId)) headers++; // a further call on a stream (Lock/Stream)
        this.dataStreams.add(streamId);
        ends++; // an answer (server->client)
      } else if (type === 1) {
        headers++; // a stream opens: a call starts (client->server)
        if ((flags & 0x1) === 0x1 && !this.dataStreams.has(streamId)) ends++; // trailers-only answer
      }
    }
    return { headers, ends };
  }
}

interface Connection {
  client: Socket;
  server: Socket;
  up: Pipe;
  down: Pipe;
  /** Frames client->server and server->client. */
  upScanner: FrameScanner;
  downScanner: FrameScanner;
  /** drop-responses: a request went up while the mode was on, so every server byte from now on is swallowed. */
  dropArmed: boolean;
  /** Bytes were swallowed: the HTTP/2 session is corrupt and must not be resumed. */
  tainted: boolean;
}

export class FaultProxy {
  private modeValue: ProxyMode = 'pass';
  private oneShot: { resolve: () => void } | null = null;
  private readonly conns = new Set<Connection>();
  /** Delay (ms) added to each direction in pass mode. */
  delay = { up: 0, down: 0 };
  /** Probability that a forwarded chunk resets its connection instead (see the header); 0 = no loss. */
  resetChance = 0;
  /** Where the loss draws come from (a seeded stream in chaos runs). */
  random: () => number = Math.random;
  /** requestsUp: gRPC calls (request HEADERS frames) written on to the server — after any delay or hold. */
  readonly stats = { connections: 0, droppedResponses: 0, swallowedChunks: 0, requestsUp: 0, lossResets: 0 };

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private target: { host: string; port: number },
  ) {}

  static async start(target: string): Promise<FaultProxy> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const port = (server.address() as { port: number }).port;
    const proxy = new FaultProxy(server, port, parseTarget(target));
    server.on('connection', (socket) => proxy.accept(socket));
    return proxy;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get mode(): ProxyMode {
    return this.modeValue;
  }

  /** Point NEW connections at another node (existing ones stay where they are). */
  retarget(target: string): void {
    this.target = parseTarget(target);
  }

  setMode(mode: ProxyMode): void {
    const previous = this.modeValue;
    this.modeValue = mode;
    if (previous === 'hold' && mode !== 'hold') {
      for (const c of this.conns) {
        c.up.release();
        c.down.release();
      }
    }
    if (mode === 'hold') {
      for (const c of this.conns) c.up.held = c.down.held = true;
    }
    if (previous === 'block' && mode !== 'block') {
      for (const c of [...this.conns]) if (c.tainted) this.reset(c);
    }
  }

  /** Drop the next complete response (then reset that connection and go back to pass). Resolves once dropped. */
  dropNextResponse(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.oneShot = { resolve };
      this.setMode('drop-responses');
    });
  }

  /** Reset every open connection (clients reconnect). */
  resetAll(): void {
    for (const c of [...this.conns]) this.reset(c);
  }

  async close(): Promise<void> {
    this.resetAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    this.stats.connections++;
    const server = connect(this.target.port, this.target.host);
    client.setNoDelay(true);
    server.setNoDelay(true);
    const conn: Connection = {
      client,
      server,
      up: new Pipe(
        server,
        () => this.delay.up,
        (requests) => (this.stats.requestsUp += requests),
      ),
      down: new Pipe(client, () => this.delay.down),
      upScanner: new FrameScanner(24),
      downScanner: new FrameScanner(),
      dropArmed: false,
      tainted: false,
    };
    if (this.modeValue === 'hold') conn.up.held = conn.down.held = true;
    this.conns.add(conn);
    const end = () => this.reset(conn);
    client.on('error', end);
    server.on('error', end);
    client.on('close', end);
    server.on('close', end);

    client.on('data', (data: Buffer) => {
      const { headers } = conn.upScanner.scan(data);
      if (this.modeValue === 'block') {
        conn.tainted = true;
        this.stats.swallowedChunks++;
        return;
      }
      // Arm on a request, not on the connection: the HTTP/2 handshake (SETTINGS both ways) must get through,
      // or the client never sends the call at all.
      if (this.modeValue === 'drop-responses' && headers > 0) conn.dropArmed = true;
      if (this.lost()) return this.reset(conn);
      conn.up.push(data, headers);
    });
    server.on('data', (data: Buffer) => {
      const { ends } = conn.downScanner.scan(data);
      if (this.modeValue === 'drop-responses' && conn.dropArmed) {
        conn.tainted = true;
        this.stats.swallowedChunks++;
        if (ends > 0) {
          this.stats.droppedResponses += ends;
          this.reset(conn);
          const shot = this.oneShot;
          if (shot) {
            this.oneShot = null;
            this.modeValue = 'pass';
            shot.resolve();
          }
        }
        return;
      }
      if (this.modeValue === 'block') {
        conn.tainted = true;
        this.stats.swallowedChunks++;
        return;
      }
      if (this.lost()) return this.reset(conn);
      conn.down.push(data);
    });
  }

  private lost(): boolean {
    const lost = this.resetChance > 0 && this.random() < this.resetChance;
    if (lost) this.stats.lossResets++;
    return lost;
  }

  private reset(c: Connection): void {
    if (!this.conns.delete(c)) return;
    c.up.clear();
    c.down.clear();
    // RST, not FIN: the client must see the connection die, not a clean close it could wait on.
    if (!c.client.destroyed) c.client.resetAndDestroy();
    if (!c.server.destroyed) c.server.destroy();
  }
}

function parseTarget(target: string): { host: string; port: number } {
  const i = target.lastIndexOf(':');
  return { host: target.slice(0, i), port: Number(target.slice(i + 1)) };
}
