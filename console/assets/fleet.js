// The fleet view: every live agent with its workers, its work queue's
// figures and its skills, from GET /ops/v1/fleet.
//
// Polling is bounded: one request at a time, each aborted after
// REQUEST_TIMEOUT_MS, the next one POLL_MS after the last answer while
// the tab is visible; after a failure the wait doubles up to
// MAX_BACKOFF_MS. A 401 stops polling until the key changes. Rows are
// updated in place: an update rewrites only the cells that changed.
import { getJSON, HTTPError } from './api.js';

export const POLL_MS = 2000;
const REQUEST_TIMEOUT_MS = 10000;
const MAX_BACKOFF_MS = 30000;

const figures = [
  ['workers', (a) => a.workers],
  ['pending', (a) => a.queue.pending],
  ['in-flight', (a) => a.queue.inFlight],
  ['redelivered', (a) => a.queue.redelivered],
  ['dead-letters', (a) => a.queue.deadLetters],
];

export function startFleet({ body, state }, onAgents) {
  const rows = new Map(); // agent name -> {tr, cells, skillsKey}
  let timer = 0;
  let inFlight = false;
  let wait = POLL_MS;
  let stopped = false;

  async function poll() {
    timer = 0;
    if (inFlight) return;
    if (document.hidden) { schedule(POLL_MS); return; }
    inFlight = true;
    const ctl = new AbortController();
    const abort = setTimeout(() => ctl.abort(), REQUEST_TIMEOUT_MS);
    try {
      const doc = await getJSON('ops/v1/fleet', ctl.signal);
      render(doc.agents || []);
      state.textContent = (doc.agents || []).length + ' live agents, updated ' + new Date().toLocaleTimeString();
      state.className = '';
      wait = POLL_MS;
    } catch (e) {
      state.className = 'error';
      if (e instanceof HTTPError && e.status === 401) {
        state.textContent = 'The edge asks for an API key: enter one above.';
        stopped = true;
      } else {
        state.textContent = 'Cannot read the fleet (' + e.message + '); retrying.';
        wait = Math.min(wait * 2, MAX_BACKOFF_MS);
      }
    } finally {
      clearTimeout(abort);
      inFlight = false;
    }
    if (!stopped) schedule(wait);
  }

  function schedule(ms) {
    if (!timer) timer = setTimeout(poll, ms);
  }

  function render(agents) {
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
      for (const [cls, get] of figures) setText(row.cells[cls], String(get(a) ?? ''));
      const skills = (a.card && a.card.skills) || [];
      const key = JSON.stringify(skills.map((s) => [s.id, s.name, s.description]));
      if (key !== row.skillsKey) {
        row.skillsKey = key;
        row.skills.replaceChildren(...skills.map(skillItem));
      }
    });
    for (const [name, row] of rows) {
      if (!seen.has(name)) { row.tr.remove(); rows.delete(name); }
    }
    onAgents(agents.map((a) => a.name));
  }

  return {
    // refresh polls now, as after a change of key.
    refresh() {
      stopped = false;
      wait = POLL_MS;
      clearTimeout(timer);
      timer = 0;
      poll();
    },
  };
}

function newRow(name) {
  const tr = document.createElement('tr');
  tr.dataset.agent = name;
  const first = document.createElement('td');
  const strong = document.createElement('strong');
  strong.textContent = name;
  const desc = document.createElement('div');
  desc.className = 'desc';
  first.append(strong, desc);
  tr.append(first);
  const cells = {};
  for (const [cls] of figures) {
    const td = document.createElement('td');
    td.className = 'num ' + cls;
    cells[cls] = td;
    tr.append(td);
  }
  const skillsTd = document.createElement('td');
  const skills = document.createElement('ul');
  skills.className = 'skills';
  skillsTd.append(skills);
  tr.append(skillsTd);
  return { tr, desc, cells, skills, skillsKey: '' };
}

function skillItem(s) {
  const li = document.createElement('li');
  li.textContent = s.name || s.id;
  if (s.description) li.title = s.description;
  return li;
}

function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}
