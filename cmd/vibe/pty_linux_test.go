package main

import (
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// openPTY opens a pseudo-terminal: tty is the terminal a command reads
// (its standard input), typist the side a test writes what a person types
// to.
func openPTY() (tty, typist *os.File, err error) {
	typist, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	var n uint32
	ioctl := func(fd uintptr) {
		unlock := int32(0)
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
			err = e
			return
		}
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
			err = e
		}
	}
	// Control leaves the file in the runtime's non-blocking mode, which
	// Fd would end.
	if c, cerr := typist.SyscallConn(); cerr != nil {
		err = cerr
	} else if cerr := c.Control(ioctl); cerr != nil {
		err = cerr
	}
	if err != nil {
		typist.Close()
		return nil, nil, err
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		typist.Close()
		return nil, nil, err
	}
	return tty, typist, nil
}
