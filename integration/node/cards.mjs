// Card signatures checked by @a2a-js/sdk 1.x (npm alias "a2a-v1"), whose
// verifyAgentCardSignature canonicalizes the card itself (its JCS, its
// reading of proto field presence) and verifies with the `jose` library.
// Usage: node cards.mjs http://127.0.0.1:PORT [signatures per card, default 1]
// Prints one JSON line per check; exits 1 if any check failed.
import { verifyAgentCardSignature } from 'a2a-v1';
import { baseUrlFromArgv, fail, runChecks } from './lib/check.mjs';

const base = baseUrlFromArgv();
const wantSigs = Number(process.argv[3] ?? 1);

async function getJSON(path, signal) {
  const res = await fetch(base + path, { signal });
  if (res.status !== 200) fail(`GET ${path}: HTTP ${res.status}`);
  return res.json();
}

// The key the SDK asks for by kid and jku: fetched from the jku, which
// must be this edge's JWK Set.
function keyFetcher(signal, seen) {
  return async (kid, jku) => {
    if (jku !== `${base}/.well-known/jwks.json`) fail(`jku ${jku} is not the edge's JWK Set`);
    const res = await fetch(jku, { signal });
    if (res.status !== 200) fail(`GET ${jku}: HTTP ${res.status}`);
    const set = await res.json();
    const jwk = set.keys?.find((k) => k.kid === kid);
    if (!jwk) fail(`kid ${kid} is not in ${jku}`);
    seen.push(kid);
    return jwk;
  };
}

// Verifies card with the SDK, then each of its signatures on its own.
async function verifyEach(name, card, signal) {
  const sigs = card.signatures ?? [];
  if (sigs.length !== wantSigs) fail(`${name}: ${sigs.length} signatures, want ${wantSigs}`);
  const seen = [];
  await verifyAgentCardSignature(keyFetcher(signal, seen))(card);
  for (const s of sigs) {
    await verifyAgentCardSignature(keyFetcher(signal, seen))({ ...card, signatures: [s] });
  }
  return `${name}: ${sigs.length} signature(s) verified (kids ${[...new Set(seen)].join(', ')})`;
}

const failed = await runChecks([
  ['mesh card verifies', async (signal) => verifyEach('mesh card', await getJSON('/.well-known/agent-card.json', signal), signal)],
  ['agent card verifies', async (signal) => verifyEach('echo card', await getJSON('/agents/echo/.well-known/agent-card.json', signal), signal)],
  ['every card of /agents verifies', async (signal) => {
    const { agents } = await getJSON('/agents', signal);
    if (!agents?.length) fail('no agents listed');
    const out = [];
    for (const c of agents) out.push(await verifyEach(c.name, c, signal));
    return out.join('; ');
  }],
  ['a tampered card is refused', async (signal) => {
    const card = await getJSON('/agents/echo/.well-known/agent-card.json', signal);
    for (const tampered of [
      { ...card, description: card.description + ' (changed)' },
      { ...card, supportedInterfaces: card.supportedInterfaces.map((i) => ({ ...i, url: i.url.replace('127.0.0.1', 'evil.example') })) },
    ]) {
      let threw = false;
      try {
        await verifyAgentCardSignature(keyFetcher(signal, []))(tampered);
      } catch {
        threw = true;
      }
      if (!threw) fail('the SDK verified a tampered card');
    }
    return 'changed description and changed URLs both refused';
  }],
]);
process.exit(failed ? 1 : 0);
