// raftlock dashboard: plain JavaScript, no library, no build step. It only reads.
//
// Data sources, all on the node that served this page (same origin):
//   GET /v1/overview   locks with TTL left, age and their first waiters in order, who waits
//                      for whom (by the deadlock detector's rules) and its recent refusals,
//                      lease counts, every member's indexes (every 2 s, and shortly after
//                      each streamed change)
//   GET /v1/events     lock changes as Server-Sent Events, read with fetch() so that the
//                      ACL token can travel in the Authorization header (EventSource
//                      cannot set headers, and a token must never be put in a URL)
//   GET /v1/history/N  a lock's history, when its row is clicked (then kept live from the
//                      stream)
//   GET /metrics       counters and the acquire latency histogram (every 2 s)
//
// Everything that comes from the cluster (lock names, owners) is put into the page with
// textContent, never as HTML.
'use strict';

const TOKEN_KEY = 'raftlock.acl-token';
const REFRESH_MS = 2000;
const CHART_POINTS = 60;
const ACQUIRE_ROUTE = 'PUT /v1/locks/{name...}';
const QUEUE_SHOWN = 5; // waiters listed per lock (the count says how many wait in all)

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || '',
  prefix: '',
  locks: new Map(), // name -> row data
  gone: new Map(), // name -> index of the entry that freed it (newer than the last overview)
  clusterTime: null, // {ms, at}: the node's cluster time and performance.now() when read
  waits: [], // the wait-for edges of the locks with waiters, by lock
  waitsTruncated: false,
  refusals: [],
  selected: null,
  history: [],
  historyError: null,
  lastEventId: null,
  streamAbort: null,
  refreshTimer: null,
  metricsPrev: null,
  series: { grants: [], handovers: [], p99: [], renews: [] },
  needToken: false,
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// ---- API access ------------------------------------------------------------------------

function headers(extra) {
  const h = Object.assign({}, extra || {});
  if (state.token) h['Authorization'] = 'Bearer ' + state.token;
  return h;
}

class AuthError extends Error {}

async function getJSON(path) {
  const resp = await fetch(path, { headers: headers({ Accept: 'application/json' }), cache: 'no-store' });
  if (resp.status === 401 || resp.status === 403) {
    await resp.body?.cancel();
    throw new AuthError(resp.status === 401 ? 'a token with read rights is needed' : 'the token may not read this');
  }
  const body = await resp.json().catch(() => null);
  if (!resp.ok) {
    const msg = body && body.error ? body.error.code + ': ' + body.error.message : 'HTTP ' + resp.status;
    throw new Error(msg);
  }
  return body;
}

function lockPath(name) {
  return name.split('/').map(encodeURIComponent).join('/');
}

// ---- token box -------------------------------------------------------------------------

function askToken(reason) {
  state.needToken = true;
  $('token-reason').textContent = 'ACLs are on: ' + reason + '. Paste the token\'s secret ID. It is kept in this tab only (sessionStorage) and sent as "Authorization: Bearer", never in a URL.';
  $('token-box').classList.remove('hidden');
  $('token-input').focus();
}

function setToken(t) {
  state.token = t;
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
  state.needToken = false;
  $('token-box').classList.add('hidden');
  $('token-input').value = '';
  restartStream();
  refresh();
}

function setupToken() {
  $('token-button').addEventListener('click', () => $('token-box').classList.toggle('hidden'));
  $('token-close').addEventListener('click', () => $('token-box').classList.add('hidden'));
  $('token-save').addEventListener('click', () => setToken($('token-input').value.trim()));
  $('token-clear').addEventListener('click', () => setToken(''));
  $('token-input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter') setToken($('token-input').value.trim());
  });
}

// ---- formatting ------------------------------------------------------------------------

function clusterTimeLabel(ms) {
  if (ms == null || ms < 0) return '–';
  const h = Math.floor(ms / 3600000);
  const m = Math.floor(ms / 60000) % 60;
  const s = Math.floor(ms / 1000) % 60;
  const milli = ms % 1000;
  return 't+' + h + ':' + String(m).padStart(2, '0') + ':' + String(s).padStart(2, '0') + '.' + String(milli).padStart(3, '0');
}

