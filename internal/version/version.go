// Package version holds the one version string of this program: the server version
// that initialize and status announce, and what our clients report as their own.
package version

// Version is the ZeroClaw daemon version this program speaks for.
const Version = "0.8.6"
