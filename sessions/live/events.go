package live

// Event is something that happened which may start a warm spare; On
// decides what each one does.
type Event uint8

const (
	ServerStarted    Event = iota // the server serves: spares for the options of a likely first session
	SessionCreated                // a create made a session: the next create is likely alike
	OneShotBegun                  // a one-shot's session was opened: its query starts at once
	CreateTookSpare               // a created session took a spare
	OneShotTookSpare              // a one-shot's (or temporary) session took a spare
	TurnEnded                     // a query's turn is over
	OneShotEnded                  // a one-shot's session ended (discarded, closed): its place is free
)

// On is the one place that decides when a warm spare starts; each event
// that may start one calls it by name. The option set of a create (and at
// the server's start, the default options) is wanted and its spare starts
// at once: the session's first query comes later. A query that starts at
// once — a one-shot's, an agent tool's — must not compete with a CLI
// starting (about 300 ms of CPU): its options are wanted, but the spares
// are filled when its turn ends (or, for a temporary session, when the
// session ends), never when the call that started it returns; so is the
// spare it took replaced (DeferRefill, ended by RefillAfterTurn). opts
// are the session's options (the zero value for events that have none),
// temporary whether the session ends after its query; an option set
// SparesConfig.Validate refuses is not wanted.
func (st *Spares[O]) On(ev Event, opts O, temporary bool) {
	switch ev {
	case ServerStarted, SessionCreated, OneShotBegun:
		if st.cfg.Validate != nil && st.cfg.Validate(&opts) != nil {
			return
		}
		if ev != OneShotBegun && !temporary {
			st.Want(opts)
			return
		}
		st.WantLater(opts)
		if ev == OneShotBegun && !temporary {
			st.DeferRefill() // a kept session has no end to fill them at: its turn's end does
		}
	case CreateTookSpare:
		go st.Fill()
	case OneShotTookSpare:
		st.DeferRefill()
	case TurnEnded:
		st.RefillAfterTurn()
	case OneShotEnded:
		st.Fill()
	}
}
