// raftlock dashboard: plain JavaScript, no library, no build step. It only reads.
//
// Data sources, all on the node that served this page (same origin):
//   GET /v1/overview   one blocking read (wait_index, wait_ms) of everything under the
//                      prefix: a page of locks with TTL left, age and their first waiters in
//                      order; the semaphores and elections in use; who waits for whom (by
//                      the deadlock detector's rules) and its recent refusals; lease counts;
//                      the members (every member's own indexes at most every 12 s, this
//                      node's alone in between: members=self). It answers as soon as a name
//                      under the prefix changes, or after 5 s; one is started at most every
//                      4 s.
//   GET /v1/events     lock, semaphore and election changes as Server-Sent Events
//                      (?kinds=lock,semaphore,election), read with fetch() so that the ACL
//                      token can travel in the Authorization header (EventSource cannot set
//                      headers, and a token must never be put in a URL)
//   GET /v1/history/N  a lock's history, when its row is clicked (then kept live from the
//                      stream)
//   GET /metrics       counters and the acquire latency histogram (every 5 s)
//   GET /v1/usage      each identity's use against its quotas (?all: an admin token's view,
//                      every 15 s, with GET /v1/acl/tokens every 60 s to name the tokens),
//                      or, for a token that may not read every identity's, its own
//                      (every 15 s)
//
// Every request but the event stream goes through one budget: at most 60 a minute, each
// counted with what it costs the cluster (an overview that asks the other members costs one
// more per member asked). The schedule above needs at most about 46; what is left serves
// clicks.
//
// Everything that comes from the cluster (names, owners) is put into the page with
// textContent, never as HTML.
'use strict';

const TOKEN_KEY = 'raftlock.acl-token';
const CHART_POINTS = 60;
const ACQUIRE_ROUTE = 'PUT /v1/locks/{name...}';
const QUEUE_SHOWN = 5; // waiters listed per lock, semaphore and election (the count says how many wait)
const PAGE = 100; // locks, semaphores and elections per page
const OVERVIEW_EVERY_MS = 4000; // an overview starts at most this often
const OVERVIEW_WAIT_MS = 5000; // and waits at most this long for a change
const MEMBERS_EVERY_MS = 12000; // the other members are asked for their indexes at most this often
const METRICS_EVERY_MS = 5000;
const USAGE_EVERY_MS = 15000;
const TOKENS_EVERY_MS = 60000; // an admin's identities are named from the token list this often
const USAGE_SHOWN = 20; // identities listed, the most used first
const BUDGET_PER_MINUTE = 60;
const STALE_AFTER_MS = 1500; // a stream down this long makes the page say its data is stale

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || '',
  prefix: '',
  after: '', // the locks page's cursor: the name before its first lock ('' for the first page)
  pages: [], // the cursors of the pages before this one, for "previous"
  page: { truncated: false, next: '', last: '' },
  locks: new Map(), // name -> row data
  gone: new Map(), // name -> index of the entry that freed it (newer than the last overview)
  sems: new Map(), // name -> semaphore row
  elections: new Map(), // name -> election row
  semsTruncated: false,
  electionsTruncated: false,
  clusterTime: null, // {ms, at}: the node's cluster time and performance.now() when read
  appliedIndex: 0, // the last overview's: its next blocking read waits for a change after it
  members: new Map(), // id -> the last status the member gave itself, with when it was asked
  leader: '', // the leader shown: a blocking overview answers at once when the node knows another
  membersAt: -Infinity, // when the last overview that asked every member started
  overviewAt: null, // performance.now() of the last overview answered
  overviewError: null,
  overviewAbort: null,
  selected: null,
  history: [],
  historyError: null,
  waits: [],
  waitsTruncated: false,
  refusals: [],
  lastEventId: null,
  streamAbort: null,
  stream: { live: false, downSince: performance.now(), everLive: false },
  usage: null, // {all: UsageList} for an admin token, {own: Usage} otherwise
  usageMode: '', // 'all' once ?all answered, 'own' once it was refused; '' to find out
  usageAbort: null,
  tokenNames: new Map(), // accessor -> description, from GET /v1/acl/tokens (admin only)
  tokensAt: -Infinity,
  tokensUnavailable: false,
  metricsPrev: null,
  series: { grants: [], handovers: [], p99: [], renews: [] },
  needToken: false,
  renderTimer: null,
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

// ---- the request budget ----------------------------------------------------------------

// budget keeps the cost of the requests of the last minute; take waits until cost more fits
// in BUDGET_PER_MINUTE.
const budget = {
  spent: [], // [performance.now(), cost] of the requests of the last minute
  total: 0, // every cost taken since the page loaded
  used() {
    const since = performance.now() - 60000;
    while (this.spent.length && this.spent[0][0] <= since) this.spent.shift();
    return this.spent.reduce((s, x) => s + x[1], 0);
  },
  async take(cost) {
    while (this.used() + cost > BUDGET_PER_MINUTE) {
      await sleep(this.spent[0][0] + 60000 - performance.now() + 5);
    }
    this.spent.push([performance.now(), cost]);
    this.total += cost;
    document.body.dataset.budgetUsed = String(this.used());
  },
};

// ---- API access ------------------------------------------------------------------------

function headers(extra) {
  const h = Object.assign({}, extra || {});
  if (state.token) h['Authorization'] = 'Bearer ' + state.token;
  return h;
}

class AuthError extends Error {
  constructor(msg, status) {
    super(msg);
    this.status = status;
  }
}

