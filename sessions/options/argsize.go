package options

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
)

// Some options reach the CLI on its command line, as one argument each
// (--allowedTools=…, --add-dir=…), and the kernel bounds both one argument
// and the whole command line: an option too long for it would fail only at
// the process's start, with "argument list too long" and no word of which
// option or what limit. So the sizes are checked with the options' form,
// when the session is created. The options that carry text (the system
// prompts, the agents, the JSON schema) go by initialize on stdin and the
// documents (the MCP configuration, a settings object) by files
// (claudeagent.Options.Args): neither is bound by the command line.

// MaxArgBytes is the longest argument Linux passes to a program:
// MAX_ARG_STRLEN, 32 pages of 4 KiB, counts the terminating NUL.
const MaxArgBytes = 32*4096 - 1

// argLimits are a system's limits on a command line: the longest argument
// (0: none of its own), the whole (argv, and the environment when env),
// and how it counts.
type argLimits struct {
	perArg int
	total  int
	env    bool   // the environment counts toward total
	name   string // the total's name
	unit   string // what size counts: bytes or characters
	// slack covers what the check cannot know at create: the CLI's path,
	// the session id and resume flags, and with env the variables the
	// server adds (the depth, the process marker, a profile's).
	slack int
	// size is what one argument (or variable) costs of total.
	size func(arg string) int
}

// limitsFor gives goos's limits: Linux's ARG_MAX is a quarter of the stack
// limit, 2 MiB with the usual 8 MiB, each string with its NUL and a
// pointer; macOS's is 1 MiB; Windows' command line is at most 32,767
// characters, each argument quoted (a '"' escaped), the environment apart.
// Other systems are not checked.
func limitsFor(goos string) argLimits {
	switch goos {
	case "linux", "android":
		return argLimits{perArg: MaxArgBytes, total: 2 << 20, env: true, name: "ARG_MAX", unit: "bytes", slack: 16 << 10, size: withNULAndPointer}
	case "windows":
		return argLimits{total: 32767, name: "the longest command line Windows takes", unit: "characters", slack: 1 << 10, size: func(a string) int {
			return utf8.RuneCountInString(a) + strings.Count(a, `"`) + 3
		}}
	case "darwin", "ios":
		return argLimits{total: 1 << 20, env: true, name: "ARG_MAX", unit: "bytes", slack: 16 << 10, size: withNULAndPointer}
	}
	return argLimits{}
}

// withNULAndPointer is what a string costs of a Unix ARG_MAX.
func withNULAndPointer(s string) int {
	return len(s) + 1 + 8
}

// argOption names the option behind a flag of the CLI's command line, with
// what to do when it is too long.
type argOption struct{ name, advice string }

var argOptions = map[string]argOption{
	"--allowedTools":    {"allowedTools", "pass fewer rules"},
	"--disallowedTools": {"disallowedTools", "pass fewer rules"},
	"--tools":           {"tools", "pass fewer tools"},
	"--add-dir":         {"addDirs entry", "pass a shorter path"},
	"--plugin-dir":      {"plugins entry", "pass a shorter path"},
}

// ValidateArgSizes checks that each option fits in one argument of the
// CLI's command line, and the whole line, with the server's environment,
// in this system's limit.
func ValidateArgSizes(o *CreateOptions) error {
	return checkArgSizes(o, limitsFor(runtime.GOOS), os.Environ())
}

func checkArgSizes(o *CreateOptions, lim argLimits, environ []string) error {
	if lim.total == 0 {
		return nil
	}
	p := claudeagent.Options{SessionOptions: o.SessionOptions, MCPConfig: MCPConfig(o),
		StrictMCPConfig: o.StrictMCPConfig, PermissionPromptStdio: true}
	type sized struct {
		name string
		n    int
	}
	var long []sized
	total := lim.slack
	for _, a := range p.Args() {
		flag, value, _ := strings.Cut(a, "=")
		opt, ok := argOptions[flag]
		if !ok {
			opt = argOption{flag, "shorten it"}
		}
		if lim.perArg > 0 && len(a) > lim.perArg {
			return fmt.Errorf("%s is %d bytes; the claude CLI takes at most %d bytes in one argument, %d of them for %s's value: %s",
				opt.name, len(value), lim.perArg, lim.perArg-len(flag)-1, flag, opt.advice)
		}
		total += lim.size(a)
		if ok {
			long = append(long, sized{opt.name, len(value)})
		}
	}
	env := 0
	if lim.env {
		for _, kv := range environ {
			env += lim.size(kv)
		}
		for k, v := range o.Env {
			env += lim.size(k + "=" + v)
		}
	}
	if total+env <= lim.total {
		return nil
	}
	slices.SortStableFunc(long, func(a, b sized) int { return cmp.Compare(b.n, a.n) })
	var names []string
	for _, s := range long[:min(len(long), 3)] {
		names = append(names, fmt.Sprintf("%s (%d bytes)", s.name, s.n))
	}
	where, advice := "its arguments", "shorten the longest options: "+strings.Join(names, ", ")
	if lim.env {
		where = fmt.Sprintf("its arguments and the server's environment (%d %s of it)", env, lim.unit)
	}
	if len(names) == 0 {
		advice = "the server's environment leaves no room: start the server with a smaller one"
	}
	return fmt.Errorf("the options make a claude command line of about %d %s with %s; %s is %d %s: %s",
		total+env, lim.unit, where, lim.name, lim.total, lim.unit, advice)
}
