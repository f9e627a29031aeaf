// Package mp4 writes short H.264 videos in MP4 files, as dashcams upload
// their event recordings, using only the standard library.
//
// The H.264 stream is Constrained Baseline with every picture an IDR frame
// made of I_PCM macroblocks: each macroblock carries its samples as they
// are, without prediction or transform. Such a stream is lossless, trivial
// to write and decodable by every H.264 decoder, at the price of its size
// (384 bytes a macroblock: about 90 KB a 320x180 frame), which is fine for
// the few frames of a simulated clip. The MP4 file is progressive, with the
// movie box before the media data so that a player can start before the
// whole file has arrived.
//
// Why our own writer: the MP4 muxer libraries (github.com/Eyevinn/mp4ff,
// github.com/abema/go-mp4) are not available from the module proxy this
// project builds with, and no Go H.264 encoder is; an I_PCM stream and a
// single-track progressive MP4 are small fixed layouts, checked by the tests
// with the stream's own parser here, and by ffprobe and headless Chromium
// in cmd/fleetcam's playback test.
package mp4

import (
	"image"
	"image/draw"
)

// bitWriter writes an H.264 RBSP bit by bit, most significant bit first.
type bitWriter struct {
	buf  []byte
	cur  byte
	bits int // bits used in cur
}

func (w *bitWriter) bit(b uint) {
	w.cur = w.cur<<1 | byte(b&1)
	w.bits++
	if w.bits == 8 {
		w.buf = append(w.buf, w.cur)
		w.cur, w.bits = 0, 0
	}
}

// u writes v in n bits.
func (w *bitWriter) u(n int, v uint) {
	for i := n - 1; i >= 0; i-- {
		w.bit(v >> uint(i))
	}
}

// ue writes v as an unsigned Exp-Golomb code.
func (w *bitWriter) ue(v uint) {
	v++
	n := 0
	for x := v; x > 1; x >>= 1 {
		n++
	}
	w.u(n, 0)
	w.u(n+1, v)
}

// se writes v as a signed Exp-Golomb code.
func (w *bitWriter) se(v int) {
	if v <= 0 {
		w.ue(uint(-2 * v))
	} else {
		w.ue(uint(2*v - 1))
	}
}

// align writes zero bits up to the next byte boundary.
func (w *bitWriter) align() {
	for w.bits != 0 {
		w.bit(0)
	}
}

// bytes appends whole bytes; the writer must be aligned.
func (w *bitWriter) bytes(b []byte) { w.buf = append(w.buf, b...) }

// trailing writes rbsp_trailing_bits and returns the RBSP.
func (w *bitWriter) trailing() []byte {
	w.bit(1)
	w.align()
	return w.buf
}

// NAL unit types and the reference priority of every unit written here.
const (
	nalIDR    = 5
	nalSPS    = 7
	nalPPS    = 8
	nalRefIdc = 3
)

