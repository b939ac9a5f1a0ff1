package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// target is one build of the release.
type target struct{ goos, goarch string }

// targets are the builds .goreleaser.yaml makes.
var targets = []target{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// archiveName is the archive of t, as .goreleaser.yaml names it.
func archiveName(version string, t target) string {
	arch := t.goarch
	if arch == "amd64" {
		arch = "x86_64"
	}
	ext := ".tar.gz"
	if t.goos == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("%s_%s_%s_%s%s", project, version, t.goos, arch, ext)
}

func exeName(goos string) string {
	if goos == "windows" {
		return project + ".exe"
	}
	return project
}

// checkDist checks what a release wrote to dist (see the package doc),
// writes a line per artifact checked to w, and returns every problem.
func checkDist(dist, version, schema string, w io.Writer) error {
	if version == "" {
		return errors.New("-version is needed")
	}
	sums, _, err := readChecksums(filepath.Join(dist, "checksums.txt"))
	if err != nil {
		return fmt.Errorf("reading the checksums: %w", err)
	}
	var errs []error
	for _, t := range targets {
		for _, c := range []struct {
			name  string
			check func(string, target) error
		}{
			{archiveName(version, t), checkArchive},
			{bundleName(version, t.goos, t.goarch), func(p string, t target) error { return checkBundle(p, t, version) }},
		} {
			path := filepath.Join(dist, c.name)
			err := errors.Join(c.check(path, t), checkSum(path, sums))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
				continue
			}
			fmt.Fprintf(w, "ok %s\n", c.name)
		}
	}
	cask := filepath.Join(dist, "homebrew", "Casks", project+".rb")
	if err := checkCask(cask, version, sums); err != nil {
		errs = append(errs, fmt.Errorf("the Homebrew cask %s: %w", cask, err))
	} else {
		fmt.Fprintf(w, "ok %s\n", cask)
	}
	sj := filepath.Join(dist, "server.json")
	if err := checkServerJSON(sj, schema, version, sums); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", sj, err))
	} else {
		fmt.Fprintf(w, "ok %s (valid against %s)\n", sj, schema)
	}
	return errors.Join(errs...)
}

// checkSum checks that the checksums list path with its SHA-256.
func checkSum(path string, sums map[string]string) error {
	want, ok := sums[filepath.Base(path)]
	if !ok {
		return errors.New("not in checksums.txt")
	}
	got, err := fileSHA256(path)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("its SHA-256 is %s, checksums.txt says %s", got, want)
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// checkArchive checks that the archive holds the binary, README.md and
// LICENSE at its top.
func checkArchive(path string, t target) error {
	var names []string
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.OpenReader(path)
		if err != nil {
			return err
		}
		defer zr.Close()
		for _, f := range zr.File {
			names = append(names, f.Name)
		}
	} else {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		gz, err := gzip.NewReader(f)
		if err != nil {
			return err
		}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			names = append(names, h.Name)
		}
	}
	var missing []string
	for _, want := range []string{exeName(t.goos), "README.md", "LICENSE"} {
		if !slices.Contains(names, want) {
			missing = append(missing, want)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("lacks %s (it holds %s)", strings.Join(missing, ", "), strings.Join(names, ", "))
	}
	return nil
}

// checkBundle checks that the bundle's manifest is the template's for t's
// platform and version, and that its entry point is the binary.
func checkBundle(path string, t target, version string) error {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return err
	}
	defer zr.Close()
	files := map[string]*zip.File{}
	for _, f := range zr.File {
		files[f.Name] = f
	}
	mf, ok := files["manifest.json"]
	if !ok {
		return errors.New("no manifest.json")
	}
	var m struct {
		Version string `json:"version"`
		Server  struct {
			EntryPoint string `json:"entry_point"`
		} `json:"server"`
		Compatibility struct {
			Platforms []string `json:"platforms"`
		} `json:"compatibility"`
	}
	if err := readZipJSON(mf, &m); err != nil {
		return fmt.Errorf("manifest.json: %w", err)
	}
	platform, err := mcpbPlatform(t.goos)
	if err != nil {
		return err
	}
	var errs []error
	if m.Version != strings.TrimPrefix(version, "v") {
		errs = append(errs, fmt.Errorf("manifest version %q, want %q", m.Version, version))
	}
	if !slices.Equal(m.Compatibility.Platforms, []string{platform}) {
		errs = append(errs, fmt.Errorf("manifest platforms %v, want [%s]", m.Compatibility.Platforms, platform))
	}
	if want := "server/" + exeName(t.goos); m.Server.EntryPoint != want {
		errs = append(errs, fmt.Errorf("entry_point %q, want %q", m.Server.EntryPoint, want))
	}
	if bin, ok := files[m.Server.EntryPoint]; !ok {
		errs = append(errs, fmt.Errorf("the entry point %q is not in the bundle", m.Server.EntryPoint))
	} else if t.goos != "windows" && bin.Mode()&0o111 == 0 {
		errs = append(errs, fmt.Errorf("the entry point %q is not executable (%v)", m.Server.EntryPoint, bin.Mode()))
	}
	return errors.Join(errs...)
}

