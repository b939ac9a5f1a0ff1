package agentfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/beneath"
)

// Reading files safely: a file listed as a regular file may be replaced by
// anything before it is read (a symbolic link to a named pipe or to
// /dev/zero, a named pipe itself). Files are opened without following a
// link in their last component and without blocking, their descriptor's
// metadata decides (regular files only), and they are read up to
// MaxFileBytes.

// errSymlink is an open's refusal of a symbolic link: links are not
// listed, so one found at the open appeared since.
var errSymlink = errors.New("replaced by a symbolic link since it was listed; not followed")

// errTooLarge is a file over MaxFileBytes.
var errTooLarge = fmt.Errorf("larger than %d bytes, the cap of an agent file or the operator file", MaxFileBytes)

// readCapped reads r to its end, at most limit bytes: errTooLarge when
// there is more (a file may grow after its size was read).
func readCapped(r io.Reader, limit int64) ([]byte, error) {
	data, err := beneath.ReadCapped(r, limit)
	if errors.Is(err, beneath.ErrTooLarge) {
		return nil, errTooLarge
	}
	return data, err
}

// openRegular opens p (see beneath.Open: no link followed beneath its
// directory, a regular file of one link, never waited on) and returns it
// with its metadata, read from the open descriptor; else an error saying
// what it met.
func openRegular(p beneath.Path) (*os.File, fs.FileInfo, error) {
	f, err := beneath.Open(p)
	if errors.Is(err, beneath.ErrLink) {
		return nil, nil, errSymlink
	}
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}
