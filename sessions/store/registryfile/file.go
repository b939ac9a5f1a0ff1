package registryfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The registry file that the session store (package store) replaced:
// read only, to move it into the store (the store's Import). Its default
// path is sessions.json in the server's state directory (store.StateDir),
// where a server before the store kept it.

// Parse decodes the contents of a registry file (older versions upgraded,
// closed sessions left out), to move it into the session store.
func Parse(data []byte) (Registry, error) { return parseFile(data) }

// parseFile decodes a registry file, upgrading older versions (a
// second decoding, only for them).
func parseFile(data []byte) (Registry, error) {
	var f Registry
	if err := json.Unmarshal(data, &f); err != nil {
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) || f.Version >= 3 {
			return f, err
		}
		// Version 2 tombstones are the close time alone.
		var v2 struct {
			Closed map[string]time.Time `json:"closed"`
		}
		if err := json.Unmarshal(data, &v2); err != nil {
			return f, err
		}
		f.Closed = make(Tombstones, len(v2.Closed))
		for id, at := range v2.Closed {
			f.Closed[id] = Tombstone{Closed: at}
		}
	}
	if f.Version < 2 {
		if err := upgradeEntries(data, f.Sessions); err != nil {
			return f, err
		}
	}
	f.dropClosed()
	return f, nil
}

// dropClosed leaves out the entries without an id, and closed ones.
func (f *Registry) dropClosed() {
	f.Sessions = slices.DeleteFunc(f.Sessions, func(e Entry) bool {
		_, closed := f.Closed[e.SessionID]
		return e.SessionID == "" || closed
	})
}

// upgradeEntries reads what version 1 files stored differently: the
// session's MCP servers as the --mcp-config document "MCPConfig".
func upgradeEntries(data []byte, entries []Entry) error {
	var v1 struct {
		Sessions []struct {
			Options struct {
				MCPConfig string `json:"MCPConfig"`
			} `json:"options"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(data, &v1); err != nil {
		return err
	}
	for i, e := range v1.Sessions {
		if doc := e.Options.MCPConfig; doc != "" && entries[i].Options.MCPServers == nil {
			var c struct {
				MCPServers map[string]json.RawMessage `json:"mcpServers"`
			}
			if err := json.Unmarshal([]byte(doc), &c); err != nil {
				return fmt.Errorf("session %s: reading its MCPConfig: %w", entries[i].SessionID, err)
			}
			entries[i].Options.MCPServers = c.MCPServers
		}
	}
	return nil
}
