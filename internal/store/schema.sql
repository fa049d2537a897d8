-- The schema of sessions.db, as an ordered list of migrations. Each section starts
-- with a line "-- +migration N: what it adds"; N counts up from 1 with no gap, and
-- PRAGMA user_version records the last one applied. Never edit a released section:
-- append a new one. Times are unix milliseconds; booleans are 0/1.

-- +migration 1: sessions, the visible transcript, turns, checkpoint events, snapshots
CREATE TABLE sessions (
    id                  TEXT    NOT NULL PRIMARY KEY,
    owner               TEXT    NOT NULL,              -- principal id
    agent               TEXT    NOT NULL,              -- agent alias
    workspace           TEXT    NOT NULL,
    interaction_surface TEXT    NOT NULL,              -- 'rpc' for this daemon's sessions
    created_at          INTEGER NOT NULL,
    last_activity       INTEGER NOT NULL,
    killed_at           INTEGER,                       -- the tombstone; NULL while alive
    message_count       INTEGER NOT NULL DEFAULT 0     -- transcript rows = the next index
) STRICT;

-- The visible transcript. Rows are appended at index message_count and are never
-- renumbered; trimming the model context never touches them.
CREATE TABLE transcript (
    session_id   TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    idx          INTEGER NOT NULL,
    role         TEXT    NOT NULL
                 CHECK (role IN ('user', 'assistant', 'tool_call', 'tool_result', 'marker')),
    text         TEXT    NOT NULL,
    tool_call_id TEXT,
    name         TEXT,
    is_error     INTEGER NOT NULL DEFAULT 0 CHECK (is_error IN (0, 1)),
    interrupted  INTEGER NOT NULL DEFAULT 0 CHECK (interrupted IN (0, 1)),
    turn_id      TEXT    NOT NULL,
    PRIMARY KEY (session_id, idx)
) STRICT;

CREATE TABLE turns (
    session_id TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_id    TEXT    NOT NULL,
    state      TEXT    NOT NULL CHECK (state IN ('running', 'complete', 'interrupted')),
    started_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, turn_id)
) STRICT;

-- Checkpoint events: the model-context messages of each turn, one row per message,
-- written as they happen. AUTOINCREMENT because a snapshot boundary is an id: after a
-- trim deletes the newest rows, a plain rowid could be handed out again, and a new
-- checkpoint would then look covered by the snapshot.
CREATE TABLE checkpoints (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT    NOT NULL,
    turn_id    TEXT    NOT NULL,
    message    TEXT    NOT NULL,                       -- one provider message as JSON
    FOREIGN KEY (session_id, turn_id) REFERENCES turns(session_id, turn_id) ON DELETE CASCADE
) STRICT;
CREATE INDEX checkpoints_by_session ON checkpoints(session_id, id);
CREATE INDEX checkpoints_by_turn ON checkpoints(session_id, turn_id, id);

-- The retained provider-context snapshot. No row is the NULL snapshot (legacy: replay
-- every checkpoint); messages '[]' is an explicit, authoritative empty snapshot. It
-- lives apart from sessions so that touching a session does not rewrite it.
CREATE TABLE snapshots (
    session_id TEXT    NOT NULL PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    messages   TEXT    NOT NULL,                       -- JSON array of provider messages
    boundary   INTEGER NOT NULL                        -- the last checkpoint id it covers
) STRICT;

-- +migration 2: the session/update replay log, seq reservation, listing indexes
ALTER TABLE sessions ADD COLUMN seq_mark INTEGER NOT NULL DEFAULT 0;     -- seqs up to here may be used
ALTER TABLE sessions ADD COLUMN updates_kept INTEGER NOT NULL DEFAULT 0; -- rows in updates

CREATE TABLE updates (
    session_id TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    payload    BLOB    NOT NULL,                       -- the session/update params as sent
    PRIMARY KEY (session_id, seq)
) STRICT, WITHOUT ROWID;

CREATE INDEX sessions_by_activity ON sessions(last_activity DESC, id DESC);
CREATE INDEX sessions_by_owner ON sessions(owner, last_activity DESC, id DESC);

