package claudeagent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/ceiling"
)

// systemReads are what the CLI (and the programs it may run) read of the
// system under a file ceiling: code, libraries, certificates, name
// resolution, time zones, the managed settings in /etc/claude-code. Not
// /etc as a whole (it holds the server's secrets: shadow, keys), nor /dev
// (disks), nor home directories.
var systemReads = []string{
	"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/proc", "/sys",
	"/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates", "/etc/ca-certificates.conf",
	"/etc/pki", "/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/nsswitch.conf",
	"/etc/gai.conf", "/etc/services", "/etc/protocols", "/etc/passwd", "/etc/group",
	"/etc/localtime", "/etc/timezone", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/machine-id", "/etc/os-release", "/etc/debian_version", "/etc/lsb-release",
	"/etc/claude-code", "/etc/gitconfig", "/etc/alternatives", "/etc/bash.bashrc", "/etc/profile",
	"/etc/profile.d", "/etc/environment", "/etc/inputrc", "/etc/terminfo", "/etc/shells",
	"/etc/locale.alias", "/etc/locale.conf", "/etc/default/locale", "/etc/mime.types",
}

// deviceWrites are the devices a process may open for writing: none that
// reaches a disk.
var deviceWrites = []string{
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts",
}

// CLINeeds are the files the CLI at path needs with the environment env,
// under any ceiling: it executes its own binary (it runs itself as
// ripgrep) and the interpreter that loads it; it reads the system's code
// and settings (systemReads) and its own install; it writes its config
// directory (transcripts, .claude.json), the temporary directory and a few
// devices.
func CLINeeds(path string, env []string) (execs, read, write []string) {
	get := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
	bin := path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		bin = real
	}
	execs = append([]string{bin, path}, ceiling.Interpreters(bin, get("PATH"))...)
	read = append([]string{filepath.Dir(bin)}, systemReads...)
	for _, k := range []string{"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS"} {
		if v := get(k); filepath.IsAbs(v) {
			read = append(read, v)
		}
	}
	home := get("HOME")
	config := get("CLAUDE_CONFIG_DIR")
	if config == "" && home != "" {
		config = filepath.Join(home, ".claude")
	}
	if config != "" {
		// The CLI makes it at its first start; so does this, so that the
		// rule has a directory to name.
		_ = os.MkdirAll(config, 0o700)
		write = append(write, config)
	}
	if home != "" && get("CLAUDE_CONFIG_DIR") == "" {
		// Written in place only: its temporary file and lock beside it,
		// in the home directory, are refused, and the CLI goes on.
		write = append(write, filepath.Join(home, ".claude.json"))
	}
	tmp := get("TMPDIR")
	if tmp == "" {
		tmp = os.TempDir()
	}
	write = append(write, tmp)
	if v := get("CLAUDE_CODE_TMPDIR"); v != "" && v != tmp {
		write = append(write, v)
	}
	return execs, read, append(write, deviceWrites...)
}

// ceilingFor is the ceiling a CLI at path starts under: o's with what the
// CLI needs, in a jail when o asks for one (nil when nothing is
// restricted). The process's private directory is its temporary directory
// (TMPDIR and CLAUDE_CODE_TMPDIR in cmd's environment), not the shared
// one where other processes' files lie, and in the jail the only one it
// sees.
func ceilingFor(o *Options, path string, cmd *exec.Cmd) *ceiling.Ceiling {
	tmp := filepath.Join(o.private, privateTmp)
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp, "CLAUDE_CODE_TMPDIR="+tmp)
	if !o.Ceiling.Restricts() && !o.Jail {
		return nil
	}
	var c ceiling.Ceiling
	if o.Ceiling != nil {
		c = *o.Ceiling
	}
	if o.Jail {
		c.Jail = true
		c.Alone = append([]string{o.private}, o.Alone...)
	}
	full := c.With(CLINeeds(path, cmd.Env))
	full.Read = append(full.Read, o.private)
	if c.Jail && c.NoPrograms {
		full.Map = append(full.Map, ceiling.Libraries(path)...)
	}
	return &full
}
