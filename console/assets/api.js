// How the console talks to the edge that served it: the operator API
// (/ops/v1) and the agents' JSON-RPC endpoints, with the tab's credential:
// an API key or a bearer token (a JWT of the edge's --oidc-issuer), both
// sent as Authorization: Bearer, which the edge reads either way. It lives
// in sessionStorage only, never in a URL or a cookie, and is gone when the
// tab closes.

// root is the edge's base URL: the console is served at <root>console/.
const root = new URL('../', document.baseURI);
const keyItem = 'a2amesh.apiKey';

export function getKey() {
  return sessionStorage.getItem(keyItem) || '';
}

export function setKey(key) {
  if (key) sessionStorage.setItem(keyItem, key);
  else sessionStorage.removeItem(keyItem);
}

// HTTPError is an answer with a status other than 2xx.
export class HTTPError extends Error {
  constructor(status, message) {
    super(message || 'HTTP ' + status);
    this.status = status;
  }
}

// RPCError is a JSON-RPC error object; status is the HTTP status it came
// with (401 without a valid key, 429 over the rate limit).
export class RPCError extends Error {
  constructor(err, status) {
    super((err && err.message) || 'JSON-RPC error');
    this.code = err && err.code;
    this.status = status;
  }
}

function headers(extra) {
  const h = new Headers(extra);
  const key = getKey();
  if (key) h.set('Authorization', 'Bearer ' + key);
  return h;
}

async function failure(resp) {
  let msg = '';
  try {
    const doc = await resp.json();
    msg = (doc.error && (doc.error.message || doc.error)) || '';
  } catch (e) { /* not JSON */ }
  return new HTTPError(resp.status, typeof msg === 'string' && msg ? msg : 'HTTP ' + resp.status);
}

// getJSON reads an edge path ("ops/v1/fleet") as JSON.
export async function getJSON(path, signal) {
  const resp = await fetch(new URL(path, root), {
    headers: headers({ Accept: 'application/json' }),
    credentials: 'omit', cache: 'no-store', signal,
  });
  if (!resp.ok) throw await failure(resp);
  return resp.json();
}

let nextID = 1;

// post sends a JSON-RPC request to agent ("": to /a2a). opts.version is the A2A
// version of the method ("1.0" by default, or "0.3"); opts.onRaw, when
// set, gets the exact body sent ("sent", text) and, for a stream, each
// event's data as received ("received", text).
function post(agent, method, params, accept, opts) {
  const body = JSON.stringify({ jsonrpc: '2.0', id: nextID++, method, params });
  if (opts.onRaw) opts.onRaw('sent', body, opts.lastEventId);
  // No agent: the mesh's shared endpoint, where task calls find any of
  // the caller's tasks by id and ListTasks lists them all.
  const path = agent ? 'agents/' + encodeURIComponent(agent) : 'a2a';
  const h = headers({ 'Content-Type': 'application/json', Accept: accept, 'A2A-Version': opts.version || '1.0' });
  if (opts.lastEventId) h.set('Last-Event-ID', opts.lastEventId);
  return fetch(new URL(path, root), {
    method: 'POST', headers: h, body, credentials: 'omit', cache: 'no-store', signal: opts.signal,
  });
}

// callRPC calls a method of agent over JSON-RPC and returns its result
// (opts as for post); a JSON-RPC error throws RPCError.
export async function callRPC(agent, method, params, opts = {}) {
  const resp = await post(agent, method, params, 'application/json', opts);
  let doc;
  try {
    const text = await resp.text();
    if (opts.onRaw) opts.onRaw('received', text);
    doc = JSON.parse(text);
  } catch (e) {
    throw new HTTPError(resp.status);
  }
  if (doc.error) throw new RPCError(doc.error, resp.status);
  if (!resp.ok) throw new HTTPError(resp.status);
  return doc.result;
}

// streamRPC calls a streaming method of agent over JSON-RPC (opts as for
// post; opts.lastEventId, when set, goes as the Last-Event-ID header to
// resume a stream after that event) and calls onResult with the result
// of each server-sent event as it arrives, and the event's id (its
// position in the mesh's event log). It returns when the stream ends; a
// JSON-RPC error throws RPCError, a connection that drops throws what
// fetch throws (a TypeError).
export async function streamRPC(agent, method, params, onResult, opts = {}) {
  const resp = await post(agent, method, params, 'text/event-stream', opts);
  if (!resp.ok) throw await failure(resp);
  if (!(resp.headers.get('Content-Type') || '').startsWith('text/event-stream')) {
    const text = await resp.text(); // an error answered before any stream
    if (opts.onRaw) opts.onRaw('received', text);
    const doc = JSON.parse(text);
    if (doc.error) throw new RPCError(doc.error);
    onResult(doc.result);
    return;
  }
  for await (const { id, data } of sseEvents(resp)) {
    if (opts.onRaw) opts.onRaw('received', data);
    const doc = JSON.parse(data);
    if (doc.error) throw new RPCError(doc.error);
    onResult(doc.result, id);
  }
}

// rawCall posts body, as the user wrote it, to agent ("": /a2a) with the
// A2A-Version header version, and passes on what comes back as text: the
// whole answer, or each server-sent event's data as it arrives. It
// returns the HTTP status.
export async function rawCall(agent, version, body, onText, signal) {
  const path = agent ? 'agents/' + encodeURIComponent(agent) : 'a2a';
  const resp = await fetch(new URL(path, root), {
    method: 'POST',
    headers: headers({
      'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'A2A-Version': version,
    }),
    body, credentials: 'omit', cache: 'no-store', signal,
  });
  if (!(resp.headers.get('Content-Type') || '').startsWith('text/event-stream')) {
    onText(await resp.text());
    return resp.status;
  }
  for await (const { data } of sseEvents(resp)) onText(data);
  return resp.status;
}

// sseEvents yields each server-sent event of resp as it arrives, as
// {id, data} (id: the event's id field, '' when it has none); comments
// (keep-alives) are skipped.
async function* sseEvents(resp) {
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value.replace(/\r\n?/g, '\n');
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const ev = sseEvent(buf.slice(0, end));
      buf = buf.slice(end + 2);
      if (ev !== null) yield ev;
    }
  }
}

// sseEvent reads one event: its id and its data lines joined; null when
// it has no data.
function sseEvent(block) {
  const lines = [];
  let id = '';
  for (const line of block.split('\n')) {
    const field = (name) => line.slice(line.startsWith(name + ': ') ? name.length + 2 : name.length + 1);
    if (line.startsWith('data:')) lines.push(field('data'));
    else if (line.startsWith('id:')) id = field('id');
  }
  return lines.length ? { id, data: lines.join('\n') } : null;
}

// newID returns a random id (crypto.randomUUID needs a secure context,
// which a console on a LAN address over http is not).
export function newID() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}
