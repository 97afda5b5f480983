"""Every YAML and SQL example of the documentation is checked.

The documents: README.md, docs/**/*.md and benchmarks/README.md (the site includes it).
Every fenced block carries a language tag:

- ```sql: a model (`{{ config(...) }}`) or a snapshot (`{% snapshot %}`). All of them are
  written into one small dbt project and built by real dbt in one invocation (`dbt build`,
  a first run of each), on an embedded `sized_spark` profile: a model they ref must be one
  the docs show as a file (```sql title="models/stg_events.sql"), a source they name gets
  a table (SOURCE_TABLES); then each node's config from the manifest must pass the
  adapter's own checks: `unknown_key_error` (no key that looks like a typo of ours) and
  `parse_config` (every value valid).
- Getting started's project (its blocks shown as files) is written as shown and its
  commands (the `dbt ...` lines of its bash blocks) run in order: test_getting_started.py.
- ```yaml / ```yml: parsed with yaml.safe_load, then by kind: a profile (`outputs`: type
  `sized_spark`, a known method, string Spark settings), a fragment of one
  (`server_side_parameters` or `spark.*` keys), or a dbt properties file (`models:`), whose
  configs pass the same checks and whose data tests exist with the arguments they take.
- ```bash, ```diff, ```text: not run (commands, diffs, log output).
- ```python: a dbt Python model, not run here: each is a model of tests/functional/dbt_python
  as it is, which tests/functional/dbt/test_python_models.py runs.

A block is exempted only by the marker `<!-- docs-test: skip -->` on the line before its
fence; there should be very few.
"""
import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import List

import pytest
import yaml

from python_adapter.core.config import parse_config
from python_adapter.core.config_keys import unknown_key_error

ROOT = Path(__file__).resolve().parents[2]
SKIP_MARKER = "<!-- docs-test: skip -->"
CHECKED = {"yaml", "yml", "sql"}
NOT_RUN = {"bash", "diff", "text", "python"}
FENCE = re.compile(r'^(?P<indent>[ \t]*)(?P<fence>```+)(?P<lang>[^\s`]*)'
                   r'(?:\s+title="(?P<title>[^"]*)")?\s*$')
# dbt's generic tests, and ours (macros/tests/)
DBT_TESTS = {"unique", "not_null", "accepted_values", "relationships"}
METHODS = {"session", "connect", "thrift", "http", "odbc"}


@dataclass
class Block:
    path: Path
    line: int
    lang: str
    text: str
    skipped: bool
    title: str = ""  # a block shown as a file (```sql title="models/events.sql"): its path

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def doc_files() -> List[Path]:
    files = [ROOT / "README.md", ROOT / "benchmarks" / "README.md"]
    files += sorted((ROOT / "docs").rglob("*.md"))
    return files


def blocks_of(path: Path) -> List[Block]:
    lines = path.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = m.group("indent"), m.group("fence")
        start, body = i, []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            i += 1
        previous = lines[start - 1].strip() if start > 0 else ""
        out.append(Block(path, start + 1, m.group("lang").lower(), "\n".join(body) + "\n",
                         previous == SKIP_MARKER, m.group("title") or ""))
        i += 1
    return out


ALL_BLOCKS = [b for f in doc_files() for b in blocks_of(f)]


def dbt_config_keys():
    """The config keys dbt and dbt-spark declare (the adapter's own list)."""
    from dbt.adapters.sized_spark.impl import _dbt_config_keys
    return _dbt_config_keys()


def check_model_config(config: dict, where: str) -> None:
    error = unknown_key_error(config.keys(), dbt_config_keys())
    assert error is None, f"{where}: {error}"
    parse_config(config)  # raises ConfigError naming the key


def test_every_block_is_tagged_and_few_are_skipped():
    assert ALL_BLOCKS, "no fenced blocks found"
    untagged = [b.where for b in ALL_BLOCKS if b.lang not in CHECKED | NOT_RUN]
    assert not untagged, (f"fenced blocks need a language tag from "
                          f"{sorted(CHECKED | NOT_RUN)}: {untagged}")
    skipped = [b.where for b in ALL_BLOCKS if b.skipped]
    assert len(skipped) <= 3, f"too many blocks exempted with {SKIP_MARKER}: {skipped}"


# -- YAML ------------------------------------------------------------------------------

def _spark_settings(settings, where):
    assert isinstance(settings, dict), f"{where}: server_side_parameters must be a mapping"
    for key, value in settings.items():
        assert isinstance(key, str) and key.startswith("spark."), f"{where}: {key!r} is not a Spark setting"
        assert isinstance(value, str), (f"{where}: {key}: {value!r} should be quoted: dbt-spark "
                                        f"passes server_side_parameters as strings")


