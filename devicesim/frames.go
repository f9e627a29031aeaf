package devicesim

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"time"
)

// FrameInfo is what one camera frame shows: a simple scene for the camera
// (road ahead, cabin, or an auxiliary view) and an overlay with the time,
// IMEI, camera and speed, as a dashcam burns into its recordings.
type FrameInfo struct {
	Time     time.Time
	IMEI     string
	CameraID int
	SpeedKmh float64
	Width    int
	Height   int
}

// Overlay returns the overlay lines of the frame, top to bottom.
func (f FrameInfo) Overlay() []string {
	return []string{
		f.Time.UTC().Format("2006-01-02 15:04:05.000Z"),
		"IMEI " + f.IMEI,
		fmt.Sprintf("CAM %d %s", f.CameraID, cameraName(f.CameraID)),
		fmt.Sprintf("SPEED %d KM/H", int(math.Round(f.SpeedKmh))),
	}
}

// cameraName names a camera id: 1 road-facing, 2 in-cabin, 50+ auxiliary.
func cameraName(id int) string {
	switch {
	case id == 1:
		return "ROAD"
	case id == 2:
		return "CABIN"
	case id >= 50:
		return "AUX"
	}
	return "CAM"
}

// JPEG quality of every frame.
const jpegQuality = 70

// Frame draws f and encodes it as a JPEG.
func Frame(f FrameInfo) ([]byte, error) {
	img := DrawFrame(f)
	var buf bytes.Buffer
	buf.Grow(f.Width * f.Height / 8)
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: jpegQuality}); err != nil {
		return nil, fmt.Errorf("devicesim: encode frame: %w", err)
	}
	return buf.Bytes(), nil
}

// DrawFrame draws f as an image of f.Width × f.Height.
func DrawFrame(f FrameInfo) *image.RGBA {
	w, h := max(f.Width, 1), max(f.Height, 1)
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	switch {
	case f.CameraID == 2:
		drawCabin(img, f)
	case f.CameraID >= 50:
		drawAux(img)
	default:
		drawRoad(img, f)
	}
	scale := max(1, min(h/120, w/160))
	lines := f.Overlay()
	pad := 2 * scale
	wide := 0
	for _, l := range lines {
		wide = max(wide, textWidth(l, scale))
	}
	fillRect(img, image.Rect(0, 0, wide+2*pad, len(lines)*advanceY*scale+pad), color.RGBA{0, 0, 0, 255})
	for i, l := range lines {
		drawText(img, pad, pad+i*advanceY*scale, scale, l, color.RGBA{255, 255, 255, 255})
	}
	return img
}

// drawRoad paints sky, verge and a road whose centre dashes move with the
// distance driven, so consecutive frames of a moving car differ.
func drawRoad(img *image.RGBA, f FrameInfo) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	horizon := h * 45 / 100
	for y := 0; y < horizon; y++ {
		k := uint8(120 * y / max(horizon, 1))
		fillRect(img, image.Rect(0, y, w, y+1), color.RGBA{90 + k/2, 150 + k/2, 230, 255})
	}
	fillRect(img, image.Rect(0, horizon, w, h), color.RGBA{70, 120, 60, 255})
	// Distance driven in metres sets the phase of the dashes.
	metres := f.SpeedKmh / 3.6 * float64(f.Time.UnixMilli()%1_000_000) / 1000
	period := 12.0
	phase := math.Mod(metres, period) / period
	cx := w / 2
	for y := horizon; y < h; y++ {
		depth := float64(y-horizon) / float64(max(h-horizon, 1)) // 0 at the horizon, 1 at the bottom
		half := int(float64(w) * (0.04 + 0.5*depth))
		fillRect(img, image.Rect(cx-half, y, cx+half, y+1), color.RGBA{80, 80, 85, 255})
		// Perspective: dash position along the road is 1/depth.
		if depth > 0.02 {
			along := math.Mod(1/depth+phase*4, 4)
			if along < 2 {
				lw := max(1, int(float64(w)*0.008*depth*2))
				fillRect(img, image.Rect(cx-lw, y, cx+lw, y+1), color.RGBA{240, 240, 240, 255})
			}
		}
	}
}

// drawCabin paints an interior with a windscreen and a driver's silhouette.
func drawCabin(img *image.RGBA, f FrameInfo) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	fillRect(img, img.Rect, color.RGBA{45, 45, 50, 255})
	fillRect(img, image.Rect(w/10, h/12, w*9/10, h*2/5), color.RGBA{120, 140, 160, 255})
	// The driver sways a little with time.
	sway := int(float64(w) * 0.01 * math.Sin(float64(f.Time.UnixMilli())/700))
	cx, cy, r := w*2/3+sway, h/2, max(h/8, 2)
	fillCircle(img, cx, cy, r, color.RGBA{200, 160, 130, 255})
	fillRect(img, image.Rect(cx-2*r, cy+r, cx+2*r, h), color.RGBA{30, 60, 110, 255})
}

// drawAux paints a plain grey gradient.
func drawAux(img *image.RGBA) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	for y := 0; y < h; y++ {
		k := uint8(60 + 120*y/max(h, 1))
		fillRect(img, image.Rect(0, y, w, y+1), color.RGBA{k, k, k, 255})
	}
}

// fillCircle paints a disc of radius r centred on (cx, cy).
func fillCircle(img *image.RGBA, cx, cy, r int, c color.RGBA) {
	for dy := -r; dy <= r; dy++ {
		dx := int(math.Sqrt(float64(r*r - dy*dy)))
		fillRect(img, image.Rect(cx-dx, cy+dy, cx+dx+1, cy+dy+1), c)
	}
}
