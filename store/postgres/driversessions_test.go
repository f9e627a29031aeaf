package postgres

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// Two devices the session tests check drivers in at, in IMEI order.
const (
	sessionIMEI1 = "357660100000017"
	sessionIMEI2 = "357660100000025"
)

// sameSession reports whether two sessions are equal, their times compared
// as instants.
func sameSession(a, b *store.DriverSession) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	if !x.Start.Equal(y.Start) || !x.End.Equal(y.End) {
		return false
	}
	x.Start, x.End, y.Start, y.End = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return x == y
}

// sessionStarts are the starts of sessions.
func sessionStarts(ss []store.DriverSession) []time.Time {
	var out []time.Time
	for _, s := range ss {
		out = append(out, s.Start)
	}
	return out
}

// TestDriverSessionsOpenAndEnd begins, ends and replaces sessions of two
// devices and reads them back by every method of DriverSessionSet.
func TestDriverSessionsOpenAndEnd(t *testing.T) {
	t.Parallel()
	s := seedDrivers(t)
	t0 := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	// The start is kept to the millisecond.
	first := &store.DriverSession{IMEI: sessionIMEI2, OrganizationID: s.org1, DriverID: 7, Start: t0.Add(1500 * time.Microsecond),
		Method: "pin", EventID: "c1", Ownership: 3}
	other := &store.DriverSession{IMEI: sessionIMEI1, OrganizationID: s.org2, DriverID: 8, Start: t0, Method: "qr"}
	s.view(t, func(tx *tx) error {
		if cur, err := tx.DriverSessions().Current(sessionIMEI2); err != nil || cur != nil {
			t.Errorf("Current with nobody checked in = %+v, %v; want nil", cur, err)
		}
		if all, err := tx.DriverSessions().AllCurrent(); err != nil || len(all) != 0 {
			t.Errorf("AllCurrent of no session = %+v, %v", all, err)
		}
		return nil
	})
	s.update(t, func(t *tx) error {
		if err := t.DriverSessions().Begin(first); err != nil {
			return err
		}
		return t.DriverSessions().Begin(other)
	})
	kept := *first
	kept.Start = t0.Add(time.Millisecond)
	s.view(t, func(tx *tx) error {
		if cur, err := tx.DriverSessions().Current(sessionIMEI2); err != nil || !sameSession(cur, &kept) {
			t.Errorf("Current = %+v, %v; want %+v", cur, err, kept)
		}
		all, err := tx.DriverSessions().AllCurrent()
		if err != nil || len(all) != 2 || !sameSession(&all[0], other) || !sameSession(&all[1], &kept) {
			t.Errorf("AllCurrent = %+v, %v; want the sessions of %s and %s in IMEI order", all, err, sessionIMEI1, sessionIMEI2)
		}
		return nil
	})

	// A second open session of the device is refused.
	err := s.e.update(context.Background(), func(t *tx) error {
		return t.DriverSessions().Begin(&store.DriverSession{IMEI: sessionIMEI2, OrganizationID: s.org1, DriverID: 9,
			Start: t0.Add(time.Hour), Method: "pin"})
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("Begin beside an open session: %v; want ErrConflict", err)
	}

	ended := kept
	ended.End, ended.EndedBy = t0.Add(time.Hour), "checkIn"
	second := &store.DriverSession{IMEI: sessionIMEI2, OrganizationID: s.org1, DriverID: 9, Start: t0.Add(time.Hour), Method: "device", EventID: "c2"}
	s.update(t, func(t *tx) error {
		if err := t.DriverSessions().End(&ended); err != nil {
			return err
		}
		return t.DriverSessions().Begin(second)
	})
	s.view(t, func(tx *tx) error {
		if cur, err := tx.DriverSessions().Current(sessionIMEI2); err != nil || !sameSession(cur, second) {
			t.Errorf("Current after a new check-in = %+v, %v; want %+v", cur, err, second)
		}
		for _, tc := range []struct {
			at   time.Time
			want *store.DriverSession
		}{
			{t0.Add(999 * time.Microsecond), nil},
			{t0.Add(time.Millisecond), &ended},
			{t0.Add(1999 * time.Microsecond), &ended}, // the same millisecond
			{t0.Add(time.Hour - time.Millisecond), &ended},
			{t0.Add(time.Hour + 500*time.Microsecond), second},
			{t0.AddDate(1, 0, 0), second},
		} {
			if got, err := tx.DriverSessions().LastStarted(sessionIMEI2, tc.at); err != nil || !sameSession(got, tc.want) {
				t.Errorf("LastStarted(%s) = %+v, %v; want %+v", tc.at, got, err, tc.want)
			}
		}
		for _, tc := range []struct {
			until time.Time
			want  []time.Time
		}{
			{t0, nil},
			{t0.Add(time.Millisecond), []time.Time{kept.Start}},
			{t0.Add(time.Hour), []time.Time{kept.Start, second.Start}},
		} {
			got, err := tx.DriverSessions().StartedBy(sessionIMEI2, tc.until)
			if err != nil || !slices.EqualFunc(sessionStarts(got), tc.want, time.Time.Equal) {
				t.Errorf("StartedBy(%s) started at %v, %v; want %v", tc.until, sessionStarts(got), err, tc.want)
			}
		}
		all, err := tx.DriverSessions().StartedBy(sessionIMEI2, t0.AddDate(1, 0, 0))
		if err != nil || len(all) != 2 || !sameSession(&all[0], &ended) {
			t.Errorf("StartedBy = %+v, %v; want the ended session first", all, err)
		}
		return nil
	})

	// A check-in at the same millisecond replaces the session that started then.
	ended2 := *second
	ended2.End, ended2.EndedBy = t0.Add(2*time.Hour), "device"
	again := &store.DriverSession{IMEI: sessionIMEI2, OrganizationID: s.org1, DriverID: 10, Start: t0.Add(time.Hour + 300*time.Microsecond),
		Method: "qr", EventID: "c3"}
	s.update(t, func(t *tx) error {
		if err := t.DriverSessions().End(&ended2); err != nil {
			return err
		}
		return t.DriverSessions().Begin(again)
	})
	s.view(t, func(tx *tx) error {
		all, err := tx.DriverSessions().StartedBy(sessionIMEI2, t0.AddDate(1, 0, 0))
		if err != nil || len(all) != 2 || all[1].DriverID != 10 || !all[1].End.IsZero() {
			t.Errorf("StartedBy after a check-in at the same millisecond = %+v, %v; want the new session in place of the old", all, err)
		}
		return nil
	})

	// With the device's session ended, End finds none open.
	s.update(t, func(t *tx) error {
		e := *again
		e.End, e.EndedBy = t0.Add(3*time.Hour), "api"
		return t.DriverSessions().End(&e)
	})
	err = s.e.update(context.Background(), func(t *tx) error {
		e := *again
		e.End, e.EndedBy = t0.Add(4*time.Hour), "api"
		return t.DriverSessions().End(&e)
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("End with no session open: %v; want ErrNotFound", err)
	}
	s.view(t, func(tx *tx) error {
		if cur, err := tx.DriverSessions().Current(sessionIMEI2); err != nil || cur != nil {
			t.Errorf("Current after End = %+v, %v; want nil", cur, err)
		}
		all, err := tx.DriverSessions().AllCurrent()
		if err != nil || len(all) != 1 || all[0].IMEI != sessionIMEI1 {
			t.Errorf("AllCurrent = %+v, %v; want the session of %s alone", all, err, sessionIMEI1)
		}
		if got, err := tx.DriverSessions().LastStarted(sessionIMEI2, t0.AddDate(1, 0, 0)); err != nil || got == nil || got.EndedBy != "api" {
			t.Errorf("LastStarted = %+v, %v; want the session ended by the API", got, err)
		}
		return nil
	})
}

// TestDriverPinFailuresAreKeptPerDevice puts, reads and forgets the wrong
// PINs of two devices.
func TestDriverPinFailuresAreKeptPerDevice(t *testing.T) {
	t.Parallel()
	s := seedDrivers(t)
	t0 := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	times := []time.Time{t0.Add(time.Minute), t0, t0.Add(time.Second)} // as the store keeps them
	s.update(t, func(t *tx) error {
		if err := t.DriverPinFailures().Put(sessionIMEI1, times[:1]); err != nil {
			return err
		}
		if err := t.DriverPinFailures().Put(sessionIMEI1, times); err != nil {
			return err
		}
		return t.DriverPinFailures().Put(sessionIMEI2, times[2:])
	})
	s.view(t, func(tx *tx) error {
		if got, err := tx.DriverPinFailures().Get(sessionIMEI1); err != nil || !slices.EqualFunc(got, times, time.Time.Equal) {
			t.Errorf("Get = %v, %v; want %v", got, err, times)
		}
		if got, err := tx.DriverPinFailures().Get("357660100000033"); err != nil || len(got) != 0 {
			t.Errorf("Get of a device without wrong PINs = %v, %v; want none", got, err)
		}
		return nil
	})
	s.update(t, func(t *tx) error {
		if err := t.DriverPinFailures().Delete(sessionIMEI1); err != nil {
			return err
		}
		if err := t.DriverPinFailures().Delete("357660100000033"); err != nil {
			return err
		}
		return t.DriverPinFailures().Put(sessionIMEI2, nil)
	})
	s.view(t, func(tx *tx) error {
		for _, imei := range []string{sessionIMEI1, sessionIMEI2} {
			if got, err := tx.DriverPinFailures().Get(imei); err != nil || len(got) != 0 {
				t.Errorf("Get(%s) after Delete / Put of none = %v, %v; want none", imei, got, err)
			}
		}
		return nil
	})
}
