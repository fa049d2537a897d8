package store

// The statements of a turn's writes (BeginTurnFor, AppendCheckpoint, EndTurnWith and
// what they share with Recover and InterruptTurn), prepared once at Open
// (preparedQueries): preparing one cost about as much as running it, a tenth of a
// streamed turn's storage.
const (
	qTouchSession           = "UPDATE sessions SET last_activity = ? WHERE id = ?"
	qTouchAddUsage          = "UPDATE sessions SET last_activity = ?, input_tokens = input_tokens + ?, output_tokens = output_tokens + ? WHERE id = ?"
	qAddUsage               = "UPDATE sessions SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ? WHERE id = ?"
	qTurnExists             = "SELECT 1 FROM turns WHERE session_id = ? AND turn_id = ?"
	qInsertTurn             = "INSERT INTO turns (session_id, turn_id, state, started_at) VALUES (?, ?, ?, ?)"
	qInsertCheckpoint       = "INSERT INTO checkpoints (session_id, turn_id, message) VALUES (?, ?, ?)"
	qTurnState              = "SELECT state FROM turns WHERE session_id = ? AND turn_id = ?"
	qTurnCheckpointIDs      = "SELECT id FROM checkpoints WHERE session_id = ? AND turn_id = ? ORDER BY id"
	qCheckpointMessage      = "SELECT message FROM checkpoints WHERE id = ?"
	qSetTurnState           = "UPDATE turns SET state = ? WHERE session_id = ? AND turn_id = ?"
	qMessageCount           = "SELECT message_count, num FROM sessions WHERE id = ?"
	qSetMessageCount        = "UPDATE sessions SET message_count = ? WHERE id = ?"
	qInsertOperation        = "INSERT INTO operations (session_id, operation_id, turn_id) VALUES (?, ?, ?)"
	qDropCoveredCheckpoints = "DELETE FROM checkpoints WHERE session_id = ?1 AND turn_id = ?2 AND id <= (SELECT boundary FROM snapshots WHERE session_id = ?1)"
	qInsertRow              = "INSERT INTO transcript (key, role, text, tool_call_id, name, is_error, interrupted, turn_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
	qForgetOperations       = "DELETE FROM operations WHERE session_id = ?1 AND rowid NOT IN (SELECT rowid FROM operations WHERE session_id = ?1 ORDER BY rowid DESC LIMIT ?2)"
	qSetOperationResult     = "UPDATE operations SET stop_reason = ?, text = ?, input_tokens = ?, output_tokens = ? WHERE session_id = ? AND turn_id = ? AND stop_reason IS NULL"
)

// The statements of a trim and a compaction (context.go, controls.go), prepared
// too: a session compacting on its own does so on most turns of a long context,
// and parsing these cost a third of what the compaction's write did.
const (
	qSnapshotBoundary  = "SELECT boundary FROM snapshots WHERE session_id = ?"
	qLastCheckpointID  = "SELECT seq FROM sqlite_sequence WHERE name = 'checkpoints'"
	qCoveredBoundary   = "SELECT max(coalesce((SELECT max(id) FROM checkpoints WHERE session_id = ?1), 0), coalesce((SELECT boundary FROM snapshots WHERE session_id = ?1), 0))"
	qCheckpointsFrom   = "SELECT count(*), coalesce(min(id), 0), coalesce(max(id), 0) FROM checkpoints WHERE session_id = ? AND id >= ?"
	qStoreSnapshot     = "INSERT INTO snapshots (session_id, messages, boundary) VALUES (?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET messages = excluded.messages, boundary = excluded.boundary"
	qDropCoveredByTrim = "DELETE FROM checkpoints WHERE session_id = ?1 AND id <= ?2 AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = ?1 AND t.turn_id = checkpoints.turn_id AND t.state = 'running')"
)

var trimQueries = []string{qSnapshotBoundary, qLastCheckpointID, qCoveredBoundary, qCheckpointsFrom, qStoreSnapshot, qDropCoveredByTrim}

var turnQueries = []string{qTouchSession, qTouchAddUsage, qAddUsage, qTurnExists, qInsertTurn, qInsertCheckpoint, qTurnState, qTurnCheckpointIDs, qCheckpointMessage, qSetTurnState, qMessageCount, qSetMessageCount, qInsertOperation, qDropCoveredCheckpoints, qInsertRow, qForgetOperations, qSetOperationResult}
