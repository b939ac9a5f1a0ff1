package claudeagent

// SyncBuffer lets the external test package (the real-CLI tests) share the
// goroutine-safe log sink.
type SyncBuffer = syncBuffer
