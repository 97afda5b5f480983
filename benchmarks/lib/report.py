"""A run from its work directory to its report: run_benchmark (a script's main: parse, run,
report), start_run (the output and work directories), text_table / md_table, print_notes /
print_section, md_bullets, md_header (the command, Spark, Python, CPUs), engine_state (the
engine's commit and uncommitted changes), finish_run (the .md written, the work directory
deleted unless --keep)."""
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from typing import NamedTuple, Optional

from benchmarks.lib import REPO


class Run(NamedTuple):
    """Where a run writes: its reports into `out`, its warehouse and metastore into `tmp`
    (None for a report merged from earlier runs); `started` is its perf_counter at start."""
    out: str
    tmp: Optional[str]
    started: float

    def path(self, name):
        """A file of the output directory."""
        return os.path.join(self.out, name)


def say(message):
    """A progress line, printed at once (a benchmark's output is often piped)."""
    print(message, flush=True)


def start_run(out, prefix):
    """The output directory (created) and a new work directory `<out>/<prefix>XXXX/` in it."""
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=prefix, dir=out)
    return Run(out, tmp, time.perf_counter())


def run_benchmark(argv, parse_args, run, report):
    """A benchmark's main: parse the arguments, run (run(args) returns what it measured),
    report (report(args, measured, argv)); exit status 0."""
    args = parse_args(argv)
    report(args, run(args), argv)
    return 0


def text_table(head, body):
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    line = lambda cells: "  ".join(str(c).rjust(w) if i else str(c).ljust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(b) for b in body])


def md_table(head, body):
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    out += ["| " + " | ".join(str(c) for c in b) + " |" for b in body]
    return "\n".join(out)


def print_notes(notes, bullet="  * "):
    for note in notes:
        print(bullet + note, flush=True)


def print_section(title, head=None, body=(), notes=(), bullet="  * "):
    """A blank line, the title, the text table (when head is given) and the notes."""
    print()
    print(title)
    if head is not None:
        print(text_table(head, body))
    print_notes(notes, bullet)


def md_bullets(lines):
    return [f"- {x}" for x in lines]


def command_line(script, argv=None):
    """How the benchmark was run: `python benchmarks/<script> <arguments>`."""
    args = sys.argv[1:] if argv is None else argv
    return ("python benchmarks/" + script + " " + " ".join(args)).strip()


def md_header(title, command, spark_version):
    """The report's title and the line naming the command, when, Spark, Python and CPUs."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return [f"# {title}", "",
            f"`{command}` - {stamp}, Spark {spark_version}, Python {platform.python_version()}, "
            f"{os.cpu_count()} CPUs.", ""]


def engine_state():
    """The engine's commit and uncommitted changes: the results belong to this code."""
    try:
        head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--short", "--", "python_adapter"],
                               capture_output=True, text=True, check=True).stdout.split("\n")
        dirty = [d.strip() for d in dirty if d.strip()]
        return f"engine at {head}" + (f" with uncommitted changes ({', '.join(dirty)})"
                                      if dirty else "")
    except Exception:
        return "engine version unknown"


def write_lines(path, lines):
    with open(path, "w") as fh:
        fh.write("\n".join(lines))


def finish_run(run, md_name, md_lines, keep, also_written=()):
    """Write the markdown report, say what was written, drop the work dir unless kept."""
    md_path = run.path(md_name)
    write_lines(md_path, md_lines)
    print()
    for path in (md_path, *also_written):
        print(f"wrote {path}")
    if keep:
        print(f"kept warehouse and metastore in {run.tmp}")
    else:
        shutil.rmtree(run.tmp, ignore_errors=True)
    print(f"total {time.perf_counter() - run.started:.0f}s")
