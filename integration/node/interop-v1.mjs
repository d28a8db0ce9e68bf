// A2A 1.0 interop checks driven by @a2a-js/sdk 1.x (npm alias "a2a-v1").
// Usage: node interop-v1.mjs http://127.0.0.1:PORT
// Prints one JSON line per check; exits 1 if any check failed.
import { randomUUID } from 'node:crypto';
import { Role, TaskState } from 'a2a-v1';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, ServiceParameters, withA2AExtensions } from 'a2a-v1/client';
import { baseUrlFromArgv, errorCode, fail, readStream, runChecks, sleep, startReceiver } from './lib/check.mjs';

const base = baseUrlFromArgv();
const cardUrl = (agent) => `${base}/agents/${agent}/.well-known/agent-card.json`;

// JSON-RPC only; without this a card that lists HTTP+JSON first would pick REST.
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: ['JSONRPC'] }),
);
const clients = new Map();
function client(agent) {
  // createFromUrl(fullCardUrl, '') fetches exactly that URL.
  if (!clients.has(agent)) clients.set(agent, factory.createFromUrl(cardUrl(agent), ''));
  return clients.get(agent);
}

// 1.x types are protobuf-shaped: enums are numbers, oneofs are {$case, value}.
// Plain 0.3-style objects ({role:'user', parts:[{kind:'text'}]}) serialise as
// UNRECOGNIZED / empty parts.
function userMessage(text, { taskId = '', contextId = '' } = {}) {
  return {
    messageId: randomUUID(),
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, filename: '', mediaType: '' }],
    taskId,
    contextId,
    extensions: [],
    referenceTaskIds: [],
  };
}
const stateName = (s) => TaskState[s] ?? String(s);
const partsText = (parts = []) =>
  parts.filter((p) => p.content?.$case === 'text').map((p) => p.content.value).join('');
const artifactText = (task) => (task.artifacts ?? []).map((a) => partsText(a.parts)).join('');
// Text the agent produced: artifacts + status message (not history, which echoes our input).
const agentText = (task) => artifactText(task) + ' ' + partsText(task.status?.message?.parts);
function asTask(res, what) {
  if (!res || 'messageId' in res) fail(`${what}: expected a Task, got a Message`);
  if (!res.id) fail(`${what}: Task has no id`);
  return res;
}
function expectState(task, want, what) {
  const got = task.status?.state;
  if (got !== want) fail(`${what}: state ${stateName(got)}, want ${stateName(want)}`);
}
const TERMINAL = new Set([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED]);
const isTerminalStatus = (ev) =>
  ev.payload?.$case === 'statusUpdate' && TERMINAL.has(ev.payload.value.status?.state);
const kinds = (events) => events.map((e) => e.payload?.$case ?? '?').join(',');

async function pollUntil(c, id, want, signal, { tries = 100, everyMs = 100 } = {}) {
  let task;
  for (let i = 0; i < tries; i++) {
    task = await c.getTask({ id }, { signal });
    if (task.status?.state === want) return { task, polls: i + 1 };
    await sleep(everyMs, signal);
  }
  fail(`task ${id} still ${stateName(task?.status?.state)} after ${tries} polls`);
}

const state = {};

// Push configs through the SDK, and a delivery to a local webhook (the
// mesh must trust 127.0.0.1 receivers). Skipped when the card offers no push.
async function pushCheck(signal) {
  const card = await new DefaultAgentCardResolver().resolve(cardUrl('slow'), '');
  if (card.capabilities?.pushNotifications !== true) return 'skipped: the card says pushNotifications is not true';
  const rcv = await startReceiver();
  try {
    const c = await client('slow');
    const task = asTask(await c.sendMessage(
      { message: userMessage('chunks=3 delay=150ms'), configuration: { returnImmediately: true } }, { signal }), 'SendMessage');
    const url = `${rcv.url}/v1-hook`;
    const cfg = await c.createTaskPushNotificationConfig(
      { tenant: '', id: 'js-hook', taskId: task.id, url, token: 'js-token-v1', authentication: undefined }, { signal });
    if (cfg.url !== url || cfg.id !== 'js-hook') fail(`created ${JSON.stringify(cfg)}`);
    const got = await c.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'js-hook' }, { signal });
    if (got.url !== url) fail(`get returned ${JSON.stringify(got)}`);
    const list = await c.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' }, { signal });
    if ((list.configs ?? []).length !== 1) fail(`list returned ${JSON.stringify(list)}`);
    const hit = await rcv.waitFor((h) => h.path === '/v1-hook' && h.body.includes(task.id) && h.body.includes('TASK_STATE_COMPLETED'), signal);
    if (hit.headers['x-a2a-notification-token'] !== 'js-token-v1') fail(`token header ${hit.headers['x-a2a-notification-token']}`);
    await c.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'js-hook' }, { signal });
    const after = await c.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' }, { signal });
    if ((after.configs ?? []).length !== 0) fail(`after delete: ${JSON.stringify(after)}`);
    return `delivered ${rcv.hits.length} notifications; signed=${Boolean(hit.headers['x-a2a-notification-signature'])}`;
  } finally {
    rcv.close();
  }
}

