// Package store keeps one record per session, so that a turn writes
// only its own session's record (O(1) in the number of sessions) and no
// one has to hold every session in memory: the successor of the old
// registry file (package store/registryfile), for one machine (the embedded SQLite backend,
// package store/sqlite) and for a fleet (PostgreSQL, package
// store/postgres). Package store/backend opens either from a path
// or a postgres:// URL; package store/storetest is the one test
// suite both pass.
//
// What the Manager needs of it, as sessions/share.go and sessions/sharing
// used the registry file:
//
//   - a session's record: Get (adopt, Manager.Get), Create (a new
//     session, with the per-user and total caps and budgets counted in the
//     same transaction), Put (persist after a turn, a rename, a mode
//     switch: one record, fenced by the session's lease, with the turn's
//     cost added to the owner's and the total sums), CloseSession (a tombstone:
//     the id, the time and the lease's epoch);
//   - List and Count: the session list paged by an opaque cursor, ordered
//     by last use, filtered by owner, state and name; the per-user quota;
//   - ConversationOwner: who made a conversation, for open and closed
//     sessions (resumeSessionId's owner check);
//   - leases with fencing (the renewal, Fence): Acquire,
//     Renew, Release; every write of a claimed session checks the caller's
//     epoch in the same transaction, so a lost lease never drives a write;
//   - Spent and SpentTotal (--user-max-budget-usd, --max-total-budget-usd);
//   - the CLI transcript and the session's history, stored incrementally
//     (AppendTranscript, AppendHistory), so that an instance on another
//     machine can write the transcript into its own CLI config directory
//     before --resume, and replay the history when the transcript was lost;
//   - Watch: other instances' changes (Look/refresh today);
//   - Export and Import (the store commands; moving a registry file in).
//
// It knows records, not live sessions, processes or MCP.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/registryfile"
)

// Store keeps the records of sessions. Its methods are safe for
// concurrent use, also by several processes (instances) sharing it; each
// write is one transaction.
type Store interface {
	// Get returns the record of the open session id: ErrNotFound when
	// there is none, ErrClosed when it was closed (its tombstone is kept).
	Get(ctx context.Context, id string) (Record, error)
	// Create inserts rec, a new session: ErrExists when the id is taken
	// (open or closed), a *QuotaError when q refuses it, counted in the
	// same transaction as the insert.
	Create(ctx context.Context, rec Record, q Quota) error
	// Put replaces the record of an open session and adds spentUSD (a
	// turn's cost; rec.CostUSD is the session's own sum) to its owner's
	// and the total sums, in one transaction. While a live lease is held
	// on the session, lease must be it (the same holder and epoch): else
	// ErrFenced when lease is not zero (the caller's lease passed on),
	// else ErrElsewhere. A zero lease writes a session nobody holds.
	Put(ctx context.Context, rec Record, lease Lease, spentUSD float64) error
	// CloseSession closes the session id, fenced as Put: its record,
	// transcripts and history go; a tombstone (the id, the time, the
	// lease's epoch) stays for TombstoneAge, at most MaxTombstones of
	// them, and with it who made its conversations (ConversationOwner).
	CloseSession(ctx context.Context, id string, lease Lease) error
	// List returns a page of open sessions, the most recently used first.
	List(ctx context.Context, q Query) (Page, error)
	// Count is the number of open sessions of owner ("" counts all).
	Count(ctx context.Context, owner string) (int, error)
	// ConversationOwner reports who made the Claude conversation
	// claudeSessionID: the owner of the open or closed session that has or
	// had it; known is false when no session the store knows had it.
	ConversationOwner(ctx context.Context, claudeSessionID string) (owner string, known bool, err error)

	// Acquire takes the lease on session id for holder, for ttl: a live
	// lease of another holder refuses it with an *ElsewhereError; a lease
	// the holder has is renewed (the same epoch); otherwise the epoch
	// grows by one, and lapsed names the previous holder when its lease
	// lapsed without being released ("" when there was none, or it was
	// released): a takeover, for the metrics, unless lapsed is the
	// caller's own under another name.
	Acquire(ctx context.Context, id, holder string, ttl time.Duration) (l Lease, lapsed string, err error)
	// Renew extends the lease for ttl from now: ErrFenced when it is not
	// the session's current lease any more.
	Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// Release gives the lease up: ErrFenced when it had passed on.
	Release(ctx context.Context, l Lease) error

	// Spent is what owner's sessions have cost, closed ones included
	// (owner "": what every session has cost, as SpentTotal).
	Spent(ctx context.Context, owner string) (float64, error)
	// SpentTotal is what every session has cost.
	SpentTotal(ctx context.Context) (float64, error)

	// AppendTranscript appends c to a transcript of session c.ID, fenced
	// as Put. It is idempotent on the offset: bytes the store has already
	// are skipped; an offset past the stored length is refused (ErrGap).
	AppendTranscript(ctx context.Context, c Chunk, lease Lease) error
	// ReadTranscript returns the transcript claudeSessionID of session id
	// as stored (nil when none).
	ReadTranscript(ctx context.Context, id, claudeSessionID string) ([]byte, error)
	// AppendHistory appends entries, numbered from seq, to the history of
	// session id, fenced as Put; idempotent on seq as AppendTranscript is
	// on the offset (ErrGap past the end).
	AppendHistory(ctx context.Context, id string, seq int, entries []history.Entry, lease Lease) error
	// ReadHistory returns the session's history as stored.
	ReadHistory(ctx context.Context, id string) ([]history.Entry, error)

	// Watch reports the changes other handles (instances) make until ctx
	// ends, when the channel is closed. A Change of KindResync says that
	// changes may have been missed: look again.
	Watch(ctx context.Context) (<-chan Change, error)

	// Export writes the store as JSON Lines (see the format in jsonl.go).
	Export(ctx context.Context, w io.Writer) error
	// Import reads an Export, or a registry file (package registryfile), and
	// upserts what it holds; importing the same input twice changes
	// nothing more.
	Import(ctx context.Context, r io.Reader) (ImportStats, error)

	// Close closes the handle (not a session: see CloseSession).
	Close() error
}

