package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The data directory and everything the engine writes in it are private to
// the user running it: the database holds every prompt and answer, and the
// tls directory the key that opens the engine. See the package
// documentation.
const (
	privateDirMode  fs.FileMode = 0o700
	privateFileMode fs.FileMode = 0o600
)

// makePrivateDir creates dir (and missing parents) with mode 0700, or
// restricts an existing dir to its owner. It reports whether it had to
// restrict an existing directory.
func makePrivateDir(dir string) (tightened bool, err error) {
	if err := os.MkdirAll(dir, privateDirMode); err != nil {
		return false, fmt.Errorf("create %s: %w", dir, err)
	}
	return tighten(dir, privateDirMode)
}

// tighten sets path's permission bits to mode if it grants more than mode
// (to the group or others, typically), and reports whether it did. A
// missing path is not an error: the engine creates its files private.
func tighten(path string, mode fs.FileMode) (bool, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("restrict %s to its owner: %w", path, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 || fi.Mode().Perm()&^mode == 0 {
		return false, nil
	}
	if err := os.Chmod(path, mode); err != nil {
		return false, fmt.Errorf("restrict %s to its owner: %w", path, err)
	}
	return true, nil
}

// tightenDataFiles restricts the engine's files in dataDir that a previous
// version of Vibe (or a crash before a chmod) may have left readable by
// others, and returns the paths it changed. SQLite creates temporal.db-wal
// and -shm with the permissions of temporal.db, so restricting temporal.db
// before the server opens it covers the files SQLite makes later.
func tightenDataFiles(dataDir string) ([]string, error) {
	var paths []string
	for _, name := range []string{dbFile, dbFile + "-wal", dbFile + "-shm", dbFile + "-journal", dbFile + madeSuffix, logFile, lockFile, addrFile} {
		paths = append(paths, filepath.Join(dataDir, name))
	}
	tlsPath := filepath.Join(dataDir, tlsDir)
	if entries, err := os.ReadDir(tlsPath); err == nil {
		for _, e := range entries {
			if e.Type().IsRegular() {
				paths = append(paths, filepath.Join(tlsPath, e.Name()))
			}
		}
	}
	var changed []string
	for _, p := range paths {
		ok, err := tighten(p, privateFileMode)
		if err != nil {
			return changed, err
		}
		if ok {
			changed = append(changed, p)
		}
	}
	return changed, nil
}

// writeFileAtomic is writeFile without syncing the data before the
// rename.
func writeFileAtomic(path string, data []byte) error { return writeFile(path, data, false) }

// writeFile writes data to path through a temporary file beside it and a
// rename, so readers never see a partial file; with sync, the data is on
// the disk before the rename. The file is private to its owner
// (os.CreateTemp makes it 0600).
func writeFile(path string, data []byte, sync bool) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
