package ceiling

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Interpreters are what the kernel also executes to run bin: an ELF
// binary's dynamic loader, or a script's interpreter (and, for
// `#!/usr/bin/env prog`, prog as PATH finds it).
func Interpreters(bin, path string) []string {
	f, err := os.Open(bin)
	if err != nil {
		return nil
	}
	defer f.Close()
	if loader, isELF := elfInterpreter(f); isELF {
		if loader == "" {
			return nil // a static binary
		}
		return []string{loader}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil
	}
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

// elfInterpreter reads the dynamic loader (PT_INTERP) of the ELF file f,
// "" for a static one; isELF is false for anything else. (debug/elf would
// do, but it brings its decompressors into the server's binary, whose
// size is memory.)
func elfInterpreter(f io.ReaderAt) (loader string, isELF bool) {
	ident := make([]byte, 64)
	if _, err := f.ReadAt(ident, 0); err != nil || string(ident[:4]) != "\x7fELF" {
		return "", false
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if ident[5] == 2 {
		bo = binary.BigEndian
	}
	// Where the program headers are, how big each is and how many.
	var phoff, entsize, count uint64
	switch ident[4] {
	case 1: // 32-bit
		phoff, entsize, count = uint64(bo.Uint32(ident[28:])), uint64(bo.Uint16(ident[42:])), uint64(bo.Uint16(ident[44:]))
	case 2: // 64-bit
		phoff, entsize, count = bo.Uint64(ident[32:]), uint64(bo.Uint16(ident[54:])), uint64(bo.Uint16(ident[56:]))
	default:
		return "", true
	}
	if entsize < 32 || count > 1<<12 {
		return "", true
	}
	ph := make([]byte, entsize)
	for i := range count {
		if _, err := f.ReadAt(ph, int64(phoff+i*entsize)); err != nil {
			return "", true
		}
		const ptInterp = 3
		if bo.Uint32(ph) != ptInterp {
			continue
		}
		var off, size uint64
		if ident[4] == 1 {
			off, size = uint64(bo.Uint32(ph[4:])), uint64(bo.Uint32(ph[16:]))
		} else {
			off, size = bo.Uint64(ph[8:]), bo.Uint64(ph[32:])
		}
		if size == 0 || size > 4096 {
			return "", true
		}
		b := make([]byte, size)
		if _, err := f.ReadAt(b, int64(off)); err != nil {
			return "", true
		}
		return strings.TrimRight(string(b), "\x00"), true
	}
	return "", true
}

// Libraries are the shared libraries the ELF binary bin loads, as its own
// dynamic loader resolves them (`ld.so --list`, what ldd prints), with the
// unwinder glibc loads later (libgcc_s, beside libc): what must stay
// executable for bin to run when nothing else may be (the jail under
// NoPrograms). A static binary, or anything else, has none. Found once per
// binary and kept.
func Libraries(bin string) []string {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil
	}
	key := libsKey{real, st.Size(), st.ModTime().UnixNano()}
	if v, ok := libsCache.Load(key); ok {
		return v.([]string)
	}
	libs := listLibraries(real)
	libsCache.Store(key, libs)
	return libs
}

// libsKey is a binary as it is now.
type libsKey struct {
	path  string
	size  int64
	mtime int64
}

var libsCache sync.Map // libsKey → []string

// listLibraries asks bin's loader which libraries it loads.
func listLibraries(bin string) []string {
	loaders := Interpreters(bin, "")
	if len(loaders) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, loaders[0], "--list", bin)
	cmd.Env = []string{} // no LD_LIBRARY_PATH nor LD_PRELOAD of the server's
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	var libs []string
	for line := range strings.Lines(string(out)) {
		// "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)" or
		// "\t/lib64/ld-linux-x86-64.so.2 (0x…)".
		line = strings.TrimSpace(line)
		if _, after, ok := strings.Cut(line, "=> "); ok {
			line = after
		}
		if p, _, _ := strings.Cut(line, " ("); filepath.IsAbs(p) {
			libs = append(libs, p)
		}
	}
	for _, l := range libs {
		if filepath.Base(l) == "libc.so.6" {
			if gcc := filepath.Join(filepath.Dir(l), "libgcc_s.so.1"); fileExists(gcc) {
				libs = append(libs, gcc)
			}
		}
	}
	return libs
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
