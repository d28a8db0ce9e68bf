// Package taskstore is the mesh's task store: the one package that knows
// what a task is on JetStream and which changes to it are legal.
//
// It owns a task's durable layout (its event log, the snapshot read as
// the task, the index ListTasks pages through, the counts, the delegation
// record, retention and the fan-out of the log to open streams), the
// rules of its state (machine.go: legal transitions, the terminal guard,
// run fencing and what a redelivered run may do), the reads (get, list,
// subscribe and resume) and awaiting a settled state.
//
// Store is the layout on one bus connection; every process that serves
// tasks opens one (Open) and runs its upkeep (Run). Lifecycle is the
// caller's side of it: a user turn goes through Lifecycle.Submit, which
// starts a task or continues one that waits for input, recognises a
// retried turn (the same messageId: a new task's id is derived from it
// within the idempotency window, and a continued task's history holds it),
// builds the work item and enqueues it under a Nats-Msg-Id that dedupes
// retries (or a recovery id, when a retry finds its turn recorded but its
// work item gone). A full queue fails the task and is answered with
// a2a.ErrServerBusy. Lifecycle.Await then waits, within a bound, until the
// task settles (ends or asks for input); Cancel, Get and Requeue (the
// janitor's recovery of a turn whose work item was lost) complete it.
//
// The package knows no HTTP and no JSON-RPC. Errors a client may see are
// *a2a.Error (errors.As finds one), so any transport can map them; those
// that stand for a condition of the store (task not found, terminal, queue
// full) or of the lifecycle (ErrNotContinuable) match it with errors.Is as
// well. Who may see a task is the caller's decision: Submit continues the
// task record the caller read, and Cancel cancels the one it names.
//
// The edge's service, the worker's event writer and janitor, Mesh.Send
// and the operator API all go through it; bus below it knows nothing of
// tasks.
package taskstore
