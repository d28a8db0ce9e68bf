// Message replies (an agent answering a send with a Message, no task),
// driven by @a2a-js/sdk: 1.x over JSON-RPC, HTTP+JSON and gRPC, and 0.3.x
// over JSON-RPC, against the built-in agent hello.
// Usage: node reply.mjs http://127.0.0.1:PORT
// Prints one JSON line per check; exits 1 if any check failed.
import { randomUUID } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { Role } from 'a2a-v1';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory } from 'a2a-v1/client';
import { GrpcTransportFactory } from 'a2a-v1/client/grpc';
import { ClientFactory as ClientFactory03, ClientFactoryOptions as ClientFactoryOptions03 } from 'a2a-v03/client';
import { baseUrlFromArgv, fail, readStream, runChecks } from './lib/check.mjs';
import { userMessage } from './lib/bindings-v1.mjs';

const base = baseUrlFromArgv();
const cardUrl = `${base}/agents/hello/.well-known/agent-card.json`;

const textOf = (parts = []) => parts.filter((p) => p.content?.$case === 'text').map((p) => p.content.value).join('');

function client(protocol, transports) {
  const opts = { preferredTransports: [protocol] };
  if (transports) opts.transports = transports;
  return new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, opts)).createFromUrl(cardUrl, '');
}

// A 1.x Message: protobuf-shaped, told apart from a Task by its messageId.
function wantReply(res, text, what) {
  if (!res || !('messageId' in res) || 'status' in res) fail(`${what}: expected a Message, got ${JSON.stringify(res)}`);
  if (res.role !== Role.ROLE_AGENT) fail(`${what}: role ${res.role}, want ROLE_AGENT`);
  if (res.taskId) fail(`${what}: the message names task ${res.taskId}`);
  if (!res.contextId) fail(`${what}: the message has no contextId`);
  if (textOf(res.parts) !== text) fail(`${what}: text ${JSON.stringify(textOf(res.parts))}, want ${JSON.stringify(text)}`);
  return res;
}

function v1Checks(protocol, transports) {
  return [
    [`${protocol}: send answered with a message`, async (signal) => {
      const c = await client(protocol, transports);
      if (c.transport?.protocolName !== protocol) fail(`transport ${c.transport?.protocolName}`);
      const msg = userMessage('js');
      const first = wantReply(await c.sendMessage({ message: msg }, { signal }), 'hello, js', 'SendMessage');
      const again = wantReply(await c.sendMessage({ message: msg }, { signal }), 'hello, js', 'retried SendMessage');
      if (again.messageId !== first.messageId) fail(`the retry got message ${again.messageId}, want ${first.messageId}`);
      return `message ${first.messageId}, the same on retry`;
    }],
    [`${protocol}: stream of one message`, async (signal) => {
      const c = await client(protocol, transports);
      const stream = c.sendMessageStream({ message: userMessage('js stream') }, { signal });
      const { events, ended } = await readStream(stream, () => true);
      if (ended !== 'final-then-eof') fail(`the stream did not end after its first event (${ended}): ${JSON.stringify(events)}`);
      if (events.length !== 1) fail(`${events.length} events: ${JSON.stringify(events)}`);
      const ev = events[0];
      // a 1.x stream yields the Message itself, or a StreamResponse holding it
      const m = ev.payload?.$case === 'message' ? ev.payload.value : ev;
      wantReply(m, 'hello, js stream', 'stream event');
      return 'one event, a message';
    }],
  ];
}

const v03Checks = [
  ['0.3: send answered with a message', async (signal) => {
    const c = await new ClientFactory03(ClientFactoryOptions03.createFrom(ClientFactoryOptions03.default,
      { preferredTransports: ['JSONRPC'] })).createFromUrl(cardUrl, '');
    const msg = { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'old' }] };
    const res = await c.sendMessage({ message: msg }, { signal });
    if (res?.kind !== 'message') fail(`kind ${JSON.stringify(res?.kind)}, want "message": ${JSON.stringify(res)}`);
    if (res.role !== 'agent' || res.taskId || !res.contextId) fail(`message ${JSON.stringify(res)}`);
    const text = res.parts.filter((p) => p.kind === 'text').map((p) => p.text).join('');
    if (text !== 'hello, old') fail(`text ${JSON.stringify(text)}`);
    const stream = c.sendMessageStream({ message: { ...msg, messageId: randomUUID() } }, { signal });
    const { events, ended } = await readStream(stream, () => true);
    if (ended !== 'final-then-eof' || events.length !== 1 || events[0].kind !== 'message') {
      fail(`stream (${ended}): ${JSON.stringify(events)}`);
    }
    return 'message, and a stream of one message';
  }],
];

await runChecks([
  ...v1Checks('JSONRPC', [new JsonRpcTransportFactory()]),
  ...v1Checks('HTTP+JSON', [new RestTransportFactory()]),
  ...v1Checks('GRPC', [new GrpcTransportFactory({ grpcChannelCredentials: grpc.credentials.createInsecure() })]),
  ...v03Checks,
]).then((failed) => process.exit(failed ? 1 : 0));
