// Command release makes the release's artifacts that GoReleaser cannot make
// by itself, and checks what a release produced. .goreleaser.yaml runs the
// first two; scripts/release-check runs the last after a snapshot release.
//
// Usage:
//
//	release bundle -bin PATH -os GOOS -arch GOARCH -version V -out DIR
//	release serverjson -checksums FILE -version V -out FILE
//	release check -dist DIR [-version V]
//
// bundle writes DIR/claude-agent-mcp_V_GOOS_GOARCH.mcpb, the Claude Desktop
// bundle of one build: packaging/mcpb/manifest.json for that platform (its
// version, platform and executable name set) and the binary at
// server/claude-agent-mcp (.exe on Windows), with the LICENSE. (GoReleaser
// runs it as each build's post hook.)
//
// serverjson writes the MCP registry's server.json: one mcpb package per
// bundle named in the checksums file, with its download URL in the GitHub
// release and its SHA-256. (GoReleaser runs it as a "signature" of the
// checksums file: its one step that runs a command after the checksums.)
//
// check verifies DIR after `goreleaser release --snapshot`: every archive
// holds the binary, README.md and LICENSE; every bundle holds a manifest
// for its platform and the binary; checksums.txt lists each archive and
// bundle with its right SHA-256; the Homebrew cask names each macOS archive
// with its checksum; server.json is valid against the registry's schema
// (testdata/mcpregistry/server.schema.json) and names every bundle.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The project's names, as the release publishes them.
const (
	project  = "claude-agent-mcp"
	repoURL  = "https://github.com/claude-agent-mcp/claude-agent-mcp"
	registry = "io.github.claude-agent-mcp/claude-agent-mcp"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("missing subcommand: bundle, serverjson or check")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	version := fs.String("version", "", "the release's version (GoReleaser's {{ .Version }})")
	switch args[0] {
	case "bundle":
		bin := fs.String("bin", "", "the built binary")
		goos := fs.String("os", "", "its GOOS")
		goarch := fs.String("arch", "", "its GOARCH")
		out := fs.String("out", "dist", "the directory to write the bundle in")
		manifest := fs.String("manifest", "packaging/mcpb/manifest.json", "the manifest template")
		license := fs.String("license", "LICENSE", "the license file to ship")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		path, err := writeBundle(bundleSpec{bin: *bin, goos: *goos, goarch: *goarch, version: *version,
			manifest: *manifest, license: *license, out: *out})
		if err != nil {
			return fmt.Errorf("making the bundle: %w", err)
		}
		fmt.Fprintln(stdout, path)
		return nil
	case "serverjson":
		sums := fs.String("checksums", "", "the release's checksums file (sha256sum format)")
		out := fs.String("out", "", "where to write server.json")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if err := writeServerJSON(*sums, *version, *out); err != nil {
			return fmt.Errorf("making server.json: %w", err)
		}
		return nil
	case "check":
		dist := fs.String("dist", "dist", "GoReleaser's output directory")
		schema := fs.String("schema", "testdata/mcpregistry/server.schema.json", "the registry's server.json schema")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *version == "" {
			v, err := distVersion(*dist)
			if err != nil {
				return fmt.Errorf("reading the version of %s (or give -version): %w", *dist, err)
			}
			*version = v
		}
		return checkDist(*dist, *version, *schema, stdout)
	}
	return fmt.Errorf("unknown subcommand %q: want bundle, serverjson or check", args[0])
}

// distVersion is the version GoReleaser wrote to DIR/metadata.json.
func distVersion(dist string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dist, "metadata.json"))
	if err != nil {
		return "", err
	}
	var m struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return "", err
	}
	if m.Version == "" {
		return "", fmt.Errorf("no version in %s/metadata.json", dist)
	}
	return m.Version, nil
}
