package agentfile

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/beneath"
)

// maxDirFiles caps the agent files read from one directory tree.
const maxDirFiles = 1000

// racyWindow is how long after a file's modification time its size and
// time may not tell a change: filesystems keep times in steps of up to 2 s
// (FAT), and Linux in steps of a clock tick. A file modified within it of
// its last read is read again.
const racyWindow = 2 * time.Second

// A Set is what one scan exposes: the agents and the warnings.
type Set struct {
	// Agents are sorted by tool name; each has a unique one.
	Agents []*Agent
	// Warnings are in the order found: by source, in increasing precedence,
	// then by file; then shadowing, the cap and tool names.
	Warnings []Warning
}

// Lookup returns the agent with this tool name, or nil.
func (s *Set) Lookup(toolName string) *Agent {
	i, ok := slices.BinarySearchFunc(s.Agents, toolName, func(a *Agent, name string) int {
		return strings.Compare(a.ToolName, name)
	})
	if !ok {
		return nil
	}
	return s.Agents[i]
}

// Equal reports whether two sets hold the same agents and warnings.
func (s *Set) Equal(o *Set) bool {
	return reflect.DeepEqual(s.Agents, o.Agents) && reflect.DeepEqual(s.Warnings, o.Warnings)
}

// Load reads the agents of the configured sources and returns the set to
// expose. Nothing is fatal: what cannot be read is a warning.
//
// Precedence. An agent name is defined once; when several sources define
// it, the one with the highest precedence wins and the others are reported
// as shadowed. From lowest to highest: the user's files, the project's
// files, the operator's directories (a later one over an earlier one), the
// operator file. Project over user is Claude Code's own order. The
// operator's sources come over both because the operator set them up on
// purpose, while a project's files come with whatever repository the
// caller works in: a repository must not be able to replace an agent the
// operator defined. Within one directory tree a later file in path order
// wins, as in Claude Code; within the operator file a later entry. A file
// reached twice (through a symbolic link, or a project inside the
// config directory) counts once, at its first place.
//
// Cap. When more agents than Config.Max remain, those kept are the ones of
// the highest-precedence sources, then by name; the others are named in
// one warning.
//
// Tool names are then given by [AssignToolNames].
func Load(cfg Config) *Set {
	return newScanner().scan(cfg)
}

// scanner reads the sources, keeping what it parsed of each file to read
// it again only when it may have changed.
type scanner struct {
	files map[string]*cachedFile // by kind, path and real path
	read  func(io.Reader) ([]byte, error)
	now   func() time.Time
	// listed, when set, is called with each directory once its files are
	// listed and before they are read: tests change the files there, as
	// another process could.
	listed func(dir string)
}

type cachedFile struct {
	size  int64
	mtime time.Time
	read  time.Time // when its content was read
	sum   [sha256.Size]byte
	res   fileResult
}

// fileResult is what a file gave: its agents (shared by every scan that
// reuses it: copied before they are changed) and warnings.
type fileResult struct {
	agents []*Agent
	warns  []Warning
}

func newScanner() *scanner {
	read := func(r io.Reader) ([]byte, error) { return readCapped(r, MaxFileBytes) }
	return &scanner{files: map[string]*cachedFile{}, read: read, now: time.Now}
}

// layer is one source's agents, in the order they override each other.
type layer struct {
	src    Source
	agents []*Agent
}

func (sc *scanner) scan(cfg Config) *Set {
	r := &scanRun{sc: sc, set: &Set{}, seen: map[string]*cachedFile{}, realSeen: map[string]bool{}}
	r.readSources(cfg)
	sc.files = r.seen

	agents := resolvePrecedence(r.layers, r.warn)
	agents = applyCap(agents, cfg.Max, r.warn)
	r.set.Warnings = append(r.set.Warnings, AssignToolNames(agents, cfg.ToolPrefix, cfg.Reserved)...)
	slices.SortFunc(agents, func(a, b *Agent) int { return strings.Compare(a.ToolName, b.ToolName) })
	r.set.Agents = agents
	return r.set
}

// scanRun is one scan: the set it builds, the files it read (the next
// scan's cache) and the layers of agents found, in increasing precedence.
type scanRun struct {
	sc       *scanner
	set      *Set
	seen     map[string]*cachedFile
	realSeen map[string]bool // files by their real path: each read once
	layers   []layer
}

func (r *scanRun) warn(w Warning) { r.set.Warnings = append(r.set.Warnings, w) }

