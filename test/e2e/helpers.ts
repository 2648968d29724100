// Shared pieces of the end-to-end tests: a log-capturing logger, and child processes that talk JSON lines.
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { ClientLogger } from '../../src/client/index.js';

export const HOLDER_JS = resolve('build/test/e2e/fixtures/holder.js');
export const MAIN_JS = resolve('dist/src/cli/main.js');

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  obj: Record<string, unknown>;
}

/** A ClientLogger that keeps every line, so a test can prove what the client did on the wire. */
export function capturingLogger(): ClientLogger & { lines: LogLine[]; find: (msg: string) => LogLine[] } {
  const lines: LogLine[] = [];
  const at =
    (level: LogLine['level']) =>
    (obj: object, msg = '') =>
      void lines.push({ level, msg, obj: obj as Record<string, unknown> });
  return {
    lines,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    find: (msg) => lines.filter((l) => l.msg === msg),
  };
}

export type Message = Record<string, unknown> & { event: string };

/** A node child process speaking JSON lines on stdout; commands are lines on stdin. Killed by PID in stop(). */
export class JsonChild {
  readonly proc: ChildProcess;
  private readonly inbox: Message[] = [];
  private waiters: { event: string; resolve: (m: Message) => void }[] = [];
  readonly stderr: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(file: string, args: string[], env: NodeJS.ProcessEnv = {}) {
    this.proc = spawn(process.execPath, [file, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    this.exited = new Promise((r) => this.proc.once('exit', (code, signal) => r({ code, signal })));
    createInterface({ input: this.proc.stdout! }).on('line', (line) => {
      let msg: Message;
      try {
        msg = JSON.parse(line) as Message;
      } catch {
        return;
      }
      const i = this.waiters.findIndex((w) => w.event === msg.event);
      if (i >= 0) this.waiters.splice(i, 1)[0]!.resolve(msg);
      else this.inbox.push(msg);
    });
    createInterface({ input: this.proc.stderr! }).on('line', (line) => this.stderr.push(line));
  }

  get pid(): number {
    return this.proc.pid!;
  }

  /** The next message with this event (already received or still to come). */
  next(event: string, timeoutMs = 15_000): Promise<Message> {
    const i = this.inbox.findIndex((m) => m.event === event);
    if (i >= 0) return Promise.resolve(this.inbox.splice(i, 1)[0]!);
    return new Promise((resolve, reject) => {
      const t = setTimeout(
        () => reject(new Error(`child ${this.pid}: no "${event}" within ${timeoutMs} ms; stderr: ${this.stderr.join('\n')}`)),
        timeoutMs,
      );
      this.waiters.push({
        event,
        resolve: (m) => {
          clearTimeout(t);
          resolve(m);
        },
      });
    });
  }

  /** Every message received and not yet taken, with this event. */
  received(event: string): Message[] {
    return this.inbox.filter((m) => m.event === event);
  }

  send(line: string): void {
    this.proc.stdin!.write(`${line}\n`);
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    this.proc.kill('SIGCONT'); // in case a test left it stopped
    this.proc.kill('SIGKILL');
    await this.exited;
  }
}
