package qmat

func simdKernels() []kernel { return nil }
