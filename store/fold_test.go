package store_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func TestFoldCase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"Adam O'Neil-2", "adam o'neil-2"},
		{"Émile", "émile"},
		{"ÖLAF", "ölaf"},
		{"Zoë", "zoë"},
		{"ΟΔΥΣΣΕΥΣ", "οδυσσευσ"},
		{"οδυσσευς", "οδυσσευσ"}, // final sigma: the same letter ignoring case
		{"İstanbul", "İstanbul"}, // dotted capital I is no case of i
		{"µ", "μ"},               // micro sign, a case of Greek mu
		{"Straße", "straße"},
		{"\u212a", "k"}, // Kelvin sign
		{"ſ", "s"},      // long s
		{"ǅ", "ǆ"},
	} {
		if got := FoldCase(tc.in); got != tc.want {
			t.Errorf("FoldCase(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if !ContainsFold("ΟΔΥΣΣΕΥΣ van", "οδυσσευς") || !ContainsFold("Émile's truck", "ÉMILE") || ContainsFold("Zoë", "ZOE") {
		t.Error("ContainsFold does not ignore case as FoldCase does")
	}
	if CompareFold("émile", "Zoë") <= 0 || CompareFold("Émile", "émile") != 0 || CompareFold("adam", "Zed") >= 0 {
		t.Error("CompareFold does not order by the FoldCase keys")
	}
}

// TestFoldCaseIsEqualFold: for every character, FoldCase gives one key to
// all the characters strings.EqualFold takes for it, and the key is one of
// them; so two names have the same key exactly when EqualFold says so.
func TestFoldCaseIsEqualFold(t *testing.T) {
	t.Parallel()
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		key := FoldCase(string(r))
		if !strings.EqualFold(string(r), key) {
			t.Fatalf("FoldCase(%U) = %q, which strings.EqualFold does not take for it", r, key)
		}
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if FoldCase(string(f)) != key {
				t.Fatalf("FoldCase(%U) = %q but FoldCase(%U) = %q", r, key, f, FoldCase(string(f)))
			}
		}
	}
}

// foldCasePin is the SHA-256 of every character FoldCase changes and its
// key, with Go's Unicode 15.0.0 tables.
const foldCasePin = "572420aabba33cefdd9462a0810bcb373c6c93fe97caebd0671567db8c8d07f3"

