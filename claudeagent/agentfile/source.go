package agentfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A Source is where an agent comes from. The constants are in increasing
// precedence: when two sources define the same name, the later one wins
// (see [Load]).
type Source uint8

const (
	// SourceUser is the user's agent files: <config dir>/agents.
	SourceUser Source = 1 << iota
	// SourceProject is the project's agent files: <project>/.claude/agents.
	SourceProject
	// SourceDirs is the operator's further directories (--agents-dir).
	SourceDirs
	// SourceFile is the operator file (--agents-file).
	SourceFile
)

// sourceNames are the names of the sources in increasing precedence.
var sourceNames = []struct {
	src  Source
	name string
}{
	{SourceUser, "user"},
	{SourceProject, "project"},
	{SourceDirs, "dirs"},
	{SourceFile, "file"},
}

// String returns the source's name in a sources flag: user, project, dirs
// or file.
func (s Source) String() string {
	for _, n := range sourceNames {
		if n.src == s {
			return n.name
		}
	}
	return fmt.Sprintf("Source(%d)", uint8(s))
}

// Sources is a set of sources: the ones a caller exposes.
type Sources uint8

// AllSources is every source.
const AllSources = Sources(SourceUser | SourceProject | SourceDirs | SourceFile)

// Has reports whether src is in the set.
func (s Sources) Has(src Source) bool { return s&Sources(src) != 0 }

// String returns the set as ParseSources reads it: "user,project", "" for
// none.
func (s Sources) String() string {
	var names []string
	for _, n := range sourceNames {
		if s.Has(n.src) {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, ",")
}

// ParseSources reads a flag value such as "user,project,file": a
// comma-separated list of user, project, dirs and file, or "all". An empty
// value, or "none", is the empty set.
func ParseSources(v string) (Sources, error) {
	var set Sources
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		switch part {
		case "", "none":
			continue
		case "all":
			set |= AllSources
			continue
		}
		found := false
		for _, n := range sourceNames {
			if n.name == part {
				set |= Sources(n.src)
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown agent source %q: use user, project, dirs, file, all or none", part)
		}
	}
	return set, nil
}

// Config says where [Load] and a [Watcher] look for agents and how they
// expose them. The zero value exposes nothing.
type Config struct {
	// Sources are the sources read; the others are ignored even when set
	// below.
	Sources Sources
	// UserDir is the user's agents directory; "" is [DefaultUserDir].
	UserDir string
	// Project is the project's directory; its agents are in
	// Project/.claude/agents. "" reads no project agents.
	Project string
	// Dirs are further agents directories, in increasing precedence.
	Dirs []string
	// File is the operator file; "" is none.
	File string
	// Reserved are tool names no agent gets: the built-in tools'.
	Reserved []string
	// ToolPrefix is put before every agent's tool name ("" none); it must
	// be made of letters, digits, '_' and '-'.
	ToolPrefix string
	// Max caps the number of agents exposed; 0 is no cap.
	Max int
}

// DefaultUserDir returns the user's agents directory as the CLI finds it:
// $CLAUDE_CONFIG_DIR/agents, or ~/.claude/agents when it is not set.
func DefaultUserDir() (string, error) {
	if dir := strings.TrimSpace(os.Getenv("CLAUDE_CONFIG_DIR")); dir != "" {
		return filepath.Join(dir, "agents"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the user's agents directory: %w", err)
	}
	if home == "" {
		return "", errors.New("finding the user's agents directory: no home directory")
	}
	return filepath.Join(home, ".claude", "agents"), nil
}
