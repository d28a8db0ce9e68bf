// Shared plumbing for the interop scripts: bounded checks, bounded stream
// reads and one JSON line per check on stdout.

export const CHECK_TIMEOUT_MS = Number(process.env.INTEROP_CHECK_TIMEOUT_MS) || 20_000;
// Whole-run budget, kept under the Go test's 2-minute process timeout.
export const TOTAL_TIMEOUT_MS = Number(process.env.INTEROP_TOTAL_TIMEOUT_MS) || 100_000;
export const MAX_STREAM_EVENTS = 500;

export function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason); }, { once: true });
  });
}

export function fail(message) {
  throw new Error(message);
}

// Describes an error thrown by either SDK, including any JSON-RPC code found.
export function describeError(err) {
  if (!(err instanceof Error)) return String(err);
  const code = errorCode(err);
  const name = err.name && err.name !== 'Error' ? `${err.name}: ` : '';
  const cause = err.cause instanceof Error && code === undefined ? ` [${err.cause.code ?? err.cause.message}]` : '';
  return `${name}${err.message}${code !== undefined ? ` (code ${code})` : ''}${cause}`;
}

// JSON-RPC error code carried by an SDK error: 1.x sets envelopeCode,
// 0.3 keeps the raw response in errorResponse; SSE errors wrap it in cause.
export function errorCode(err) {
  for (let e = err, i = 0; e && i < 5; e = e.cause, i++) {
    if (typeof e.envelopeCode === 'number') return e.envelopeCode;
    if (typeof e.errorResponse?.error?.code === 'number') return e.errorResponse.error.code;
  }
  return undefined;
}

// Reads an SDK event stream (an async generator) until `isFinal(event)`,
// end of stream, or `max` events. After the final event it waits up to
// closeWaitMs for the server to close the stream. Returns {events, ended}
// with ended one of: 'final-then-eof' (good), 'final-but-open',
// 'event-after-final', 'eof-before-final', 'max'.
export async function readStream(stream, isFinal, { max = MAX_STREAM_EVENTS, closeWaitMs = 3000 } = {}) {
  const events = [];
  try {
    while (events.length < max) {
      const r = await stream.next();
      if (r.done) return { events, ended: 'eof-before-final' };
      events.push(r.value);
      if (!isFinal(r.value)) continue;
      let timer;
      const idle = new Promise((resolve) => { timer = setTimeout(resolve, closeWaitMs, 'open'); });
      const after = await Promise.race([stream.next(), idle]);
      clearTimeout(timer);
      if (after === 'open') return { events, ended: 'final-but-open' };
      if (after.done) return { events, ended: 'final-then-eof' };
      events.push(after.value);
      return { events, ended: 'event-after-final' };
    }
    return { events, ended: 'max' };
  } finally {
    stream.return?.().catch(() => {}); // not awaited: may queue behind a pending next()
  }
}

// Runs checks in order. Each check gets an AbortSignal that fires after
// CHECK_TIMEOUT_MS or when the run's budget is spent (pass it to every SDK
// call); the check is also raced against the timer so a call that ignores
// the signal cannot hang us. A check returns a detail string (ok) or throws.
export async function runChecks(checks) {
  const deadline = Date.now() + TOTAL_TIMEOUT_MS;
  let failed = 0;
  for (const [name, fn] of checks) {
    const ac = new AbortController();
    const limit = Math.max(0, Math.min(CHECK_TIMEOUT_MS, deadline - Date.now()));
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => {
        const err = new Error(limit < CHECK_TIMEOUT_MS
          ? `not finished within the run budget of ${TOTAL_TIMEOUT_MS} ms`
          : `timed out after ${CHECK_TIMEOUT_MS} ms`);
        ac.abort(err);
        reject(err);
      }, limit);
    });
    const started = Date.now();
    let line;
    try {
      const detail = await Promise.race([fn(ac.signal), timeout]);
      line = { check: name, ok: true, detail: String(detail ?? '') };
    } catch (err) {
      failed++;
      line = { check: name, ok: false, detail: describeError(err) };
    } finally {
      clearTimeout(timer);
      ac.abort(new Error('check finished')); // closes any stream left open
    }
    line.ms = Date.now() - started;
    process.stdout.write(JSON.stringify(line) + '\n');
  }
  return failed;
}

export function baseUrlFromArgv() {
  const base = process.argv[2];
  if (!base || !/^https?:\/\//.test(base)) {
    process.stderr.write('usage: node <script> http://127.0.0.1:PORT\n');
    process.exit(2);
  }
  return base.replace(/\/+$/, '');
}

// A webhook receiver on 127.0.0.1 recording every POST, for the push
// checks. waitFor resolves with the first request matching pred.
export async function startReceiver() {
  const { createServer } = await import('node:http');
  const hits = [];
  const waiters = new Set();
  const server = createServer((req, res) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => { size += c.length; if (size <= 1 << 20) chunks.push(c); });
    req.on('end', () => {
      const hit = { path: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      hits.push(hit);
      for (const w of waiters) if (w.pred(hit)) { waiters.delete(w); w.resolve(hit); }
      res.writeHead(200).end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    hits,
    waitFor(pred, signal) {
      const found = hits.find(pred);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const w = { pred, resolve };
        waiters.add(w);
        signal?.addEventListener('abort', () => { waiters.delete(w); reject(signal.reason); }, { once: true });
      });
    },
    close() { server.close(); server.closeAllConnections?.(); },
  };
}
