"""The JVM jars the pyspark wheel lacks, fetched once from Maven Central with `mvn` into the
user's cache: S3A (hadoop-aws at the Hadoop version of the installed pyspark, and the AWS
SDK bundle it depends on). `sized-spark jars s3a` prints them as a `spark.jars` value."""
import glob
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import List, Mapping, Sequence, Tuple

from python_adapter.errors import ConfigError
from python_adapter.io.fast_local_fs import cache_dir, spark_jars_dir

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>dbt-sized-spark</groupId><artifactId>jars</artifactId><version>1</version>
<dependencies>{dependencies}</dependencies></project>
"""
_DEPENDENCY = """<dependency><groupId>{group}</groupId><artifactId>{name}</artifactId>
<version>{version}</version><scope>runtime</scope><exclusions>{exclusions}</exclusions></dependency>"""
_EXCLUSION = "<exclusion><groupId>{0}</groupId><artifactId>{1}</artifactId></exclusion>"


@dataclass(frozen=True)
class Artifact:
    """A Maven artifact to fetch with its runtime dependencies, less `exclusions`
    ("group:artifact" of what pyspark's own jars already hold)."""
    group: str
    name: str
    version: str
    exclusions: Tuple[str, ...] = ()

    @property
    def coordinates(self) -> str:
        return f"{self.group}:{self.name}:{self.version}"

    def pom_dependency(self) -> str:
        excluded = "".join(_EXCLUSION.format(*e.split(":")) for e in self.exclusions)
        return _DEPENDENCY.format(group=self.group, name=self.name, version=self.version,
                                  exclusions=excluded)


def hadoop_version(env: Mapping[str, str]) -> str:
    """The Hadoop client version the installed pyspark bundles (its hadoop-client-api jar)."""
    jars = glob.glob(os.path.join(spark_jars_dir(env), "hadoop-client-api-*.jar"))
    found = [m.group(1) for j in jars
             if (m := re.search(r"hadoop-client-api-(\d+\.\d+\.\d+)\.jar$", j))]
    if not found:
        raise ConfigError(f"no hadoop-client-api jar in {spark_jars_dir(env)}: is pyspark "
                          f"installed (pip install 'dbt-sized-spark[session]')?")
    return found[0]


def s3a_jars(env: Mapping[str, str]) -> List[str]:
    """The S3A jars for the installed pyspark, fetched on first use (about 690 MB, mostly the
    AWS SDK bundle)."""
    version = hadoop_version(env)
    folder = os.path.join(cache_dir(env), "jars", f"hadoop-aws-{version}")
    return fetched_jars([Artifact("org.apache.hadoop", "hadoop-aws", version)], folder)


def fetched_jars(artifacts: Sequence[Artifact], folder: str) -> List[str]:
    """The jars of `artifacts` and their runtime dependencies, in `folder`: fetched by Maven
    on first use, the folder filled whole or not at all."""
    if not os.path.isdir(folder):
        _fetch(artifacts, folder)
    return sorted(glob.glob(os.path.join(folder, "*.jar")))


def _fetch(artifacts: Sequence[Artifact], folder: str) -> None:
    mvn = shutil.which("mvn")
    names = ", ".join(a.coordinates for a in artifacts)
    if mvn is None:
        raise ConfigError(f"fetching {names} needs Maven (`mvn`, e.g. apt-get install maven); "
                          f"or put their jars on spark.jars yourself")
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    work = tempfile.mkdtemp(prefix=".fetch-", dir=os.path.dirname(folder))
    try:
        with open(os.path.join(work, "pom.xml"), "w", encoding="utf-8") as out:
            out.write(_POM.format(dependencies="".join(a.pom_dependency() for a in artifacts)))
        done = subprocess.run(
            [mvn, "-q", "-B", "-f", os.path.join(work, "pom.xml"), "dependency:copy-dependencies",
             "-DincludeScope=runtime", f"-DoutputDirectory={work}/jars"],
            capture_output=True, text=True)
        if done.returncode != 0:
            raise ConfigError(f"mvn could not fetch {names}: "
                              f"{(done.stdout + done.stderr).strip()[-800:]}")
        os.rename(os.path.join(work, "jars"), folder)  # whole or not at all
    finally:
        shutil.rmtree(work, ignore_errors=True)
