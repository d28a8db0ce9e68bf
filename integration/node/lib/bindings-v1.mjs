// The A2A 1.0 flows of @a2a-js/sdk 1.x over a binding other than JSON-RPC
// (interop-rest.mjs, interop-grpc.mjs): the script picks the binding, these
// checks run the same flows through it and check it was the one used.
import { randomUUID } from 'node:crypto';
import { Role, TaskState } from 'a2a-v1';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver } from 'a2a-v1/client';
import { fail, readStream, sleep, startReceiver } from './check.mjs';

export function userMessage(text, { taskId = '', contextId = '' } = {}) {
  // 1.x messages are protobuf-shaped: a numeric role, parts as a {$case, value} oneof.
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

export const stateName = (s) => TaskState[s] ?? String(s);
const textOf = (parts = []) => parts.filter((p) => p.content?.$case === 'text').map((p) => p.content.value).join('');
const artifactText = (task) => (task.artifacts ?? []).map((a) => textOf(a.parts)).join('');
const TERMINAL = new Set([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED]);
const endsTask = (ev) => ev.payload?.$case === 'statusUpdate' && TERMINAL.has(ev.payload.value.status?.state);
const caseList = (events) => events.map((e) => e.payload?.$case ?? '?').join(',');

function mustBeTask(res, what) {
  if (!res || 'messageId' in res) fail(`${what}: a Message came back, not a Task`);
  if (!res.id) fail(`${what}: the Task has no id`);
  return res;
}

function wantState(task, want, what) {
  if (task.status?.state !== want) fail(`${what}: ${stateName(task.status?.state)}, want ${stateName(want)}`);
}

// The A2A error reason an SDK error carries (google.rpc.ErrorInfo reason).
export function errorReason(err) {
  for (let e = err, i = 0; e && i < 5; e = e.cause, i++) {
    if (typeof e.reason === 'string') return e.reason;
  }
  return undefined;
}

async function rejects(promise, reason, what) {
  try {
    await promise;
  } catch (err) {
    if (errorReason(err) !== reason) fail(`${what}: ${err.name}: ${err.message} (reason ${errorReason(err)}), want ${reason}`);
    return err;
  }
  fail(`${what} succeeded; want ${reason}`);
}

async function waitFor(c, id, want, signal) {
  let task;
  for (let i = 0; i < 100; i++) {
    task = await c.getTask({ tenant: '', id }, { signal });
    if (task.status?.state === want) return i + 1;
    await sleep(100, signal);
  }
  fail(`task ${id} still ${stateName(task?.status?.state)} after 100 polls`);
}

// bindingChecks returns the checks of one binding. opts:
//   base       the edge's base URL
//   protocol   the binding's protocolBinding as cards spell it ('HTTP+JSON', 'GRPC')
//   transports the SDK transport factories to use (the binding's)
//   used(c)    returns a description of the transport c uses, failing if it is not the binding's
export function bindingChecks({ base, protocol, transports, used }) {
  const cardUrl = (agent) => `${base}/agents/${agent}/.well-known/agent-card.json`;
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports, preferredTransports: [protocol] });
  const factory = new ClientFactory(options);
  const clients = new Map();
  const client = (agent) => {
    if (!clients.has(agent)) clients.set(agent, factory.createFromUrl(cardUrl(agent), ''));
    return clients.get(agent);
  };
  const shared = {};

  return [
    ['resolve-card', async () => {
      const card = await new DefaultAgentCardResolver().resolve(cardUrl('echo'), '');
      const ifaces = (card.supportedInterfaces ?? []).filter((i) => i.protocolBinding === protocol && i.protocolVersion === '1.0');
      if (ifaces.length === 0) fail(`the card lists no ${protocol} 1.0 interface: ${JSON.stringify(card.supportedInterfaces)}`);
      const c = await client('echo');
      return `${ifaces.map((i) => `${i.url}${i.tenant ? ` tenant=${i.tenant}` : ''}`).join(' ')}; client uses ${used(c)}`;
    }],

    ['send-echo-blocking', async (signal) => {
      const c = await client('echo');
      const text = `hello ${protocol} ${randomUUID().slice(0, 8)}`;
      const task = mustBeTask(await c.sendMessage({ message: userMessage(text) }, { signal }), 'SendMessage');
      wantState(task, TaskState.TASK_STATE_COMPLETED, 'SendMessage');
      if (artifactText(task) !== text) fail(`artifact ${JSON.stringify(artifactText(task))}, want ${JSON.stringify(text)}`);
      shared.echo = { task, text };
      return `task=${task.id} via ${used(c)}`;
    }],

    ['get-task', async (signal) => {
      if (!shared.echo) fail('send-echo-blocking failed first');
      const { task: sent, text } = shared.echo;
      const c = await client('echo');
      const task = await c.getTask({ tenant: '', id: sent.id }, { signal });
      if (task.id !== sent.id || task.contextId !== sent.contextId) fail(`got ${task.id}/${task.contextId}`);
      wantState(task, TaskState.TASK_STATE_COMPLETED, 'GetTask');
      if (artifactText(task) !== text) fail(`artifact ${JSON.stringify(artifactText(task))}`);
      const bare = await c.getTask({ tenant: '', id: sent.id, historyLength: 0 }, { signal });
      if ((bare.history ?? []).length !== 0) fail(`historyLength 0 returned ${bare.history.length} messages`);
      return `history=${task.history?.length ?? 0}, with historyLength 0: ${bare.history?.length ?? 0}`;
    }],

    ['list-tasks', async (signal) => {
      const c = await client('echo');
      const contextId = randomUUID();
      const ids = new Set();
      for (let i = 0; i < 3; i++) {
        const t = mustBeTask(await c.sendMessage({ message: userMessage(`page ${i}`, { contextId }) }, { signal }), 'SendMessage');
        ids.add(t.id);
      }
      // Request fields hold proto defaults: an undefined status would go out as UNRECOGNIZED.
      const q = { tenant: '', contextId, status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', pageSize: 2 };
      const first = await c.listTasks(q, { signal });
      if (first.tasks.length !== 2 || !first.nextPageToken) fail(`page 1: ${first.tasks.length} tasks, token ${JSON.stringify(first.nextPageToken)}`);
      const second = await c.listTasks({ ...q, pageToken: first.nextPageToken }, { signal });
      if (second.tasks.length !== 1 || second.nextPageToken) fail(`page 2: ${second.tasks.length} tasks, token ${JSON.stringify(second.nextPageToken)}`);
      const got = new Set([...first.tasks, ...second.tasks].map((t) => t.id));
      if (got.size !== 3 || [...ids].some((id) => !got.has(id))) fail(`pages hold ${[...got]}, want ${[...ids]}`);
      const working = await c.listTasks({ ...q, pageSize: 50, status: TaskState.TASK_STATE_WORKING }, { signal });
      if (working.tasks.length !== 0) fail(`status filter WORKING returned ${working.tasks.length} tasks`);
      return `total=${first.totalSize} pages of 2+1`;
    }],

    ['stream-slow', async (signal) => {
      const c = await client('slow');
      const { events, ended } = await readStream(c.sendMessageStream({ message: userMessage('chunks=3 delay=100ms') }, { signal }), endsTask);
      const seq = caseList(events);
      if (events[0]?.payload?.$case !== 'task') fail(`the first event is not the task: ${seq}`);
      if (ended !== 'final-then-eof') fail(`stream ended ${ended}: ${seq}`);
      const last = events.at(-1).payload.value;
      if (last.status.state !== TaskState.TASK_STATE_COMPLETED) fail(`final state ${stateName(last.status.state)}`);
      const chunks = events.filter((e) => e.payload.$case === 'artifactUpdate').map((e) => e.payload.value);
      if (chunks.length !== 3) fail(`${chunks.length} artifact updates, want 3: ${seq}`);
      if (chunks.slice(1).some((a) => !a.append)) fail(`append flags ${chunks.map((a) => a.append)}`);
      return seq;
    }],

    ['send-nonblocking-then-get', async (signal) => {
      const c = await client('slow');
      const task = mustBeTask(await c.sendMessage(
        { message: userMessage('chunks=3 delay=200ms'), configuration: { returnImmediately: true } }, { signal }), 'SendMessage');
      if (TERMINAL.has(task.status?.state)) fail(`already ${stateName(task.status?.state)}: returnImmediately ignored?`);
      const polls = await waitFor(c, task.id, TaskState.TASK_STATE_COMPLETED, signal);
      return `first ${stateName(task.status?.state)}, completed after ${polls} polls`;
    }],

    ['cancel-slow', async (signal) => {
      const c = await client('slow');
      const task = mustBeTask(await c.sendMessage(
        { message: userMessage('chunks=50 delay=200ms'), configuration: { returnImmediately: true } }, { signal }), 'SendMessage');
      const canceled = await c.cancelTask({ tenant: '', id: task.id }, { signal });
      wantState(canceled, TaskState.TASK_STATE_CANCELED, 'CancelTask');
      await waitFor(c, task.id, TaskState.TASK_STATE_CANCELED, signal);
      const echo = await client('echo');
      const done = mustBeTask(await echo.sendMessage({ message: userMessage('done') }, { signal }), 'SendMessage');
      await rejects(echo.cancelTask({ tenant: '', id: done.id }, { signal }), 'TASK_NOT_CANCELABLE', 'canceling a completed task');
      return 'canceled; a completed task is TASK_NOT_CANCELABLE';
    }],

    ['resubscribe', async (signal) => {
      const c = await client('slow');
      const first = new AbortController();
      signal.addEventListener('abort', () => first.abort(), { once: true });
      const stream = c.sendMessageStream({ message: userMessage('chunks=5 delay=300ms') }, { signal: first.signal });
      const head = await stream.next();
      if (head.done || head.value.payload?.$case !== 'task') fail('the stream did not start with the task');
      const id = head.value.payload.value.id;
      first.abort(); // the client goes away; the task runs on
      stream.return().catch(() => {});
      const { events, ended } = await readStream(c.resubscribeTask({ tenant: '', id }, { signal }), endsTask);
      const seq = caseList(events);
      if (events[0]?.payload?.$case !== 'task') fail(`SubscribeToTask must start with the task: ${seq}`);
      if (ended !== 'final-then-eof') fail(`stream ended ${ended}: ${seq}`);
      if (events.at(-1).payload.value.status.state !== TaskState.TASK_STATE_COMPLETED) fail(`final event ${seq}`);
      return seq;
    }],

    ['multi-turn-ask', async (signal) => {
      const c = await client('ask');
      const t1 = mustBeTask(await c.sendMessage({ message: userMessage('hi') }, { signal }), 'turn 1');
      wantState(t1, TaskState.TASK_STATE_INPUT_REQUIRED, 'turn 1');
      const name = `Zed${randomUUID().slice(0, 4)}`;
      const t2 = mustBeTask(await c.sendMessage(
        { message: userMessage(name, { taskId: t1.id, contextId: t1.contextId }) }, { signal }), 'turn 2');
      if (t2.id !== t1.id) fail(`turn 2 answered task ${t2.id}, want ${t1.id}`);
      wantState(t2, TaskState.TASK_STATE_COMPLETED, 'turn 2');
      if (!artifactText(t2).includes(name)) fail(`reply ${JSON.stringify(artifactText(t2))} lacks ${name}`);
      return `asked ${JSON.stringify(textOf(t1.status?.message?.parts))}; answered ${JSON.stringify(artifactText(t2))}`;
    }],

    ['errors', async (signal) => {
      const c = await client('echo');
      const ghost = randomUUID();
      await rejects(c.getTask({ tenant: '', id: ghost }, { signal }), 'TASK_NOT_FOUND', 'GetTask of an unknown id');
      await rejects(c.cancelTask({ tenant: '', id: ghost }, { signal }), 'TASK_NOT_FOUND', 'CancelTask of an unknown id');
      const sub = c.resubscribeTask({ tenant: '', id: ghost }, { signal });
      await rejects(sub.next(), 'TASK_NOT_FOUND', 'SubscribeToTask of an unknown id');
      return 'TASK_NOT_FOUND from get, cancel and subscribe';
    }],

    ['push-config-and-delivery', async (signal) => {
      const card = await new DefaultAgentCardResolver().resolve(cardUrl('slow'), '');
      if (card.capabilities?.pushNotifications !== true) fail('the card says pushNotifications is not true');
      const rcv = await startReceiver();
      try {
        const c = await client('slow');
        const task = mustBeTask(await c.sendMessage(
          { message: userMessage('chunks=3 delay=150ms'), configuration: { returnImmediately: true } }, { signal }), 'SendMessage');
        const url = `${rcv.url}/hook-${protocol.replace(/\W/g, '')}`;
        const made = await c.createTaskPushNotificationConfig(
          { tenant: '', id: 'js-hook', taskId: task.id, url, token: 'js-token', authentication: undefined }, { signal });
        if (made.url !== url || made.id !== 'js-hook') fail(`created ${JSON.stringify(made)}`);
        const got = await c.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'js-hook' }, { signal });
        if (got.url !== url) fail(`get returned ${JSON.stringify(got)}`);
        const list = await c.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' }, { signal });
        if ((list.configs ?? []).length !== 1) fail(`list returned ${JSON.stringify(list)}`);
        const hit = await rcv.waitFor((h) => h.body.includes(task.id) && h.body.includes('TASK_STATE_COMPLETED'), signal);
        if (hit.headers['x-a2a-notification-token'] !== 'js-token') fail(`token header ${hit.headers['x-a2a-notification-token']}`);
        await c.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'js-hook' }, { signal });
        const after = await c.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' }, { signal });
        if ((after.configs ?? []).length !== 0) fail(`after delete: ${JSON.stringify(after)}`);
        return `delivered to ${hit.path}`;
      } finally {
        rcv.close();
      }
    }],
  ];
}
