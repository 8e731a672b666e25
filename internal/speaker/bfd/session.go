package bfd

import "time"

// slowTxInterval is the floor of Desired Min TX Interval while a session
// is not Up (RFC 5880 6.8.3).
const slowTxInterval = time.Second

// pollState tracks the Poll Sequence (RFC 5880 6.5) that confirms our
// timer changes.
type pollState uint8

const (
	pollIdle pollState = iota
	// pollActive: our packets carry P; a Final confirms the values they
	// carry.
	pollActive
	// pollStale: the values changed again while polling, so a Final may
	// answer an older Poll and confirms nothing.
	pollStale
	// pollAwaitClear: a stale poll got its Final; before polling again a
	// packet with F clear must arrive (the third choice of 6.8.3).
	pollAwaitClear
)

// transition is one change of the local session state.
type transition struct {
	from, to State
	diag     Diag
}

// output is what an event asks of the session's owner: send packet, if
// any, now; report change, if any.
type output struct {
	packet *ControlPacket
	change *transition
}

// session is the state machine of one BFD session (RFC 5880 6.8). It is
// pure: the owner passes the time and the packets that were demultiplexed
// to it, calls tick when deadline comes, and sends what it answers. No
// locks, no clock, no socket, no goroutine.
//
// Intervals: we advertise desiredMinTx and requiredMinRx; the ones in
// force are txBasis (our transmit interval) and rxBasis (the peer's
// detection time), which differ from the advertised ones only while a
// change that is unsafe before the peer knows it (a longer transmit
// interval, a shorter receive interval) waits for the Final of its Poll
// (6.8.3).
type session struct {
	localDiscr uint32
	profile    Profile
	jitter     func() float64 // uniform in [0, 1)

	state       State
	localDiag   Diag
	remoteState State
	remoteDiscr uint32
	remoteDiag  Diag
	// remoteDemand is the peer's D bit. We never ask for Demand mode
	// ourselves, but must stop periodic packets when the peer does.
	remoteDemand bool
	remoteMinRx  time.Duration // Required Min RX Interval last received
	remoteMinTx  time.Duration // Desired Min TX Interval last received
	remoteMult   uint8         // Detect Mult last received

	desiredMinTx  time.Duration
	requiredMinRx time.Duration
	txBasis       time.Duration
	rxBasis       time.Duration
	poll          pollState

	lastTx        time.Time
	nextTx        time.Time     // zero: no periodic packet due
	scheduledWith time.Duration // the interval nextTx was computed from
	detectAt      time.Time     // zero: nothing heard within a detection time
	adminUntil    time.Time     // AdminDown: keep telling the peer until then
}

// newSession starts a session in Down. An active session sends its first
// packet at once.
func newSession(now time.Time, discr uint32, p Profile, jitter func() float64) *session {
	s := &session{
		localDiscr:  discr,
		profile:     p,
		jitter:      jitter,
		state:       Down,
		remoteState: Down,
		remoteMinRx: time.Microsecond, // 6.8.1: "initialized to 1"
	}
	s.retime()
	s.poll = pollIdle // nothing to confirm yet: the peer has seen no values
	s.reschedule(now)
	return s
}

// receive processes a packet demultiplexed to this session, after the
// checks Decode and the transport made (RFC 5880 6.8.6 from "Set
// bfd.RemoteDiscr" on).
func (s *session) receive(now time.Time, p ControlPacket) output {
	s.remoteDiscr = p.MyDiscriminator
	s.remoteState = p.State
	s.remoteDiag = p.Diag
	s.remoteDemand = p.Demand
	s.remoteMinRx = p.RequiredMinRxInterval
	s.remoteMinTx = p.DesiredMinTxInterval
	s.remoteMult = p.DetectMult
	switch {
	case p.Final:
		s.finalReceived()
	case s.poll == pollAwaitClear:
		s.poll = pollActive
	}
	s.detectAt = now.Add(s.detectionTime())
	var out output
	if s.state == AdminDown {
		s.reschedule(now)
		return s.flush(now, out)
	}
	if to, diag, ok := s.next(p.State); ok {
		out.change = s.enter(to, diag)
	}
	switch {
	case p.Poll:
		// Answer at once, P clear and F set (6.8.7); the answer also
		// carries any new state.
		out.packet = s.packet(true)
	case out.change != nil && s.mayTransmit():
		// A packet whose contents changed goes out between periodic
		// ones (6.8.7), so the peer learns the new state at once.
		out.packet = s.packet(false)
	}
	s.reschedule(now)
	return s.flush(now, out)
}

