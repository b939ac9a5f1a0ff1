package policy

// The classes of the fields of the CLI's own documents that session options
// carry: settings keys, settings.permissions keys, agent definition fields
// and MCP server entries, as CLIs 2.1.197 to 2.1.330 read them. Every field
// their schemas list (in the CLI's binary) is here: TestCLISchemaClassified
// reads the schemas of both pinned CLIs and fails on a field these tables
// lack. A field missing here is refused under a tools ceiling without Bash
// and from remote callers (see Use.unclassified).
//
// A class says what a field lets a caller do (see Class): a program run as
// the server's user, code loaded, a command or helper named, the
// environment changed, files reached beyond the session's own, questions
// skipped. What only narrows or only changes how things look is harmless.
// Where the CLI's description left doubt, the stricter class is chosen.

// settingsKeys classify the top-level keys of a settings document;
// permissions is classified by permissionsKeys.
var settingsKeys = map[string]Class{
	// What the session looks like, which model it uses, how it talks and
	// compacts: costs stay within the session's budget.
	"$schema": Harmless, "model": Harmless, "fallbackModel": Harmless, "advisorModel": Harmless,
	"modelOverrides": Harmless, "modelSettings": Harmless, "modelPicker": Harmless,
	"effortLevel": Harmless, "maxEffortLevel": Harmless, "alwaysThinkingEnabled": Harmless,
	"showThinkingSummaries": Harmless, "fastMode": Harmless, "fastModePerSessionOptIn": Harmless,
	"ultracode": Harmless, "promptCacheTtl": Harmless, "subagentPromptCacheTtl": Harmless,
	"outputStyle": Harmless, "language": Harmless, "agent": Harmless, // the agent: checkSources
	"includeCoAuthoredBy": Harmless, "includeGitInstructions": Harmless, "attribution": Harmless,
	"attributionProject": Harmless, "attributionProjectPolicy": Harmless, "prUrlTemplate": Harmless,
	"footerLinksRegexes": Harmless, "companyAnnouncements": Harmless, "respectGitignore": Harmless,
	"claudeMdExcludes": Harmless, "skillOverrides": Harmless, "skillListingMaxDescChars": Harmless,
	"skillListingBudgetFraction": Harmless, "bashOutputMaxChars": Harmless, "taskOutputMaxChars": Harmless,
	"respondToBashCommands": Harmless, "bashEditDiffEnabled": Harmless, "autoCompactEnabled": Harmless,
	"autoCompactWindow": Harmless, "autoCompactOfferAnswer": Harmless, "autoCompactRaisedForLoad": Harmless,
	"precomputeCompactionEnabled": Harmless, "precomputeArmTokens": Harmless, "idleCompaction": Harmless,
	"autoMemoryEnabled": Harmless, "autoDreamEnabled": Harmless, // the memory in the CLI's config dir
	"todoFeatureEnabled": Harmless, "fileCheckpointingEnabled": Harmless, "doneMeansMerged": Harmless,
	"totalTokensReminder": Harmless, "totalTokensReminderBudget": Harmless,
	"totalTokensReminderAfterUserTurn": Harmless, "modelProposedGoals": Harmless,
	"askUserQuestionTimeout": Harmless, "dialogExpiry": Harmless, "switchModelsOnFlag": Harmless,
	"autoContinueAtUsageLimit": Harmless, "enableWorkflows": Harmless, "workflowSizeGuideline": Harmless,
	"workflowKeywordTriggerEnabled": Harmless, "promptSuggestionEnabled": Harmless,
	"responseComparisonEnabled": Harmless, "awaySummaryEnabled": Harmless, "enableArtifact": Harmless,
	"feedbackDrafts": Harmless, "feedbackSurveyRate": Harmless, "remote": Harmless,
	"remoteMessageReceipts": Harmless, "inputNeededNotifEnabled": Harmless, "agentPushNotifEnabled": Harmless,
	"minimumVersion": Harmless, // only keeps an update from going back
	// The terminal interface, which a session over stream-json never shows.
	"theme": Harmless, "tui": Harmless, "viewMode": Harmless, "defaultView": Harmless, "editorMode": Harmless,
	"keybindingFlavor": Harmless, "vimInsertModeRemaps": Harmless, "verbose": Harmless,
	"spinnerTipsEnabled": Harmless, "spinnerVerbs": Harmless, "timeFormat": Harmless, "timeZone": Harmless,
	"prefersReducedMotion": Harmless, "syntaxHighlightingDisabled": Harmless, "maxProseWidth": Harmless,
	"terminalProgressBarEnabled": Harmless, "terminalTitleFromRename": Harmless, "autoScrollEnabled": Harmless,
	"wheelScrollAccelerationEnabled": Harmless, "showTurnDuration": Harmless, "showMessageTimestamps": Harmless,
	"showClearContextOnPlanAccept": Harmless, "emojiCompletionEnabled": Harmless,
	"clawdFileProgressEnabled": Harmless, "breakReminder": Harmless, "quietHours": Harmless,
	"preferredNotifChannel": Harmless, "voice": Harmless, "voiceEnabled": Harmless, "axScreenReader": Harmless,
	"disableDeepLinkRegistration": Harmless,
	// What narrows: switches off, deny lists, allow lists that only
	// restrict (unset allows all), pins.
	"disableAllHooks": Harmless, "disableBundledSkills": Harmless, "disableSkillShellExecution": Harmless,
	"disableWorkflows": Harmless, "disabledMcpjsonServers": Harmless, "deniedMcpServers": Harmless,
	"disableAutoMode": Harmless, "disableArtifact": Harmless, "disableAgentView": Harmless,
	"disableRemoteControl": Harmless, "disableReplyCheck": Harmless, "disableClaudeAiConnectors": Harmless,
	"disableDirectMcpSkills": Harmless, "disableSideloadFlags": Harmless, "disableWindowsBashCommandSplit": Harmless,
	"strictPluginOnlyCustomization": Harmless, "strictKnownMarketplaces": Harmless, "allowedMarketplaces": Harmless,
	"blockedMarketplaces": Harmless, "allowManagedHooksOnly": Harmless, "allowManagedPermissionRulesOnly": Harmless,
	"allowManagedMcpServersOnly": Harmless, "allowedMcpServers": Harmless, "allowedChannelPlugins": Harmless,
	"availableModels": Harmless, "availableModelsMatch": Harmless, "enforceAvailableModels": Harmless,
	"deniedModels": Harmless, "allowedProviders": Harmless, "forceLoginMethod": Harmless,
	"forceLoginOrgUUID": Harmless, "requiredMinimumVersion": Harmless, "requiredMaximumVersion": Harmless,
	"forceRemoteSettingsRefresh": Harmless, "syncClaudeAiSkills": Harmless, "syncClaudeAiPlugins": Harmless, // only false is honoured
	// Read from managed settings only, and harmless were they read
	// elsewhere: how managed sources compose, what the login or the
	// desktop app shows.
	"parentSettingsBehavior": Harmless, "managedSourcesBehavior": Harmless, "wslInheritsWindowsSettings": Harmless,
	"desktopMcpServersListScope": Harmless, "pluginTrustMessage": Harmless, "pluginSuggestionMarketplaces": Harmless,
	"forceLoginGatewayUrl": Harmless, "gatewayInternalNetworks": Harmless, "channelsEnabled": Harmless,
	"allowAllClaudeAiMcps":        Harmless,
	"disableCommandPluginSources": Harmless, // plugins are runs-programs anyway
	// What starts programs as the server's user: helpers, commands, status
	// lines, hooks, a shell, ssh, a spell checker, tmux, a daemon, an
	// OAuth login (a browser, a callback server), an update of the CLI.
	"hooks": RunsPrograms, "statusLine": RunsPrograms, "subagentStatusLine": RunsPrograms,
	"apiKeyHelper": RunsPrograms, "proxyAuthHelper": RunsPrograms, "awsCredentialExport": RunsPrograms,
	"awsAuthRefresh": RunsPrograms, "gcpAuthRefresh": RunsPrograms, "processWrapper": RunsPrograms,
	"policyHelper": RunsPrograms, "policyHelpers": RunsPrograms, "otelHeadersHelper": RunsPrograms,
	"fileSuggestion": RunsPrograms, "defaultShell": RunsPrograms, "sshConfigs": RunsPrograms | ReadsFiles,
	"sshHostCommands": RunsPrograms, "spellcheck": RunsPrograms, "teammateMode": RunsPrograms,
	"daemonColdStart": RunsPrograms, "xaaIdp": RunsPrograms, "autoUpdatesChannel": RunsPrograms,
	"allowClaudeInChromeWithManagedMcp": RunsPrograms, // managed only; starts the Chrome MCP server
	"env":                               RunsPrograms, // NODE_OPTIONS, LD_PRELOAD, a PATH of one's own
	// What loads code: plugins, marketplaces, their configuration (spliced
	// into their servers' commands), MCP servers the session did not name.
	"enabledPlugins": RunsPrograms, "prependPlugins": RunsPrograms, "appendPlugins": RunsPrograms,
	"extraKnownMarketplaces": RunsPrograms, "additionalMarketplaces": RunsPrograms, "pluginConfigs": RunsPrograms,
	"enableAllProjectMcpServers": RunsPrograms, "enabledMcpjsonServers": RunsPrograms,
	"managedMcpServers": RunsPrograms, // managed only; servers not classified entry by entry
	// What lets the session act without asking, or others act in it: the
	// bypass and auto modes' prompts and rules, the sandbox, hooks' reach,
	// checks skipped, remote control and other sessions' messages, the
	// prices the budget is counted in.
	"skipDangerousModePermissionPrompt": WidensPermissions, "skipAutoPermissionPrompt": WidensPermissions,
	"useAutoModeDuringPlan": WidensPermissions, "autoMode": WidensPermissions,
	"sandbox":             WidensPermissions | ReadsFiles, // its filesystem and network allowances
	"allowedHttpHookUrls": WidensPermissions, "httpHookAllowedEnvVars": WidensPermissions,
	"skipWebFetchPreflight": WidensPermissions, "skipWorkflowUsageWarning": WidensPermissions,
	"remoteControl": WidensPermissions, "remoteControlAtStartup": WidensPermissions, "remoteTools": WidensPermissions,
	"crossSessionInbound": WidensPermissions, "isolatePeerMachines": WidensPermissions,
	"autoUploadSessions":                    WidensPermissions, // the session mirrored to the operator's claude.ai
	"allowNestedModelAccessUnderForceLogin": WidensPermissions,
	"modelPricing":                          WidensPermissions, // a multiplier would shrink the cost --max-session-budget-usd counts
	// What reaches files beyond the session's: directories of its own
	// choosing, a file of tips, worktrees with links into the repository,
	// the retention of every session's transcripts in the config dir.
	"additionalDirectoryConfigRoots": ReadsFiles, "autoMemoryDirectory": ReadsFiles,
	"plansDirectory": ReadsFiles, "claudeMd": ReadsFiles, "spinnerTipsOverride": ReadsFiles,
	"worktree": ReadsFiles, "cleanupPeriodDays": ReadsFiles, "desktopSessionCleanupPeriodDays": ReadsFiles,
	// Classified by its own keys.
	"permissions": Harmless,
}

