"""The benchmarks of the engine (README.md); their shared code is in benchmarks/lib/."""
