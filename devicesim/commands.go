package devicesim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// onCommand answers a Command with a Reply: with MQTT 5 on the command's
// response topic with its correlation data, with MQTT 3.1.1 on up/reply
// (the Reply carries the command id in both cases).
func (d *Device) onCommand(ctx context.Context, m inbound) error {
	var cmd protocol.Command
	if err := json.Unmarshal(m.Payload, &cmd); err != nil {
		return fmt.Errorf("devicesim: command is not valid JSON: %w", err)
	}
	d.stats.commands.Add(1)
	reply := func(result any, err error) {
		if rerr := d.reply(ctx, m, cmd.ID, result, err); rerr != nil {
			d.setErr(rerr)
		}
	}
	switch cmd.Name {
	case protocol.CmdPrivacyMode:
		var a protocol.PrivacyModeArgs
		if err := decodeArgs(cmd, &a); err != nil {
			reply(nil, err)
			return nil
		}
		reply(d.setPrivacyMode(a.Mode))
	case protocol.CmdHotspot:
		var a protocol.HotspotArgs
		if err := decodeArgs(cmd, &a); err != nil {
			reply(nil, err)
			return nil
		}
		reply(d.setHotspot(a), nil)
		return d.publishStatus(ctx)
	case protocol.CmdFormatStorage:
		sd, err := d.formatStorage()
		reply(sd, err)
		if err != nil {
			return nil
		}
		if _, err := d.Emit(ctx, EventSpec{Type: "sdCardFormatted", SDCard: &sd}); err != nil {
			return err
		}
		return d.publishStatus(ctx)
	case protocol.CmdRecordingRanges:
		reply(d.RecordingRanges(), nil)
	case protocol.CmdClip:
		var a protocol.ClipArgs
		if err := decodeArgs(cmd, &a); err != nil {
			reply(nil, err)
			return nil
		}
		reply(d.clip(ctx, a))
	case protocol.CmdUploadMedia:
		var a protocol.UploadArgs
		if err := decodeArgs(cmd, &a); err != nil {
			reply(nil, err)
			return nil
		}
		reply(nil, d.uploadMedia(ctx, a))
	case protocol.CmdLiveStream:
		var a protocol.LiveStreamArgs
		if err := decodeArgs(cmd, &a); err != nil {
			reply(nil, err)
			return nil
		}
		reply(nil, d.liveStream(ctx, a))
	case protocol.CmdAdasImages:
		var a protocol.AdasImagesArgs
		if err := decodeArgs(cmd, &a); err != nil {
			reply(nil, err)
			return nil
		}
		go func() { reply(d.adasImages(ctx, a)) }() // uploads first, then answers
	case protocol.CmdAdasDeleteImages:
		d.mu.Lock()
		d.adasFiles, d.adasDone = nil, false
		d.mu.Unlock()
		reply(nil, nil)
	case protocol.CmdDriverCheckout:
		reply(nil, nil)
		return d.CheckOut(ctx)
	case protocol.CmdFactoryReset:
		reply(nil, nil)
		d.FactoryReset()
	case protocol.CmdReboot:
		reply(nil, nil)
		d.Reboot()
	case protocol.CmdAuxSearch:
		var a protocol.AuxSearchArgs
		if err := decodeArgs(cmd, &a); err != nil {
			reply(nil, err)
			return nil
		}
		reply(d.auxSearch(a))
	case protocol.CmdAuxPair:
		var a protocol.AuxPairArgs
		if err := decodeArgs(cmd, &a); err != nil {
			reply(nil, err)
			return nil
		}
		res, err := d.auxPair(a)
		reply(res, err)
		if err == nil {
			return d.publishStatus(ctx) // the paired cameras are in the status
		}
	case protocol.CmdAuxUnpair:
		var a protocol.AuxUnpairArgs
		if err := decodeArgs(cmd, &a); err != nil {
			reply(nil, err)
			return nil
		}
		err := d.auxUnpair(a)
		reply(nil, err)
		if err == nil {
			return d.publishStatus(ctx)
		}
	default:
		if handled, err := d.onControlCommand(ctx, cmd, reply); handled {
			return err
		}
		reply(nil, fmt.Errorf("unknown command %q", cmd.Name))
	}
	return nil
}

