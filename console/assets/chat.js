// The chat view: send a message to an agent with SendStreamingMessage
// (A2A 1.0) or message/stream (0.3) and show the task's status and output
// as the events arrive. The conversation keeps its contextId, and the
// taskId while the agent asks for input, so the next message continues
// it. Each answer has a "raw" pane with the exact JSON sent and received.
//
// When the stream drops before the turn ends (the connection breaks, the
// edge restarts), the answer resumes: SubscribeToTask (tasks/resubscribe
// in 0.3) with Last-Event-ID set to the id of the last event shown, which
// brings exactly the events after it, with no gap and no repeat. It tries
// RESUME_TRIES times, waiting RESUME_FIRST_MS, then twice as long each
// time up to RESUME_MAX_MS; an event received starts the count again. An
// answer of the edge that is not a passing fault (a JSON-RPC error other
// than -32000, or an HTTP status other than 429 and 5xx) ends it. A send
// that fails so before its first event is sent again as it was, with the
// same messageId: the mesh answers a repeated messageId with the task the
// first one started, so nothing is sent twice.
//
// What an agent sends is untrusted: it is only ever set as textContent,
// never parsed as HTML.
import { streamRPC, callRPC, newID, RPCError, HTTPError } from './api.js';
import { as10, stateName, textBlock, partBlock } from './parts.js';

// The methods and message shapes of each version.
const versions = {
  '1.0': {
    name: '1.0',
    stream: 'SendStreamingMessage', cancel: 'CancelTask', resubscribe: 'SubscribeToTask',
    message: (id, parts) => ({ role: 'ROLE_USER', messageId: id, parts }),
    text: (text) => ({ text }),
    file: (f) => ({ raw: f.b64, filename: f.name, mediaType: f.type }),
  },
  '0.3': {
    name: '0.3',
    stream: 'message/stream', cancel: 'tasks/cancel', resubscribe: 'tasks/resubscribe',
    message: (id, parts) => ({ kind: 'message', role: 'user', messageId: id, parts }),
    text: (text) => ({ kind: 'text', text }),
    file: (f) => ({ kind: 'file', file: { bytes: f.b64, name: f.name, mimeType: f.type } }),
  },
};

// Resuming a dropped stream: at most RESUME_TRIES tries in a row, the
// waits between them doubling from RESUME_FIRST_MS up to RESUME_MAX_MS.
export const RESUME_TRIES = 5;
const RESUME_FIRST_MS = 250;
const RESUME_MAX_MS = 4000;

// The states that end a turn: terminal, or waiting for the user.
const turnEnds = ['completed', 'failed', 'canceled', 'rejected', 'input-required', 'auth-required'];

// resumable says whether a failed stream may be resumed: a dropped
// connection or a passing fault, not the edge's refusal.
function resumable(e) {
  if (e instanceof RPCError) return e.code === -32000;
  if (e instanceof HTTPError) return e.status === 429 || e.status >= 500;
  return !(e instanceof SyntaxError); // a TypeError of fetch: the connection
}

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

// MAX_ATTACH bounds the attached files of one message: the edge takes
// request bodies of 1 MiB by default, and base64 adds a third.
const MAX_ATTACH = 700 * 1024;

// readFiles reads the chosen files as base64.
async function readFiles(list) {
  const out = [];
  for (const f of list) {
    const bytes = new Uint8Array(await f.arrayBuffer());
    let bin = '';
    for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    out.push({ name: f.name, type: f.type || 'application/octet-stream', size: bytes.length, b64: btoa(bin) });
  }
  return out;
}