// next is the state transition table of RFC 5880 6.8.6 for a packet from
// a peer in state remote.
func (s *session) next(remote State) (State, Diag, bool) {
	if remote == AdminDown {
		if s.state != Down {
			return Down, DiagNeighborSignaledDown, true
		}
		return 0, 0, false
	}
	switch {
	case s.state == Down && remote == Down:
		return Init, s.localDiag, true
	case s.state == Down && remote == Init, s.state == Init && remote != Down:
		return Up, DiagNone, true
	case s.state == Up && remote == Down:
		return Down, DiagNeighborSignaledDown, true
	}
	return 0, 0, false
}

// tick handles the deadlines that have passed at now: detection time,
// the periodic packet, the end of an AdminDown.
func (s *session) tick(now time.Time) output {
	var out output
	if !s.detectAt.IsZero() && !now.Before(s.detectAt) {
		out = s.detectionExpired(now)
	}
	return s.flush(now, out)
}

// detectionExpired: a detection time passed without a packet (6.8.4). The
// peer's session state is forgotten (6.8.1, 6.8.18) and a session in Init
// or Up goes Down.
func (s *session) detectionExpired(now time.Time) output {
	var out output
	s.detectAt = time.Time{}
	s.remoteDiscr = 0
	s.remoteState = Down
	s.remoteDemand = false
	s.remoteMinRx = time.Microsecond
	s.remoteMinTx = 0
	s.remoteMult = 0
	if s.state == Init || s.state == Up {
		out.change = s.enter(Down, DiagControlDetectionTimeExpired)
		if s.mayTransmit() {
			out.packet = s.packet(false)
		}
	}
	s.reschedule(now)
	return out
}

// update applies a new profile. Timer changes go out with P set on the
// next periodic packets, never in an extra packet (6.5).
func (s *session) update(now time.Time, p Profile) output {
	s.profile = p
	s.retime()
	s.reschedule(now)
	return s.flush(now, output{})
}

// shutdown puts the session in AdminDown (6.8.16) and keeps sending that
// for the detection time the peer gives us, so it learns the session was
// stopped on purpose rather than lost; finished tells when that is over.
func (s *session) shutdown(now time.Time) output {
	var out output
	if s.state == AdminDown {
		return out
	}
	out.change = s.enter(AdminDown, DiagAdministrativelyDown)
	s.adminUntil = now.Add(time.Duration(s.profile.DetectMultiplier) * s.txInterval())
	if s.mayTransmit() {
		out.packet = s.packet(false)
	}
	s.reschedule(now)
	return s.flush(now, out)
}

// finished reports whether an AdminDown session has told the peer long
// enough and can be forgotten.
func (s *session) finished(now time.Time) bool {
	return s.state == AdminDown && !now.Before(s.adminUntil)
}

