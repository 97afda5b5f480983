"""What `python -m build` makes is what a user installs: an sdist and a wheel (built from that
sdist) carrying the license, the macros and the compiled Java helpers; the wheel, installed in
a fresh venv on a host with only a Java runtime, runs `dbt run` of a sized model on the
embedded Spark, binding it to loopback without being told to. The wheel's `connect` extra
installs a Spark Connect client without a JVM's part: no pyspark, py4j or Spark jars.

Kept cheap: the build reuses pip's cache (setuptools, pyspark), and the fresh venv sees the
test venv's dependencies through a tree of links that leaves this project's installed copy
out, so only the wheel is installed in it (--no-deps)."""
import glob
import importlib.metadata
import io
import ipaddress
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
JAR = "python_adapter/io/sized-spark-helpers.jar"
CONNECT_JAR = "python_adapter/io/sized-spark-connect.jar"  # the Spark Connect server's extension
MODEL = """{{ config(materialized='table', partition_by=['day']) }}
-- the host the driver bound to, as Spark substitutes it
select id, date_add(date'2025-03-01', id % 3) as day, '${spark.driver.host}' as driver_host
from (select explode(sequence(1, 300)) as id)
"""
PROFILE = """packaged:
  target: embedded
  outputs:
    embedded:
      type: sized_spark
      method: session
      host: localhost
      schema: packaged
      threads: 1
      server_side_parameters:
        spark.master: "local[1]"
        spark.ui.enabled: "false"
        spark.ui.showConsoleProgress: "false"
        spark.sql.shuffle.partitions: "2"
        spark.sql.warehouse.dir: "{home}/warehouse"
        spark.hadoop.javax.jdo.option.ConnectionURL: "jdbc:derby:;databaseName={home}/metastore_db;create=true"
        spark.driver.extraJavaOptions: "-Dderby.system.home={home}"
"""


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def _one(folder, pattern):
    found = glob.glob(str(folder / pattern))
    assert len(found) == 1, found
    return found[0]


def _macros():
    return sorted(str(p.relative_to(REPO)) for p in (REPO / "macros").rglob("*")
                  if p.suffix in (".sql", ".yml"))


def test_the_wheel_holds_the_license_the_macros_and_the_compiled_helpers(dist):
    with zipfile.ZipFile(_one(dist, "*.whl")) as wheel:
        names = set(wheel.namelist())
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        metadata = wheel.read(f"{info}/METADATA").decode()
        jar = wheel.read(JAR)
        connect_jar = wheel.read(CONNECT_JAR) if CONNECT_JAR in names else None
        license_text = wheel.read(f"{info}/licenses/LICENSE").decode()
    assert "License-Expression: Apache-2.0" in metadata
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert f"{info}/licenses/NOTICE" in names
    requires = re.findall(r"^Requires-Dist: (.*)$", metadata, re.M)
    base = {re.match(r"[\w.-]+", r).group(0) for r in requires if "extra ==" not in r}
    assert {"dbt-core", "dbt-adapters", "dbt-common", "dbt-spark"} <= base
    # Spark comes with the method's extra: pyspark for session, the pure client for connect
    assert not base & {"pyspark", "pyspark-client", "py4j"}, base
    assert any(r.startswith("pyspark") and 'extra == "session"' in r for r in requires)
    assert any(r.startswith("pyspark-client") and 'extra == "connect"' in r for r in requires)
    assert {f"dbt/include/sized_spark/{m}" for m in _macros()} <= names
    with zipfile.ZipFile(io.BytesIO(jar)) as helpers:
        classes = set(helpers.namelist())
        header = helpers.read("sizedspark/fs/NioLocalFileSystem.class")[:8]
    assert {"sizedspark/fs/NioLocalFileSystem.class", "sizedspark/fs/StagedFiles.class",
            "sizedspark/fs/PartitionRecords.class"} <= classes
    assert int.from_bytes(header[6:8], "big") == 61  # Java 17, what Spark 3.5 and 4 run on
    # the build resolves build-system.requires' pyspark to 4.x, whose jars hold Spark Connect:
    # the wheel ships the Connect server's extension (setup.py), the helpers in it too
    assert CONNECT_JAR in names, f"{CONNECT_JAR} missing: was the build's pyspark 3.5?"
    with zipfile.ZipFile(io.BytesIO(connect_jar)) as extension:
        classes = set(extension.namelist())
        header = extension.read("sizedspark/connect/SizedOps.class")[:8]
    assert {"sizedspark/connect/SizedOps.class", "sizedspark/connect/FileOps.class",
            "sizedspark/connect/CatalogOps.class", "sizedspark/connect/SessionOps.class",
            "sizedspark/fs/NioLocalFileSystem.class"} <= classes
    assert int.from_bytes(header[6:8], "big") == 61


def test_the_sdist_holds_what_the_wheel_is_built_from(dist):
    with tarfile.open(_one(dist, "*.tar.gz")) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {"LICENSE", "NOTICE", "pyproject.toml", "setup.py", *_macros()} <= names
    assert "python_adapter/io/java/sizedspark/fs/NioLocalFileSystem.java" in names


def _deps_view(target):
    """The test venv's site-packages as links, without this project's installed files."""
    site = Path(importlib.metadata.distribution("dbt-core").locate_file(""))
    ours = set()
    for dist in importlib.metadata.distributions(path=[str(site)]):  # not the checkout's
        if dist.metadata["Name"] == "dbt-sized-spark":
            ours |= {str(f).split("/")[0] if ".dist-info/" in str(f) else str(f)
                     for f in dist.files or []}
    _link_tree(site, target, "", ours)


