// Package config owns the daemon's configuration: the schema with its defaults, and
// loading config.toml from the config dir. A missing file means all defaults.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pelletier/go-toml/v2"
)

// FileName is the config file inside the config dir.
const FileName = "config.toml"

// Config is the whole configuration.
type Config struct {
	RPC RPC `toml:"rpc"`
}

// RPC holds the limits of the RPC endpoint (SPEC §2).
type RPC struct {
	// MaxLocalConnections bounds open local connections; one more is refused with -32004.
	MaxLocalConnections int `toml:"max_local_connections"`
}

// Default returns the embedded defaults: what the daemon runs on with no file.
func Default() Config {
	return Config{RPC: RPC{MaxLocalConnections: 512}}
}

// Load reads <configDir>/config.toml over the defaults and validates the result.
// Errors name the file and, for syntax and type errors, the line and key.
func Load(configDir string) (Config, error) {
	cfg := Default()
	path := filepath.Join(configDir, FileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, fmt.Errorf("reading config: %w", err)
	}
	dec := toml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&cfg); err != nil {
		return cfg, describe(path, err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Validate checks ranges and references across the whole config.
func (c Config) Validate() error {
	if n := c.RPC.MaxLocalConnections; n < 1 || n > 65536 {
		return fmt.Errorf("rpc.max_local_connections = %d: must be between 1 and 65536", n)
	}
	return nil
}

func describe(path string, err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		if key := de.Key(); len(key) > 0 {
			return fmt.Errorf("%s:%d:%d: key %s: %s", path, row, col, key, de.Error())
		}
		return fmt.Errorf("%s:%d:%d: %s", path, row, col, de.Error())
	}
	var sme *toml.StrictMissingError
	if errors.As(err, &sme) {
		return fmt.Errorf("%s: %s", path, sme.String())
	}
	return fmt.Errorf("%s: %w", path, err)
}
