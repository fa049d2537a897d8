//go:build unix

package memory_test

// Benchmarks of the figures of docs/protocol.md, "Memory" (docs/BENCHMARKS.md):
//
//	go test -run '^$' -bench . -benchtime 200x ./internal/memory/
//
// BenchmarkKeywordRecall: a turn's recall over 100,000 memories of one agent, by
// keyword only. BenchmarkVectorRecall: with 1,536-dimension embeddings, over 10,000
// (the query embedded by the fake endpoint on loopback). BenchmarkTurnWithRecall:
// whole echo turns over a real socket, recall on and off in alternation, over
// 10,000 memories. Each reports its p50 (and the turn benchmark the difference).

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/config"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/llm"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/memory"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/provider"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/rpc"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/session"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/store"
	"github.com/zeroclaw-labs/zeroclaw-go/internal/testing/fakeopenai"
)

// vocabulary is 20,000 made-up words; texts draw from it with a Zipf law, as
// natural language does, so some words are in thousands of memories.
var vocabulary = func() []string {
	r := rand.New(rand.NewPCG(1, 2))
	const letters = "abcdefghijklmnopqrstuvwxyz"
	words := make([]string, 20000)
	for i := range words {
		n := 3 + r.IntN(7)
		b := make([]byte, n)
		for j := range b {
			b[j] = letters[r.IntN(len(letters))]
		}
		words[i] = string(b)
	}
	return words
}()

func sentence(z *rand.Zipf, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = vocabulary[z.Uint64()]
	}
	return strings.Join(w, " ")
}

