//go:build !windows

package daemon

import "time"

// shutdownTimeout bounds how long shutdown waits for turns and connections to finish.
const shutdownTimeout = 10 * time.Second
