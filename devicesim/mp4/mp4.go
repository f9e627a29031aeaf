package mp4

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"time"
)

// ContentType is the media type of the files Encode writes.
const ContentType = "video/mp4"

// timescale is the tick rate of every duration in the file: milliseconds.
const timescale = 1000

// Encode writes frames, each shown for frameDuration, as an H.264 MP4
// file. Every frame must have the size of the first; odd sizes are cropped
// by one pixel to even ones.
func Encode(frames []image.Image, frameDuration time.Duration) ([]byte, error) {
	if len(frames) == 0 {
		return nil, errors.New("mp4: a video needs at least one frame")
	}
	size := frames[0].Bounds().Size()
	if size.X < 2 || size.Y < 2 {
		return nil, fmt.Errorf("mp4: frame size %dx%d is too small", size.X, size.Y)
	}
	delta := uint32(max(1, frameDuration.Milliseconds()))
	s := newStream(size.X, size.Y)
	samples := make([][]byte, len(frames))
	for i, f := range frames {
		if f.Bounds().Size() != size {
			return nil, fmt.Errorf("mp4: frame %d is %v, not %v like the first", i, f.Bounds().Size(), size)
		}
		samples[i] = s.idr(f, uint(i))
	}
	return mux(s, samples, delta), nil
}

