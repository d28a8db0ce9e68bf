// Package service is the mesh's A2A service: one typed Go method per A2A
// operation (SendMessage, SendStreamingMessage, GetTask, ListTasks,
// CancelTask, SubscribeToTask, the four push-config methods and
// GetExtendedAgentCard), context first, returning the 1.0 model and
// *a2a.Error. It knows no HTTP and no JSON-RPC: every binding (the edge's
// JSON-RPC codec today, HTTP+JSON and gRPC next) decodes its request,
// calls one method, and encodes what it returns.
//
// The task logic that sits above package tasks lives here: which agent a
// call addresses (the transport's, the request's tenant, else the agent of
// the task it names, else the default agent), who may see a task (its
// owner, and only through its agent when the call names one), history
// trimming, the blocking bound of SendMessage, how a stream resumes
// after a Last-Event-ID, and extensions: a required one the call does not
// request is refused, and the Call says which to echo (extensions.go).
//
// Who calls and whom travels in the context as a *Call (WithCall): the
// principal the transport authenticated, the agent its route names, and
// the protocol dialect, which selects the few behaviours 0.3 defines
// differently. Streams are iter.Seq2[Event, error]: each event carries its
// position in the mesh's event log, which a client resumes after.
package service
