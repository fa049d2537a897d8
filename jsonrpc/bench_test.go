package jsonrpc_test

// Benchmarks of the codec: the envelope classifier, the NDJSON reader, the response
// encoders and params decoding. They live in the external test package so their
// helpers never collide with the package's own tests.
//
//	go test -run '^$' -bench . -benchmem ./jsonrpc/

import (
	"context"
	"encoding/json/jsontext"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/zeroclaw-labs/zeroclaw-go/jsonrpc"
	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

const (
	initializeFrame = `{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"zeroclaw-bench","version":"1.0"},"clientCapabilities":{"elicitation":{"form":{}}}},"id":1}`
	statusFrame     = `{"jsonrpc":"2.0","method":"status","id":2}`
	statusResponse  = `{"jsonrpc":"2.0","result":{"serverVersion":"0.8.6","protocolVersion":1,"pid":4242,"uptimeMs":123456,"dataDir":"/tmp/zcb1234567/data","endpoint":"/tmp/zcb1234567/data/daemon.sock","connections":1,"activeSessions":0,"sessions":[]},"id":2}`
)

// promptFrame is a request whose params are about 4 KiB: a prompt of ordinary text
// with a few escapes, the shape of a typical session/prompt.
var promptFrame = func() string {
	var text strings.Builder
	for text.Len() < 4000 {
		text.WriteString(`Refactor the \"parser\" so that it reports line numbers.\n`)
	}
	return `{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"5f0c9a8e-2b1d-4c3e-9f7a-0d1e2f3a4b5c","prompt":"` +
		text.String() + `"},"id":"req-17"}`
}()

func benchmarkClassify(b *testing.B, frame string, check func(jsonrpc.Envelope) bool) {
	f := []byte(frame)
	if !check(jsonrpc.Classify(f)) {
		b.Fatalf("Classify(%.60s…) gave an unexpected envelope", frame)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(f)))
	for b.Loop() {
		jsonrpc.Classify(f)
	}
}

func isRequest(method string) func(jsonrpc.Envelope) bool {
	return func(e jsonrpc.Envelope) bool { return e.Request != nil && e.Request.Method == method }
}