def _link_tree(source, target, rel, ours):
    """Links `source`'s entries into `target`, going down into the folders that hold files of
    ours (dbt/ is shared with dbt-core) and leaving those files and their bytecode out."""
    target.mkdir(parents=True, exist_ok=True)
    for entry in os.listdir(source):
        path = f"{rel}{entry}"
        if path in ours or entry == "__pycache__" and rel:
            continue
        if any(o.startswith(f"{path}/") for o in ours) and (source / entry).is_dir():
            _link_tree(source / entry, target / entry, f"{path}/", ours)
        else:
            os.symlink(source / entry, target / entry)
    if not os.listdir(target):
        target.rmdir()


def _jre_only(home):
    """A JAVA_HOME holding the java that runs Spark and no javac: a host without a JDK."""
    java = os.path.realpath(shutil.which("java"))
    (home / "bin").mkdir(parents=True)
    os.symlink(java, home / "bin" / "java")
    return home


def _fresh_venv(tmp_path, wheel):
    """A new venv holding the wheel, and the test venv's other packages: (python, its site)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.check_output(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], text=True).strip())
    _deps_view(tmp_path / "deps")
    (site / "deps.pth").write_text(f"{tmp_path / 'deps'}\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", "--no-index", wheel], check=True, timeout=300)
    return python, site


def _project(folder, home):
    (folder / "models").mkdir(parents=True)
    (folder / "dbt_project.yml").write_text(
        "name: packaged\nversion: '1.0'\nconfig-version: 2\nprofile: packaged\n")
    (folder / "models" / "events.sql").write_text(MODEL)
    (folder / "profiles.yml").write_text(PROFILE.format(home=home))
    return folder


def test_the_wheel_runs_a_sized_model_in_a_fresh_venv_with_only_a_jre(dist, tmp_path):
    python, site = _fresh_venv(tmp_path, _one(dist, "*.whl"))
    home = tmp_path / "spark"
    project = _project(tmp_path / "project", home)
    # no SPARK_LOCAL_IP: the plugin binds a local session to loopback itself
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_LOCAL_IP", "PYSPARK_PYTHON", "PYTHONPATH", "SPARK_HOME")}
    env.update(JAVA_HOME=str(_jre_only(tmp_path / "jre")), XDG_CACHE_HOME=str(tmp_path / "cache"),
               SIZED_SPARK_NO_CLASS_ARCHIVE="1", DBT_SEND_ANONYMOUS_USAGE_STATS="false")
    done = subprocess.run(
        [python, "-c", "import sys; from dbt.cli.main import cli; sys.exit(cli())", "run",
         "--profiles-dir", ".", "--debug"],
        cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]

    # the installed copy ran, with the jar it ships (nothing compiled: there is no javac)
    log = (project / "logs" / "dbt.log").read_text()
    assert f"file: paths through sizedspark.fs.NioLocalFileSystem ({site}/{JAR})" in log
    assert not glob.glob(str(tmp_path / "cache" / "*" / "*.jar"))
    import pyarrow.dataset as ds

    rows = ds.dataset(str(home / "warehouse" / "packaged.db" / "events"), format="parquet",
                      partitioning="hive").to_table().to_pylist()
    assert len(rows) == 300
    hosts = {row["driver_host"] for row in rows}  # Spark 4 names 127.0.0.1 "localhost"
    assert len(hosts) == 1 and ipaddress.ip_address(socket.gethostbyname(hosts.pop())).is_loopback


def _megabytes(folder):
    return sum(os.lstat(os.path.join(root, name)).st_size
               for root, _dirs, files in os.walk(folder) for name in files) / 2**20


def test_the_connect_extra_installs_a_client_without_spark_s_jars(dist, tmp_path):
    """`pip install 'dbt-sized-spark[connect]'` in a fresh venv, its dependencies from the
    package index (or pip's cache): pyspark-client, not pyspark; no py4j, no jar but the
    package's own two (the Connect server's extension ships in the wheel); and the plugin and
    the engine import from it."""
    if int(importlib.metadata.version("pyspark").split(".")[0]) < 4:
        pytest.skip("checked once, in the pyspark 4 run: the connect install has no pyspark")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                           f"{_one(dist, '*.whl')}[connect]"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    site = Path(subprocess.check_output(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], text=True).strip())
    installed = {d.metadata["Name"].lower() for d in importlib.metadata.distributions(path=[str(site)])}
    assert "pyspark-client" in installed and not installed & {"pyspark", "py4j"}, installed
    jars = sorted(str(p.relative_to(site)) for p in site.rglob("*.jar"))
    assert jars == [CONNECT_JAR, JAR], jars
    # importing the plugin and the whole engine needs no JVM's part (py4j, pyspark's classic modules)
    probe = ("import importlib, pkgutil, sys, python_adapter, dbt.adapters.sized_spark\n"
             "for m in pkgutil.walk_packages(python_adapter.__path__, 'python_adapter.'):\n"
             "    importlib.import_module(m.name)\n"
             "print(sorted(k for k in sys.modules if k.split('.')[0] == 'py4j'"
             " or k in ('pyspark.context', 'pyspark.java_gateway')))")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")}
    imported = subprocess.run([python, "-c", probe], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
    assert imported.returncode == 0 and imported.stdout.strip() == "[]", \
        imported.stdout[-2000:] + imported.stderr[-3000:]
    version = subprocess.run([venv / "bin" / "dbt", "--version"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=300)
    assert re.search(r"^\s*- sized_spark:", version.stdout, re.M), version.stdout + version.stderr
    # pyspark's jars alone are ~490 MB: the thin client's whole site-packages is about 570 MB,
    # most of it pyarrow and pandas, which the Connect client needs
    size = _megabytes(site)
    print(f"connect-only venv: site-packages {size:.0f} MB, venv {_megabytes(venv):.0f} MB")
    assert size < 700, f"site-packages is {size:.0f} MB"
