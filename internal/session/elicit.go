package session

// ElicitError is what Subscriber.Elicit returns when the client answered
// elicitation/create with an error object: an answer, and a failure (the seed: "An
// error object resolves it as a failure"). Any other error means the client did not
// answer at all (gone, timed out), and another client may still answer.
type ElicitError struct {
	Message string // the client's error message
}

func (e *ElicitError) Error() string { return "the client answered with an error: " + e.Message }
