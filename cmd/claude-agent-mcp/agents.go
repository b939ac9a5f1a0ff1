package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/agentfile"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools"
)

// agentsConfig is where the agent tools come from (--agent-sources,
// --agents-dir, --agents-file, --max-agent-tools). By default every source
// on stdio, where the caller is the person whose files they are; over
// --http only the operator's directories and file: a project's files come
// with whatever repository the server runs in, and the user's are the
// operator's own, not meant for a team.
func (c *config) agentsConfig() (agentfile.Config, error) {
	v := c.agentSources
	if v == "" {
		v = "all"
		if c.http != "" {
			v = "dirs,file"
		}
	}
	sources, err := agentfile.ParseSources(v)
	if err != nil {
		return agentfile.Config{}, fmt.Errorf("invalid --agent-sources %q: %v", v, err)
	}
	if c.maxAgentTools < 1 {
		return agentfile.Config{}, fmt.Errorf("invalid --max-agent-tools %d: use 1 or more (--agent-sources none serves no agents)", c.maxAgentTools)
	}
	if c.agentsDir != "" && !sources.Has(agentfile.SourceDirs) {
		return agentfile.Config{}, fmt.Errorf("--agents-dir is set, but --agent-sources %s leaves out dirs", v)
	}
	if c.agentsFile != "" && !sources.Has(agentfile.SourceFile) {
		return agentfile.Config{}, fmt.Errorf("--agents-file is set, but --agent-sources %s leaves out file", v)
	}
	cfg := agentfile.Config{Sources: sources, Dirs: splitList(c.agentsDir, string(os.PathListSeparator)), File: c.agentsFile, Max: c.maxAgentTools}
	if sources.Has(agentfile.SourceProject) {
		// The project is the server's working directory: hosts start their
		// MCP servers in the project.
		if cfg.Project, err = os.Getwd(); err != nil {
			return agentfile.Config{}, fmt.Errorf("finding the project's agents: %w", err)
		}
	}
	return cfg, nil
}

// newAgents returns the agent tools of cfg, or nil when no source can
// give any.
func newAgents(cfg agentfile.Config, logger *slog.Logger) *mcptools.Agents {
	s := cfg.Sources
	if !s.Has(agentfile.SourceUser) && !s.Has(agentfile.SourceProject) &&
		!(s.Has(agentfile.SourceDirs) && len(cfg.Dirs) > 0) && !(s.Has(agentfile.SourceFile) && cfg.File != "") {
		return nil
	}
	return mcptools.NewAgents(mcptools.AgentOptions{Config: cfg, Logger: logger})
}
