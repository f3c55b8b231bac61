// Command vibe composes, compiles and runs Vibe instructions and processes.
//
// Run "vibe help" for the commands.
package main

import (
	"os"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
