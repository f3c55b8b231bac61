//go:build linux || darwin || freebsd

package diskspace

import (
	"os"
	"syscall"
)

// Free returns the bytes of dir's filesystem that this process may still
// write: what a superuser may write, reserved blocks included, when it
// runs as one.
func Free(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	blocks := uint64(st.Bavail)
	if os.Geteuid() == 0 {
		blocks = uint64(st.Bfree) // the superuser writes into the reserved blocks too
	}
	return blocks * uint64(st.Bsize), nil
}
