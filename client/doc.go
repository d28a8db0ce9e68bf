// Package client is a small A2A 1.0 JSON-RPC client: it owns the HTTP side
// of talking to one agent endpoint (request envelope, A2A-Version header,
// service headers, tenant, response size bounds, HTTP and JSON-RPC error
// mapping), reading Server-Sent Events streams, and fetching agent cards.
//
// The wire types and error codes live in package a2a; a JSON-RPC error from
// the server is returned as an *a2a.Error, so callers test it with
// errors.Is(err, a2a.ErrTaskNotFound) and the like.
//
// The client speaks the 1.0 method names (SendMessage, SendStreamingMessage,
// GetTask, ListTasks, CancelTask, SubscribeToTask) and sends
// "A2A-Version: 1.0" on every call. It does not speak 0.3.
//
// This package imports the standard library and package a2a only.
package client
