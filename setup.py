"""dbt-sized-spark: a dbt-spark plugin whose `sized_incremental` writes files of a target size.

The macros live once, in `macros/` at the repo root; `dbt/include/sized_spark/macros` is a
link to it, and the build copies the files it points at into the package.
"""
import os

from setuptools import find_namespace_packages, setup

HERE = os.path.dirname(os.path.abspath(__file__))
about = {}
with open(os.path.join(HERE, "dbt/adapters/sized_spark/__version__.py")) as fh:
    exec(fh.read(), about)


def macro_files():
    out = []
    for root, _dirs, files in os.walk(os.path.join(HERE, "macros")):
        for name in files:
            if name.endswith((".sql", ".yml")):
                rel = os.path.relpath(os.path.join(root, name), os.path.join(HERE, "macros"))
                out.append(os.path.join("macros", rel))
    return out


setup(
    name="dbt-sized-spark",
    version=about["version"],
    description="dbt-spark plugin whose sized_incremental materialization writes files of a target size",
    python_requires=">=3.10",
    packages=find_namespace_packages(include=["dbt", "dbt.*", "python_adapter", "python_adapter.*"],
                                     exclude=["python_adapter.io.java*"]),
    package_data={"dbt.include.sized_spark": ["dbt_project.yml", *macro_files()],
                  # compiled on first use by the JDK that runs Spark (fast_local_fs.py)
                  "python_adapter.io": ["java/sizedspark/fs/*.java", "log4j2.properties"]},
    include_package_data=False,
    install_requires=[
        "dbt-core>=1.10,<1.12",
        "dbt-spark[session]>=1.10,<1.12",
        "pyspark>=3.5,<5",
        "fastavro>=1.9",
        "agate>=1.7",
    ],
    extras_require={
        # dbt-spark[PyHive] (PyHive[hive_pure_sasl], thrift, thrift-sasl, pure-sasl): the
        # driver of `method: thrift`, for the test against a real Spark Thrift server
        # duckdb, polars, pyarrow: the tests read our tables as other engines do
        # pytest-xdist (3.8 tested, with --no-loadscope-reorder): the suite on both cores, a
        # module per worker (scripts/test.sh)
        "test": ["pytest>=8", "pytest-xdist>=3.8", "dbt-tests-adapter>=1.10",
                 "dbt-spark[PyHive]>=1.10,<1.12", "duckdb>=1.0", "polars>=1.0", "pyarrow>=14"],
        # deltalake (delta-rs): the outside anchor of benchmarks/anchor.py
        "bench": ["matplotlib>=3.7", "deltalake>=1.0"],
    },
)