// deadline is the next time tick must run; zero when nothing is pending.
func (s *session) deadline() time.Time {
	var d time.Time
	for _, t := range []time.Time{s.nextTx, s.detectAt, s.adminEnd()} {
		if !t.IsZero() && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	return d
}

func (s *session) adminEnd() time.Time {
	if s.state != AdminDown {
		return time.Time{}
	}
	return s.adminUntil
}

// enter moves to state to for reason diag, and re-derives the timers.
func (s *session) enter(to State, diag Diag) *transition {
	t := &transition{from: s.state, to: to, diag: diag}
	s.state = to
	s.localDiag = diag
	if to == Down || to == AdminDown {
		// Nothing is held back while not Up, so the old sequence has
		// nothing left to confirm; retime starts a fresh one.
		s.poll = pollIdle
	}
	s.retime()
	return t
}

// retime derives the advertised intervals from the profile and the state
// and, when they change, starts a Poll Sequence (6.8.3). Changes that are
// safe before the peer knows them apply at once; while Up, a longer
// transmit interval or a shorter receive interval waits for the Final.
func (s *session) retime() {
	desired := s.profile.TransmitInterval
	if s.state != Up {
		desired = max(desired, slowTxInterval)
	}
	required := s.profile.ReceiveInterval
	if desired == s.desiredMinTx && required == s.requiredMinRx {
		return
	}
	up := s.state == Up
	if !up || desired < s.txBasis {
		s.txBasis = desired
	}
	if !up || required > s.rxBasis {
		s.rxBasis = required
	}
	s.desiredMinTx, s.requiredMinRx = desired, required
	switch s.poll {
	case pollIdle:
		s.poll = pollActive
	case pollActive:
		s.poll = pollStale
	}
}

// finalReceived ends our Poll Sequence, if one is running.
func (s *session) finalReceived() {
	switch s.poll {
	case pollActive:
		s.poll = pollIdle
		s.txBasis, s.rxBasis = s.desiredMinTx, s.requiredMinRx
	case pollStale:
		s.poll = pollAwaitClear
	}
}

func (s *session) polling() bool { return s.poll == pollActive || s.poll == pollStale }

// txInterval is the transmit interval before jitter (6.8.7): the slower
// of what we want and what the peer can take.
func (s *session) txInterval() time.Duration { return max(s.txBasis, s.remoteMinRx) }

// detectionTime is how long the peer may stay silent (6.8.4): its Detect
// Mult times the interval it agreed to send at.
func (s *session) detectionTime() time.Duration {
	return time.Duration(s.remoteMult) * max(s.rxBasis, s.remoteMinTx)
}

// jittered shortens iv by a random 0-25 %, or 10-25 % with a detect
// multiplier of 1 so the peer never times out between two packets (6.8.7).
func (s *session) jittered(iv time.Duration) time.Duration {
	hi := 1.0
	if s.profile.DetectMultiplier == 1 {
		hi = 0.9
	}
	return time.Duration(float64(iv) * (0.75 + (hi-0.75)*s.jitter()))
}

// mayTransmit: a passive session stays silent until it has heard the
// peer (6.8.7).
func (s *session) mayTransmit() bool {
	return !(s.profile.PassiveMode && s.remoteDiscr == 0)
}

// periodicAllowed adds the rules for periodic packets (6.8.7): the peer
// wants some, it is not in Demand mode, and AdminDown has not run its
// course.
func (s *session) periodicAllowed(now time.Time) bool {
	switch {
	case !s.mayTransmit(), s.remoteMinRx == 0:
		return false
	case s.remoteDemand && s.state == Up && s.remoteState == Up && !s.polling():
		return false
	case s.finished(now):
		return false
	}
	return true
}

// reschedule recomputes the next periodic packet after something changed
// the interval or the right to send. A changed interval counts from the
// last packet sent, so a shorter one is honoured at once (6.8.3) and a
// longer one is never undercut.
func (s *session) reschedule(now time.Time) {
	if !s.periodicAllowed(now) {
		s.nextTx = time.Time{}
		return
	}
	iv := s.txInterval()
	if !s.nextTx.IsZero() && iv == s.scheduledWith {
		return
	}
	s.scheduledWith = iv
	if s.lastTx.IsZero() {
		s.nextTx = now
		return
	}
	s.nextTx = s.lastTx.Add(s.jittered(iv))
	if s.nextTx.Before(now) {
		s.nextTx = now
	}
}

// flush adds the periodic packet when it is due and no other packet is
// going out now, and schedules the one after.
func (s *session) flush(now time.Time, out output) output {
	if out.packet == nil && !s.nextTx.IsZero() && !now.Before(s.nextTx) {
		if s.periodicAllowed(now) {
			out.packet = s.packet(false)
		} else {
			s.nextTx = time.Time{}
		}
	}
	if out.packet != nil {
		s.lastTx = now
		s.nextTx = time.Time{}
		s.reschedule(now)
	}
	return out
}

// packet is the control packet the session sends now (6.8.7).
func (s *session) packet(final bool) *ControlPacket {
	return &ControlPacket{
		Diag:                  s.localDiag,
		State:                 s.state,
		Poll:                  !final && s.polling(),
		Final:                 final,
		DetectMult:            s.profile.DetectMultiplier,
		MyDiscriminator:       s.localDiscr,
		YourDiscriminator:     s.remoteDiscr,
		DesiredMinTxInterval:  s.desiredMinTx,
		RequiredMinRxInterval: s.requiredMinRx,
		// No echo function: ask the peer to send us no echo packets.
		RequiredMinEchoRxInterval: 0,
	}
}