// box appends an ISO BMFF box of type typ around the content parts.
func box(typ string, parts ...[]byte) []byte {
	n := 8
	for _, p := range parts {
		n += len(p)
	}
	out := make([]byte, 0, n)
	out = binary.BigEndian.AppendUint32(out, uint32(n))
	out = append(out, typ...)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// fullBox is a box with a version and flags.
func fullBox(typ string, version byte, flags uint32, parts ...[]byte) []byte {
	head := binary.BigEndian.AppendUint32(nil, uint32(version)<<24|flags)
	return box(typ, append([][]byte{head}, parts...)...)
}

// fields appends big-endian values: uint8, uint16, uint32 or a string.
func fields(vs ...any) []byte {
	var out []byte
	for _, v := range vs {
		switch v := v.(type) {
		case uint8:
			out = append(out, v)
		case uint16:
			out = binary.BigEndian.AppendUint16(out, v)
		case uint32:
			out = binary.BigEndian.AppendUint32(out, v)
		case string:
			out = append(out, v...)
		case []byte:
			out = append(out, v...)
		default:
			panic(fmt.Sprintf("mp4: field of type %T", v))
		}
	}
	return out
}

// matrix is the identity transformation of mvhd and tkhd.
var matrix = fields(uint32(0x00010000), uint32(0), uint32(0), uint32(0), uint32(0x00010000), uint32(0),
	uint32(0), uint32(0), uint32(0x40000000))

// mux writes the samples (NAL units of one picture each) as a progressive
// MP4: ftyp, moov (with the sample tables), then mdat.
func mux(s stream, samples [][]byte, delta uint32) []byte {
	ftyp := box("ftyp", fields("isom", uint32(0x200), "isom", "iso2", "avc1", "mp41"))
	sizes := make([]uint32, len(samples))
	mdatLen := 8
	for i, nalu := range samples {
		sizes[i] = uint32(4 + len(nalu)) // each NAL unit behind its 4-byte length
		mdatLen += int(sizes[i])
	}
	// The moov's size does not depend on the chunk offset it holds.
	moov := s.moov(sizes, delta, 0)
	moov = s.moov(sizes, delta, uint32(len(ftyp)+len(moov)+8))
	out := make([]byte, 0, len(ftyp)+len(moov)+mdatLen)
	out = append(append(out, ftyp...), moov...)
	out = binary.BigEndian.AppendUint32(out, uint32(mdatLen))
	out = append(out, "mdat"...)
	for _, nalu := range samples {
		out = binary.BigEndian.AppendUint32(out, uint32(len(nalu)))
		out = append(out, nalu...)
	}
	return out
}

// moov is the movie box of one video track whose samples, of sizes, lie
// in one chunk at offset.
func (s stream) moov(sizes []uint32, delta uint32, offset uint32) []byte {
	n := uint32(len(sizes))
	duration := n * delta
	w, h := uint16(s.width), uint16(s.height)
	mvhd := fullBox("mvhd", 0, 0, fields(uint32(0), uint32(0), uint32(timescale), duration,
		uint32(0x00010000), uint16(0x0100), make([]byte, 10), matrix, make([]byte, 24), uint32(2)))
	tkhd := fullBox("tkhd", 0, 3, fields(uint32(0), uint32(0), uint32(1), uint32(0), duration,
		make([]byte, 8), uint16(0), uint16(0), uint16(0), uint16(0), matrix,
		uint32(w)<<16, uint32(h)<<16))
	mdhd := fullBox("mdhd", 0, 0, fields(uint32(0), uint32(0), uint32(timescale), duration, uint16(0x55c4), uint16(0)))
	hdlr := fullBox("hdlr", 0, 0, fields(uint32(0), "vide", make([]byte, 12), "VideoHandler\x00"))
	vmhd := fullBox("vmhd", 0, 1, make([]byte, 8))
	dinf := box("dinf", fullBox("dref", 0, 0, fields(uint32(1)), fullBox("url ", 0, 1)))
	sps, pps := s.sps(), s.pps()
	avcC := box("avcC", fields(uint8(1), sps[1], sps[2], sps[3], uint8(0xff), uint8(0xe1),
		uint16(len(sps)), sps, uint8(1), uint16(len(pps)), pps))
	avc1 := box("avc1", make([]byte, 6), fields(uint16(1), make([]byte, 16), w, h,
		uint32(0x00480000), uint32(0x00480000), uint32(0), uint16(1), make([]byte, 32), uint16(0x18), uint16(0xffff)), avcC)
	stsd := fullBox("stsd", 0, 0, fields(uint32(1)), avc1)
	stts := fullBox("stts", 0, 0, fields(uint32(1), n, delta))
	stsc := fullBox("stsc", 0, 0, fields(uint32(1), uint32(1), n, uint32(1)))
	stszFields := fields(uint32(0), n)
	for _, size := range sizes {
		stszFields = binary.BigEndian.AppendUint32(stszFields, size)
	}
	stsz := fullBox("stsz", 0, 0, stszFields)
	stco := fullBox("stco", 0, 0, fields(uint32(1), offset))
	stbl := box("stbl", stsd, stts, stsc, stsz, stco) // no stss: every sample is a sync sample
	minf := box("minf", vmhd, dinf, stbl)
	trak := box("trak", tkhd, box("mdia", mdhd, hdlr, minf))
	return box("moov", mvhd, trak)
}

// Info is what Probe reads from an MP4 file's first video track.
type Info struct {
	Width, Height int
	Frames        int
	Duration      time.Duration
}

// Probe reads the size, frame count and duration of the first track of an
// MP4 file (as Encode writes them), checking the box structure on the way.
func Probe(file []byte) (Info, error) {
	top, err := children(file)
	if err != nil {
		return Info{}, err
	}
	if _, ok := top["ftyp"]; !ok {
		return Info{}, errors.New("mp4: no ftyp box")
	}
	if _, ok := top["mdat"]; !ok {
		return Info{}, errors.New("mp4: no mdat box")
	}
	var info Info
	mvhd, err := path(top["moov"], "mvhd")
	if err != nil || len(mvhd) < 20 {
		return Info{}, fmt.Errorf("mp4: movie header: %v", err)
	}
	scale, dur := binary.BigEndian.Uint32(mvhd[12:]), binary.BigEndian.Uint32(mvhd[16:])
	if scale == 0 {
		return Info{}, errors.New("mp4: movie timescale 0")
	}
	info.Duration = time.Duration(dur) * time.Second / time.Duration(scale)
	tkhd, err := path(top["moov"], "trak", "tkhd")
	if err != nil || len(tkhd) < 84 {
		return Info{}, fmt.Errorf("mp4: track header: %v", err)
	}
	info.Width, info.Height = int(binary.BigEndian.Uint32(tkhd[76:])>>16), int(binary.BigEndian.Uint32(tkhd[80:])>>16)
	stsz, err := path(top["moov"], "trak", "mdia", "minf", "stbl", "stsz")
	if err != nil || len(stsz) < 12 {
		return Info{}, fmt.Errorf("mp4: sample sizes: %v", err)
	}
	info.Frames = int(binary.BigEndian.Uint32(stsz[8:]))
	return info, nil
}

// children splits b into its boxes by type.
func children(b []byte) (map[string][]byte, error) {
	out := map[string][]byte{}
	for len(b) > 0 {
		if len(b) < 8 {
			return nil, fmt.Errorf("mp4: %d stray bytes", len(b))
		}
		n := binary.BigEndian.Uint32(b)
		if n < 8 || int64(n) > int64(len(b)) {
			return nil, fmt.Errorf("mp4: box %q of size %d in %d bytes", b[4:8], n, len(b))
		}
		if _, dup := out[string(b[4:8])]; !dup {
			out[string(b[4:8])] = b[8:n]
		}
		b = b[n:]
	}
	return out, nil
}

// path returns the content of the box at the path of types below b.
func path(b []byte, types ...string) ([]byte, error) {
	for _, typ := range types {
		boxes, err := children(b)
		if err != nil {
			return nil, err
		}
		var ok bool
		if b, ok = boxes[typ]; !ok {
			return nil, fmt.Errorf("mp4: no %s box", typ)
		}
	}
	return b, nil
}
