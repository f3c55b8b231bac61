package clustertest

import "syscall"

// procAttr runs a child as cred (nil: as this process), and kills it when
// the test process dies, so that a killed `go test` leaves no cluster
// behind.
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
}
