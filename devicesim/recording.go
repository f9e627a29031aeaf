package devicesim

import (
	"sort"
	"sync"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// recorder is the SD card's recording buffer: per camera, the time spans
// recorded. The last span of a recording camera is open (it ends now).
type recorder struct {
	mu    sync.Mutex
	spans map[int][]span
}

type span struct {
	start, end time.Time
	open       bool
}

// newRecorder starts every camera recording at from.
func newRecorder(cams []int, from time.Time) *recorder {
	r := &recorder{spans: map[int][]span{}}
	for _, c := range cams {
		r.spans[c] = []span{{start: from, open: true}}
	}
	return r
}

// cameras lists the cameras, in id order.
func (r *recorder) cameras() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int, 0, len(r.spans))
	for c := range r.spans {
		out = append(out, c)
	}
	sort.Ints(out)
	return out
}

// start opens a span for cam at t unless it is recording already.
func (r *recorder) start(cam int, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.spans[cam]
	if len(s) > 0 && s[len(s)-1].open {
		return
	}
	r.spans[cam] = append(s, span{start: t, open: true})
}

// stop closes cam's open span at t.
func (r *recorder) stop(cam int, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.spans[cam]
	if len(s) > 0 && s[len(s)-1].open {
		s[len(s)-1].open, s[len(s)-1].end = false, t
	}
}

// gap stops every recording camera at t and resumes it at t+d (a reboot).
func (r *recorder) gap(t time.Time, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c, s := range r.spans {
		if len(s) > 0 && s[len(s)-1].open && s[len(s)-1].start.Before(t) {
			s[len(s)-1].open, s[len(s)-1].end = false, t
			r.spans[c] = append(s, span{start: t.Add(d), open: true})
		}
	}
}

// format wipes every recording; recording cameras start again at t.
func (r *recorder) format(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c, s := range r.spans {
		rec := len(s) > 0 && s[len(s)-1].open
		r.spans[c] = nil
		if rec {
			r.spans[c] = []span{{start: t, open: true}}
		}
	}
}

// has reports whether cam had recorded t by now (open spans end now).
func (r *recorder) has(cam int, t, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.spans[cam] {
		end := s.end
		if s.open {
			end = now
		}
		if !t.Before(s.start) && !t.After(end) {
			return true
		}
	}
	return false
}

// ranges returns every camera's spans as of now, in unix seconds; spans
// that start in the future (a reboot's resume point) are left out.
func (r *recorder) ranges(now time.Time) protocol.RecordingRanges {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := protocol.RecordingRanges{Cameras: []protocol.CameraRanges{}}
	cams := make([]int, 0, len(r.spans))
	for c := range r.spans {
		cams = append(cams, c)
	}
	sort.Ints(cams)
	for _, c := range cams {
		cr := protocol.CameraRanges{CameraID: c, Ranges: [][2]int64{}}
		for _, s := range r.spans[c] {
			end := s.end
			if s.open {
				end = now
			}
			if s.start.After(now) {
				continue
			}
			cr.Ranges = append(cr.Ranges, [2]int64{s.start.Unix(), end.Unix()})
		}
		out.Cameras = append(out.Cameras, cr)
	}
	return out
}
