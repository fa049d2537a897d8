package provider

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test closes its servers and its client's idle connections, so nothing is
// ignored here.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