// permissionsKeys classify the keys of settings.permissions; allow,
// defaultMode, additionalDirectories and blockReadsExemptPaths are checked
// further (permissionsUses): their tools, mode and paths.
var permissionsKeys = map[string]Class{
	"allow":                 WidensPermissions,
	"defaultMode":           Harmless, // as the mode: modeClass
	"additionalDirectories": ReadsFiles,
	"blockReadsExemptPaths": ReadsFiles, // lets reads through a block of one's own only, but names paths
	// What narrows.
	"deny": Harmless, "ask": Harmless, "disableBypassPermissionsMode": Harmless, "disableAutoMode": Harmless,
	"denyInsteadOfPrompting": Harmless, "blockReadsOutsideWorkingDirectories": Harmless,
	"blockFileToolReadsOutsideWorkingDirectories": Harmless, "blockWritesOutsideWorkingDirectories": Harmless,
	"workingDirectoriesAsGiven": Harmless, "workingDirectoriesExclude": Harmless,
}

// agentFields classify the fields of an agent definition (--agents); tools,
// permissionMode and mcpServers are checked further (agentUses).
var agentFields = map[string]Class{
	"description": Harmless, "prompt": Harmless, "model": Harmless, "effort": Harmless,
	"maxTurns": Harmless, "autoCompactWindow": Harmless, "initialPrompt": Harmless,
	"criticalSystemReminder_EXPERIMENTAL": Harmless, "omitClaudeMd": Harmless, "background": Harmless,
	"color": Harmless, "disallowedTools": Harmless, "observerMessage": Harmless,
	"observeSubagents": Harmless, "observeToolResults": Harmless,
	"skills":         Harmless, // preloads skills the session has anyway
	"tools":          Harmless, // within the session's: agentUses
	"permissionMode": Harmless, // as the mode: modeClass
	"mcpServers":     Harmless, // entry by entry: mcpServerUses
	"hooks":          RunsPrograms,
	"observer":       RunsPrograms, // another agent run beside it: one the CLI may find by itself
	"memory":         ReadsFiles,   // the agent's memory directory, read and written
	"isolation":      ReadsFiles,   // a worktree of its own
}

