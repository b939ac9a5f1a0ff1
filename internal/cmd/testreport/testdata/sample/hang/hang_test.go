package hang

import (
	"testing"
	"time"
)

func TestOK(t *testing.T) {}

func TestHang(t *testing.T) {
	t.Log("before the hang")
	time.Sleep(time.Hour)
}
