package policy

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
)

// Class is what granting an option lets a caller do beyond asking Claude
// Code for answers. Classes combine.
type Class uint8

const (
	// ReadsFiles reaches files or directories of the server (cwd, addDirs,
	// images by path, a settings file, worktrees, plugin directories).
	ReadsFiles Class = 1 << iota
	// RunsPrograms starts programs as the server's user (command MCP
	// servers, hooks, plugins, credential helpers, status lines).
	RunsPrograms
	// WidensPermissions lets the session do more without asking
	// (permission modes that skip questions, allow rules, tools beyond
	// the session's, profiles with other credentials).
	WidensPermissions
	// InternalURLs reaches the server's own machine or its internal
	// network: an MCP server whose URL is loopback, private, link-local
	// (cloud metadata), CGNAT, localhost, or a name resolving to one.
	InternalURLs
	// Harmless is no class: a caller may always choose it.
	Harmless Class = 0
)

// classNames are the --http-allow names of the classes.
var classNames = []struct {
	c    Class
	name string
}{{ReadsFiles, "reads-files"}, {RunsPrograms, "runs-programs"}, {WidensPermissions, "widens-permissions"}, {InternalURLs, "internal-urls"}}

// legacyAllow are the --http-allow names of earlier releases: each opens
// some uses, not a whole class.
var legacyAllow = []string{"mcp-servers", "settings", "bypass", "paths", "profiles"}

// HTTPAllowNames are the values --http-allow takes: the classes, then the
// names of earlier releases (paths is reads-files; mcp-servers, settings,
// bypass and profiles open that option or value alone).
func HTTPAllowNames() []string {
	var names []string
	for _, c := range classNames {
		names = append(names, c.name)
	}
	return append(names, legacyAllow...)
}

// String names the classes of c ("harmless" for none).
func (c Class) String() string {
	var parts []string
	for _, n := range classNames {
		if c&n.c != 0 {
			parts = append(parts, n.name)
		}
	}
	if len(parts) == 0 {
		return "harmless"
	}
	return strings.Join(parts, "+")
}

// classVerb says what a class lets a caller do.
func classVerb(c Class) string {
	var parts []string
	if c&ReadsFiles != 0 {
		parts = append(parts, "reaches files")
	}
	if c&RunsPrograms != 0 {
		parts = append(parts, "runs programs")
	}
	if c&WidensPermissions != 0 {
		parts = append(parts, "lets the session act without asking")
	}
	if c&InternalURLs != 0 {
		parts = append(parts, "reaches the server's own machine or internal network")
	}
	return strings.Join(parts, " and ")
}

// The policy classes: one classifier per session option (by its JSON name,
// the tool parameter), and within the options that carry documents of the
// CLI's (agents, settings, mcpServers) one class per field or key, from
// the tables of fields.go. A name missing here is refused (see policy.go);
// TestEveryOptionClassified fails when an option of options.CreateOptions
// has no classifier, TestCLISchemaClassified when a field of the CLI's
// documents has none.

// classifier breaks one option of o down into uses.
type classifier func(o *options.CreateOptions) ([]Use, error)

// harmless is the classifier of an option a caller may always choose.
func harmless(*options.CreateOptions) ([]Use, error) { return nil, nil }