// filled returns a store path with n memories of agent default, owner operator,
// each of about 20 words and, with dims > 0, a random embedding of dims. The rows
// go in by one transaction on a plain connection (the triggers fill the index).
func filled(b *testing.B, n, dims int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "sessions.db")
	st, err := store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := memory.New(memory.Options{Store: st, Config: config.Default, Logger: slog.New(slog.DiscardHandler)}).Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	ins, err := tx.Prepare(`INSERT INTO memories (id, agent, owner, content, created, updated, embedding, embedding_model)
		VALUES (?, 'default', 'operator', ?, ?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	z := rand.NewZipf(r, 1.1, 2, uint64(len(vocabulary)-1))
	now := time.Now().UnixMilli()
	for i := range n {
		var blob any
		var model any
		if dims > 0 {
			v := make([]byte, 4*dims)
			for j := range dims {
				binary.LittleEndian.PutUint32(v[4*j:], math.Float32bits(float32(r.NormFloat64())))
			}
			blob, model = v, config.DefaultEmbeddingsModel
		}
		if _, err := ins.Exec(fmt.Sprintf("mem_bench%08d", i), sentence(z, 20), now, now, blob, model); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return path
}

// processCPU is the user and system CPU time this process has used: on a machine
// shared with other work, the wall-clock figures include waiting for a core.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func p50(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

func queries(n int) []string {
	r := rand.New(rand.NewPCG(5, 6))
	z := rand.NewZipf(r, 1.1, 2, uint64(len(vocabulary)-1))
	q := make([]string, n)
	for i := range q {
		q[i] = "what do you know about " + sentence(z, 6) + "?"
	}
	return q
}

func openService(b *testing.B, path string, cfg config.Config) *memory.Service {
	st, err := store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	s := memory.New(memory.Options{Store: st, Config: func() config.Config { return cfg }, Logger: slog.New(slog.DiscardHandler)})
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s
}

func benchRecall(b *testing.B, s *memory.Service) {
	qs := queries(1000)
	ctx := context.Background()
	s.Recall(ctx, "default", "operator", qs[0]) // loads what a first recall loads
	var took []time.Duration
	recalled := 0
	i := 0
	cpu := processCPU(b)
	for b.Loop() {
		start := time.Now()
		r, err := s.Recall(ctx, "default", "operator", qs[i%len(qs)])
		took = append(took, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		recalled += len(r.Entries)
		i++
	}
	if recalled == 0 {
		b.Fatal("nothing was ever recalled")
	}
	b.ReportMetric(float64(processCPU(b)-cpu)/float64(time.Millisecond)/float64(i), "cpu-ms/op")
	b.ReportMetric(p50(took), "p50-ms")
	b.ReportMetric(float64(recalled)/float64(i), "entries/op")
}

func BenchmarkKeywordRecall(b *testing.B) {
	benchRecall(b, openService(b, filled(b, 100_000, 0), config.Default()))
}

func BenchmarkVectorRecall(b *testing.B) {
	f := fakeopenai.New(b).SetEmbeddingDims(1536)
	cfg := config.Default()
	cfg.Providers["emb"] = config.Provider{Kind: "openai", BaseURL: f.URL()}
	cfg.Memory.EmbeddingsProvider = "emb"
	benchRecall(b, openService(b, filled(b, 10_000, 1536), cfg))
}

// fixedModel answers "ok" to everything and counts the requests whose last user
// message carries a memory block.
type fixedModel struct{ recalled atomic.Int64 }

func (f *fixedModel) Stream(ctx context.Context, req provider.Request, emit func(provider.Delta)) (provider.Result, error) {
	if m := req.Messages[len(req.Messages)-1]; strings.HasPrefix(m.Text, "[Memory context]") {
		f.recalled.Add(1)
	}
	emit(provider.Delta{Text: "ok"})
	return provider.Result{Text: "ok", Usage: llm.Usage{InputTokens: 1, OutputTokens: 1}}, nil
}

// BenchmarkTurnWithRecall runs echo turns on one session over a real socket,
// alternating recall on and off ([memory] enabled), over 10,000 memories.
func BenchmarkTurnWithRecall(b *testing.B) {
	path := filled(b, 10_000, 0)
	dir := filepath.Dir(path)
	st, err := store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var on atomic.Bool
	cfg := func() config.Config {
		c := config.Default()
		enabled := on.Load()
		c.Memory.Enabled = &enabled
		return c
	}
	log := slog.New(slog.DiscardHandler)
	mem := memory.New(memory.Options{Store: st, Config: cfg, Logger: log})
	if err := mem.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	catalog, err := session.BuildCatalog(config.Default(), dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	// A model whose answer does not depend on its prompt (the echo model would
	// stream the recalled block back, a cost of the echo, not of the recall).
	model := &fixedModel{}
	agent, _ := catalog.Agent("default")
	agent.Provider = model
	sessions := session.NewManager(catalog, session.Options{Logger: log, Store: st, Memory: mem})
	sockDir, err := os.MkdirTemp("/tmp", "zcmb")
	if err != nil {
		b.Fatal(err)
	}
	sock := filepath.Join(sockDir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	srv := rpc.NewServer(rpc.Config{DataDir: dir, Endpoint: sock, DaemonUID: os.Getuid(), Logger: log, Sessions: sessions, Memory: mem})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { srv.ServeStream(nc, rpc.Peer{Label: "bench", UID: os.Getuid(), PID: os.Getpid()}) })
		}
	})
	b.Cleanup(func() {
		ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sessions.Shutdown(ctx)
		srv.Shutdown(ctx)
		wg.Wait()
		st.Close()
		os.RemoveAll(sockDir)
	})

	nc, err := net.Dial("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	id := 0
	call := func(method, params string) string {
		id++
		fmt.Fprintf(nc, `{"jsonrpc":"2.0","method":%q,"params":%s,"id":%d}`+"\n", method, params, id)
		want := fmt.Sprintf(`"id":%d}`, id)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if strings.Contains(line, `"result"`) && strings.HasSuffix(strings.TrimSpace(line), want) {
				return line
			}
			if strings.Contains(line, `"error"`) && strings.HasSuffix(strings.TrimSpace(line), want) {
				b.Fatal(line)
			}
		}
	}
	call("initialize", `{"protocolVersion":1}`)
	res := call("session/new", `{"agentAlias":"default"}`)
	sid := res[strings.Index(res, `"sessionId":"`)+13:]
	sid = sid[:strings.IndexByte(sid, '"')]
	qs := queries(1000)
	var with, without []time.Duration
	i := 0
	for b.Loop() {
		on.Store(i%2 == 0)
		start := time.Now()
		call("session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":%q}`, sid, qs[(i/2)%len(qs)]))
		if i%2 == 0 {
			with = append(with, time.Since(start))
		} else {
			without = append(without, time.Since(start))
		}
		i++
	}
	if len(without) == 0 {
		return
	}
	if n := model.recalled.Load(); n == 0 || int(n) > len(with) {
		b.Fatalf("%d of %d requests with recall on carried the memory block", n, len(with))
	}
	b.ReportMetric(p50(with), "p50-with-ms")
	b.ReportMetric(p50(without), "p50-without-ms")
	b.ReportMetric(p50(with)-p50(without), "p50-extra-ms")
}
