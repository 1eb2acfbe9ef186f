package workflow

func runHelperProcess() bool { return false }