// readSources reads the configured sources, lowest precedence first.
func (r *scanRun) readSources(cfg Config) {
	if cfg.Sources.Has(SourceUser) {
		dir := cfg.UserDir
		if dir == "" {
			var err error
			if dir, err = DefaultUserDir(); err != nil {
				r.warn(Warning{Text: fmt.Sprintf("user agents not read: %v", err)})
			}
		}
		if dir != "" {
			r.readDir(SourceUser, dir, false)
		}
	}
	if cfg.Sources.Has(SourceProject) && cfg.Project != "" {
		r.readDir(SourceProject, filepath.Join(cfg.Project, ".claude", "agents"), false)
	}
	if cfg.Sources.Has(SourceDirs) {
		for _, dir := range cfg.Dirs {
			r.readDir(SourceDirs, dir, true)
		}
	}
	if cfg.Sources.Has(SourceFile) && cfg.File != "" {
		r.readOperatorFile(absPath(cfg.File))
	}
}

// readDir reads the agent files under dir as one layer of source src.
func (r *scanRun) readDir(src Source, dir string, mustExist bool) {
	l := layer{src: src}
	files := listAgentFiles(dir, mustExist, r.warn)
	if r.sc.listed != nil {
		r.sc.listed(dir)
	}
	for _, lf := range files {
		if r.realSeen[lf.real.String()] {
			continue
		}
		r.realSeen[lf.real.String()] = true
		path := lf.path
		res := r.sc.file("agent", path, lf.real, r.seen, func(data []byte) fileResult {
			a, ws := ParseAgentFile(path, data)
			if a == nil {
				return fileResult{warns: ws}
			}
			return fileResult{agents: []*Agent{a}, warns: ws}
		})
		r.set.Warnings = append(r.set.Warnings, res.warns...)
		for _, a := range res.agents {
			b := *a
			b.Source = src
			l.agents = append(l.agents, &b)
		}
	}
	r.layers = append(r.layers, l)
}

// readOperatorFile reads the operator file as the last layer. The
// operator chose its path, so a symbolic link there is followed (a
// Kubernetes ConfigMap's files are links), resolved just before the open.
func (r *scanRun) readOperatorFile(path string) {
	real, err := beneath.Real(path)
	if err != nil {
		r.warn(Warning{Path: path, Text: "not read: " + errText(err)})
		r.layers = append(r.layers, layer{src: SourceFile})
		return
	}
	res := r.sc.file("operator", path, real, r.seen, func(data []byte) fileResult {
		agents, ws, err := ParseOperatorFile(path, data)
		if err != nil {
			var w Warning
			if !errors.As(err, &w) {
				w = Warning{Path: path, Text: err.Error()}
			}
			return fileResult{warns: []Warning{w}}
		}
		return fileResult{agents: agents, warns: ws}
	})
	r.set.Warnings = append(r.set.Warnings, res.warns...)
	l := layer{src: SourceFile}
	for _, a := range res.agents {
		b := *a
		l.agents = append(l.agents, &b)
	}
	r.layers = append(r.layers, l)
}

// resolvePrecedence keeps one agent per name: the last one defined, the
// layers being in increasing precedence.
func resolvePrecedence(layers []layer, warn func(Warning)) []*Agent {
	byName := map[string]*Agent{}
	var order []string
	for _, l := range layers {
		for _, a := range l.agents {
			if old, ok := byName[a.Name]; ok {
				warn(Warning{Path: old.Path, Line: old.Line, Agent: old.Name,
					Text: fmt.Sprintf("agent %q (%s) is shadowed by %s (%s)", old.Name, old.Source, where(a), a.Source)})
			} else {
				order = append(order, a.Name)
			}
			byName[a.Name] = a
		}
	}
	agents := make([]*Agent, len(order))
	for i, name := range order {
		agents[i] = byName[name]
	}
	return agents
}

// where names the place an agent was defined.
func where(a *Agent) string { return fmt.Sprintf("%s:%d", a.Path, a.Line) }

// applyCap keeps at most limit agents (0 is no cap): those of the
// highest-precedence sources, then by name.
func applyCap(agents []*Agent, limit int, warn func(Warning)) []*Agent {
	if limit <= 0 || len(agents) <= limit {
		return agents
	}
	ranked := slices.Clone(agents)
	slices.SortFunc(ranked, func(a, b *Agent) int {
		return cmp.Or(-cmp.Compare(a.Source, b.Source), strings.Compare(a.Name, b.Name))
	})
	dropped := ranked[limit:]
	names := make([]string, len(dropped))
	for i, a := range dropped {
		names[i] = fmt.Sprintf("%q (%s)", a.Name, a.Source)
	}
	warn(Warning{Text: fmt.Sprintf("%d agents found, at most %d exposed; not exposed: %s", len(agents), limit, strings.Join(names, ", "))})
	return ranked[:limit]
}

