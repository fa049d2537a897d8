// Package upload owns file uploads (SPEC §10, the seed's "Chunked uploads"): the
// staging area of file/upload/begin and file/upload/chunk with its limits (four
// uploads per connection, one 256 MiB budget across connections charging payload
// and metadata, idle discard and reclaim), and the one commit step that file/attach
// and file/upload/commit share, which lands the bytes in the session's workspace
// under their content hash and indexes them per session.
//
// It never decides who may do what: the rpc layer passes a Guard that holds the
// policy in force and checks the caller against it. It never follows a link in the
// workspace's uploads directory, and it never holds more staged bytes than the budget.
package upload
