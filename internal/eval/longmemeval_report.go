package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
)

// LMETypes lists LongMemEval's question types in report order; a type not
// listed is reported after them, in name order.
var LMETypes = []string{"single-session-user", "single-session-assistant", "single-session-preference",
	"multi-session", "knowledge-update", "temporal-reasoning"}

// types returns the report's question types in report order.
func (r LMEReport) types() []string {
	var out, rest []string
	for _, t := range LMETypes {
		if _, ok := r.ByType[t]; ok {
			out = append(out, t)
		}
	}
	for t := range r.ByType {
		if !slices.Contains(LMETypes, t) {
			rest = append(rest, t)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

func jsonNum(x float64) string { return strconv.FormatFloat(round2(x), 'f', -1, 64) }

// writeLevel writes {"recall_any@1":…,"recall_all@1":…,…,"ndcg@10":…}.
func (r LMEReport) writeLevel(b *bytes.Buffer, lr LMELevelReport) {
	b.WriteByte('{')
	for i, k := range r.K {
		fmt.Fprintf(b, `"recall_any@%d":%s,"recall_all@%d":%s,`, k, jsonNum(lr.Any[i]), k, jsonNum(lr.All[i]))
	}
	fmt.Fprintf(b, `"ndcg@10":%s}`, jsonNum(lr.NDCG10))
}

// MarshalJSON writes {"round":{"recall_any@5":…,"recall_all@10":…,
// "ndcg@10":…},"session":{…},"by_type":{"multi-session":{"questions":N,
// "round":{…},"session":{…}},…},"questions":N,"injected":{"mean_lines":…,
// "mean_tokens":…,"round_recall_all":…,"session_recall_all":…,"mean_excerpts":…,
// "answer_checkable":N,"answer_in_text":…},
// "abstention":{"questions":N,"mean_lines":…,"mean_tokens":…}}, in percent
// rounded to two decimals (means of lines and tokens as they are), and,
// when the report has misses, "misses":[{"id":…,"type":…,"question":…,
// "evidence":[{"session":…,"rank":…,"message":…,"reply":…,"above":…,
// "text":…},…]},…] after "abstention".
func (r LMEReport) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"round":`)
	r.writeLevel(&b, r.Levels[RoundLevel])
	b.WriteString(`,"session":`)
	r.writeLevel(&b, r.Levels[SessionLevel])
	b.WriteString(`,"by_type":{`)
	for i, t := range r.types() {
		if i > 0 {
			b.WriteByte(',')
		}
		tr := r.ByType[t]
		fmt.Fprintf(&b, `%q:{"questions":%d,"round":`, t, tr.Questions)
		r.writeLevel(&b, tr.Levels[RoundLevel])
		b.WriteString(`,"session":`)
		r.writeLevel(&b, tr.Levels[SessionLevel])
		b.WriteByte('}')
	}
	fmt.Fprintf(&b, `},"questions":%d,"injected":{"mean_lines":%s,"mean_tokens":%s,"round_recall_all":%s,"session_recall_all":%s,"mean_excerpts":%s,"answer_checkable":%d,"answer_in_text":%s}`,
		r.Questions, jsonNum(r.Injected.MeanLines), jsonNum(r.Injected.MeanTokens),
		jsonNum(r.Injected.RecallAll[RoundLevel]), jsonNum(r.Injected.RecallAll[SessionLevel]),
		jsonNum(r.Injected.MeanExcerpts), r.Injected.Checkable, jsonNum(r.Injected.AnswerIn))
	fmt.Fprintf(&b, `,"abstention":{"questions":%d,"mean_lines":%s,"mean_tokens":%s}`,
		r.Abstention.Questions, jsonNum(r.Abstention.MeanLines), jsonNum(r.Abstention.MeanTokens))
	if len(r.Misses) > 0 {
		ms, err := json.Marshal(r.Misses)
		if err != nil {
			return nil, fmt.Errorf("write report: %w", err)
		}
		b.WriteString(`,"misses":`)
		b.Write(ms)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// WriteTable prints the report as aligned text tables: recall by level and
// question type, then what recall would inject.
func (r LMEReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "level\ttype\tquestions\t")
	for _, k := range r.K {
		fmt.Fprintf(tw, "any@%d\t", k)
	}
	for _, k := range r.K {
		fmt.Fprintf(tw, "all@%d\t", k)
	}
	fmt.Fprintln(tw, "ndcg@10\t")
	row := func(l Level, name string, n int, lr LMELevelReport) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t", l, name, n)
		for _, v := range lr.Any {
			fmt.Fprintf(tw, "%.1f\t", v)
		}
		for _, v := range lr.All {
			fmt.Fprintf(tw, "%.1f\t", v)
		}
		fmt.Fprintf(tw, "%.1f\t\n", lr.NDCG10)
	}
	for _, l := range levels {
		for _, t := range r.types() {
			row(l, t, r.ByType[t].Questions, r.ByType[t].Levels[l])
		}
		row(l, "all", r.Questions, r.Levels[l])
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	_, err := fmt.Fprintf(w, "injected into the prompt: %.2f lines (%.0f tokens) a question; every evidence round among them %.1f%%, every evidence session %.1f%%\n"+
		"  excerpts: %.2f of the lines; answer in the lines' text: %.1f%% of the %d questions whose answer an evidence turn holds verbatim\n"+
		"abstention (left out of recall): %d questions, %.2f lines (%.0f tokens) injected a question\n",
		r.Injected.MeanLines, r.Injected.MeanTokens, r.Injected.RecallAll[RoundLevel], r.Injected.RecallAll[SessionLevel],
		r.Injected.MeanExcerpts, r.Injected.AnswerIn, r.Injected.Checkable,
		r.Abstention.Questions, r.Abstention.MeanLines, r.Abstention.MeanTokens)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return writeMisses(w, r.Misses)
}
