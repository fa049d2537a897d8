// Package store owns sessions.db, the durable side of sessions (docs/protocol.md,
// "Durable sessions" and "session/attach"). Per session it keeps:
//
//   - a row: owner, agent, workspace, interaction_surface, timestamps, the kill
//     tombstone, the reserved seq mark;
//   - the visible transcript: rows indexed from 0 that are only ever appended, never
//     renumbered, never removed by trimming;
//   - turns and their checkpoint events: every message that joins the model context,
//     written as it happens, one transaction each, so a crash loses at most the one
//     being written;
//   - the retained provider-context snapshot and the checkpoint boundary it covers;
//   - the session/update log that late attachers replay, trimmed to the newest N.
//
// Two views of one history, kept apart on purpose. The transcript is what a person
// reads back (session/messages); it gets a turn's messages when the turn ends
// (EndTurn) or, after a crash, once, followed by an interruption marker (Recover).
// The model context is what the provider is sent (Context): the latest snapshot plus
// the checkpoints after its boundary. Trimming (Trim) replaces the snapshot and drops
// the covered checkpoints in one transaction, and never touches the transcript;
// markers never reach the model.
//
// The store knows nothing of JSON-RPC, live sessions or turns in flight: the session
// layer decides when to call it. It never writes outside its database file (and the
// -wal/-shm files SQLite keeps beside it), and never keeps a system prompt, recalled
// memory or hidden reasoning: it stores only the llm.Message values it is
// handed, which carry none of those.
//
// Every write is one SQLite transaction on a single writer connection; see Store
// for why, and Options.FailWrites for simulating a failed write in tests.
package store
