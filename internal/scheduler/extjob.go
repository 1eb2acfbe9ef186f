package scheduler

import (
	"context"

	"github.com/reverie-ai/reverie/extension"
)

// ExtensionJob is the job of a SchedulerProvider (an extension's, or a
// built-in feature's: the heartbeat, dreaming) as the scheduler runs it:
// named "<owner>/<Name>", its JobReport (or Run's error) going into the
// run's receipt.
func ExtensionJob(owner string, j extension.Job) Job {
	out := Job{Name: owner + "/" + j.Name, Schedule: j.Schedule, Timeout: j.Timeout}
	switch {
	case j.Report != nil:
		report := j.Report
		out.Run = func(ctx context.Context) (RunReport, error) {
			r, err := report(ctx)
			return RunReport{Usage: r.Usage, Note: r.Note, Skipped: r.Skipped}, err
		}
	case j.Run != nil:
		run := j.Run
		out.Run = func(ctx context.Context) (RunReport, error) { return RunReport{}, run(ctx) }
	}
	return out
}