// getJSON GETs path once its cost fits in the budget.
async function getJSON(path, cost, signal) {
  await budget.take(cost || 1);
  const resp = await fetch(path, { headers: headers({ Accept: 'application/json' }), cache: 'no-store', signal });
  if (resp.status === 401 || resp.status === 403) {
    await resp.body?.cancel();
    throw new AuthError(resp.status === 401 ? 'a token with read rights is needed' : 'the token may not read this', resp.status);
  }
  const body = await resp.json().catch(() => null);
  if (!resp.ok) {
    const msg = body && body.error ? body.error.code + ': ' + body.error.message : 'HTTP ' + resp.status;
    throw new Error(msg);
  }
  return body;
}

function namePath(name) {
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
  restartOverview();
  restartUsage();
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

// leaseLabel names a lease as the page shows it: its owner label and its fingerprint,
// never its ID (the API gives none).
function leaseLabel(owner, fp) {
  return (owner || '?') + ' (' + (fp || '–') + ')';
}

// ---- the overview: one blocking read of everything -------------------------------------

function restartOverview() {
  if (state.overviewAbort) state.overviewAbort.abort();
}

// overviewLoop reads the overview for ever: each read waits (on the node) for a change
// under the prefix after the last one's applied index, or OVERVIEW_WAIT_MS, and starts no
// sooner than OVERVIEW_EVERY_MS after the one before. A new prefix, page or token starts
// the next read at once (within the budget), without waiting for a change.
async function overviewLoop() {
  let fresh = true; // the next read answers at once (no wait_index)
  for (;;) {
    const ctrl = new AbortController();
    state.overviewAbort = ctrl;
    const started = performance.now();
    const members = started - state.membersAt >= MEMBERS_EVERY_MS;
    const others = Math.max(state.members.size - 1, 2);
    let q = '?queue=' + QUEUE_SHOWN + '&include=waits_for,semaphores,elections&limit=' + PAGE;
    if (state.prefix) q += '&prefix=' + encodeURIComponent(state.prefix);
    if (state.after) q += '&after=' + encodeURIComponent(state.after);
    if (!members) q += '&members=self';
    // A read that asks every member answers at once: what it is for (a member down, its
    // lag) is no change the node could wait for.
    if (!fresh && !members && state.appliedIndex) {
      // Answered at the next change under the prefix, or of leader (a failover shows at once).
      q += '&wait_index=' + state.appliedIndex + '&wait_ms=' + OVERVIEW_WAIT_MS + '&wait_leader=' + encodeURIComponent(state.leader || '');
    }
    const key = state.prefix + '\u0000' + state.after + '\u0000' + state.token;
    try {
      const o = await getJSON('/v1/overview' + q, members ? 1 + others : 1, ctrl.signal);
      if (key === state.prefix + '\u0000' + state.after + '\u0000' + state.token) {
        if (members) state.membersAt = started;
        applyOverview(o, members);
        state.overviewError = null;
        state.overviewAt = performance.now();
        $('cluster-summary').textContent = '';
      }
      fresh = false;
    } catch (e) {
      if (ctrl.signal.aborted) {
        fresh = true;
        continue;
      }
      fresh = true;
      state.overviewError = e.message;
      if (e instanceof AuthError) askToken(e.message);
      else $('cluster-summary').textContent = '(' + e.message + ')';
    }
    renderStale();
    await sleep(started + OVERVIEW_EVERY_MS - performance.now(), ctrl.signal);
    if (ctrl.signal.aborted) fresh = true;
  }
}

function applyOverview(o, members) {
  $('self').textContent = o.node_id;
  state.clusterTime = { ms: o.cluster_time_ms, at: performance.now() };
  state.appliedIndex = o.applied_index;
  // Each member's lag is the highest commit index among the members asked in the same read
  // minus its applied index, kept with when it was asked.
  const commit = Math.max(0, ...o.nodes.filter((n) => n.reachable).map((n) => n.commit_index));
  for (const n of o.nodes) {
    if (n.reachable) Object.assign(n, { lag: Math.max(commit - n.applied_index, 0), askedAt: performance.now() });
    // members=self lists the others without asking them: keep what they said last.
    if (members || n.id === o.node_id || !state.members.has(n.id)) state.members.set(n.id, n);
    else Object.assign(state.members.get(n.id), { leader: n.leader, voter: n.voter, http_addr: n.http_addr });
  }
  for (const id of [...state.members.keys()]) if (!o.nodes.some((n) => n.id === id)) state.members.delete(id);
  renderNodes([...state.members.values()].sort((a, b) => (a.id < b.id ? -1 : 1)), o.node_id);
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
      // Protocol version 7: the lockset groups its holders' grants belong to (one commit,
      // one token), as the API names them.
      sets: (l.holders || []).filter((h) => h.lockset).map((h) => ({
        names: h.lockset, hidden: h.lockset_hidden || 0, token: h.token, owner: h.owner || '', fingerprint: h.lease_fingerprint || '', mode: l.mode || 'exclusive',
      })),
    });
  }
  for (const [name, have] of state.locks) {
    if (!fresh.has(name) && have.modify_index > o.applied_index && inPage(name)) fresh.set(name, have);
  }
  state.locks = fresh;
  for (const [name, index] of state.gone) if (index <= o.applied_index) state.gone.delete(name);
  state.page = { truncated: o.truncated, next: o.next || '', last: o.locks.length ? o.locks[o.locks.length - 1].name : '' };
  renderLocks();
  state.sems = mergeRows(state.sems, o.semaphores || [], o.applied_index, (s) => ({
    name: s.name, limit: s.limit, permits: s.permits, waiters: s.waiters, queue: s.queue || [], modify_index: s.modify_index,
  }));
  state.semsTruncated = !!o.semaphores_truncated;
  renderSems();
  state.elections = mergeRows(state.elections, o.elections || [], o.applied_index, (e) => ({
    name: e.name, elected: e.elected, owner: e.owner || '', value: e.value, token: e.token, fingerprint: e.lease_fingerprint || '',
    candidates: e.candidates, queue: e.queue || [], modify_index: e.modify_index,
  }));
  state.electionsTruncated = !!o.elections_truncated;
  renderElections();
  state.waits = o.waits_for || [];
  state.waitsTruncated = !!o.waits_for_truncated;
  state.refusals = o.refusals || [];
  renderWaits();
}

