//go:build windows

package daemon

import "time"

// shutdownTimeout bounds how long shutdown waits for turns and connections to finish.
//
// On Windows the daemon stops on the console's control events, which Go delivers as
// signals: Ctrl-C and Ctrl-Break as os.Interrupt, closing the console (and logoff and
// system shutdown) as syscall.SIGTERM. For the last three, Windows ends the process
// about 5 s after the event, whatever it is doing, so the waits end well before: the
// store is committed and closed after them, and must be before the process is gone.
const shutdownTimeout = 3 * time.Second