// onEdit(agent, version, body), when set, takes a request to the raw
// view for editing.
export function startChat({ form, agent, version, input, files, send, reset, log }, onEdit) {
  let conv = {}; // {agent, contextId, taskId}

  function setAgents(names) {
    const current = agent.value;
    const have = Array.from(agent.options, (o) => o.value);
    if (have.join('\n') === names.join('\n')) return;
    agent.replaceChildren(...names.map((n) => {
      const o = document.createElement('option');
      o.value = n;
      o.textContent = n;
      return o;
    }));
    if (names.includes(current)) agent.value = current;
  }

  function newConversation() {
    conv = {};
    log.replaceChildren();
  }

  agent.addEventListener('change', () => {
    if (agent.value !== conv.agent) newConversation();
  });
  reset.addEventListener('click', newConversation);
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) form.requestSubmit();
  });

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const text = input.value;
    const name = agent.value;
    const chosen = Array.from(files.files || []);
    if (!name || (!text.trim() && !chosen.length)) return;
    const total = chosen.reduce((n, f) => n + f.size, 0);
    if (total > MAX_ATTACH) {
      entry('user', 'not sent').body.append(textBlock('attached files of ' + total + ' bytes: at most ' + MAX_ATTACH + ' go in one message'));
      return;
    }
    if (conv.agent !== name) conv = { agent: name };
    send.disabled = true;
    let attached;
    try {
      attached = await readFiles(chosen);
    } catch (e) {
      send.disabled = false;
      entry('user', 'not sent').body.append(textBlock('cannot read the files: ' + e.message));
      return;
    }
    input.value = '';
    files.value = '';
    const mine = entry('user', 'you → ' + name).body;
    if (text) mine.append(textBlock(text));
    for (const f of attached) mine.append(textBlock('file ' + f.name + ' (' + f.type + '), ' + f.size + ' bytes'));
    const v = versions[version.value] || versions['1.0'];
    const turn = new Turn(name, v, entry('agent', name), onEdit);
    const parts = [...(text ? [v.text(text)] : []), ...attached.map(v.file)];
    const message = v.message(newID(), parts);
    if (conv.contextId) message.contextId = conv.contextId;
    if (conv.taskId) message.taskId = conv.taskId;
    try {
      await follow(name, v, turn, { message });
    } finally {
      send.disabled = false;
    }
    if (turn.contextId) conv.contextId = turn.contextId;
    conv.taskId = turn.state === 'input-required' || turn.state === 'auth-required' ? turn.taskId : undefined;
  });

  // follow streams the answer to a send into turn, and resumes it after
  // the last event shown when the stream drops before the turn ends.
  async function follow(name, v, turn, params) {
    let method = v.stream;
    let lastEventId;
    let tries = 0;
    let wait = RESUME_FIRST_MS;
    for (;;) {
      let err;
      try {
        await streamRPC(name, method, params, (r, id) => {
          turn.add(r);
          if (id) lastEventId = id;
          tries = 0;
          wait = RESUME_FIRST_MS;
        }, { version: v.name, lastEventId, onRaw: (dir, t, lastId) => turn.raw(dir, t, lastId) });
      } catch (e) {
        err = e;
      }
      if (turn.ended()) return;
      if (err && !resumable(err)) { turn.fail(err.message); return; }
      const why = err ? err.message : 'the stream ended before the task did';
      if (++tries > RESUME_TRIES) {
        turn.fail('the stream dropped (' + why + ') and ' + RESUME_TRIES + ' tries to resume it failed');
        return;
      }
      turn.resuming(lastEventId, tries, why);
      await sleep(wait);
      wait = Math.min(wait * 2, RESUME_MAX_MS);
      if (turn.taskId && lastEventId) {
        method = v.resubscribe;
        params = { id: turn.taskId };
      }
      // Else nothing was shown yet: the send goes again as it was, the
      // same messageId, which the mesh answers with the task the first
      // send started, if it got that far.
    }
  }

  function entry(cls, who) {
    const li = document.createElement('li');
    li.className = cls;
    const head = document.createElement('div');
    head.className = 'state';
    head.textContent = who;
    const body = document.createElement('div');
    body.className = 'body';
    li.append(head, body);
    log.append(li);
    li.scrollIntoView({ block: 'end' });
    return { li, head, body };
  }

  return { setAgents };
}

// Turn renders the events of one streamed answer into its entry. While
// the task runs, the entry has a button that cancels it (CancelTask).
class Turn {
  constructor(agent, version, { li, head, body }, onEdit) {
    this.onEdit = onEdit;
    this.agent = agent;
    this.version = version;
    this.li = li;
    this.who = head.textContent;
    this.head = document.createElement('span');
    this.head.className = 'who';
    this.head.textContent = this.who;
    this.cancel = document.createElement('button');
    this.cancel.type = 'button';
    this.cancel.className = 'cancel';
    this.cancel.textContent = 'Cancel';
    this.cancel.hidden = true;
    this.cancel.addEventListener('click', () => this.cancelTask());
    head.replaceChildren(this.head, ' ', this.cancel);
    this.body = body;
    this.artifacts = new Map(); // artifactId -> element
    const raw = document.createElement('details');
    raw.className = 'raw';
    const summary = document.createElement('summary');
    summary.textContent = 'raw';
    this.rawLog = document.createElement('div');
    raw.append(summary, this.rawLog);
    li.append(raw);
  }