-- +migration 3: the per-session index of uploaded files (docs/protocol.md, "Files")
-- One row per content hash a session stored: a repeat of the same bytes is
-- deduplicated against it, and session/prompt attachments resolve their ref_id here.
CREATE TABLE uploads (
    session_id     TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    sha256         TEXT    NOT NULL,                   -- lowercase hex
    filename       TEXT    NOT NULL,                   -- as given at the first upload
    workspace_path TEXT    NOT NULL,                   -- relative to the session's workspace
    size           INTEGER NOT NULL,
    PRIMARY KEY (session_id, sha256)
) STRICT, WITHOUT ROWID;

-- +migration 4: the replay log keeps a run of consecutive updates per row
-- A row per update cost a B-tree insert per session/update; a turn streams thousands
-- a second. A run is what one group commit wrote for a session: every seq from
-- first_seq to last_seq, their params joined by "\n" (compact JSON has no raw
-- newline; an update whose params do is stored as a run of its own, never split).
CREATE TABLE update_runs (
    session_id TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    payload    BLOB    NOT NULL,
    PRIMARY KEY (session_id, last_seq)
) STRICT, WITHOUT ROWID;
INSERT INTO update_runs (session_id, first_seq, last_seq, payload)
    SELECT session_id, seq, seq, payload FROM updates;
DROP TABLE updates;

-- +migration 5: operation ids of session/prompt (docs/protocol.md, "Reconnecting safely")
-- The last MaxOperations operation ids each session was prompted with, with the turn
-- each started, written in the transaction that begins the turn. The result columns
-- are NULL while the turn runs; the turn's end (or its recovery after a crash) fills
-- them in the transaction that ends it. A prompt repeating an id answers from here.
CREATE TABLE operations (
    session_id    TEXT    NOT NULL,
    operation_id  TEXT    NOT NULL,
    turn_id       TEXT    NOT NULL,
    stop_reason   TEXT,
    text          TEXT,
    input_tokens  INTEGER,
    output_tokens INTEGER,
    PRIMARY KEY (session_id, operation_id),
    FOREIGN KEY (session_id, turn_id) REFERENCES turns(session_id, turn_id) ON DELETE CASCADE
) STRICT;
CREATE INDEX operations_by_turn ON operations(session_id, turn_id);

-- +migration 6: the replay log's runs in a rowid table, keyed by an index
-- In a WITHOUT ROWID table a run's payload (tens of KB) lives in the key's b-tree,
-- and every comparison of a seek against an overflowing cell reads the whole row:
-- each group commit and each trim read the payloads of the runs they passed. Here
-- the key (with first_seq, so that a trim reads only the index) is an index of its
-- own, and a payload is read only when it is replayed. From this version on, a run
-- whose updates share what precedes their seq may be stored compact (runs.go).
CREATE TABLE update_runs_v6 (
    id         INTEGER PRIMARY KEY,
    session_id TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    payload    BLOB    NOT NULL
) STRICT;
INSERT INTO update_runs_v6 (session_id, first_seq, last_seq, payload)
    SELECT session_id, first_seq, last_seq, payload FROM update_runs ORDER BY session_id, last_seq;
DROP TABLE update_runs;
ALTER TABLE update_runs_v6 RENAME TO update_runs;
CREATE UNIQUE INDEX update_runs_by_seq ON update_runs(session_id, last_seq, first_seq);

