// The dashboard's routes on the node's HTTP endpoint (beside GET /metrics, metrics.ts): the page's files
// at / and the read-only JSON and event APIs under /api/. GET only: any other method on a known path is
// a 405 that says the dashboard is read-only; errors are plain text that names what is wrong.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DashboardAssets, DASHBOARD_CSP, DASHBOARD_FILES } from './dashboard-assets.js';
import {
  clusterView,
  electionsView,
  locksView,
  NotCurrentError,
  sessionsView,
  VIEW_PARAMETERS,
  type DashboardSources,
} from './dashboard-api.js';
import { DashboardEvents, EVENT_PARAMETERS, type EventStreamLimits, type EventStreamSources } from './dashboard-events.js';
import { BadQueryError, readQuery } from './dashboard-query.js';
import { replyBody, replyJson, replyText } from './http-reply.js';
import type { HttpRoutes } from './metrics.js';

type View = (src: DashboardSources, query: Map<string, string>) => Promise<object> | object;

const VIEWS: ReadonlyMap<string, { parameters: readonly string[]; view: View }> = new Map<
  string,
  { parameters: readonly string[]; view: View }
>([
  ['/api/cluster', { parameters: VIEW_PARAMETERS.cluster, view: (src) => clusterView(src) }],
  ['/api/charts', { parameters: VIEW_PARAMETERS.charts, view: (src) => src.charts() }],
  ['/api/locks', { parameters: VIEW_PARAMETERS.locks, view: locksView }],
  ['/api/sessions', { parameters: VIEW_PARAMETERS.sessions, view: sessionsView }],
  ['/api/elections', { parameters: VIEW_PARAMETERS.elections, view: electionsView }],
]);
const EVENTS_PATH = '/api/events';

export class DashboardRoutes implements HttpRoutes {
  readonly summary = `the dashboard at GET / and its APIs at GET ${[...VIEWS.keys(), EVENTS_PATH].join(', ')}`;
  readonly events: DashboardEvents;

  private readonly assets: DashboardAssets;

  constructor(
    private readonly src: DashboardSources & EventStreamSources,
    options: { assets?: DashboardAssets; eventLimits?: EventStreamLimits } = {},
  ) {
    this.assets = options.assets ?? new DashboardAssets();
    this.events = new DashboardEvents(src, options.eventLimits);
  }

  handle(req: IncomingMessage, res: ServerResponse, url: URL): boolean {
    const path = url.pathname;
    const view = VIEWS.get(path);
    if (view === undefined && path !== EVENTS_PATH && !DASHBOARD_FILES.has(path)) return false;
    if (req.method !== 'GET') {
      replyText(res, 405, `method ${req.method ?? '?'} not allowed: the dashboard is read-only; use GET ${path}`, { allow: 'GET' });
      return true;
    }
    try {
      if (view !== undefined) {
        const query = readQuery(url, view.parameters);
        Promise.resolve(view.view(this.src, query)).then(
          (body) => replyJson(res, body),
          (err: unknown) => this.fail(res, err),
        );
      } else if (path === EVENTS_PATH) {
        this.events.serve(req, res, readQuery(url, EVENT_PARAMETERS));
      } else {
        this.serveFile(res, path);
      }
    } catch (err) {
      this.fail(res, err);
    }
    return true;
  }

  private serveFile(res: ServerResponse, path: string): void {
    const file = this.assets.read(path);
    if (file instanceof Error) return replyText(res, 500, file.message);
    if (file === undefined) return replyText(res, 404, `not found: ${path}`);
    replyBody(
      res,
      file.type,
      file.body,
      file.type.startsWith('text/html') ? { 'content-security-policy': DASHBOARD_CSP, 'referrer-policy': 'no-referrer' } : {},
    );
  }

  private fail(res: ServerResponse, err: unknown): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (err instanceof BadQueryError) return replyText(res, 400, `bad request: ${err.message}`);
    if (err instanceof NotCurrentError) return replyText(res, 503, err.message);
    replyText(res, 500, `internal error: ${err instanceof Error ? err.message : String(err)}`);
  }
}