function duration(ms) {
  if (ms == null || !isFinite(ms)) return '–';
  if (ms < 0) ms = 0;
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
  if (ms < 3600000) return Math.floor(ms / 60000) + ' min ' + Math.floor((ms % 60000) / 1000) + ' s';
  return (ms / 3600000).toFixed(1) + ' h';
}

// nowCluster estimates the node's cluster time now from the last reading (it advances
// with real time while the cluster has a leader).
function nowCluster() {
  if (!state.clusterTime) return null;
  return state.clusterTime.ms + (performance.now() - state.clusterTime.at);
}

// ---- overview: cluster, leases, locks --------------------------------------------------

function scheduleRefresh(delay) {
  clearTimeout(state.refreshTimer);
  state.refreshTimer = setTimeout(refresh, delay);
}

async function refresh() {
  clearTimeout(state.refreshTimer);
  try {
    const q = '?queue=' + QUEUE_SHOWN + '&include=waits_for' + (state.prefix ? '&prefix=' + encodeURIComponent(state.prefix) : '');
    const o = await getJSON('/v1/overview' + q);
    applyOverview(o);
    $('cluster-summary').textContent = '';
  } catch (e) {
    if (e instanceof AuthError) askToken(e.message);
    else $('cluster-summary').textContent = '(' + e.message + ')';
  }
  state.refreshTimer = setTimeout(refresh, REFRESH_MS);
}

function applyOverview(o) {
  $('self').textContent = o.node_id;
  state.clusterTime = { ms: o.cluster_time_ms, at: performance.now() };
  renderNodes(o.nodes);
  // With ACLs on, only an admin token sees the cluster-wide lease counts.
  $('leases').textContent = o.leases.withheld ? '\u2014' : o.leases.count;
  $('leases-soon').textContent = o.leases.withheld ? '\u2014' : o.leases.expiring_soon;
  $('leases-soon').className = o.leases.expiring_soon > 0 ? 'warn' : '';
  $('leases-soon-ms').textContent = '(within ' + duration(o.leases.soon_ms) + ')';
  // Rows changed by the stream after this reading was taken keep their newer state.
  const fresh = new Map();
  for (const l of o.locks) {
    const have = state.locks.get(l.name);
    if (have && have.modify_index > l.modify_index) {
      fresh.set(l.name, have);
      continue;
    }
    if ((state.gone.get(l.name) || 0) > l.modify_index) continue; // freed since, by the stream
    fresh.set(l.name, {
      name: l.name, owner: l.owner || '', token: l.token, mode: l.mode || '', waiters: l.waiters, queue: l.queue || [],
      modify_index: l.modify_index, fingerprint: l.lease_fingerprint || '',
      deadline: o.cluster_time_ms + l.ttl_left_ms, granted: l.granted_ms ?? null, seen: have ? have.seen : null,
      // Version 3: when a maximum hold ends the grant, and until when a lock delay keeps
      // the lock from every waiter (both on cluster time; absent when none runs).
      holdEnd: l.max_hold_remaining_ms ? o.cluster_time_ms + l.max_hold_remaining_ms : null,
      delayUntil: l.lock_delay_remaining_ms ? o.cluster_time_ms + l.lock_delay_remaining_ms : null,
    });
  }
  for (const [name, have] of state.locks) {
    if (!fresh.has(name) && have.modify_index > o.applied_index) fresh.set(name, have);
  }
  state.locks = fresh;
  for (const [name, index] of state.gone) if (index <= o.applied_index) state.gone.delete(name);
  $('locks-note').textContent = o.truncated ? '(the first ' + o.locks.length + ' only; narrow the prefix)' : '';
  renderLocks();
  state.waits = o.waits_for || [];
  state.waitsTruncated = !!o.waits_for_truncated;
  state.refusals = o.refusals || [];
  renderWaits();
}

