package endpoint

import (
	"testing"

	"go.uber.org/goleak"
)

// leakOptions lets an OS's tests name goroutines that live as long as the process.
var leakOptions []goleak.Option

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, leakOptions...) }