func readZipJSON(f *zip.File, v any) error {
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	return json.NewDecoder(rc).Decode(v)
}

// caskURLRE finds a cask's url and sha256 pairs.
var caskURLRE = regexp.MustCompile(`url "([^"]+)"\s+sha256 "([0-9a-f]{64})"`)

// checkCask checks the cask's version, that it installs the binary, and
// that each of its downloads is a darwin or linux archive of the release
// with the archive's checksum, all four of them.
func checkCask(path, version string, sums map[string]string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cask := string(b)
	var errs []error
	if !strings.Contains(cask, fmt.Sprintf("version %q", version)) {
		errs = append(errs, fmt.Errorf("no version %q", version))
	}
	if !strings.Contains(cask, fmt.Sprintf("binary %q", project)) {
		errs = append(errs, fmt.Errorf("does not install the binary %s", project))
	}
	got := map[string]string{}
	for _, m := range caskURLRE.FindAllStringSubmatch(cask, -1) {
		name := strings.ReplaceAll(m[1][strings.LastIndex(m[1], "/")+1:], "#{version}", version)
		if !strings.HasPrefix(m[1], repoURL+"/releases/download/") {
			errs = append(errs, fmt.Errorf("url %s is not a download of %s", m[1], repoURL))
		}
		got[name] = m[2]
	}
	for _, t := range targets {
		if t.goos == "windows" {
			continue
		}
		name := archiveName(version, t)
		if sum, ok := got[name]; !ok {
			errs = append(errs, fmt.Errorf("no url of %s", name))
		} else if sum != sums[name] {
			errs = append(errs, fmt.Errorf("%s has sha256 %s, checksums.txt says %s", name, sum, sums[name]))
		}
	}
	return errors.Join(errs...)
}

// checkServerJSON validates server.json against the registry's schema and
// checks that it names every bundle with its checksum.
func checkServerJSON(path, schemaPath, version string, sums map[string]string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := validateSchema(data, schemaPath); err != nil {
		return err
	}
	var s serverJSON
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	byName := map[string]pkg{}
	for _, p := range s.Packages {
		byName[p.Identifier[strings.LastIndex(p.Identifier, "/")+1:]] = p
	}
	var errs []error
	for _, t := range targets {
		name := bundleName(version, t.goos, t.goarch)
		p, ok := byName[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("no package %s", name))
		case p.RegistryType != "mcpb" || p.FileSHA256 != sums[name]:
			errs = append(errs, fmt.Errorf("package %s is %s with sha %s, want mcpb with %s", name, p.RegistryType, p.FileSHA256, sums[name]))
		}
	}
	return errors.Join(errs...)
}

// validateSchema validates a JSON document against the JSON Schema
// (draft-07, as the registry publishes it) in schemaPath.
func validateSchema(data []byte, schemaPath string) error {
	raw, err := os.ReadFile(schemaPath)
	if err != nil {
		return fmt.Errorf("reading the schema: %w", err)
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(raw, &schema); err != nil {
		return fmt.Errorf("decoding the schema %s: %w", schemaPath, err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return fmt.Errorf("resolving the schema %s: %w", schemaPath, err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := resolved.Validate(doc); err != nil {
		return fmt.Errorf("not valid against %s: %w", schemaPath, err)
	}
	return nil
}
