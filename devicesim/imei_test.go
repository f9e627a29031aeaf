package devicesim

import (
	"errors"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

func TestLuhnIMEIs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start string
		n     int
		want  []string
		err   bool
	}{
		{"known imei from body", "49015420323751", 1, []string{"490154203237518"}, false},
		{"known imei as start", "490154203237518", 2, []string{"490154203237518", "490154203237526"}, false},
		{"carry into the next ten", "35693810000009", 2, []string{"356938100000091", "356938100000109"}, false},
		{"zero count", "35693810000000", 0, []string{}, false},
		{"wrong check digit", "490154203237519", 1, nil, true},
		{"too short", "4901542032375", 1, nil, true},
		{"not digits", "4901542032375x", 1, nil, true},
		{"runs past 14 digits", "99999999999999", 2, nil, true},
		{"negative count", "35693810000000", -1, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := IMEIs(tc.start, tc.n)
			if tc.err {
				if !errors.Is(err, ErrInvalidIMEI) {
					t.Fatalf("err %v, want ErrInvalidIMEI", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
	// Every generated IMEI passes the rule the store applies, and changing
	// any one digit breaks it.
	imeis, err := IMEIs("35693810000000", 500)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range imeis {
		if !store.ValidIMEI(s) || !ValidIMEI(s) {
			t.Fatalf("%s fails the Luhn rule", s)
		}
		b := []byte(s)
		b[7] = '0' + (b[7]-'0'+1)%10
		if store.ValidIMEI(string(b)) || ValidIMEI(string(b)) {
			t.Fatalf("%s with a changed digit still passes", s)
		}
	}
}
