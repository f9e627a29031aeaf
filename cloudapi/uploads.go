package cloudapi

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// The media service asks devices for the files of their events, outside
// the transaction that stored them: ingest wakes it after the commit, and it
// also sweeps once a minute. It reads its work from the store (files not yet
// settled), so nothing is lost across a restart:
//
//   - a new file is asked for with CmdUploadMedia and a signed upload URL
//     when the device is connected, else marked unreachable (never uploaded;
//     the caller can request the recording by timestamp instead);
//   - an unreachable file is retried on later sweeps, at most
//     store.MaxMediaAttempts times in all;
//   - a request whose upload did not arrive before its URL expired is asked
//     again, up to the same limit, then marked failed;
//   - an upload no event references (its event was never created) is dropped;
//   - blobs of deleted files are removed from the blob store.

// mediaSweepInterval is how often the media service looks for work unasked.
const mediaSweepInterval = time.Minute

// mediaAskConcurrency bounds the upload requests in flight.
const mediaAskConcurrency = 16

type mediaService struct {
	s      *Server
	kick   chan struct{}
	mu     sync.Mutex
	asking map[string]bool
}

func newMediaService(s *Server) *mediaService {
	return &mediaService{s: s, kick: make(chan struct{}, 1), asking: map[string]bool{}}
}

// wake asks the service to look for work now; it never blocks.
func (m *mediaService) wake() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// WakeMedia asks the media service to look for files to fetch now, without
// waiting for its sweep; it never blocks. The broker's notifiers call it
// after a device's event or upload report is committed (broker.Notifiers).
func (s *Server) WakeMedia() { s.mediaSvc.wake() }

// RunMedia runs the media service until ctx ends: it asks devices for the
// files of their events and deletes the blobs of deleted files.
func (s *Server) RunMedia(ctx context.Context) {
	t := time.NewTicker(mediaSweepInterval)
	defer t.Stop()
	for {
		s.SweepMedia(ctx)
		select {
		case <-ctx.Done():
			return
		case <-s.mediaSvc.kick:
		case <-t.C:
		}
	}
}

// SweepMedia does one round of the media service's work and returns when
// the upload requests it sent were answered.
func (s *Server) SweepMedia(ctx context.Context) {
	m := s.mediaSvc
	var files []store.MediaFile
	if err := s.store.View(ctx, func(tx *store.Tx) error {
		var err error
		files, err = tx.UnsettledMedia(1000)
		return err
	}); err != nil {
		s.log.Error("media: read unsettled files", "err", err)
		return
	}
	now := s.now()
	sem := make(chan struct{}, mediaAskConcurrency)
	var wg sync.WaitGroup
	for i := range files {
		f := files[i]
		ref := f.Ref()
		switch {
		case f.Refs <= 0:
			if now.Sub(f.UpdatedAt) > s.cfg.Media.UploadTTL {
				s.mediaWrite(func(tx *store.Tx) error { return tx.DropUnreferencedMedia(ref) })
			}
			continue
		case f.State == store.MediaRequested && now.Sub(f.RequestedAt) <= s.cfg.Media.UploadTTL:
			continue // the upload URL is still valid
		case f.State == store.MediaRequested && (f.FileType == store.FileADAS || f.Attempts >= store.MaxMediaAttempts):
			s.mediaWrite(func(tx *store.Tx) error {
				return tx.SetMediaState(ref, store.MediaFailed, "the device did not upload the file")
			})
			continue
		}
		if !m.claim(ref) {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; m.release(ref); wg.Done() }()
			s.askUpload(ctx, ref)
		}()
	}
	wg.Wait()
	s.emptyMediaTrash(ctx)
}

func (m *mediaService) claim(r store.MediaRef) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.asking[r.Key()] {
		return false
	}
	m.asking[r.Key()] = true
	return true
}

func (m *mediaService) release(r store.MediaRef) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.asking, r.Key())
}

// askUpload asks the device for one file and records the outcome.
func (s *Server) askUpload(ctx context.Context, ref store.MediaRef) {
	if s.commander == nil || !s.commander.Online(ref.IMEI) {
		s.mediaWrite(func(tx *store.Tx) error {
			return tx.SetMediaState(ref, store.MediaUnreachable, "the device was not connected")
		})
		return
	}
	u, exp := s.uploadURL(ref)
	args := protocol.UploadArgs{FileID: ref.FileID, CameraID: ref.CameraID, FileType: ref.FileType, URL: u, Expires: exp.Unix()}
	_, err := s.commander.Send(ctx, ref.IMEI, protocol.CmdUploadMedia, args)
	state, text := store.MediaRequested, ""
	switch {
	case err == nil:
	case errors.Is(err, ErrDeviceOffline):
		state, text = store.MediaUnreachable, "the device was not connected"
	case errors.Is(err, ErrCommandTimeout), errors.Is(err, context.DeadlineExceeded):
		text = "the device did not answer the upload request"
	case errors.Is(err, ErrDeviceUnreachable):
		text = "the device's node could not be reached"
	case ctx.Err() != nil:
		return
	default:
		state, text = store.MediaFailed, err.Error()
	}
	s.mediaWrite(func(tx *store.Tx) error { return tx.SetMediaState(ref, state, text) })
}

// commandFailed turns a device's failure to carry out a command into a
// 417 that says what failed; offline devices and timeouts keep their errors.
func commandFailed(what string, err error) error {
	if err == nil || errors.Is(err, ErrDeviceOffline) || errors.Is(err, ErrCommandTimeout) || errors.Is(err, ErrDeviceUnreachable) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	return apiErr(http.StatusExpectationFailed, nameExpectationFailed, "the device could not %s: %v", what, err)
}

// mediaWrite runs a media service write as the system. It records what
// already happened (a device's answer, deleted blobs), so it commits even
// while the sweep is being stopped.
func (s *Server) mediaWrite(fn func(tx *store.Tx) error) {
	if err := s.store.Update(context.Background(), store.Actor{Source: "system"}, fn); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Error("media: update file state", "err", err)
	}
}

// emptyMediaTrash deletes the blobs of files that are gone or replaced.
func (s *Server) emptyMediaTrash(ctx context.Context) {
	for {
		var keys []string
		s.store.View(ctx, func(tx *store.Tx) error { keys = tx.MediaTrash(500); return nil })
		if len(keys) == 0 {
			return
		}
		var done []string
		for _, k := range keys {
			if err := s.blobs.Delete(ctx, k); err != nil {
				s.log.Error("media: delete blob", "key", k, "err", err)
				continue
			}
			done = append(done, k)
		}
		if len(done) == 0 {
			return
		}
		s.mediaWrite(func(tx *store.Tx) error { return tx.ForgetTrash(done) })
		if len(done) < len(keys) {
			return
		}
	}
}
