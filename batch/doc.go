// Package batch runs one process over a stream of items: each LLM chunk is
// sent once per group of up to K items as one multiplexed model call (the
// flat N×M object of SPEC §5), the answer is split back per item and every
// item's part is checked on its own; an item whose part is wrong is
// repaired alone. Server and person chunks run per item. Items are Temporal
// workflows of their own (vibe.Process) with ids derived from the batch id
// and their line, grouped under a vibe.Group workflow per K items, so
// starting the same work again finds what already ran.
//
// [Run] drives a batch from a JSONL stream with bounded memory and
// back-pressure, writing one result line per item in input order.
package batch
