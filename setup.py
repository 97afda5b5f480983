"""dbt-sized-spark's build: the parts pyproject.toml cannot say.

The metadata is in pyproject.toml. Here: the macros live once, in `macros/` at the repo root;
`dbt/include/sized_spark/macros` is a link to it, and the build copies the files it points at
into the package. And the Java helpers (python_adapter/io/java/) are compiled into
python_adapter/io/sized-spark-helpers.jar, so a user's first run needs no JDK
(python_adapter/io/fast_local_fs.py).
"""
import importlib.util
import os
import shutil

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def macro_files():
    out = []
    for root, _dirs, files in os.walk(os.path.join(HERE, "macros")):
        for name in files:
            if name.endswith((".sql", ".yml")):
                rel = os.path.relpath(os.path.join(root, name), os.path.join(HERE, "macros"))
                out.append(os.path.join("macros", rel))
    return out


def _fast_local_fs():
    """python_adapter/io/fast_local_fs.py by its path: importing the package would import
    its dependencies, which the build environment does not have."""
    path = os.path.join(HERE, "python_adapter", "io", "fast_local_fs.py")
    spec = importlib.util.spec_from_file_location("_sized_fast_local_fs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _javac():
    home = os.environ.get("JAVA_HOME")
    javac = os.path.join(home, "bin", "javac") if home else shutil.which("javac")
    if not javac or not os.access(javac, os.X_OK):
        raise SystemExit(
            "dbt-sized-spark: building the wheel compiles its Java helpers and needs a JDK 17+ "
            f"(javac; looked in {'$JAVA_HOME/bin' if home else 'the PATH'}). Install one "
            "(Debian/Ubuntu: openjdk-17-jdk-headless), or install a wheel built with "
            "`python -m build` on a host that has one: it ships the compiled Java helpers and "
            "needs only the Java runtime Spark needs.")
    return javac


def _spark_jars():
    """The jars of the Spark the build has: $SPARK_HOME, else pyspark's (build-system.requires)."""
    if os.environ.get("SPARK_HOME"):
        return os.path.join(os.environ["SPARK_HOME"], "jars")
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.origin:
        raise SystemExit("dbt-sized-spark: building the wheel needs pyspark's jars "
                         "(pyspark is in build-system.requires) or $SPARK_HOME")
    return os.path.join(os.path.dirname(spec.origin), "jars")


class BuildPyWithJar(build_py):
    """build_py, then the helpers' jar beside fast_local_fs.py in the build. An editable
    install runs from the sources, where fast_local_fs compiles on first use instead."""

    def run(self):
        super().run()
        if not self.editable_mode:
            fs = _fast_local_fs()
            jar = os.path.join(self.build_lib, "python_adapter", "io", fs.JAR_NAME)
            try:
                fs.compile_jar(_javac(), _spark_jars(), jar)
                if fs.has_connect(_spark_jars()):  # Spark 4: the Connect server's extension
                    fs.compile_jar(_javac(), _spark_jars(), os.path.join(
                        os.path.dirname(jar), fs.CONNECT_JAR_NAME), connect=True)
            except fs.Unavailable as e:
                raise SystemExit(f"dbt-sized-spark: compiling the Java helpers failed: {e}")

    def get_outputs(self, include_bytecode=True):
        outputs = super().get_outputs(include_bytecode)
        if not self.editable_mode:
            fs = _fast_local_fs()
            outputs.append(os.path.join(self.build_lib, "python_adapter", "io", fs.JAR_NAME))
            if fs.has_connect(_spark_jars()):
                outputs.append(os.path.join(self.build_lib, "python_adapter", "io",
                                            fs.CONNECT_JAR_NAME))
        return outputs


setup(
    packages=find_namespace_packages(include=["dbt", "dbt.*", "python_adapter", "python_adapter.*"],
                                     exclude=["python_adapter.io.java*"]),
    package_data={"dbt.include.sized_spark": ["dbt_project.yml", "profile_template.yml",
                                            *macro_files()],
                  "python_adapter.io": ["log4j2.properties"]},
    include_package_data=False,
    cmdclass={"build_py": BuildPyWithJar},
)
