package fakecli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// entry is one line of a capture (see internal/cmd/record).
type entry struct {
	Dir string          `json:"dir"` // "in" (host → CLI) or "out" (CLI → host)
	Ms  int64           `json:"ms"`  // out only: ms since the previous line
	Msg json.RawMessage `json:"msg"`

	typ     string // msg.type
	subtype string // msg.subtype, or the control request's/response's subtype
	// cost is what a result line adds to total_cost_usd (the CLI reports a
	// running total per process).
	cost float64
}

// capture is one recorded scenario.
type capture struct {
	name      string
	sessionID string  // the session id the CLI used, "" if none
	entries   []entry // every line
	// turns holds, per user message the host sent, the lines that followed
	// it up to and including its result (a user message sent during a turn
	// is one of them, an "in" line).
	turns [][]entry
}

// loadCapture reads dir/name.jsonl.
func loadCapture(dir, name string) (*capture, error) {
	f, err := os.Open(filepath.Join(dir, name+".jsonl"))
	if err != nil {
		return nil, fmt.Errorf("fake claude: %w", err)
	}
	defer f.Close()
	c := &capture{name: name}
	br := bufio.NewReaderSize(f, 1<<20)
	var (
		turn     []entry
		inTurn   bool
		lastCost float64
	)
	for n := 1; ; n++ {
		line, rerr := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var e entry
			if err := json.Unmarshal(line, &e); err != nil {
				return nil, fmt.Errorf("fake claude: %s.jsonl:%d: %w", name, n, err)
			}
			var head struct {
				Type      string `json:"type"`
				Subtype   string `json:"subtype"`
				SessionID string `json:"session_id"`
				Request   struct {
					Subtype string `json:"subtype"`
				} `json:"request"`
				Response struct {
					Subtype string `json:"subtype"`
				} `json:"response"`
				TotalCost *float64 `json:"total_cost_usd"`
			}
			if err := json.Unmarshal(e.Msg, &head); err != nil {
				return nil, fmt.Errorf("fake claude: %s.jsonl:%d: msg: %w", name, n, err)
			}
			e.typ, e.subtype = head.Type, head.Subtype
			switch head.Type {
			case "control_request":
				e.subtype = head.Request.Subtype
			case "control_response":
				e.subtype = head.Response.Subtype
			case "result":
				if head.TotalCost != nil {
					e.cost = *head.TotalCost - lastCost
					lastCost = *head.TotalCost
				}
			}
			if e.Dir == "out" && c.sessionID == "" && head.SessionID != "" {
				c.sessionID = head.SessionID
			}
			c.entries = append(c.entries, e)
			switch {
			case e.Dir == "in" && e.typ == "user" && !inTurn:
				turn, inTurn = nil, true
			case inTurn:
				turn = append(turn, e)
				if e.Dir == "out" && e.typ == "result" {
					c.turns = append(c.turns, turn)
					turn, inTurn = nil, false
				}
			}
		}
		if rerr != nil {
			break
		}
	}
	return c, nil
}

// captures loads each capture once per process.
type captures struct {
	dir   string
	mu    sync.Mutex
	cache map[string]*capture
}

func (cs *captures) get(name string) (*capture, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.cache[name]; ok {
		return c, nil
	}
	c, err := loadCapture(cs.dir, name)
	if err != nil {
		return nil, err
	}
	if cs.cache == nil {
		cs.cache = map[string]*capture{}
	}
	cs.cache[name] = c
	return c, nil
}

// find returns the first entry after index from with direction dir that
// satisfies ok, and its index, or -1.
func (c *capture) find(from int, dir string, ok func(*entry) bool) (*entry, int) {
	for i := from; i < len(c.entries); i++ {
		if e := &c.entries[i]; e.Dir == dir && ok(e) {
			return e, i
		}
	}
	return nil, -1
}
