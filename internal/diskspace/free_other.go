//go:build !(linux || darwin || freebsd)

package diskspace

import "errors"

// Free cannot read the free space on this system: it returns
// errors.ErrUnsupported.
func Free(string) (uint64, error) { return 0, errors.ErrUnsupported }