await runChecks([
  ['push-config-and-delivery', pushCheck],
  ['resolve-card', async () => {
    const card = await new DefaultAgentCardResolver().resolve(cardUrl('echo'), '');
    if (!card.name) fail('card has no name');
    if (card.capabilities?.streaming !== true) fail('capabilities.streaming is not true');
    const ifaces = card.supportedInterfaces ?? [];
    const v1 = ifaces.find((i) => i.protocolBinding?.toUpperCase() === 'JSONRPC' && i.protocolVersion === '1.0');
    if (!v1) fail(`no JSONRPC interface with protocolVersion "1.0" in ${JSON.stringify(ifaces)}`);
    const c = await factory.createFromAgentCard(card);
    if (c.protocolVersion !== '1.0') fail(`client negotiated ${c.protocolVersion}`);
    return `name=${card.name} interfaces=${ifaces.length} endpoint=${c.transport?.endpoint}`;
  }],

  ['resolve-mesh-card', async () => {
    const card = await new DefaultAgentCardResolver().resolve(base); // /.well-known/agent-card.json
    if (!card.name) fail('mesh card has no name');
    return `name=${card.name}`;
  }],

  ['send-echo-blocking', async (signal) => {
    const c = await client('echo');
    const text = `hello interop ${randomUUID().slice(0, 8)}`;
    const task = asTask(await c.sendMessage({ message: userMessage(text) }, { signal }), 'SendMessage');
    expectState(task, TaskState.TASK_STATE_COMPLETED, 'SendMessage');
    if (artifactText(task) !== text) fail(`artifact text ${JSON.stringify(artifactText(task))}, want ${JSON.stringify(text)}`);
    state.echo = { task, text };
    return `task=${task.id}`;
  }],

  ['extensions-requested-and-echoed', async (signal) => {
    // The mesh's trace extension is on every card; requested through the
    // SDK's service parameters (A2A-Extensions), the answer echoes it.
    const TRACE = 'https://a2amesh.dev/ext/trace/v1';
    const card = await new DefaultAgentCardResolver().resolve(cardUrl('echo'), '');
    const ext = (card.capabilities?.extensions ?? []).find((e) => e.uri === TRACE);
    if (!ext || ext.required) fail(`the card lists no optional ${TRACE}: ${JSON.stringify(card.capabilities?.extensions)}`);
    const c = await client('echo');
    const seen = { sent: null, echoed: null };
    const realFetch = globalThis.fetch;
    globalThis.fetch = async (url, init) => {
      seen.sent = new Headers(init?.headers).get('A2A-Extensions');
      const res = await realFetch(url, init);
      seen.echoed = res.headers.get('A2A-Extensions');
      return res;
    };
    try {
      const task = asTask(await c.sendMessage({ message: userMessage('with extensions') },
        { signal, serviceParameters: ServiceParameters.create(withA2AExtensions(TRACE)) }), 'SendMessage');
      expectState(task, TaskState.TASK_STATE_COMPLETED, 'SendMessage');
    } finally {
      globalThis.fetch = realFetch;
    }
    if (seen.sent !== TRACE) fail(`the SDK sent A2A-Extensions ${JSON.stringify(seen.sent)}`);
    if (seen.echoed !== TRACE) fail(`the answer echoed A2A-Extensions ${JSON.stringify(seen.echoed)}, want ${TRACE}`);
    return `echoed=${seen.echoed}`;
  }],

  ['get-task', async (signal) => {
    if (!state.echo) fail('skipped: send-echo-blocking failed');
    const { task: sent, text } = state.echo;
    const task = await (await client('echo')).getTask({ id: sent.id }, { signal });
    if (task.id !== sent.id || task.contextId !== sent.contextId) fail(`got task ${task.id}/${task.contextId}`);
    expectState(task, TaskState.TASK_STATE_COMPLETED, 'GetTask');
    if (artifactText(task) !== text) fail(`artifact text ${JSON.stringify(artifactText(task))}`);
    return `task=${task.id} history=${task.history?.length ?? 0}`;
  }],

  ['list-tasks', async (signal) => {
    if (!state.echo) fail('skipped: send-echo-blocking failed');
    const { task: sent } = state.echo;
    // Request fields must hold proto defaults: status undefined would be sent as "UNRECOGNIZED".
    const res = await (await client('echo')).listTasks(
      { tenant: '', contextId: sent.contextId, status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '' },
      { signal },
    );
    if (!res.tasks.some((t) => t.id === sent.id)) fail(`task ${sent.id} not in ${res.tasks.map((t) => t.id)}`);
    return `tasks=${res.tasks.length}`;
  }],

  ['stream-slow', async (signal) => {
    const c = await client('slow');
    const stream = c.sendMessageStream({ message: userMessage('chunks=3 delay=100ms') }, { signal });
    const { events, ended } = await readStream(stream, isTerminalStatus);
    const seq = kinds(events);
    if (events[0]?.payload?.$case !== 'task') fail(`first event is not a task: ${seq}`);
    if (ended !== 'final-then-eof') fail(`stream ended ${ended}: ${seq}`);
    const last = events.at(-1).payload.value;
    if (last.status.state !== TaskState.TASK_STATE_COMPLETED) fail(`final state ${stateName(last.status.state)}`);
    const arts = events.filter((e) => e.payload.$case === 'artifactUpdate').map((e) => e.payload.value);
    if (arts.length !== 3) fail(`got ${arts.length} artifact updates, want 3: ${seq}`);
    if (new Set(arts.map((a) => a.artifact?.artifactId)).size !== 1) fail('chunks carry different artifactIds');
    if (arts.slice(1).some((a) => !a.append)) fail(`append flags ${arts.map((a) => a.append)}`);
    const taskId = events[0].payload.value.id;
    if (events.some((e) => (e.payload.value.taskId ?? e.payload.value.id) !== taskId)) fail('events for another task');
    return `${seq} append=${arts.map((a) => a.append)} lastChunk=${arts.map((a) => a.lastChunk)}`;
  }],

  ['send-nonblocking-then-get', async (signal) => {
    const c = await client('slow');
    const res = await c.sendMessage(
      { message: userMessage('chunks=3 delay=200ms'), configuration: { returnImmediately: true } },
      { signal },
    );
    const task = asTask(res, 'SendMessage(returnImmediately)');
    const first = task.status?.state;
    if (TERMINAL.has(first)) fail(`returned already ${stateName(first)}; returnImmediately ignored?`);
    const { polls } = await pollUntil(c, task.id, TaskState.TASK_STATE_COMPLETED, signal);
    return `initial=${stateName(first)} completed after ${polls} GetTask polls`;
  }],

  ['cancel-slow', async (signal) => {
    const c = await client('slow');
    const stream = c.sendMessageStream({ message: userMessage('chunks=50 delay=200ms') }, { signal });
    const first = await stream.next();
    if (first.done || first.value.payload?.$case !== 'task') fail('stream did not start with a task');
    const id = first.value.payload.value.id;
    const canceled = await c.cancelTask({ id }, { signal });
    const direct = canceled.status?.state;
    const { events, ended } = await readStream(stream, isTerminalStatus);
    const last = events.at(-1)?.payload;
    if (!(last?.$case === 'statusUpdate' && last.value.status.state === TaskState.TASK_STATE_CANCELED)) {
      fail(`stream after cancel: ${kinds(events)} (${ended})`);
    }
    if (ended !== 'final-then-eof') fail(`stream ended ${ended} after canceled status`);
    const { task } = await pollUntil(c, id, TaskState.TASK_STATE_CANCELED, signal, { tries: 20 });
    return `CancelTask returned ${stateName(direct)}; stream ${kinds(events)}; GetTask ${stateName(task.status.state)}`;
  }],

  ['resubscribe', async (signal) => {
    const c = await client('slow');
    const first = new AbortController();
    signal.addEventListener('abort', () => first.abort(), { once: true });
    const stream = c.sendMessageStream({ message: userMessage('chunks=5 delay=300ms') }, { signal: first.signal });
    const head = await stream.next();
    if (head.done || head.value.payload?.$case !== 'task') fail('stream did not start with a task');
    const id = head.value.payload.value.id;
    first.abort(); // drop the original connection; the task must keep running
    stream.return().catch(() => {});
    const sub = c.resubscribeTask({ id }, { signal });
    const { events, ended } = await readStream(sub, isTerminalStatus);
    const seq = kinds(events);
    if (events[0]?.payload?.$case !== 'task') fail(`SubscribeToTask must start with a Task: ${seq}`);
    if (ended !== 'final-then-eof') fail(`stream ended ${ended}: ${seq}`);
    const last = events.at(-1).payload.value;
    if (last.status.state !== TaskState.TASK_STATE_COMPLETED) fail(`final state ${stateName(last.status.state)}`);
    if (!events.some((e) => e.payload.$case === 'artifactUpdate')) fail(`no artifact updates after resubscribe: ${seq}`);
    return seq;
  }],

  ['multi-turn-ask', async (signal) => {
    const c = await client('ask');
    const t1 = asTask(await c.sendMessage({ message: userMessage('hi') }, { signal }), 'turn 1');
    expectState(t1, TaskState.TASK_STATE_INPUT_REQUIRED, 'turn 1');
    const name = 'Marvin';
    const t2 = asTask(await c.sendMessage(
      { message: userMessage(name, { taskId: t1.id, contextId: t1.contextId }) }, { signal }), 'turn 2');
    if (t2.id !== t1.id) fail(`turn 2 answered task ${t2.id}, want ${t1.id}`);
    expectState(t2, TaskState.TASK_STATE_COMPLETED, 'turn 2');
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
    if (!err) fail('GetTask of an unknown id succeeded');
    if (errorCode(err) !== -32001) fail(`want code -32001, got ${errorCode(err)}: ${err.message}`);
    return `${err.name} code=-32001`;
  }],
]).then((failed) => process.exit(failed ? 1 : 0));
