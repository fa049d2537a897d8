package fakeanthropic

import (
	"encoding/json/v2"
	"net/http"
	"sync"
)

// modelList is what GET /v1/models answers (SPEC §22): the models set by
// SetModels, or, with a status, that HTTP error; it takes nothing from the script.
type modelList struct {
	mu     sync.Mutex
	models []string
	status int
	gets   int
}

func (f *Server) list() *modelList { return &f.models }

// SetModels makes GET /v1/models list models; a non-zero status makes it fail with
// that HTTP status instead.
func (f *Server) SetModels(status int, models ...string) *Server {
	l := f.list()
	l.mu.Lock()
	l.models, l.status = models, status
	l.mu.Unlock()
	return f
}

// ModelListings is how many GET /v1/models the server answered.
func (f *Server) ModelListings() int {
	l := f.list()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gets
}

// serveModels answers GET /v1/models and reports whether r was one.
func (f *Server) serveModels(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet || r.URL.Path != "/v1/models" {
		return false
	}
	l := f.list()
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
