// The leasehold dashboard page: reads this node's JSON APIs and follows its event stream (/api/events).
// Plain browser JavaScript, no build step and no dependency. Lock keys, owners and values are user data:
// they only ever enter the page as text nodes or attribute values (textContent, setAttribute), never as
// markup, so a key like <img src=x onerror=...> shows as those characters.
(() => {
  'use strict';

  const LOCKS_PER_PAGE = 50;
  const CLUSTER_EVERY_MS = 2000; // Raft state (role, term, lag) is not in the watch feed: poll it
  const CHARTS_EVERY_MS = 2000; // the node samples its metrics every 2 s (dashboard-charts.ts)
  const SESSIONS_EVERY_MS = 5000; // opening a session without holds makes no watch event
  const REFRESH_DEBOUNCE_MS = 200; // a burst of events re-reads the tables once
  const MAX_LOGGED_EVENTS = 50;
  const RETRY_MIN_MS = 1000;
  const RETRY_MAX_MS = 10000;

  const $ = (id) => document.getElementById(id);

  /** An element with text children only: strings become text nodes, never markup. */
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value !== null && value !== undefined) e.setAttribute(name, String(value));
    }
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c === null || c === undefined ? '' : String(c)));
    return e;
  }

  const state = {
    prefix: '',
    after: '', // the page being shown starts after this key
    next: null,
    lastIndex: 0, // the highest index seen on the stream or read by a page
    source: null,
    retryMs: RETRY_MIN_MS,
    refreshTimer: null,
  };

  async function getJson(path) {
    const res = await fetch(path, { cache: 'no-store', headers: { accept: 'application/json' } });
    if (!res.ok) throw new Error(`${res.status} ${(await res.text()).trim()}`);
    return res.json();
  }

  function showError(id, err) {
    const p = $(id);
    p.hidden = err === null;
    p.textContent = err === null ? '' : String(err.message || err);
  }

  function fill(tbody, rows) {
    tbody.replaceChildren(...rows);
  }

  // --- times ---------------------------------------------------------------------------------------

  /** A countdown cell: its deadline is local (now + the TTL the node reported), so clocks need not agree. */
  function ttlCell(ttlMs) {
    const td = el('td', { class: 'ttl', 'data-deadline': String(performance.now() + ttlMs) });
    renderTtl(td);
    return td;
  }

  function renderTtl(td) {
    const left = Number(td.getAttribute('data-deadline')) - performance.now();
    td.textContent = left > 0 ? formatMs(left) : 'expiring';
    td.classList.toggle('low', left < 2000);
  }

  function formatMs(ms) {
    if (ms < 10000) return `${(ms / 1000).toFixed(1)} s`;
    if (ms < 120000) return `${Math.round(ms / 1000)} s`;
    if (ms < 7200000) return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
    return `${(ms / 3600000).toFixed(1)} h`;
  }

  const localTime = (iso) => (iso ? new Date(iso).toLocaleTimeString() : '');

  function valueCell(holder) {
    if (holder.value === null) return el('td', { class: 'muted' }, '—');
    if (holder.value_encoding === 'base64')
      return el('td', { class: 'value', title: 'not UTF-8 text: base64' }, el('span', { class: 'tag' }, 'base64'), ' ', holder.value);
    return el('td', { class: 'value' }, holder.value);
  }

  // --- cluster -------------------------------------------------------------------------------------

  async function refreshCluster() {
    try {
      const c = await getJson('api/cluster');
      const n = c.node;
      $('node-line').textContent = `node ${n.id} · ${n.role} · term ${n.term}`;
      $('cluster-summary').replaceChildren(
        el('span', { class: `health ${n.serving ? 'ok' : 'bad'}`, id: 'health' }, n.serving ? 'healthy' : 'not serving'),
        ` (${n.health}) · leader `,
        el('strong', { id: 'leader' }, n.leader === null ? 'none' : n.leader),
        ` · term ${n.term} · commit ${n.commit_index} · applied ${n.applied_index} (${n.commit_index - n.applied_index} behind) · cluster ${c.cluster_id} · level ${n.cluster_level}/${n.build_level}`,
      );
      $('cluster-view').textContent = c.view;
      fill(
        $('members').tBodies[0],
        c.members.map((m) =>
          el(
            'tr',
            { 'data-member': m.id, 'data-role': m.role, class: m.self ? 'self' : null },
            el('td', {}, m.id, m.self ? ' (this node)' : ''),
            el('td', {}, m.address),
            el('td', { class: `role ${m.role}` }, m.role),
            el('td', {}, m.match_index === null ? '—' : m.match_index),
            el('td', { class: m.lag > 0 ? 'lagging' : null }, m.lag === null ? '—' : m.lag),
            el('td', {}, m.progress === null ? '—' : m.progress),
            el('td', { class: 'link' }, m.link === null ? '—' : m.link),
          ),
        ),
      );
      showError('cluster-error', null);
    } catch (err) {
      showError('cluster-error', err);
    }
  }

  // --- charts --------------------------------------------------------------------------------------
  // Inline SVG drawn here from /api/charts (the node's own metrics, sampled every few seconds): no chart
  // library, no inline style (the page's CSP allows none); colours come from classes in dashboard.css.

  const SVG_NS = 'http://www.w3.org/2000/svg';
  const CHART = { w: 320, h: 120, left: 38, right: 6, top: 6, bottom: 16 };
  const SERIES_CLASSES = 6;

  function svgEl(tag, attrs, ...children) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [name, value] of Object.entries(attrs || {})) e.setAttribute(name, String(value));
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }

  function formatValue(v) {
    if (v === null || v === undefined) return '—';
    if (Number.isInteger(v) && Math.abs(v) < 1000) return String(v);
    if (Math.abs(v) < 10) return v.toFixed(2);
    if (Math.abs(v) < 1000) return v.toFixed(0);
    return `${(v / 1000).toFixed(1)}k`;
  }

  const formatSpan = (ms) => (ms < 120000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60000)} min`);

  /** A round upper bound for the y axis: 1, 2 or 5 times a power of ten. */
  function niceMax(v) {
    if (!(v > 0)) return 1;
    const p = 10 ** Math.floor(Math.log10(v));
    return [1, 2, 5, 10].map((m) => m * p).find((m) => m >= v);
  }

  function drawChart(c, windowMs, everyMs) {
    const { w, h, left, right, top, bottom } = CHART;
    const plotW = w - left - right;
    const plotH = h - top - bottom;
    const end = c.times_ms.length ? c.times_ms[c.times_ms.length - 1] : 0;
    // The x axis spans the samples there are (a node up for a minute fills the width), at most the window.
    const spanMs = Math.min(windowMs, Math.max(10 * everyMs, c.times_ms.length ? end - c.times_ms[0] : 0));
    const x = (t) => left + plotW * (1 - (end - t) / spanMs);
    let max = 0;
    let points = 0;
    for (const s of c.series)
      for (const v of s.values)
        if (v !== null) {
          points++;
          max = Math.max(max, v);
        }
    const yMax = niceMax(max);
    const y = (v) => top + plotH * (1 - v / yMax);
    const svg = svgEl('svg', {
      viewBox: `0 0 ${w} ${h}`,
      role: 'img',
      'aria-label': c.title,
      'data-chart': c.id,
      'data-points': points,
      'data-max': max,
      'data-series': c.series.length,
    });
    svg.append(
      svgEl('line', { class: 'axis', x1: left, y1: top + plotH, x2: w - right, y2: top + plotH }),
      svgEl('line', { class: 'axis', x1: left, y1: top, x2: left, y2: top + plotH }),
      svgEl('text', { class: 'tick', x: left - 3, y: top + 8, 'text-anchor': 'end' }, formatValue(yMax)),
      svgEl('text', { class: 'tick', x: left - 3, y: top + plotH, 'text-anchor': 'end' }, '0'),
      svgEl('text', { class: 'tick', x: left, y: h - 3 }, `−${formatSpan(spanMs)}`),
      svgEl('text', { class: 'tick', x: w - right, y: h - 3, 'text-anchor': 'end' }, 'now'),
    );
    // Half a sample interval wide on each side, less a gap.
    const barW = Math.max(1, ((plotW * everyMs) / spanMs) * 0.3);
    c.series.forEach((s, i) => {
      const cls = `s${i % SERIES_CLASSES}`;
      if (c.style === 'bars') {
        s.values.forEach((v, k) => {
          if (v === null || v <= 0) return;
          const x0 = x(c.times_ms[k]);
          svg.append(svgEl('rect', { class: cls, x: x0 - barW, y: y(v), width: barW * 2, height: top + plotH - y(v) }));
        });
        return;
      }
      // A line through each run of known values; a value alone is a dot (a gap is an interval with no data).
      let run = [];
      const flush = () => {
        if (run.length === 1) svg.append(svgEl('circle', { class: cls, cx: run[0][0], cy: run[0][1], r: 2 }));
        else if (run.length > 1) svg.append(svgEl('polyline', { class: cls, points: run.map((p) => p.join(',')).join(' ') }));
        run = [];
      };
      s.values.forEach((v, k) => {
        if (v === null) return flush();
        run.push([x(c.times_ms[k]).toFixed(1), y(v).toFixed(1)]);
      });
      flush();
    });
    const legend = el(
      'ul',
      { class: 'legend' },
      ...c.series.map((s, i) => {
        // Bars are counts per interval: their legend is the total shown; a line's is its latest value.
        const known = s.values.filter((v) => v !== null);
        const said =
          c.style === 'bars'
            ? `${formatValue(known.reduce((a, v) => a + v, 0))} ${c.unit} in the last ${formatSpan(spanMs)}`
            : `${formatValue(known.length ? known[known.length - 1] : null)} ${c.unit}`;
        return el('li', { class: `s${i % SERIES_CLASSES}` }, el('span', { class: 'swatch' }), `${s.name}: ${said}`);
      }),
    );
    const body =
      c.error !== null
        ? [el('p', { class: 'error' }, c.error)]
        : c.series.length === 0
          ? [svg, el('p', { class: 'muted' }, 'no data yet')]
          : [svg, legend];
    return el(
      'figure',
      { class: 'chart', id: `chart-${c.id}`, 'data-chart': c.id },
      el('figcaption', {}, `${c.title} (${c.unit})`),
      ...body,
    );
  }

  async function refreshCharts() {
    try {
      const view = await getJson('api/charts');
      $('charts-window').textContent =
        `· sampled every ${view.sample_every_ms / 1000} s by this node, the last ${Math.round(view.window_ms / 60000)} min`;
      $('chart-grid').replaceChildren(...view.charts.map((c) => drawChart(c, view.window_ms, view.sample_every_ms)));
      showError('charts-error', null);
    } catch (err) {
      showError('charts-error', err);
    }
  }

  // --- locks ---------------------------------------------------------------------------------------

  async function refreshLocks() {
    const q = new URLSearchParams({ prefix: state.prefix, limit: String(LOCKS_PER_PAGE) });
    if (state.after !== '') q.set('after', state.after);
    try {
      const page = await getJson(`api/locks?${q}`);
      state.lastIndex = Math.max(state.lastIndex, page.index);
      state.next = page.next;
      const rows = [];
      for (const lock of page.locks) {
        const holders = lock.holders.length ? lock.holders : [null];
        holders.forEach((h, i) => {
          const first = i === 0;
          rows.push(
            el(
              'tr',
              {
                'data-key': lock.key,
                'data-state': h === null ? 'free' : 'held',
                'data-owner': h === null ? null : h.owner,
                'data-token': h === null ? null : h.token,
              },
              el('td', { class: 'key' }, first ? lock.key : ''),
              h === null ? el('td', { class: 'muted' }, 'free') : el('td', { class: 'owner' }, h.shared ? `${h.owner} (shared)` : h.owner),
              el('td', { class: 'token' }, h === null ? '' : h.token),
              h === null ? el('td', {}, '') : ttlCell(h.ttl_ms),
              el('td', {}, h === null ? '' : localTime(h.expires_at)),
              el('td', {}, h === null || h.session_id === '0' ? '' : h.session_id),
              h === null ? el('td', {}, '') : valueCell(h),
              el('td', { class: 'waiters' }, first ? lock.waiters : ''),
              el('td', {}, first ? lock.last_token : ''),
            ),
          );
        });
      }
      fill($('locks-table').tBodies[0], rows);
      $('locks-empty').hidden = rows.length > 0;
      $('locks-read').textContent = `read at index ${page.index}`;
      $('locks-next').disabled = page.next === null;
      $('locks-first').disabled = state.after === '';
      showError('locks-error', null);
      return page.index;
    } catch (err) {
      showError('locks-error', err);
      throw err;
    }
  }

  // --- sessions and elections ----------------------------------------------------------------------

  async function refreshSessions() {
    try {
      const page = await getJson('api/sessions?limit=100');
      fill(
        $('sessions-table').tBodies[0],
        page.sessions.map((s) =>
          el(
            'tr',
            { 'data-session': s.id },
            el('td', {}, s.id),
            el('td', { class: 'owner' }, s.owner),
            el('td', {}, s.holds),
            ttlCell(s.ttl_ms),
            el('td', {}, localTime(s.expires_at)),
            el('td', {}, s.live ? 'live' : 'ending'),
          ),
        ),
      );
      $('sessions-empty').hidden = page.sessions.length > 0;
      $('sessions-more').hidden = page.next === null;
      showError('sessions-error', null);
    } catch (err) {
      showError('sessions-error', err);
    }
  }

  async function refreshElections() {
    try {
      const page = await getJson('api/elections?limit=100');
      fill(
        $('elections-table').tBodies[0],
        page.elections.map((e) => {
          const l = e.leader;
          return el(
            'tr',
            { 'data-election': e.name, 'data-leader': l === null ? null : l.owner },
            el('td', {}, e.name),
            l === null ? el('td', { class: 'muted' }, 'no leader') : el('td', { class: 'owner' }, l.owner),
            el('td', { class: 'token' }, l === null ? '' : l.token),
            l === null ? el('td', {}, '') : valueCell(l),
            el('td', {}, l === null || l.session_id === '0' ? '' : l.session_id),
            el('td', {}, e.candidates_waiting),
          );
        }),
      );
      $('elections-empty').hidden = page.elections.length > 0;
      $('elections-more').hidden = page.next === null;
      showError('elections-error', null);
    } catch (err) {
      showError('elections-error', err);
    }
  }

  /** Re-reads the lock tables once after a burst of events. */
  function scheduleRefresh() {
    if (state.refreshTimer !== null) return;
    state.refreshTimer = setTimeout(() => {
      state.refreshTimer = null;
      refreshLocks().catch(() => {});
      refreshSessions();
      refreshElections();
      refreshCluster(); // commit and applied index moved with the event
    }, REFRESH_DEBOUNCE_MS);
  }

  // --- live updates --------------------------------------------------------------------------------

  function setLive(s, why) {
    const live = $('live');
    live.setAttribute('data-state', s);
    live.textContent = s;
    $('events-status').textContent = why || '';
  }

  function logEvent(e) {
    const log = $('event-log');
    const value = e.value === null ? '' : e.value_encoding === 'base64' ? ` value (base64) ${e.value}` : ` value ${e.value}`;
    log.prepend(
      el(
        'li',
        { 'data-kind': e.kind },
        el('span', { class: `kind ${e.kind}` }, e.kind),
        ` #${e.index} `,
        el('span', { class: 'key' }, e.key),
        ` owner ${e.owner}`,
        e.token !== '0' ? ` token ${e.token}` : '',
        e.session_id !== '0' ? ` session ${e.session_id}` : '',
        value,
      ),
    );
    while (log.children.length > MAX_LOGGED_EVENTS) log.lastElementChild.remove();
  }

  /** Follows the event stream from `afterIndex`: nothing after it is missed. */
  function connect(afterIndex) {
    setLive('connecting');
    const source = new EventSource(`api/events?renewals=1&after_index=${afterIndex}`);
    state.source = source;
    source.onopen = () => {
      state.retryMs = RETRY_MIN_MS;
      setLive('live', `following every change after index ${Math.max(afterIndex, state.lastIndex)}`);
    };
    source.onmessage = (m) => {
      const e = JSON.parse(m.data);
      state.lastIndex = Math.max(state.lastIndex, e.index);
      logEvent(e);
      scheduleRefresh();
    };
    source.addEventListener('progress', (m) => {
      state.lastIndex = Math.max(state.lastIndex, JSON.parse(m.data).index);
    });
    // The node ended the stream (this tab fell behind, a snapshot was installed, the node stops): the
    // browser reconnects by itself with Last-Event-ID; re-read the tables for what the gap may hide.
    source.addEventListener('end', (m) => {
      setLive('disconnected', JSON.parse(m.data).message);
      scheduleRefresh();
    });
    source.onerror = () => {
      if (state.source !== source) return;
      if (source.readyState === EventSource.CLOSED) {
        // Refused (the node is down, has no quorum, or has too many streams): start again from fresh tables.
        source.close();
        state.source = null;
        setLive('disconnected', `reconnecting in ${Math.round(state.retryMs / 1000)} s`);
        setTimeout(restart, state.retryMs);
        state.retryMs = Math.min(RETRY_MAX_MS, state.retryMs * 2);
      } else {
        setLive('disconnected', 'reconnecting…');
      }
    };
  }

  /** Reads every table, then follows the stream from the index the locks were read at. */
  async function restart() {
    refreshCluster();
    refreshCharts();
    refreshSessions();
    refreshElections();
    let index;
    try {
      index = await refreshLocks();
    } catch {
      setLive('disconnected', `the node did not answer; retrying in ${Math.round(state.retryMs / 1000)} s`);
      setTimeout(restart, state.retryMs);
      state.retryMs = Math.min(RETRY_MAX_MS, state.retryMs * 2);
      return;
    }
    connect(Math.max(index, state.lastIndex));
  }

  // --- controls ------------------------------------------------------------------------------------

  $('lock-filter').addEventListener('submit', (ev) => {
    ev.preventDefault();
    state.prefix = $('prefix').value;
    state.after = '';
    refreshLocks().catch(() => {});
  });
  $('locks-next').addEventListener('click', () => {
    if (state.next === null) return;
    state.after = state.next;
    refreshLocks().catch(() => {});
  });
  $('locks-first').addEventListener('click', () => {
    state.after = '';
    refreshLocks().catch(() => {});
  });

  setInterval(() => document.querySelectorAll('td.ttl').forEach(renderTtl), 250);
  setInterval(refreshCluster, CLUSTER_EVERY_MS);
  setInterval(refreshCharts, CHARTS_EVERY_MS);
  setInterval(refreshSessions, SESSIONS_EVERY_MS);
  restart();
})();
