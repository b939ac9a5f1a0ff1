package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// profileFile is the --profiles JSON document:
//
//	{"profiles": {"gateway": {"baseUrl": "https://…", "apiKeyEnv": "GATEWAY_KEY", "model": "sonnet", "env": {"K": "V"}}}}
//
// Secrets are named by environment variable, never written in the file.
type profileFile struct {
	Profiles map[string]profile `json:"profiles"`
}

type profile struct {
	BaseURL      string            `json:"baseUrl"`
	APIKeyEnv    string            `json:"apiKeyEnv"`    // sets ANTHROPIC_API_KEY from this variable
	AuthTokenEnv string            `json:"authTokenEnv"` // sets ANTHROPIC_AUTH_TOKEN (bearer) from this variable
	Model        string            `json:"model"`        // sets ANTHROPIC_MODEL
	Env          map[string]string `json:"env"`
}

var profileNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`) })

// loadProfiles reads the profiles file and resolves each profile to the
// environment it gives the CLI. A referenced variable that is unset is an
// error naming the variable (never its value).
func loadProfiles(path string) (map[string]map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading --profiles: %w", err)
	}
	var f profileFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("parsing --profiles %s: %v (expected {\"profiles\": {\"name\": {\"baseUrl\": …, \"apiKeyEnv\": …}}})", path, err)
	}
	out := make(map[string]map[string]string, len(f.Profiles))
	for name, p := range f.Profiles {
		if !profileNameRE().MatchString(name) {
			return nil, fmt.Errorf("--profiles: invalid profile name %q: use letters, digits, '.', '_' and '-'", name)
		}
		env := map[string]string{}
		for k, v := range p.Env {
			env[k] = v
		}
		if p.BaseURL != "" {
			env["ANTHROPIC_BASE_URL"] = p.BaseURL
		}
		if p.Model != "" {
			env["ANTHROPIC_MODEL"] = p.Model
		}
		for target, src := range map[string]string{"ANTHROPIC_API_KEY": p.APIKeyEnv, "ANTHROPIC_AUTH_TOKEN": p.AuthTokenEnv} {
			if src == "" {
				continue
			}
			v, ok := os.LookupEnv(src)
			if !ok || v == "" {
				return nil, fmt.Errorf("--profiles: profile %q takes its token from $%s, which is not set", name, src)
			}
			env[target] = v
		}
		out[name] = env
	}
	return out, nil
}

func profileNames(p map[string]map[string]string) string {
	if len(p) == 0 {
		return "no profiles (start it with --profiles FILE)"
	}
	names := slices.Sorted(maps.Keys(p))
	return "the profiles " + strings.Join(names, ", ")
}
