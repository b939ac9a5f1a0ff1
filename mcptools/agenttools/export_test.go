package agenttools

// For the tests of package agenttools_test, which import mcptools (which
// imports agenttools) to serve the tools.
var AgentParams = agentParams

type VisibleTool = visibleTool
