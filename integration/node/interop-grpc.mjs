// A2A 1.0 interop over gRPC, driven by @a2a-js/sdk 1.x (npm alias "a2a-v1")
// and its gRPC transport (a2a-v1/client/grpc, on @grpc/grpc-js).
// Usage: node interop-grpc.mjs http://127.0.0.1:PORT
// Prints one JSON line per check; exits 1 if any check failed.
import * as grpc from '@grpc/grpc-js';
import { GrpcTransportFactory } from 'a2a-v1/client/grpc';
import { baseUrlFromArgv, fail, runChecks } from './lib/check.mjs';
import { bindingChecks } from './lib/bindings-v1.mjs';

const base = baseUrlFromArgv();

// Every HTTP request of the script: over gRPC, only cards may go over HTTP.
const requests = [];
const realFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = input instanceof Request ? input.url : String(input);
  if (requests.length < 10000) requests.push(`${init?.method ?? 'GET'} ${new URL(url).pathname}`);
  return realFetch(input, init);
};

const transports = [new GrpcTransportFactory({ grpcChannelCredentials: grpc.credentials.createInsecure() })];

function used(c) {
  if (c.transport?.protocolName !== 'GRPC') fail(`the client's transport is ${c.transport?.protocolName}`);
  const calls = requests.filter((r) => !r.includes('/.well-known/'));
  if (calls.length > 0) fail(`A2A calls went over HTTP: ${JSON.stringify(calls)}`);
  return 'GRPC';
}

await runChecks(bindingChecks({ base, protocol: 'GRPC', transports, used }))
  .then((failed) => process.exit(failed ? 1 : 0));
