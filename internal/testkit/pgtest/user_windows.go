package pgtest

import (
	"errors"
	"os"
	"os/exec"
)

var quitSignal = os.Kill

func asUser(*exec.Cmd, string) error {
	return errors.New("the PostgreSQL test cluster runs on Unix only")
}
