// Test fixture: reference server built on @a2a-js/sdk 0.3.x's server classes.
// Serves A2A 0.3 only (message/send, message/stream, tasks/*) on
// POST /agents/{name}; used to check interop-v03.mjs against genuine 0.3.
// Usage: node refserver/v03.mjs [port]   (prints its base URL, then serves)
import { randomUUID } from 'node:crypto';
import { A2AError, DefaultRequestHandler, InMemoryTaskStore, JsonRpcTransportHandler } from 'a2a-v03/server';
import { AGENTS, agentCard, parseSlow, startServer } from './http.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const textOf = (msg) => (msg?.parts ?? []).filter((p) => p.kind === 'text').map((p) => p.text).join('');
const agentMessage = (ctx, text) => ({
  kind: 'message', messageId: randomUUID(), role: 'agent', parts: [{ kind: 'text', text }],
  taskId: ctx.taskId, contextId: ctx.contextId,
});

function publishTask(ctx, bus) {
  bus.publish(ctx.task ?? {
    kind: 'task', id: ctx.taskId, contextId: ctx.contextId, artifacts: [], history: [ctx.userMessage],
    status: { state: 'submitted', timestamp: new Date().toISOString() },
  });
}
// 0.3: `final: true` ends the stream (also for input-required).
function publishStatus(ctx, bus, state, text, final = false, taskId = ctx.taskId) {
  bus.publish({
    kind: 'status-update', taskId, contextId: ctx.contextId, final,
    status: { state, message: text ? agentMessage(ctx, text) : undefined, timestamp: new Date().toISOString() },
  });
  if (final) bus.finished();
}
function publishArtifact(ctx, bus, artifactId, text, append = false, lastChunk = true) {
  bus.publish({
    kind: 'artifact-update', taskId: ctx.taskId, contextId: ctx.contextId, append, lastChunk,
    artifact: { artifactId, name: artifactId, parts: [{ kind: 'text', text }] },
  });
}

const canceled = new Set();
const contexts = new Map(); // taskId -> contextId, for cancel events
const executors = {
  echo: {
    async execute(ctx, bus) {
      publishTask(ctx, bus);
      publishArtifact(ctx, bus, 'echo', textOf(ctx.userMessage));
      publishStatus(ctx, bus, 'completed', undefined, true);
    },
    async cancelTask() {},
  },
  slow: {
    async execute(ctx, bus) {
      const { chunks, delayMs } = parseSlow(textOf(ctx.userMessage));
      contexts.set(ctx.taskId, ctx.contextId);
      publishTask(ctx, bus);
      publishStatus(ctx, bus, 'working');
      for (let i = 0; i < chunks; i++) {
        await sleep(delayMs);
        if (canceled.has(ctx.taskId)) return;
        publishArtifact(ctx, bus, 'chunks', `chunk ${i + 1}/${chunks} `, i > 0, i === chunks - 1);
      }
      publishStatus(ctx, bus, 'completed', undefined, true);
    },
    async cancelTask(taskId, bus) {
      canceled.add(taskId);
      publishStatus({ contextId: contexts.get(taskId) ?? '' }, bus, 'canceled', undefined, true, taskId);
    },
  },
  ask: {
    async execute(ctx, bus) {
      publishTask(ctx, bus);
      if (ctx.task?.status?.state !== 'input-required') {
        publishStatus(ctx, bus, 'input-required', 'What is your name?', true);
        return;
      }
      const greeting = `Hello, ${textOf(ctx.userMessage).trim()}!`;
      publishArtifact(ctx, bus, 'greeting', greeting);
      publishStatus(ctx, bus, 'completed', greeting, true);
    },
    async cancelTask() {},
  },
};

const mapError = (err) =>
  err instanceof A2AError ? err.toJSONRPCError() : { code: -32603, message: String(err?.message ?? err) };
const handlers = {};
const { base } = await startServer({
  port: Number(process.argv[2] ?? 0),
  async dispatch(name, rpc) {
    return { result: await handlers[name].handle(rpc), mapError };
  },
});
for (const [name, description] of Object.entries(AGENTS)) {
  const rh = new DefaultRequestHandler(agentCard(base, name, description), new InMemoryTaskStore(), executors[name]);
  handlers[name] = new JsonRpcTransportHandler(rh);
}
process.stdout.write(base + '\n');
