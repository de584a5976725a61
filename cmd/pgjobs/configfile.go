package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pgjobs/pgjobs/config"
	"github.com/urfave/cli/v2"
)

// configPath returns the configuration file to use: --config (before or after the command), else
// $PGJOBS_CONF, else the default.
func configPath(c *cli.Context) string {
	flag, _ := configFlagValue(c)
	return config.ResolvePath(flag, os.Getenv)
}

// configFlagValue returns the value of --config wherever it was given: urfave/cli parses the
// option given before the command into the application's context, after it into the command's.
func configFlagValue(c *cli.Context) (string, error) {
	value, given := "", false
	for _, x := range c.Lineage() {
		if x.IsSet("config") {
			if given && x.String("config") != value {
				return "", usagef("--config is given twice, as %q and %q", value, x.String("config"))
			}
			value, given = x.String("config"), true
		}
	}
	return value, nil
}

// checkConfigFlags refuses a --config given twice with two values, before the command runs, and
// notes the command's usage line.
func checkConfigFlags(c *cli.Context) error {
	noteUsage(c)
	_, err := configFlagValue(c)
	return err
}

// loadConfig reads the configuration file of a command that takes no arguments.
func loadConfig(c *cli.Context) (*config.File, error) {
	if c.NArg() > 0 {
		return nil, usagef("%s takes no arguments (got %q); see pgjobs %s --help", c.Command.Name, c.Args().First(), c.Command.Name)
	}
	f, err := config.Load(configPath(c))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no configuration file %s: enable a database with pgjobs enabledb, or name the file with --config FILE or %s", configPath(c), config.PathVariable)
	}
	return f, err
}

// updateConfig edits the configuration file with config.Update; when the file cannot be created
// or written where it is, the error says why and the ways forward.
func updateConfig(c *cli.Context, edit func(*config.File) error) (*config.File, error) {
	path := configPath(c)
	f, err := config.Update(path, edit)
	if err == nil {
		return f, nil
	}
	dir := filepath.Dir(path)
	switch info, statErr := os.Stat(dir); {
	case errors.Is(statErr, fs.ErrNotExist):
		if path == config.DefaultPath {
			return nil, fmt.Errorf("%w; the folder %s of the default configuration file does not exist: install the pgjobs package, which creates it, or name a file in a folder you may write with --config FILE or %s=FILE", err, dir, config.PathVariable)
		}
		return nil, fmt.Errorf("%w; the folder %s does not exist: create it, or name a file in a folder you may write with --config FILE or %s=FILE", err, dir, config.PathVariable)
	case statErr == nil && !info.IsDir():
		return nil, fmt.Errorf("%w; %s is not a folder: name the configuration file with --config FILE or %s=FILE", err, dir, config.PathVariable)
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("%w; you may not write %s: run pgjobs as the user who owns it (the package installs it for root), or name a file you may write with --config FILE or %s=FILE", err, path, config.PathVariable)
	}
	return f, err
}
