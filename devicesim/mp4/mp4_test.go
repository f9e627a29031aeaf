package mp4

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"testing"
	"time"
)

// testFrame is a w x h picture of colour bands that vary with i.
func testFrame(w, h, i int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x*7 + i), uint8(y * 5), uint8((x + y) * 3), 255})
		}
	}
	return img
}

// boxes splits b into its top-level boxes by type.
func boxes(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	out, err := children(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// find returns the content of the box at path below b.
func find(t *testing.T, b []byte, types ...string) []byte {
	t.Helper()
	out, err := path(b, types...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// bitReader reads an RBSP as the decoder does.
type bitReader struct {
	b   []byte
	pos int
}

func (r *bitReader) u(n int) uint {
	var v uint
	for i := 0; i < n; i++ {
		v = v<<1 | uint(r.b[r.pos/8]>>(7-r.pos%8)&1)
		r.pos++
	}
	return v
}

func (r *bitReader) ue() uint {
	zeros := 0
	for r.u(1) == 0 {
		zeros++
	}
	return 1<<zeros - 1 + r.u(zeros)
}

// unescape removes the emulation prevention bytes of a NAL unit's payload.
func unescape(nalu []byte) []byte {
	var out []byte
	zeros := 0
	for _, b := range nalu[1:] {
		if zeros >= 2 && b == 3 {
			zeros = 0
			continue
		}
		out = append(out, b)
		if b == 0 {
			zeros++
		} else {
			zeros = 0
		}
	}
	return out
}

func TestEncodeLayout(t *testing.T) {
	const w, h, n = 100, 58, 3 // not multiples of 16: cropped
	frames := []image.Image{testFrame(w, h, 0), testFrame(w, h, 1), testFrame(w, h, 2)}
	file, err := Encode(frames, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	top := boxes(t, file)
	if !bytes.HasPrefix(top["ftyp"], []byte("isom")) || top["moov"] == nil || top["mdat"] == nil {
		t.Fatalf("top-level boxes %v", top)
	}
	if !bytes.Equal(file[4:8], []byte("ftyp")) || bytes.Index(file, []byte("moov")) > bytes.Index(file, []byte("mdat")) {
		t.Fatal("the file must start with ftyp and have moov before mdat")
	}
	info, err := Probe(file)
	if want := (Info{Width: w, Height: h, Frames: n, Duration: 1500 * time.Millisecond}); err != nil || info != want {
		t.Fatalf("probe %+v %v, want %+v", info, err, want)
	}
	stbl := find(t, file, "moov", "trak", "mdia", "minf", "stbl")
	stsz := find(t, stbl, "stsz")
	stco := find(t, stbl, "stco")
	if count := binary.BigEndian.Uint32(stsz[8:]); count != n {
		t.Fatalf("%d samples", count)
	}
	off := int(binary.BigEndian.Uint32(stco[8:]))
	s := newStream(w, h)
	for i := 0; i < n; i++ {
		size := int(binary.BigEndian.Uint32(stsz[12+4*i:]))
		nalu := file[off+4 : off+size]
		if int(binary.BigEndian.Uint32(file[off:])) != len(nalu) || nalu[0] != nalRefIdc<<5|nalIDR {
			t.Fatalf("sample %d: length %d for %d bytes, NAL header %#x", i, binary.BigEndian.Uint32(file[off:]), len(nalu), nalu[0])
		}
		checkPCM(t, s, unescape(nalu), frames[i])
		off += size
	}
	avcC := find(t, stbl, "stsd")[8+8+78:] // entry count, avc1 header, visual sample entry
	if string(avcC[4:8]) != "avcC" || avcC[9] != profileBaseline || avcC[11] != level {
		t.Fatalf("avcC % x", avcC[:16])
	}
	sps := &bitReader{b: unescape(s.sps())}
	sps.u(24)
	if id, frameNum, poc := sps.ue(), sps.ue(), sps.ue(); id != 0 || frameNum != 0 || poc != 2 {
		t.Fatalf("sps %d %d %d", id, frameNum, poc)
	}
	sps.ue()
	sps.u(1)
	if mbW, mbH := sps.ue()+1, sps.ue()+1; mbW != 7 || mbH != 4 {
		t.Fatalf("%d x %d macroblocks, want 7 x 4", mbW, mbH)
	}
	sps.u(2)
	if crop, l, r, top, b := sps.u(1), sps.ue(), sps.ue(), sps.ue(), sps.ue(); crop != 1 || l != 0 || r != 6 || top != 0 || b != 3 {
		t.Fatalf("cropping %d %d %d %d %d, want 12 px right and 6 px bottom", crop, l, r, top, b)
	}
}

// checkPCM reads an IDR slice of I_PCM macroblocks and compares its
// samples with those of img.
func checkPCM(t *testing.T, s stream, rbsp []byte, img image.Image) {
	t.Helper()
	r := &bitReader{b: rbsp}
	if first, typ, pps := r.ue(), r.ue(), r.ue(); first != 0 || typ != 7 || pps != 0 {
		t.Fatalf("slice header %d %d %d", first, typ, pps)
	}
	r.u(log2MaxFrameNum)
	r.ue() // idr_pic_id
	r.u(2) // dec_ref_pic_marking
	r.ue() // slice_qp_delta
	r.ue() // disable_deblocking_filter_idc
	y, cb, cr := planes(img, s.mbW*16, s.mbH*16)
	for my := 0; my < s.mbH; my++ {
		for mx := 0; mx < s.mbW; mx++ {
			if mbType := r.ue(); mbType != mbTypeIPCM {
				t.Fatalf("macroblock %d,%d has type %d", mx, my, mbType)
			}
			r.pos = (r.pos + 7) &^ 7
			at := r.pos / 8
			for row := 0; row < 16; row++ {
				o := (my*16+row)*s.mbW*16 + mx*16
				if !bytes.Equal(rbsp[at+row*16:at+row*16+16], y[o:o+16]) {
					t.Fatalf("macroblock %d,%d luma row %d differs", mx, my, row)
				}
			}
			at += 256
			for _, p := range [][]byte{cb, cr} {
				for row := 0; row < 8; row++ {
					o := (my*8+row)*s.mbW*8 + mx*8
					if !bytes.Equal(rbsp[at+row*8:at+row*8+8], p[o:o+8]) {
						t.Fatalf("macroblock %d,%d chroma row %d differs", mx, my, row)
					}
				}
				at += 64
			}
			r.pos = at * 8
		}
	}
	if tail := rbsp[r.pos/8:]; len(tail) != 1 || tail[0] != 0x80 {
		t.Fatalf("slice ends with % x, want the stop bit 80", tail)
	}
}

func TestPlanesColours(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	for _, c := range []struct {
		rgb       color.RGBA
		y, cb, cr byte
	}{
		{color.RGBA{0, 0, 0, 255}, 16, 128, 128},
		{color.RGBA{255, 255, 255, 255}, 235, 128, 128},
		{color.RGBA{255, 0, 0, 255}, 82, 90, 240},
	} {
		for i := 0; i < 4; i++ {
			img.Set(i%2, i/2, c.rgb)
		}
		y, cb, cr := planes(img, 2, 2)
		if y[0] != c.y || cb[0] != c.cb || cr[0] != c.cr {
			t.Errorf("%v: YCbCr %d %d %d, want %d %d %d", c.rgb, y[0], cb[0], cr[0], c.y, c.cb, c.cr)
		}
	}
}

func TestNALEmulationPrevention(t *testing.T) {
	got := nal(nalIDR, []byte{0, 0, 0, 0, 0, 1, 0, 0, 3, 0, 0, 4})
	want := []byte{nalRefIdc<<5 | nalIDR, 0, 0, 3, 0, 0, 3, 0, 1, 0, 0, 3, 3, 0, 0, 4}
	if !bytes.Equal(got, want) {
		t.Fatalf("nal % x, want % x", got, want)
	}
	if back := unescape(got); !bytes.Equal(back, []byte{0, 0, 0, 0, 0, 1, 0, 0, 3, 0, 0, 4}) {
		t.Fatalf("unescaped % x", back)
	}
}

func TestProbeRefusesBrokenFiles(t *testing.T) {
	file, err := Encode([]image.Image{testFrame(32, 32, 0)}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{
		"truncated": file[:len(file)-1],
		"no ftyp":   file[bytes.Index(file, []byte("moov"))-4:],
		"jpeg":      {0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 'J', 'F', 'I', 'F'},
	} {
		if _, err := Probe(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestEncodeRefusals(t *testing.T) {
	if _, err := Encode(nil, time.Second); err == nil {
		t.Fatal("no frames: no error")
	}
	if _, err := Encode([]image.Image{testFrame(32, 32, 0), testFrame(32, 16, 0)}, time.Second); err == nil {
		t.Fatal("frames of two sizes: no error")
	}
}
