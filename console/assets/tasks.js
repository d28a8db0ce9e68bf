// The tasks view: the caller's tasks (ListTasks), newest change first,
// filtered by agent, state and context, a page at a time; and one task
// opened (GetTask) with its messages and artifacts, and its timeline:
// every event of its log with its position and time, replayed from the
// operator API (GET /ops/v1/tasks/{id}/events) and, while the task runs,
// followed from the last position read, so nothing is missed or shown
// twice across reconnects.
//
// The first page follows the mesh: while the view is shown it is asked
// again every POLL_MS (poller.js: one request at a time, bounded, backing
// off after failures) and its rows are updated in place. Later pages
// stay as read: a page token is a position in a list that moves.
import { callRPC, getJSON, HTTPError } from './api.js';
import { poller } from './poller.js';
import { stateName, messageText, partBlock, terminal } from './parts.js';
import { related } from './related.js';

const POLL_MS = 3000;
// FOLLOW_MS is how often an open task that runs is asked for new events;
// one read takes at most LOG_PAGES pages of the log.
const FOLLOW_MS = 1000;
const LOG_PAGES = 50;

export function startTasks(el) {
  const rows = new Map(); // task id -> {tr, cells}
  let tokens = ['']; // page tokens of the pages read so far: tokens[i] reads page i
  let page = 0;
  let shown = false;
  let openID = '';
  let follow = null; // the poller of the open task's log
  let rel = null; // the open task's deliveries, delegations and trace (related.js)

  const filter = () => ({
    agent: el.agent.value,
    params: {
      pageSize: Number(el.size.value) || 20,
      ...(el.state.value && { status: el.state.value }),
      ...(el.context.value.trim() && { contextId: el.context.value.trim() }),
      historyLength: 1, // the last message, when the status has none
    },
  });

  const poll = poller(async (signal) => {
    const f = filter();
    const params = { ...f.params, ...(tokens[page] && { pageToken: tokens[page] }) };
    return callRPC(f.agent, 'ListTasks', params, { signal });
  }, (res) => {
    render(res.tasks || []);
    tokens = tokens.slice(0, page + 1);
    if (res.nextPageToken) tokens.push(res.nextPageToken);
    el.newer.disabled = page === 0;
    el.older.disabled = !res.nextPageToken;
    el.page.textContent = 'page ' + (page + 1) + (res.totalSize !== undefined ? ' of ' + res.totalSize + ' tasks' : '');
    el.status.textContent = (page === 0 ? 'following the newest, ' : '') + 'read ' + new Date().toLocaleTimeString();
    el.status.className = '';
    if (page > 0) poll.stop();
  }, (err) => {
    el.status.className = 'error';
    if (err.status === 401) {
      el.status.textContent = 'The edge asks for an API key or a bearer token: enter one above.';
      render([]);
      return 'stop';
    }
    el.status.textContent = 'Cannot list the tasks (' + err.message + '); retrying.';
    return 'retry';
  }, { everyMs: POLL_MS });

  function reload(toPage) {
    page = toPage;
    if (shown) poll.refresh();
  }

  function render(tasks) {
    const seen = new Set();
    tasks.forEach((t, i) => {
      seen.add(t.id);
      let row = rows.get(t.id);
      if (!row) {
        row = newRow(t.id, () => open(t.id));
        rows.set(t.id, row);
      }
      if (el.body.children[i] !== row.tr) el.body.insertBefore(row.tr, el.body.children[i] || null);
      const st = t.status || {};
      row.tr.dataset.state = stateName(st.state);
      setText(row.cells.state, stateName(st.state));
      setText(row.cells.context, t.contextId || '');
      setText(row.cells.updated, st.timestamp ? new Date(st.timestamp).toLocaleString() : '');
      const hist = t.history || [];
      setText(row.cells.message, messageText(st.message || hist[hist.length - 1]));
    });
    for (const [id, row] of rows) {
      if (!seen.has(id)) { row.tr.remove(); rows.delete(id); }
    }
  }

  // open shows one task: its state, messages and artifacts; agent is the
  // endpoint it is read from ("": /a2a, which finds any of the caller's
  // tasks, as for a task opened from another one's links).
  async function open(id, agent = el.agent.value) {
    if (follow) follow.stop();
    follow = null;
    if (rel) rel.stop();
    rel = null;
    openID = id;
    el.detail.hidden = false;
    el.detailTitle.textContent = 'Task ' + id;
    el.detailBody.replaceChildren(line('loading…'));
    let t;
    try {
      t = await callRPC(agent, 'GetTask', { id, historyLength: 100 });
    } catch (e) {
      if (openID === id) el.detailBody.replaceChildren(line('Cannot read the task: ' + e.message, 'error'));
      return;
    }
    if (openID !== id) return;
    const st = t.status || {};
    const facts = line('', 'facts');
    const setState = (state) => {
      el.detail.dataset.state = state;
      facts.textContent = 'state ' + state + ' · context ' + (t.contextId || '');
    };
    setState(stateName(st.state));
    const parts = [facts];
    let cancel = null;
    if (!terminal(stateName(st.state))) {
      cancel = document.createElement('button');
      cancel.type = 'button';
      cancel.className = 'cancel';
      cancel.textContent = 'Cancel task';
      cancel.addEventListener('click', async () => {
        cancel.disabled = true;
        try {
          await callRPC(agent, 'CancelTask', { id });
          open(id, agent);
        } catch (e) {
          cancel.disabled = false;
          facts.textContent += ' · cancel: ' + e.message;
        }
      });
      parts.push(cancel);
    }
    const msgs = document.createElement('ol');
    msgs.className = 'messages';
    for (const m of t.history || []) {
      const li = document.createElement('li');
      li.className = stateName(m.role).replace(/^role-/, '');
      li.append(line(stateName(m.role).replace(/^role-/, ''), 'role'), ...(m.parts || []).map(partBlock));
      msgs.append(li);
    }
    parts.push(heading('Messages'), msgs, heading('Artifacts'));
    for (const a of t.artifacts || []) {
      const div = document.createElement('div');
      div.className = 'artifact';
      div.dataset.name = a.name || '';
      div.append(line(a.name || a.artifactId, 'role'), ...(a.parts || []).map(partBlock));
      parts.push(div);
    }
    rel = related(id, (other) => open(other, ''));
    rel.ended(terminal(stateName(st.state)));
    parts.push(...rel.nodes);
    const timeline = document.createElement('ol');
    timeline.className = 'timeline';
    parts.push(heading('Timeline'), timeline);
    el.detailBody.replaceChildren(...parts);

    let after = 0;
    follow = poller(async (signal) => {
      // The log from the last event read, a page at a time.
      const got = [];
      let doc;
      for (let i = 0; i < LOG_PAGES; i++) {
        doc = await getJSON('ops/v1/tasks/' + encodeURIComponent(id) + '/events?after=' + (got.length ? got[got.length - 1].seq : after), signal);
        got.push(...doc.events);
        if (!doc.more) break;
      }
      return { state: doc.state, more: doc.more, events: got };
    }, (doc) => {
      let state = '';
      for (const ev of doc.events) {
        timeline.append(eventItem(ev));
        after = ev.seq;
        const e = ev.event || {};
        const s = (e.task && e.task.status) || (e.statusUpdate && e.statusUpdate.status);
        if (s) state = stateName(s.state);
      }
      if (state) setState(state);
      if (terminal(state || stateName(doc.state)) && !doc.more) {
        if (cancel) cancel.hidden = true;
        timeline.dataset.complete = 'true';
        if (rel) rel.ended(true);
        follow.stop();
      }
    }, (err) => {
      timeline.append(line('Cannot read the timeline (' + err.message + ')' +
        (err instanceof HTTPError && err.status === 401 ? '' : '; retrying'), 'error'));
      return err instanceof HTTPError && (err.status === 401 || err.status === 404) ? 'stop' : 'retry';
    }, { everyMs: FOLLOW_MS });
    follow.refresh();
  }

  for (const s of [el.agent, el.state, el.size]) s.addEventListener('change', () => reload(0));
  el.form.addEventListener('submit', (ev) => { ev.preventDefault(); reload(0); });
  el.newer.addEventListener('click', () => reload(Math.max(0, page - 1)));
  el.older.addEventListener('click', () => { if (tokens[page + 1]) reload(page + 1); });
  el.close.addEventListener('click', () => {
    openID = '';
    if (follow) follow.stop();
    follow = null;
    if (rel) rel.stop();
    rel = null;
    el.detail.hidden = true;
  });

  return {
    // show starts or stops following the list, as the view is shown.
    show(on) {
      shown = on;
      if (on) poll.refresh();
      else poll.stop();
    },
    // refresh reads the list again, as after a change of key.
    refresh() {
      if (shown) poll.refresh();
    },
    // setAgents offers the live agents in the agent filter.
    setAgents(names) {
      const have = Array.from(el.agent.options, (o) => o.value).slice(1);
      if (have.join('\n') === names.join('\n')) return;
      const current = el.agent.value;
      const all = document.createElement('option');
      all.value = '';
      all.textContent = 'all';
      el.agent.replaceChildren(all, ...names.map((n) => {
        const o = document.createElement('option');
        o.value = n;
        o.textContent = n;
        return o;
      }));
      el.agent.value = names.includes(current) ? current : '';
    },
  };
}