// TestFoldCaseIsPinned fails when FoldCase gives a character another key
// than it did: a new Go release with new Unicode tables, or a change of the
// function. The keys stored then (PostgreSQL's first_name_folded,
// last_name_folded and name_folded) are the old ones, so the change needs
// a migration that computes them again; then update foldCasePin.
func TestFoldCaseIsPinned(t *testing.T) {
	t.Parallel()
	h := sha256.New()
	var buf []byte
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		if key, _ := utf8.DecodeRuneInString(FoldCase(string(r))); key != r {
			buf = binary.BigEndian.AppendUint32(buf[:0], uint32(r))
			buf = binary.BigEndian.AppendUint32(buf, uint32(key))
			h.Write(buf)
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != foldCasePin {
		t.Fatalf("FoldCase's keys changed (Unicode %s): pin %s, want %s; stored keys need a migration that computes them again",
			unicode.Version, got, foldCasePin)
	}
}

// TestCaseInsensitiveNames: driver names sort, and device names filter the
// device and alarm lists, ignoring case as FoldCase does, on every engine:
// names that differ in the case of a letter beyond ASCII sort together,
// ties in id order, and the keys sort by code point.
//
//	id first   last
//	1  ölaf    ΟΔΥΣΣΕΥΣ
//	2  Émile   οδυσσευς
//	3  Zoë     Adams
//	4  Ölaf    Οδυσσευσ
//	5  émile   adams
//	6  zoe     Émile
//	7  Adam    zoë
func TestCaseInsensitiveNames(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		devices := []*Device{
			{IMEI: fxIMEI(1), Name: "ΟΔΥΣΣΕΥΣ van", OrganizationID: f.org.ID, PartnerID: f.partner.ID},
			{IMEI: fxIMEI(2), Name: "Émile's truck", OrganizationID: f.org.ID, PartnerID: f.partner.ID},
			{IMEI: fxIMEI(3), Name: "zoë bus", OrganizationID: f.org.ID, PartnerID: f.partner.ID},
		}
		f.update(func(tx *Tx) error {
			for i, n := range [][2]string{
				{"ölaf", "ΟΔΥΣΣΕΥΣ"}, {"Émile", "οδυσσευς"}, {"Zoë", "Adams"}, {"Ölaf", "Οδυσσευσ"},
				{"émile", "adams"}, {"zoe", "Émile"}, {"Adam", "zoë"},
			} {
				d := &Driver{OrganizationID: f.org.ID, ThirdPartyID: "tp-" + string(rune('a'+i)), FirstName: n[0], LastName: n[1]}
				if err := tx.CreateDriver(d); err != nil {
					return err
				}
			}
			for i, d := range devices {
				if err := tx.AddDevice(d); err != nil {
					return err
				}
				at := time.Date(2026, 3, 1, 8, i, 0, 0, time.UTC)
				if _, err := tx.SimulateAlarm(d, AlarmDeviceOffline, at, ""); err != nil {
					return err
				}
			}
			return nil
		})
		for _, tc := range []struct {
			sort Sort
			want []int64
		}{
			{Sort{Key: DriverByFirstName}, []int64{7, 6, 3, 2, 5, 1, 4}},
			{Sort{Key: DriverByFirstName, Desc: true}, []int64{4, 1, 5, 2, 3, 6, 7}},
			{Sort{Key: DriverByLastName}, []int64{3, 5, 7, 6, 1, 2, 4}},
			{Sort{Key: DriverByLastName, Desc: true}, []int64{4, 2, 1, 6, 7, 5, 3}},
		} {
			f.view(func(tx *Tx) error {
				got, total, err := tx.Drivers(DriverFilter{}, tc.sort, Page{})
				if err != nil {
					return err
				}
				if ids := driverIDs(got); !slices.Equal(ids, tc.want) || total != len(tc.want) {
					t.Errorf("drivers by %+v: %v of %d, want %v", tc.sort, ids, total, tc.want)
				}
				// A page is the same slice of that order.
				page, _, err := tx.Drivers(DriverFilter{}, tc.sort, Page{Limit: 3, Offset: 2})
				if err != nil {
					return err
				}
				if ids := driverIDs(page); !slices.Equal(ids, tc.want[2:5]) {
					t.Errorf("drivers by %+v, page 3 from 2: %v, want %v", tc.sort, ids, tc.want[2:5])
				}
				return nil
			})
		}
		for _, tc := range []struct {
			name string
			want []string // IMEIs
		}{
			{"οδυσσευς", []string{devices[0].IMEI}},
			{"ΟΔΥΣΣΕΥς V", []string{devices[0].IMEI}},
			{"ÉMILE", []string{devices[1].IMEI}},
			{"Zoë", []string{devices[2].IMEI}},
			{"ZOE", nil}, // ë is no case of e
		} {
			f.view(func(tx *Tx) error {
				page, _, err := tx.Devices(DeviceFilter{OrganizationID: f.org.ID, Name: tc.name}, Page{})
				if err != nil {
					return err
				}
				var imeis []string
				for _, d := range page {
					imeis = append(imeis, d.IMEI)
				}
				if !slices.Equal(imeis, tc.want) {
					t.Errorf("devices named like %q: %v, want %v", tc.name, imeis, tc.want)
				}
				alarms, _, err := tx.Alarms(AlarmFilter{DeviceName: tc.name}, Sort{}, Page{})
				if err != nil {
					return err
				}
				imeis = nil
				for _, a := range alarms {
					imeis = append(imeis, a.IMEI)
				}
				if !slices.Equal(imeis, tc.want) {
					t.Errorf("alarms of devices named like %q: %v, want %v", tc.name, imeis, tc.want)
				}
				return nil
			})
		}
	})
}

// TestCopyFoldsNames: a bbolt store copied to PostgreSQL (fleetcam store
// copy) sorts its drivers and filters its devices by the names ignoring
// case as the source did: the copy writes the FoldCase keys PostgreSQL
// keeps with the rows.
func TestCopyFoldsNames(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(copyT0)
	src := openCopyBolt(t, filepath.Join(t.TempDir(), "fleetcam.db"), clock)
	var org *Organization
	err := src.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error {
		p, err := tx.CreatePartner("Partner")
		if err != nil {
			return err
		}
		if org, err = tx.CreateOrganization(p.ID, "Fleet one", []byte("salt")); err != nil {
			return err
		}
		for i, first := range []string{"ölaf", "Émile", "Zoë", "Ölaf", "émile"} {
			d := &Driver{OrganizationID: org.ID, ThirdPartyID: "tp-" + string(rune('a'+i)), FirstName: first, LastName: "Οδυσσευς"}
			if err := tx.CreateDriver(d); err != nil {
				return err
			}
		}
		return tx.AddDevice(&Device{IMEI: fxIMEI(1), Name: "Οδυσσευς van", OrganizationID: org.ID, PartnerID: p.ID})
	})
	if err != nil {
		t.Fatal(err)
	}
	dst := openCopyPostgres(t, clock)
	copyStore(t, src, dst)
	for _, db := range []*DB{src, dst} {
		err := db.View(t.Context(), func(tx *Tx) error {
			ds, _, err := tx.Drivers(DriverFilter{}, Sort{Key: DriverByFirstName}, Page{})
			if err != nil {
				return err
			}
			if ids := driverIDs(ds); !slices.Equal(ids, []int64{3, 2, 5, 1, 4}) {
				t.Errorf("%T: drivers by first name %v, want [3 2 5 1 4]", db.Engine(), ids)
			}
			devs, _, err := tx.Devices(DeviceFilter{OrganizationID: org.ID, Name: "ΟΔΥΣΣΕΥΣ"}, Page{})
			if err != nil {
				return err
			}
			if len(devs) != 1 {
				t.Errorf("%T: %d devices named like ΟΔΥΣΣΕΥΣ, want 1", db.Engine(), len(devs))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
