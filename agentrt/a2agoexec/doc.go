// Package a2agoexec runs an agent written against the official Go SDK
// (github.com/a2aproject/a2a-go/v2) — an a2asrv.AgentExecutor — as a mesh
// worker, unchanged. The mesh is then its durable, horizontally scaled
// backend: tasks live in JetStream, any number of workers share the
// agent's queue, a turn whose worker dies runs again elsewhere, and only
// NATS is needed (the SDK's own cluster mode needs a database beside it).
//
// Usage:
//
//	exec := myExecutor{} // implements a2asrv.AgentExecutor
//	card := a2a.AgentCard{ // package github.com/a2amesh/a2amesh/a2a
//		Name: "summarizer", Description: "Summarizes text", Version: "1.0.0",
//		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
//		Skills: []a2a.AgentSkill{{ID: "summarize", Name: "Summarize", Description: "...", Tags: []string{"text"}}},
//	}
//	w := &agentrt.Worker{Store: b, Agent: a2agoexec.New(exec, card), Name: "summarizer"}
//	err := w.Run(ctx) // until ctx ends
//
// NewFromCard takes the card in a2a-go's model instead. Clients reach the
// agent at the edge's /agents/summarizer; the edge fills in the card's
// interfaces.
//
// Each user turn becomes one Execute call. Its ExecutorContext holds the
// user message, the mesh task's TaskID and ContextID, the request metadata,
// an unauthenticated User and empty ServiceParams (the mesh does not pass
// the caller's identity or headers to workers), and a CallContext is put on
// the context as the SDK's transports do. StoredTask is nil on a task's
// first turn; on a later turn of a multi-turn task it is the task as the
// SDK would have loaded it: state input-required, the earlier history
// followed by the new message, the artifacts so far.
//
// The events Execute yields are recorded on the task (see
// agentrt.EventWriter.Event): a submitted state is skipped (the mesh has
// recorded it), a Message completes the task with that message as the
// status message (the mesh always answers with a task), status and
// artifact updates are recorded as they are. The run stops after a Message
// or a final or interrupted state (input-required, auth-required). An
// error yielded by Execute fails the task; clients see a generic message,
// never the error's text. Ending the events without a final state
// completes the task.
//
// When the task is canceled (or times out, or is closed by someone else)
// while Execute runs, Execute's context ends, and the adapter then calls
// the executor's Cancel as the SDK does for a cancel request: with an
// ExecutorContext for the same task without a Message, whose StoredTask is
// the task as the run left it. It drains Cancel's events without recording
// them (the mesh has recorded the cancel) and waits for it at most the
// cancel timeout (WithCancelTimeout). When the worker is stopping, the
// context ends too but Cancel is not called: the turn goes back to the
// queue and runs again on another worker. An executor implementing
// a2asrv.AgentExecutionCleaner gets Cleanup after the execution and after
// a cancel, as in the SDK.
//
// A turn can run more than once (agentrt.Request.Attempt > 1, after its
// worker died mid-run). Executors usually give artifacts random UUIDs
// (a2a.NewArtifactEvent), so the adapter records each artifact a turn
// creates under a UUID id of its own that is the same on every run of the
// turn (derived from the task, the turn's message and the artifact's
// order, see agentrt.Request.ArtifactID): a re-run then replaces what the
// dead run left instead of adding a second copy. Clients see these ids;
// the executor keeps using its own within the turn, and sees the recorded
// ones in StoredTask on later turns. Artifact ids that are not UUIDs (an
// executor's own names, such as "report") are kept as they are.
package a2agoexec
