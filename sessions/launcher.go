// The launcher is how this server starts the claude CLI: the binary, found
// once and its version read (launcher.Find), and a process started with
// the server's settings — its environment, the stages of its close,
// whether it may bypass permissions — and initialized within the start
// timeout, or a failed start explained by its exit and stderr
// (launcher.Start). The environment of a session's process is layered
// (mergeEnv), with the server's defaults for sub-agents first (subAgentEnv).

package sessions

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
)

// launchConfig is what every start shares.
type launchConfig struct {
	Path         string            // the claude binary; "" finds it on PATH
	Env          map[string]string // added to every CLI's environment
	CloseStage   time.Duration     // each stage of stopping a process
	StartTimeout time.Duration     // a start up to its initialize answer
	// Bypass reports whether a process may be started with bypassPermissions
	// allowed.
	Bypass func() bool
}

// launcher starts CLI processes. Its methods are safe for concurrent use.
type launcher struct {
	cfg launchConfig

	mu      sync.Mutex
	path    string
	version string
}

// newLauncher is a launcher of cfg.
func newLauncher(cfg launchConfig) *launcher { return &launcher{cfg: cfg} }

// Find resolves the claude binary and checks its version, once.
func (l *launcher) Find(ctx context.Context) (path, version string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.path != "" {
		return l.path, l.version, nil
	}
	path, err = claudeagent.FindCLI(l.cfg.Path)
	if err != nil {
		return "", "", err
	}
	version, err = claudeagent.CLIVersionEnv(ctx, path, l.cfg.Env)
	if err != nil {
		return "", "", err
	}
	l.path, l.version = path, version
	return path, version, nil
}

// Start starts and initializes a CLI. On failure the process is gone and
// the error carries its exit code and stderr tail when it died.
func (l *launcher) Start(ctx context.Context, opts claudeagent.Options, log *slog.Logger) (*claudeagent.Process, *claudeagent.InitializeResponse, error) {
	path, _, err := l.Find(ctx)
	if err != nil {
		return nil, nil, err
	}
	opts.Path = path
	opts.Logger = log
	opts.CloseTimeout = l.cfg.CloseStage
	opts.AllowDangerouslySkipPermissions = l.cfg.Bypass()
	opts.Env = mergeEnv(l.cfg.Env, opts.Env)
	p, err := claudeagent.Start(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, l.cfg.StartTimeout)
	defer cancel()
	resp, err := p.Initialize(ictx, claudeagent.InitializeRequest{})
	if err == nil {
		return p, resp, nil
	}
	died := false
	select {
	case <-p.Exited():
		died = true
	default:
		p.Kill()
	}
	<-p.Done()
	if exitErr := p.Wait(); died && exitErr != nil {
		return nil, nil, fmt.Errorf("starting claude: %w", exitErr)
	}
	if tail := p.StderrTail(); tail != "" {
		return nil, nil, fmt.Errorf("starting claude: %w; stderr: %s", err, tail)
	}
	return nil, nil, fmt.Errorf("starting claude: %w", err)
}

// subAgentEnv keeps a session's work inside its turns: no background
// tasks, workflows or cron jobs, whose results would come in turns the CLI
// starts by itself, after the query returned, where nobody reads them.
// (Agent sub-agents then run in the foreground and their report is part
// of the turn.) A profile or a session's env may override them.
var subAgentEnv = map[string]string{
	"CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1",
	"CLAUDE_CODE_DISABLE_WORKFLOWS":        "1",
	"CLAUDE_CODE_DISABLE_CRON":             "1",
}

// mergeEnv returns the variables of every map, later ones winning; nil
// when there are none.
func mergeEnv(maps ...map[string]string) map[string]string {
	var out map[string]string
	for _, m := range maps {
		for k, v := range m {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}
