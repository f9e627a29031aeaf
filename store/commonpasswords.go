package store

import (
	_ "embed"
	"errors"
	"strings"
	"sync"
)

// commonPasswordList is the 10,000 most used passwords, most used first,
// one a line, in lower case: the head of the password list of zxcvbn, as
// the Go module github.com/trustelem/zxcvbn v1.0.1 ships it
// (data/passwords.txt), counted from leaked passwords. MIT licence; the
// notice is in commonpasswords.LICENSE beside this file.
//
//go:embed commonpasswords.txt
var commonPasswordList string

// CommonPasswordCount is how many of the most used passwords CheckPassword refuses.
const CommonPasswordCount = 10000

// commonPasswords is commonPasswordList as a set, built on first use.
var commonPasswords = sync.OnceValue(func() map[string]struct{} {
	set := make(map[string]struct{}, CommonPasswordCount)
	for _, pw := range strings.Split(strings.TrimSpace(commonPasswordList), "\n") {
		set[pw] = struct{}{}
	}
	return set
})

// ErrCommonPassword is CheckPassword's refusal of a password that follows
// every other rule but is one of the most used.
var ErrCommonPassword = errors.New("is too common: it is one of the 10,000 most used passwords (whatever the case of its letters); choose one less predictable")

// IsCommonPassword reports whether pw is one of the most used passwords,
// whatever the case of its letters: "Passw0rd" is "passw0rd". The rules on
// letters and digits alone would let such a password through, and it is
// among the first an attacker tries.
func IsCommonPassword(pw string) bool {
	_, found := commonPasswords()[strings.ToLower(pw)]
	return found
}
