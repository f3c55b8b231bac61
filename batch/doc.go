// Package batch runs one process over a stream of items: each LLM chunk is
// sent once per group of up to K items as one multiplexed model call (the
// flat N×M object of SPEC §5), the answer is split back per item and every
// item's part is checked on its own; an item whose part is wrong is
// repaired alone.
//
// A group is one workflow (vibe.Group, Workflows.Group) and its items are
// data inside it: each item's process is run by process.Interpreter — the
// interpreter of a process's own workflow — as one of the group's
// coroutines, the group its Host. The items' calls of a server step run in
// one activity, each under the item's own idempotency key, and a call that
// failed is retried alone; an item at a person's step waits in its group
// and is answered by its id (durable.UpdateItemAnswer). Items have ids
// derived from the batch id and their line (ItemID); the batch's record
// (vibe.Batch, Workflows.Batch) counts what the groups did and knows which
// group holds a line, so process.Client reads and answers an item by its
// id (Client.Host). Group ids are derived too (GroupID), so starting the
// same work again finds what already ran.
//
// With CallOptions.ProviderBatch the groups' calls go through the
// provider's Batch API instead (llm.BatchAPI): a workflow per batch
// (Workflows.ProviderBatches, ProviderID) gathers them into provider
// batches, waits for them on timers and hands each group its answers
// (Activities.Collect); see provider.go. Client.Estimate counts a batch's
// requests and prompt tokens before any call; Client.Cancel cancels a
// batch and its provider batches.
//
// [Client.Run] drives a batch from a JSONL stream with bounded memory and
// back-pressure, writing one result line per item in input order.
package batch
