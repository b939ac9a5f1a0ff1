//go:build !unix

package sqlite

// othersHaveOpen cannot tell here (Windows locks files for their users: a
// store open elsewhere cannot be moved).
func othersHaveOpen(string) (bool, error) { return false, nil }
