package enginetest

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// messageTests are the tests of the outbox's messages: appended with their
// facts, read after a sequence, deleted through one.
var messageTests = []test{
	{"MessagesKeepTheirFacts", testMessagesKeepTheirFacts},
	{"MessagesAfter", testMessagesAfter},
	{"MessagesDeleteThrough", testMessagesDeleteThrough},
}

// appendMessages appends msgs in one transaction, setting their sequences.
func appendMessages(t *testing.T, e store.Engine, msgs ...*store.Message) {
	t.Helper()
	write(t, e, func(r store.Records) error {
		for _, m := range msgs {
			if err := r.Messages().Append(m); err != nil {
				return err
			}
		}
		return nil
	})
}

// messagesAfter reads up to limit messages after seq.
func messagesAfter(t *testing.T, e store.Engine, seq int64, limit int) []store.Message {
	t.Helper()
	var got []store.Message
	read(t, e, func(r store.Records) (err error) { got, err = r.Messages().After(seq, limit); return err })
	return got
}

// seqList is the sequence of each message of msgs, in its order.
func seqList(msgs []store.Message) []int64 {
	return idList(msgs, func(m *store.Message) int64 { return m.Seq })
}

// messageSeqs is the sequence of each message of msgs, in its order.
func messageSeqs(msgs ...*store.Message) []int64 {
	seqs := []int64{}
	for _, m := range msgs {
		seqs = append(seqs, m.Seq)
	}
	return seqs
}

// testMessagesKeepTheirFacts appends a message of every kind of fact, and
// one with an already rendered payload and no fact, in two transactions,
// and reads each back whole, in sequence order.
func testMessagesKeepTheirFacts(t *testing.T, e store.Engine) {
	f := seedWebhooks(t, e)
	const imei = "490154203237518"
	msgs := []*store.Message{
		{Kind: store.MessageEvent, OrganizationID: f.org, PartnerID: f.partner, IMEI: imei, Time: webhookTime,
			Event: &store.EventFact{ID: 7, Type: "harshBraking", Time: webhookTime.Add(-time.Minute), Lat: 52.370216,
				Lon: 4.895168, Alt: 3.5, Speed: 12.5, Metadata: `{"g":0.4}`, Severity: 2,
				GeoFence: &store.GeoFenceFact{ID: 3, Name: "Depot", Path: "entered"},
				Driver:   &store.EventDriver{ID: 9, ThirdPartyID: "d-9", FirstName: "Ann", LastName: "Lee"}}},
		{Kind: store.MessageGPS, OrganizationID: f.org, IMEI: imei, Time: webhookTime,
			GPS: []store.GPSPoint{{Time: webhookTime, Lat: 1.5, Lon: -2.25, Alt: 10, Speed: 40, Accuracy: 4, Heading: 90},
				{Time: webhookTime.Add(time.Second), Lat: 1.75, Lon: -2.5}}},
		{Kind: store.MessageActivation, SubType: "deviceActivation", OrganizationID: f.org, IMEI: imei,
			Time: webhookTime, Activation: &store.ActivationFact{EventID: 11}},
		{Kind: store.MessageSystem, SubType: store.SystemDeviceStatus, OrganizationID: f.org2, IMEI: imei,
			Time: webhookTime, Presence: &store.PresenceFact{Status: "online", Previous: "offline"}},
		{Kind: store.MessageSystem, SubType: store.SystemPrivacyMode, OrganizationID: f.org, IMEI: imei,
			Time: webhookTime, Privacy: &store.PrivacyFact{Change: "mode", Before: "off", After: "on", InitiatedBy: 4, Pending: true}},
		{Kind: store.MessageSystem, SubType: store.SystemDeviceRemoved, OrganizationID: f.org, IMEI: imei,
			Time: webhookTime, Removed: &store.RemovedFact{Name: "Van 1"}},
		{Kind: store.MessageSystem, SubType: store.SystemAuxCameraStatus, OrganizationID: f.org, IMEI: imei,
			Time: webhookTime, AuxCamera: &store.AuxCameraFact{Status: "connected", Camera: store.AuxCamera{CameraID: 2,
				SerialNumber: "AUX-2", SSID: "cam-2", Kind: "wifi", Paired: true, Connected: true,
				PairedAt: webhookTime.Add(-time.Hour), ChangedAt: webhookTime}}},
		{Kind: store.MessageSystem, SubType: store.SystemAuxCameraPairing, OrganizationID: f.org, IMEI: imei,
			Time: webhookTime, AuxSearch: &store.AuxSearchFact{Cameras: []store.AuxCamera{{CameraID: 1, SSID: "a"},
				{CameraID: 3, SerialNumber: "AUX-3", Kind: "wired"}}}},
		// A message of an earlier version: its rendered payload and no fact.
		{Kind: store.MessageSystem, SubType: store.SystemDeviceRemoved, OrganizationID: f.org, IMEI: imei,
			Time: webhookTime, Payload: json.RawMessage(`{"name": "Alpha", "serialNumber": "490154203237518", "time": 1772366400}`)},
	}
	appendMessages(t, e, msgs[:5]...)
	appendMessages(t, e, msgs[5:]...)
	if seqs := messageSeqs(msgs...); !increasing(seqs) || seqs[0] <= 0 {
		t.Fatalf("sequences %v; want them above 0 and growing", seqs)
	}
	got := messagesAfter(t, e, 0, 0)
	if len(got) != len(msgs) {
		t.Fatalf("%d messages; want %d", len(got), len(msgs))
	}
	// The payload is the same JSON value; an engine need not keep its
	// spacing.
	for i, want := range msgs {
		have, w := got[i], *want
		if !JSONEqual(t, have.Payload, w.Payload) {
			t.Errorf("message %d payload %s; want %s", w.Seq, have.Payload, w.Payload)
		}
		have.Payload, w.Payload = nil, nil
		if !reflect.DeepEqual(have, w) {
			t.Errorf("message %d reads as\n%+v\nwant\n%+v", w.Seq, have, w)
		}
	}
}

