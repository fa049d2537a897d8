package store

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
)

// A realistic checkpoint: an assistant message of about 300 bytes with a tool call.
var benchMessage = assistant(strings.Repeat("some visible model text ", 10),
	call("call_0123456789", "read_file", `{"path":"src/main.go"}`))

// A realistic session/update payload: an agent_message_chunk, about 150 bytes.
func benchPayload(seq uint64) []byte {
	return fmt.Appendf(nil, `{"sessionId":"6f1c2a3e-1b2c-4d5e-8f90-a1b2c3d4e5f6","turnId":"turn_0123456789abcdef","seq":%d,"type":"agent_message_chunk","text":"hello there "}`, seq)
}

// BenchmarkAppendCheckpoint: one message joining the model context, one
// transaction, synchronous=NORMAL.
func BenchmarkAppendCheckpoint(b *testing.B) {
	s := open(b)
	create(b, s, "s1")
	if _, err := s.BeginTurn(ctx, "s1", "t1", user("go")); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.AppendCheckpoint(ctx, "s1", "t1", benchMessage); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenContextMessages: restoring a long session: Open, the model context of
// 10,000 checkpoints (no snapshot: the legacy full replay, the worst case), and the
// last 100 of its 10,000 transcript rows, then Close.
func BenchmarkOpenContextMessages(b *testing.B) {
	path := filepath.Join(b.TempDir(), "sessions.db")
	s := openAt(b, path)
	create(b, s, "s1")
	for i := range 5_000 { // 2 checkpoints and 2 rows per turn
		id := fmt.Sprint("t", i)
		if _, err := s.BeginTurn(ctx, "s1", id, user(fmt.Sprint("question ", i))); err != nil {
			b.Fatal(err)
		}
		if _, err := s.AppendCheckpoint(ctx, "s1", id, assistant(benchMessage.Text)); err != nil {
			b.Fatal(err)
		}
		if err := s.EndTurn(ctx, "s1", id); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	for b.Loop() {
		s, err := Open(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		msgs, err := s.Context(ctx, "s1")
		if err != nil || len(msgs) != 10_000 {
			b.Fatalf("Context: %d messages, %v", len(msgs), err)
		}
		rows, total, err := s.Messages(ctx, "s1", 100, -1)
		if err != nil || len(rows) != 100 || total != 10_000 {
			b.Fatalf("Messages: %d rows of %d, %v", len(rows), total, err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdatesReplay: streaming 10,000 stored updates to a late attacher.
func BenchmarkUpdatesReplay(b *testing.B) {
	s := open(b)
	create(b, s, "s1")
	const n = 10_000
	batch := make([]Update, 0, n)
	for seq := uint64(1); seq <= n; seq++ {
		batch = append(batch, Update{SessionID: "s1", Seq: seq, Payload: benchPayload(seq)})
	}
	if err := s.AppendUpdates(ctx, batch); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		count := 0
		if _, err := s.Updates(ctx, "s1", 0, func(Update) error { count++; return nil }); err != nil || count != n {
			b.Fatalf("replayed %d, %v", count, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "updates/s")
}

// BenchmarkAppendUpdates256: group commits of 256 updates, with the log trimmed to
// the default 10,000 per session once full.
func BenchmarkAppendUpdates256(b *testing.B) {
	s := open(b)
	create(b, s, "s1")
	const size = 256
	seq := uint64(0)
	batch := make([]Update, size)
	for b.Loop() {
		for i := range batch {
			seq++
			batch[i] = Update{SessionID: "s1", Seq: seq, Payload: benchPayload(seq)}
		}
		if err := s.AppendUpdates(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size*b.N)/b.Elapsed().Seconds(), "updates/s")
}

// BenchmarkStreamedTurnStorage: what a turn of the load generator's echo prompt
// (2,000 lines, about 40 KB) stores outside the replay log: the prompt
// (BeginTurnFor), the reply as a checkpoint, and the end of the turn, which copies
// both to the transcript.
func BenchmarkStreamedTurnStorage(b *testing.B) {
	s := open(b)
	create(b, s, "s1")
	var sb strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&sb, "line %d word word\n", i+1)
	}
	text := sb.String()
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprint("t", i)
		if _, err := s.BeginTurnFor(ctx, "s1", id, "", llm.Message{Role: llm.RoleUser, Text: text}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.AppendCheckpoint(ctx, "s1", id, llm.Message{Role: llm.RoleAssistant, Text: text}); err != nil {
			b.Fatal(err)
		}
		if err := s.EndTurnWith(ctx, "s1", id, TurnResult{StopReason: "end_turn", Text: text}); err != nil {
			b.Fatal(err)
		}
	}
}
