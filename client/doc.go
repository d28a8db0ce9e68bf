// Package client is a small A2A 1.0 client: it owns the wire side of
// talking to one agent endpoint over any of the three standard bindings —
// JSON-RPC (the default; also A2A 0.3), HTTP+JSON and gRPC — (request
// shapes, A2A-Version, service headers or metadata, tenant, response size
// bounds, error mapping), reading event streams (Server-Sent Events or a
// gRPC server stream), and fetching agent cards. FromCard picks the
// interface of a card the client speaks.
//
// The wire types and error codes live in package a2a. Whatever the
// binding, an error the server answers is returned as an *a2a.Error with
// the A2A code (the google.rpc.Status of HTTP+JSON and gRPC is mapped back
// through its ErrorInfo reason), so callers test it with
// errors.Is(err, a2a.ErrTaskNotFound) and the like.
//
// In 1.0 the client calls SendMessage, SendStreamingMessage, GetTask,
// ListTasks, CancelTask and SubscribeToTask, and sends "A2A-Version: 1.0"
// on every call.
package client