// mergeRows makes the rows of a panel from an overview's items, keeping a row the stream
// changed after the reading, and a row the stream brought that the reading is too old to
// have.
function mergeRows(have, items, applied, make) {
  const out = new Map();
  for (const it of items) {
    const h = have.get(it.name);
    const row = h && h.modify_index > it.modify_index ? h : make(it);
    if (h && row !== h) row.seen = h.seen;
    out.set(it.name, row);
  }
  for (const [name, h] of have) if (!out.has(name) && h.modify_index > applied && !h.gone) out.set(name, h);
  return out;
}

// inPage reports whether a lock name belongs to the locks page shown: under the prefix,
// after its cursor, and not past its last lock when more follow.
function inPage(name) {
  if (!name.startsWith(state.prefix) || (state.after && name <= state.after)) return false;
  return !state.page.truncated || name <= state.page.last;
}

function renderNodes(nodes, self) {
  const tbody = $('nodes').querySelector('tbody');
  let leader = null;
  let term = 0;
  for (const n of nodes) {
    if (n.leader) leader = n.id;
    if (n.reachable) term = Math.max(term, n.term);
  }
  // A new leader (or none) changes every member's view: ask them all at the next read.
  if ((leader || '') !== state.leader) state.membersAt = -Infinity;
  state.leader = leader || '';
  $('leader').textContent = leader || 'none (election)';
  $('leader').className = leader ? 'leader' : 'warn';
  $('term').textContent = term || '–';
  const rows = [];
  for (const n of nodes) {
    const role = n.leader ? 'leader' : (n.voter ? 'follower' : 'non-voter');
    rows.push(el('tr', { 'data-node': n.id },
      el('td', { class: 'mono' }, n.id + (n.id === self ? ' (this page)' : '')),
      el('td', { class: n.leader ? 'leader' : '' }, role),
      el('td', { class: 'mono' }, n.http_addr || '–'),
      el('td', { class: 'num' }, n.reachable ? n.term : '–'),
      el('td', { class: 'num' }, n.reachable ? n.commit_index : '–'),
      el('td', { class: 'num' }, n.reachable ? n.applied_index : '–'),
      el('td', { class: 'num' }, n.reachable ? n.lag : '–'),
      el('td', {}, n.reachable ? (n.ready ? 'ready' : 'not ready') : '–'),
      el('td', { class: n.reachable ? '' : (n.http_addr ? 'down' : 'warn') },
        n.reachable ? (n.serving || 'no leader known') + (n.id !== self && performance.now() - n.askedAt > 2000 ? ' \u00b7 asked ' + duration(performance.now() - n.askedAt) + ' ago' : '')
          : (n.http_addr ? 'unreachable: ' : 'not asked: ') + (n.error || '')),
    ));
  }
  tbody.replaceChildren(...rows);
}

// queueCell shows how many wait and the first of them in order, each by owner, with its
// fingerprint, since when and until when in its title; the count says what the list
// leaves out.
function queueCell(count, queue, now) {
  const td = el('td', { class: 'waiters' }, el('span', { class: 'num' }, count));
  for (const w of queue) {
    const title = 'lease ' + w.lease_fingerprint + (w.mode ? ', ' + w.mode : '') + (w.lockset ? ', one lock of a lockset' : '') +
      (w.since_ms != null && now != null ? ', waiting for ' + duration(now - w.since_ms) : '') +
      (now != null ? ', gives up in ' + duration(w.deadline_ms - now) : '');
    td.append(el('span', { class: 'waiter', 'data-owner': w.owner || '', 'data-fingerprint': w.lease_fingerprint, title },
      (w.owner || w.lease_fingerprint) + (w.mode === 'shared' ? ' (shared)' : '')));
  }
  if (count > queue.length && queue.length > 0) td.append(el('span', { class: 'more' }, '+' + (count - queue.length) + ' more'));
  return td;
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
      modeCell(l),
      el('td', { class: 'num' }, l.deadline == null || now == null ? '–' : duration(l.deadline - now)),
      queueCell(l.waiters, l.queue || [], now),
      el('td', { class: 'num' }, l.granted == null || now == null ? '–' : duration(now - l.granted)),
      el('td', { class: 'mono muted' }, l.fingerprint || '–'),
      el('td', { class: 'num' }, l.holdEnd == null || now == null ? '–' : duration(Math.max(l.holdEnd - now, 0))),
      el('td', { class: 'num' }, l.delayUntil == null || now == null ? '–' : duration(Math.max(l.delayUntil - now, 0))),
    );
    if (l.seen != null) tr.setAttribute('data-seen-ms', String(l.seen));
    if (l.freshUntil && l.freshUntil > performance.now()) tr.classList.add('fresh');
    if (isSelected('lock', name)) tr.classList.add('selected');
    tr.addEventListener('click', () => select('lock', name));
    rows.push(tr);
  }
  tbody.replaceChildren(...rows);
  renderGroups(names);
  $('locks-empty').classList.toggle('hidden', rows.length > 0);
  $('lock-count').textContent = rows.length + (state.page.truncated || state.after ? '+' : '');
  // Paging: what the page shows and what it leaves out.
  const first = state.pages.length * PAGE + 1;
  let note = '';
  if (state.after || state.page.truncated) {
    note = '(locks ' + (rows.length ? first + '–' + (first + rows.length - 1) : 'none') + ' in name order' +
      (state.page.truncated ? '; more follow: the next page, or narrow the prefix' : '; the last page') + ')';
  }
  $('locks-note').textContent = note;
  $('locks-next').disabled = !state.page.truncated;
  $('locks-prev').disabled = !state.after;
  $('locks-pager').classList.toggle('hidden', !state.after && !state.page.truncated);
}

