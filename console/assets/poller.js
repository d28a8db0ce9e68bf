// A bounded poll, shared by the views that follow the mesh: one request
// at a time, each aborted after timeoutMs; the next one everyMs after the
// last answer while the tab is visible; after a failure the wait doubles
// up to maxMs. refresh() asks again at once and drops an answer still
// in flight (it answers what was asked before the refresh).
export function poller(fetcher, onData, onError, { everyMs, timeoutMs = 10000, maxMs = 30000 }) {
  let timer = 0;
  let inFlight = false;
  let wait = everyMs;
  let active = false;
  let gen = 0;

  async function tick() {
    timer = 0;
    if (!active || inFlight) return; // an answer in flight schedules the next tick
    if (document.hidden) { schedule(everyMs); return; }
    inFlight = true;
    const g = gen;
    const ctl = new AbortController();
    const abort = setTimeout(() => ctl.abort(), timeoutMs);
    let data;
    let err;
    try {
      data = await fetcher(ctl.signal);
    } catch (e) {
      err = e || new Error('failed');
    } finally {
      clearTimeout(abort);
      inFlight = false;
    }
    if (g !== gen) { schedule(0); return; }
    if (!active) return;
    if (err === undefined) {
      onData(data);
      wait = everyMs;
    } else if (onError(err) === 'stop') {
      active = false;
      return;
    } else {
      wait = Math.min(wait * 2, maxMs);
    }
    schedule(wait);
  }

  function schedule(ms) {
    if (active && !timer) timer = setTimeout(tick, ms);
  }

  return {
    // refresh (re)starts polling with a request now.
    refresh() {
      gen++;
      active = true;
      wait = everyMs;
      clearTimeout(timer);
      timer = 0;
      tick();
    },
    // stop ends polling until the next refresh; an answer in flight is
    // dropped.
    stop() {
      gen++;
      active = false;
      clearTimeout(timer);
      timer = 0;
    },
  };
}