// file returns what a file gives, from the cache when its size and
// modification time say it has not changed (and it was not modified
// within racyWindow of its last read) or when its content hash is the
// same; else it parses it again. path names the file in warnings and
// agents; real, the path with its links resolved, is what is opened (see
// openRegular: never through a link, never a named pipe or a device, at
// most MaxFileBytes read). seen collects the cache of this scan.
func (sc *scanner) file(kind, path string, real beneath.Path, seen map[string]*cachedFile, parse func([]byte) fileResult) fileResult {
	key := kind + "\x00" + path + "\x00" + real.String()
	f, fi, err := openRegular(real)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && kind == "agent" {
			return fileResult{} // gone since the directory was listed
		}
		return fileResult{warns: []Warning{{Path: path, Text: "not read: " + errText(err)}}}
	}
	defer f.Close()
	c := sc.files[key]
	if c != nil && c.size == fi.Size() && c.mtime.Equal(fi.ModTime()) && fi.ModTime().Before(c.read.Add(-racyWindow)) {
		seen[key] = c
		return c.res
	}
	tooLarge := fileResult{warns: []Warning{{Path: path, Text: "skipped: " + errTooLarge.Error()}}}
	if fi.Size() > MaxFileBytes {
		return tooLarge
	}
	now := sc.now()
	data, err := sc.read(f)
	if errors.Is(err, errTooLarge) {
		return tooLarge
	}
	if err != nil {
		return fileResult{warns: []Warning{{Path: path, Text: "not read: " + errText(err)}}}
	}
	sum := sha256.Sum256(data)
	if c == nil || c.sum != sum {
		c = &cachedFile{sum: sum, res: parse(data)}
	}
	c.size, c.mtime, c.read = fi.Size(), fi.ModTime(), now
	seen[key] = c
	return c.res
}

// A listedFile is an agent file found in a directory.
type listedFile struct {
	path string       // as listed, under the directory given
	real beneath.Path // the directory with its links resolved, and the file beneath it: what is opened
}

// listAgentFiles returns the .md files under dir, in path order, including
// hidden ones, as the CLI does. A session may write an agents directory
// (its project's, its config directory's), so a symbolic link there is
// followed only to a file or directory inside the same directory (as a
// Kubernetes ConfigMap's files are links to ..data/ beside them); a link
// out of it is a warning, never read (dir itself may be a link: the
// operator's choice). A link is resolved here, when listed, and each
// directory is read once; the file is then opened beneath dir without
// following a link (package beneath), so one planted since the listing is
// refused. A missing dir is a warning only when mustExist.
func listAgentFiles(dir string, mustExist bool, warn func(Warning)) []listedFile {
	dir = absPath(dir)
	fi, err := os.Stat(dir)
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist) && !mustExist:
		return nil
	case err != nil:
		warn(Warning{Path: dir, Text: "agents directory not read: " + errText(err)})
		return nil
	case !fi.IsDir():
		warn(Warning{Path: dir, Text: "agents directory not read: not a directory"})
		return nil
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		realDir = dir
	}
	var files []listedFile
	visited := map[string]bool{}
	full := false
	// walk lists d, which is rel beneath realDir.
	var walk func(d, rel string)
	walk = func(d, rel string) {
		if visited[rel] {
			return
		}
		visited[rel] = true
		entries, err := beneath.ReadDir(beneath.Path{Dir: realDir, Rel: rel})
		if err != nil {
			warn(Warning{Path: d, Text: "agents directory not read: " + errText(err)})
			return
		}
		for _, e := range entries {
			if full {
				return
			}
			lf := listedFile{filepath.Join(d, e.Name()), beneath.Path{Dir: realDir, Rel: filepath.Join(rel, e.Name())}}
			mode := e.Type()
			if mode&fs.ModeSymlink != 0 {
				var err error
				if lf.real.Rel, mode, err = resolveLink(realDir, lf.real.Rel); err != nil {
					warn(Warning{Path: lf.path, Text: "not read: " + err.Error()})
					continue
				}
			}
			switch {
			case mode.IsDir():
				walk(lf.path, lf.real.Rel)
			case mode.IsRegular() && strings.HasSuffix(e.Name(), ".md"):
				if len(files) == maxDirFiles {
					warn(Warning{Path: dir, Text: fmt.Sprintf("more than %d agent files: the rest not read", maxDirFiles)})
					full = true
					return
				}
				files = append(files, lf)
			}
		}
	}
	walk(dir, ".")
	slices.SortFunc(files, func(a, b listedFile) int { return strings.Compare(a.path, b.path) })
	return files
}

// resolveLink returns where the symbolic link rel beneath dir leads, every
// link resolved, beneath dir, and the type of what is there; a link that
// leads out of dir, or nowhere, is an error saying so.
func resolveLink(dir, rel string) (string, fs.FileMode, error) {
	real, err := filepath.EvalSymlinks(filepath.Join(dir, rel))
	if err != nil {
		return "", 0, fmt.Errorf("a symbolic link that cannot be followed: %s", errText(err))
	}
	inside, err := filepath.Rel(dir, real)
	if err != nil || !filepath.IsLocal(inside) {
		return "", 0, errors.New("a symbolic link out of the agents directory; not followed (a session may write there)")
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return "", 0, fmt.Errorf("a symbolic link that cannot be followed: %s", errText(err))
	}
	return inside, fi.Mode().Type(), nil
}

// errText is an error's text without the path it repeats.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