function isSelected(kind, name) {
  return !!state.selected && state.selected.kind === kind && state.selected.name === name;
}

// modeCell shows a lock's mode and, for a grant made by a lockset, that it is one lock of
// a group (the group is listed whole above the table).
function modeCell(l) {
  const td = el('td', {}, l.mode || 'exclusive');
  for (const g of l.sets || []) {
    td.append(el('span', { class: 'set-badge', title: 'granted with ' + g.names.join(', ') + (g.hidden ? ' and ' + g.hidden + ' lock(s) you may not read' : '') + ' in one commit, token ' + g.token },
      'lockset of ' + (g.names.length + g.hidden)));
  }
  return td;
}

// renderGroups lists the lockset groups of the locks shown, each once: its locks, owner,
// lease, token (one commit) and mode.
function renderGroups(names) {
  const seen = new Map();
  for (const name of names) {
    for (const g of state.locks.get(name).sets || []) {
      const key = g.fingerprint + '/' + g.token;
      if (!seen.has(key)) seen.set(key, g);
    }
  }
  const items = [...seen.values()].map((g) => el('li', { 'data-names': g.names.join(','), 'data-token': g.token, 'data-owner': g.owner, 'data-fingerprint': g.fingerprint, 'data-mode': g.mode },
    el('b', {}, leaseLabel(g.owner, g.fingerprint)), ' holds ',
    el('span', { class: 'name' }, g.names.join(' + ')), g.hidden ? ' (and ' + g.hidden + ' lock(s) you may not read)' : '',
    ' as one lockset: one commit, token ' + g.token + ', ' + g.mode));
  $('groups').replaceChildren(...items);
  $('groups').classList.toggle('hidden', items.length === 0);
}

function renderSems() {
  const now = nowCluster();
  const rows = [];
  for (const name of [...state.sems.keys()].sort()) {
    const s = state.sems.get(name);
    const permits = el('td', { class: 'permits' });
    for (const p of s.permits) {
      permits.append(el('span', { class: 'permit', 'data-owner': p.owner || '', 'data-token': p.token, 'data-fingerprint': p.lease_fingerprint || '' },
        (p.owner || '?') + ' \u00b7 token ' + p.token + ' \u00b7 ' + (p.lease_fingerprint || '–')));
    }
    const tr = el('tr', { 'data-name': name, 'data-index': s.modify_index },
      el('td', { class: 'name' }, name),
      el('td', { class: 'num' }, s.limit || '?'),
      el('td', { class: 'num' }, s.limit ? Math.max(s.limit - s.permits.length, 0) : '?'),
      permits,
      queueCell(s.waiters, s.queue, now));
    if (s.seen != null) tr.setAttribute('data-seen-ms', String(s.seen));
    if (isSelected('semaphore', name)) tr.classList.add('selected');
    tr.addEventListener('click', () => select('semaphore', name));
    rows.push(tr);
  }
  $('sems').querySelector('tbody').replaceChildren(...rows);
  $('sems-empty').classList.toggle('hidden', rows.length > 0);
  $('sems-note').textContent = state.semsTruncated ? '(the first ' + rows.length + ' in name order; more follow: narrow the prefix)' : '';
}

