//go:build unix

package clustertest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// errNoPostgres is returned by findPostgres when no PostgreSQL server is
// installed; Start skips the test then.
var errNoPostgres = errors.New("no PostgreSQL server found (initdb and postgres in /usr/lib/postgresql/*/bin or on $PATH): install Debian's postgresql package (apt-get install postgresql) to run the cluster tests")

// findPostgres returns the directory of initdb, postgres and pg_isready:
// Debian's (the newest version's), else the one on $PATH.
func findPostgres() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return pgVersion(b) - pgVersion(a) })
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		ok := true
		for _, b := range []string{"initdb", "postgres", "pg_isready", "psql"} {
			if _, err := os.Stat(filepath.Join(d, b)); err != nil {
				ok = false
			}
		}
		if ok {
			return d, nil
		}
	}
	return "", errNoPostgres
}

// pgVersion is the major version in a Debian path, 0 if none.
func pgVersion(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// postgres is a PostgreSQL server in a temporary directory, its superuser
// "temporal" trusted on loopback without a password.
type postgres struct {
	bin  string // the directory of initdb, postgres, pg_isready, psql
	dir  string // the data directory's parent: data/, postgres.log
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

// startPostgres initialises a database cluster and starts its server on
// port. PostgreSQL refuses to run as root: as root, it runs as the user
// postgres (which Debian's package creates), else as nobody.
func startPostgres(bin string, port int) (_ *postgres, err error) {
	cred, err := pgCredential()
	if err != nil {
		return nil, err
	}
	// Under the system's temporary directory, not the test's (whose parents
	// are private to root): the server's user must reach it.
	dir, err := os.MkdirTemp("", "vibe-clustertest-pg-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "temporal", "--auth=trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = procAttr(cred)
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	logf, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	// Durability is not what these tests check (they kill Temporal's
	// services and Vibe's, never PostgreSQL): fsync off saves the disk.
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=400", "-c", "fsync=off",
		"-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	cmd.SysProcAttr = procAttr(cred)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	pg := &postgres{bin: bin, dir: dir, port: port, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(pg.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ready := exec.Command(filepath.Join(bin, "pg_isready"), "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(port))
		if ready.Run() == nil {
			return pg, nil
		}
		select {
		case <-pg.done:
			log, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("postgres exited: %s\n%s", cmd.ProcessState, log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			pg.stop()
			return nil, errors.New("postgres did not accept connections within 30s")
		}
	}
}

// pgCredential is the user PostgreSQL runs as: nil (this process's) unless
// this process is root.
func pgCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root, and neither the user postgres nor nobody exists to run PostgreSQL as")
}

// query runs one SQL statement on db and returns its output, unaligned.
func (pg *postgres) query(db, sql string) (string, error) {
	out, err := exec.Command(filepath.Join(pg.bin, "psql"), "-h", "127.0.0.1", "-p", strconv.Itoa(pg.port), "-U", "temporal",
		"-d", db, "-tAc", sql).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("psql %q: %w\n%s", sql, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// log is the tail of the server's log.
func (pg *postgres) log() string {
	b, _ := os.ReadFile(filepath.Join(pg.dir, "postgres.log"))
	return tail(string(b), 40)
}

// stop shuts the server down (fast shutdown, then a kill) and removes its
// files.
func (pg *postgres) stop() {
	pg.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-pg.done:
	case <-time.After(10 * time.Second):
		pg.cmd.Process.Kill()
		<-pg.done
	}
	os.RemoveAll(pg.dir)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
