package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// bundleSpec is one Desktop bundle to write.
type bundleSpec struct {
	bin, goos, goarch, version string
	manifest                   string // the template, packaging/mcpb/manifest.json
	license                    string // shipped beside the manifest, when not ""
	out                        string // the directory to write the bundle in
}

// bundleName is the file name of the bundle of one build.
func bundleName(version, goos, goarch string) string {
	return fmt.Sprintf("%s_%s_%s_%s.mcpb", project, version, goos, goarch)
}

// mcpbPlatform is the manifest's name of a GOOS.
func mcpbPlatform(goos string) (string, error) {
	switch goos {
	case "darwin", "linux":
		return goos, nil
	case "windows":
		return "win32", nil
	}
	return "", fmt.Errorf("no Desktop bundle for GOOS %q: Claude Desktop runs on darwin, linux (win32 is windows)", goos)
}

// writeBundle writes the bundle of s and returns its path. The zip holds
// manifest.json, the binary where the manifest's entry_point says, and
// the license.
func writeBundle(s bundleSpec) (string, error) {
	if s.bin == "" || s.goos == "" || s.goarch == "" || s.version == "" {
		return "", errors.New("-bin, -os, -arch and -version are all needed")
	}
	tmpl, err := os.ReadFile(s.manifest)
	if err != nil {
		return "", fmt.Errorf("reading the manifest template: %w", err)
	}
	manifest, entry, err := renderManifest(tmpl, s.goos, s.version)
	if err != nil {
		return "", fmt.Errorf("rendering %s: %w", s.manifest, err)
	}
	files := []zipFile{{name: "manifest.json", data: manifest, mode: 0o644}}
	bin, err := os.ReadFile(s.bin)
	if err != nil {
		return "", fmt.Errorf("reading the binary: %w", err)
	}
	files = append(files, zipFile{name: entry, data: bin, mode: 0o755})
	if s.license != "" {
		lic, err := os.ReadFile(s.license)
		if err != nil {
			return "", fmt.Errorf("reading the license: %w", err)
		}
		files = append(files, zipFile{name: "LICENSE", data: lic, mode: 0o644})
	}
	if err := os.MkdirAll(s.out, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(s.out, bundleName(s.version, s.goos, s.goarch))
	if err := writeZip(path, files); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}

// renderManifest is the template made the manifest of one platform: its
// version, the platform alone in compatibility.platforms and, on Windows,
// the executable's .exe in entry_point and mcp_config.command. It returns
// the manifest and the entry point (the binary's path in the bundle).
func renderManifest(tmpl []byte, goos, version string) ([]byte, string, error) {
	platform, err := mcpbPlatform(goos)
	if err != nil {
		return nil, "", err
	}
	var m map[string]any
	if err := json.Unmarshal(tmpl, &m); err != nil {
		return nil, "", fmt.Errorf("decoding: %w", err)
	}
	server, _ := m["server"].(map[string]any)
	config, _ := server["mcp_config"].(map[string]any)
	entry, _ := server["entry_point"].(string)
	command, _ := config["command"].(string)
	if entry == "" || command == "" {
		return nil, "", errors.New("server.entry_point or server.mcp_config.command is missing")
	}
	if goos == "windows" {
		entry, command = entry+".exe", command+".exe"
	}
	if command != "${__dirname}/"+entry {
		return nil, "", fmt.Errorf("server.mcp_config.command %q does not run server.entry_point %q", command, entry)
	}
	server["entry_point"], config["command"] = entry, command
	m["version"] = strings.TrimPrefix(version, "v")
	compat, _ := m["compatibility"].(map[string]any)
	if compat == nil {
		compat = map[string]any{}
		m["compatibility"] = compat
	}
	compat["platforms"] = []string{platform}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, "", err
	}
	return b.Bytes(), entry, nil
}

type zipFile struct {
	name string
	data []byte
	mode os.FileMode
}

// writeZip writes files to a new zip at path, deflated, with their modes
// (the binary's executable bit survives unpacking).
func writeZip(path string, files []zipFile) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	zw := zip.NewWriter(f)
	for _, file := range files {
		h := &zip.FileHeader{Name: file.name, Method: zip.Deflate}
		h.SetMode(file.mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, bytes.NewReader(file.data)); err != nil {
			return err
		}
	}
	return zw.Close()
}