function renderElections() {
  const now = nowCluster();
  const rows = [];
  for (const name of [...state.elections.keys()].sort()) {
    const e = state.elections.get(name);
    const tr = el('tr', { 'data-name': name, 'data-index': e.modify_index, 'data-token': e.token },
      el('td', { class: 'name' }, name),
      el('td', { class: e.elected ? 'leader' : 'warn' }, e.elected ? e.owner || '?' : 'nobody'),
      el('td', { class: 'mono muted' }, e.elected ? e.fingerprint || '–' : '–'),
      el('td', { class: 'value' }, e.elected ? (e.value == null ? '\u2026' : e.value) : '–'),
      el('td', { class: 'num mono', title: 'the term of office: the index of the entry that elected this leader, its fencing token' }, e.elected ? e.token : '–'),
      queueCell(e.candidates, e.queue, now));
    if (e.seen != null) tr.setAttribute('data-seen-ms', String(e.seen));
    if (isSelected('election', name)) tr.classList.add('selected');
    tr.addEventListener('click', () => select('election', name));
    rows.push(tr);
  }
  $('elections').querySelector('tbody').replaceChildren(...rows);
  $('elections-empty').classList.toggle('hidden', rows.length > 0);
  $('elections-note').textContent = state.electionsTruncated ? '(the first ' + rows.length + ' in name order; more follow: narrow the prefix)' : '';
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
    if (lw.more) rows.push(el('tr', { class: 'more' }, el('td', { class: 'name' }, lw.lock), el('td', { colspan: '4', class: 'muted' }, '+' + lw.more + ' more edges on this lock not shown')));
  }
  if (state.waitsTruncated) rows.push(el('tr', { class: 'more' }, el('td', { colspan: '5', class: 'muted' }, 'more locks with waiters follow: narrow the prefix')));
  $('waits').querySelector('tbody').replaceChildren(...rows);
  $('waits-empty').classList.toggle('hidden', rows.length > 0);
  renderWaitsGraph();
  const items = state.refusals.map((r) => {
    const cycle = r.cycle.map((st) => (st.lease_fingerprint || '(hidden lease)') + ' \u2192 ' + (st.hidden && !st.lock ? '(hidden lock)' : st.lock)).join(' \u2192 ');
    return el('li', { 'data-lock': r.lock, 'data-owner': r.owner || '', 'data-index': r.index },
      el('span', { class: 'when' }, clusterTimeLabel(r.time_ms) + ' '),
      el('b', {}, leaseLabel(r.owner, r.lease_fingerprint)), ' asked for ', el('span', { class: 'name' }, r.lock),
      ': refused, it would close the cycle ', el('span', { class: 'cycle' }, cycle + ' \u21ba'));
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
    const cls = e.by === 'holder' ? 'holder' : '';
    mk('line', { x1: a.x, y1: a.y, x2: ex, y2: ey, class: cls });
    // An arrowhead of two short strokes (plain elements, nothing but the page's own).
    const ang = Math.atan2(dy, dx);
    for (const s of [-0.45, 0.45]) mk('line', { x1: ex, y1: ey, x2: ex - 8 * Math.cos(ang + s), y2: ey - 8 * Math.sin(ang + s), class: cls });
    // The lock's name beside the arrow, nearer the waiter, so that two crossing edges
    // keep theirs apart and the names of the nodes stay clear.
    mk('text', { x: a.x + (ex - a.x) * 0.45 - (dy / len) * 9, y: a.y + (ey - a.y) * 0.45 + (dx / len) * 9, class: 'edge', 'text-anchor': 'middle' }, e.lock);
  }
  for (const id of ids) {
    const p = pos.get(id);
    mk('circle', { cx: p.x, cy: p.y, r: 12 });
    mk('text', { x: p.x, y: p.y + 24, 'text-anchor': 'middle', 'data-fingerprint': id }, (nodes.get(id) || '?') + ' ' + id);
  }
}

// ---- staleness -------------------------------------------------------------------------

// renderStale says, while the event stream is down (or the overview fails), that what the
// page shows may be stale, since when, and why; it is gone once both work again.
function renderStale() {
  const now = performance.now();
  const down = !state.stream.live && now - state.stream.downSince >= STALE_AFTER_MS;
  const banner = $('stale');
  const why = [];
  if (down) why.push('the event stream is down since ' + new Date(Date.now() - (now - state.stream.downSince)).toLocaleTimeString() + ' (' + duration(now - state.stream.downSince) + ', reconnecting)');
  if (state.overviewError) why.push('the last overview failed: ' + state.overviewError);
  banner.classList.toggle('hidden', why.length === 0);
  document.body.classList.toggle('stale', why.length > 0);
  if (why.length) {
    const age = state.overviewAt == null ? 'never read' : 'read ' + duration(now - state.overviewAt) + ' ago';
    banner.textContent = 'Stale: ' + why.join('; ') + '. What this page shows may be out of date (the last overview was ' + age + ').';
  }
}

// ---- the event stream ------------------------------------------------------------------

