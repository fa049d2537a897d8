package fakeopenai

// SetModels makes GET /v1/models list models; a non-zero status makes it fail with
// that HTTP status instead.
func (f *Server) SetModels(status int, models ...string) *Server {
	f.models.Set(status, models...)
	return f
}

// ModelListings is how many GET /v1/models the server answered.
func (f *Server) ModelListings() int { return f.models.Gets() }
