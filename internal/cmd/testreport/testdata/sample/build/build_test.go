package build

import "testing"

func TestBuildFails(t *testing.T) { undefinedFunction() }