function setStreamState(on, text) {
  const s = $('stream-state');
  s.textContent = text;
  s.className = 'pill ' + (on ? 'on' : 'off');
  if (on !== state.stream.live) {
    state.stream.live = on;
    if (on) state.stream.everLive = true;
    else state.stream.downSince = performance.now();
  }
  renderStale();
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
      const q = '?kinds=lock,semaphore,election' + (state.prefix ? '&prefix=' + encodeURIComponent(state.prefix) : '');
      const resp = await fetch('/v1/events' + q, { headers: h, cache: 'no-store', signal: ctrl.signal });
      if (resp.status === 403 && !state.prefix) {
        // A stream of every name needs read on every name; a token that may read only
        // some prefixes follows one of them (the overview still refreshes).
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
        restartOverview();
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
    if (ms <= 0 || signal?.aborted) {
      resolve();
      return;
    }
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

// onEntry applies one entry's events to the tables at once; the overview, woken by the
// same change on the node, brings what events do not carry (TTLs, limits, values).
function onEntry(entry) {
  const seen = Date.now();
  for (const ev of entry.events) {
    const kind = ev.primitive || 'lock';
    if (state.selected && state.selected.kind === kind && state.selected.name === ev.name) {
      state.history.push(ev);
      renderHistory();
    }
    if (kind === 'semaphore') onSemEvent(ev, entry.index, seen);
    else if (kind === 'election') onElectionEvent(ev, entry.index, seen);
    else onLockEvent(ev, entry.index, seen);
    if (state.clusterTime == null || ev.time_ms > state.clusterTime.ms) {
      state.clusterTime = { ms: ev.time_ms, at: performance.now() };
    }
  }
  scheduleRender();
}

// scheduleRender redraws the tables once for all the entries that arrive within 50 ms: a
// busy stream (thousands of entries a second) costs a redraw at most 20 times a second,
// not one per entry.
function scheduleRender() {
  if (state.renderTimer) return;
  state.renderTimer = setTimeout(() => {
    state.renderTimer = null;
    renderLocks();
    renderSems();
    renderElections();
  }, 50);
}

function onLockEvent(ev, index, seen) {
  const have = state.locks.get(ev.name);
  if (have && have.modify_index > index) return; // already newer
  switch (ev.kind) {
    case 'granted':
      if (!have && !inPage(ev.name)) return; // another page's lock
      state.locks.set(ev.name, {
        name: ev.name, owner: ev.owner || '', token: ev.token, mode: have && have.token === ev.token ? have.mode : (have && have.mode === 'shared' ? 'shared' : ''),
        waiters: have && ev.from_queue ? Math.max(have.waiters - 1, 0) : (have ? have.waiters : 0),
        queue: have ? have.queue.filter((w) => w.lease_fingerprint !== ev.lease_fingerprint) : [],
        modify_index: index, fingerprint: ev.lease_fingerprint || '', deadline: null,
        granted: ev.time_ms, seen, freshUntil: performance.now() + 1500, holdEnd: null, delayUntil: null, sets: [],
      });
      break;
    case 'released':
    case 'expired':
    case 'revoked':
    case 'max_hold_ended':
    case 'lock_delay':
      // A shared lock may keep other readers: the overview read after this says.
      if (have && have.token === ev.token && have.mode !== 'shared') {
        state.locks.delete(ev.name);
        state.gone.set(ev.name, index);
      }
      break;
    case 'deadlock_refused':
    case 'lock_delay_ended':
      break;
    default: // the end of a wait
      if (have) {
        have.waiters = Math.max(have.waiters - 1, 0);
        have.queue = have.queue.filter((w) => w.lease_fingerprint !== ev.lease_fingerprint);
        have.modify_index = index;
        have.seen = seen;
      }
  }
}

function onSemEvent(ev, index, seen) {
  let s = state.sems.get(ev.name);
  if (s && s.modify_index > index) return;
  if (!s) {
    if (ev.kind !== 'permit_granted') return;
    s = { name: ev.name, limit: 0, permits: [], waiters: 0, queue: [], modify_index: index };
    state.sems.set(ev.name, s);
  }
  s.modify_index = index;
  s.seen = seen;
  const dropWaiter = () => {
    if (s.queue.some((w) => w.lease_fingerprint === ev.lease_fingerprint) || s.waiters > s.queue.length) s.waiters = Math.max(s.waiters - 1, 0);
    s.queue = s.queue.filter((w) => w.lease_fingerprint !== ev.lease_fingerprint);
  };
  switch (ev.kind) {
    case 'permit_granted':
      if (ev.from_queue) dropWaiter();
      if (!s.permits.some((p) => p.token === ev.token && p.lease_fingerprint === ev.lease_fingerprint)) {
        s.permits = s.permits.concat([{ owner: ev.owner, token: ev.token, lease_fingerprint: ev.lease_fingerprint }]);
      }
      break;
    case 'permit_released':
    case 'permit_expired':
    case 'permit_revoked':
    case 'permit_max_hold_ended':
      s.permits = s.permits.filter((p) => !(p.token === ev.token && p.lease_fingerprint === ev.lease_fingerprint));
      if (!s.permits.length && !s.waiters) state.sems.delete(ev.name); // not in use: it takes no state
      break;
    default: // the end of a wait for a permit
      dropWaiter();
  }
}

function onElectionEvent(ev, index, seen) {
  let e = state.elections.get(ev.name);
  if (e && e.modify_index > index) return;
  if (!e) {
    if (ev.kind !== 'elected') return;
    e = { name: ev.name, elected: false, candidates: 0, queue: [], modify_index: index };
    state.elections.set(ev.name, e);
  }
  e.modify_index = index;
  e.seen = seen;
  const dropCandidate = () => {
    if (e.queue.some((w) => w.lease_fingerprint === ev.lease_fingerprint) || e.candidates > e.queue.length) e.candidates = Math.max(e.candidates - 1, 0);
    e.queue = e.queue.filter((w) => w.lease_fingerprint !== ev.lease_fingerprint);
  };
  switch (ev.kind) {
    case 'elected':
      if (ev.from_queue) dropCandidate();
      // The value comes with the next overview (events do not carry it).
      Object.assign(e, { elected: true, owner: ev.owner || '', token: ev.token, fingerprint: ev.lease_fingerprint, value: null });
      break;
    case 'proclaimed':
      e.value = null;
      break;
    case 'resigned':
    case 'leader_expired':
    case 'leader_revoked':
      if (e.token === ev.token) e.elected = false;
      if (!e.elected && !e.candidates) state.elections.delete(ev.name);
      break;
    default: // a candidacy ended
      dropCandidate();
  }
}

// ---- history ---------------------------------------------------------------------------

async function select(kind, name) {
  state.selected = { kind, name };
  state.history = [];
  $('history-section').classList.remove('hidden');
  $('history-name').textContent = name;
  $('history-kind').textContent = kind;
  $('history-note').textContent = '(loading…)';
  state.historyError = null;
  renderLocks();
  renderSems();
  renderElections();
  try {
    // ?stale: this node's own applied state, so the history opens during an election too.
    const h = await getJSON('/v1/history/' + namePath(name) + '?stale' + (kind === 'lock' ? '' : '&kind=' + kind), 1);
    if (!state.selected || state.selected.name !== name || state.selected.kind !== kind) return;
    // Events streamed while the history was read are kept once.
    const known = new Set(h.events.map((e) => e.index + '/' + e.kind + '/' + e.token));
    state.history = h.events.concat(state.history.filter((e) => !known.has(e.index + '/' + e.kind + '/' + e.token)));
  } catch (e) {
    if (e instanceof AuthError) askToken(e.message);
    if (state.selected && state.selected.name === name) state.historyError = e.message;
  }
  if (state.selected && state.selected.name === name) renderHistory();
}

// GRANTED and ENDED are the kinds that start and end a grant, in every primitive.
const GRANTED = ['granted', 'permit_granted', 'elected'];
const ENDED = ['released', 'expired', 'revoked', 'max_hold_ended', 'permit_released', 'permit_expired', 'permit_revoked', 'permit_max_hold_ended', 'resigned', 'leader_expired', 'leader_revoked'];

function describe(ev) {
  const parts = [];
  if (ev.token) parts.push((ev.kind === 'elected' || ev.kind === 'proclaimed' ? 'term ' : 'token ') + ev.token);
  if (ev.owner) parts.push(GRANTED.includes(ev.kind) ? 'to ' + ev.owner : 'held by ' + ev.owner);
  if (ev.lease_fingerprint) parts.push('lease ' + ev.lease_fingerprint);
  if (ev.from_queue) parts.push('from the queue' + (ev.waited_ms ? ' after ' + duration(ev.waited_ms) : ''));
  else if (ev.waited_ms) parts.push('waited ' + duration(ev.waited_ms));
  if (/expired$/.test(ev.kind) && ev.deadline_ms) parts.push('deadline ' + clusterTimeLabel(ev.deadline_ms));
  if (ev.renewed_ms) parts.push('last renewed ' + clusterTimeLabel(ev.renewed_ms) + ' (' + duration(ev.deadline_ms - ev.renewed_ms) + ' before its deadline)');
  if (/timed_out$/.test(ev.kind) && ev.deadline_ms) parts.push('wait deadline ' + clusterTimeLabel(ev.deadline_ms));
  if (ev.detail) parts.push(ev.detail);
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
    el('li', { class: GRANTED.includes(ev.kind) ? 'granted' : (ENDED.includes(ev.kind) ? (/released|resigned/.test(ev.kind) ? 'released' : 'expired') : ''), 'data-kind': ev.kind, 'data-index': ev.index },
      el('span', { class: 'when' }, clusterTimeLabel(ev.time_ms)),
      el('span', { class: 'kind' }, ev.kind.replaceAll('_', ' ')),
      el('span', {}, describe(ev)))));
  renderTimeline();
}

