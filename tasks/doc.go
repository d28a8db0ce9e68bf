// Package tasks is the mesh's task lifecycle, one layer above the bus and
// below every caller that starts or continues a task: the edge (whatever
// the binding), an agent calling another agent (agentrt.Mesh) and the
// worker's janitor.
//
// A user turn goes through Service.Submit: it starts a task or continues
// one that waits for input, recognises a retried turn (the same messageId:
// a new task's id is derived from it within the idempotency window, and a
// continued task's history holds it), builds the work item and enqueues it
// under a Nats-Msg-Id that dedupes retries (or a recovery id, when a retry
// finds its turn recorded but its work item gone). A full queue fails the
// task and is answered with a2a.ErrServerBusy. Service.Await then waits,
// within a bound, until the task settles (ends or asks for input).
// Service.Cancel, Service.Get and Service.Requeue (the janitor's recovery
// of a turn whose work item was lost) complete it.
//
// The package knows no HTTP and no JSON-RPC. Errors a client may see are
// *a2a.Error (errors.As finds one), so any transport can map them; those
// that stand for a condition of the bus (task not found, terminal, queue
// full) or of the lifecycle (ErrNotContinuable) match it with errors.Is as
// well. Who may see a task is the caller's decision: Submit continues the
// task record the caller read, and Cancel cancels the one it names.
package tasks
