// A2A 0.3 interop checks driven by @a2a-js/sdk 0.3.x (npm alias "a2a-v03").
// Usage: node interop-v03.mjs http://127.0.0.1:PORT
// Prints one JSON line per check; exits 1 if any check failed.
import { randomUUID } from 'node:crypto';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver } from 'a2a-v03/client';
import { baseUrlFromArgv, errorCode, fail, readStream, runChecks, sleep, startReceiver } from './lib/check.mjs';

const base = baseUrlFromArgv();
const cardUrl = (agent) => `${base}/agents/${agent}/.well-known/agent-card.json`;

const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: ['JSONRPC'] }),
);
const clients = new Map();
function client(agent) {
  if (!clients.has(agent)) clients.set(agent, factory.createFromUrl(cardUrl(agent), ''));
  return clients.get(agent);
}

// 0.3 types are plain JSON objects discriminated by `kind`.
function userMessage(text, { taskId, contextId } = {}) {
  return { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text }], taskId, contextId };
}
const partsText = (parts = []) => parts.filter((p) => p.kind === 'text').map((p) => p.text).join('');
const artifactText = (task) => (task.artifacts ?? []).map((a) => partsText(a.parts)).join('');
// Text the agent produced: artifacts + status message (not history, which echoes our input).
const agentText = (task) => artifactText(task) + ' ' + partsText(task.status?.message?.parts);
function asTask(res, what) {
  if (res?.kind !== 'task') fail(`${what}: expected kind "task", got ${JSON.stringify(res?.kind)}`);
  if (!res.id) fail(`${what}: Task has no id`);
  return res;
}
function expectState(task, want, what) {
  if (task.status?.state !== want) fail(`${what}: state ${task.status?.state}, want ${want}`);
}
const TERMINAL = new Set(['completed', 'failed', 'canceled', 'rejected']);
const isTerminalStatus = (ev) => ev.kind === 'status-update' && TERMINAL.has(ev.status?.state);
const kinds = (events) => events.map((e) => e.kind ?? '?').join(',');

async function pollUntil(c, id, want, signal, { tries = 100, everyMs = 100 } = {}) {
  let task;
  for (let i = 0; i < tries; i++) {
    task = await c.getTask({ id }, { signal });
    if (task.status?.state === want) return { task, polls: i + 1 };
    await sleep(everyMs, signal);
  }
  fail(`task ${id} still ${task?.status?.state} after ${tries} polls`);
}
// A 0.3 stream must end with a status-update that is terminal and final:true.
function checkFinal(events, ended, wantState) {
  const last = events.at(-1);
  if (!isTerminalStatus(last ?? {})) fail(`no terminal status-update: ${kinds(events)} (${ended})`);
  if (last.status.state !== wantState) fail(`final state ${last.status.state}, want ${wantState}`);
  if (last.final !== true) fail('terminal status-update lacks final:true');
  if (ended !== 'final-then-eof') fail(`stream ended ${ended}: ${kinds(events)}`);
}

const state = {};

