// Package replay answers "what would this change do?": it replays
// recorded processes or batch items (package record) against a changed
// process, item by item, with no effects, and reports per item whether
// the answers come out the same, by the one comparator of package
// compare.
//
// A replay runs no action and asks no person. A SERVER step is answered
// with the output its item's record holds, when the changed process gives
// it the same input; with another input the item stops there and is
// reported as needing the server. A USER chunk takes the person's
// recorded answer, or the item stops as needing a person. A
// fire-and-forget action is not started. An LLM chunk is unchanged when
// what makes its answer is: its compiled schema and instructions
// (record.Fingerprint), its inputs (the minimal context) and the model;
// an unchanged chunk takes its recorded answer, and only the others are
// asked of the model, the items that need one chunk asked together K at
// a time in multiplexed calls (batch.Fill), as a batch asks them.
//
// Run replays the records in memory, chunk by chunk for all the items at
// once; it writes nothing but the model's answers (Options.Answers). A
// replay may take a seeded sample of the records, its changed share given
// with a 95 % Wilson interval (Wilson), and ask some items again with the
// process as it was recorded: a baseline of the model's own noise, beside
// which the change's effect is read. It imports the batch runtime for its calls
// and nothing of Temporal's engine is asked.
package replay
