package store

import (
	"errors"
	"strings"
	"testing"
)

func TestCommonPasswordList(t *testing.T) {
	t.Parallel()
	lines := strings.Split(strings.TrimSpace(commonPasswordList), "\n")
	if len(lines) != CommonPasswordCount || len(commonPasswords()) != CommonPasswordCount {
		t.Fatalf("%d lines, %d distinct, want %d", len(lines), len(commonPasswords()), CommonPasswordCount)
	}
	for i, pw := range lines {
		if pw == "" || pw != strings.ToLower(pw) || strings.TrimSpace(pw) != pw {
			t.Fatalf("line %d is %q: the list is one lower-case password a line", i+1, pw)
		}
	}
	// The most used first, as counted: the head and the tail of the list.
	if lines[0] != "123456" || lines[1] != "password" {
		t.Fatalf("the list starts %q", lines[:2])
	}
}

func TestCheckPasswordRefusesCommonOnes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pw     string
		common bool
	}{
		{"Passw0rd", true},
		{"PASSw0RD", true},
		{"pAsSw0Rd", true},
		{"Password1", true},
		{"Qwerty123", true},
		{"Trustno1", true},
		{"Iloveyou1", true},
		{"Secret123", false},
		{"Uncommon7Lantern", false},
		{"Passw0rd!", false},
	}
	for _, tc := range tests {
		t.Run(tc.pw, func(t *testing.T) {
			if got := IsCommonPassword(tc.pw); got != tc.common {
				t.Fatalf("IsCommonPassword(%q) = %v, want %v", tc.pw, got, tc.common)
			}
			err := CheckPassword(tc.pw)
			if tc.common != errors.Is(err, ErrCommonPassword) || !tc.common && err != nil {
				t.Fatalf("CheckPassword(%q) = %v", tc.pw, err)
			}
			if tc.common && !strings.HasPrefix(err.Error(), "is too common") {
				t.Fatalf("the refusal %q does not say the password is too common", err)
			}
		})
	}
	// The other rules come first: a common password that breaks one is refused for it.
	if err := CheckPassword("password"); err == nil || errors.Is(err, ErrCommonPassword) {
		t.Fatalf("CheckPassword(password) = %v", err)
	}
}