// tasks/pushNotificationConfig/* through the SDK, and a delivery to a local
// webhook (the mesh must trust 127.0.0.1 receivers). Skipped when the card
// offers no push.
async function pushCheck(signal) {
  const card = await new DefaultAgentCardResolver().resolve(cardUrl('slow'), '');
  if (card.capabilities?.pushNotifications !== true) return 'skipped: the card says pushNotifications is not true';
  const rcv = await startReceiver();
  try {
    const c = await client('slow');
    const task = asTask(await c.sendMessage(
      { message: userMessage('chunks=3 delay=150ms'), configuration: { blocking: false } }, { signal }), 'message/send');
    const url = `${rcv.url}/v03-hook`;
    const cfg = await c.setTaskPushNotificationConfig(
      { taskId: task.id, pushNotificationConfig: { id: 'js-hook', url, authentication: { schemes: ['Bearer'], credentials: 'js-token-v03' } } }, { signal });
    if (cfg.pushNotificationConfig?.url !== url) fail(`set returned ${JSON.stringify(cfg)}`);
    const got = await c.getTaskPushNotificationConfig({ id: task.id, pushNotificationConfigId: 'js-hook' }, { signal });
    if (got.pushNotificationConfig?.url !== url) fail(`get returned ${JSON.stringify(got)}`);
    const list = await c.listTaskPushNotificationConfig({ id: task.id }, { signal });
    if (list.length !== 1) fail(`list returned ${JSON.stringify(list)}`);
    const hit = await rcv.waitFor((h) => h.path === '/v03-hook' && h.body.includes(task.id) && h.body.includes('"completed"'), signal);
    // The token came as authentication.credentials: it travels in both headers.
    if (hit.headers['x-a2a-notification-token'] !== 'js-token-v03') fail(`token header ${hit.headers['x-a2a-notification-token']}`);
    if (hit.headers.authorization !== 'Bearer js-token-v03') fail(`authorization header ${hit.headers.authorization}`);
    if (!JSON.parse(hit.body).kind) fail('a 0.3 notification must carry kind');
    await c.deleteTaskPushNotificationConfig({ id: task.id, pushNotificationConfigId: 'js-hook' }, { signal });
    const after = await c.listTaskPushNotificationConfig({ id: task.id }, { signal });
    if (after.length !== 0) fail(`after delete: ${JSON.stringify(after)}`);
    return `delivered ${rcv.hits.length} notifications`;
  } finally {
    rcv.close();
  }
}