// Record is the record of one open session: the session's stored fields and the
// session's state as last written.
type Record struct {
	registryfile.Entry
	State state.State `json:"state,omitempty"`
	// Temporary marks a one-shot query's session, closed once its answer
	// is collected (kept for the quotas and the costs meanwhile).
	Temporary bool `json:"temporary,omitempty"`
}

// Lease is a holder's lease on a session. Epoch grows each time the lease
// passes to a new holder (or is taken again after a release): the fencing
// token every write of the session checks.
type Lease struct {
	ID     string    `json:"sessionId"`
	Holder string    `json:"holder"`
	Epoch  int64     `json:"epoch"`
	Until  time.Time `json:"until"`
}

// IsZero reports whether l is no lease.
func (l Lease) IsZero() bool { return l.Holder == "" && l.Epoch == 0 }

// Quota caps a Create; a zero field is no cap.
type Quota struct {
	MaxSessions     int     // open sessions in all (--max-sessions)
	UserMaxSessions int     // open sessions of the record's owner (--user-max-sessions)
	UserBudgetUSD   float64 // what the owner's sessions may have cost (--user-max-budget-usd)
	TotalBudgetUSD  float64 // what every session may have cost (--max-total-budget-usd)
}

// Query selects a page of List.
type Query struct {
	Owner string        // only this owner's sessions; "" any owner
	State []state.State // only sessions in one of these states; none: any
	// Name keeps the sessions whose name (Options.Name) contains it: a
	// case-sensitive substring.
	Name string
	// Temporary keeps only one-shot queries' sessions (Record.Temporary):
	// the sweep of the ones a dead instance left. A page may then hold
	// fewer records than Limit and still have a Next.
	Temporary bool
	// Limit is the page's size: 0 is DefaultLimit, at most MaxLimit.
	Limit int
	// Cursor is Page.Next of the previous page; "" the first page.
	Cursor string
}

// Page sizes.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

// Page is one page of List. Next is the cursor of the next page ("" at
// the end). The cursor is the position after the page's last record in
// the order (last use, then id), so a session created meanwhile does not
// move the pages that follow.
type Page struct {
	Records []Record
	Next    string
}

// Chunk is bytes of a transcript at an offset.
type Chunk struct {
	ID              string // the session
	ClaudeSessionID string // the transcript's conversation
	Offset          int64
	Data            []byte
}

// Kind is what a Change did.
type Kind string

// The kinds of changes.
const (
	KindCreated Kind = "created"
	KindUpdated Kind = "updated" // a Put (appends to transcripts and history are not announced)
	KindClosed  Kind = "closed"
	KindLease   Kind = "lease" // acquired, taken over or released
	KindResync  Kind = "resync"
)

// Change is a change another instance made.
type Change struct {
	ID   string `json:"id"`
	Kind Kind   `json:"kind"`
}

// ImportStats counts what an Import read.
type ImportStats struct {
	Sessions, Tombstones, Sums int
}

// TombstoneAge is how long a closed session's tombstone is kept (as the
// registry file keeps them).
const TombstoneAge = registryfile.TombstoneAge

// MaxTombstones is how many tombstones a store keeps at most by default,
// the oldest dropped first: a tombstone is an id, a time and an epoch
// (under 100 bytes with its index), so a loop of creates and closes
// cannot grow the store without bound.
const MaxTombstones = 100_000

// Errors callers branch on.
var (
	ErrNotFound = errors.New("no such session in the store")
	ErrClosed   = errors.New("the session was closed")
	ErrExists   = errors.New("a session with this id exists already")
	ErrQuota    = errors.New("over the quota")
	// ErrElsewhere is the error for a session whose process runs on
	// another instance sharing the store.
	ErrElsewhere = errors.New("session is live on another server instance")
	// ErrFenced is the error of a write or renewal under a lease that is
	// not the session's current one.
	ErrFenced = errors.New("the lease on the session passed to another instance")
	ErrGap    = errors.New("the append starts past the stored end")
)

// QuotaError says which cap refused a Create.
type QuotaError struct {
	What  string  // "sessions", "user sessions", "user budget", "total budget"
	Limit float64 // the cap
	Have  float64 // the count or sum it met
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("over the quota: %s at %g of %g", e.What, e.Have, e.Limit)
}

func (e *QuotaError) Unwrap() error { return ErrQuota }

// ElsewhereError is the refusal of a lease another holder has.
type ElsewhereError struct {
	ID, Holder string
	Until      time.Time
}

func (e *ElsewhereError) Error() string {
	return fmt.Sprintf("%v: session %s is held by %s until %s", ErrElsewhere, e.ID, e.Holder, e.Until.Format(time.RFC3339))
}

func (e *ElsewhereError) Unwrap() error { return ErrElsewhere }

// StateDir is the directory in which the server keeps its state — the
// embedded store, the old registry file, the per-user config directories:
// $XDG_STATE_HOME/claude-agent-mcp, else ~/.local/state/claude-agent-mcp.
func StateDir() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the state directory: %w", err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "claude-agent-mcp"), nil
}
