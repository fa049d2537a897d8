package fakeopenai

import (
	"encoding/json/v2"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
	"unicode"
)

// embeddings is the fake's POST /v1/embeddings: deterministic vectors, so that
// texts sharing words are similar (Embed), and faults on demand.
type embeddings struct {
	dims     int  // 0: DefaultDims
	status   int  // non-zero: fail with this HTTP status
	wrong    bool // answer vectors one dimension short
	requests int
	inputs   int // texts embedded
}

// DefaultDims is the size of the fake's vectors unless SetEmbeddingDims changes it.
const DefaultDims = 64

// SetEmbeddingDims sets the size of the vectors /v1/embeddings answers.
func (f *Server) SetEmbeddingDims(n int) *Server {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.emb.dims = n
	return f
}

// FailEmbeddings makes /v1/embeddings answer HTTP status (0: work again).
func (f *Server) FailEmbeddings(status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.emb.status = status
}

// WrongEmbeddingSize makes /v1/embeddings answer vectors of the wrong size (one
// dimension short), or the right one again.
func (f *Server) WrongEmbeddingSize(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.emb.wrong = on
}

// EmbeddingRequests is how many /v1/embeddings requests the server answered, and
// how many texts they carried.
func (f *Server) EmbeddingRequests() (requests, texts int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.emb.requests, f.emb.inputs
}

// Embed is the fake's vector of text: each word (lowercased run of letters and
// digits) adds 1 at a position its hash picks; the whole is scaled to unit length.
func Embed(text string, dims int) []float32 {
	v := make([]float32, dims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	}) {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%uint32(dims)]++
	}
	var n float64
	for _, f := range v {
		n += float64(f) * float64(f)
	}
	if n > 0 {
		for i := range v {
			v[i] = float32(float64(v[i]) / math.Sqrt(n))
		}
	}
	return v
}

func (f *Server) serveEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string `json:"model"`
		Input any    `json:"input"`
	}
	if err := json.UnmarshalRead(r.Body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	var inputs []string
	switch in := req.Input.(type) {
	case string:
		inputs = []string{in}
	case []any:
		for _, x := range in {
			s, _ := x.(string)
			inputs = append(inputs, s)
		}
	}
	f.mu.Lock()
	e := f.emb
	f.emb.requests++
	f.emb.inputs += len(inputs)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if e.status != 0 {
		w.WriteHeader(e.status)
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "embeddings failed (scripted)", "type": "error"}})
		w.Write(b)
		return
	}
	dims := e.dims
	if dims == 0 {
		dims = DefaultDims
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]item, len(inputs))
	for i, text := range inputs {
		v := Embed(text, dims)
		if e.wrong {
			v = v[:dims-1]
		}
		data[i] = item{Object: "embedding", Index: i, Embedding: v}
	}
	b, _ := json.Marshal(map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": len(inputs), "total_tokens": len(inputs)}})
	w.Write(b)
}
