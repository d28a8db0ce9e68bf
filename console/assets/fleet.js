// The fleet view: every known agent with its live workers (an agent
// none of whose workers runs is shown queuing, with when one was last
// seen: its sends wait in its queue), its work queue's
// figures, its newest dead letters, its skills, what its card says and
// the card's checks against the specification, from GET /ops/v1/fleet.
//
// Polling is bounded (poller.js): one request at a time, each aborted
// after REQUEST_TIMEOUT_MS, the next one POLL_MS after the last answer
// while the tab is visible; after a failure the wait doubles up to
// MAX_BACKOFF_MS. A 401 stops polling until the key changes. Rows are
// updated in place: an update rewrites only the cells that changed.
import { getJSON, callRPC, HTTPError } from './api.js';
import { poller } from './poller.js';
import { messageText } from './parts.js';

export const POLL_MS = 2000;
const REQUEST_TIMEOUT_MS = 10000;
const MAX_BACKOFF_MS = 30000;
// FAILED_TASKS bounds the failed tasks an agent's row lists when asked.
const FAILED_TASKS = 5;

const figures = [
  ['workers', (a) => a.workers],
  ['pending', (a) => a.queue.pending],
  ['in-flight', (a) => a.queue.inFlight],
  ['redelivered', (a) => a.queue.redelivered],
  ['dead-letters', (a) => a.queue.deadLetters],
];

export function startFleet({ body, state }, onAgents) {
  const rows = new Map(); // agent name -> {tr, desc, cells, skills, card, cardKey}
  const poll = poller((signal) => getJSON('ops/v1/fleet', signal), (doc) => {
    const agents = doc.agents || [];
    render(agents);
    const idle = agents.filter((a) => a.queuing).length;
    state.textContent = agents.length + ' agents' + (idle ? ' (' + idle + ' with no live worker: their sends queue)' : '') +
      ', updated ' + new Date().toLocaleTimeString();
    state.className = '';
  }, (err) => {
    state.className = 'error';
    if (err instanceof HTTPError && err.status === 401) {
      state.textContent = 'The edge asks for an API key or a bearer token: enter one above.';
      render([]);
      return 'stop';
    }
    state.textContent = 'Cannot read the fleet (' + err.message + '); retrying.';
    return 'retry';
  }, { everyMs: POLL_MS, timeoutMs: REQUEST_TIMEOUT_MS, maxMs: MAX_BACKOFF_MS });

  function render(agents) {
    if (agents.length && !performance.getEntriesByName('a2amesh-fleet').length) {
      performance.mark('a2amesh-fleet'); // the first fleet shown: time to first render
    }
    const seen = new Set();
    agents.forEach((a, i) => {
      seen.add(a.name);
      let row = rows.get(a.name);
      if (!row) {
        row = newRow(a.name);
        rows.set(a.name, row);
      }
      if (body.children[i] !== row.tr) body.insertBefore(row.tr, body.children[i] || null);
      setText(row.desc, (a.card && a.card.description) || '');
      row.tr.dataset.queuing = a.queuing ? 'true' : 'false';
      setText(row.liveness, a.queuing ? 'no live worker: sends queue' + lastSeen(a.lastSeen) : '');
      for (const [cls, get] of figures) setText(row.cells[cls], String(get(a) ?? ''));
      const card = a.card || {};
      const key = JSON.stringify([card, a.cardCheck || null, a.cardIssues || []]);
      if (key !== row.cardKey) {
        row.cardKey = key;
        row.skills.replaceChildren(...(card.skills || []).map(skillItem));
        row.card.replaceChildren(...cardFacts(card, a.cardCheck));
        showIssues(row, a.cardIssues || []);
      }
      const failures = JSON.stringify(a.failures || []);
      if (failures !== row.failuresKey) {
        row.failuresKey = failures;
        row.failures.replaceChildren(...(a.failures || []).map(failureItem));
      }
    });
    for (const [name, row] of rows) {
      if (!seen.has(name)) { row.tr.remove(); rows.delete(name); }
    }
    onAgents(agents.map((a) => a.name));
  }

  return {
    // refresh polls now, as after a change of key.
    refresh: poll.refresh,
  };
}

// lastSeen says when a worker was last seen, from an RFC 3339 time.
function lastSeen(at) {
  const t = at ? new Date(at) : null;
  if (!t || isNaN(t) || t.getFullYear() < 2000) return '';
  return ' · last seen ' + t.toLocaleString();
}