def _macro_arguments(test_name):
    path = ROOT / "macros" / "tests" / f"{test_name}.sql"
    if not path.exists():
        return None
    m = re.search(r"{%-?\s*test\s+" + re.escape(test_name) + r"\((?P<args>[^)]*)\)", path.read_text())
    return {a.split("=")[0].strip() for a in m.group("args").split(",")} - {"model", "column_name"}


def _check_tests(tests, where):
    for test in tests or []:
        if isinstance(test, str):
            name, args = test, {}
        else:
            (name, args), = test.items()
            args = dict(args or {})
            args = dict(args.pop("arguments", None) or {}, **{k: v for k, v in args.items()
                                                            if k != "config"})
        allowed = _macro_arguments(name)
        assert name in DBT_TESTS or allowed is not None, f"{where}: no generic test {name!r}"
        if allowed is not None:
            unknown = set(args) - allowed
            assert not unknown, f"{where}: {name} takes no argument {sorted(unknown)}"


def _target_fields():
    """The keys a sized_spark profile's target takes (its credentials' fields)."""
    from dataclasses import fields

    from dbt.adapters.sized_spark.credentials import SizedSparkCredentials
    return {f.name for f in fields(SizedSparkCredentials)} | {"type", "threads"}


def check_yaml(block: Block) -> None:
    doc = yaml.safe_load(block.text)
    assert isinstance(doc, dict), f"{block.where}: expected a mapping"
    if block.title == "dbt_project.yml":  # getting started's project, run by its own test
        assert {"name", "profile"} <= set(doc), f"{block.where}: a project needs name and profile"
        return
    if "models" in doc or "snapshots" in doc:  # a dbt properties file
        for kind in ("models", "snapshots"):
            for node in doc.get(kind) or []:
                assert "name" in node, f"{block.where}: a {kind} entry without a name"
                check_model_config(dict(node.get("config") or {}), block.where)
                _check_tests(node.get("data_tests") or node.get("tests"), block.where)
                for column in node.get("columns") or []:
                    _check_tests(column.get("data_tests") or column.get("tests"), block.where)
        return
    profiles = [v for v in doc.values() if isinstance(v, dict) and "outputs" in v]
    if profiles:
        for profile in profiles:
            for name, target in profile["outputs"].items():
                where = f"{block.where} ({name})"
                assert target.get("type") == "sized_spark", f"{where}: type must be sized_spark"
                assert target.get("method") in METHODS, f"{where}: unknown method {target.get('method')!r}"
                if target["method"] == "session":
                    assert "schema" in target, f"{where}: a profile needs a schema"
                _spark_settings(target.get("server_side_parameters") or {}, where)
        return
    if "server_side_parameters" in doc:
        _spark_settings(doc["server_side_parameters"], block.where)
        return
    if all(isinstance(k, str) and k.startswith("spark.") for k in doc):
        _spark_settings(doc, block.where)
        return
    if set(doc) <= _target_fields():  # a fragment of a profile's target
        return
    pytest.fail(f"{block.where}: a YAML block that is neither a profile, a fragment of one, "
                f"nor a dbt properties file; tag it otherwise or mark it {SKIP_MARKER}")


YAML_BLOCKS = [b for b in ALL_BLOCKS if b.lang in ("yaml", "yml") and not b.skipped]


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=[b.where for b in YAML_BLOCKS])
def test_yaml_example(block):
    check_yaml(block)


# -- SQL: one dbt project, one dbt compile ------------------------------------------------

SQL_BLOCKS = [b for b in ALL_BLOCKS if b.lang == "sql" and not b.skipped]
REF = re.compile(r"""\bref\(\s*['"](\w+)['"]\s*\)""")
SOURCE = re.compile(r"""\bsource\(\s*['"](\w+)['"]\s*,\s*['"](\w+)['"]\s*\)""")
SNAPSHOT = re.compile(r"{%-?\s*snapshot\s+(\w+)\s*-?%}")


def _node_name(block: Block) -> str:
    """A block shown as a model file is that model (getting started's `stg_events`, which
    the other pages' examples read); any other is named after where it is."""
    if block.title.startswith("models/"):
        return Path(block.title).stem
    rel = str(block.path.relative_to(ROOT)).replace("/", "_").replace("-", "_")
    return "doc_" + re.sub(r"\W", "_", rel[:-3]).lower() + f"_{block.line}"