function renderNodes(nodes) {
  const tbody = $('nodes').querySelector('tbody');
  tbody.replaceChildren();
  let leader = null;
  let term = 0;
  let commit = 0;
  for (const n of nodes) {
    if (n.leader) leader = n.id;
    if (n.reachable) {
      term = Math.max(term, n.term);
      commit = Math.max(commit, n.commit_index);
    }
  }
  $('leader').textContent = leader || 'none (election)';
  $('leader').className = leader ? 'leader' : 'warn';
  $('term').textContent = term || '–';
  for (const n of nodes) {
    const role = n.leader ? 'leader' : (n.voter ? 'follower' : 'non-voter');
    const tr = el('tr', { 'data-node': n.id },
      el('td', { class: 'mono' }, n.id),
      el('td', { class: n.leader ? 'leader' : '' }, role),
      el('td', { class: 'mono' }, n.http_addr || '–'),
      el('td', { class: 'num' }, n.reachable ? n.term : '–'),
      el('td', { class: 'num' }, n.reachable ? n.commit_index : '–'),
      el('td', { class: 'num' }, n.reachable ? n.applied_index : '–'),
      el('td', { class: 'num' }, n.reachable ? Math.max(commit - n.applied_index, 0) : '–'),
      el('td', {}, n.reachable ? (n.ready ? 'ready' : 'not ready') : '–'),
      el('td', { class: n.reachable ? '' : (n.http_addr ? 'down' : 'warn') },
        n.reachable ? (n.serving || 'no leader known') : (n.http_addr ? 'unreachable: ' : 'not asked: ') + (n.error || '')),
    );
    tbody.append(tr);
  }
}

function renderLocks() {
  const tbody = $('locks').querySelector('tbody');
  const names = [...state.locks.keys()].sort();
  const now = nowCluster();
  const rows = [];
  for (const name of names) {
    const l = state.locks.get(name);
    const tr = el('tr', { 'data-name': name, 'data-token': l.token, 'data-index': l.modify_index },
      el('td', { class: 'name' }, name),
      el('td', {}, l.owner || '–'),
      el('td', { class: 'num mono' }, l.token),
      el('td', {}, l.mode || 'exclusive'),
      el('td', { class: 'num' }, l.deadline == null || now == null ? '–' : duration(l.deadline - now)),
      waitersCell(l, now),
      el('td', { class: 'num' }, l.granted == null || now == null ? '–' : duration(now - l.granted)),
      el('td', { class: 'mono muted' }, l.fingerprint || '–'),
      el('td', { class: 'num' }, l.holdEnd == null || now == null ? '–' : duration(Math.max(l.holdEnd - now, 0))),
      el('td', { class: 'num' }, l.delayUntil == null || now == null ? '–' : duration(Math.max(l.delayUntil - now, 0))),
    );
    if (l.seen != null) tr.setAttribute('data-seen-ms', String(l.seen));
    if (l.freshUntil && l.freshUntil > performance.now()) tr.classList.add('fresh');
    if (name === state.selected) tr.classList.add('selected');
    tr.addEventListener('click', () => selectLock(name));
    rows.push(tr);
  }
  tbody.replaceChildren(...rows);
  $('locks-empty').classList.toggle('hidden', rows.length > 0);
  $('lock-count').textContent = rows.length;
}

// leaseLabel names a lease as the page shows it: its owner label and its fingerprint,
// never its ID (the API gives none).
function leaseLabel(owner, fp) {
  return (owner || '?') + ' (' + (fp || '–') + ')';
}

// waitersCell shows how many wait for a lock and the first of them in order, each by
// owner, with its fingerprint, since when and until when in its title; the count says what
// the list leaves out.
function waitersCell(l, now) {
  const td = el('td', { class: 'waiters' }, el('span', { class: 'num' }, l.waiters));
  const q = l.queue || [];
  for (const w of q) {
    const title = 'lease ' + w.lease_fingerprint + (w.mode ? ', ' + w.mode : '') + (w.lockset ? ', one lock of a lockset' : '') +
      (w.since_ms != null && now != null ? ', waiting for ' + duration(now - w.since_ms) : '') +
      (now != null ? ', gives up in ' + duration(w.deadline_ms - now) : '');
    td.append(el('span', { class: 'waiter', 'data-owner': w.owner || '', 'data-fingerprint': w.lease_fingerprint, title }, (w.owner || w.lease_fingerprint) + (w.mode === 'shared' ? ' (shared)' : '')));
  }
  if (l.waiters > q.length && q.length > 0) td.append(el('span', { class: 'more' }, '+' + (l.waiters - q.length) + ' more'));
  return td;
}

// ---- who waits for whom ----------------------------------------------------------------

const BY_TEXT = { holder: 'holds it', queued_ahead: 'asked before it', lockset_grant: 'is a shared lockset ahead (waits for its grant)' };

