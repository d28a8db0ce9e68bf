// What the tasks view shows of one task beside its timeline, from the
// operator API: its push deliveries (GET /ops/v1/tasks/{id}/pushes), the
// tasks it delegated and the task that delegated it (…/delegations), as
// links that open them, and its trace (…/trace): a link to Jaeger's UI
// and a waterfall of its spans, which the edge reads from Jaeger's query
// API so that the page stays on its own origin.
import { getJSON, HTTPError } from './api.js';
import { poller } from './poller.js';
import { stateName } from './parts.js';

// EVERY_MS is how often deliveries and delegations are read again while
// the task is open; once the task has ended and no delivery waits for a
// retry, QUIET_READS more reads end it (deliveries lag the task's end).
const EVERY_MS = 2000;
const QUIET_READS = 5;
// TRACE_READS bounds the reads of a trace Jaeger does not have yet (its
// spans arrive in batches, seconds after the calls).
const TRACE_READS = 15;

// related returns the sections of task id: nodes to show, ended(state)
// to call when the task's state changes, and stop() when the view
// closes. onOpen(taskId) opens a related task.
export function related(id, onOpen) {
  const base = 'ops/v1/tasks/' + encodeURIComponent(id) + '/';
  const pushes = section('pushes', 'Push deliveries');
  const deleg = section('delegations', 'Delegations');
  const trace = section('trace', 'Trace');
  let ended = false;
  let quiet = 0;

  const follow = poller(async (signal) => {
    const [p, d] = await Promise.all([getJSON(base + 'pushes', signal), getJSON(base + 'delegations', signal)]);
    return { p, d };
  }, ({ p, d }) => {
    const waiting = showPushes(pushes.body, p);
    showDelegations(deleg.body, d, onOpen);
    quiet = ended && !waiting ? quiet + 1 : 0;
    if (quiet >= QUIET_READS) follow.stop();
  }, (err) => {
    const msg = 'Cannot read them (' + err.message + ')';
    pushes.body.replaceChildren(line(msg, 'error'));
    deleg.body.replaceChildren(line(msg, 'error'));
    return err instanceof HTTPError && (err.status === 401 || err.status === 404) ? 'stop' : 'retry';
  }, { everyMs: EVERY_MS });

  let traceReads = 0;
  const spans = poller((signal) => getJSON(base + 'trace', signal), (doc) => {
    traceReads++;
    showTrace(trace.body, doc);
    if (!doc.traceId || !doc.query || doc.spans.length > 0 || doc.error || traceReads >= TRACE_READS) spans.stop();
  }, (err) => {
    trace.body.replaceChildren(line('Cannot read the trace (' + err.message + ')', 'error'));
    return 'stop';
  }, { everyMs: EVERY_MS });

  follow.refresh();
  spans.refresh();
  return {
    nodes: [pushes.el, deleg.el, trace.el],
    ended(state) { ended = state; },
    stop() { follow.stop(); spans.stop(); },
  };
}

function section(cls, title) {
  const el = document.createElement('section');
  el.className = 'related ' + cls;
  const h = document.createElement('h3');
  h.textContent = title;
  const body = document.createElement('div');
  body.append(line('loading…'));
  el.append(h, body);
  return { el, body };
}

// showPushes shows each push config with its last attempts; it returns
// whether a delivery waits for a retry.
function showPushes(el, doc) {
  if (!doc.enabled) {
    el.replaceChildren(line('This edge does not deliver push notifications.'));
    return false;
  }
  if (!doc.configs.length) {
    el.replaceChildren(line('No push notification config.'));
    return false;
  }
  let waiting = false;
  el.replaceChildren(...doc.configs.map((c) => {
    const div = document.createElement('div');
    div.className = 'push-config';
    div.dataset.config = c.configId;
    const table = document.createElement('table');
    const head = table.createTHead().insertRow();
    for (const h of ['event', 'attempt', 'time', 'outcome', 'next retry']) {
      const th = document.createElement('th');
      th.textContent = h;
      head.append(th);
    }
    const body = table.createTBody();
    for (const a of c.attempts) {
      const tr = body.insertRow();
      tr.dataset.outcome = a.outcome;
      tr.dataset.seq = String(a.seq);
      cell(tr, '#' + a.seq, 'num');
      cell(tr, String(a.attempt), 'num attempt');
      cell(tr, clock(a.time));
      cell(tr, outcome(a), 'outcome');
      cell(tr, a.nextRetry ? clock(a.nextRetry) : '', 'next');
    }
    // An event whose last attempt failed waits for its retry.
    const last = new Map();
    for (const a of c.attempts) last.set(a.seq, a);
    if (Array.from(last.values()).some((a) => a.outcome === 'failed')) waiting = true;
    div.append(line('config ' + c.configId + ' → ' + c.url, 'role'),
      c.attempts.length ? table : line('No delivery attempted yet.'));
    return div;
  }));
  return waiting;
}