// mcpStdioFields classify the fields of an MCP server entry that runs a
// command (type absent or "stdio").
var mcpStdioFields = map[string]Class{
	"type": Harmless, "command": RunsPrograms, "args": RunsPrograms, "env": RunsPrograms,
	"timeout": Harmless, "alwaysLoad": Harmless, "bareElicitationCapability": Harmless,
	"role": Harmless, // a coordinator's address for the user
}

// mcpHTTPFields classify the fields of an MCP server entry of type http,
// streamable-http or sse (the CLI's schemas of the two have the same
// fields). url is checked further: an internal address (InternalURLs).
var mcpHTTPFields = map[string]Class{
	"type": Harmless, "url": Harmless, "headers": Harmless, "timeout": Harmless,
	"request_timeout_ms": Harmless, "alwaysLoad": Harmless, "displayName": Harmless,
	"bareElicitationCapability": Harmless, "discoveryCache": Harmless, "role": Harmless,
	"orgMaxPermission": Harmless, // a cap on its tools' permission; "allow" is dropped
	"headersHelper":    RunsPrograms,
	"oauth":            RunsPrograms,      // a login: a browser, a callback server
	"tools":            WidensPermissions, // permission_policy always_allow
	"toolPermissions":  WidensPermissions,
}

// mcpWSFields classify the fields of an MCP server entry of type ws.
var mcpWSFields = map[string]Class{
	"type": Harmless, "url": Harmless, "headers": Harmless, "timeout": Harmless, "alwaysLoad": Harmless,
	"bareElicitationCapability": Harmless, "role": Harmless,
	"headersHelper": RunsPrograms,
}

// mcpTransports are the MCP server entries a caller may give, by type; a
// type not here (sdk, sse-ide, ws-ide, claudeai-proxy, a new one) is
// refused as unclassified.
var mcpTransports = map[string]map[string]Class{
	"stdio": mcpStdioFields,
	"sse":   mcpHTTPFields, "http": mcpHTTPFields, "streamable-http": mcpHTTPFields,
	"ws": mcpWSFields,
}