func BenchmarkClassify(b *testing.B) {
	b.Run("initialize", func(b *testing.B) { benchmarkClassify(b, initializeFrame, isRequest("initialize")) })
	b.Run("status", func(b *testing.B) { benchmarkClassify(b, statusFrame, isRequest("status")) })
	b.Run("request_4KiB_params", func(b *testing.B) { benchmarkClassify(b, promptFrame, isRequest("session/prompt")) })
	b.Run("upload_chunk_1MiB", func(b *testing.B) {
		frame := `{"jsonrpc":"2.0","method":"file/upload/chunk","params":{"upload_id":"up_51d0","offset":0,"data_b64":"` +
			strings.Repeat("QUJD", 1<<20/3) + `"},"id":9}`
		benchmarkClassify(b, frame, isRequest("file/upload/chunk"))
	})
	b.Run("response", func(b *testing.B) {
		benchmarkClassify(b, statusResponse, func(e jsonrpc.Envelope) bool { return e.Response != nil && e.Response.Error == nil })
	})
	b.Run("error_response", func(b *testing.B) {
		benchmarkClassify(b, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"session not found","data":{"sessionId":"x"}},"id":"zc-out-3"}`,
			func(e jsonrpc.Envelope) bool { return e.Response != nil && e.Response.Error != nil })
	})
	b.Run("parse_error", func(b *testing.B) {
		benchmarkClassify(b, `{"jsonrpc":"2.0","method":"status","id":2`, func(e jsonrpc.Envelope) bool { return e.Reject != nil })
	})
}

// cyclicStream is an endless stream that repeats data; its writes are discarded.
type cyclicStream struct {
	data []byte
	off  int
}

func (s *cyclicStream) Read(p []byte) (int, error) {
	n := copy(p, s.data[s.off:])
	s.off = (s.off + n) % len(s.data)
	return n, nil
}

func (s *cyclicStream) Write(p []byte) (int, error) { return len(p), nil }
func (s *cyclicStream) Close() error                { return nil }

func benchmarkReadFrame(b *testing.B, lines []string) {
	stream := []byte(strings.Join(lines, "\n") + "\n")
	f := jsonrpc.NewNDJSON(&cyclicStream{data: stream})
	b.ReportAllocs()
	b.SetBytes(int64(len(stream) / len(lines)))
	for b.Loop() {
		if _, err := f.ReadFrame(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNDJSONReadFrame(b *testing.B) {
	// A stream of many lines: the reader's buffer holds several frames per read.
	status := make([]string, 1000)
	for i := range status {
		status[i] = `{"jsonrpc":"2.0","method":"status","id":` + strconv.Itoa(i) + `}`
	}
	b.Run("status_lines", func(b *testing.B) { benchmarkReadFrame(b, status) })
	mixed := make([]string, 0, 300)
	for range 100 {
		mixed = append(mixed, statusFrame, statusResponse, promptFrame)
	}
	b.Run("mixed_lines_with_4KiB", func(b *testing.B) { benchmarkReadFrame(b, mixed) })
}

func BenchmarkAppendResult(b *testing.B) {
	result := jsontext.Value(`{"serverVersion":"0.8.6","protocolVersion":1,"pid":4242,"uptimeMs":123456,"dataDir":"/tmp/zcb1234567/data","endpoint":"/tmp/zcb1234567/data/daemon.sock","connections":1,"activeSessions":0,"sessions":[]}`)
	id := jsonrpc.IntID(123456)
	dst := make([]byte, 0, 512)
	b.ReportAllocs()
	b.SetBytes(int64(len(jsonrpc.AppendResult(nil, id, result))))
	for b.Loop() {
		dst = jsonrpc.AppendResult(dst[:0], id, result)
	}
}

func BenchmarkAppendError(b *testing.B) {
	e := jsonrpc.NewError(protocol.CodeConnectionLimit, "connection limit reached",
		map[string]any{"reason": "connection_limit", "limit": 512})
	id := jsonrpc.StringID("req-17")
	dst := make([]byte, 0, 512)
	b.ReportAllocs()
	b.SetBytes(int64(len(jsonrpc.AppendError(nil, id, e))))
	for b.Loop() {
		dst = jsonrpc.AppendError(dst[:0], id, e)
	}
}

type benchPromptParams struct {
	SessionID   string           `json:"sessionId"`
	Prompt      string           `json:"prompt"`
	AgentAlias  string           `json:"agentAlias"`
	Attachments []jsontext.Value `json:"attachments"`
	KeepSibling bool             `json:"keep_siblings"`
}

func BenchmarkDecodeParams(b *testing.B) {
	cases := []struct {
		name   string
		params string
	}{
		{"canonical", `{"sessionId":"5f0c9a8e-2b1d-4c3e-9f7a-0d1e2f3a4b5c","agentAlias":"default","prompt":"list the files","keep_siblings":true}`},
		{"alternative_spellings", `{"session_id":"5f0c9a8e-2b1d-4c3e-9f7a-0d1e2f3a4b5c","agent_alias":"default","prompt":"list the files","keepSiblings":true}`},
		{"absent", ``},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			params := jsontext.Value(tc.params)
			var p benchPromptParams
			if err := jsonrpc.DecodeParams(params, &p); err != nil {
				b.Fatal(err)
			}
			if tc.params != "" && (p.SessionID == "" || p.AgentAlias == "" || !p.KeepSibling) {
				b.Fatalf("decoded %+v", p)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(params)))
			for b.Loop() {
				p = benchPromptParams{}
				jsonrpc.DecodeParams(params, &p)
			}
		})
	}
	b.Run("upload_chunk_1MiB", func(b *testing.B) {
		// file/upload/chunk's params: 1 MiB of base64 data, the upload's hot path.
		params := jsontext.Value(`{"upload_id":"up_51d0","offset":1048576,"data_b64":"` + strings.Repeat("QUJD", 1<<20/3) + `"}`)
		var p struct {
			UploadID string `json:"upload_id"`
			Offset   int64  `json:"offset"`
			DataB64  string `json:"data_b64"`
		}
		if err := jsonrpc.DecodeParams(params, &p); err != nil || len(p.DataB64) < 1<<20 {
			b.Fatalf("decoded %d bytes, err %v", len(p.DataB64), err)
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(params)))
		for b.Loop() {
			jsonrpc.DecodeParams(params, &p)
		}
	})
	b.Run("prompt_4KiB", func(b *testing.B) {
		env := jsonrpc.Classify([]byte(promptFrame))
		params := env.Request.Params
		var p benchPromptParams
		if err := jsonrpc.DecodeParams(params, &p); err != nil || len(p.Prompt) < 3500 {
			b.Fatalf("decoded %d bytes of prompt, err %v", len(p.Prompt), err)
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(params)))
		for b.Loop() {
			p = benchPromptParams{}
			jsonrpc.DecodeParams(params, &p)
		}
	})
}

// BenchmarkConnRoundTrip measures one request through two Conns over a Unix socket
// pair: the client's Call, the server's classify, dispatch, handler, encode and write,
// and the client's matching of the answer. The handler returns a fixed value, so the
// figure is the cost of the jsonrpc layer alone, without the rpc method table.
func BenchmarkConnRoundTrip(b *testing.B) {
	result := jsontext.Value(`{"ok":true}`)
	handler := jsonrpc.HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) { return result, nil })
	client, server := socketPair(b)
	srv := jsonrpc.NewConn(jsonrpc.NewNDJSON(server), handler, jsonrpc.Options{})
	cli := jsonrpc.NewConn(jsonrpc.NewNDJSON(client), handler, jsonrpc.Options{})
	done := make(chan struct{}, 2)
	go func() { srv.Run(); done <- struct{}{} }()
	go func() { cli.Run(); done <- struct{}{} }()
	defer func() {
		cli.Close()
		srv.Close()
		<-done
		<-done
	}()
	ctx := context.Background()
	b.Run("sequential", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := cli.Call(ctx, "ping", nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := cli.Call(ctx, "ping", nil, nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// socketPair returns the two ends of a connected Unix stream socket.
func socketPair(b *testing.B) (net.Conn, net.Conn) {
	path := b.TempDir() + "/s"
	ln, err := net.Listen("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err := net.Dial("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	server := <-accepted
	if server == nil {
		b.Fatal("accept failed")
	}
	return client, server
}

var _ io.ReadWriteCloser = (*cyclicStream)(nil)