def _profile(name: str, spark_home: Path) -> dict:
    home = str(spark_home)
    return {name: {"target": "embedded", "outputs": {"embedded": {
        "type": "sized_spark", "method": "session", "host": "localhost", "schema": "docs",
        "threads": 1, "server_side_parameters": {
            "spark.master": "local[1]",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.warehouse.dir": os.path.join(home, "warehouse"),
            "spark.hadoop.javax.jdo.option.ConnectionURL":
                f"jdbc:derby:;databaseName={os.path.join(home, 'metastore_db')};create=true",
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={home}"}}}}}


# The tables the examples' sources name, made before the build (dbt's on-run-start) with
# the columns the examples read
SOURCE_TABLES = {("crm", "customers"): "select 1 as id, 'a' as name, "
                                       "current_timestamp() as updated_at"}
# microbatch examples build these days, not every day from their `begin` to today
BATCH_WINDOW = ["--event-time-start", "2026-01-28", "--event-time-end", "2026-01-31"]


def _write_project(root: Path, spark_home: Path) -> dict:
    """The dbt project of every SQL block and of the model files the docs show; returns
    {node name: block}. Every model an example refs must be one of them, every source one
    of SOURCE_TABLES."""
    (root / "models").mkdir(parents=True)
    (root / "snapshots").mkdir()
    sources = sorted({s for b in SQL_BLOCKS for s in SOURCE.findall(b.text)})
    missing = [s for s in sources if s not in SOURCE_TABLES]
    assert not missing, f"sources without a table in SOURCE_TABLES: {missing}"
    on_run_start = [f"create database if not exists {s}" for s in sorted({s for s, _ in sources})]
    on_run_start += [f"create table if not exists {s}.{t} using parquet as {SOURCE_TABLES[(s, t)]}"
                     for s, t in sources]
    (root / "dbt_project.yml").write_text(yaml.safe_dump({
        "name": "docs_examples", "version": "1.0", "config-version": 2,
        "profile": "docs_examples", "model-paths": ["models"], "snapshot-paths": ["snapshots"],
        "on-run-start": on_run_start}))
    (root / "profiles.yml").write_text(yaml.safe_dump(_profile("docs_examples", spark_home)))
    nodes, refs = {}, set()
    for block in SQL_BLOCKS:
        assert "{{ config(" in block.text or SNAPSHOT.search(block.text), (
            f"{block.where}: a SQL block must be a model ({{{{ config(...) }}}}) or a snapshot; "
            f"tag it otherwise or mark it {SKIP_MARKER}")
        snap = SNAPSHOT.search(block.text)
        name = _node_name(block)
        assert name not in nodes, f"{block.where}: a second model file {block.title}"
        if snap:
            text = SNAPSHOT.sub("{% snapshot " + name + " %}", block.text, count=1)
            (root / "snapshots" / f"{name}.sql").write_text(text)
        else:
            (root / "models" / f"{name}.sql").write_text(block.text)
        nodes[name] = block
        refs.update((r, block.where) for r in REF.findall(block.text))
    unmade = sorted(f"{where}: ref('{ref}')" for ref, where in refs if ref not in nodes)
    assert not unmade, f"models the examples read that no example makes: {unmade}"
    by_source = {}
    for source, table in sources:
        by_source.setdefault(source, []).append({"name": table})
    if by_source:
        (root / "models" / "sources.yml").write_text(yaml.safe_dump({"version": 2, "sources": [
            {"name": s, "schema": s, "tables": t} for s, t in by_source.items()]}))
    return nodes


RUNNER = ("import sys; from dbt.cli.main import dbtRunner; "
          "sys.exit(0 if dbtRunner().invoke(sys.argv[1:]).success else 1)")


def _dbt_env():
    return dict(os.environ, SPARK_LOCAL_IP=os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
                DBT_SEND_ANONYMOUS_USAGE_STATS="false")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """dbt build of every SQL example (a first run of each: models, snapshots), in a process
    of its own (its Spark session must not become this process's: the first session in a
    process wins)."""
    if not SQL_BLOCKS:
        pytest.skip("no SQL examples")
    root = tmp_path_factory.mktemp("docs_project")
    nodes = _write_project(root / "project", root / "spark")
    project = root / "project"
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, "build", "--project-dir", str(project),
         "--profiles-dir", str(project), "--no-partial-parse", *BATCH_WINDOW],
        cwd=project, env=_dbt_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (
        "dbt build of the docs' SQL examples failed (models are named "
        "doc_<file>_<line>, or as the file the docs show):\n" + proc.stdout[-6000:]
        + proc.stderr[-3000:])
    manifest = json.loads((project / "target" / "manifest.json").read_text())
    results = json.loads((project / "target" / "run_results.json").read_text())
    status = {r["unique_id"]: r["status"] for r in results["results"]}
    by_name = {n["name"]: {**n, "build_status": status.get(uid)}
               for uid, n in manifest["nodes"].items()}
    return nodes, by_name


@pytest.mark.parametrize("block", SQL_BLOCKS, ids=[b.where for b in SQL_BLOCKS])
def test_sql_example(block, compiled):
    nodes, by_name = compiled
    node = by_name[_node_name(block)]
    assert node["build_status"] == "success", f"{block.where}: {node['build_status']}"
    config = {k: v for k, v in node["config"].items() if v is not None}
    check_model_config(config, block.where)
