//go:build windows

package endpoint

// homeEnv names the variable that holds the user's home directory; Windows has
// no HOME, and USERPROFILE is what os.UserHomeDir reads there.
const homeEnv = "USERPROFILE"

// securePrivateDir does nothing on Windows: the data dir holds no socket (the
// endpoint is a named pipe with its own ACL), and a new directory under the
// user's profile inherits the profile's user-only ACL.
func securePrivateDir(dir string) error { return nil }
