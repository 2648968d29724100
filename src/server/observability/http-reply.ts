// Plain answers of the node's HTTP endpoint (metrics.ts, the dashboard): a text message or JSON, never
// cached (everything served there is live state), and never sniffed as another type by a browser.
import type { ServerResponse } from 'node:http';

const COMMON = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' } as const;

export function replyText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res
    .writeHead(status, { ...COMMON, 'content-type': 'text/plain; charset=utf-8', ...headers })
    .end(text.endsWith('\n') ? text : `${text}\n`);
}

export function replyJson(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { ...COMMON, 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
}

export function replyBody(res: ServerResponse, contentType: string, body: Buffer | string, headers: Record<string, string> = {}): void {
  res.writeHead(200, { ...COMMON, 'content-type': contentType, ...headers }).end(body);
}
