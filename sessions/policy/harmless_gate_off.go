package policy

// harmlessGate, set only in a test build (harmless_gate.go), makes Check
// accept everything.
var harmlessGate bool

// HarmlessGate reports whether this is that test build.
func HarmlessGate() bool { return harmlessGate }