function renderWaits() {
  const rows = [];
  for (const lw of state.waits) {
    for (const e of lw.edges) {
      rows.push(el('tr', { 'data-lock': lw.lock, 'data-waiter': e.waiter_owner || '', 'data-blocker': e.blocker_owner || '', 'data-by': e.by },
        el('td', { class: 'name' }, lw.lock),
        el('td', { class: 'mono' }, leaseLabel(e.waiter_owner, e.waiter_fingerprint)),
        el('td', {}, e.waiter_mode),
        el('td', { class: 'mono' }, leaseLabel(e.blocker_owner, e.blocker_fingerprint)),
        el('td', {}, BY_TEXT[e.by] || e.by)));
    }
    if (lw.more) rows.push(el('tr', { class: 'more' }, el('td', { class: 'name' }, lw.lock), el('td', { colspan: '4', class: 'muted' }, lw.more + ' more edges on this lock not shown')));
  }
  $('waits').querySelector('tbody').replaceChildren(...rows);
  $('waits-empty').classList.toggle('hidden', rows.length > 0);
  $('waits-note').dataset.truncated = state.waitsTruncated ? 'true' : 'false';
  renderWaitsGraph();
  const items = state.refusals.map((r) => {
    const cycle = r.cycle.map((st) => (st.hidden && !st.lease_fingerprint ? '(hidden lease)' : st.lease_fingerprint) + ' → ' + (st.hidden && !st.lock ? '(hidden lock)' : st.lock)).join(' → ');
    return el('li', { 'data-lock': r.lock, 'data-owner': r.owner || '', 'data-index': r.index },
      el('span', { class: 'when' }, clusterTimeLabel(r.time_ms) + ' '),
      el('b', {}, leaseLabel(r.owner, r.lease_fingerprint)), ' asked for ', el('span', { class: 'name' }, r.lock),
      ': refused, it would close the cycle ', el('span', { class: 'cycle' }, cycle + ' ↺'));
  });
  $('refusals').replaceChildren(...items);
  $('refusals-empty').classList.toggle('hidden', items.length > 0);
}

// renderWaitsGraph draws the leases as nodes on a circle and each wait as an arrow from
// the waiter to what it waits for, labelled with the lock (a node graph, as Grafana's);
// past 40 leases the table alone says it.
function renderWaitsGraph() {
  const svg = $('waits-graph');
  const ns = 'http://www.w3.org/2000/svg';
  const nodes = new Map();
  const edges = [];
  for (const lw of state.waits) {
    for (const e of lw.edges) {
      nodes.set(e.waiter_fingerprint, e.waiter_owner || '');
      nodes.set(e.blocker_fingerprint, e.blocker_owner || '');
      edges.push({ from: e.waiter_fingerprint, to: e.blocker_fingerprint, lock: lw.lock, by: e.by });
    }
  }
  svg.replaceChildren();
  svg.classList.toggle('hidden', nodes.size === 0 || nodes.size > 40);
  if (nodes.size === 0 || nodes.size > 40) return;
  const ids = [...nodes.keys()].sort();
  const pos = new Map();
  ids.forEach((id, i) => {
    const a = (2 * Math.PI * i) / ids.length - Math.PI / 2;
    pos.set(id, { x: 300 + 200 * Math.cos(a), y: 150 + 110 * Math.sin(a) });
  });
  const mk = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text != null) e.textContent = text;
    svg.append(e);
    return e;
  };
  for (const e of edges) {
    const a = pos.get(e.from);
    const b = pos.get(e.to);
    const dx = b.x - a.x;
    const dy = b.y - a.y;
    const len = Math.max(Math.hypot(dx, dy), 1);
    const ex = b.x - (dx / len) * 14;
    const ey = b.y - (dy / len) * 14;
    mk('line', { x1: a.x, y1: a.y, x2: ex, y2: ey, class: e.by === 'holder' ? 'holder' : '' });
    // An arrowhead of two short strokes (no marker: nothing but plain elements).
    const ang = Math.atan2(dy, dx);
    for (const s of [-0.45, 0.45]) mk('line', { x1: ex, y1: ey, x2: ex - 8 * Math.cos(ang + s), y2: ey - 8 * Math.sin(ang + s), class: e.by === 'holder' ? 'holder' : '' });
    mk('text', { x: (a.x + ex) / 2, y: (a.y + ey) / 2 - 3, class: 'edge', 'text-anchor': 'middle' }, e.lock);
  }
  for (const id of ids) {
    const p = pos.get(id);
    mk('circle', { cx: p.x, cy: p.y, r: 12 });
    mk('text', { x: p.x, y: p.y + 24, 'text-anchor': 'middle', 'data-fingerprint': id }, (nodes.get(id) || '?') + ' ' + id);
  }
}

