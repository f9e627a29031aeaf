package devicesim

import (
	"fmt"
	"strconv"
)

// LuhnDigit returns the Luhn check digit that completes body, a string of
// 14 decimal digits, into a valid IMEI.
func LuhnDigit(body string) (byte, error) {
	if len(body) != 14 {
		return 0, fmt.Errorf("devicesim: imei body %q must be 14 digits: %w", body, ErrInvalidIMEI)
	}
	sum := 0
	for i := 0; i < 14; i++ {
		c := body[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("devicesim: imei body %q must be 14 digits: %w", body, ErrInvalidIMEI)
		}
		d := int(c - '0')
		// Counting from the left, every second digit is doubled; the check
		// digit (position 15) is not, so positions 2, 4, … 14 are.
		if i%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return byte('0' + (10-sum%10)%10), nil
}

// ValidIMEI reports whether s is 15 digits whose last is the Luhn check digit,
// the rule the cloud applies to device inventories.
func ValidIMEI(s string) bool {
	if len(s) != 15 {
		return false
	}
	d, err := LuhnDigit(s[:14])
	return err == nil && d == s[14]
}

// IMEIs returns n consecutive valid IMEIs. start is either a 14-digit body
// (the first IMEI is that body plus its check digit) or a valid 15-digit IMEI.
func IMEIs(start string, n int) ([]string, error) {
	switch {
	case n < 0:
		return nil, fmt.Errorf("devicesim: imei count %d must not be negative: %w", n, ErrInvalidIMEI)
	case len(start) == 15:
		if !ValidIMEI(start) {
			return nil, fmt.Errorf("devicesim: imei %q has a wrong check digit: %w", start, ErrInvalidIMEI)
		}
		start = start[:14]
	case len(start) != 14:
		return nil, fmt.Errorf("devicesim: imei start %q must be 14 digits or a 15-digit IMEI: %w", start, ErrInvalidIMEI)
	}
	first, err := strconv.ParseUint(start, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("devicesim: imei start %q must be digits: %w", start, ErrInvalidIMEI)
	}
	const limit = 100_000_000_000_000 // 10^14: bodies have 14 digits
	if first+uint64(n) > limit {
		return nil, fmt.Errorf("devicesim: %d imeis from %s run past 14 digits: %w", n, start, ErrInvalidIMEI)
	}
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		body := fmt.Sprintf("%014d", first+uint64(i))
		d, err := LuhnDigit(body)
		if err != nil {
			return nil, err
		}
		out = append(out, body+string(d))
	}
	return out, nil
}