function newRow(name) {
  const tr = document.createElement('tr');
  tr.dataset.agent = name;
  const first = document.createElement('td');
  const strong = document.createElement('strong');
  strong.textContent = name;
  const desc = document.createElement('div');
  desc.className = 'desc';
  const liveness = document.createElement('div');
  liveness.className = 'liveness';
  const details = document.createElement('details');
  const summary = document.createElement('summary');
  summary.textContent = 'card';
  const card = document.createElement('dl');
  details.append(summary, card);
  const checks = document.createElement('details');
  checks.className = 'checks';
  const checksSummary = document.createElement('summary');
  const issues = document.createElement('ul');
  issues.className = 'card-issues';
  checks.append(checksSummary, issues);
  first.append(strong, desc, liveness, details, checks);
  tr.append(first);
  const cells = {};
  for (const [cls] of figures) {
    const td = document.createElement('td');
    td.className = 'num ' + cls;
    cells[cls] = td;
    tr.append(td);
  }
  const failuresTd = document.createElement('td');
  failuresTd.className = 'recent';
  const failures = document.createElement('ul');
  failures.className = 'failures';
  // The agent's newest failed tasks: read when opened (ListTasks on the
  // agent's endpoint, status failed), not polled.
  const failed = document.createElement('details');
  failed.className = 'failed-tasks';
  const failedSummary = document.createElement('summary');
  failedSummary.textContent = 'failed tasks';
  const failedList = document.createElement('ul');
  failedList.className = 'failed-list';
  failed.append(failedSummary, failedList);
  failed.addEventListener('toggle', () => {
    if (failed.open) loadFailed(name, failedSummary, failedList);
  });
  failuresTd.append(failures, failed);
  tr.append(failuresTd);
  const skillsTd = document.createElement('td');
  const skills = document.createElement('ul');
  skills.className = 'skills';
  skillsTd.append(skills);
  tr.append(skillsTd);
  return {
    tr, desc, liveness, cells, skills, card, cardKey: '', checksSummary, issues, failures, failuresKey: '',
  };
}

// showIssues shows the card's checks: a count of errors and warnings,
// and each issue with its field, as text.
function showIssues(row, issues) {
  const errors = issues.filter((i) => i.severity === 'error').length;
  const warnings = issues.length - errors;
  const counts = [];
  if (errors) counts.push(errors + (errors === 1 ? ' error' : ' errors'));
  if (warnings) counts.push(warnings + (warnings === 1 ? ' warning' : ' warnings'));
  row.checksSummary.textContent = 'checks: ' + (counts.join(', ') || 'the card passes');
  row.checksSummary.className = errors ? 'bad' : '';
  row.issues.replaceChildren(...issues.map((i) => {
    const li = document.createElement('li');
    li.className = i.severity === 'error' ? 'error' : 'warning';
    const field = document.createElement('code');
    field.textContent = i.field || 'card';
    li.append(i.severity + ' ', field, ': ' + i.message);
    return li;
  }));
}

// loadFailed lists the newest failed tasks of agent name, as ListTasks
// answers it: the caller's own, at most FAILED_TASKS, newest first; it
// looks at a bounded number of the agent's tasks (the edge's bound).
async function loadFailed(name, summary, list) {
  summary.textContent = 'failed tasks: reading…';
  const ctl = new AbortController();
  const abort = setTimeout(() => ctl.abort(), REQUEST_TIMEOUT_MS);
  try {
    const res = await callRPC(name, 'ListTasks',
      { status: 'TASK_STATE_FAILED', pageSize: FAILED_TASKS, historyLength: 0 }, { signal: ctl.signal });
    const tasks = res.tasks || [];
    list.replaceChildren(...tasks.map(failedItem));
    summary.textContent = 'failed tasks: ' + (tasks.length ? 'the newest ' + tasks.length : 'none');
  } catch (e) {
    summary.textContent = 'failed tasks: cannot read them (' + e.message + ')';
  } finally {
    clearTimeout(abort);
  }
}

// failedItem is one failed task: when, its id and its status message.
function failedItem(t) {
  const li = document.createElement('li');
  const st = t.status || {};
  if (st.timestamp) {
    li.title = st.timestamp;
    li.append(new Date(st.timestamp).toLocaleTimeString() + ' · ');
  }
  const id = document.createElement('code');
  id.textContent = t.id;
  li.append('task ', id);
  const text = st.message ? messageText(st.message) : '';
  if (text) li.append(' · ' + text);
  return li;
}

// failureItem is one dead letter: when, why, and its task.
function failureItem(f) {
  const li = document.createElement('li');
  const when = new Date(f.time);
  li.title = f.time;
  li.append(when.toLocaleTimeString() + ' · ' + f.reason);
  if (f.taskId) {
    const id = document.createElement('code');
    id.textContent = f.taskId;
    li.append(' · task ', id);
  }
  return li;
}

function skillItem(s) {
  const li = document.createElement('li');
  li.textContent = s.name || s.id;
  if (s.description) li.title = s.description;
  return li;
}

// cardFacts lists what a card says besides its skills, as dt/dd pairs,
// and for a proxy what it verified of its upstream card's signatures.
function cardFacts(c, check) {
  const caps = c.capabilities || {};
  const facts = [
    ['version', c.version],
    ['input', (c.defaultInputModes || []).join(', ')],
    ['output', (c.defaultOutputModes || []).join(', ')],
    ['capabilities', ['streaming', 'pushNotifications', 'extendedAgentCard'].filter((k) => caps[k]).join(', ') || 'none'],
    ['security', Object.keys(c.securitySchemes || {}).join(', ') || 'none'],
    ...(c.supportedInterfaces || []).map((i) => ['interface',
      [i.protocolBinding, i.protocolVersion, i.url, i.tenant ? 'tenant ' + i.tenant : ''].filter(Boolean).join(' ')]),
  ];
  if (check) {
    facts.push(['upstream card', [check.status, (check.kids || []).join(', '), check.jku, check.error].filter(Boolean).join(' · ')]);
  }
  return facts.flatMap(([k, v]) => {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = v || '';
    return [dt, dd];
  });
}

function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}
