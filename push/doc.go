// Package push delivers A2A push notifications: a component of its own,
// which an edge process may host beside its HTTP server (New, then Run).
//
// Configs live in the A2A_PUSH bucket under <taskId>.<configId>, with the
// owner, the protocol version of the call that set them (deliveries use its
// wire shapes) and the task's last event at that moment: the events after
// it are delivered. Store is what the A2A push-config methods call; it
// validates a config (the SSRF guard refuses a bad webhook at set time) and
// stores, reads, lists and deletes them. Every Deliverer running takes part
// in two durable JetStream consumers, so delivery survives the loss or
// restart of any process running one:
//
//   - push_dispatch reads the events stream; an in-memory index of the task
//     ids that have configs (kept by a watcher on the bucket) makes an event
//     of a task without config cost one map lookup. A matching event
//     becomes one job per config on the A2A_PUSH_OUT work queue.
//   - push_deliver POSTs each job's event to its webhook through the SSRF
//     guard (dial-time address check; an allow-list trusts internal
//     receivers), retrying with exponential backoff a bounded number of
//     times. Jobs are sharded by task over Config.Workers senders.
//
// What is delivered: every event of the task's log after the config was set
// (status and artifact updates, agent messages), not the task's creation
// entry nor the user's own turns, which a stream does not show either.
//
// Order: jobs are queued in log order, and one deliverer delivers the jobs
// of a task it holds one at a time, in order. A retried notification can
// be overtaken by later ones of the same task, as can jobs of one task
// taken by two deliverers: receivers should order by status timestamp, or
// GetTask. Delivery is at least once (a receiver may see a notification
// twice).
//
// Each POST carries:
//   - the event as a StreamResponse (1.0) or the 0.3 result shape;
//   - X-A2A-Notification-Token: the config's token, from either shape
//     (top-level token, else authentication.credentials; top-level wins);
//   - Authorization: {scheme} {credentials} when the config has
//     authentication (1.0 §4.3.3);
//   - a JWT signed by the mesh (ES256; iss, aud = the webhook URL, iat,
//     exp, jti, taskId, request_body_sha256) in X-A2A-Notification-Signature,
//     and also as Authorization: Bearer <jwt> when the config has no
//     authentication of its own (where the A2A guidance puts it). Receivers
//     verify it with the key set Deliverer.JWKS returns, which an edge
//     serves at /.well-known/jwks.json.
//
// Outcomes are counted in a2amesh_push_deliveries_total (Config.Metrics),
// and each POST is a client span "push POST" beneath the span that created
// the task.
package push
