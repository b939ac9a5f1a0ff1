//go:build !unix

package policy

import (
	"os"
	"testing"
)

// mapFile reads the file at path for the test.
func mapFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
