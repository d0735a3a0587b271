# One qaic_fuzz_target() per fuzzed entry point; each part adds its own line.