await runChecks([
  ['push-config-and-delivery', pushCheck],
  ['resolve-card', async () => {
    const card = await new DefaultAgentCardResolver().resolve(cardUrl('echo'), '');
    if (!card.name) fail('card has no name');
    if (!card.url) fail('card has no url');
    if (!/^0\.3(\.|$)/.test(card.protocolVersion ?? '')) fail(`protocolVersion ${card.protocolVersion}`);
    if (card.capabilities?.streaming !== true) fail('capabilities.streaming is not true');
    const c = await factory.createFromAgentCard(card);
    return `name=${card.name} url=${card.url} preferredTransport=${card.preferredTransport} endpoint=${c.transport?.endpoint}`;
  }],

  ['resolve-mesh-card', async () => {
    const card = await new DefaultAgentCardResolver().resolve(base); // /.well-known/agent-card.json
    if (!card.name) fail('mesh card has no name');
    return `name=${card.name}`;
  }],

  ['send-echo-blocking', async (signal) => {
    const c = await client('echo');
    const text = `hello interop ${randomUUID().slice(0, 8)}`;
    const task = asTask(await c.sendMessage({ message: userMessage(text) }, { signal }), 'message/send');
    expectState(task, 'completed', 'message/send');
    if (artifactText(task) !== text) fail(`artifact text ${JSON.stringify(artifactText(task))}, want ${JSON.stringify(text)}`);
    state.echo = { task, text };
    return `task=${task.id}`;
  }],

  ['get-task', async (signal) => {
    if (!state.echo) fail('skipped: send-echo-blocking failed');
    const { task: sent, text } = state.echo;
    const task = asTask(await (await client('echo')).getTask({ id: sent.id }, { signal }), 'tasks/get');
    if (task.id !== sent.id || task.contextId !== sent.contextId) fail(`got task ${task.id}/${task.contextId}`);
    expectState(task, 'completed', 'tasks/get');
    if (artifactText(task) !== text) fail(`artifact text ${JSON.stringify(artifactText(task))}`);
    return `task=${task.id} history=${task.history?.length ?? 0}`;
  }],

  ['stream-slow', async (signal) => {
    const c = await client('slow');
    const stream = c.sendMessageStream({ message: userMessage('chunks=3 delay=100ms') }, { signal });
    const { events, ended } = await readStream(stream, isTerminalStatus);
    const seq = kinds(events);
    if (events[0]?.kind !== 'task') fail(`first event is not a task: ${seq}`);
    checkFinal(events, ended, 'completed');
    const arts = events.filter((e) => e.kind === 'artifact-update');
    if (arts.length !== 3) fail(`got ${arts.length} artifact updates, want 3: ${seq}`);
    if (new Set(arts.map((a) => a.artifact?.artifactId)).size !== 1) fail('chunks carry different artifactIds');
    if (arts.slice(1).some((a) => !a.append)) fail(`append flags ${arts.map((a) => a.append)}`);
    const taskId = events[0].id;
    if (events.some((e) => (e.taskId ?? e.id) !== taskId)) fail('events for another task');
    return `${seq} append=${arts.map((a) => a.append)} lastChunk=${arts.map((a) => a.lastChunk)}`;
  }],

  ['send-nonblocking-then-get', async (signal) => {
    const c = await client('slow');
    const res = await c.sendMessage(
      { message: userMessage('chunks=3 delay=200ms'), configuration: { blocking: false } },
      { signal },
    );
    const task = asTask(res, 'message/send(blocking:false)');
    const first = task.status?.state;
    if (TERMINAL.has(first)) fail(`returned already ${first}; blocking:false ignored?`);
    const { polls } = await pollUntil(c, task.id, 'completed', signal);
    return `initial=${first} completed after ${polls} tasks/get polls`;
  }],

  ['cancel-slow', async (signal) => {
    const c = await client('slow');
    const stream = c.sendMessageStream({ message: userMessage('chunks=50 delay=200ms') }, { signal });
    const first = await stream.next();
    if (first.done || first.value.kind !== 'task') fail('stream did not start with a task');
    const id = first.value.id;
    const canceled = await c.cancelTask({ id }, { signal });
    const { events, ended } = await readStream(stream, isTerminalStatus);
    checkFinal(events, ended, 'canceled');
    const { task } = await pollUntil(c, id, 'canceled', signal, { tries: 20 });
    return `tasks/cancel returned ${canceled.status?.state}; stream ${kinds(events)}; tasks/get ${task.status.state}`;
  }],

  ['resubscribe', async (signal) => {
    const c = await client('slow');
    const first = new AbortController();
    signal.addEventListener('abort', () => first.abort(), { once: true });
    const stream = c.sendMessageStream({ message: userMessage('chunks=5 delay=300ms') }, { signal: first.signal });
    const head = await stream.next();
    if (head.done || head.value.kind !== 'task') fail('stream did not start with a task');
    const id = head.value.id;
    first.abort(); // drop the original connection; the task must keep running
    stream.return().catch(() => {});
    const sub = c.resubscribeTask({ id }, { signal });
    const { events, ended } = await readStream(sub, isTerminalStatus);
    checkFinal(events, ended, 'completed');
    if (!events.some((e) => e.kind === 'artifact-update')) fail(`no artifact updates after resubscribe: ${kinds(events)}`);
    return kinds(events);
  }],

  ['multi-turn-ask', async (signal) => {
    const c = await client('ask');
    const t1 = asTask(await c.sendMessage({ message: userMessage('hi') }, { signal }), 'turn 1');
    expectState(t1, 'input-required', 'turn 1');
    const name = 'Marvin';
    const t2 = asTask(await c.sendMessage(
      { message: userMessage(name, { taskId: t1.id, contextId: t1.contextId }) }, { signal }), 'turn 2');
    if (t2.id !== t1.id) fail(`turn 2 answered task ${t2.id}, want ${t1.id}`);
    expectState(t2, 'completed', 'turn 2');
    if (!agentText(t2).includes(name)) fail(`reply ${JSON.stringify(agentText(t2))} lacks ${name}`);
    return `asked ${JSON.stringify(partsText(t1.status?.message?.parts))}; replied ${JSON.stringify(agentText(t2).trim())}`;
  }],

  ['get-unknown-task-error', async (signal) => {
    const c = await client('echo');
    let err;
    try {
      await c.getTask({ id: randomUUID() }, { signal });
    } catch (e) {
      err = e;
    }
    if (!err) fail('tasks/get of an unknown id succeeded');
    if (errorCode(err) !== -32001) fail(`want code -32001, got ${errorCode(err)}: ${err.message}`);
    return `${err.constructor.name} code=-32001`;
  }],
]).then((failed) => process.exit(failed ? 1 : 0));