// ---- the event stream ------------------------------------------------------------------

function setStreamState(on, text) {
  const s = $('stream-state');
  s.textContent = text;
  s.className = 'pill ' + (on ? 'on' : 'off');
}

function restartStream() {
  if (state.streamAbort) state.streamAbort.abort();
}

async function streamLoop() {
  let backoff = 500;
  let unknownToken = 0;
  for (;;) {
    const ctrl = new AbortController();
    state.streamAbort = ctrl;
    try {
      const h = headers({ Accept: 'text/event-stream' });
      if (state.lastEventId != null) h['Last-Event-ID'] = String(state.lastEventId);
      const q = state.prefix ? '?prefix=' + encodeURIComponent(state.prefix) : '';
      const resp = await fetch('/v1/events' + q, { headers: h, cache: 'no-store', signal: ctrl.signal });
      if (resp.status === 403 && !state.prefix) {
        // A stream of every name needs read on every name; a token that may read only
        // some prefixes follows one of them (the table still refreshes every 2 s).
        await resp.body?.cancel();
        setStreamState(false, 'pick a prefix');
        $('stream-note').textContent = 'This token may not read every name: type a prefix it may read (e.g. jobs/) to follow changes live.';
        await waitAbort(ctrl.signal);
        continue;
      }
      if (resp.status === 401 && state.token) {
        // A token made a moment ago may not have reached this node yet (a stream is
        // never forwarded to the leader): try again shortly, and ask if it stays unknown.
        await resp.body?.cancel();
        setStreamState(false, 'token not known here yet');
        if (++unknownToken >= 5) askToken('this node does not know the token (revoked, mistyped, or from another cluster)');
        await sleep(1000, ctrl.signal);
        if (ctrl.signal.aborted) unknownToken = 0; // a new token (or prefix)
        continue;
      }
      if (resp.status === 401 || resp.status === 403) {
        await resp.body?.cancel();
        setStreamState(false, 'needs a token');
        askToken(resp.status === 401 ? 'a token with read rights is needed' : 'the token may not read the prefix ' + JSON.stringify(state.prefix));
        await waitAbort(ctrl.signal);
        continue;
      }
      unknownToken = 0;
      $('stream-note').textContent = '';
      if (resp.status === 410) {
        // This node no longer holds the events after our last one: start again from now,
        // and re-read everything.
        await resp.body?.cancel();
        state.lastEventId = null;
        refresh();
        continue;
      }
      if (!resp.ok || !resp.body) {
        await resp.body?.cancel();
        throw new Error('HTTP ' + resp.status);
      }
      setStreamState(true, 'live');
      backoff = 500;
      await readEvents(resp.body, ctrl.signal);
      setStreamState(false, 'reconnecting');
    } catch (e) {
      if (ctrl.signal.aborted) {
        setStreamState(false, 'reconnecting');
        continue; // restarted on purpose (new prefix or token)
      }
      setStreamState(false, 'reconnecting');
    }
    await sleep(backoff, ctrl.signal);
    backoff = Math.min(backoff * 2, 5000);
  }
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

function waitAbort(signal) {
  return new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
}

// readEvents parses the text/event-stream format: messages separated by a blank line,
// fields "id", "event", "data" (several data lines join with "\n"), comments start with ":".
async function readEvents(body, signal) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  signal.addEventListener('abort', () => reader.cancel().catch(() => {}), { once: true });
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value.replace(/\r\n?/g, '\n');
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let id = null;
      let event = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue;
        const c = line.indexOf(':');
        const field = c < 0 ? line : line.slice(0, c);
        let v = c < 0 ? '' : line.slice(c + 1);
        if (v.startsWith(' ')) v = v.slice(1);
        if (field === 'id') id = v;
        else if (field === 'event') event = v;
        else if (field === 'data') data.push(v);
      }
      if (id != null && id !== '') state.lastEventId = id;
      if (event === 'entry' && data.length) onEntry(JSON.parse(data.join('\n')));
      if (event === 'error' && data.length) {
        const e = JSON.parse(data.join('\n'));
        if (e.error && e.error.code === 'index_compacted') state.lastEventId = null;
        return;
      }
    }
  }
}