// reply publishes the Reply to command id.
func (d *Device) reply(ctx context.Context, m inbound, id string, result any, cmdErr error) error {
	r := protocol.Reply{ID: id, OK: cmdErr == nil}
	if cmdErr != nil {
		r.Error = cmdErr.Error()
		d.stats.commandErrors.Add(1)
	} else if result != nil {
		raw, err := json.Marshal(result)
		if err != nil {
			return fmt.Errorf("devicesim: encode reply: %w", err)
		}
		r.Result = raw
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("devicesim: encode reply: %w", err)
	}
	l := d.current()
	if l == nil {
		return ErrOffline
	}
	topic := protocol.Topic(d.o.IMEI, protocol.TopicReply)
	var corr []byte
	if d.o.MQTTVersion == 5 {
		if m.ResponseTopic != "" {
			topic = m.ResponseTopic
		}
		corr = m.Correlation
	}
	return d.send(ctx, l, topic, protocol.TopicReply, raw, corr, id)
}

// decodeArgs decodes a command's arguments, naming the command on error.
func decodeArgs(cmd protocol.Command, v any) error {
	if len(cmd.Args) == 0 {
		return fmt.Errorf("%s: args are required", cmd.Name)
	}
	if err := json.Unmarshal(cmd.Args, v); err != nil {
		return fmt.Errorf("%s: args are not valid: %v", cmd.Name, err)
	}
	return nil
}

// setPrivacyMode switches privacy mode: "on" stops recording and event media.
func (d *Device) setPrivacyMode(mode string) (protocol.PrivacyModeArgs, error) {
	if mode != "on" && mode != "off" {
		return protocol.PrivacyModeArgs{}, fmt.Errorf("privacyMode: mode %q must be on or off", mode)
	}
	d.mu.Lock()
	d.privacyMode = mode
	if d.st.Config != nil {
		d.st.Config.Privacy.Mode = mode
		d.persistLocked()
	}
	d.mu.Unlock()
	d.applyRecording()
	return protocol.PrivacyModeArgs{Mode: mode}, nil
}

// setHotspot switches the hotspot; a password given with it replaces the old one.
func (d *Device) setHotspot(a protocol.HotspotArgs) protocol.HotspotState {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.HotspotOn = a.On
	if a.Password != "" {
		d.st.HotspotPassword = a.Password
	}
	if d.st.Config != nil {
		d.st.Config.Device.HotspotOn = a.On
		d.st.Config.Device.HotspotPassword = d.st.HotspotPassword
	}
	d.persistLocked()
	return protocol.HotspotState{On: a.On}
}

// formatStorage gives the SD card a new UUID and wipes its recordings; it
// fails while the device reports no SD card.
func (d *Device) formatStorage() (protocol.SDCard, error) {
	now := d.now()
	d.mu.Lock()
	if d.health.SDCardMissing {
		d.mu.Unlock()
		return protocol.SDCard{}, fmt.Errorf("formatStorage: %w", ErrNoSDCard)
	}
	seed := d.rng.Uint64()
	d.st.SDCard = protocol.SDCard{Present: true, Healthy: true, UUID: uuidFrom(seed, uint64(now.UnixNano())),
		Manufacturer: sdMakers[seed%uint64(len(sdMakers))]}
	d.files, d.fileOrder = map[string]fileInfo{}, nil
	d.persistLocked()
	sd := d.st.SDCard
	d.mu.Unlock()
	d.rec.format(now)
	d.applyRecording()
	return sd, nil
}

// clip says whether the recording at a.Time exists and, when a.URL is set,
// uploads it (a JPEG snapshot or an MP4 video) and then publishes MediaReady.
func (d *Device) clip(ctx context.Context, a protocol.ClipArgs) (protocol.ClipResult, error) {
	if a.CameraID == 0 {
		a.CameraID = 1
	}
	switch a.MediaType {
	case "":
		a.MediaType = "video"
	case "video", "snapshot":
	default:
		return protocol.ClipResult{}, fmt.Errorf("clip: mediaType %q must be video or snapshot", a.MediaType)
	}
	if a.DurationSeconds < 0 || a.DurationSeconds > 600 {
		return protocol.ClipResult{}, fmt.Errorf("clip: durationSeconds %d must be from 0 to 600", a.DurationSeconds)
	}
	if a.DurationSeconds == 0 {
		a.DurationSeconds = 10
	}
	at := time.Unix(a.Time, 0)
	if !d.rec.has(a.CameraID, at, d.now()) {
		return protocol.ClipResult{Available: false}, nil
	}
	if a.URL != "" && a.FileID != "" {
		f := fileInfo{Time: at, CameraID: a.CameraID, FileType: a.MediaType, Duration: time.Duration(a.DurationSeconds) * time.Second}
		d.rememberFile(a.FileID, f)
		if a.Expires > 0 && d.now().Unix() > a.Expires {
			return protocol.ClipResult{Available: true}, fmt.Errorf("clip: upload url expired at %d", a.Expires)
		}
		go d.uploadAndNotify(ctx, a.URL, a.FileID, f)
	}
	return protocol.ClipResult{Available: true}, nil
}

