package storetest

import "github.com/fleetcam/fleetcam/store"

// IMEI completes body, 14 decimal digits, into the IMEI whose check digit
// store.ValidIMEI accepts: tests name devices by a number without
// computing the Luhn digit themselves.
func IMEI(body string) string {
	for d := byte('0'); d <= '9'; d++ {
		if s := body + string(d); store.ValidIMEI(s) {
			return s
		}
	}
	panic("storetest: an IMEI body is 14 decimal digits, not " + body)
}
