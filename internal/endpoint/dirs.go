package endpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Dirs are the resolved config and data directories.
type Dirs struct{ ConfigDir, DataDir string }

// ResolveDirs applies docs/protocol.md, "The daemon process": the config dir is
// configDirFlag when non-empty, else $ZEROCLAW_CONFIG_DIR, else $HOME/.zeroclaw; the
// data dir is $ZEROCLAW_DATA_DIR, else <config dir>/data. Both are made absolute,
// because the Windows pipe name is a hash of the data dir and must not depend on the
// working directory. getenv is os.Getenv in production; nil means os.Getenv.
// ResolveDirs creates nothing (see Dirs.Ensure).
func ResolveDirs(configDirFlag string, getenv func(string) string) (Dirs, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	config := configDirFlag
	if config == "" {
		config = getenv("ZEROCLAW_CONFIG_DIR")
	}
	if config == "" {
		home := getenv(homeEnv)
		if home == "" {
			return Dirs{}, fmt.Errorf("cannot find the config directory: --config-dir, ZEROCLAW_CONFIG_DIR and %s are all unset", homeEnv)
		}
		config = filepath.Join(home, ".zeroclaw")
	}
	data := getenv("ZEROCLAW_DATA_DIR")
	if data == "" {
		data = filepath.Join(config, "data")
	}

	var d Dirs
	var errC, errD error
	d.ConfigDir, errC = filepath.Abs(config)
	d.DataDir, errD = filepath.Abs(data)
	if err := errors.Join(errC, errD); err != nil {
		return Dirs{}, fmt.Errorf("resolve directories: %w", err)
	}
	return d, nil
}

// Ensure creates both directories (and their parents) with mode 0700 when
// missing. An existing config dir is left as it is: the user may have chosen its
// mode. The data dir holds the socket, its lock and the pairing hashes, so on Unix
// it must be ours and private: a group/other-accessible data dir we own is
// tightened to 0700, and one owned by another user is an error.
func (d Dirs) Ensure() error {
	for _, dir := range []string{d.ConfigDir, d.DataDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create directory: %w", err)
		}
	}
	return securePrivateDir(d.DataDir)
}
