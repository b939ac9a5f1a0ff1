package store

import (
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// The merge: every write of an instance sharing the store merges, under
// the store's lock, with what the others wrote. Per session, a session
// whose process runs on the instance under its own claim is written as it
// is there, and the claim renewed; otherwise the side that changed since
// the instance last synced wins (both: the one used last), and the
// instance takes over the stored record when that wins. Sessions only the
// store has stay; sessions closed on the instance get tombstones; sessions
// another instance closed are reported gone. A session whose claim passed
// to another instance while its process ran on this one is reported lost
// (the instance stops that process), and the stored record wins. The
// costs spent on the instance since its last merge are added to the
// totals.

// LostBase marks, in Merge.Base, a session whose claim passed to another
// instance while its process ran on this one: its record there is stale,
// and the stored one wins until the instance claims it again.
const LostBase = "\x00lost"

// Local is one open session of the merging instance, as a record.
type Local struct {
	Entry   Entry
	Live    bool // its process runs or starts on the instance
	Running bool // its process runs on the instance
}

// Closing is a session closed on the merging instance: its tombstone.
type Closing struct {
	ID               string
	Owner            string
	ClaudeSessionIDs []string
}

// Merge is what one instance brings to a merge.
type Merge struct {
	Me       Claim         // the instance; Gen and Until are set per claim written
	Lease    time.Duration // how long a claim written now holds
	Sessions []Local       // the instance's open sessions (not temporary ones)
	// Claim is the session to claim for a start, or whose claim to
	// confirm; "" for none.
	Claim        string
	Closed       []Closing          // closed on the instance since its last merge
	SpentUSD     float64            // spent on the instance since its last merge
	UserSpentUSD map[string]float64 // likewise per owner
	Held         map[string]Held    // the instance's claims, by session id
	// Base is, per session, its record as the instance last read it from
	// the store or wrote it (see Key; LostBase: the stored record wins):
	// what tells a change made there from one made by another instance.
	Base     map[string]string
	LastSync time.Time // when the instance last merged (wall clock)
}

// Merged is what a merge decided.
type Merged struct {
	Take []Entry  // stored records that win: the instance takes them over
	Gone []string // sessions closed on another instance
	// Lost are the sessions whose claim passed to another instance while
	// their process ran on this one, with the error that says so.
	Lost        map[string]error
	ClaimClosed bool  // Merge.Claim was closed on another instance
	ClaimErr    error // why Merge.Claim may not start or go on (ErrElsewhere)
	// Claimed are the claims written, generation by session id; Holding
	// says whether there are any.
	Claimed      map[string]uint64
	Holding      bool
	Base         map[string]string  // the new Merge.Base
	SpentUSD     float64            // the totals after the merge
	UserSpentUSD map[string]float64 // likewise per owner
	Owners       map[string]string  // the open sessions after the merge: id → owner
	// Broken counts the claims of other instances that had lapsed (their
	// lease expired, or their process is gone) and that this merge
	// dropped: the leases this instance took over.
	Broken int
}

// Apply merges in into st; at is the instance's clock (monotonic reading
// included). Call it from Store.Update's change.
func (in *Merge) Apply(st *State, at time.Time) Merged {
	now := at.Round(0).UTC()
	out := Merged{Lost: map[string]error{}, Claimed: map[string]uint64{}, Base: map[string]string{}}
	out.Broken = in.prepare(st, now)
	index := map[string]int{}
	for i, e := range st.Sessions {
		index[e.SessionID] = i
	}
	for _, l := range in.Sessions {
		in.mergeOne(st, l, index, now, &out)
	}
	st.SpentUSD += in.SpentUSD
	for u, v := range in.UserSpentUSD {
		if st.UserSpentUSD == nil {
			st.UserSpentUSD = map[string]float64{}
		}
		st.UserSpentUSD[u] += v
	}
	out.SpentUSD, out.UserSpentUSD = st.SpentUSD, maps.Clone(st.UserSpentUSD)
	out.Owners = st.Owners()
	return out
}

// prepare writes the tombstones of the sessions closed on the instance,
// and drops the claims of closed sessions, expired claims and those of
// dead processes, and the records of closed sessions. It returns how many
// lapsed claims of other instances it dropped (Merged.Broken).
func (in *Merge) prepare(st *State, now time.Time) (broken int) {
	if st.Closed == nil {
		st.Closed = Tombstones{}
	}
	if st.Live == nil {
		st.Live = map[string]Claim{}
	}
	if st.ClaimGen == nil {
		st.ClaimGen = map[string]uint64{}
	}
	for _, n := range in.Closed {
		st.Closed[n.ID] = Tombstone{Closed: now, Owner: n.Owner, ClaudeSessionIDs: n.ClaudeSessionIDs}
	}
	for id, c := range st.Live {
		_, closed := st.Closed[id]
		lapsed := c.Instance != in.Me.Instance && !in.Me.Foreign(c, now)
		if closed || lapsed {
			delete(st.Live, id) // closed, expired, or of a dead process
		}
		if lapsed && !closed {
			broken++
		}
	}
	st.Sessions = slices.DeleteFunc(st.Sessions, func(e Entry) bool {
		_, ok := st.Closed[e.SessionID]
		return ok
	})
	return broken
}

// mergeOne merges one session of the instance: gone, lost, whose record
// wins, and its claim.
func (in *Merge) mergeOne(st *State, l Local, index map[string]int, now time.Time, out *Merged) {
	id := l.Entry.SessionID
	i, inFile := index[id]
	_, synced := in.Base[id]
	if st.ClosedElsewhere(id, inFile, synced, in.LastSync) {
		out.Gone = append(out.Gone, id)
		out.ClaimClosed = out.ClaimClosed || id == in.Claim
		return
	}
	c, isClaimed := st.Live[id]
	foreign := isClaimed && in.Me.Foreign(c, now)
	gen := st.ClaimGen[id]
	h := in.Held[id]
	// stale: the claim this instance got has passed on since.
	stale := h.Gen != 0 && (gen != h.Gen || (isClaimed && c.Instance != in.Me.Instance))
	starting := id == in.Claim && !l.Running
	fenced := !starting && l.Live && (foreign || stale || h.Lost != nil)
	if fenced {
		why := h.Lost
		switch {
		case why != nil:
		case foreign:
			why = takenOverError(id, c)
		default:
			why = releasedError(id)
		}
		out.Lost[id] = why
		if id == in.Claim {
			out.ClaimErr = why
		}
	}
	if !inFile {
		i = -1
	}
	runner := runsHere
	if fenced || foreign {
		runner = runsElsewhere
	}
	in.mergeEntry(st, l, i, runner, h, out)
	switch {
	case fenced:
	case starting && foreign:
		out.ClaimErr = elsewhereError(id, c)
	case l.Live && !foreign:
		g := gen
		if h.Gen == 0 || stale {
			g = gen + 1 // a new claim
		}
		st.ClaimGen[id] = g
		me := in.Me
		me.Gen, me.Until = g, now.Add(in.Lease)
		st.Live[id] = me
		out.Claimed[id] = g
		out.Holding = true
	case isClaimed && c.Instance == in.Me.Instance:
		delete(st.Live, id)
	}
}

// runner says which instance runs a session, or took it over, as a merge
// sees it.
type runner uint8

const (
	runsHere      runner = iota // this instance, or none
	runsElsewhere               // another instance runs it or took it over
)

// mergeEntry decides whose record of the session wins: the stored one at
// index i (-1: the store has none) or the instance's.
func (in *Merge) mergeEntry(st *State, l Local, i int, r runner, h Held, out *Merged) {
	id := l.Entry.SessionID
	prev, synced := in.Base[id]
	mine := Key(l.Entry)
	if i < 0 {
		st.Sessions = append(st.Sessions, l.Entry)
		out.Base[id] = mine
		return
	}
	stored := Key(st.Sessions[i])
	takeStored := false
	switch {
	case stored == mine:
	case r == runsElsewhere || prev == LostBase:
		takeStored = true // the instance that runs it, or took it over, knows best
	case l.Live && h.Gen != 0 && id != in.Claim:
		// It runs on this instance under its claim: no other instance
		// changed it meanwhile.
	case synced && mine == prev:
		takeStored = true
	case synced && stored == prev:
	default:
		takeStored = st.Sessions[i].LastUsed.After(l.Entry.LastUsed)
	}
	if takeStored {
		out.Take = append(out.Take, st.Sessions[i])
		out.Base[id] = stored
	} else {
		st.Sessions[i] = l.Entry
		out.Base[id] = mine
	}
}

// ClosedElsewhere reports whether st says that the session id, which an
// instance holds, was closed: it has a tombstone, or it is missing
// (inFile false) and its tombstone may have been dropped since the
// instance last synced it (synced) at lastSync (ClosedHorizon).
func (st *State) ClosedElsewhere(id string, inFile, synced bool, lastSync time.Time) bool {
	if _, ok := st.Closed[id]; ok {
		return true
	}
	return !inFile && synced && st.ClosedHorizon.After(lastSync)
}

// Key is an entry as JSON, to compare (see Merge.Base).
func Key(e Entry) string {
	b, _ := json.Marshal(e)
	return string(b)
}
