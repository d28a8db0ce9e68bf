// Test fixture: reference server built on @a2a-js/sdk 1.x's server classes.
// Serves A2A 1.0 (A2A-Version: 1.0) and, through the SDK's v0.3 compat
// handler, A2A 0.3 (no A2A-Version header) on the same POST /agents/{name}.
// Usage: node refserver/v1.mjs [port]   (prints its base URL, then serves)
import { randomUUID } from 'node:crypto';
import { Role, TaskState } from 'a2a-v1';
import {
  AgentEvent, DefaultRequestHandler, InMemoryTaskStore, JsonRpcTransportHandler,
  UnauthenticatedUser, defaultServerCallContextBuilder,
} from 'a2a-v1/server';
import { LegacyJsonRpcTransportHandler } from 'a2a-v1/compat/v0_3/server';
import { AGENTS, agentCard, parseSlow, startServer } from './http.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const textOf = (msg) => (msg?.parts ?? []).filter((p) => p.content?.$case === 'text').map((p) => p.content.value).join('');
const textPart = (value) => ({ content: { $case: 'text', value }, filename: '', mediaType: 'text/plain' });
const agentMessage = (ctx, value) => ({
  messageId: randomUUID(), role: Role.ROLE_AGENT, parts: [textPart(value)],
  taskId: ctx.taskId, contextId: ctx.contextId, extensions: [], referenceTaskIds: [],
});

// Every execute() must publish a Task first, also on follow-up turns.
function publishTask(ctx, bus) {
  bus.publish(AgentEvent.task(ctx.task ?? {
    id: ctx.taskId, contextId: ctx.contextId, artifacts: [], history: [ctx.userMessage],
    status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: new Date().toISOString() },
  }));
}
function publishStatus(ctx, bus, state, text, taskId = ctx.taskId) {
  bus.publish(AgentEvent.statusUpdate({
    taskId, contextId: ctx.contextId,
    status: { state, message: text ? agentMessage(ctx, text) : undefined, timestamp: new Date().toISOString() },
  }));
}
function publishArtifact(ctx, bus, artifactId, text, append = false, lastChunk = true) {
  bus.publish(AgentEvent.artifactUpdate({
    taskId: ctx.taskId, contextId: ctx.contextId, append, lastChunk,
    artifact: { artifactId, name: artifactId, description: '', parts: [textPart(text)], extensions: [] },
  }));
}

const canceled = new Set();
const contexts = new Map(); // taskId -> contextId, for cancel events
const executors = {
  echo: {
    async execute(ctx, bus) {
      publishTask(ctx, bus);
      publishArtifact(ctx, bus, 'echo', textOf(ctx.userMessage));
      publishStatus(ctx, bus, TaskState.TASK_STATE_COMPLETED);
    },
    async cancelTask() {},
  },
  slow: {
    async execute(ctx, bus) {
      const { chunks, delayMs } = parseSlow(textOf(ctx.userMessage));
      contexts.set(ctx.taskId, ctx.contextId);
      publishTask(ctx, bus);
      publishStatus(ctx, bus, TaskState.TASK_STATE_WORKING);
      for (let i = 0; i < chunks; i++) {
        await sleep(delayMs);
        if (canceled.has(ctx.taskId)) return;
        publishArtifact(ctx, bus, 'chunks', `chunk ${i + 1}/${chunks} `, i > 0, i === chunks - 1);
      }
      publishStatus(ctx, bus, TaskState.TASK_STATE_COMPLETED);
    },
    async cancelTask(taskId, bus) {
      canceled.add(taskId);
      publishStatus({ contextId: contexts.get(taskId) ?? '' }, bus, TaskState.TASK_STATE_CANCELED, undefined, taskId);
    },
  },
  ask: {
    async execute(ctx, bus) {
      publishTask(ctx, bus);
      if (ctx.task?.status?.state !== TaskState.TASK_STATE_INPUT_REQUIRED) {
        publishStatus(ctx, bus, TaskState.TASK_STATE_INPUT_REQUIRED, 'What is your name?');
        return;
      }
      const greeting = `Hello, ${textOf(ctx.userMessage).trim()}!`;
      publishArtifact(ctx, bus, 'greeting', greeting);
      publishStatus(ctx, bus, TaskState.TASK_STATE_COMPLETED, greeting);
    },
    async cancelTask() {},
  },
};

const handlers = {};
const { base } = await startServer({
  port: Number(process.argv[2] ?? 0),
  async dispatch(name, rpc, headers) {
    const version = headers['a2a-version'] || '0.3';
    const context = defaultServerCallContextBuilder({
      user: new UnauthenticatedUser(), headers, requestedVersion: version,
    });
    if (version === '1.0') {
      return { result: await handlers[name].v1.handle(rpc, context), mapError: JsonRpcTransportHandler.mapToJSONRPCError };
    }
    if (version === '0.3') {
      return {
        result: await handlers[name].v03.handle(rpc, context),
        mapError: LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError,
      };
    }
    return { result: { jsonrpc: '2.0', id: rpc?.id ?? null, error: { code: -32009, message: `version ${version}` } } };
  },
});
for (const [name, description] of Object.entries(AGENTS)) {
  const rh = new DefaultRequestHandler(agentCard(base, name, description), new InMemoryTaskStore(), executors[name]);
  handlers[name] = { v1: new JsonRpcTransportHandler(rh), v03: new LegacyJsonRpcTransportHandler(rh) };
}
process.stdout.write(base + '\n');
