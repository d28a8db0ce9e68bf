// A2A 1.0 interop over HTTP+JSON, driven by @a2a-js/sdk 1.x (npm alias "a2a-v1").
// Usage: node interop-rest.mjs http://127.0.0.1:PORT
// Prints one JSON line per check; exits 1 if any check failed.
import { randomUUID } from 'node:crypto';
import { TaskState } from 'a2a-v1';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, RestTransportFactory } from 'a2a-v1/client';
import { baseUrlFromArgv, fail, runChecks } from './lib/check.mjs';
import { bindingChecks, userMessage } from './lib/bindings-v1.mjs';

const base = baseUrlFromArgv();

// Every request the SDK makes, so a check can tell which binding carried a call.
const requests = [];
const recordingFetch = (input, init) => {
  const url = input instanceof Request ? input.url : String(input);
  if (requests.length < 10000) requests.push(`${init?.method ?? 'GET'} ${new URL(url).pathname}`);
  return fetch(input, init);
};
const transports = [new RestTransportFactory({ fetchImpl: recordingFetch })];

// used says which transport c has, failing unless it is HTTP+JSON and its
// last request went to a REST route, not to a JSON-RPC endpoint.
function used(c) {
  if (c.transport?.protocolName !== 'HTTP+JSON') fail(`the client's transport is ${c.transport?.protocolName}`);
  const last = requests.at(-1) ?? '';
  if (last.endsWith('/a2a') || /^POST \/agents\/[^/]+$/.test(last)) fail(`the last request went to JSON-RPC: ${last}`);
  return `HTTP+JSON (${last || 'no request yet'})`;
}

// The card lists HTTP+JSON twice: under the agent's path, and at the
// edge's base with the agent as tenant. The SDK keeps the last 1.0
// interface of a binding (the tenant one: /{tenant}/message:send); a client
// given only the other sends to /agents/{name}/message:send.
const pathCheck = ['send-by-agent-path', async (signal) => {
  const card = await new DefaultAgentCardResolver().resolve(`${base}/agents/echo/.well-known/agent-card.json`, '');
  const iface = (card.supportedInterfaces ?? []).find((i) => i.protocolBinding === 'HTTP+JSON' && !i.tenant);
  if (!iface) fail(`no HTTP+JSON interface without a tenant: ${JSON.stringify(card.supportedInterfaces)}`);
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports, preferredTransports: ['HTTP+JSON'] }));
  const c = await factory.createFromAgentCard({ ...card, supportedInterfaces: [iface] });
  const text = `by path ${randomUUID().slice(0, 8)}`;
  const from = requests.length;
  const task = await c.sendMessage({ message: userMessage(text) }, { signal });
  if (task.status?.state !== TaskState.TASK_STATE_COMPLETED) fail(`state ${TaskState[task.status?.state]}`);
  const got = await c.getTask({ tenant: '', id: task.id }, { signal });
  if (got.id !== task.id) fail(`GetTask returned ${got.id}`);
  const sent = requests.slice(from);
  const want = ['POST /agents/echo/message:send', `GET /agents/echo/tasks/${task.id}`];
  if (JSON.stringify(sent) !== JSON.stringify(want)) fail(`requests ${JSON.stringify(sent)}, want ${JSON.stringify(want)}`);
  return sent.join(', ');
}];

await runChecks([...bindingChecks({ base, protocol: 'HTTP+JSON', transports, used }), pathCheck])
  .then((failed) => process.exit(failed ? 1 : 0));
