"""The demo, in one dbt process (dbtRunner): a full build of integration_tests/ on the
embedded Spark session, an incremental run (the last week again), and the files of the
sized tables next to dbt-spark's own `incremental` on the same rows.

    python scripts/demo.py            # from the repository, after scripts/setup.sh demo
    python scripts/demo.py s3         # the same with the warehouse on a local S3 server
                                      # (SeaweedFS, started for the demo and stopped after
                                      # it; the profile's s3 target), after setup.sh demo s3
"""
import os
import shutil
import sys
import time
from pathlib import Path

from typing import List

from dbt.cli.main import dbtRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks.lib: a free port
from python_adapter.cli import object_store  # noqa: E402
from python_adapter.cli.jars import s3a_jars  # noqa: E402

PROJECT = Path(__file__).resolve().parents[1] / "integration_tests"
STEPS = [
    ("a full build of every model, seed and test", ["build", "--full-refresh"]),
    ("an incremental run: the last week's partitions again", ["build"]),
    ("the files of the tables", ["run-operation", "demo_summary"]),
]


def main(argv: List[str]) -> int:
    target = argv[0] if argv else "embedded"
    os.chdir(PROJECT)
    os.environ.setdefault("SIZED_SPARK_HOME", str(PROJECT / ".spark"))
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if not os.environ.get("KEEP_STATE"):
        shutil.rmtree(os.environ["SIZED_SPARK_HOME"], ignore_errors=True)
        shutil.rmtree(PROJECT / "target", ignore_errors=True)
    if target != "s3":
        return run(target)
    server = local_s3()
    try:
        return run(target)
    finally:
        object_store.stop(server)


def local_s3() -> "object_store.S3Server":
    """SeaweedFS for the s3 target, its state under .spark/ (a fresh bucket each demo),
    on SIZED_S3_PORT or a free port; the S3A jars fetched once."""
    from benchmarks.lib.session import free_port

    os.environ.setdefault("SIZED_S3_PORT", str(free_port()))
    os.environ["SIZED_S3_DIR"] = os.path.join(os.environ["SIZED_SPARK_HOME"], "s3")
    server = object_store.server_from_env(os.environ)
    os.environ["SIZED_S3A_JARS"] = ",".join(s3a_jars(os.environ))
    print(f"S3 server (SeaweedFS): {object_store.start(server)}, bucket {server.bucket}",
          flush=True)
    return server


# SeaweedFS keeps the empty `_temporary/` folder Spark's committer leaves in a table's
# directory and lists it (S3 does not), so Spark refuses to create a managed table again at
# that path: on the local S3 the seed, which dbt-spark drops and creates again on every
# build, is built by the first build only (its rows do not change)
SEED_ONCE = ["--exclude", "resource_type:seed"]


def run(target: str) -> int:
    started = time.monotonic()
    runner = dbtRunner()
    steps = [(what, [*args, *SEED_ONCE] if target == "s3" and i > 1 and args[0] == "build"
              else args) for i, (what, args) in enumerate(STEPS, 1)]
    for i, (what, args) in enumerate(steps, 1):
        print(f"\n=== demo step {i} of {len(STEPS)}: {what} (dbt {' '.join(args)})", flush=True)
        if not runner.invoke([*args, "--profiles-dir", str(PROJECT), "--target",
                              target]).success:
            print(f"demo step {i} failed", file=sys.stderr)
            return 1
    print(f"\ndemo done in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
