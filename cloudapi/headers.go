package cloudapi

import "net/http"

// Security headers of every answer. The API answers JSON that no browser
// should render, frame, cache or sniff: tokens, ssoSecrets, invitation
// tokens and hotspot passwords travel in bodies. Media (downloads, the
// MJPEG live view) may be shown by a browser, as an image or video
// document or in an <img> element, so their policy lets such a document
// draw itself and nothing more.
const (
	apiContentPolicy   = "default-src 'none'; frame-ancestors 'none'"
	mediaContentPolicy = "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'; sandbox"
)

// withSecurityHeaders sets the security headers before the handler runs, so
// that every answer carries them, errors and timeouts included. A handler
// may still replace one it has a reason to: a media download lets the
// browser keep the file for a minute.
func withSecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		if isStream(r) {
			h.Set("Content-Security-Policy", mediaContentPolicy)
		} else {
			h.Set("Content-Security-Policy", apiContentPolicy)
		}
		next.ServeHTTP(w, r)
	})
}
