"""The benchmarks still run: every script parses its defaults, and upsert.py (backfill.py's
table written by the engine, then batches by ours and by dbt-spark's append and
insert_overwrite: the write path, the baselines and the report, which most scripts share
through benchmarks/lib) runs end to end at a tiny size in its own process, as a user runs it, and writes its report
(marked extended: SIZED_EXTENDED=1). One run,
not one a script: each costs a JVM start and minutes of CI.

What each script calls in the engine is checked statically for every script as well: mypy
reads the benchmarks' bodies (pyproject.toml, [tool.mypy]; scripts/typecheck.sh in CI), so a
refactor that moves or changes a name a benchmark uses fails there. The figures themselves
are never asserted (benchmarks/README.md holds them, from runs on a quiet machine).
"""
import importlib
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.stem for p in (REPO / "benchmarks").glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_benchmark_parses_its_defaults(name):
    module = importlib.import_module(f"benchmarks.{name}")
    parse = getattr(module, "parse_args", None)
    assert callable(parse) or callable(getattr(module, "main", None)), name
    if callable(parse):
        args = parse([])
        assert vars(args), f"{name}: no options"


# (script, its tiny-size arguments, the file its report writes under --out)
RUNS = [
    ("upsert", ["--rows", "6000", "--batches", "1", "--input-partitions", "2",
                "--driver-memory", "1g"], "upsert.md"),
]


# extended (about 3.5 minutes of CI): the engine calls every script makes are checked by the type
# checker in CI (above), and the defaults of every script by the test above
@pytest.mark.extended
@pytest.mark.parametrize("name,arguments,written", RUNS, ids=[r[0] for r in RUNS])
def test_a_benchmark_runs_end_to_end_at_a_tiny_size(name, arguments, written, tmp_path):
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": str(REPO),
           "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, f"benchmarks/{name}.py", *arguments,
                           "--out", str(tmp_path)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
    assert done.returncode == 0, tail
    reports = list(tmp_path.rglob(written))
    assert reports and reports[0].stat().st_size > 0, f"no {written} under --out:\n{tail}"
