//go:build harmlessgate

package policy

// A test build (go build -tags harmlessgate) whose gate classifies
// everything as harmless and checks nothing: TestE2EKernelCeilings runs
// the attacks of a hostile caller against it, to show that the kernel's
// ceilings ([Gate.Ceiling]) refuse them on their own. Never a release
// build: the server logs at start that its gate is off.
func init() { harmlessGate = true }