// renderTimeline draws each grant as a bar from its grant to its end (or to now), and
// each end by expiry or revoke as a red mark, over the span of the recorded history. A
// semaphore's permits overlap: each bar takes the first lane free at its start.
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
  const bars = []; // {from, to, current, title, lane}
  const marks = [];
  const open = new Map(); // token -> {ev, lane}
  const lanes = []; // lanes[i]: the token in lane i, or null when free
  const close = (tok, to, current) => {
    const g = open.get(tok);
    bars.push({ from: g.ev.time_ms, to, current, lane: g.lane, title: (state.selected && state.selected.kind === 'election' ? 'term ' : 'token ') + tok + ' ' + (g.ev.owner || '') + (current ? ' (held)' : '') });
    lanes[g.lane] = null;
    open.delete(tok);
  };
  for (const ev of evs) {
    if (GRANTED.includes(ev.kind)) {
      if (state.selected && state.selected.kind !== 'semaphore') for (const tok of [...open.keys()]) close(tok, ev.time_ms, false);
      let lane = lanes.indexOf(null);
      if (lane < 0) lane = lanes.push(null) - 1;
      lanes[lane] = ev.token;
      open.set(ev.token, { ev, lane });
    } else if (ENDED.includes(ev.kind)) {
      if (open.has(ev.token)) close(ev.token, ev.time_ms, false);
      if (!/released|resigned/.test(ev.kind)) marks.push(ev.time_ms);
    }
  }
  for (const tok of [...open.keys()]) close(tok, end, true);
  const n = Math.max(lanes.length, 1);
  const h = 32 / n;
  for (const b of bars) {
    const r = document.createElementNS(ns, 'rect');
    r.setAttribute('class', 'grant' + (b.current ? ' current' : ''));
    r.setAttribute('x', x(b.from));
    r.setAttribute('y', 4 + b.lane * h);
    r.setAttribute('width', Math.max(x(b.to) - x(b.from), 2));
    r.setAttribute('height', Math.max(h - 2, 2));
    const t = document.createElementNS(ns, 'title');
    t.textContent = b.title;
    r.append(t);
    svg.append(r);
  }
  for (const m of marks) {
    const l = document.createElementNS(ns, 'line');
    l.setAttribute('class', 'end');
    l.setAttribute('x1', x(m));
    l.setAttribute('x2', x(m));
    l.setAttribute('y1', 2);
    l.setAttribute('y2', 38);
    svg.append(l);
  }
}

// ---- use per identity ------------------------------------------------------------------

function restartUsage() {
  state.usageMode = '';
  state.usage = null;
  state.tokenNames.clear();
  state.tokensAt = -Infinity;
  state.tokensUnavailable = false;
  if (state.usageAbort) state.usageAbort.abort();
}