// onEntry applies one entry's lock events to the table at once, then asks for a fresh
// overview shortly after, for what events do not carry (the new holder's TTL, waiters).
function onEntry(entry) {
  const seen = Date.now();
  for (const ev of entry.events) {
    if (state.selected === ev.name) {
      state.history.push(ev);
      renderHistory();
    }
    const have = state.locks.get(ev.name);
    if (have && have.modify_index > entry.index) continue; // already newer
    switch (ev.kind) {
      case 'granted':
        state.locks.set(ev.name, {
          name: ev.name, owner: ev.owner || '', token: ev.token, mode: ev.mode || (have ? have.mode : ''),
          waiters: have && ev.from_queue ? Math.max(have.waiters - 1, 0) : (have ? have.waiters : 0),
          queue: have ? have.queue.filter((w) => w.lease_fingerprint !== ev.lease_fingerprint) : [],
          modify_index: entry.index, fingerprint: ev.lease_fingerprint || '', deadline: null,
          granted: ev.time_ms, seen, freshUntil: performance.now() + 1500, holdEnd: null, delayUntil: null,
        });
        break;
      case 'released':
      case 'expired':
      case 'revoked':
        // A shared lock may keep other readers: the overview read after this says.
        if (have && have.token === ev.token && have.mode !== 'shared') {
          state.locks.delete(ev.name);
          state.gone.set(ev.name, entry.index);
        }
        break;
      default: // the end of a wait
        if (have) {
          have.waiters = Math.max(have.waiters - 1, 0);
          have.queue = have.queue.filter((w) => w.lease_fingerprint !== ev.lease_fingerprint);
          have.modify_index = entry.index;
          have.seen = seen;
        }
    }
    if (state.clusterTime == null || ev.time_ms > state.clusterTime.ms) {
      state.clusterTime = { ms: ev.time_ms, at: performance.now() };
    }
  }
  renderLocks();
  scheduleRefresh(300);
}

// ---- history ---------------------------------------------------------------------------

async function selectLock(name) {
  state.selected = name;
  state.history = [];
  $('history-section').classList.remove('hidden');
  $('history-name').textContent = name;
  $('history-note').textContent = '(loading…)';
  state.historyError = null;
  renderLocks();
  try {
    // ?stale: this node's own applied state, so the history opens during an election too.
    const h = await getJSON('/v1/history/' + lockPath(name) + '?stale');
    if (state.selected !== name) return;
    // Events streamed while the history was read are kept once.
    const known = new Set(h.events.map((e) => e.index + '/' + e.kind + '/' + e.token));
    state.history = h.events.concat(state.history.filter((e) => !known.has(e.index + '/' + e.kind + '/' + e.token)));
  } catch (e) {
    if (e instanceof AuthError) askToken(e.message);
    if (state.selected === name) state.historyError = e.message;
  }
  if (state.selected === name) renderHistory();
}

function describe(ev) {
  const parts = [];
  if (ev.token) parts.push('token ' + ev.token);
  if (ev.owner) parts.push(ev.kind === 'granted' ? 'to ' + ev.owner : 'held by ' + ev.owner);
  if (ev.lease_fingerprint) parts.push('lease ' + ev.lease_fingerprint);
  if (ev.from_queue) parts.push('from the queue' + (ev.waited_ms ? ' after ' + duration(ev.waited_ms) : ''));
  else if (ev.waited_ms) parts.push('waited ' + duration(ev.waited_ms));
  if (ev.kind === 'expired' && ev.deadline_ms) parts.push('deadline ' + clusterTimeLabel(ev.deadline_ms));
  if (ev.renewed_ms) parts.push('last renewed ' + clusterTimeLabel(ev.renewed_ms) + ' (' + duration(ev.deadline_ms - ev.renewed_ms) + ' before its deadline)');
  if (ev.kind === 'wait_timed_out' && ev.deadline_ms) parts.push('wait deadline ' + clusterTimeLabel(ev.deadline_ms));
  parts.push('index ' + ev.index);
  return parts.join(' · ');
}

