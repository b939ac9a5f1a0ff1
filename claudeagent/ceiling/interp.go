package ceiling

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Interpreters are what the kernel also executes to run bin: an ELF
// binary's dynamic loader, or a script's interpreter (and, for
// `#!/usr/bin/env prog`, prog as PATH finds it).
func Interpreters(bin, path string) []string {
	if f, err := elf.Open(bin); err == nil {
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				b := make([]byte, p.Filesz)
				if _, err := p.ReadAt(b, 0); err == nil {
					return []string{strings.TrimRight(string(b), "\x00")}
				}
			}
		}
		return nil
	}
	f, err := os.Open(bin)
	if err != nil {
		return nil
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if !strings.HasPrefix(line, "#!") || len(fields) == 0 {
		return nil
	}
	out := []string{fields[0]}
	if filepath.Base(fields[0]) == "env" && len(fields) > 1 {
		if p, err := lookPath(fields[1], path); err == nil {
			out = append(out, p)
			out = append(out, Interpreters(p, path)...)
		}
	} else {
		out = append(out, Interpreters(fields[0], path)...)
	}
	return out
}

// lookPath finds prog in path (a PATH value).
func lookPath(prog, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, prog)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				return real, nil
			}
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}
