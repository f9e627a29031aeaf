package cloudapi

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/blob"
	"github.com/gin-gonic/gin"
)

// Media moves between devices, fleetcam and callers over plain HTTP behind
// short-lived signed URLs: a device PUTs a file to the upload URL a command
// carries; a caller gets a download URL from GET /devices/{imei}/event-file-link.
// A signature is an HMAC (with a key derived from the server key) of the
// URL path and its expiry, so a URL cannot be widened or extended. Media
// routes live under /v2/media/, which streams instead of buffering and is
// not bound by the API call timeout or body limit.

// MediaLinker hands out links that read a blob directly from the store
// that keeps it (a presigned GET of an S3 object), valid for ttl, answered
// with contentType and as filename.
type MediaLinker interface {
	PresignGet(ctx context.Context, key string, ttl time.Duration, contentType, filename string) (*url.URL, error)
}

// Limits of media uploads.
const (
	maxUploadBytes = 1 << 30
	maxFrameBytes  = 4 << 20
)

// deriveMediaKey derives the media signing key from the server key.
func deriveMediaKey(key []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("fleetcam media links\x00"))
	return m.Sum(nil)
}

func (s *Server) mediaSignature(path string, exp int64) string {
	m := hmac.New(sha256.New, s.mediaKey)
	m.Write([]byte(path + "\n" + strconv.FormatInt(exp, 10)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// publicURL is how devices and callers reach fleetcam: the configured
// publicURL, else the HTTP address on the loopback interface.
func (s *Server) publicURL() string {
	if s.cfg.PublicURL != "" {
		return strings.TrimRight(s.cfg.PublicURL, "/")
	}
	host, port, err := net.SplitHostPort(s.cfg.HTTP.Addr)
	if err != nil {
		return "http://127.0.0.1:8080"
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// signedURL returns the absolute URL of path signed until now+ttl.
func (s *Server) signedURL(path string, ttl time.Duration) (string, time.Time) {
	return s.signedClipURL(path, ttl, 0)
}

// clipParam is the query parameter of a virtual event's clip upload URL
// that numbers its request (store.MediaUpload.ClipRequest); the signature
// covers it with the path.
const clipParam = "clip"

// signedClipURL is signedURL for the upload of the clip of virtual-event
// request clip (0: none).
func (s *Server) signedClipURL(path string, ttl time.Duration, clip int64) (string, time.Time) {
	exp := s.now().Add(ttl).Truncate(time.Second)
	q := url.Values{"exp": {strconv.FormatInt(exp.Unix(), 10)}}
	signed := path
	if clip != 0 {
		q.Set(clipParam, strconv.FormatInt(clip, 10))
		signed += "?" + clipParam + "=" + q.Get(clipParam)
	}
	q.Set("sig", s.mediaSignature(signed, exp.Unix()))
	return s.publicURL() + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode(), exp
}

// checkSignature verifies the exp and sig query parameters of a media URL.
func (s *Server) checkSignature(c *gin.Context) error {
	exp, err := strconv.ParseInt(c.Query("exp"), 10, 64)
	if err != nil {
		return forbidden("the media URL must carry exp and sig; request a new link")
	}
	signed := c.Request.URL.Path
	if clip, given := c.GetQuery(clipParam); given {
		signed += "?" + clipParam + "=" + clip
	}
	want := s.mediaSignature(signed, exp)
	if !hmac.Equal([]byte(want), []byte(c.Query("sig"))) {
		return forbidden("the media URL signature is not valid; request a new link")
	}
	if s.now().Unix() > exp {
		return forbidden("the media URL expired at %s; request a new link", isoTime(time.Unix(exp, 0)))
	}
	return nil
}

// mediaPath is the path of a file below the upload or files route.
func mediaPath(kind string, r store.MediaRef) string {
	return "/v2/media/" + kind + "/" + r.IMEI + "/" + r.FileType + "/" + strconv.Itoa(r.CameraID) + "/" + r.FileID
}

// uploadURL is where the device PUTs the file r, valid cfg.Media.UploadTTL.
func (s *Server) uploadURL(r store.MediaRef) (string, time.Time) {
	return s.signedURL(mediaPath("upload", r), s.cfg.Media.UploadTTL)
}

// mediaRefParam reads the file named by the path of a media route.
func mediaRefParam(c *gin.Context) (store.MediaRef, error) {
	r := store.MediaRef{IMEI: c.Param("imei"), FileType: c.Param("fileType"), FileID: c.Param("fileId")}
	cam, err := strconv.Atoi(c.Param("cameraId"))
	r.CameraID = cam
	switch {
	case err != nil || !store.ValidCameraID(cam):
		return r, notFound("camera " + c.Param("cameraId"))
	case r.FileType != store.FileVideo && r.FileType != store.FileSnapshot && r.FileType != store.FileADAS:
		return r, notFound("file type " + r.FileType)
	case !store.ValidFileID(r.FileID):
		return r, notFound("file " + r.FileID)
	}
	return r, nil
}

// uploadMedia handles PUT /v2/media/upload/{imei}/{fileType}/{cameraId}/{fileId}:
// a device uploads a file's bytes to the signed URL it was given. A file is
// written once: another upload to the same URL is 409 and the stored bytes
// stay (each upload writes its own blob, and the store records only the
// first, so two uploads at once cannot mix either). The clip of a later
// virtual-event request for the same second (its URL's clip parameter)
// replaces the file instead.
func (s *Server) uploadMedia(c *gin.Context) error {
	if err := s.checkSignature(c); err != nil {
		return err
	}
	ref, err := mediaRefParam(c)
	if err != nil {
		return err
	}
	var clip int64
	if v, given := c.GetQuery(clipParam); given {
		if clip, err = strconv.ParseInt(v, 10, 64); err != nil || clip <= 0 {
			return badField(clipParam, "must be a positive integer")
		}
	}
	var dev *store.Device
	err = s.view(c, func(tx *store.Tx) error {
		if dev, err = tx.Device(ref.IMEI); err != nil {
			return err
		}
		// Checked again when the upload is recorded, in the same
		// transaction; this spares reading the bytes of a refused upload.
		if m, err := tx.MediaFile(ref); err == nil {
			return m.Replaceable(clip)
		}
		return nil
	})
	if err != nil {
		return err
	}
	body := bufio.NewReader(http.MaxBytesReader(c.Writer, c.Request.Body, maxUploadBytes))
	ctype, err := uploadContentType(ref.FileType, c.ContentType(), body)
	if err != nil {
		return err
	}
	key := blobKey(ref)
	n, err := s.blobs.Put(c.Request.Context(), key, body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apiErr(http.StatusRequestEntityTooLarge, nameTooLarge, "a media file may be at most %d bytes", maxUploadBytes)
		}
		return err
	}
	actor := store.Actor{Source: "device", OrganizationID: dev.OrganizationID, PartnerID: dev.PartnerID}
	err = s.store.Update(c.Request.Context(), actor, func(tx *store.Tx) error {
		_, err := tx.CompleteUpload(store.MediaUpload{Ref: ref, Blob: key, Size: n, ContentType: ctype, ClipRequest: clip})
		tx.OnCommit(s.mediaSvc.wake)
		return err
	})
	if err != nil {
		s.blobs.Delete(c.Request.Context(), key)
		return err
	}
	return ok(c, gin.H{"fileId": ref.FileID, "fileType": ref.FileType, "cameraId": ref.CameraID, "size": n})
}

func defaultContentType(fileType string) string {
	if fileType == store.FileVideo {
		return "video/mp4"
	}
	return "image/jpeg"
}

// uploadContentType checks that an upload is what its file type needs, an
// MP4 video (its first box is ftyp) or a JPEG image, by the declared
// Content-Type and the first bytes of body, and returns the type the file
// is served with. Files stored before this check keep the type they were
// uploaded with.
func uploadContentType(fileType, declared string, body *bufio.Reader) (string, error) {
	want := defaultContentType(fileType)
	if declared != "" && declared != "application/octet-stream" && declared != want {
		return "", badField("Content-Type", fmt.Sprintf("must be %s for a %s, not %s", want, fileType, declared))
	}
	head, _ := body.Peek(12)
	if want == "video/mp4" && (len(head) < 12 || string(head[4:8]) != "ftyp") {
		return "", badRequest("a video must be an MP4 file (H.264), starting with its ftyp box")
	}
	if want == "image/jpeg" && (len(head) < 3 || head[0] != 0xff || head[1] != 0xd8 || head[2] != 0xff) {
		return "", badRequest("a %s must be a JPEG image", fileType)
	}
	return want, nil
}

// blobKey is a fresh blob key for an upload of r: every upload gets its
// own, so replacing a file never races with deleting the old bytes.
func blobKey(r store.MediaRef) string {
	var b [8]byte
	rand.Read(b[:])
	return r.IMEI + "/" + r.FileType + "/" + strconv.Itoa(r.CameraID) + "/" + r.FileID + "/" + hex.EncodeToString(b[:])
}

// downloadMedia handles GET /v2/media/files/{imei}/{fileType}/{cameraId}/{fileId}:
// the signed link of event-file-link. It supports range requests. With a
// MediaLinker it answers with a redirect to a direct link of the blob that
// expires with the signed link, so the bytes (and the ranges) come from
// the store.
func (s *Server) downloadMedia(c *gin.Context) error {
	if err := s.checkSignature(c); err != nil {
		return err
	}
	ref, err := mediaRefParam(c)
	if err != nil {
		return err
	}
	var m *store.MediaFile
	if err := s.view(c, func(tx *store.Tx) error { m, err = tx.MediaFile(ref); return err }); err != nil || m.State != store.MediaUploaded {
		return notFound("media file " + ref.FileID)
	}
	name := ref.FileID + extension(m.ContentType)
	if s.links != nil {
		exp, _ := strconv.ParseInt(c.Query("exp"), 10, 64) // checked by checkSignature
		u, err := s.links.PresignGet(c.Request.Context(), m.Blob, time.Unix(exp, 0).Sub(s.now()), m.ContentType, name)
		if err != nil {
			return err
		}
		c.Header("Cache-Control", "private, no-store")
		c.Redirect(http.StatusTemporaryRedirect, u.String())
		return nil
	}
	obj, err := s.blobs.Get(c.Request.Context(), m.Blob)
	if errors.Is(err, blob.ErrNotFound) {
		return notFound("media file " + ref.FileID)
	}
	if err != nil {
		return err
	}
	defer obj.Close()
	c.Header("Content-Type", m.ContentType)
	c.Header("Cache-Control", "private, max-age=60")
	http.ServeContent(c.Writer, c.Request, name, m.UploadedAt, obj)
	return nil
}

func extension(contentType string) string {
	switch contentType {
	case "image/jpeg":
		return ".jpg"
	case "video/mp4":
		return ".mp4"
	}
	return ""
}

// fileLink is the answer of event-file-link.
type fileLink struct {
	URL       string `json:"url"`
	ExpiresAt string `json:"expiresAt"`
}

// eventFileLink handles GET /devices/{imei}/event-file-link: a temporary
// link to an event file. A snapshot of a video event is its middle frame.
func (s *Server) eventFileLink(c *gin.Context) error {
	ref := store.MediaRef{FileID: c.Query("fileId"), FileType: c.Query("fileType")}
	cam, err := strconv.Atoi(c.Query("cameraId"))
	switch {
	case !store.ValidFileID(ref.FileID):
		return badField("fileId", "is required: the file id of the event (1 to 128 letters, digits, '.', '_' or '-')")
	case ref.FileType != store.FileVideo && ref.FileType != store.FileSnapshot:
		return badField("fileType", "must be video or snapshot")
	case err != nil || !store.ValidCameraID(cam):
		return badField("cameraId", store.RuleCameraID)
	}
	ref.CameraID = cam
	var link fileLink
	err = s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		link, err = s.eventFileURL(tx, d, ref)
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, link)
}

// eventFileURL signs a temporary link to ref, a file of an event of d, or
// says why there is none yet (a 404 naming the reason). It serves
// GET /devices/{imei}/event-file-link and event-file-links alike.
func (s *Server) eventFileURL(tx *store.Tx, d *store.Device, ref store.MediaRef) (fileLink, error) {
	ref.IMEI = d.IMEI
	m, err := tx.DeviceMediaFile(d, ref)
	if err != nil {
		return fileLink{}, notFound(fmt.Sprintf("%s %s of camera %d on device %s (file ids are in GET /v2/devices/%s/events)",
			ref.FileType, ref.FileID, ref.CameraID, d.IMEI, d.IMEI))
	}
	if err := mediaNotReady(m); err != nil {
		return fileLink{}, err
	}
	u, exp := s.signedURL(mediaPath("files", ref), s.cfg.Media.LinkTTL)
	return fileLink{URL: u, ExpiresAt: isoTime(exp)}, nil
}

// mediaNotReady explains why a file has no link yet, or returns nil.
func mediaNotReady(m *store.MediaFile) error {
	what := fmt.Sprintf("the %s of file %s (camera %d)", m.FileType, m.FileID, m.CameraID)
	byTimestamp := fmt.Sprintf("request the recording by its timestamp with POST /v2/devices/%s/virtual-event instead", m.IMEI)
	switch m.State {
	case store.MediaUploaded:
		return nil
	case store.MediaUnreachable:
		return apiErr(http.StatusNotFound, nameNotFound,
			"%s was never uploaded: the device had no connection when the event happened; %s", what, byTimestamp)
	case store.MediaFailed:
		return apiErr(http.StatusNotFound, nameNotFound, "the device could not upload %s (%s); %s", what, m.Error, byTimestamp)
	case store.MediaPurged:
		return apiErr(http.StatusNotFound, nameNotFound,
			"%s was deleted from the cloud after the organization's purge days for that camera (PATCH /v2/organizations/{orgId})", what)
	}
	if m.FileType == store.FileSnapshot {
		return apiErr(http.StatusNotFound, nameNotFound,
			"%s cannot be retrieved yet: the device is uploading it; try again in two minutes", what)
	}
	return apiErr(http.StatusNotFound, nameNotFound, "%s is not in the cloud yet: the device is uploading it; try again in a few minutes", what)
}
