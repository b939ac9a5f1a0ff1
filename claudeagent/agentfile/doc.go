// Package agentfile finds, parses and watches Claude Code agent definitions:
// the user's agent files (<config dir>/agents, where the config dir is
// $CLAUDE_CONFIG_DIR or ~/.claude), a project's (<project>/.claude/agents),
// further directories the operator names, and an operator file (JSON or
// YAML) whose entries may also carry session options that agent files
// cannot set. It is the source of the "named sub-agents as tools" feature:
// each [Agent] it hands out has a valid, unique tool name and converts to
// the CLI's --agents and --agent options ([Agent.AgentsJSON],
// [Agent.SessionOptions]).
//
// It owns: the agent file format (YAML front matter between "---" lines,
// the body being the system prompt), the operator file format, the
// precedence between sources ([Load]), tool naming ([AssignToolNames]), the
// description cap ([CutDescription], [DescriptionBudget]) and hot reload
// ([Watcher]). Nothing it reads is fatal: a bad file or entry is skipped
// with one [Warning] naming the file and line.
//
// It must not know about MCP, sessions or the server's flags: the caller
// chooses the sources ([Sources], [ParseSources]), the names reserved for
// built-in tools, the cap on the number of agents and the description
// budget, and wires the agents into tools itself. The only goroutine it
// starts is a [Watcher]'s, which [Watcher.Close] ends.
package agentfile
