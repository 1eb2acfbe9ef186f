package voice

import (
	"bytes"
	"encoding/binary"
	"time"
)

// Duration is how long an audio file plays, read from its container: Ogg
// (Opus or Vorbis: the last page's granule position) and WAV (the data
// chunk's size over the byte rate). ok is false for other formats and
// files it cannot read; the size limit still applies to them.
func Duration(data []byte) (d time.Duration, ok bool) {
	switch {
	case bytes.HasPrefix(data, []byte("OggS")):
		return oggDuration(data)
	case len(data) >= 12 && bytes.HasPrefix(data, []byte("RIFF")) && string(data[8:12]) == "WAVE":
		return wavDuration(data)
	}
	return 0, false
}

// oggDuration reads the sample rate from the first stream header (Opus
// counts granules at 48 kHz whatever the input rate) and the length from the
// last page's granule position.
func oggDuration(data []byte) (time.Duration, bool) {
	const headerLen = 27
	if len(data) < headerLen+1 {
		return 0, false
	}
	segs := int(data[26])
	body := headerLen + segs
	if len(data) < body+19 {
		return 0, false
	}
	var rate, preSkip uint64
	switch first := data[body:]; {
	case bytes.HasPrefix(first, []byte("OpusHead")):
		rate = 48000
		preSkip = uint64(binary.LittleEndian.Uint16(first[10:12]))
	case len(first) >= 16 && bytes.HasPrefix(first, []byte("\x01vorbis")):
		rate = uint64(binary.LittleEndian.Uint32(first[12:16]))
	default:
		return 0, false
	}
	last := bytes.LastIndex(data, []byte("OggS"))
	if last < 0 || len(data) < last+14 || rate == 0 {
		return 0, false
	}
	granule := binary.LittleEndian.Uint64(data[last+6 : last+14])
	if granule == ^uint64(0) || granule < preSkip {
		return 0, false
	}
	samples := granule - preSkip
	return time.Duration(samples * uint64(time.Second) / rate), true
}

// wavDuration walks the RIFF chunks for fmt (byte rate) and data (size).
func wavDuration(data []byte) (time.Duration, bool) {
	var byteRate, size uint64
	for p := 12; p+8 <= len(data); {
		id, n := string(data[p:p+4]), int(binary.LittleEndian.Uint32(data[p+4:p+8]))
		switch id {
		case "fmt ":
			if p+20 > len(data) || n < 16 {
				return 0, false
			}
			byteRate = uint64(binary.LittleEndian.Uint32(data[p+16 : p+20]))
		case "data":
			size = uint64(n)
			if rest := uint64(len(data) - p - 8); size > rest {
				size = rest // a recording cut short, or a streamed header
			}
			if byteRate == 0 {
				return 0, false
			}
			return time.Duration(size * uint64(time.Second) / byteRate), true
		}
		if n < 0 {
			return 0, false
		}
		p += 8 + n + n%2
	}
	return 0, false
}

// silentWAV is a 16-bit mono PCM WAV file of n silent samples at rate Hz.
func silentWAV(rate, n int) []byte {
	b := make([]byte, 44+2*n)
	le := binary.LittleEndian
	copy(b, "RIFF")
	le.PutUint32(b[4:], uint32(36+2*n))
	copy(b[8:], "WAVEfmt ")
	le.PutUint32(b[16:], 16)
	le.PutUint16(b[20:], 1) // PCM
	le.PutUint16(b[22:], 1) // mono
	le.PutUint32(b[24:], uint32(rate))
	le.PutUint32(b[28:], uint32(2*rate))
	le.PutUint16(b[32:], 2)
	le.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	le.PutUint32(b[40:], uint32(2*n))
	return b
}
