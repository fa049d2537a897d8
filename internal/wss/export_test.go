package wss

import "time"

// WithKeepalive shortens the keepalive of cfg, for tests.
func WithKeepalive(cfg Config, pingAfter, pongWait time.Duration) Config {
	cfg.pingAfter, cfg.pongWait = pingAfter, pongWait
	return cfg
}
