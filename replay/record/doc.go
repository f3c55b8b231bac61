// Package record keeps what a replay of a finished process needs, after
// the engine has let the process's history go: its input, each chunk's
// context, answer and the model that gave it (with a fingerprint of what
// makes the answer: the chunk's compiled schema and instructions), each
// server step's input and recorded output, and each person's answer.
//
// A Record is written when a process, or a batch item, ends, and when
// it begins to wait for a person, as far as it got (the
// process's workflow and a batch's group write theirs through the local
// activity durable.KeepName); a Store keeps them in the data directory,
// gzipped, one file per process and one per batch group, for a retention
// of their own (DefaultRetention) that Store.Prune enforces. The package
// holds nothing of Temporal.
package record