// uploadMedia checks an upload request, then uploads in the background and
// publishes MediaReady when the file is in the cloud.
func (d *Device) uploadMedia(ctx context.Context, a protocol.UploadArgs) error {
	if a.URL == "" {
		return errors.New("uploadMedia: url is required")
	}
	if a.Expires > 0 && d.now().Unix() > a.Expires {
		return fmt.Errorf("uploadMedia: url expired at %d", a.Expires)
	}
	if a.FileType != "video" && a.FileType != "snapshot" {
		return fmt.Errorf("uploadMedia: fileType %q must be video or snapshot", a.FileType)
	}
	f, ok := d.file(a.FileID)
	if !ok {
		return fmt.Errorf("uploadMedia: file %q is not on the device", a.FileID)
	}
	if a.CameraID != 0 {
		f.CameraID = a.CameraID
	}
	f.FileType = a.FileType
	if !d.rec.has(f.CameraID, f.Time, d.now()) {
		return fmt.Errorf("uploadMedia: camera %d has no recording at %s", f.CameraID, f.Time.UTC().Format(time.RFC3339))
	}
	go d.uploadAndNotify(ctx, a.URL, a.FileID, f)
	return nil
}

// uploadAndNotify renders and uploads f, then publishes MediaReady.
func (d *Device) uploadAndNotify(ctx context.Context, url, fileID string, f fileInfo) {
	body, ctype, err := d.render(f)
	if err == nil {
		err = d.put(ctx, url, ctype, body)
	}
	if err != nil {
		d.setErr(err)
		return
	}
	ready := protocol.MediaReady{FileID: fileID, CameraID: f.CameraID, FileType: f.FileType}
	if err := d.publishOrQueue(ctx, protocol.TopicMedia, ready, fileID); err != nil {
		d.setErr(err)
	}
}

// rememberFile records a file the device can upload later (bounded).
func (d *Device) rememberFile(id string, f fileInfo) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.files[id]; !ok {
		d.fileOrder = append(d.fileOrder, id)
	}
	d.files[id] = f
	if len(d.fileOrder) > 2048 {
		delete(d.files, d.fileOrder[0])
		d.fileOrder = d.fileOrder[1:]
	}
}

// file returns a known file; an unknown id that is a unix-millisecond time
// (the device's own file id scheme) names the recording at that time.
func (d *Device) file(id string) (fileInfo, bool) {
	d.mu.Lock()
	f, ok := d.files[id]
	d.mu.Unlock()
	if ok {
		return f, true
	}
	ms, err := strconv.ParseInt(id, 10, 64)
	if err != nil || ms <= 0 {
		return fileInfo{}, false
	}
	return fileInfo{Time: time.UnixMilli(ms), CameraID: 1, FileType: "video", Duration: eventClip}, true
}

// adasImages uploads one calibration image per camera URL and lists them.
func (d *Device) adasImages(ctx context.Context, a protocol.AdasImagesArgs) (protocol.AdasImagesResult, error) {
	if a.CalibrationType != "" && a.CalibrationType != "auto" && a.CalibrationType != "manual" {
		return protocol.AdasImagesResult{}, fmt.Errorf("adasImages: calibrationType %q must be auto or manual", a.CalibrationType)
	}
	if a.Expires > 0 && d.now().Unix() > a.Expires {
		return protocol.AdasImagesResult{}, fmt.Errorf("adasImages: urls expired at %d", a.Expires)
	}
	cams := make([]int, 0, len(a.URLs))
	for c := range a.URLs {
		cams = append(cams, c)
	}
	sort.Ints(cams)
	now := d.now()
	var files []protocol.File
	for _, cam := range cams {
		jpg, err := d.frame(cam, now)
		if err != nil {
			return protocol.AdasImagesResult{}, err
		}
		if err := d.put(ctx, a.URLs[cam], "image/jpeg", jpg); err != nil {
			return protocol.AdasImagesResult{}, fmt.Errorf("adasImages: camera %d: %w", cam, err)
		}
		id := fmt.Sprintf("adas-%d-%d", cam, now.UnixMilli())
		d.rememberFile(id, fileInfo{Time: now, CameraID: cam, FileType: "snapshot"})
		files = append(files, protocol.File{CameraID: cam, FileID: id, FileType: "snapshot"})
	}
	d.mu.Lock()
	if len(files) > 0 {
		d.adasFiles, d.adasDone = files, true
	}
	out := protocol.AdasImagesResult{Files: append([]protocol.File(nil), d.adasFiles...)}
	d.mu.Unlock()
	return out, nil
}