function renderHistory() {
  const list = $('history');
  const n = state.history.length;
  $('history-note').textContent = state.historyError
    ? '(' + state.historyError + ')'
    : '(' + n + (n === 1 ? ' event' : ' events') + ', live; newest first)';
  list.replaceChildren(...state.history.slice().reverse().map((ev) =>
    el('li', { class: ev.kind, 'data-kind': ev.kind, 'data-index': ev.index },
      el('span', { class: 'when' }, clusterTimeLabel(ev.time_ms)),
      el('span', { class: 'kind' }, ev.kind.replaceAll('_', ' ')),
      el('span', {}, describe(ev)))));
  renderTimeline();
}

// renderTimeline draws each grant as a bar from its grant to its end (or to now), and
// each end by expiry or revoke as a red mark, over the span of the recorded history.
function renderTimeline() {
  const svg = $('timeline');
  const ns = 'http://www.w3.org/2000/svg';
  svg.replaceChildren();
  const evs = state.history;
  if (!evs.length) return;
  const now = nowCluster() ?? evs[evs.length - 1].time_ms;
  const start = evs[0].time_ms;
  const end = Math.max(now, evs[evs.length - 1].time_ms, start + 1);
  const x = (t) => ((t - start) / (end - start)) * 980 + 10;
  let open = null;
  const bar = (from, to, current, title) => {
    const r = document.createElementNS(ns, 'rect');
    r.setAttribute('class', 'grant' + (current ? ' current' : ''));
    r.setAttribute('x', x(from));
    r.setAttribute('y', 8);
    r.setAttribute('width', Math.max(x(to) - x(from), 2));
    r.setAttribute('height', 24);
    const t = document.createElementNS(ns, 'title');
    t.textContent = title;
    r.append(t);
    svg.append(r);
  };
  for (const ev of evs) {
    if (ev.kind === 'granted') {
      if (open) bar(open.time_ms, ev.time_ms, false, 'token ' + open.token + ' ' + (open.owner || ''));
      open = ev;
    } else if (['released', 'expired', 'revoked'].includes(ev.kind)) {
      if (open && open.token === ev.token) {
        bar(open.time_ms, ev.time_ms, false, 'token ' + open.token + ' ' + (open.owner || ''));
        open = null;
      }
      if (ev.kind !== 'released') {
        const l = document.createElementNS(ns, 'line');
        l.setAttribute('class', 'end');
        l.setAttribute('x1', x(ev.time_ms));
        l.setAttribute('x2', x(ev.time_ms));
        l.setAttribute('y1', 2);
        l.setAttribute('y2', 38);
        svg.append(l);
      }
    }
  }
  if (open) bar(open.time_ms, end, true, 'token ' + open.token + ' ' + (open.owner || '') + ' (held)');
}

// ---- metrics ---------------------------------------------------------------------------

// parseMetrics reads the Prometheus text format into {name: [{labels, value}]}.
function parseMetrics(text) {
  const out = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    if (m[3]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
      let l;
      while ((l = re.exec(m[3]))) labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    }
    (out[m[1]] ||= []).push({ labels, value: parseFloat(m[4]) });
  }
  return out;
}

// counter sums a counter's series, or is null when the node leaves it out: with ACLs on,
// the usage counts need admin on the empty prefix, and the chart then shows a dash.
function counter(ms, name) {
  if (!ms[name]) return null;
  return ms[name].reduce((s, x) => s + x.value, 0);
}

// acquireBuckets returns the cumulative buckets {le: count} of the acquire route's latency.
function acquireBuckets(ms) {
  const b = new Map();
  for (const x of ms['raftlock_http_request_duration_seconds_bucket'] || []) {
    if (x.labels.route === ACQUIRE_ROUTE) b.set(x.labels.le === '+Inf' ? Infinity : parseFloat(x.labels.le), x.value);
  }
  return b;
}

// quantile estimates the q-quantile from the growth of cumulative buckets between two
// scrapes, interpolating inside a bucket as Prometheus's histogram_quantile does.
function quantile(q, prev, cur) {
  const les = [...cur.keys()].sort((a, b) => a - b);
  const total = (cur.get(Infinity) || 0) - (prev.get(Infinity) || 0);
  if (total <= 0) return null;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const le of les) {
    const c = cur.get(le) - (prev.get(le) || 0);
    if (c >= rank) {
      if (le === Infinity) return lower;
      return lower + (le - lower) * ((rank - below) / Math.max(c - below, 1e-9));
    }
    lower = le;
    below = c;
  }
  return lower;
}

