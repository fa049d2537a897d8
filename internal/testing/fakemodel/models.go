package fakemodel

import (
	"encoding/json/v2"
	"net/http"
	"sync"
)

// Models is what GET /v1/models answers (docs/protocol.md, "models/list"), the same
// for both fakes: the models set by Set, or, with a status, that HTTP error. It takes
// nothing from the script. The zero value lists no models.
type Models struct {
	mu     sync.Mutex
	models []string
	status int
	gets   int
}

// Set makes GET /v1/models list models; a non-zero status makes it fail with that
// HTTP status instead.
func (l *Models) Set(status int, models ...string) {
	l.mu.Lock()
	l.models, l.status = models, status
	l.mu.Unlock()
}

// Gets is how many GET /v1/models were answered.
func (l *Models) Gets() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gets
}

// Serve answers GET /v1/models and reports whether r was one.
func (l *Models) Serve(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet || r.URL.Path != "/v1/models" {
		return false
	}
	l.mu.Lock()
	l.gets++
	models, status := l.models, l.status
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if status != 0 {
		w.WriteHeader(status)
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "model listing failed", "type": "error"}})
		w.Write(b)
		return true
	}
	data := make([]any, 0, len(models))
	for _, m := range models {
		data = append(data, map[string]any{"id": m, "object": "model", "type": "model"})
	}
	b, _ := json.Marshal(map[string]any{"object": "list", "data": data, "has_more": false})
	w.Write(b)
	return true
}
