// Test fixture only: minimal node:http front end that mimics the mesh's URL
// layout on 127.0.0.1, so the interop scripts can be checked without the
// mesh. The A2A logic itself is the SDK's (see v1.mjs / v03.mjs).
import http from 'node:http';

const MAX_BODY = 1 << 20;
const MAX_EVENTS = 10_000; // per stream; fixture tasks emit a few hundred at most
// REFSERVER_LOG=1 logs requests (selected headers + body) and replies to stderr.
const LOG = process.env.REFSERVER_LOG === '1';
const log = (...a) => process.stderr.write(a.join(' ') + '\n');
const pick = (h) => Object.fromEntries(['a2a-version', 'accept', 'content-type', 'a2a-extensions', 'x-a2a-extensions']
  .filter((k) => h[k] !== undefined).map((k) => [k, h[k]]));

// Parses "chunks=5 delay=200ms" for the slow agent, clamped to sane bounds.
export function parseSlow(text) {
  const chunks = Number(/chunks=(\d+)/.exec(text)?.[1] ?? 5);
  const delay = Number(/delay=(\d+)/.exec(text)?.[1] ?? 200);
  return { chunks: Math.min(Math.max(chunks, 1), 200), delayMs: Math.min(delay, 5000) };
}

export const AGENTS = {
  echo: 'Replies with the text it got as an artifact.',
  slow: 'Streams N artifact chunks ("chunks=N delay=Dms"); honours cancel.',
  ask: 'Asks for a name (input-required), then greets.',
};

// Card carrying both A2A 1.0 fields and A2A 0.3 fields, like the mesh's.
// With REFSERVER_V03_CARD=1, a plain 0.3 card (no supportedInterfaces), as
// a 0.3-only server publishes.
export function agentCard(base, name, description) {
  const v03Only = process.env.REFSERVER_V03_CARD === '1';
  const url = `${base}/agents/${name}`;
  const card = {
    name,
    description,
    version: '0.0.0',
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ],
    protocolVersion: '0.3.0',
    url,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url, transport: 'JSONRPC' }],
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: name, name, description, tags: [name] }],
  };
  if (v03Only) delete card.supportedInterfaces;
  return card;
}

function sendJson(res, status, body) {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

const rpcError = (id, code, message) => ({ jsonrpc: '2.0', id: id ?? null, error: { code, message } });

async function readBody(req) {
  let size = 0;
  const chunks = [];
  for await (const c of req) {
    size += c.length;
    if (size > MAX_BODY) throw new Error('body too large');
    chunks.push(c);
  }
  return Buffer.concat(chunks).toString('utf8');
}

// Writes an SDK transport handler result: a JSON-RPC envelope, or an async
// generator of envelopes sent as SSE (one `data:` line per event).
async function writeRpcResult(res, id, result, mapError) {
  if (typeof result?.[Symbol.asyncIterator] !== 'function') {
    if (LOG) log('<<', JSON.stringify(result));
    return sendJson(res, 200, result);
  }
  let first;
  try {
    first = await result.next();
  } catch (err) {
    return sendJson(res, 200, { jsonrpc: '2.0', id, error: mapError(err) });
  }
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  // Keep draining after the client goes away, as the SDK's express adapters
  // do: the 0.3 SDK server stops processing the task (and breaks
  // tasks/resubscribe) if its stream generator is closed early.
  try {
    for (let r = first, n = 0; !r.done && n < MAX_EVENTS; r = await result.next(), n++) {
      if (LOG) log('<< sse', JSON.stringify(r.value));
      if (!res.destroyed) res.write(`data: ${JSON.stringify(r.value)}\n\n`);
    }
  } catch (err) {
    if (!res.destroyed) res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id, error: mapError(err) })}\n\n`);
  }
  res.end();
}

// dispatch(name, rpc, headers) -> {result, mapError} where result comes from
// an SDK transport handler's handle(). The caller sets up its handlers from
// the returned base URL and prints it once ready.
export function startServer({ port = 0, dispatch }) {
  let base = '';
  const server = http.createServer(async (req, res) => {
    try {
      const path = new URL(req.url, 'http://x').pathname;
      if (LOG && req.method === 'GET') log('>>', req.method, path, JSON.stringify(pick(req.headers)));
      const m = /^\/agents\/([a-z0-9-]+)(\/\.well-known\/agent-card\.json)?$/.exec(path);
      if (req.method === 'GET' && path === '/.well-known/agent-card.json') {
        return sendJson(res, 200, { ...agentCard(base, 'mesh', 'reference mesh'), name: 'refserver' });
      }
      if (req.method === 'GET' && path === '/agents') {
        return sendJson(res, 200, { agents: Object.entries(AGENTS).map(([n, d]) => agentCard(base, n, d)) });
      }
      if (!m || !AGENTS[m[1]]) return sendJson(res, 404, { error: 'not found' });
      if (req.method === 'GET' && m[2]) return sendJson(res, 200, agentCard(base, m[1], AGENTS[m[1]]));
      if (req.method !== 'POST' || m[2]) return sendJson(res, 405, { error: 'method not allowed' });
      let rpc;
      try {
        rpc = JSON.parse(await readBody(req));
      } catch (err) {
        return sendJson(res, 200, rpcError(null, -32700, `parse error: ${err.message}`));
      }
      if (LOG) log('>>', req.method, path, JSON.stringify(pick(req.headers)), JSON.stringify(rpc));
      const { result, mapError } = await dispatch(m[1], rpc, req.headers);
      await writeRpcResult(res, rpc?.id ?? null, result, mapError);
    } catch (err) {
      if (!res.headersSent) sendJson(res, 500, rpcError(null, -32603, String(err?.message ?? err)));
      else res.end();
    }
  });
  return new Promise((resolve) => {
    server.listen(port, '127.0.0.1', () => {
      base = `http://127.0.0.1:${server.address().port}`;
      resolve({ server, base });
    });
  });
}
