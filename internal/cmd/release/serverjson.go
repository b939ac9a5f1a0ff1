package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// schemaURL is the registry's published schema that server.json follows,
// vendored as testdata/mcpregistry/server.schema.json.
const schemaURL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

// serverJSON is the part of the registry's server.json the release fills.
type serverJSON struct {
	Schema      string     `json:"$schema"`
	Name        string     `json:"name"`
	Title       string     `json:"title"`
	Description string     `json:"description"`
	Version     string     `json:"version"`
	WebsiteURL  string     `json:"websiteUrl"`
	Repository  repository `json:"repository"`
	Packages    []pkg      `json:"packages"`
}

type repository struct {
	URL    string `json:"url"`
	Source string `json:"source"`
}

type pkg struct {
	RegistryType string    `json:"registryType"`
	Identifier   string    `json:"identifier"`
	Version      string    `json:"version"`
	FileSHA256   string    `json:"fileSha256"`
	Transport    transport `json:"transport"`
}

type transport struct {
	Type string `json:"type"`
}

// readChecksums reads a sha256sum-format file: file name to hex digest.
func readChecksums(path string) (map[string]string, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sums := map[string]string{}
	var order []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(strings.TrimSpace(sc.Text()), "  ")
		if !ok || len(sum) != 64 {
			return nil, nil, fmt.Errorf("%s: line %q is not \"<sha256>  <file>\"", path, sc.Text())
		}
		sums[name] = sum
		order = append(order, name)
	}
	return sums, order, sc.Err()
}

// makeServerJSON is the server.json of version: one mcpb package per
// bundle in the checksums, downloaded from the GitHub release of tag
// v<version>.
func makeServerJSON(sums map[string]string, order []string, version string) (serverJSON, error) {
	version = strings.TrimPrefix(version, "v")
	s := serverJSON{
		Schema:      schemaURL,
		Name:        registry,
		Title:       "Claude Code sub-agents",
		Description: "Run Claude Code sessions as sub-agents: fan-out, worktrees, budgets, a live dashboard.",
		Version:     version,
		WebsiteURL:  repoURL,
		Repository:  repository{URL: repoURL, Source: "github"},
	}
	for _, name := range order {
		if !strings.HasSuffix(name, ".mcpb") {
			continue
		}
		s.Packages = append(s.Packages, pkg{
			RegistryType: "mcpb",
			Identifier:   fmt.Sprintf("%s/releases/download/v%s/%s", repoURL, version, name),
			Version:      version,
			FileSHA256:   sums[name],
			Transport:    transport{Type: "stdio"},
		})
	}
	if len(s.Packages) == 0 {
		return s, errors.New("the checksums name no .mcpb bundle")
	}
	return s, nil
}

func writeServerJSON(sumsPath, version, out string) error {
	if sumsPath == "" || version == "" || out == "" {
		return errors.New("-checksums, -version and -out are all needed")
	}
	sums, order, err := readChecksums(sumsPath)
	if err != nil {
		return fmt.Errorf("reading the checksums: %w", err)
	}
	s, err := makeServerJSON(sums, order, version)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}
