package prompt

import (
	"compress/flate"
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

//go:generate go run ./internal/bpegen -out bpe

// bpeFiles holds the two vocabularies Reverie counts with, compacted by
// internal/bpegen from the pinned tiktoken-go-loader module: 1.5 MB instead
// of the 7 MB of base64 text (four vocabularies) that embedding the loader
// itself would add to the binary.
//
//go:embed bpe/cl100k_base.bpe bpe/o200k_base.bpe
var bpeFiles embed.FS

// bpeMagic starts every table (see internal/bpegen for the format).
const bpeMagic = "RBPE1"

// maxBPETokens bounds the count read from a table header, so that a damaged
// file cannot ask for an absurd allocation.
const maxBPETokens = 1 << 20

// loadBPE reads the embedded table name ("o200k_base") into a rank map.
func loadBPE(name string) (map[string]int, error) {
	f, err := bpeFiles.Open("bpe/" + name + ".bpe")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readBPE(flate.NewReader(f))
}

// readBPE decodes one decompressed table stream.
func readBPE(r io.Reader) (map[string]int, error) {
	data, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	if len(data) < len(bpeMagic)+4 || string(data[:len(bpeMagic)]) != bpeMagic {
		return nil, errors.New("not a BPE table (bad magic)")
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, errors.New("BPE table is damaged (checksum mismatch)")
	}
	p := body[len(bpeMagic):]
	n, k := binary.Uvarint(p)
	if k <= 0 || n == 0 || n > maxBPETokens {
		return nil, fmt.Errorf("bad token count %d", n)
	}
	p = p[k:]
	ranks := make(map[string]int, n)
	for rank := range int(n) {
		l, k := binary.Uvarint(p)
		if k <= 0 || l == 0 || l > uint64(len(p)-k) {
			return nil, fmt.Errorf("token %d: bad length", rank)
		}
		ranks[string(p[k:k+int(l)])] = rank
		p = p[k+int(l):]
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%d bytes after the last token", len(p))
	}
	return ranks, nil
}