// usageLoop reads the use per identity: every identity's (GET /v1/usage?all) for a token
// with admin on the empty prefix (or with ACLs off), and the caller's own (GET /v1/usage)
// once ?all is refused; the mode is found again when the token changes.
async function usageLoop() {
  for (;;) {
    const ctrl = new AbortController();
    state.usageAbort = ctrl;
    const started = performance.now();
    try {
      if (state.usageMode !== 'own') {
        try {
          const all = await getJSON('/v1/usage?all', 1, ctrl.signal);
          state.usageMode = 'all';
          state.usage = { all };
        } catch (e) {
          if (!(e instanceof AuthError) || e.status !== 403) throw e;
          state.usageMode = 'own'; // not an admin: its own use only
        }
        if (state.usageMode === 'all' && !state.tokensUnavailable && started - state.tokensAt >= TOKENS_EVERY_MS) {
          state.tokensAt = started;
          try {
            const list = await getJSON('/v1/acl/tokens', 1, ctrl.signal);
            state.tokenNames = new Map(list.tokens.map((t) => [t.accessor_id, t.description || '']));
          } catch (e) {
            if (ctrl.signal.aborted) throw e;
            state.tokensUnavailable = true; // ACLs off, or no right to list them: accessors alone
          }
        }
      }
      if (state.usageMode === 'own') state.usage = { own: await getJSON('/v1/usage', 1, ctrl.signal) };
      $('usage-note').textContent = state.usageMode === 'all' ? '(every identity, the most used first; read every 15 s)' : '(this token\'s own use; every identity\'s needs admin on the empty prefix)';
    } catch (e) {
      if (!ctrl.signal.aborted) $('usage-note').textContent = '(' + e.message + ')';
    }
    renderUsage();
    await sleep(started + USAGE_EVERY_MS - performance.now(), ctrl.signal);
  }
}

// useCell shows one quota's use: used / limit, and a bar that warns from 80 %.
function useCell(u, key) {
  const frac = u.limit ? u.used / u.limit : 0;
  const td = el('td', { class: 'use' + (frac >= 1 ? ' full' : frac >= 0.8 ? ' high' : ''), 'data-key': key, 'data-used': u.used, 'data-limit': u.limit },
    u.used + ' / ' + (u.limit ? u.limit : '\u221e'));
  const bar = el('span', { class: 'bar' }, el('span', {}));
  bar.firstChild.setAttribute('class', 'fill');
  bar.firstChild.dataset.frac = String(Math.min(frac, 1));
  td.append(bar);
  return td;
}

function usageRow(u, cls) {
  const tr = el('tr', { 'data-identity': u.identity, class: cls || '' },
    el('td', { class: 'mono' }, cls === 'cluster' ? 'the whole cluster' : (u.identity || '(none: leases made without ACLs)')),
    el('td', { class: 'muted' }, state.tokenNames.get(u.identity) || (u.identity === 'anonymous' ? 'callers without a token' : '')),
    useCell(u.leases, 'leases'), useCell(u.locks, 'locks'), useCell(u.waiters, 'waiters'));
  return tr;
}

function renderUsage() {
  const rows = [];
  const u = state.usage;
  if (u && u.all) {
    const frac = (x) => Math.max(...['leases', 'locks', 'waiters'].map((k) => (x[k].limit ? x[k].used / x[k].limit : 0)));
    const ids = u.all.identities.slice().sort((a, b) => frac(b) - frac(a) || b.locks.used - a.locks.used || (a.identity < b.identity ? -1 : 1));
    for (const x of ids.slice(0, USAGE_SHOWN)) rows.push(usageRow(x));
    if (ids.length > USAGE_SHOWN) rows.push(el('tr', { class: 'more' }, el('td', { colspan: '5', class: 'muted' }, '+' + (ids.length - USAGE_SHOWN) + ' more identities, less used')));
    rows.push(usageRow(u.all.cluster, 'cluster'));
  } else if (u && u.own) {
    rows.push(usageRow(u.own, 'own'));
  }
  $('usage').querySelector('tbody').replaceChildren(...rows);
  // The bars' widths are set through the CSSOM (the CSP allows no inline style).
  for (const f of $('usage').querySelectorAll('.fill')) f.style.width = (parseFloat(f.dataset.frac) * 100).toFixed(1) + '%';
  $('usage-empty').classList.toggle('hidden', !(u && u.all && u.all.identities.length === 0));
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

async function metricsLoop() {
  for (;;) {
    const started = performance.now();
    try {
      await budget.take(1);
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
    await sleep(started + METRICS_EVERY_MS - performance.now());
  }
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

// newView forgets what the page shows and reads it again: a new prefix or page.
function newView() {
  state.locks.clear();
  state.sems.clear();
  state.elections.clear();
  state.gone.clear();
  state.page = { truncated: false, next: '', last: '' };
  renderLocks();
  renderSems();
  renderElections();
  restartOverview();
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
      state.after = '';
      state.pages = [];
      state.lastEventId = null; // a new prefix starts a new stream
      newView();
      restartStream();
    }, 250);
  });
  $('locks-next').addEventListener('click', () => {
    if (!state.page.truncated) return;
    state.pages.push(state.after);
    state.after = state.page.next;
    newView();
  });
  $('locks-prev').addEventListener('click', () => {
    state.after = state.pages.pop() || '';
    newView();
  });
  // TTLs and ages count down between reads; the stale banner counts up.
  setInterval(() => {
    renderLocks();
    renderStale();
    if (state.selected) renderTimeline();
  }, 1000);
  // /healthz needs no token: the page names its node before any token is given.
  fetch('/healthz', { cache: 'no-store' })
    .then((r) => (r.ok ? r.json() : null))
    .then((h) => {
      if (h && h.node && $('self').textContent === '?') $('self').textContent = h.node;
    })
    .catch(() => {});
  budget.spent.push([performance.now(), 1]); // that /healthz
  overviewLoop();
  metricsLoop();
  usageLoop();
  streamLoop();
}

document.addEventListener('DOMContentLoaded', start);