function newRow(id, onOpen) {
  const tr = document.createElement('tr');
  tr.dataset.task = id;
  const idCell = document.createElement('td');
  const btn = document.createElement('button');
  btn.type = 'button';
  btn.className = 'link';
  btn.textContent = id;
  btn.addEventListener('click', onOpen);
  idCell.append(btn);
  tr.append(idCell);
  const cells = {};
  for (const cls of ['state', 'context', 'updated', 'message']) {
    const td = document.createElement('td');
    td.className = cls;
    cells[cls] = td;
    tr.append(td);
  }
  return { tr, cells };
}

// eventItem shows one event of a task's log: its position, time and kind,
// then what it carries.
function eventItem(ev) {
  const li = document.createElement('li');
  li.dataset.seq = String(ev.seq);
  const e = ev.event || {};
  const t = new Date(ev.time);
  const when = t.toLocaleTimeString() + '.' + String(t.getMilliseconds()).padStart(3, '0');
  let kind = '';
  let body = [];
  if (e.task) {
    kind = 'task · ' + stateName(e.task.status && e.task.status.state);
  } else if (e.statusUpdate) {
    const s = e.statusUpdate.status || {};
    kind = 'status · ' + stateName(s.state);
    body = ((s.message && s.message.parts) || []).map(partBlock);
  } else if (e.artifactUpdate) {
    const a = e.artifactUpdate.artifact || {};
    kind = 'artifact ' + (a.name || a.artifactId || '') + (e.artifactUpdate.append ? ' · append' : '') +
      (e.artifactUpdate.lastChunk ? ' · last chunk' : '');
    body = (a.parts || []).map(partBlock);
  } else if (e.message) {
    kind = 'message · ' + stateName(e.message.role).replace(/^role-/, '');
    body = (e.message.parts || []).map(partBlock);
  }
  li.dataset.kind = kind.split(' ')[0];
  li.append(line('#' + ev.seq + ' · ' + when + ' · ' + kind, 'role'), ...body);
  return li;
}

function line(text, cls) {
  const p = document.createElement('p');
  if (cls) p.className = cls;
  p.textContent = text;
  return p;
}

function heading(text) {
  const h = document.createElement('h3');
  h.textContent = text;
  return h;
}

function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}