-- +migration 7: session controls and usage totals (docs/protocol.md, "Session controls")
-- mode, model and title are what session/set chose (NULL: the agent's autonomy,
-- the agent's model, the title derived from the first prompt); the token columns
-- are the session's usage totals, added to as each turn ends. A compaction is a
-- turn row of its own (no checkpoints, no transcript rows) so that its operation id
-- shares the prompts' space: its outcome is kept in compact_before/compact_after.
ALTER TABLE sessions ADD COLUMN mode TEXT;
ALTER TABLE sessions ADD COLUMN model TEXT;
ALTER TABLE sessions ADD COLUMN title TEXT;
ALTER TABLE sessions ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE operations ADD COLUMN compact_before INTEGER;
ALTER TABLE operations ADD COLUMN compact_after INTEGER;

-- +migration 8: the transcript keyed by an integer, turns without a rowid
-- The data directory is kept within a small multiple of what it holds (docs/protocol.md, "A daemon that runs for months").
-- Each transcript row repeated the session's 36-byte id, and again in the index of
-- its (session_id, idx) key, which cost as much as the rows' text; each turn row
-- its session and turn ids in the table and in its key's index. A session gets a
-- number (num, unique), and a transcript row's key is num << 32 | idx: the table is
-- its own index, and a session's rows are one range of it. Rows go with their
-- session by that range (Store.Delete), not by a foreign key, which would need an
-- index of its own. Turns are small rows keyed by their ids: a table WITHOUT ROWID
-- is its key's index. Applied with foreign keys off (migrateOne), so that dropping
-- the old turns does not delete the checkpoints and operations that reference them.
ALTER TABLE sessions ADD COLUMN num INTEGER;
UPDATE sessions SET num = rowid;
CREATE UNIQUE INDEX sessions_by_num ON sessions(num);

CREATE TABLE transcript_v8 (
    key          INTEGER PRIMARY KEY,                  -- sessions.num << 32 | idx
    role         TEXT    NOT NULL
                 CHECK (role IN ('user', 'assistant', 'tool_call', 'tool_result', 'marker')),
    text         TEXT    NOT NULL,
    tool_call_id TEXT,
    name         TEXT,
    is_error     INTEGER NOT NULL DEFAULT 0 CHECK (is_error IN (0, 1)),
    interrupted  INTEGER NOT NULL DEFAULT 0 CHECK (interrupted IN (0, 1)),
    turn_id      TEXT    NOT NULL
) STRICT;
INSERT INTO transcript_v8 (key, role, text, tool_call_id, name, is_error, interrupted, turn_id)
    SELECT (s.num << 32) | t.idx, t.role, t.text, t.tool_call_id, t.name, t.is_error, t.interrupted, t.turn_id
    FROM transcript t JOIN sessions s ON s.id = t.session_id ORDER BY s.num, t.idx;
DROP TABLE transcript;
ALTER TABLE transcript_v8 RENAME TO transcript;

CREATE TABLE turns_v8 (
    session_id TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_id    TEXT    NOT NULL,
    state      TEXT    NOT NULL CHECK (state IN ('running', 'complete', 'interrupted')),
    started_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, turn_id)
) STRICT, WITHOUT ROWID;
INSERT INTO turns_v8 (session_id, turn_id, state, started_at)
    SELECT session_id, turn_id, state, started_at FROM turns;
DROP TABLE turns;
ALTER TABLE turns_v8 RENAME TO turns;

-- +migration 9: memories (docs/protocol.md, "Memory")
-- A memory belongs to an agent and its owner principal. The integer key is the
-- rowid the full-text index refers to (memories_fts, created at start by
-- EnsureMemoryIndex with the triggers that keep it in step, so that a missing or
-- corrupt index is rebuilt from this table); id is the name clients see. A key is
-- unique per agent and owner: a memory stored again under its key replaces it.
CREATE TABLE memories (
    num             INTEGER PRIMARY KEY,
    id              TEXT    NOT NULL UNIQUE,
    agent           TEXT    NOT NULL,
    owner           TEXT    NOT NULL,
    key             TEXT,
    content         TEXT    NOT NULL,
    tags            TEXT    NOT NULL DEFAULT '',   -- space-separated
    created         INTEGER NOT NULL,
    updated         INTEGER NOT NULL,
    embedding       BLOB,                          -- little-endian float32s
    embedding_model TEXT
) STRICT;
CREATE UNIQUE INDEX memories_by_key ON memories(agent, owner, key) WHERE key IS NOT NULL;
CREATE INDEX memories_by_scope ON memories(agent, owner, num);
