package fail

import (
	"fmt"
	"testing"
)

func TestPass(t *testing.T) { t.Log("not shown") }

func TestFail(t *testing.T) {
	fmt.Println("printed by TestFail")
	t.Error("TestFail failed")
}

func TestSkip(t *testing.T) { t.Skip("not shown") }

func TestSubs(t *testing.T) {
	t.Log("the parent's log")
	t.Run("ok", func(t *testing.T) { t.Log("not shown") })
	t.Run("bad", func(t *testing.T) {
		t.Log("the subtest's log")
		t.Run("deeper", func(t *testing.T) { t.Fatal("deeper failed") })
		t.Fatal("bad failed")
	})
	t.Run("skipped", func(t *testing.T) { t.Skip("not shown") })
}

func TestParallel1(t *testing.T) {
	t.Parallel()
	t.Error("TestParallel1 failed")
}

func TestParallel2(t *testing.T) { t.Parallel() }
