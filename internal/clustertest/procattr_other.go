//go:build unix && !linux

package clustertest

import "syscall"

// procAttr runs a child as cred (nil: as this process).
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
