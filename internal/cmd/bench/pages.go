package main

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// residentByPackage attributes the resident pages of the server binary's
// file mappings to the packages whose symbols lie in them (-pages): where
// the file-backed part of the server's RSS (RssFile) comes from. It reads
// /proc/<pid>/maps, /proc/<pid>/pagemap (bit 63: present) and the
// binary's symbol table; a page shared by several symbols counts for each
// symbol's bytes in it, so the totals are bytes of resident symbols.
func residentByPackage(pid int, binPath string, top int) (string, error) {
	f, err := elf.Open(binPath)
	if err != nil {
		return "", err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return "", err
	}
	maps, err := binaryMappings(pid, binPath)
	if err != nil {
		return "", err
	}
	pm, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return "", err
	}
	defer pm.Close()
	const page = 4096
	resident := map[uint64]bool{} // page address → present
	for _, m := range maps {
		buf := make([]byte, 8*((m.end-m.start)/page))
		if _, err := pm.ReadAt(buf, int64(m.start/page*8)); err != nil && err != io.EOF {
			return "", err
		}
		for i := 0; i < len(buf); i += 8 {
			if binary.LittleEndian.Uint64(buf[i:])&(1<<63) != 0 {
				resident[m.start+uint64(i/8)*page] = true
			}
		}
	}
	per := map[string]uint64{}
	var total uint64
	for _, s := range syms {
		if s.Size == 0 || s.Section == elf.SHN_UNDEF || int(s.Section) >= len(f.Sections) {
			continue
		}
		sec := f.Sections[s.Section].Name
		var in uint64
		for a := s.Value &^ (page - 1); a < s.Value+s.Size; a += page {
			if resident[a] {
				in += min(a+page, s.Value+s.Size) - max(a, s.Value)
			}
		}
		if in == 0 {
			continue
		}
		per[sec+" "+symbolPackage(s.Name)] += in
		total += in
	}
	type row struct {
		k string
		n uint64
	}
	var rows []row
	for k, n := range per {
		rows = append(rows, row{k, n})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].n > rows[j].n })
	var b strings.Builder
	fmt.Fprintf(&b, "resident pages of %s: %d (%.1f MiB); bytes of resident symbols %.1f MiB, by section and package:\n",
		binPath, len(resident), float64(len(resident)*page)/(1<<20), float64(total)/(1<<20))
	for i, r := range rows {
		if i == top {
			break
		}
		fmt.Fprintf(&b, "  %8.1f KiB  %s\n", float64(r.n)/1024, r.k)
	}
	return b.String(), nil
}

type mapping struct{ start, end uint64 }

// binaryMappings is the address ranges of pid's mappings of binPath.
func binaryMappings(pid int, binPath string) ([]mapping, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != binPath {
			continue
		}
		lo, hi, _ := strings.Cut(fields[0], "-")
		s, err1 := strconv.ParseUint(lo, 16, 64)
		e, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil {
			out = append(out, mapping{s, e})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no mapping of %s in /proc/%d/maps", binPath, pid)
	}
	return out, sc.Err()
}

// symbolPackage is the package a Go symbol belongs to ("type:" and
// "go:" symbols are kept as their kind).
func symbolPackage(name string) string {
	for _, p := range []string{"type:", "go:", "runtime."} {
		if strings.HasPrefix(name, p) {
			return strings.TrimSuffix(p, ".")
		}
	}
	slash := strings.LastIndex(name, "/")
	if dot := strings.Index(name[slash+1:], "."); dot >= 0 {
		return name[:slash+1+dot]
	}
	return name
}

// memoryMap is residentByPackage followed by biggestMappings: what -pages
// and -pages-of print.
func memoryMap(pid int, binPath string, top int) (string, error) {
	out, err := residentByPackage(pid, binPath, top)
	if err != nil {
		return "", err
	}
	maps, err := biggestMappings(pid, 12)
	return out + maps, err
}

// biggestMappings lists pid's mappings with the most resident memory, from
// /proc/<pid>/smaps: where RssAnon and RssFile lie (-pages).
func biggestMappings(pid, top int) (string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return "", err
	}
	type row struct {
		name      string
		rss, anon int64
	}
	var rows []*row
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			name := "[anonymous]"
			if len(f) >= 6 {
				name = f[5]
			}
			rows = append(rows, &row{name: f[0] + " " + f[1] + " " + name})
		case len(rows) > 0 && len(f) >= 2 && (f[0] == "Rss:" || f[0] == "Anonymous:"):
			n, _ := strconv.ParseInt(f[1], 10, 64)
			if f[0] == "Rss:" {
				rows[len(rows)-1].rss = n
			} else {
				rows[len(rows)-1].anon = n
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].rss > rows[j].rss })
	var b strings.Builder
	fmt.Fprintf(&b, "biggest mappings (Rss, Anonymous):\n")
	for i, r := range rows {
		if i == top || r.rss == 0 {
			break
		}
		fmt.Fprintf(&b, "  %6d kB %6d kB  %s\n", r.rss, r.anon, r.name)
	}
	return b.String(), nil
}
