// Package upload owns file uploads (docs/protocol.md, "Files"): the
// staging area of file/upload/begin and file/upload/chunk with its limits (four
// uploads per connection, one 256 MiB budget across connections charging payload
// and metadata, idle discard and reclaim), the spool that hashes an upload of more
// than one chunk and writes it to its temporary file while the next chunks arrive
// (spool.go), and the pure write of a file into a workspace's uploads directory
// under its content hash: Prepare (a temporary file, written and synced), Place
// (renamed into its name), Intact (a repeat checked on disk) and RemoveTemps (what
// an interrupted commit left, removed at start).
//
// It knows nothing of sessions, authorization or JSON-RPC: the one commit step that
// file/attach and file/upload/commit share, with its checks and its locks, is
// internal/rpc/commit.go, and its errors are domain errors (Refusal with the
// reasons (docs/protocol.md, "Files"), ParamError, StorageError) that rpc maps to the
// wire. It never follows a link in a workspace's uploads directory, and it never
// holds more staged bytes than the budget.
package upload
