// Package pgtest runs a throwaway PostgreSQL cluster for the tests: the
// installed PostgreSQL's initdb and postgres (BinDir finds them), a
// cluster in a temporary directory, run as an unprivileged user when the
// tests run as root (postgres refuses root: nobody), listening on a unix
// socket in that directory and on a free loopback port. One cluster per
// test binary, started by the first New and stopped by Main; each New
// makes a fresh database.
//
// Without postgres a test is skipped with the reason, except under
// CI=true, where it fails: scripts/test installs the package.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Main runs the tests and stops the cluster, if one was started: call it
// from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	stop()
	os.Exit(code)
}

// Stop stops the cluster, if one was started: for a TestMain that does
// more after m.Run than Main does.
func Stop() { stop() }

var (
	once    sync.Once
	running *cluster
	failed  error
	dbs     atomic.Int64
)

type cluster struct {
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

// BinDir is the directory of the PostgreSQL programs (initdb, postgres) the
// tests run, or "": $PGTEST_BIN when set (scripts/test sets it to what it
// found), else the directory of the initdb on PATH, else `pg_config
// --bindir`'s, else the newest of the places distributions put them:
// Debian's /usr/lib/postgresql/*/bin, Red Hat's /usr/pgsql-*/bin,
// Homebrew's postgresql@* and /usr/local/pgsql/bin (a source build).
func BinDir() string {
	if dir := os.Getenv("PGTEST_BIN"); dir != "" {
		return dir
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real // its postgres is beside the real initdb
		}
		return filepath.Dir(p)
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); hasInitdb(dir) {
			return dir
		}
	}
	var found []string
	for _, pattern := range []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin", "/opt/homebrew/opt/postgresql@*/bin",
		"/usr/local/opt/postgresql@*/bin", "/usr/local/pgsql/bin"} {
		dirs, _ := filepath.Glob(pattern)
		found = append(found, slices.DeleteFunc(dirs, func(d string) bool { return !hasInitdb(d) })...)
	}
	sort.SliceStable(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
	if len(found) == 0 {
		return ""
	}
	return found[0]
}

func hasInitdb(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "initdb"))
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// version is the major version a directory's path names (15 in
// /usr/lib/postgresql/15/bin, /usr/pgsql-15/bin or postgresql@15), or 0.
func version(dir string) int {
	digits := regexp.MustCompile(`[0-9]+`).FindString(dir)
	v, _ := strconv.Atoi(digits)
	return v
}

// New returns the URL of a fresh database in the test binary's cluster,
// starting the cluster at the first call; dropped with the cluster.
func New(t testing.TB) string {
	t.Helper()
	once.Do(func() { running, failed = start() })
	if failed != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is needed (CI=true): %v", failed)
		}
		t.Skipf("no PostgreSQL to test against: %v (scripts/test installs Debian's postgresql where it can)", failed)
	}
	name := fmt.Sprintf("t%d", dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, running.url("postgres"))
	if err != nil {
		t.Fatalf("connecting to the test cluster: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating a test database: %v", err)
	}
	return running.url(name)
}

func (c *cluster) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// start makes and starts the cluster.
func start() (*cluster, error) {
	bin := BinDir()
	if bin == "" {
		return nil, errors.New("no initdb: set PGTEST_BIN to the directory of the PostgreSQL programs, or put initdb on PATH")
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir, done: make(chan struct{})}
	if err := c.prepare(bin); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.run(bin); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

// prepare runs initdb into dir/data, as an unprivileged user.
func (c *cluster) prepare(bin string) error {
	if err := os.Chmod(c.dir, 0o755); err != nil {
		return err
	}
	if err := asUser(nil, c.dir); err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(bin, "initdb"), "-D", filepath.Join(c.dir, "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	cmd.Dir = c.dir
	if err := asUser(cmd, ""); err != nil {
		return err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v: %s", err, out)
	}
	return nil
}

// run starts postgres and waits until it accepts connections.
func (c *cluster) run(bin string) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	c.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	logf, err := os.Create(filepath.Join(c.dir, "postgres.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	c.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", filepath.Join(c.dir, "data"), "-k", c.dir,
		"-c", "listen_addresses=127.0.0.1", "-p", strconv.Itoa(c.port), "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "shared_buffers=32MB")
	c.cmd.Dir = c.dir
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	if err := asUser(c.cmd, ""); err != nil {
		return err
	}
	if err := c.cmd.Start(); err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, c.url("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		select {
		case <-c.done:
			log, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
			return fmt.Errorf("postgres exited: %s", log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.kill()
			return fmt.Errorf("postgres did not accept connections within a minute: %v", err)
		}
	}
}

// kill stops the cluster at once (as pg_ctl stop -m immediate does) and
// waits for it.
func (c *cluster) kill() {
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Signal(quitSignal)
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	}
}

func stop() {
	if running == nil {
		return
	}
	running.kill()
	os.RemoveAll(running.dir)
}
