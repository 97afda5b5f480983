"""Every YAML and SQL example of the documentation is checked.

The documents: README.md, docs/**/*.md and benchmarks/README.md (the site includes it).
Every fenced block carries a language tag:

- ```sql: a model (`{{ config(...) }}`) or a snapshot (`{% snapshot %}`). All of them are
  written into one small dbt project and compiled by real dbt in one invocation, on an
  embedded `sized_spark` profile (refs and sources they name get stub models and a sources
  file); then each node's config from the manifest must pass the adapter's own checks:
  `unknown_key_error` (no key that looks like a typo of ours) and `parse_config` (every
  value valid).
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
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+)(?P<lang>[^\s`]*)\s*$")
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
                         previous == SKIP_MARKER))
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


def check_yaml(block: Block) -> None:
    doc = yaml.safe_load(block.text)
    assert isinstance(doc, dict), f"{block.where}: expected a mapping"
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
    rel = str(block.path.relative_to(ROOT)).replace("/", "_").replace("-", "_")
    return "doc_" + re.sub(r"\W", "_", rel[:-3]).lower() + f"_{block.line}"


def _write_project(root: Path, spark_home: Path) -> dict:
    """The dbt project of every SQL block; returns {node name: block}."""
    (root / "models").mkdir(parents=True)
    (root / "snapshots").mkdir()
    (root / "dbt_project.yml").write_text(textwrap.dedent("""\
        name: docs_examples
        version: "1.0"
        config-version: 2
        profile: docs_examples
        model-paths: ["models"]
        snapshot-paths: ["snapshots"]
        """))
    home = str(spark_home)
    profile = {"docs_examples": {"target": "embedded", "outputs": {"embedded": {
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
    (root / "profiles.yml").write_text(yaml.safe_dump(profile))
    nodes, refs, sources = {}, set(), set()
    for block in SQL_BLOCKS:
        assert "{{ config(" in block.text or SNAPSHOT.search(block.text), (
            f"{block.where}: a SQL block must be a model ({{{{ config(...) }}}}) or a snapshot; "
            f"tag it otherwise or mark it {SKIP_MARKER}")
        snap = SNAPSHOT.search(block.text)
        name = _node_name(block)
        if snap:
            text = SNAPSHOT.sub("{% snapshot " + name + " %}", block.text, count=1)
            (root / "snapshots" / f"{name}.sql").write_text(text)
        else:
            (root / "models" / f"{name}.sql").write_text(block.text)
        nodes[name] = block
        refs.update(REF.findall(block.text))
        sources.update(SOURCE.findall(block.text))
    for ref in sorted(refs - set(nodes)):  # the models the examples read
        (root / "models" / f"{ref}.sql").write_text(
            "{{ config(materialized='view') }}\nselect 1 as id\n")
    by_source = {}
    for source, table in sorted(sources):
        by_source.setdefault(source, []).append({"name": table})
    if by_source:
        (root / "models" / "sources.yml").write_text(yaml.safe_dump({"version": 2, "sources": [
            {"name": s, "schema": s, "tables": t} for s, t in by_source.items()]}))
    return nodes


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """dbt compile of every SQL example, in a process of its own (its Spark session must not
    become this process's: the first session in a process wins)."""
    if not SQL_BLOCKS:
        pytest.skip("no SQL examples")
    root = tmp_path_factory.mktemp("docs_project")
    nodes = _write_project(root / "project", root / "spark")
    project = root / "project"
    env = dict(os.environ, SPARK_LOCAL_IP=os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
               DBT_SEND_ANONYMOUS_USAGE_STATS="false")
    runner = ("import sys; from dbt.cli.main import dbtRunner; "
              "sys.exit(0 if dbtRunner().invoke(sys.argv[1:]).success else 1)")
    proc = subprocess.run(
        [sys.executable, "-c", runner, "compile", "--project-dir", str(project),
         "--profiles-dir", str(project), "--no-partial-parse"],
        cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (
        "dbt compile of the docs' SQL examples failed (models are named "
        "doc_<file>_<line>):\n" + proc.stdout[-6000:] + proc.stderr[-3000:])
    manifest = json.loads((project / "target" / "manifest.json").read_text())
    by_name = {n["name"]: n for n in manifest["nodes"].values()}
    return nodes, by_name


@pytest.mark.parametrize("block", SQL_BLOCKS, ids=[b.where for b in SQL_BLOCKS])
def test_sql_example(block, compiled):
    nodes, by_name = compiled
    node = by_name[_node_name(block)]
    assert node.get("compiled_code") is not None or node["resource_type"] == "snapshot", (
        f"{block.where}: not compiled")
    config = {k: v for k, v in node["config"].items() if v is not None}
    check_model_config(config, block.where)