// testMessagesAfter reads ten messages after sequences, with and without
// a limit.
func testMessagesAfter(t *testing.T, e store.Engine) {
	f := seedWebhooks(t, e)
	var msgs []*store.Message
	for i := range 10 {
		msgs = append(msgs, &store.Message{Kind: store.MessageGPS, OrganizationID: f.org, Time: webhookTime.Add(time.Duration(i) * time.Second)})
	}
	appendMessages(t, e, msgs[:6]...)
	appendMessages(t, e, msgs[6:]...)
	if seqs := messageSeqs(msgs...); !increasing(seqs) || seqs[0] <= 0 {
		t.Fatalf("sequences %v; want them above 0 and growing", seqs)
	}
	got := messagesAfter(t, e, 0, 0)
	want := make([]store.Message, 0, len(msgs))
	for _, m := range msgs {
		want = append(want, *m)
	}
	wantEqual(t, "every message", got, want)
	for _, c := range []struct {
		name  string
		after int64
		limit int
		want  []*store.Message
	}{
		{"all", 0, 0, msgs},
		{"limited", 0, 3, msgs[:3]},
		{"a limit above the count", 0, 25, msgs},
		{"after a sequence", msgs[6].Seq, 0, msgs[7:]},
		{"after a sequence, limited", msgs[2].Seq, 2, msgs[3:5]},
		{"after a sequence, exactly the rest", msgs[6].Seq, 3, msgs[7:]},
		{"between two sequences", msgs[4].Seq + (msgs[5].Seq-msgs[4].Seq)/2, 1, msgs[5:6]},
		{"after the last", msgs[9].Seq, 5, nil},
		{"after the last, all", msgs[9].Seq, 0, nil},
	} {
		if got, want := seqList(messagesAfter(t, e, c.after, c.limit)), messageSeqs(c.want...); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: After(%d, %d) = %v; want %v", c.name, c.after, c.limit, got, want)
		}
	}
}

// testMessagesDeleteThrough deletes the oldest messages in batches, with
// and without a limit, and tells whether any through the sequence are
// left; the messages above it stay, and sequences carry on after every
// message was deleted.
func testMessagesDeleteThrough(t *testing.T, e store.Engine) {
	f := seedWebhooks(t, e)
	var msgs []*store.Message
	for range 10 {
		msgs = append(msgs, &store.Message{Kind: store.MessageGPS, OrganizationID: f.org, Time: webhookTime})
	}
	appendMessages(t, e, msgs...)
	deleteThrough := func(through int64, limit int) (n int, more bool) {
		t.Helper()
		write(t, e, func(r store.Records) (err error) {
			n, more, err = r.Messages().DeleteThrough(through, limit)
			return err
		})
		return n, more
	}
	left := func(what string, want ...*store.Message) {
		t.Helper()
		if got := seqList(messagesAfter(t, e, 0, 0)); !reflect.DeepEqual(got, messageSeqs(want...)) {
			t.Errorf("%s: left %v; want %v", what, got, messageSeqs(want...))
		}
	}
	// Through the sixth, 4 at a time: 4 and more, then 2 and no more,
	// though messages above it are left.
	if n, more := deleteThrough(msgs[5].Seq, 4); n != 4 || !more {
		t.Errorf("first batch deleted %d, more %v; want 4 and more", n, more)
	}
	left("after the first batch", msgs[4:]...)
	if n, more := deleteThrough(msgs[5].Seq, 4); n != 2 || more {
		t.Errorf("second batch deleted %d, more %v; want 2 and no more", n, more)
	}
	left("after the second batch", msgs[6:]...)
	// Nothing through a sequence already deleted.
	if n, more := deleteThrough(msgs[5].Seq, 4); n != 0 || more {
		t.Errorf("deleted %d through a deleted sequence, more %v; want 0 and no more", n, more)
	}
	// Exactly limit left through the sequence: all deleted, and none more.
	if n, more := deleteThrough(msgs[7].Seq, 2); n != 2 || more {
		t.Errorf("deleted %d, more %v; want 2 and no more", n, more)
	}
	left("after deleting exactly the limit", msgs[8:]...)
	// Limit 0: every one through the sequence.
	if n, more := deleteThrough(msgs[9].Seq, 0); n != 2 || more {
		t.Errorf("deleted %d, more %v; want the last 2 and no more", n, more)
	}
	left("after deleting all")
	if n, more := deleteThrough(msgs[9].Seq, 0); n != 0 || more {
		t.Errorf("deleted %d from nothing, more %v; want 0 and no more", n, more)
	}
	// Sequences carry on above every deleted one.
	next := []*store.Message{{Kind: store.MessageGPS, OrganizationID: f.org, Time: webhookTime},
		{Kind: store.MessageGPS, OrganizationID: f.org2, Time: webhookTime}}
	appendMessages(t, e, next...)
	if seqs := messageSeqs(next...); !increasing(seqs) || seqs[0] <= msgs[9].Seq {
		t.Errorf("sequences %v after every message was deleted; want them growing above %d", seqs, msgs[9].Seq)
	}
	wantEqual(t, "the messages after every one was deleted", messagesAfter(t, e, 0, 0), []store.Message{*next[0], *next[1]})
	// A limit above the count deletes them all; no more.
	if n, more := deleteThrough(next[1].Seq, 5); n != 2 || more {
		t.Errorf("deleted %d, more %v; want 2 and no more", n, more)
	}
	left("after a limit above the count")
}