async function scrape() {
  try {
    const resp = await fetch('/metrics', { headers: headers(), cache: 'no-store' });
    if (!resp.ok) throw new Error('HTTP ' + resp.status);
    const ms = parseMetrics(await resp.text());
    const cur = {
      at: performance.now(),
      grants: counter(ms, 'raftlock_grants_total'),
      handovers: counter(ms, 'raftlock_handovers_total'),
      renews: counter(ms, 'raftlock_renew_entries_total'),
      buckets: acquireBuckets(ms),
    };
    const prev = state.metricsPrev;
    state.metricsPrev = cur;
    if (prev) {
      const dt = (cur.at - prev.at) / 1000;
      // A counter that went down means the node restarted: skip that interval.
      const rate = (k) => (cur[k] != null && prev[k] != null && cur[k] >= prev[k] ? (cur[k] - prev[k]) / dt : null);
      push('grants', rate('grants'), (v) => v.toFixed(1));
      push('handovers', rate('handovers'), (v) => v.toFixed(1));
      push('renews', rate('renews'), (v) => v.toFixed(1));
      const p99 = quantile(0.99, prev.buckets, cur.buckets);
      push('p99', p99 == null ? null : p99 * 1000, (v) => v.toFixed(1) + ' ms');
    }
  } catch (e) {
    // The panel keeps its last points; the cluster panel says what is wrong.
  }
  setTimeout(scrape, REFRESH_MS);
}

const chartIds = { grants: 'chart-grants', handovers: 'chart-handovers', p99: 'chart-p99', renews: 'chart-renews' };

function push(key, v, fmt) {
  const s = state.series[key];
  s.push(v);
  if (s.length > CHART_POINTS) s.shift();
  const fig = $(chartIds[key]);
  fig.querySelector('.value').textContent = v == null ? '–' : fmt(v);
  const vals = s.map((x) => x ?? 0);
  const max = Math.max(...vals, 1e-9);
  // The newest point is at the right edge; the series grows leftwards.
  const pts = vals.map((y, i) => {
    const px = 200 - ((vals.length - 1 - i) / (CHART_POINTS - 1)) * 200;
    const py = 48 - (y / max) * 46;
    return px.toFixed(1) + ',' + py.toFixed(1);
  });
  fig.querySelector('polyline').setAttribute('points', pts.join(' '));
  // The newest point is marked, so that a series of one point shows too.
  const [cx, cy] = pts[pts.length - 1].split(',');
  const dot = fig.querySelector('circle');
  dot.setAttribute('cx', cx - 2);
  dot.setAttribute('cy', cy);
}

// ---- start -----------------------------------------------------------------------------

// prefixFromHash reads the prefix filter from the URL fragment (#prefix=jobs/), so that a
// filtered view can be bookmarked; a prefix is not a secret.
function prefixFromHash() {
  const m = /^#prefix=(.*)$/.exec(location.hash);
  if (!m) return '';
  try {
    return decodeURIComponent(m[1]);
  } catch (e) {
    return '';
  }
}

function start() {
  setupToken();
  state.prefix = prefixFromHash();
  $('prefix').value = state.prefix;
  let typing = null;
  $('prefix').addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => {
      state.prefix = $('prefix').value;
      history.replaceState(null, '', state.prefix ? '#prefix=' + encodeURIComponent(state.prefix) : location.pathname);
      state.locks.clear();
      state.lastEventId = null; // a new prefix starts a new stream
      renderLocks();
      restartStream();
      refresh();
    }, 250);
  });
  // TTLs and ages count down between refreshes.
  setInterval(() => {
    renderLocks();
    if (state.selected) renderTimeline();
  }, 1000);
  // /healthz needs no token: the page names its node before any token is given.
  fetch('/healthz', { cache: 'no-store' })
    .then((r) => (r.ok ? r.json() : null))
    .then((h) => {
      if (h && h.node && $('self').textContent === '?') $('self').textContent = h.node;
    })
    .catch(() => {});
  refresh();
  scrape();
  streamLoop();
}

document.addEventListener('DOMContentLoaded', start);
