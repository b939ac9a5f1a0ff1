// Package claudeagent runs the Claude Code CLI (`claude`) as a long-lived
// subprocess and speaks its stream-json protocol: newline-delimited JSON
// messages both ways, plus the control protocol (initialize, interrupt,
// set_model, set_permission_mode, rewind_files, and requests from the CLI
// such as can_use_tool).
//
// A [Process] owns one CLI process and its goroutines. It knows nothing
// about the MCP protocol; [SessionOptions] carries the descriptions (struct
// tags) that the server's tool schemas are derived from, since those
// options are the CLI's. Typical use:
//
//	p, err := claudeagent.Start(ctx, claudeagent.Options{Cwd: dir})
//	defer p.Close()
//	init, err := p.Initialize(ctx, claudeagent.InitializeRequest{})
//	err = p.SendUser("hello")
//	for {
//		m, err := p.Next(ctx)
//		if err != nil { break }
//		if r, ok := m.(*claudeagent.ResultMessage); ok { … end of turn … }
//	}
package claudeagent