// optionClasses are the session options' classifiers.
var optionClasses = map[string]classifier{
	"cwd": func(o *options.CreateOptions) ([]Use, error) {
		if o.Cwd == serverCwd() {
			return []Use{{what: "cwd", paths: []string{o.Cwd}, dirs: true}}, nil // the operator's choice
		}
		return []Use{{what: "cwd", value: o.Cwd, class: ReadsFiles, also: "paths", paths: []string{o.Cwd}, dirs: true}}, nil
	},
	"model":              harmless,
	"fallbackModel":      harmless,
	"systemPrompt":       harmless,
	"appendSystemPrompt": harmless,
	"maxTurns":           harmless,
	"effort":             harmless,
	"jsonSchema":         harmless,
	"maxBudgetUsd":       harmless, // within --max-session-budget-usd, checked by gate
	"settingSources":     harmless, // no more than the CLI's default
	"name":               harmless,
	"strictMcpConfig":    harmless,
	"resumeSessionId":    harmless, // whose conversation it is: checkConversation
	"forkSession":        harmless,
	"agent":              harmless, // the agent's definition is classified where it comes from
	"disallowedTools":    harmless, // narrows
	"tools": func(o *options.CreateOptions) ([]Use, error) {
		return []Use{{what: "tools", tools: o.Tools}}, nil
	},
	"allowedTools": func(o *options.CreateOptions) ([]Use, error) {
		return []Use{{what: "allowedTools", class: WidensPermissions, tools: o.AllowedTools}}, nil
	},
	"permissionMode": func(o *options.CreateOptions) ([]Use, error) {
		c, also := modeClass(o.PermissionMode)
		return []Use{{what: "permissionMode", value: o.PermissionMode, class: c, also: also, modes: []string{o.PermissionMode}}}, nil
	},
	"addDirs": func(o *options.CreateOptions) ([]Use, error) {
		var uses []Use
		for _, d := range o.AddDirs {
			uses = append(uses, Use{what: "addDirs entry", value: d, class: ReadsFiles, also: "paths", paths: []string{d}, dirs: true})
		}
		return uses, nil
	},
	"worktree": func(o *options.CreateOptions) ([]Use, error) {
		return []Use{{what: "worktree", class: ReadsFiles, also: "paths", paths: []string{o.Cwd}}}, nil
	},
	"profile": func(o *options.CreateOptions) ([]Use, error) {
		return []Use{{what: "profile", value: o.Profile, class: WidensPermissions, also: "profiles"}}, nil
	},
	"plugins": func(o *options.CreateOptions) ([]Use, error) {
		return []Use{{what: "plugins", class: RunsPrograms | ReadsFiles, program: true, paths: o.Plugins, dirs: true}}, nil
	},
	"mcpServers": func(o *options.CreateOptions) ([]Use, error) {
		var uses []Use
		for _, name := range sortedKeys(o.MCPServers) {
			uses = append(uses, mcpServerUses(fmt.Sprintf("mcpServers[%q]", name), o.MCPServers[name])...)
		}
		return uses, nil
	},
	"agents": func(o *options.CreateOptions) ([]Use, error) {
		var agents map[string]map[string]json.RawMessage
		if err := json.Unmarshal(o.Agents, &agents); err != nil {
			return nil, fmt.Errorf("invalid agents: %v", err)
		}
		var uses []Use
		for _, name := range sortedKeys(agents) {
			uses = append(uses, agentUses(fmt.Sprintf("agents[%q]", name), agents[name])...)
		}
		return uses, nil
	},
	"settings": func(o *options.CreateOptions) ([]Use, error) {
		var path string
		if json.Unmarshal(o.Settings, &path) == nil {
			return settingsFileUses(path) // a session persisted before settingsFile
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(o.Settings, &obj); err != nil {
			return nil, fmt.Errorf("invalid settings: %v", err)
		}
		return settingsUses(obj), nil
	},
	"settingsFile": func(o *options.CreateOptions) ([]Use, error) {
		return settingsFileUses(o.SettingsFile)
	},
}

// settingsFileUses classifies a settings file: reading it, and its
// settings as an object's.
func settingsFileUses(path string) ([]Use, error) {
	obj, err := readSettingsFile(path)
	if err != nil {
		return nil, err
	}
	return append([]Use{settingsFileUse(path)}, settingsUses(obj)...), nil
}

// settingsFileUse is the use of a settings file by its path: reading it.
func settingsFileUse(path string) Use {
	return Use{what: "settings file", value: path, class: ReadsFiles, also: "settings", paths: []string{path}, option: "settingsFile"}
}

// optionUses breaks the options that are set down into uses. An option
// without a classifier is an error.
func optionUses(o *options.CreateOptions) ([]Use, error) {
	return optionUsesWith(optionClasses, o)
}

// optionUsesWith is optionUses with the classifiers given.
func optionUsesWith(classes map[string]classifier, o *options.CreateOptions) ([]Use, error) {
	names, err := setOptions(o)
	if err != nil {
		return nil, err
	}
	var uses []Use
	for _, name := range names {
		classify, ok := classes[name]
		if !ok {
			return nil, fmt.Errorf("%w: session option %q is not classified, so this server refuses it", errUnclassified, name)
		}
		u, err := classify(o)
		if err != nil {
			return nil, err
		}
		for i := range u {
			u[i].option = name
		}
		uses = append(uses, u...)
	}
	return uses, nil
}

// mcpServerUses classifies one MCP server entry field by field, by the
// table of its transport (mcpTransports): the command of a stdio entry is
// one use (--allow-session-mcp-servers), a helper or a login runs a
// program too, an http, sse or ws URL may reach internal addresses. A
// transport or a field no table knows is unclassified.
func mcpServerUses(what string, raw json.RawMessage) []Use {
	const also = "mcp-servers"
	var entry map[string]json.RawMessage
	if json.Unmarshal(raw, &entry) != nil {
		return []Use{{what: what, unclassified: true, also: also}}
	}
	typ := "stdio"
	if t, ok := entry["type"]; ok && json.Unmarshal(t, &typ) != nil {
		return []Use{{what: what + ".type", unclassified: true, also: also}}
	}
	if typ == "" {
		typ = "stdio"
	}
	fields, known := mcpTransports[typ]
	if !known {
		return []Use{{what: fmt.Sprintf("%s (type %q)", what, typ), unclassified: true, also: also}}
	}
	var uses []Use
	if typ == "stdio" {
		uses = append(uses, Use{what: what + " (a command)", class: RunsPrograms, also: also, program: true, mcpCommand: true})
	}
	for _, field := range sortedKeys(entry) {
		c, known := fields[field]
		w := what + "." + field
		switch {
		case !known:
			uses = append(uses, Use{what: w, unclassified: true, also: also})
		case field == "url":
			var u string
			_ = json.Unmarshal(entry[field], &u)
			uses = append(uses, Use{what: w, value: urlHost(u), class: c, also: also, url: u})
		case typ == "stdio" && c == RunsPrograms: // the command, its args and env: the use above
		case c == Harmless:
		default:
			// A helper runs a command as an MCP server's command does.
			helper := c&RunsPrograms != 0
			uses = append(uses, Use{what: w, class: c, also: also, program: helper, mcpCommand: helper})
		}
	}
	return uses
}

// agentUses classifies one agent's fields (agentFields); the ceilings
// apply inside agents as they do to the session.
func agentUses(what string, agent map[string]json.RawMessage) []Use {
	var uses []Use
	for _, field := range sortedKeys(agent) {
		raw := agent[field]
		w := what + "." + field
		switch field {
		case "tools":
			var tools []string
			_ = json.Unmarshal(raw, &tools)
			uses = append(uses, Use{what: w, tools: tools, beyond: tools})
		case "permissionMode":
			var mode string
			_ = json.Unmarshal(raw, &mode)
			c, also := modeClass(mode)
			uses = append(uses, Use{what: w, value: mode, class: c, also: also, modes: []string{mode}})
		case "mcpServers":
			uses = append(uses, agentMCPServerUses(w, raw)...)
		default:
			c, known := agentFields[field]
			uses = append(uses, Use{what: w, class: c, unclassified: !known, program: c&RunsPrograms != 0})
		}
	}
	return uses
}

// agentMCPServerUses classifies an agent's mcpServers: a list of names
// (servers configured elsewhere) and objects of entries.
func agentMCPServerUses(what string, raw json.RawMessage) []Use {
	var entries []json.RawMessage
	if json.Unmarshal(raw, &entries) != nil {
		return []Use{{what: what, unclassified: true, also: "mcp-servers"}}
	}
	var uses []Use
	for i, e := range entries {
		var name string
		if json.Unmarshal(e, &name) == nil {
			continue // a server configured elsewhere, by name
		}
		var servers map[string]json.RawMessage
		if json.Unmarshal(e, &servers) != nil {
			uses = append(uses, Use{what: fmt.Sprintf("%s[%d]", what, i), unclassified: true, also: "mcp-servers"})
			continue
		}
		for _, name := range sortedKeys(servers) {
			uses = append(uses, mcpServerUses(fmt.Sprintf("%s[%q]", what, name), servers[name])...)
		}
	}
	return uses
}

// settingsUses classifies a settings document by settingsKeys.
func settingsUses(obj map[string]json.RawMessage) []Use {
	var uses []Use
	for _, key := range sortedKeys(obj) {
		what := "settings." + key
		if key == "permissions" {
			uses = append(uses, permissionsUses(what, obj[key])...)
			continue
		}
		c, known := settingsKeys[key]
		u := Use{what: what, class: c, also: "settings", unclassified: !known, program: c&RunsPrograms != 0}
		if key == "agent" {
			u.agent, u.badAgent = true, json.Unmarshal(obj[key], &u.value) != nil
		}
		uses = append(uses, u)
	}
	return uses
}

// permissionsUses classifies settings.permissions by permissionsKeys:
// allow rules and the default mode are checked like the session's own,
// paths like addDirs.
func permissionsUses(what string, raw json.RawMessage) []Use {
	var p map[string]json.RawMessage
	if json.Unmarshal(raw, &p) != nil {
		return []Use{{what: what, unclassified: true, also: "settings"}}
	}
	var uses []Use
	for _, key := range sortedKeys(p) {
		w := what + "." + key
		c, known := permissionsKeys[key]
		var list []string
		switch key {
		case "allow":
			_ = json.Unmarshal(p[key], &list)
			uses = append(uses, Use{what: w, class: c, also: "settings", tools: list})
		case "additionalDirectories", "blockReadsExemptPaths":
			_ = json.Unmarshal(p[key], &list)
			uses = append(uses, Use{what: w, class: c, also: "settings", paths: list})
		case "defaultMode":
			var mode string
			_ = json.Unmarshal(p[key], &mode)
			c, also := modeClass(mode)
			if also == "" {
				also = "settings"
			}
			uses = append(uses, Use{what: w, value: mode, class: c, also: also, modes: []string{mode}})
		default:
			uses = append(uses, Use{what: w, class: c, also: "settings", unclassified: !known, program: c&RunsPrograms != 0})
		}
	}
	return uses
}

// sortedKeys are m's keys in order, so that the first refusal is always
// the same.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// serverCwd is the server's working directory ("" when unknown).
func serverCwd() string {
	wd, _ := os.Getwd()
	return wd
}
