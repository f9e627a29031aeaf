package devicesim

import (
	"bytes"
	"image"
	"image/jpeg"
	"strings"
	"testing"
	"time"
)

// readText reads line i of a frame's overlay back with the bitmap font,
// sampling the centre of every font pixel.
func readText(img image.Image, line, chars, scale int) string {
	pad := 2 * scale
	var b strings.Builder
	for c := 0; c < chars; c++ {
		var cell [7]string
		for row := 0; row < glyphH; row++ {
			var rb strings.Builder
			for col := 0; col < glyphW; col++ {
				x := pad + c*advanceX*scale + col*scale + scale/2
				y := pad + line*advanceY*scale + row*scale + scale/2
				r, g, bl, _ := img.At(x, y).RGBA()
				if (r+g+bl)/3 > 0x8000 {
					rb.WriteByte('#')
				} else {
					rb.WriteByte('.')
				}
			}
			cell[row] = rb.String()
		}
		ch := '?'
		for k, g := range glyphs {
			if g == cell {
				ch = k
				break
			}
		}
		b.WriteRune(ch)
	}
	return b.String()
}

func TestFrameIsARealJPEGWithOverlay(t *testing.T) {
	at := time.Date(2024, 5, 1, 12, 34, 56, 789e6, time.UTC)
	for _, tc := range []struct {
		name string
		info FrameInfo
	}{
		{"road", FrameInfo{Time: at, IMEI: "490154203237518", CameraID: 1, SpeedKmh: 42.4, Width: 640, Height: 360}},
		{"cabin", FrameInfo{Time: at, IMEI: "490154203237518", CameraID: 2, SpeedKmh: 0, Width: 1280, Height: 720}},
		{"auxiliary", FrameInfo{Time: at, IMEI: "490154203237518", CameraID: 51, SpeedKmh: 99.6, Width: 320, Height: 240}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Frame(tc.info)
			if err != nil {
				t.Fatal(err)
			}
			img, err := jpeg.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if s := img.Bounds().Size(); s.X != tc.info.Width || s.Y != tc.info.Height {
				t.Fatalf("size %v, want %dx%d", s, tc.info.Width, tc.info.Height)
			}
			scale := max(1, min(tc.info.Height/120, tc.info.Width/160))
			for i, want := range tc.info.Overlay() {
				if got := readText(img, i, len(want), scale); got != want {
					t.Fatalf("overlay line %d reads %q, want %q", i, got, want)
				}
			}
		})
	}
	lines := FrameInfo{Time: at, IMEI: "490154203237518", CameraID: 2, SpeedKmh: 42.4}.Overlay()
	if lines[0] != "2024-05-01 12:34:56.789Z" || lines[2] != "CAM 2 CABIN" || lines[3] != "SPEED 42 KM/H" {
		t.Fatalf("overlay %q", lines)
	}
}

func TestFramesChangeWithTime(t *testing.T) {
	info := FrameInfo{Time: time.Unix(1_700_000_000, 0), IMEI: "490154203237518", CameraID: 1, SpeedKmh: 50, Width: 320, Height: 180}
	a := DrawFrame(info)
	info.Time = info.Time.Add(250 * time.Millisecond)
	b := DrawFrame(info)
	// Below the overlay the road itself moved.
	band := len(info.Overlay()) * advanceY * 2
	if bytes.Equal(a.Pix[a.PixOffset(0, band+4):], b.Pix[b.PixOffset(0, band+4):]) {
		t.Fatal("the road scene did not move in 250 ms at 50 km/h")
	}
}