  // raw shows one JSON text as sent (with the Last-Event-ID it resumed
  // after, if any) or received, indented when it parses.
  raw(dir, text, lastEventId) {
    const pre = document.createElement('pre');
    pre.className = dir;
    let shown = text;
    try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* as it came */ }
    pre.textContent = (dir === 'sent' ? '→ ' + (lastEventId ? 'Last-Event-ID: ' + lastEventId + '\n' : '') : '← ') + shown;
    this.rawLog.append(pre);
    if (dir === 'sent' && this.onEdit) {
      const edit = document.createElement('button');
      edit.type = 'button';
      edit.className = 'edit';
      edit.textContent = 'Edit in Raw';
      edit.addEventListener('click', () => this.onEdit(this.agent, this.version.name, text));
      this.rawLog.append(edit);
    }
  }

  async cancelTask() {
    this.cancel.disabled = true;
    try {
      await callRPC(this.agent, this.version.cancel, { id: this.taskId },
        { version: this.version.name, onRaw: (dir, t) => this.raw(dir, t) });
    } catch (e) {
      this.cancel.disabled = false;
      this.note('cancel: ' + e.message);
    }
  }

  add(r) {
    if (!r) return;
    r = as10(r);
    if (r.task) {
      this.ids(r.task.id, r.task.contextId);
      this.status(r.task.status);
      for (const a of r.task.artifacts || []) this.artifact(a, false);
    } else if (r.statusUpdate) {
      this.ids(r.statusUpdate.taskId, r.statusUpdate.contextId);
      this.status(r.statusUpdate.status);
    } else if (r.artifactUpdate) {
      this.ids(r.artifactUpdate.taskId, r.artifactUpdate.contextId);
      this.artifact(r.artifactUpdate.artifact, r.artifactUpdate.append);
    } else if (r.message) {
      this.answered = true;
      this.ids(r.message.taskId, r.message.contextId);
      this.body.append(...(r.message.parts || []).map(partBlock));
    }
  }

  ids(taskId, contextId) {
    if (taskId) this.taskId = taskId;
    if (contextId) this.contextId = contextId;
  }

  status(st) {
    if (!st) return;
    this.state = stateName(st.state);
    this.li.dataset.state = this.state;
    this.head.textContent = this.who + ' · ' + this.state + (this.taskId ? ' · task ' + this.taskId : '');
    this.cancel.hidden = !this.taskId || !['submitted', 'working'].includes(this.state);
    if (st.message && st.message.parts) this.body.append(...st.message.parts.map(partBlock));
  }

  artifact(a, append) {
    if (!a) return;
    let el = this.artifacts.get(a.artifactId);
    if (!el) {
      el = document.createElement('div');
      el.className = 'artifact';
      this.artifacts.set(a.artifactId, el);
      this.body.append(el);
    } else if (!append) {
      el.replaceChildren();
    }
    for (const part of a.parts || []) {
      const last = el.lastElementChild;
      if (append && typeof part.text === 'string' && last && last.matches('p.text:not(.file)')) {
        last.append(part.text); // a chunk of the same text: a text node
      } else {
        el.append(partBlock(part));
      }
    }
  }

  // ended says whether the turn is over: a terminal state, a request for
  // input, or a message as the answer.
  ended() {
    return this.answered || turnEnds.includes(this.state);
  }

  // resuming says that the stream dropped and is resumed after event id.
  resuming(id, n, why) {
    if (!this.resumeNote) {
      this.resumeNote = document.createElement('p');
      this.resumeNote.className = 'state resume';
      this.body.append(this.resumeNote);
    }
    this.resumes = (this.resumes || 0) + (n === 1 ? 1 : 0);
    this.li.dataset.resumes = String(this.resumes);
    this.resumeNote.textContent = 'stream dropped (' + why + '); ' +
      (id ? 'resuming after event ' + id : 'sending again, the same message') +
      (n > 1 ? ', try ' + n + ' of ' + RESUME_TRIES : '') + ' · ' + this.resumes + (this.resumes === 1 ? ' resume' : ' resumes');
  }

  fail(msg) {
    this.li.dataset.state = 'error';
    this.cancel.hidden = true;
    this.note(msg);
  }

  note(msg) {
    const p = document.createElement('p');
    p.className = 'text error';
    p.textContent = msg;
    this.body.append(p);
  }
}
