// Command bpegen writes the compact BPE tables that internal/prompt embeds,
// from the tables of the pinned github.com/pkoukk/tiktoken-go-loader
// module. Run it through `go generate ./internal/prompt` after changing
// that module's version; TestEmbeddedTablesMatchLoader checks that the
// embedded tables and the module's agree.
//
// The format (see internal/prompt/bpe_tables.go): the magic "RBPE1", the
// token count as a uvarint, then every token in rank order as a uvarint
// length and its bytes, then the CRC-32 (IEEE) of everything before it,
// big-endian; the whole stream deflate-compressed. Ranks are the positions,
// so the source table must number its tokens 0, 1, 2, … without gaps.
package main

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	loader "github.com/pkoukk/tiktoken-go-loader"
)

func main() {
	out := flag.String("out", "bpe", "directory to write the tables to")
	flag.Parse()
	for _, name := range []string{"cl100k_base", "o200k_base"} {
		if err := write(*out, name); err != nil {
			fmt.Fprintln(os.Stderr, "bpegen:", err)
			os.Exit(1)
		}
	}
}

func write(dir, name string) error {
	ranks, err := loader.NewOfflineLoader().LoadTiktokenBpe(name + ".tiktoken")
	if err != nil {
		return fmt.Errorf("load %s: %w", name, err)
	}
	tokens := make([]string, len(ranks))
	for tok, r := range ranks {
		if r < 0 || r >= len(tokens) || tokens[r] != "" {
			return fmt.Errorf("%s: ranks are not 0..%d without gaps (rank %d)", name, len(tokens)-1, r)
		}
		tokens[r] = tok
	}
	var raw bytes.Buffer
	raw.WriteString("RBPE1")
	raw.Write(binary.AppendUvarint(nil, uint64(len(tokens))))
	for _, tok := range tokens {
		raw.Write(binary.AppendUvarint(nil, uint64(len(tok))))
		raw.WriteString(tok)
	}
	raw.Write(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(raw.Bytes())))

	var z bytes.Buffer
	w, err := flate.NewWriter(&z, flate.BestCompression)
	if err != nil {
		return err
	}
	if _, err := w.Write(raw.Bytes()); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	path := filepath.Join(dir, name+".bpe")
	if err := os.WriteFile(path, z.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Printf("%s: %d tokens, %d bytes\n", path, len(tokens), z.Len())
	return nil
}