// nal wraps an RBSP into a NAL unit, inserting the emulation prevention
// bytes that keep 00 00 0x (x <= 3) out of the payload.
func nal(typ byte, rbsp []byte) []byte {
	out := make([]byte, 0, len(rbsp)+len(rbsp)/64+1)
	out = append(out, nalRefIdc<<5|typ)
	zeros := 0
	for _, b := range rbsp {
		if zeros >= 2 && b <= 3 {
			out = append(out, 3)
			zeros = 0
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

// Stream parameters of every stream written here.
const (
	profileBaseline = 66
	constraintFlags = 0xc0 // constraint_set0 and set1: Constrained Baseline
	level           = 31   // 3.1: up to 1280x720, 14 Mbit/s
	log2MaxFrameNum = 4
	mbTypeIPCM      = 25
)

// stream is an H.264 stream of one picture size.
type stream struct {
	width, height int // picture size in pixels
	mbW, mbH      int // in macroblocks
}

// newStream returns the stream of pictures of width x height, rounded
// down to even sizes (4:2:0 crops in steps of two pixels).
func newStream(width, height int) stream {
	width, height = width&^1, height&^1
	return stream{width: width, height: height, mbW: (width + 15) / 16, mbH: (height + 15) / 16}
}

// sps is the sequence parameter set NAL unit.
func (s stream) sps() []byte {
	var w bitWriter
	w.u(8, profileBaseline)
	w.u(8, constraintFlags)
	w.u(8, level)
	w.ue(0)                   // seq_parameter_set_id
	w.ue(log2MaxFrameNum - 4) // log2_max_frame_num_minus4
	w.ue(2)                   // pic_order_cnt_type 2: output order is decoding order
	w.ue(1)                   // max_num_ref_frames
	w.u(1, 0)                 // gaps_in_frame_num_value_allowed_flag
	w.ue(uint(s.mbW - 1))     // pic_width_in_mbs_minus1
	w.ue(uint(s.mbH - 1))     // pic_height_in_map_units_minus1
	w.u(1, 1)                 // frame_mbs_only_flag
	w.u(1, 1)                 // direct_8x8_inference_flag
	cropX, cropY := s.mbW*16-s.width, s.mbH*16-s.height
	if cropX == 0 && cropY == 0 {
		w.u(1, 0) // frame_cropping_flag
	} else {
		w.u(1, 1)
		w.ue(0)               // frame_crop_left_offset
		w.ue(uint(cropX / 2)) // right, in 4:2:0 chroma units of two pixels
		w.ue(0)               // top
		w.ue(uint(cropY / 2)) // bottom
	}
	w.u(1, 0) // vui_parameters_present_flag
	return nal(nalSPS, w.trailing())
}

// pps is the picture parameter set NAL unit.
func (s stream) pps() []byte {
	var w bitWriter
	w.ue(0)   // pic_parameter_set_id
	w.ue(0)   // seq_parameter_set_id
	w.u(1, 0) // entropy_coding_mode_flag: CAVLC
	w.u(1, 0) // bottom_field_pic_order_in_frame_present_flag
	w.ue(0)   // num_slice_groups_minus1
	w.ue(0)   // num_ref_idx_l0_default_active_minus1
	w.ue(0)   // num_ref_idx_l1_default_active_minus1
	w.u(1, 0) // weighted_pred_flag
	w.u(2, 0) // weighted_bipred_idc
	w.se(0)   // pic_init_qp_minus26
	w.se(0)   // pic_init_qs_minus26
	w.se(0)   // chroma_qp_index_offset
	w.u(1, 1) // deblocking_filter_control_present_flag
	w.u(1, 0) // constrained_intra_pred_flag
	w.u(1, 0) // redundant_pic_cnt_present_flag
	return nal(nalPPS, w.trailing())
}

// idr encodes img (of the stream's size) as one IDR picture of I_PCM
// macroblocks; idrID tells consecutive IDR pictures apart.
func (s stream) idr(img image.Image, idrID uint) []byte {
	y, cb, cr := planes(img, s.mbW*16, s.mbH*16)
	var w bitWriter
	w.buf = make([]byte, 0, s.mbW*s.mbH*385+16)
	w.ue(0)                 // first_mb_in_slice
	w.ue(7)                 // slice_type: I, as every slice of the picture
	w.ue(0)                 // pic_parameter_set_id
	w.u(log2MaxFrameNum, 0) // frame_num
	w.ue(idrID & 1)         // idr_pic_id
	w.u(1, 0)               // no_output_of_prior_pics_flag
	w.u(1, 0)               // long_term_reference_flag
	w.se(0)                 // slice_qp_delta
	w.ue(1)                 // disable_deblocking_filter_idc: off
	stride, cstride := s.mbW*16, s.mbW*8
	for my := 0; my < s.mbH; my++ {
		for mx := 0; mx < s.mbW; mx++ {
			w.ue(mbTypeIPCM)
			w.align() // pcm_alignment_zero_bit
			for r := 0; r < 16; r++ {
				o := (my*16+r)*stride + mx*16
				w.bytes(y[o : o+16])
			}
			for _, p := range [][]byte{cb, cr} {
				for r := 0; r < 8; r++ {
					o := (my*8+r)*cstride + mx*8
					w.bytes(p[o : o+8])
				}
			}
		}
	}
	return nal(nalIDR, w.trailing())
}

// planes converts img to 8-bit 4:2:0 planes of w x h (BT.601, limited
// range), repeating the last row and column into the padding.
func planes(img image.Image, w, h int) (y, cb, cr []byte) {
	src, ok := img.(*image.RGBA)
	if !ok || src.Bounds().Min != (image.Point{}) {
		src = image.NewRGBA(image.Rect(0, 0, img.Bounds().Dx(), img.Bounds().Dy()))
		draw.Draw(src, src.Bounds(), img, img.Bounds().Min, draw.Src)
	}
	bw, bh := src.Bounds().Dx(), src.Bounds().Dy()
	y, cb, cr = make([]byte, w*h), make([]byte, w*h/4), make([]byte, w*h/4)
	rgb := func(px, py int) (int, int, int) {
		o := min(py, bh-1)*src.Stride + min(px, bw-1)*4
		return int(src.Pix[o]), int(src.Pix[o+1]), int(src.Pix[o+2])
	}
	for py := 0; py < h; py++ {
		for px := 0; px < w; px++ {
			r, g, bl := rgb(px, py)
			y[py*w+px] = byte((66*r+129*g+25*bl+128)>>8 + 16)
		}
	}
	for py := 0; py < h/2; py++ {
		for px := 0; px < w/2; px++ {
			var r, g, bl int
			for _, d := range [4][2]int{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
				r1, g1, b1 := rgb(2*px+d[0], 2*py+d[1])
				r, g, bl = r+r1, g+g1, bl+b1
			}
			r, g, bl = r/4, g/4, bl/4
			cb[py*w/2+px] = byte((-38*r-74*g+112*bl+128)>>8 + 128)
			cr[py*w/2+px] = byte((112*r-94*g-18*bl+128)>>8 + 128)
		}
	}
	return y, cb, cr
}