function outcome(a) {
  const status = a.status ? 'HTTP ' + a.status : (a.error || '');
  switch (a.outcome) {
    case 'delivered': return 'delivered · ' + status;
    case 'failed': return 'failed · ' + status;
    case 'refused': return 'refused by the SSRF guard' + (a.error ? ' · ' + a.error : '');
    case 'gave-up': return 'gave up · ' + status;
    default: return a.outcome;
  }
}

function showDelegations(el, doc, onOpen) {
  const parts = [];
  if (doc.parent) {
    const p = line('delegated by ' + (doc.parent.agent ? doc.parent.agent + ' · ' : ''), 'parent');
    p.append(taskLink(doc.parent.taskId, onOpen));
    parts.push(p);
  }
  if (doc.children.length) {
    const ul = document.createElement('ul');
    ul.className = 'children';
    for (const c of doc.children) {
      const li = document.createElement('li');
      li.dataset.task = c.taskId;
      li.append(taskLink(c.taskId, onOpen), document.createTextNode(' · ' + c.agent + (c.state ? ' · ' + stateName(c.state) : '')));
      ul.append(li);
    }
    parts.push(line('delegated to', 'role'), ul);
    if (doc.more) parts.push(line('and more (the first ' + doc.children.length + ' are listed)'));
  }
  if (!parts.length) parts.push(line('No delegation.'));
  el.replaceChildren(...parts);
}

function taskLink(id, onOpen) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = 'link';
  b.textContent = id;
  b.addEventListener('click', () => onOpen(id));
  return b;
}

function showTrace(el, doc) {
  if (!doc.traceId) {
    el.replaceChildren(line('The task was not traced.'));
    return;
  }
  const parts = [line('trace ' + doc.traceId, 'role')];
  if (doc.uiUrl && ['http:', 'https:'].includes(new URL(doc.uiUrl, document.baseURI).protocol)) {
    const a = document.createElement('a');
    a.href = doc.uiUrl;
    a.target = '_blank';
    a.rel = 'noopener noreferrer';
    a.className = 'jaeger';
    a.textContent = 'Open in Jaeger';
    parts.push(a);
  }
  if (doc.error) parts.push(line(doc.error, 'error'));
  else if (doc.query && !doc.spans.length) parts.push(line('Jaeger has no span of this trace yet.'));
  if (doc.spans.length) parts.push(waterfall(doc.spans));
  el.replaceChildren(...parts);
}

// waterfall draws one bar per span, offset and wide by its time within
// the trace, under its parent and indented by its depth.
function waterfall(spans) {
  const byID = new Map(spans.map((s) => [s.spanId, s]));
  const kids = new Map();
  const roots = [];
  for (const s of spans) { // spans come by start time
    if (s.parentId && byID.has(s.parentId) && s.parentId !== s.spanId) {
      if (!kids.has(s.parentId)) kids.set(s.parentId, []);
      kids.get(s.parentId).push(s);
    } else {
      roots.push(s);
    }
  }
  const t0 = Math.min(...spans.map((s) => s.start));
  const total = Math.max(1, ...spans.map((s) => s.start + s.duration - t0));
  const ol = document.createElement('ol');
  ol.className = 'waterfall';
  const seen = new Set();
  const walk = (s, depth) => {
    if (seen.has(s.spanId) || seen.size >= spans.length) return;
    seen.add(s.spanId);
    const li = document.createElement('li');
    li.dataset.span = s.spanId;
    li.dataset.depth = String(depth);
    if (s.error) li.className = 'error';
    const label = line(s.service + ' · ' + s.name + ' · ' + ms(s.duration), 'label');
    label.style.paddingLeft = depth + 'rem';
    const track = document.createElement('div');
    track.className = 'track';
    const bar = document.createElement('div');
    bar.className = 'bar';
    bar.style.marginLeft = (100 * (s.start - t0) / total).toFixed(2) + '%';
    bar.style.width = Math.max(0.3, 100 * s.duration / total).toFixed(2) + '%';
    track.append(bar);
    li.append(label, track);
    ol.append(li);
    for (const k of kids.get(s.spanId) || []) walk(k, depth + 1);
  };
  for (const r of roots) walk(r, 0);
  return ol;
}

function ms(us) {
  return us >= 1000 ? (us / 1000).toFixed(1) + ' ms' : us + ' µs';
}

function clock(iso) {
  const t = new Date(iso);
  return t.toLocaleTimeString() + '.' + String(t.getMilliseconds()).padStart(3, '0');
}

function cell(tr, text, cls) {
  const td = tr.insertCell();
  if (cls) td.className = cls;
  td.textContent = text;
}

function line(text, cls) {
  const p = document.createElement('p');
  if (cls) p.className = cls;
  p.textContent = text;
  return p;
}
